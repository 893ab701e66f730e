//! A fault-injecting HTTP/1 proxy in front of a test S3 server: forwards every request as it
//! came (Host header, path, query and headers unchanged, so SigV4 signatures still verify) and
//! answers with the faults a test sets at run time, counting each fault that fired and logging
//! every request.

use super::{Env, Uploader};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::TcpStream as StdTcpStream;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type ProxyBody = BoxBody<Bytes, BoxError>;
type Hook = Arc<dyn Fn() + Send + Sync>;

/// A kind of fault, for [`FaultProxy::fired`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    SlowDown,
    InternalError,
    CutBody,
    ShortBody,
    StallBody,
    StallAnswer,
    Latency,
    Expired,
    DenyList,
    OnGet,
    Override,
}

/// One request as the proxy saw it, and the status it answered with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Logged {
    pub method: String,
    /// Path and query, as sent (percent-encoded).
    pub path: String,
    pub range: Option<String>,
    pub if_match: Option<String>,
    pub status: u16,
}

#[derive(Default)]
struct State {
    slow_down: u64,
    internal_error: u64,
    /// Bytes of the body to send, and how many more responses to cut.
    cut: Option<(u64, u64)>,
    short: u64,
    /// Bytes of the body to send before it stalls, and how many more responses to stall.
    stall: Option<(u64, u64)>,
    /// Requests (of any kind) still to be held without an answer.
    stall_answer: u64,
    latency_ms: u64,
    /// Requests still answered as usual before every one answers ExpiredToken.
    expire_after: Option<u64>,
    deny_list: bool,
    /// Object (`BUCKET/KEY`), bytes of its body sent first, the hook; each runs once.
    hooks: Vec<(String, u64, Hook)>,
    /// Object, header, value.
    overrides: Vec<(String, String, String)>,
    fired: HashMap<Fault, u64>,
    log: Vec<Logged>,
}

impl State {
    fn fire(&mut self, f: Fault) {
        *self.fired.entry(f).or_default() += 1;
    }
}

struct Shared {
    upstream: String,
    state: Mutex<State>,
}

/// The proxy, stopped on drop. Every fault setter takes `&self` and applies from the next
/// request on.
pub struct FaultProxy {
    endpoint: String,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FaultProxy {
    /// A proxy on 127.0.0.1 in front of `upstream` (`http://HOST:PORT`).
    pub fn start(upstream: &str) -> FaultProxy {
        let upstream = upstream
            .strip_prefix("http://")
            .unwrap_or(upstream)
            .trim_end_matches('/')
            .to_string();
        let shared = Arc::new(Shared {
            upstream,
            state: Mutex::new(State::default()),
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("fault-proxy".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                    loop {
                        let stream = tokio::select! {
                            r = listener.accept() => match r {
                                Ok((s, _)) => s,
                                Err(_) => continue,
                            },
                            _ = &mut stopped => break,
                        };
                        tokio::spawn(serve(sh.clone(), stream));
                    }
                });
                rt.shutdown_timeout(Duration::from_secs(1));
            })
            .unwrap();
        FaultProxy {
            endpoint,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The environment of a `trawl` child that reads through this proxy.
    pub fn env(&self) -> Env {
        Env::for_endpoint(&self.endpoint)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.state.lock().unwrap()
    }

    /// The next `n` object GETs answer 503 SlowDown (S3's XML), without reaching the server.
    pub fn slow_down(&self, n: u64) {
        self.state().slow_down = n;
    }

    /// The next `n` object GETs answer 500 InternalError.
    pub fn internal_error(&self, n: u64) {
        self.state().internal_error = n;
    }

    /// The next `n` successful object GETs send their headers (Content-Length as the server
    /// said) and the first `bytes` of the body, then reset the connection (TCP RST).
    pub fn cut_body_after(&self, bytes: u64, n: u64) {
        self.state().cut = Some((bytes, n));
    }

    /// The next `n` successful object GETs keep their Content-Length but send only the first
    /// half of the body, then close the connection in order (FIN).
    pub fn short_body(&self, n: u64) {
        self.state().short = n;
    }

    /// The next `n` successful object GETs of bodies longer than `bytes` send their headers
    /// and the first `bytes` of the body, then nothing more, the connection held open until
    /// the client closes it.
    pub fn stall_body_after(&self, bytes: u64, n: u64) {
        self.state().stall = Some((bytes, n));
    }

    /// The next `n` requests, of any kind, are never answered: the connection is held open
    /// until the client closes it.
    pub fn stall_answer(&self, n: u64) {
        self.state().stall_answer = n;
    }

    /// Every response waits `ms` milliseconds before its first byte (0: none).
    pub fn latency(&self, ms: u64) {
        self.state().latency_ms = ms;
    }

    /// After `n` more requests, every request answers 400 ExpiredToken.
    pub fn expire_after(&self, n: u64) {
        self.state().expire_after = Some(n);
    }

    /// ListObjects and ListObjectsV2 requests answer 403 AccessDenied from now on.
    pub fn deny_list(&self) {
        self.state().deny_list = true;
    }

    /// Runs `hook` (once, on a thread where it may block) when the next successful GET of
    /// `object` (`BUCKET/KEY`) has sent the first `after` bytes of its body, before the rest.
    pub fn on_get(&self, object: &str, after: u64, hook: impl Fn() + Send + Sync + 'static) {
        self.state()
            .hooks
            .push((object.to_string(), after, Arc::new(hook)));
    }

    /// Replaces `object` (`BUCKET/KEY`) with `new_bytes`, through `uploader`, once the next
    /// GET of it has sent `after` bytes: the reader gets the old object's first bytes and,
    /// for the rest, what the server still sends of the old one.
    pub fn replace_during_get(&self, object: &str, after: u64, new_bytes: &[u8], up: &Uploader) {
        let (bucket, key) = object.split_once('/').expect("BUCKET/KEY");
        let (bucket, key, bytes, up) = (
            bucket.to_string(),
            key.to_string(),
            new_bytes.to_vec(),
            up.clone(),
        );
        self.on_get(object, after, move || {
            up.put(&bucket, &key, &bytes, super::Checksum::Crc64Nvme);
        });
    }

    /// Answers for `object` (`BUCKET/KEY`: HEAD and GET alike, successful ones) carry `value`
    /// as `header` (set or replaced), e.g. a stored checksum or an ETag that disagrees with the
    /// bytes.
    pub fn override_header(&self, object: &str, header: &str, value: &str) {
        self.state().overrides.push((
            object.to_string(),
            header.to_ascii_lowercase(),
            value.to_string(),
        ));
    }

    /// Clears every fault (the counts and the log stay).
    pub fn clear(&self) {
        let mut s = self.state();
        let fired = std::mem::take(&mut s.fired);
        let log = std::mem::take(&mut s.log);
        *s = State {
            fired,
            log,
            ..State::default()
        };
    }

    /// How many times fault `kind` fired.
    pub fn fired(&self, kind: Fault) -> u64 {
        self.state().fired.get(&kind).copied().unwrap_or(0)
    }

    /// Every request so far, in the order answered.
    pub fn requests(&self) -> Vec<Logged> {
        self.state().log.clone()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves one client connection. A second descriptor of its socket stays here, for the socket
/// options a fault needs (an RST on close) and the bytes still unsent.
async fn serve(shared: Arc<Shared>, stream: tokio::net::TcpStream) {
    use std::os::fd::AsFd;
    let Ok(fd) = stream.as_fd().try_clone_to_owned() else {
        return;
    };
    let sock = Arc::new(StdTcpStream::from(fd));
    let svc = hyper::service::service_fn(move |req| {
        let (shared, sock) = (shared.clone(), sock.clone());
        async move { Ok::<_, Infallible>(handle(shared, sock, req).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
        .await;
}

/// What a request is, for the faults: the object it names (`BUCKET/KEY`, decoded), whether it
/// reads an object's bytes, whether it lists a bucket.
struct Target {
    object: Option<String>,
    object_get: bool,
    list: bool,
}

/// Query parameters that make a GET of an object something else than a read of its bytes.
const OBJECT_SUBRESOURCES: &[&str] = &[
    "attributes",
    "tagging",
    "acl",
    "uploadId",
    "retention",
    "legal-hold",
    "torrent",
];

/// Query parameters that make a GET of a bucket something else than a listing of its objects.
const BUCKET_SUBRESOURCES: &[&str] = &[
    "location",
    "versioning",
    "policy",
    "acl",
    "cors",
    "lifecycle",
    "tagging",
    "uploads",
    "versions",
    "website",
    "encryption",
    "object-lock",
    "notification",
    "logging",
    "replication",
    "accelerate",
    "requestPayment",
    "ownershipControls",
    "publicAccessBlock",
];

fn target(method: &hyper::Method, uri: &hyper::Uri) -> Target {
    let path = percent_encoding::percent_decode_str(uri.path()).decode_utf8_lossy();
    let path = path.trim_start_matches('/');
    let (bucket, key) = path.split_once('/').unwrap_or((path, ""));
    let names: Vec<&str> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .map(|p| p.split_once('=').map_or(p, |(n, _)| n))
        .collect();
    let has = |subs: &[&str]| names.iter().any(|n| subs.contains(n));
    let get = method == hyper::Method::GET;
    Target {
        object: (!bucket.is_empty() && !key.is_empty()).then(|| format!("{bucket}/{key}")),
        object_get: get && !bucket.is_empty() && !key.is_empty() && !has(OBJECT_SUBRESOURCES),
        list: get && !bucket.is_empty() && key.is_empty() && !has(BUCKET_SUBRESOURCES),
    }
}

/// An S3 error answer: its status and XML body.
fn s3_error(status: StatusCode, code: &str, message: &str) -> Response<ProxyBody> {
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code>\
         <Message>{message}</Message><RequestId>trawl-fault-proxy</RequestId></Error>"
    );
    Response::builder()
        .status(status)
        .header("content-type", "application/xml")
        .header("x-amz-request-id", "trawl-fault-proxy")
        .body(Full::new(Bytes::from(xml)).map_err(|e| match e {}).boxed())
        .unwrap()
}

/// The fault answered in place of the server's, if one applies to this request.
fn local_fault(s: &mut State, t: &Target) -> Option<Response<ProxyBody>> {
    if let Some(left) = s.expire_after {
        if left == 0 {
            s.fire(Fault::Expired);
            return Some(s3_error(
                StatusCode::BAD_REQUEST,
                "ExpiredToken",
                "The provided token has expired.",
            ));
        }
        s.expire_after = Some(left - 1);
    }
    if t.list && s.deny_list {
        s.fire(Fault::DenyList);
        return Some(s3_error(
            StatusCode::FORBIDDEN,
            "AccessDenied",
            "Access Denied",
        ));
    }
    if t.object_get && s.slow_down > 0 {
        s.slow_down -= 1;
        s.fire(Fault::SlowDown);
        return Some(s3_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "SlowDown",
            "Please reduce your request rate.",
        ));
    }
    if t.object_get && s.internal_error > 0 {
        s.internal_error -= 1;
        s.fire(Fault::InternalError);
        return Some(s3_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            "We encountered an internal error. Please try again.",
        ));
    }
    None
}

async fn handle(
    shared: Arc<Shared>,
    sock: Arc<StdTcpStream>,
    req: Request<Incoming>,
) -> Response<ProxyBody> {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    let mut entry = Logged {
        method: req.method().to_string(),
        path: req
            .uri()
            .path_and_query()
            .map_or("/".to_string(), |p| p.as_str().to_string()),
        range: header("range"),
        if_match: header("if-match"),
        status: 0,
    };
    let t = target(req.method(), req.uri());
    let stalled = {
        let mut s = shared.state.lock().unwrap();
        let stalled = s.stall_answer > 0;
        if stalled {
            s.stall_answer -= 1;
            s.fire(Fault::StallAnswer);
        }
        stalled
    };
    if stalled {
        // Never answered; hyper drops this future when the client closes the connection.
        let never: Infallible = std::future::pending().await;
        match never {}
    }
    let (local, latency) = {
        let mut s = shared.state.lock().unwrap();
        let latency = s.latency_ms;
        if latency > 0 {
            s.fire(Fault::Latency);
        }
        (local_fault(&mut s, &t), latency)
    };
    if latency > 0 {
        tokio::time::sleep(Duration::from_millis(latency)).await;
    }
    let resp = match local {
        Some(r) => r,
        None => match forward(&shared.upstream, req).await {
            Ok(r) => shape(&shared, &t, sock, r),
            Err(e) => s3_error(StatusCode::BAD_GATEWAY, "ProxyError", &e.to_string()),
        },
    };
    entry.status = resp.status().as_u16();
    shared.state.lock().unwrap().log.push(entry);
    resp
}

/// Sends `req` to the server on a connection of its own, as it came.
async fn forward(upstream: &str, req: Request<Incoming>) -> Result<Response<Incoming>, BoxError> {
    let stream = tokio::net::TcpStream::connect(upstream).await?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    Ok(sender.send_request(req).await?)
}

/// What a body fault does once its bytes are sent.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// Reset the connection.
    Cut,
    /// Stop sending; the connection closes in order.
    Short,
    /// Stop sending; the connection stays open until the client closes it.
    Stall,
}

/// The server's answer with this request's header overrides and body faults applied.
fn shape(
    shared: &Shared,
    t: &Target,
    sock: Arc<StdTcpStream>,
    resp: Response<Incoming>,
) -> Response<ProxyBody> {
    let (mut parts, body) = resp.into_parts();
    let ok = parts.status.is_success();
    let mut s = shared.state.lock().unwrap();
    let mut end = None;
    let mut hook = None;
    if let (Some(object), true) = (&t.object, ok) {
        let over: Vec<_> = s
            .overrides
            .iter()
            .filter(|(o, _, _)| o == object)
            .map(|(_, h, v)| (h.clone(), v.clone()))
            .collect();
        for (h, v) in over {
            parts.headers.insert(
                hyper::header::HeaderName::from_bytes(h.as_bytes()).unwrap(),
                hyper::header::HeaderValue::from_str(&v).unwrap(),
            );
            s.fire(Fault::Override);
        }
        if t.object_get {
            let len: u64 = parts
                .headers
                .get("content-length")
                .and_then(|v| v.to_str().ok()?.parse().ok())
                .unwrap_or(0);
            if let Some((bytes, n)) = s.cut.filter(|c| c.1 > 0) {
                s.cut = Some((bytes, n - 1));
                s.fire(Fault::CutBody);
                end = Some((End::Cut, bytes));
            } else if let Some((bytes, n)) = s.stall.filter(|c| c.1 > 0 && len > c.0) {
                s.stall = Some((bytes, n - 1));
                s.fire(Fault::StallBody);
                end = Some((End::Stall, bytes));
            } else if s.short > 0 {
                s.short -= 1;
                s.fire(Fault::ShortBody);
                end = Some((End::Short, len / 2));
            }
            if let Some(i) = s.hooks.iter().position(|(o, _, _)| o == object) {
                let (_, after, h) = s.hooks.remove(i);
                s.fire(Fault::OnGet);
                hook = Some((after, h));
            }
        }
    }
    drop(s);
    let body = if end.is_none() && hook.is_none() {
        body.map_err(BoxError::from).boxed()
    } else {
        let (tx, rx) = mpsc::channel(4);
        tokio::spawn(pump(body, tx, sock, end, hook));
        ChannelBody { rx }.boxed()
    };
    Response::from_parts(parts, body)
}

/// A response body fed through a channel by [`pump`].
struct ChannelBody {
    rx: mpsc::Receiver<Result<Frame<Bytes>, BoxError>>,
}

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.rx.poll_recv(cx)
    }
}

type Tx = mpsc::Sender<Result<Frame<Bytes>, BoxError>>;

/// Copies the server's body to the client's, running `hook` once `hook.0` bytes are sent and
/// ending as `end` says once `end.1` bytes are.
async fn pump(
    mut body: Incoming,
    tx: Tx,
    sock: Arc<StdTcpStream>,
    end: Option<(End, u64)>,
    mut hook: Option<(u64, Hook)>,
) {
    let mut sent: u64 = 0;
    // Both limits at their offsets, first the hook's (at the same offset it runs first).
    loop {
        let mut data = match body.frame().await {
            None => break,
            Some(Err(e)) => {
                let _ = tx.send(Err(e.into())).await;
                return;
            }
            Some(Ok(f)) => match f.into_data() {
                Ok(d) => d,
                Err(f) => {
                    let _ = tx.send(Ok(f)).await;
                    continue;
                }
            },
        };
        loop {
            let next_stop = [hook.as_ref().map(|h| h.0), end.map(|e| e.1)]
                .into_iter()
                .flatten()
                .filter(|&at| at <= sent + data.len() as u64)
                .min();
            let Some(at) = next_stop else {
                sent += data.len() as u64;
                if !data.is_empty() && tx.send(Ok(Frame::data(data))).await.is_err() {
                    return;
                }
                break;
            };
            let head = data.split_to((at - sent) as usize);
            sent = at;
            if !head.is_empty() && tx.send(Ok(Frame::data(head))).await.is_err() {
                return;
            }
            if hook.as_ref().is_some_and(|h| h.0 == at) {
                let (_, h) = hook.take().unwrap();
                drained(&tx, &sock).await;
                let _ = tokio::task::spawn_blocking(move || h()).await;
                continue;
            }
            // The end's offset.
            drained(&tx, &sock).await;
            if end.unwrap().0 == End::Stall {
                // Holding the sender keeps the body open: the client sees no end, no error.
                tx.closed().await;
                return;
            }
            if end.unwrap().0 == End::Cut {
                let _ = socket2::SockRef::from(&*sock).set_linger(Some(Duration::ZERO));
                let _ = tx.send(Err("fault proxy: body cut".into())).await;
            }
            return;
        }
    }
}

/// Waits (at most 2 s) until what was put in the channel has left the socket: the channel is
/// empty and the socket's send queue too, twice in a row 10 ms apart (so that bytes between
/// the two are not missed).
async fn drained(tx: &Tx, sock: &StdTcpStream) {
    let t0 = Instant::now();
    let mut quiet = 0;
    while quiet < 2 && t0.elapsed() < Duration::from_secs(2) {
        if tx.capacity() == tx.max_capacity() && unsent(sock) == 0 {
            quiet += 1;
        } else {
            quiet = 0;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Bytes written to `sock` that the peer has not acknowledged yet (SIOCOUTQ).
fn unsent(sock: &StdTcpStream) -> i32 {
    use std::os::fd::AsRawFd;
    let mut n: libc::c_int = 0;
    // SAFETY: TIOCOUTQ (SIOCOUTQ on a socket) writes one c_int through the pointer, which
    // points at one; the descriptor is open while `sock` lives.
    let r = unsafe { libc::ioctl(sock.as_raw_fd(), libc::TIOCOUTQ, &mut n) };
    if r == 0 { n } else { 0 }
}
