//! A throw-away certificate authority for the TLS tests: a root, a server
//! certificate for `localhost` and 127.0.0.1, and a client certificate, written as
//! PEM files into a directory.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};

/// The PEM files of a test PKI.
pub struct TestPki {
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    /// a root nobody's certificate chains to
    pub other_ca: PathBuf,
}

fn root(name: &str) -> (rcgen::Certificate, KeyPair, CertificateParams) {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("root params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().expect("root key");
    let cert = params.clone().self_signed(&key).expect("root certificate");
    (cert, key, params)
}

fn leaf(names: &[&str], issuer: &Issuer<'_, KeyPair>) -> (String, String) {
    let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
    let params = CertificateParams::new(names).expect("leaf params");
    let key = KeyPair::generate().expect("leaf key");
    let cert = params.signed_by(&key, issuer).expect("leaf certificate");
    (cert.pem(), key.serialize_pem())
}

impl TestPki {
    pub fn write(dir: &Path) -> TestPki {
        let (ca_cert, ca_key, ca_params) = root("centroid test root");
        let issuer = Issuer::new(ca_params, ca_key);
        let (server_cert, server_key) = leaf(&["localhost", "127.0.0.1"], &issuer);
        let (client_cert, client_key) = leaf(&["centroid-client"], &issuer);
        let (other_cert, _, _) = root("another root");
        let write = |name: &str, pem: &str| {
            let path = dir.join(name);
            std::fs::write(&path, pem).expect("write pem");
            path
        };
        TestPki {
            ca: write("ca.pem", &ca_cert.pem()),
            server_cert: write("server.pem", &server_cert),
            server_key: write("server.key", &server_key),
            client_cert: write("client.pem", &client_cert),
            client_key: write("client.key", &client_key),
            other_ca: write("other-ca.pem", &other_cert.pem()),
        }
    }
}
