//! A network for a service started in a sandbox (a web app to preview):
//! the sandbox keeps no network of its own, yet forq reaches the service's
//! port. A thread of forq's enters the service's network namespace and
//! stays there; a connection made on it belongs to that namespace and is
//! handed back to the caller, which relays it. Nothing listens on the
//! host: only forq reaches the service.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// What the namespace's thread is asked to do there.
enum Request {
    /// Connect to `127.0.0.1:port`.
    Connect(
        u16,
        tokio::sync::oneshot::Sender<io::Result<std::net::TcpStream>>,
    ),
    /// Listen on `127.0.0.1:port` (0: any free port).
    Listen(
        u16,
        tokio::sync::oneshot::Sender<io::Result<std::net::TcpListener>>,
    ),
}

/// A network namespace a service runs in, and the way into it.
///
/// Made by [`crate::Sandbox::service_network`]; given to an exec with
/// [`crate::ExecRequest::service_network`], which then runs in it; reached
/// with [`ServiceNetwork::connect`]. It lasts as long as a clone of it (and
/// any process in it) does.
#[derive(Clone)]
pub struct ServiceNetwork {
    inner: Arc<Inner>,
}

struct Inner {
    netns: std::fs::File,
    requests: Mutex<mpsc::Sender<Request>>,
}

impl std::fmt::Debug for ServiceNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceNetwork")
            .field("netns", &self.inner.netns.as_raw_fd())
            .finish()
    }
}

impl ServiceNetwork {
    /// A thread that runs `enter` (which moves it into a network
    /// namespace), then connects in that namespace on request until every
    /// clone of the returned value is gone.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the native backend's
    pub(crate) fn spawn(
        enter: impl FnOnce() -> io::Result<()> + Send + 'static,
    ) -> io::Result<ServiceNetwork> {
        let (ready_tx, ready_rx) = mpsc::channel::<io::Result<std::fs::File>>();
        let (tx, rx) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("forq-service-net".to_owned())
            .spawn(move || {
                let entered =
                    enter().and_then(|()| std::fs::File::open("/proc/thread-self/ns/net"));
                let ok = entered.is_ok();
                let _ = ready_tx.send(entered);
                if !ok {
                    return;
                }
                for request in rx {
                    match request {
                        Request::Connect(port, reply) => {
                            let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
                            let _ = reply.send(std::net::TcpStream::connect_timeout(
                                &addr,
                                Duration::from_secs(5),
                            ));
                        }
                        Request::Listen(port, reply) => {
                            let _ = reply.send(std::net::TcpListener::bind(("127.0.0.1", port)));
                        }
                    }
                }
            })?;
        let netns = ready_rx
            .recv()
            .map_err(|_| io::Error::other("the service network's thread ended"))??;
        Ok(ServiceNetwork {
            inner: Arc::new(Inner {
                netns,
                requests: Mutex::new(tx),
            }),
        })
    }

    /// The namespace's inode: the same namespace has the same one.
    #[cfg_attr(not(feature = "docker"), allow(dead_code))]
    pub(crate) fn netns_inode(&self) -> u64 {
        self.inner
            .netns
            .metadata()
            .map_or(0, |m| std::os::unix::fs::MetadataExt::ino(&m))
    }

    /// The namespace's descriptor, for an exec to join.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the native backend's
    pub(crate) fn netns_fd(&self) -> RawFd {
        self.inner.netns.as_raw_fd()
    }

    /// A connection to `127.0.0.1:port` inside the namespace: refused when
    /// nothing listens there (yet).
    pub async fn connect(&self, port: u16) -> io::Result<tokio::net::TcpStream> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.ask(Request::Connect(port, reply))?;
        let stream = answer
            .await
            .map_err(|_| io::Error::other("the service network's thread ended"))??;
        stream.set_nonblocking(true)?;
        tokio::net::TcpStream::from_std(stream)
    }

    /// A listener on `127.0.0.1:port` inside the namespace (0: a free
    /// port), accepted on by forq: how a process in the sandbox reaches a
    /// service of forq's own (a relay that holds what the sandbox may not)
    /// with no other network at all.
    pub async fn listen(&self, port: u16) -> io::Result<tokio::net::TcpListener> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.ask(Request::Listen(port, reply))?;
        let listener = answer
            .await
            .map_err(|_| io::Error::other("the service network's thread ended"))??;
        listener.set_nonblocking(true)?;
        tokio::net::TcpListener::from_std(listener)
    }

    fn ask(&self, request: Request) -> io::Result<()> {
        self.inner
            .requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .send(request)
            .map_err(|_| io::Error::other("the service network's thread ended"))
    }
}
