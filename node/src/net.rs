//! Every server the programs run (the coordinator's gRPC and status ports, a
//! worker's peer port, the explorer) accepts through a [`GuardedListener`],
//! so that idle connections cannot exhaust it: a stranger (or a crowd of
//! forgotten browser tabs) holding a thousand idle sockets used to take every
//! descriptor a default `ulimit -n 1024` gives, after which `/healthz` timed
//! out and workers could not join.
//!
//! Three rules, each cheap:
//! - **an idle timeout:** a connection that moved no byte either way for the
//!   listener's idle time is closed (gRPC connections stay busy: the servers
//!   ping every [`crate::KEEPALIVE_INTERVAL`], and the client answers);
//! - **a connection limit:** at most [`ConnectionLimits::max`] connections
//!   are open at once, a share of the descriptor limit, so that files and
//!   the other listeners keep theirs; a connection arriving at the limit
//!   closes the one idle the longest, so that a new client always gets in;
//! - **no stall on a full descriptor table:** an accept that fails for want
//!   of descriptors closes the idlest connection and tries again soon, rather
//!   than leaving the queue to time out.
//!
//! HTTP servers add a header-read timeout on top ([`serve_http`]).

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// How long an HTTP connection may stay without a byte either way (a
/// browser's keep-alive connection between two requests included).
pub const HTTP_IDLE: Duration = Duration::from_secs(30);
/// How long an HTTP client may take to send a request's head.
pub const HTTP_HEADER_READ: Duration = Duration::from_secs(10);
/// How long a gRPC connection may stay without a byte either way: six of
/// the server's keepalive pings, which a live client answers.
pub const GRPC_IDLE: Duration = Duration::from_secs(60);

/// What a [`GuardedListener`] allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections open at once.
    pub max: usize,
    /// A connection that moved no byte for this long is closed.
    pub idle: Duration,
}

impl ConnectionLimits {
    /// The limits for one of this process's listeners: `idle`, and a quarter
    /// of the descriptors the process may open beyond 128 kept for files
    /// (between 16 and 4,096).
    pub fn for_listener(idle: Duration) -> ConnectionLimits {
        let soft = descriptor_limit().unwrap_or(1024);
        ConnectionLimits { max: (soft.saturating_sub(128) / 4).clamp(16, 4096) as usize, idle }
    }
}

/// This process's soft limit on open descriptors (`ulimit -n`).
pub fn descriptor_limit() -> Option<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given and nothing else.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0).then_some(lim.rlim_cur)
}

/// Raises the soft limit on open descriptors to the hard limit (at most
/// 1,048,576), as most servers do at start: the soft default of many
/// systems (1,024) is a compatibility value for `select(2)`, which nothing
/// here uses. Returns the limit in force afterwards.
pub fn raise_descriptor_limit() -> Option<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: as in `descriptor_limit`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    let wanted = lim.rlim_max.min(1 << 20);
    if wanted > lim.rlim_cur {
        let raised = libc::rlimit { rlim_cur: wanted, rlim_max: lim.rlim_max };
        // SAFETY: setrlimit reads the struct it is given; lowering or
        // raising the soft limit up to the hard one is always allowed.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Some(wanted);
        }
    }
    Some(lim.rlim_cur)
}

/// One open connection as the listener sees it.
#[derive(Default)]
struct Entry {
    /// Milliseconds since the listener started, at its last byte either way.
    last: AtomicU64,
    /// Set when the listener closes it; the connection's next read or write
    /// fails, which makes its server drop it.
    evicted: AtomicBool,
    /// Who to wake so that it notices (a server waiting on an idle
    /// connection polls it no more until then).
    waker: Mutex<Option<Waker>>,
}

impl Entry {
    fn evict(&self) {
        self.evicted.store(true, Ordering::Relaxed);
        if let Some(w) = self.waker.lock().unwrap_or_else(|p| p.into_inner()).take() {
            w.wake();
        }
    }
}

/// The open connections of one listener.
struct Registry {
    /// The listener's name in messages ("status page", "gRPC", ...).
    name: &'static str,
    limits: ConnectionLimits,
    start: Instant,
    next_id: AtomicU64,
    open: Mutex<HashMap<u64, Arc<Entry>>>,
    /// When the last warning was logged (one a minute at most: a flood must
    /// not fill the log too).
    warned: Mutex<Option<Instant>>,
}

impl Registry {
    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Entry>>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Closes the connection idle the longest; false when none is open.
    fn evict_idlest(&self) -> bool {
        let open = self.open();
        let idlest =
            open.values().filter(|e| !e.evicted.load(Ordering::Relaxed)).min_by_key(|e| e.last.load(Ordering::Relaxed));
        idlest.map(|e| e.evict()).is_some()
    }

    /// Closes every connection idle for the listener's idle time.
    fn evict_idle(&self) -> usize {
        let now = self.now_ms();
        let idle = self.limits.idle.as_millis() as u64;
        let open = self.open();
        let stale: Vec<&Arc<Entry>> =
            open.values().filter(|e| now.saturating_sub(e.last.load(Ordering::Relaxed)) >= idle).collect();
        for e in &stale {
            e.evict();
        }
        stale.len()
    }

    fn warn(&self, message: impl FnOnce() -> String) {
        let mut warned = self.warned.lock().unwrap_or_else(|p| p.into_inner());
        if warned.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
            *warned = Some(Instant::now());
            tracing::warn!("{}: {} (this warning is repeated at most once a minute)", self.name, message());
        }
    }
}

/// A TCP listener that enforces [`ConnectionLimits`] on what it accepts.
pub struct GuardedListener {
    inner: TcpListener,
    registry: Arc<Registry>,
}

impl GuardedListener {
    /// Guards `inner`; `name` says which server it is in messages. Starts
    /// the idle sweep (once a second, until the listener and all its
    /// connections are gone), so it must be called inside a tokio runtime.
    pub fn new(inner: TcpListener, name: &'static str, limits: ConnectionLimits) -> GuardedListener {
        let registry = Arc::new(Registry {
            name,
            limits,
            start: Instant::now(),
            next_id: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
            warned: Mutex::new(None),
        });
        let weak: Weak<Registry> = Arc::downgrade(&registry);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let Some(r) = weak.upgrade() else { break };
                r.evict_idle();
            }
        });
        GuardedListener { inner, registry }
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// How many connections are open now.
    pub fn open_connections(&self) -> usize {
        self.registry.open().len()
    }

    /// The next connection, under the limits. Never fails: errors of one
    /// connection are skipped, a full descriptor table closes the idlest
    /// connection and retries.
    pub async fn accept(&self) -> (Guarded<TcpStream>, SocketAddr) {
        let r = &self.registry;
        loop {
            match self.inner.accept().await {
                Ok((stream, addr)) => {
                    let open = r.open().len();
                    if open >= r.limits.max {
                        r.warn(|| {
                            format!(
                                "{open} connections open, the limit for this listener (a quarter of `ulimit -n`); \
                                 closing the idlest for each new one"
                            )
                        });
                        r.evict_idlest();
                    }
                    // gRPC and HTTP both send small messages that must not
                    // wait for Nagle's algorithm.
                    let _ = stream.set_nodelay(true);
                    return (self.register(stream), addr);
                }
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    let open = r.open().len();
                    r.warn(|| format!("cannot accept a connection ({e}) with {open} open; closing the idlest"));
                    r.evict_idlest();
                    // The evicted connection closes when its server task runs.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn register(&self, stream: TcpStream) -> Guarded<TcpStream> {
        let r = &self.registry;
        let id = r.next_id.fetch_add(1, Ordering::Relaxed);
        let entry = Arc::new(Entry::default());
        entry.last.store(r.now_ms(), Ordering::Relaxed);
        r.open().insert(id, entry.clone());
        Guarded { inner: stream, entry, registry: self.registry.clone(), id }
    }

    /// The connections as a stream, for tonic's `serve_with_incoming`.
    pub fn incoming(self) -> Incoming {
        Incoming { listener: Arc::new(self), pending: None }
    }
}

/// Errors of one connection (it was reset before it was accepted), after
/// which the listener simply goes on.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    )
}

type Accepting = Pin<Box<dyn Future<Output = (Guarded<TcpStream>, SocketAddr)> + Send>>;

/// [`GuardedListener::incoming`]: its connections as a stream.
pub struct Incoming {
    listener: Arc<GuardedListener>,
    pending: Option<Accepting>,
}

impl tokio_stream::Stream for Incoming {
    type Item = io::Result<Guarded<TcpStream>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let listener = self.listener.clone();
        let accepting = self.pending.get_or_insert_with(|| Box::pin(async move { listener.accept().await }));
        match accepting.as_mut().poll(cx) {
            Poll::Ready((io, _)) => {
                self.pending = None;
                Poll::Ready(Some(Ok(io)))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A connection accepted by a [`GuardedListener`]: it notes each byte's time
/// and fails its next read or write once the listener closes it.
pub struct Guarded<T> {
    inner: T,
    entry: Arc<Entry>,
    registry: Arc<Registry>,
    id: u64,
}

impl<T> Guarded<T> {
    /// The connection itself.
    pub fn get_ref(&self) -> &T {
        &self.inner
    }

    fn check(&self, cx: &Context<'_>) -> io::Result<()> {
        if self.entry.evicted.load(Ordering::Relaxed) {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "closed by the server: idle, or over its connection limit",
            ));
        }
        let mut waker = self.entry.waker.lock().unwrap_or_else(|p| p.into_inner());
        if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            *waker = Some(cx.waker().clone());
        }
        Ok(())
    }

    fn touch(&self) {
        self.entry.last.store(self.registry.now_ms(), Ordering::Relaxed);
    }
}

impl<T> Drop for Guarded<T> {
    fn drop(&mut self) {
        self.registry.open().remove(&self.id);
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Guarded<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check(cx)?;
        let before = buf.filled().len();
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.touch();
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Guarded<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check(cx)?;
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            this.touch();
        }
        r
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check(cx)?;
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            this.touch();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl tonic::transport::server::Connected for Guarded<TcpStream> {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

/// Serves HTTP/1 `service` on `listener` until `shutdown` resolves, each
/// connection wrapped by `wrap` (the explorer answers hyper's own errors in
/// JSON that way), with a header-read timeout of [`HTTP_HEADER_READ`]: a
/// client that sends a request's head slower than that (or keeps a
/// connection open without a next request that long) is cut off. After
/// `shutdown`, open connections finish their request for up to 5 s.
pub async fn serve_http<S, B, W, IO>(
    listener: GuardedListener,
    service: S,
    wrap: W,
    shutdown: impl Future<Output = ()> + Send,
) where
    S: tower_service::Service<hyper::Request<hyper::body::Incoming>, Response = hyper::Response<B>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    W: Fn(Guarded<TcpStream>) -> IO,
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (closing, closed) = tokio::sync::watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (io, _) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let hyper_service = hyper_util::service::TowerToHyperService::new(service.clone());
        let io = hyper_util::rt::TokioIo::new(wrap(io));
        let mut closed = closed.clone();
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(HTTP_HEADER_READ);
            let mut conn = std::pin::pin!(builder.serve_connection(io, hyper_service));
            tokio::select! {
                // A failed connection (reset, timed out, malformed) is the
                // client's affair; hyper has answered what it could.
                _ = conn.as_mut() => {}
                _ = closed.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
    drop((listener, closed));
    let _ = closing.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(5), closing.closed()).await;
}
