//! A loopback TCP proxy that can be switched into a blackhole: it listens on
//! 127.0.0.1:0 and forwards every accepted connection to a target address; while
//! blackholed it keeps accepting and keeps every socket open but forwards nothing
//! (bytes read from either side are dropped), as a network partition that neither
//! resets nor closes connections would. [`BlackholeProxy::heal`] forwards again.
//!
//! Plain threads and blocking sockets: the proxy does not depend on the test's
//! tokio runtime (whose threads the sandbox sometimes blocks).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Why the proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("cannot listen on 127.0.0.1:0: {0}")]
    Listen(#[source] std::io::Error),
}

struct Shared {
    target: SocketAddr,
    blackholed: AtomicBool,
    stopping: AtomicBool,
    /// every socket the proxy holds (both sides of each connection), shut down on drop
    sockets: Mutex<Vec<TcpStream>>,
    accepted: AtomicU64,
    forwarded_bytes: AtomicU64,
    dropped_bytes: AtomicU64,
}

/// The running proxy; stops (closing every socket) on drop.
pub struct BlackholeProxy {
    address: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl BlackholeProxy {
    /// Listens on 127.0.0.1:0 and forwards to `target` (connected per accepted connection).
    pub fn start(target: SocketAddr) -> Result<BlackholeProxy, ProxyError> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(ProxyError::Listen)?;
        let address = listener.local_addr().map_err(ProxyError::Listen)?;
        let shared = Arc::new(Shared {
            target,
            blackholed: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            sockets: Mutex::new(Vec::new()),
            accepted: AtomicU64::new(0),
            forwarded_bytes: AtomicU64::new(0),
            dropped_bytes: AtomicU64::new(0),
        });
        let acceptor = {
            let shared = shared.clone();
            std::thread::spawn(move || accept_loop(listener, shared))
        };
        Ok(BlackholeProxy {
            address,
            shared,
            acceptor: Some(acceptor),
        })
    }

    /// The address clients connect to.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Drops every byte from now on, in both directions, keeping the connections open.
    pub fn blackhole(&self) {
        self.shared.blackholed.store(true, Ordering::SeqCst);
    }

    /// Forwards again (bytes dropped meanwhile stay lost).
    pub fn heal(&self) {
        self.shared.blackholed.store(false, Ordering::SeqCst);
    }

    pub fn is_blackholed(&self) -> bool {
        self.shared.blackholed.load(Ordering::SeqCst)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Bytes forwarded so far (both directions).
    pub fn forwarded_bytes(&self) -> u64 {
        self.shared.forwarded_bytes.load(Ordering::SeqCst)
    }

    /// Bytes read and dropped while blackholed (both directions).
    pub fn dropped_bytes(&self) -> u64 {
        self.shared.dropped_bytes.load(Ordering::SeqCst)
    }
}

impl Drop for BlackholeProxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // wake the acceptor, then close every socket so the pumps end
        let _ = TcpStream::connect_timeout(&self.address, Duration::from_secs(1));
        for socket in self.shared.sockets.lock().expect("sockets lock").drain(..) {
            let _ = socket.shutdown(Shutdown::Both);
        }
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for incoming in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = incoming else { continue };
        shared.accepted.fetch_add(1, Ordering::SeqCst);
        let Ok(upstream) = TcpStream::connect_timeout(&shared.target, Duration::from_secs(2))
        else {
            // the target is down: a closed connection, as a real hop would answer
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = upstream.set_nodelay(true);
        let (Ok(client_reader), Ok(upstream_reader)) = (client.try_clone(), upstream.try_clone())
        else {
            continue;
        };
        {
            let mut sockets = shared.sockets.lock().expect("sockets lock");
            for socket in [&client, &upstream] {
                if let Ok(clone) = socket.try_clone() {
                    sockets.push(clone);
                }
            }
        }
        for (from, to) in [(client_reader, upstream), (upstream_reader, client)] {
            let shared = shared.clone();
            std::thread::spawn(move || pump(from, to, &shared));
        }
    }
}

/// Copies `from` → `to` until either side closes; drops what it reads while blackholed.
fn pump(mut from: TcpStream, mut to: TcpStream, shared: &Shared) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let count = match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(count) => count,
        };
        if shared.blackholed.load(Ordering::SeqCst) {
            shared
                .dropped_bytes
                .fetch_add(count as u64, Ordering::SeqCst);
            continue;
        }
        if to.write_all(&buffer[..count]).is_err() {
            break;
        }
        shared
            .forwarded_bytes
            .fetch_add(count as u64, Ordering::SeqCst);
    }
    // one side ended: end the other (unless blackholed, which closes nothing)
    while shared.blackholed.load(Ordering::SeqCst) && !shared.stopping.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = to.shutdown(Shutdown::Write);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo server on 127.0.0.1:0.
    fn echo_server() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut reader = stream.try_clone().unwrap();
                    let mut writer = stream;
                    let _ = std::io::copy(&mut reader, &mut writer);
                });
            }
        });
        address
    }

    fn exchange(stream: &mut TcpStream, message: &[u8]) -> std::io::Result<Vec<u8>> {
        stream.write_all(message)?;
        let mut answer = vec![0u8; message.len()];
        stream.read_exact(&mut answer)?;
        Ok(answer)
    }

    #[test]
    fn forwards_blackholes_without_closing_and_heals() {
        let proxy = BlackholeProxy::start(echo_server()).unwrap();
        let mut stream = TcpStream::connect(proxy.address()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        assert_eq!(exchange(&mut stream, b"hello").unwrap(), b"hello");

        proxy.blackhole();
        let lost = exchange(&mut stream, b"lost!").unwrap_err();
        assert!(
            matches!(
                lost.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "no answer, no reset: {lost:?}"
        );
        // a new connection is accepted too, and gets nothing either
        let mut second = TcpStream::connect(proxy.address()).unwrap();
        second
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        assert!(exchange(&mut second, b"void").is_err());
        assert!(proxy.dropped_bytes() >= 5);

        proxy.heal();
        assert_eq!(
            exchange(&mut stream, b"again").unwrap(),
            b"again",
            "the same connection forwards again"
        );
        assert!(proxy.accepted() >= 2);
    }
}
