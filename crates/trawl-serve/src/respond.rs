//! A request's answer: the method and path checked, a directory's page, a file whole or in a
//! byte range (with its validators), or a seek's stream from a keyframe; the access log's line
//! once the body is done.

use std::fs::File;
use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, Uri, header};
use axum::response::Response;

use crate::resolve::{self, Refused};
use crate::server::AppState;
use crate::{Ranged, RequestError, body, cached, listing, log, range, seek};

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

/// Answers one request, its access log line set for when its body is done.
pub(crate) async fn handle<B>(st: Arc<AppState>, peer: SocketAddr, req: Request<B>) -> Response {
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
    let name = percent_encoding::percent_decode_str(uri.path()).decode_utf8_lossy();
    let answering = Answering {
        st,
        path: Path::new(&*name),
        head: method == Method::HEAD,
        slot,
    };
    match answering.respond(file, start_param(uri), headers).await {
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
        Err(source) => {
            let e = RequestError::Task {
                path: path.to_string(),
                source,
            };
            (st.notices)(log::Notice::Internal { path, error: &e });
            plain(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
        }
    }
}

/// A file's request being answered from the file opened beneath the root; `path` is the
/// request's path, used only for its extension and as the index's name (never a server path,
/// so errors reveal none).
struct Answering<'a> {
    st: &'a AppState,
    path: &'a Path,
    head: bool,
    slot: &'a Arc<log::Slot>,
}

impl Answering<'_> {
    /// The whole file or a range of it, or with `start` a seek's stream.
    async fn respond(
        &self,
        file: File,
        start: Option<String>,
        headers: &HeaderMap,
    ) -> Result<Response, RequestError> {
        let md = file.metadata()?;
        let size = md.len();
        let is_flv = self
            .path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("flv"));
        let ctype = if is_flv {
            "video/x-flv"
        } else {
            "application/octet-stream"
        };
        if let Some(v) = start {
            return self.seek(file, &md, &v, ctype).await;
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
        let mut r = whole(file, size, ctype, range, self.head, self.slot).await?;
        validators.insert(r.headers_mut());
        Ok(r)
    }

    /// A seek to `start=v`: 422 where the file cannot be indexed or the answer's prefix would
    /// not hold its configuration tags ([`seek::SeekError::TooLarge`]), 400 for a value that
    /// is no time or offset, 416 past the end; else the stream from the keyframe (the whole
    /// file from the first).
    async fn seek(
        &self,
        file: File,
        md: &std::fs::Metadata,
        v: &str,
        ctype: &'static str,
    ) -> Result<Response, RequestError> {
        let size = md.len();
        let stamp = (size, md.mtime(), md.mtime_nsec());
        let (idx, computed) = self
            .st
            .cache
            .get((md.dev(), md.ino()), self.path, &file, stamp)
            .await;
        let idx = match idx {
            Ok(i) => i,
            Err(e) => return Ok(plain(StatusCode::UNPROCESSABLE_ENTITY, e)),
        };
        let Some(s) = seek::parse_start(v, &idx) else {
            return Ok(plain(
                StatusCode::BAD_REQUEST,
                format!("start={v}: expected seconds (e.g. 12.5) or a byte offset"),
            ));
        };
        if seek::past_the_end(s, &idx) {
            return Ok(past_the_end(v, idx.duration, size));
        }
        let k = seek::keyframe_for(s, &idx);
        let (file, plan) = self.plan(idx, file, k).await?;
        let plan = match plan {
            Err(e @ seek::SeekError::TooLarge { .. }) => {
                return Ok(plain(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()));
            }
            // Never after the read that waits (`plan`); were it, the storage would not deliver
            // without waiting: EAGAIN.
            Err(seek::SeekError::NotCached { .. }) => {
                Err(RequestError::Io(std::io::ErrorKind::WouldBlock.into()))
            }
            Err(seek::SeekError::Io { source, .. }) => Err(RequestError::Io(source)),
            Ok(p) => Ok(p),
        };
        let cache_note = if computed { "computed" } else { "cached" };
        let mut r = match plan? {
            Some(body) => {
                return self
                    .stream_from_keyframe(file, body, ctype, cache_note)
                    .await;
            }
            None => whole(file, size, ctype, None, self.head, self.slot).await?,
        };
        r.headers_mut()
            .insert("x-trawl-index", HeaderValue::from_static(cache_note));
        Ok(r)
    }

    /// The tags before the keyframe, from the page cache here, else on the blocking pool.
    async fn plan(
        &self,
        idx: Arc<trawl_media::FlvIndex>,
        file: File,
        k: Option<trawl_media::Keyframe>,
    ) -> Result<(File, Result<Option<seek::SeekBody>, seek::SeekError>), RequestError> {
        match seek::plan(&idx, &file, k, &cached::read_exact_cached) {
            Err(seek::SeekError::NotCached { .. }) => tokio::task::spawn_blocking(move || {
                let p = seek::plan(&idx, &file, k, &seek::read_waiting);
                (file, p)
            })
            .await
            .map_err(|source| RequestError::Task {
                path: self.slot.path().to_string(),
                source,
            }),
            p => Ok((file, p)),
        }
    }

    /// The answer from a keyframe: the prefix (header, metadata, configuration tags), then the
    /// file from the keyframe on.
    async fn stream_from_keyframe(
        &self,
        file: File,
        body: seek::SeekBody,
        ctype: &'static str,
        cache_note: &'static str,
    ) -> Result<Response, RequestError> {
        let len = body.len();
        let mut r = Response::new(if self.head {
            Body::empty()
        } else {
            let (file, first, at) =
                body::first_frame(file, body.prefix, body.from, body.to, self.slot.path()).await?;
            Body::new(body::FileBody::new(file, first, at, body.to, self.slot))
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
        Ok(r)
    }
}

/// 416 for a start past the end of a file that lasts `duration` seconds.
fn past_the_end(v: &str, duration: f64, size: u64) -> Response {
    let mut r = plain(
        StatusCode::RANGE_NOT_SATISFIABLE,
        format!(
            "start={v}: past the end (the file lasts {duration:.3} s; a byte offset must be a keyframe's, from keyframes.filepositions)",
        ),
    );
    r.headers_mut().insert(
        header::CONTENT_RANGE,
        HeaderValue::from_str(&format!("bytes */{size}")).expect("ascii"),
    );
    r
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
) -> Result<Response, RequestError> {
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
        let (file, first, at) = body::first_frame(file, Vec::new(), from, to, slot.path()).await?;
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
