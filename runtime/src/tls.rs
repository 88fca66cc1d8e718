//! TLS of every gRPC connection (rustls through tonic), configured the same way
//! on every binary: `tls_cert` + `tls_key` (PEM) make a process serve TLS and
//! present that certificate when it calls others (mutual TLS); `tls_ca` (PEM) is
//! the root the peers' certificates must chain to; `tls_client_auth` makes a
//! server refuse callers without a certificate of that root.
//!
//! With TLS configured an address written `http://host:port` or `host:port` is
//! called as `https://host:port`; the peer's certificate must name the host (a DNS
//! name or an IP address in its subject alternative names). Without TLS an
//! `https://` address is an error saying which setting is missing.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity, ServerTlsConfig};

/// The TLS settings of one binary (the keys `tls_cert`, `tls_key`, `tls_ca`,
/// `tls_client_auth` of its configuration, flags `--tls-cert` …).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TlsFiles {
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub tls_ca: Option<PathBuf>,
    pub tls_client_auth: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{setting} {path}: {source}")]
    Read {
        setting: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error("{setting} {path} holds no PEM block (expected -----BEGIN …-----)")]
    NotPem { setting: &'static str, path: String },
    #[error("tls_cert and tls_key go together: {given} is set, {missing} is not (--{flag})")]
    Half {
        given: &'static str,
        missing: &'static str,
        flag: &'static str,
    },
    #[error(
        "tls_client_auth needs tls_ca (--tls-ca FILE): the root client certificates must chain to"
    )]
    ClientAuthWithoutCa,
    #[error("serving TLS needs tls_cert and tls_key (--tls-cert FILE --tls-key FILE)")]
    NoServerIdentity,
    #[error(
        "{address} is https but TLS is not configured: pass --tls-ca FILE (the root the server's certificate chains to)"
    )]
    HttpsWithoutTls { address: String },
    #[error("address {address}: {source}")]
    BadAddress {
        address: String,
        #[source]
        source: tonic::transport::Error,
    },
    #[error("TLS set-up: {0}")]
    Transport(#[source] tonic::transport::Error),
}

/// TLS read from its files once (PEM): what a server serves with and what a
/// client calls with. `Debug` never shows the key.
#[derive(Clone, PartialEq, Eq)]
pub struct Tls {
    /// certificate chain and private key
    identity: Option<(Vec<u8>, Vec<u8>)>,
    ca: Option<Vec<u8>>,
    client_auth: bool,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field(
                "identity",
                &self.identity.as_ref().map(|_| "<certificate and key>"),
            )
            .field("ca", &self.ca.as_ref().map(|_| "<root>"))
            .field("client_auth", &self.client_auth)
            .finish()
    }
}

impl TlsFiles {
    pub fn new(
        cert: Option<&Path>,
        key: Option<&Path>,
        ca: Option<&Path>,
        client_auth: bool,
    ) -> TlsFiles {
        TlsFiles {
            tls_cert: cert.map(Path::to_path_buf),
            tls_key: key.map(Path::to_path_buf),
            tls_ca: ca.map(Path::to_path_buf),
            tls_client_auth: client_auth,
        }
    }

    /// Whether any TLS setting is given.
    pub fn is_configured(&self) -> bool {
        self.tls_cert.is_some() || self.tls_key.is_some() || self.tls_ca.is_some()
    }

    /// Reads the files; `None` when nothing is configured (plain TCP).
    pub fn load(&self) -> Result<Option<Tls>, TlsError> {
        if !self.is_configured() {
            if self.tls_client_auth {
                return Err(TlsError::ClientAuthWithoutCa);
            }
            return Ok(None);
        }
        let identity = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => {
                Some((read_pem("tls_cert", cert)?, read_pem("tls_key", key)?))
            }
            (Some(_), None) => {
                return Err(TlsError::Half {
                    given: "tls_cert",
                    missing: "tls_key",
                    flag: "tls-key FILE",
                });
            }
            (None, Some(_)) => {
                return Err(TlsError::Half {
                    given: "tls_key",
                    missing: "tls_cert",
                    flag: "tls-cert FILE",
                });
            }
            (None, None) => None,
        };
        let ca = match &self.tls_ca {
            Some(path) => Some(read_pem("tls_ca", path)?),
            None => None,
        };
        if self.tls_client_auth && ca.is_none() {
            return Err(TlsError::ClientAuthWithoutCa);
        }
        Ok(Some(Tls {
            identity,
            ca,
            client_auth: self.tls_client_auth,
        }))
    }
}

impl Tls {
    /// What a gRPC server serves with: its certificate, and the root client
    /// certificates must chain to when client authentication is on.
    pub fn server_config(&self) -> Result<ServerTlsConfig, TlsError> {
        let (cert, key) = self.identity.as_ref().ok_or(TlsError::NoServerIdentity)?;
        let mut config = ServerTlsConfig::new().identity(Identity::from_pem(cert, key));
        if self.client_auth
            && let Some(ca) = &self.ca
        {
            config = config.client_ca_root(Certificate::from_pem(ca));
        }
        Ok(config)
    }

    fn client_config(&self) -> ClientTlsConfig {
        let mut config = ClientTlsConfig::new();
        if let Some(ca) = &self.ca {
            config = config.ca_certificate(Certificate::from_pem(ca));
        }
        if let Some((cert, key)) = &self.identity {
            config = config.identity(Identity::from_pem(cert, key));
        }
        config
    }
}

/// The URL this process is reached at when serving on `address` (`https` with TLS).
pub fn url_for(tls: Option<&Tls>, address: &str) -> String {
    let scheme = if tls.is_some() { "https" } else { "http" };
    format!("{scheme}://{}", strip_scheme(address))
}

/// An endpoint for `address` (`host:port`, `http://…` or `https://…`): TLS with
/// the process's settings when it has them, plain TCP otherwise.
pub fn endpoint(tls: Option<&Tls>, address: &str) -> Result<Endpoint, TlsError> {
    let https = address.starts_with("https://");
    let url = match tls {
        Some(_) => url_for(tls, address),
        None if https => {
            return Err(TlsError::HttpsWithoutTls {
                address: address.to_string(),
            });
        }
        None => url_for(None, address),
    };
    let endpoint = Endpoint::from_shared(url).map_err(|source| TlsError::BadAddress {
        address: address.to_string(),
        source,
    })?;
    match tls {
        Some(tls) => endpoint
            .tls_config(tls.client_config())
            .map_err(TlsError::Transport),
        None => Ok(endpoint),
    }
}

fn strip_scheme(address: &str) -> &str {
    address
        .strip_prefix("https://")
        .or_else(|| address.strip_prefix("http://"))
        .unwrap_or(address)
}

fn read_pem(setting: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    let bytes = std::fs::read(path).map_err(|source| TlsError::Read {
        setting,
        path: path.display().to_string(),
        source,
    })?;
    if !bytes.windows(11).any(|window| window == b"-----BEGIN ") {
        return Err(TlsError::NotPem {
            setting,
            path: path.display().to_string(),
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(cert: bool, key: bool, ca: bool, client_auth: bool) -> TlsFiles {
        let path = |name: &str| Some(PathBuf::from(format!("/nonexistent/{name}.pem")));
        TlsFiles {
            tls_cert: if cert { path("cert") } else { None },
            tls_key: if key { path("key") } else { None },
            tls_ca: if ca { path("ca") } else { None },
            tls_client_auth: client_auth,
        }
    }

    #[test]
    fn nothing_configured_is_plain_tcp_and_https_is_refused() {
        assert!(files(false, false, false, false).load().unwrap().is_none());
        assert_eq!(url_for(None, "127.0.0.1:7"), "http://127.0.0.1:7");
        let error = endpoint(None, "https://farm:443").unwrap_err();
        assert!(error.to_string().contains("--tls-ca"), "{error}");
        assert!(endpoint(None, "http://farm:443").is_ok());
    }

    #[test]
    fn half_an_identity_or_client_auth_without_a_root_is_an_error() {
        let error = files(true, false, true, false).load().unwrap_err();
        assert!(error.to_string().contains("tls-key"), "{error}");
        let error = files(false, true, true, false).load().unwrap_err();
        assert!(error.to_string().contains("tls-cert"), "{error}");
        let error = files(false, false, false, true).load().unwrap_err();
        assert!(matches!(error, TlsError::ClientAuthWithoutCa), "{error}");
    }

    #[test]
    fn a_missing_or_non_pem_file_names_the_setting_and_the_path() {
        let error = files(false, false, true, false).load().unwrap_err();
        assert!(
            error.to_string().starts_with("tls_ca /nonexistent/ca.pem"),
            "{error}"
        );
        let dir = tempfile::tempdir().unwrap();
        let not_pem = dir.path().join("ca.der");
        std::fs::write(&not_pem, [0x30, 0x82, 0x01]).unwrap();
        let error = TlsFiles {
            tls_ca: Some(not_pem),
            ..TlsFiles::default()
        }
        .load()
        .unwrap_err();
        assert!(matches!(error, TlsError::NotPem { .. }), "{error}");
    }

    #[test]
    fn with_tls_every_address_is_called_over_https() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        let key = rcgen::KeyPair::generate().unwrap();
        let root = rcgen::CertificateParams::new(vec!["root".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        std::fs::write(&ca, root.pem()).unwrap();
        let tls = TlsFiles {
            tls_ca: Some(ca),
            ..TlsFiles::default()
        }
        .load()
        .unwrap()
        .unwrap();
        assert_eq!(
            url_for(Some(&tls), "http://10.0.0.2:5"),
            "https://10.0.0.2:5"
        );
        assert_eq!(url_for(Some(&tls), "10.0.0.2:5"), "https://10.0.0.2:5");
        let endpoint = endpoint(Some(&tls), "10.0.0.2:5").unwrap();
        assert_eq!(endpoint.uri().scheme_str(), Some("https"));
        // a client without its own certificate cannot serve
        assert!(matches!(
            tls.server_config(),
            Err(TlsError::NoServerIdentity)
        ));
    }
}
