//! The server: the runtime, the listener and its accept loop, connections bounded and watched
//! as `conn.rs` says, and the stop with its grace period.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use trawl_stop::Stop;

use crate::cache::IndexCache;
use crate::{ServeConfig, ServeError, body, conn, log, resolve, respond};

/// What every request's handler shares.
pub(crate) struct AppState {
    pub(crate) root: resolve::RootDir,
    pub(crate) cache: IndexCache,
    pub(crate) access_log: bool,
    pub(crate) serving: resolve::Serving,
    pub(crate) notices: log::Notices,
}

/// Serves until `stop` is set; `ready` is told the bound address (port 0 picks a free one).
/// Then no new connection is taken, responses in flight get `limits.grace` to finish, and the
/// rest are closed.
pub fn serve(
    cfg: ServeConfig,
    stop: &Stop,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    let root = resolve::RootDir::open(&cfg.root).map_err(|source| {
        if source.raw_os_error() == Some(libc::ENOTDIR) {
            ServeError::NotADirectory {
                path: cfg.root.clone(),
            }
        } else {
            ServeError::Root {
                path: cfg.root.clone(),
                source,
            }
        }
    })?;
    let threads = cfg.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()?;
    let limits = cfg.limits;
    let res = rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&cfg.listen)
            .await
            .map_err(|source| ServeError::Listen {
                addr: cfg.listen.clone(),
                source,
            })?;
        ready(listener.local_addr()?);
        let state = Arc::new(AppState {
            root,
            cache: IndexCache::new(threads * 2),
            access_log: cfg.access_log,
            serving: cfg.serving,
            notices: cfg.notices.clone(),
        });
        accept_loop(listener, state, limits, stop).await;
        Ok(())
    });
    // Blocking reads still running belong to connections already given up on.
    rt.shutdown_timeout(Duration::from_millis(500));
    res
}

/// Connections being turned away (503) at once, past the cap; more wait to be accepted until
/// one of these is done (each takes at most half a second).
const REFUSING: usize = 32;

/// Hands the heap's free memory back to the system once no connection is open: the buffers of a
/// thousand slow clients are freed when they leave, but the allocator keeps freed memory for
/// reuse and the process's size would stay at its peak.
fn give_memory_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of glibc's heap to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Answers 503 to a client past the connection cap: the answer, then a short drain of what it
/// sent (bounded in time and bytes), then close.
async fn refuse(mut stream: TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = stream
        .write_all(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .await;
    let _ = stream.shutdown().await;
    let mut buf = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_millis(500), async {
        let mut seen = 0;
        while seen < 64 << 10 {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => seen += n,
            }
        }
    })
    .await;
}

/// Told at once rather than left waiting in the backlog behind clients that may be holding
/// their connections on purpose. The request is drained for a moment so that closing does not
/// reset the connection before the client has read the answer; at most `REFUSING` such
/// goodbyes are in progress at once, and the next client past the cap waits to be accepted
/// until one is done (every client past the cap gets its 503).
async fn turn_away(stream: TcpStream, refusing: &Arc<Semaphore>) {
    let Ok(permit) = refusing.clone().acquire_owned().await else {
        return;
    };
    tokio::spawn(async move {
        let _permit = permit;
        refuse(stream).await;
    });
}

/// How connections are served: hyper's settings, the graceful stop's watch, the count of
/// those open.
struct Connections {
    state: Arc<AppState>,
    http: http1::Builder,
    graceful: GracefulShutdown,
    idle: Duration,
    /// Connections open now: when the last one closes, the memory the clients held goes back.
    open: Arc<AtomicUsize>,
}

impl Connections {
    fn new(state: Arc<AppState>, limits: &conn::Limits) -> Connections {
        let mut http = http1::Builder::new();
        http.timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout)
            // What a connection queues to send: a body chunk, not hyper's default of ~400 KiB
            // of them, whatever the client's speed.
            .max_buf_size(body::CHUNK);
        Connections {
            state,
            http,
            graceful: GracefulShutdown::new(),
            idle: limits.idle_timeout,
            open: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Serves one accepted connection on a task of its own, holding its slot until it closes.
    fn start(&self, stream: TcpStream, peer: SocketAddr, slot: OwnedSemaphorePermit) {
        // Each write goes out at once. With Nagle's algorithm on, the tail of an answer (less
        // than a segment) waits for the client's ACK of what went before it, and a client with
        // nothing to send delays that ACK by up to 40 ms: a seek whose head and body went out
        // in separate writes took 40 ms. The head goes out with the first body bytes where they
        // are ready, so no small write is lost to it; nginx sets it too (`tcp_nodelay`). A
        // socket that refuses it is served anyway.
        let _ = stream.set_nodelay(true);
        let activity = conn::Activity::new();
        let io = TokioIo::new(conn::Watched::new(stream, activity.clone()));
        let st = self.state.clone();
        let svc = hyper::service::service_fn(move |req| {
            let st = st.clone();
            async move { Ok::<_, Infallible>(respond::handle(st, peer, req).await) }
        });
        let connection = self.graceful.watch(self.http.serve_connection(io, svc));
        let idle = self.idle;
        let open = self.open.clone();
        open.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            let _slot = slot;
            tokio::select! {
                _ = connection => {}
                // Dropping the connection closes the socket.
                _ = activity.idle(idle) => {}
            }
            if open.fetch_sub(1, Ordering::SeqCst) == 1 {
                give_memory_back();
            }
        });
    }
}

/// Accepts connections until `stop`, each in a slot of `limits.max_connections` or turned away;
/// then waits up to the grace period for those open.
async fn accept_loop(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    limits: conn::Limits,
    stop: &Stop,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let refusing = Arc::new(Semaphore::new(REFUSING));
    let connections = Connections::new(state.clone(), &limits);
    let stopped = async {
        while !stop.is_stopping() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::pin!(stopped);
    let mut at_cap = false;
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // Out of descriptors (EMFILE) or a connection reset while queued: wait a
                    // moment rather than spin.
                    (state.notices)(log::Notice::AcceptFailed(&e));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut stopped => break,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            if !at_cap {
                (state.notices)(log::Notice::AtCapacity {
                    max_connections: limits.max_connections,
                });
                at_cap = true;
            }
            turn_away(stream, &refusing).await;
            continue;
        };
        at_cap = false;
        connections.start(stream, peer, slot);
    }
    drop(listener);
    tokio::select! {
        _ = connections.graceful.shutdown() => {}
        _ = tokio::time::sleep(limits.grace) => {
            (state.notices)(log::Notice::CutOff { grace: limits.grace });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_that_is_a_file_is_refused_as_not_a_directory() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("f.flv");
        std::fs::write(&file, b"FLV").unwrap();
        let cfg = ServeConfig {
            root: file.clone(),
            listen: "127.0.0.1:0".into(),
            threads: Some(1),
            limits: conn::Limits {
                max_connections: 8,
                header_timeout: Duration::from_secs(1),
                idle_timeout: Duration::from_secs(1),
                grace: Duration::from_secs(1),
            },
            access_log: false,
            notices: Arc::new(|_| {}),
            serving: resolve::Serving::Media,
        };
        let err = serve(cfg, &Stop::new(), |_| panic!("never listens")).unwrap_err();
        assert!(
            matches!(&err, ServeError::NotADirectory { path } if *path == file),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            format!("{}: not a directory", file.display())
        );
    }
}
