//! `trawl serve`: FLV files under a directory over HTTP (axum on tokio). `GET /f.flv?start=N`
//! answers a playable stream from the last keyframe at or before N (see [`seek`] for how seconds
//! and bytes are told apart); plain GET and HEAD serve whole files, with single byte ranges.

pub mod cache;
pub mod range;
pub mod resolve;
pub mod seek;

use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::Response;
use tokio::io::{AsyncReadExt, AsyncSeekExt};
use tokio_util::io::ReaderStream;

use cache::IndexCache;
use range::Ranged;
use resolve::Refused;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{}: {source}", path.display())]
    Root {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{addr}: cannot listen: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("server: {0}")]
    Io(#[from] std::io::Error),
}

pub struct ServeConfig {
    pub root: PathBuf,
    pub listen: String,
    /// Worker threads (default: the number of CPUs).
    pub threads: Option<usize>,
}

/// Bytes read per step of a response body (each step is one hop to tokio's blocking pool).
const BODY_CHUNK: usize = 256 << 10;

struct AppState {
    root: resolve::Root,
    cache: IndexCache,
}

/// Serves until `stop` is set; `ready` is told the bound address (port 0 picks a free one).
pub fn serve(
    cfg: ServeConfig,
    stop: &'static AtomicBool,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    let root = resolve::Root::open(&cfg.root).map_err(|source| ServeError::Root {
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
    rt.block_on(async move {
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
        });
        let app = axum::Router::new().fallback(handle).with_state(state);
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                while !stop.load(Ordering::Relaxed) {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            })
            .await?;
        Ok(())
    })
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

async fn handle(
    State(st): State<Arc<AppState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if method != Method::GET && method != Method::HEAD {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD");
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let file = match resolve::open(&st.root, uri.path()) {
        Ok(f) => f,
        Err(Refused::Outside) => {
            return plain(StatusCode::FORBIDDEN, "outside the served directory");
        }
        Err(Refused::NotFound) => return plain(StatusCode::NOT_FOUND, "no such file"),
    };
    let head = method == Method::HEAD;
    let name = percent_encoding::percent_decode_str(uri.path()).decode_utf8_lossy();
    match respond(
        &st,
        file,
        Path::new(&*name),
        start_param(&uri),
        &headers,
        head,
    )
    .await
    {
        Ok(r) => r,
        Err(e) => plain(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
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
        let k = seek::keyframe_for(s, &idx);
        let (file, plan) = tokio::task::spawn_blocking(move || {
            let p = seek::plan(&idx, &file, k);
            (file, p)
        })
        .await
        .map_err(std::io::Error::other)?;
        let cache_note = if computed { "computed" } else { "cached" };
        if let Some(body) = plan? {
            let mut r = Response::new(if head {
                Body::empty()
            } else {
                let mut f = tokio::fs::File::from_std(file);
                f.seek(std::io::SeekFrom::Start(body.from)).await?;
                let reader =
                    std::io::Cursor::new(body.prefix.clone()).chain(f.take(body.to - body.from));
                Body::from_stream(ReaderStream::with_capacity(reader, BODY_CHUNK))
            });
            let h = r.headers_mut();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
            h.insert(header::CONTENT_LENGTH, body.len().into());
            h.insert("x-trawl-index", HeaderValue::from_static(cache_note));
            h.insert(
                "x-trawl-keyframe",
                HeaderValue::from_str(&format!("{}@{}", body.keyframe.time, body.keyframe.offset))
                    .expect("ascii"),
            );
            return Ok(r);
        }
        let mut r = whole(file, size, ctype, None, head).await?;
        r.headers_mut()
            .insert("x-trawl-index", HeaderValue::from_static(cache_note));
        return Ok(r);
    }
    let range = headers.get(header::RANGE).and_then(|v| v.to_str().ok());
    whole(file, size, ctype, range, head).await
}

/// The whole file, or one range of it.
async fn whole(
    file: std::fs::File,
    size: u64,
    ctype: &'static str,
    range: Option<&str>,
    head: bool,
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
        let mut f = tokio::fs::File::from_std(file);
        f.seek(std::io::SeekFrom::Start(from)).await?;
        Body::from_stream(ReaderStream::with_capacity(f.take(to - from), BODY_CHUNK))
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
