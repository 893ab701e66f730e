//! `trawl serve`: FLV files under a directory over HTTP (hyper on tokio). `GET /f.flv?start=N`
//! answers a playable stream from the last keyframe at or before N (see `seek.rs` for how seconds
//! and bytes are told apart); plain GET and HEAD serve whole files, with single byte ranges
//! (`If-Range` honoured). Connections are bounded as `conn.rs` says ([`Limits`]); each request's line in the
//! common log format, and the server's troubles, are handed to the caller as [`Notice`]s
//! (the library prints nothing).
//!
//! The face: [`serve`] runs a [`ServeConfig`] ([`Limits`], [`Serving`], [`Notices`]) until its
//! stop token; [`parse_range`], [`parse_start`] and [`keyframe_for`] are the request parsers the
//! fuzz targets drive.
#![deny(missing_docs)]

mod body;
mod cache;
mod cached;
mod conn;
mod listing;
mod log;
mod range;
mod resolve;
mod seek;

pub use conn::{Limits, default_max_connections};
pub use log::{Notice, Notices};
pub use range::{Ranged, parse as parse_range};
pub use resolve::Serving;
pub use seek::{Start, keyframe_for, parse_start};

use std::convert::Infallible;
use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use trawl_stop::Stop;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, Uri, header};
use axum::response::Response;
use hyper_util::rt::{TokioIo, TokioTimer};

use cache::IndexCache;

use resolve::Refused;

/// Why the server could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The directory to serve cannot be opened.
    #[error("{}: {source}", path.display())]
    Root {
        /// The path concerned.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The address cannot be listened on.
    #[error("{addr}: cannot listen: {source}")]
    Listen {
        /// The address as given.
        addr: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The server's own I/O failed.
    #[error("server: {0}")]
    Io(#[from] std::io::Error),
}

/// What to serve, where, and how.
pub struct ServeConfig {
    /// The directory served; nothing outside it is.
    pub root: PathBuf,
    /// The address to listen on (`HOST:PORT`).
    pub listen: String,
    /// Worker threads (default: the number of CPUs).
    pub threads: Option<usize>,
    /// Connection limits and timeouts.
    pub limits: conn::Limits,
    /// One common-log-format line per request, as [`log::Notice::Access`].
    pub access_log: bool,
    /// Where the access log and the server's troubles go.
    pub notices: log::Notices,
    /// FLV files only, or every regular file (dotfiles and catalogs aside).
    pub serving: resolve::Serving,
}

struct AppState {
    root: resolve::RootDir,
    cache: IndexCache,
    access_log: bool,
    serving: resolve::Serving,
    notices: log::Notices,
}

/// Serves until `stop` is set; `ready` is told the bound address (port 0 picks a free one).
/// Then no new connection is taken, responses in flight get `limits.grace` to finish, and the
/// rest are closed.
pub fn serve(
    cfg: ServeConfig,
    stop: &Stop,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    let root = resolve::RootDir::open(&cfg.root).map_err(|source| ServeError::Root {
        path: cfg.root.clone(),
        source: if source.raw_os_error() == Some(libc::ENOTDIR) {
            std::io::Error::other("not a directory")
        } else {
            source
        },
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
async fn refuse(mut stream: tokio::net::TcpStream) {
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

async fn accept_loop(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    limits: conn::Limits,
    stop: &Stop,
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let refusing = Arc::new(tokio::sync::Semaphore::new(REFUSING));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        // What a connection queues to send: a body chunk, not hyper's default of ~400 KiB of
        // them, whatever the client's speed.
        .max_buf_size(body::CHUNK);
    let stopped = async {
        while !stop.is_stopping() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::pin!(stopped);
    let mut at_cap = false;
    // Connections open now: when the last one closes, the memory the clients held goes back.
    let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
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
        let slot = match slots.clone().try_acquire_owned() {
            Ok(s) => {
                at_cap = false;
                s
            }
            Err(_) => {
                if !at_cap {
                    (state.notices)(log::Notice::AtCapacity {
                        max_connections: limits.max_connections,
                    });
                    at_cap = true;
                }
                // Told at once rather than left waiting in the backlog behind clients that
                // may be holding their connections on purpose. The request is drained for a
                // moment so that closing does not reset the connection before the client has
                // read the answer; at most `REFUSING` such goodbyes are in progress at once,
                // and the next client past the cap waits to be accepted until one is done
                // (every client past the cap gets its 503).
                let Ok(permit) = refusing.clone().acquire_owned().await else {
                    continue;
                };
                tokio::spawn(async move {
                    let _permit = permit;
                    refuse(stream).await;
                });
                continue;
            }
        };
        // Each write goes out at once. With Nagle's algorithm on, the tail of an answer (less
        // than a segment) waits for the client's ACK of what went before it, and a client with
        // nothing to send delays that ACK by up to 40 ms: a seek whose head and body went out
        // in separate writes took 40 ms. The head goes out with the first body bytes where they
        // are ready, so no small write is lost to it; nginx sets it too (`tcp_nodelay`). A
        // socket that refuses it is served anyway.
        let _ = stream.set_nodelay(true);
        let activity = conn::Activity::new();
        let io = TokioIo::new(conn::Watched::new(stream, activity.clone()));
        let st = state.clone();
        let svc = hyper::service::service_fn(move |req| {
            let st = st.clone();
            async move { Ok::<_, Infallible>(handle(st, peer, req).await) }
        });
        let connection = graceful.watch(http.serve_connection(io, svc));
        let idle = limits.idle_timeout;
        let open = open.clone();
        open.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        tokio::spawn(async move {
            let _slot = slot;
            tokio::select! {
                _ = connection => {}
                // Dropping the connection closes the socket.
                _ = activity.idle(idle) => {}
            }
            if open.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) == 1 {
                give_memory_back();
            }
        });
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(limits.grace) => {
            (state.notices)(log::Notice::CutOff { grace: limits.grace });
        }
    }
}

fn plain(status: StatusCode, msg: impl Into<String>) -> Response {
    let mut r = Response::new(Body::from(msg.into() + "\n"));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

fn start_param(uri: &Uri) -> Option<String> {
    uri.query()?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == "start").then(|| {
            percent_encoding::percent_decode_str(v)
                .decode_utf8_lossy()
                .into()
        })
    })
}

async fn handle<B>(st: Arc<AppState>, peer: SocketAddr, req: Request<B>) -> Response {
    let (method, uri, version) = (req.method().clone(), req.uri().clone(), req.version());
    // The line is printed when the body is done, with the bytes that went out.
    let slot = Arc::new(log::Slot::new(&st.notices, uri.path()));
    let r = answer(&st, &method, &uri, req.headers(), &slot).await;
    let r = r.map(|b| Body::new(body::Counted::new(b, slot.clone())));
    if st.access_log {
        slot.set(format!(
            "{} - - [{}] \"{method} {uri} {version:?}\" {}",
            peer.ip(),
            clf_time(SystemTime::now()),
            r.status().as_u16()
        ));
    }
    r
}

/// A time as the common log format writes it: `23/Nov/2026:21:15:00 +0000`.
fn clf_time(t: SystemTime) -> String {
    let t: time::OffsetDateTime = t.into();
    t.format(time::macros::format_description!(
        "[day]/[month repr:short]/[year]:[hour]:[minute]:[second] +0000"
    ))
    .unwrap_or_default()
}

async fn answer(
    st: &Arc<AppState>,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    slot: &Arc<log::Slot>,
) -> Response {
    if method != Method::GET && method != Method::HEAD {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD");
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    if uri.path().ends_with('/') {
        return directory(st, uri.path(), method == Method::HEAD).await;
    }
    let file = match resolve::open(&st.root, uri.path(), st.serving) {
        Ok(f) => f,
        Err(Refused::Outside) => {
            return plain(StatusCode::FORBIDDEN, "outside the served directory");
        }
        Err(Refused::NotFound) => return plain(StatusCode::NOT_FOUND, "no such file"),
    };
    let head = method == Method::HEAD;
    let name = percent_encoding::percent_decode_str(uri.path()).decode_utf8_lossy();
    match respond(
        st,
        file,
        Path::new(&*name),
        start_param(uri),
        headers,
        head,
        slot,
    )
    .await
    {
        Ok(r) => r,
        Err(e) => {
            // The detail goes to the log; the client learns nothing of the server's files.
            (st.notices)(log::Notice::Internal {
                path: uri.path(),
                error: &e,
            });
            plain(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
        }
    }
}

/// A directory's page (see `listing.rs`): 403 when the path leaves the root, 404 when it names
/// no directory that is served.
async fn directory(st: &Arc<AppState>, path: &str, head: bool) -> Response {
    let (st2, p) = (st.clone(), path.to_string());
    let page = tokio::task::spawn_blocking(move || listing::page(&st2.root, &p, st2.serving)).await;
    match page {
        Ok(Ok(html)) => {
            let len = html.len();
            let mut r = Response::new(if head {
                Body::empty()
            } else {
                Body::from(html)
            });
            let h = r.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            );
            h.insert(header::CONTENT_LENGTH, len.into());
            r
        }
        Ok(Err(Refused::Outside)) => plain(StatusCode::FORBIDDEN, "outside the served directory"),
        Ok(Err(Refused::NotFound)) => plain(StatusCode::NOT_FOUND, "no such directory"),
        Err(e) => {
            let e = std::io::Error::other(e);
            (st.notices)(log::Notice::Internal { path, error: &e });
            plain(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
        }
    }
}

/// Answers from `file`, opened beneath the root; `path` is the request's path, used only for
/// its extension and as the index's name (never a server path, so errors reveal none).
async fn respond(
    st: &AppState,
    file: std::fs::File,
    path: &Path,
    start: Option<String>,
    headers: &HeaderMap,
    head: bool,
    slot: &Arc<log::Slot>,
) -> std::io::Result<Response> {
    let md = file.metadata()?;
    let size = md.len();
    let is_flv = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("flv"));
    let ctype = if is_flv {
        "video/x-flv"
    } else {
        "application/octet-stream"
    };
    if let Some(v) = start {
        let stamp = (size, md.mtime(), md.mtime_nsec());
        let (idx, computed) = st.cache.get((md.dev(), md.ino()), path, &file, stamp).await;
        let idx = match idx {
            Ok(i) => i,
            Err(e) => return Ok(plain(StatusCode::UNPROCESSABLE_ENTITY, e)),
        };
        let Some(s) = seek::parse_start(&v, &idx) else {
            return Ok(plain(
                StatusCode::BAD_REQUEST,
                format!("start={v}: expected seconds (e.g. 12.5) or a byte offset"),
            ));
        };
        if seek::past_the_end(s, &idx) {
            let mut r = plain(
                StatusCode::RANGE_NOT_SATISFIABLE,
                format!(
                    "start={v}: past the end (the file lasts {:.3} s; a byte offset must be a keyframe's, from keyframes.filepositions)",
                    idx.duration
                ),
            );
            r.headers_mut().insert(
                header::CONTENT_RANGE,
                HeaderValue::from_str(&format!("bytes */{size}")).expect("ascii"),
            );
            return Ok(r);
        }
        let k = seek::keyframe_for(s, &idx);
        // The tags before the keyframe, from the page cache here, else on the blocking pool.
        let (file, plan) = match seek::plan(&idx, &file, k, &cached::read_exact_cached) {
            Err(seek::SeekError::Io { ref source, .. })
                if source.kind() == std::io::ErrorKind::WouldBlock =>
            {
                tokio::task::spawn_blocking(move || {
                    let read: seek::ReadAt<'_> =
                        &|f, b, at| std::os::unix::fs::FileExt::read_exact_at(f, b, at);
                    let p = seek::plan(&idx, &file, k, read);
                    (file, p)
                })
                .await
                .map_err(std::io::Error::other)?
            }
            p => (file, p),
        };
        let plan = match plan {
            Err(e @ seek::SeekError::TooLarge { .. }) => {
                return Ok(plain(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()));
            }
            Err(seek::SeekError::Io { source, .. }) => Err(source),
            Ok(p) => Ok(p),
        };
        let cache_note = if computed { "computed" } else { "cached" };
        if let Some(body) = plan? {
            let len = body.len();
            let mut r = Response::new(if head {
                Body::empty()
            } else {
                let (file, first, at) =
                    body::first_frame(file, body.prefix, body.from, body.to).await?;
                Body::new(body::FileBody::new(file, first, at, body.to, slot))
            });
            let h = r.headers_mut();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
            h.insert(header::CONTENT_LENGTH, len.into());
            h.insert("x-trawl-index", HeaderValue::from_static(cache_note));
            h.insert(
                "x-trawl-keyframe",
                HeaderValue::from_str(&format!("{}@{}", body.keyframe.time, body.keyframe.offset))
                    .expect("ascii"),
            );
            return Ok(r);
        }
        let mut r = whole(file, size, ctype, None, head, slot).await?;
        r.headers_mut()
            .insert("x-trawl-index", HeaderValue::from_static(cache_note));
        return Ok(r);
    }
    let validators = Validators::of(&md);
    let range = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .filter(|_| {
            headers
                .get(header::IF_RANGE)
                .is_none_or(|v| v.to_str().is_ok_and(|v| validators.matches(v)))
        });
    let mut r = whole(file, size, ctype, range, head, slot).await?;
    validators.insert(r.headers_mut());
    Ok(r)
}

/// A file's validators: a strong entity tag from its identity, size and modification time,
/// and the modification time as an HTTP date.
struct Validators {
    etag: String,
    modified: SystemTime,
}

impl Validators {
    fn of(md: &std::fs::Metadata) -> Validators {
        Validators {
            etag: format!(
                "\"{:x}-{:x}-{:x}.{:x}\"",
                md.ino(),
                md.len(),
                md.mtime(),
                md.mtime_nsec()
            ),
            modified: md.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        }
    }

    /// Whether an `If-Range` value names this version of the file (RFC 9110 13.1.5: a strong
    /// entity tag equal to ours, or a date equal to our Last-Modified).
    fn matches(&self, v: &str) -> bool {
        let v = v.trim();
        if v.starts_with('"') {
            return v == self.etag;
        }
        match httpdate::parse_http_date(v) {
            Ok(t) => httpdate::fmt_http_date(t) == httpdate::fmt_http_date(self.modified),
            Err(_) => false,
        }
    }

    fn insert(&self, h: &mut HeaderMap) {
        if let Ok(v) = HeaderValue::from_str(&self.etag) {
            h.insert(header::ETAG, v);
        }
        if let Ok(v) = HeaderValue::from_str(&httpdate::fmt_http_date(self.modified)) {
            h.insert(header::LAST_MODIFIED, v);
        }
    }
}

/// The whole file, or one range of it.
async fn whole(
    file: std::fs::File,
    size: u64,
    ctype: &'static str,
    range: Option<&str>,
    head: bool,
    slot: &Arc<log::Slot>,
) -> std::io::Result<Response> {
    let (status, from, to) = match range::parse(range, size) {
        Ranged::Whole => (StatusCode::OK, 0, size),
        Ranged::Part(s, e) => (StatusCode::PARTIAL_CONTENT, s, e + 1),
        Ranged::Unsatisfiable => {
            let mut r = plain(StatusCode::RANGE_NOT_SATISFIABLE, "range not satisfiable");
            r.headers_mut().insert(
                header::CONTENT_RANGE,
                HeaderValue::from_str(&format!("bytes */{size}")).expect("ascii"),
            );
            return Ok(r);
        }
    };
    let mut r = Response::new(if head {
        Body::empty()
    } else {
        // The first chunk is read before the status is sent: a file the storage cannot
        // deliver (EIO) is a 500 and a log line, not a 200 with a body cut short at its start
        // (a failure later cuts the body short, and is logged); and the head goes out with it.
        let (file, first, at) = body::first_frame(file, Vec::new(), from, to).await?;
        Body::new(body::FileBody::new(file, first, at, to, slot))
    });
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
    h.insert(header::CONTENT_LENGTH, (to - from).into());
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if status == StatusCode::PARTIAL_CONTENT {
        h.insert(
            header::CONTENT_RANGE,
            HeaderValue::from_str(&format!("bytes {from}-{}/{size}", to - 1)).expect("ascii"),
        );
    }
    Ok(r)
}
