//! A scripted S3 store on loopback: it answers ranges, listings and headers as a test says,
//! wrong ones included, and logs every request (what `objects_hostile.rs` and the listings'
//! tests hold trawl to).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};

use super::Env;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One request to the scripted store: method, decoded path (`/BUCKET/KEY`), query, and the
/// byte range asked for (`bytes=A-B`, inclusive).
#[derive(Clone, Debug)]
pub struct Req {
    pub method: String,
    pub path: String,
    pub query: String,
    pub range: Option<(u64, u64)>,
}

/// What the scripted store answers.
pub enum Body {
    Bytes(Vec<u8>),
}

pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

impl Resp {
    pub fn ok(headers: &[(&str, String)], body: Vec<u8>) -> Resp {
        Resp {
            status: 200,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            body: Body::Bytes(body),
        }
    }
}

/// A store on loopback that answers every request with what its script says, logging each.
pub struct Scripted {
    endpoint: String,
    log: Arc<Mutex<Vec<Req>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Scripted {
    pub fn start(script: impl Fn(&Req) -> Resp + Send + Sync + 'static) -> Scripted {
        let script = Arc::new(script);
        let log = Arc::new(Mutex::new(Vec::new()));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let lg = log.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let sock = tokio::select! {
                        r = listener.accept() => match r { Ok((s, _)) => s, Err(_) => continue },
                        _ = &mut stopped => break,
                    };
                    let (script, lg) = (script.clone(), lg.clone());
                    let svc = hyper::service::service_fn(move |req: hyper::Request<_>| {
                        let (script, lg) = (script.clone(), lg.clone());
                        async move {
                            let r = Req {
                                method: req.method().to_string(),
                                path: percent_encoding::percent_decode_str(req.uri().path())
                                    .decode_utf8_lossy()
                                    .into_owned(),
                                query: req.uri().query().unwrap_or("").to_string(),
                                range: req
                                    .headers()
                                    .get("range")
                                    .and_then(|v| v.to_str().ok())
                                    .and_then(|v| v.strip_prefix("bytes="))
                                    .and_then(|v| v.split_once('-'))
                                    .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?))),
                            };
                            lg.lock().unwrap().push(r.clone());
                            let resp = script(&r);
                            let mut b = hyper::Response::builder().status(resp.status);
                            for (k, v) in &resp.headers {
                                b = b.header(k, v);
                            }
                            let body: BoxBody<Bytes, BoxError> = match resp.body {
                                Body::Bytes(v) => {
                                    Full::new(Bytes::from(v)).map_err(|e| match e {}).boxed()
                                }
                            };
                            Ok::<_, std::convert::Infallible>(b.body(body).unwrap())
                        }
                    });
                    tokio::spawn(async move {
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(sock), svc)
                            .await;
                    });
                }
            });
            rt.shutdown_timeout(Duration::from_secs(1));
        });
        Scripted {
            endpoint,
            log,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn env(&self) -> Env {
        Env::for_endpoint(&self.endpoint)
    }

    pub fn requests(&self) -> Vec<Req> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A ListObjectsV2 answer holding `keys` (key, size, ETag).
pub fn listing(keys: &[(&str, i64, Option<&str>)]) -> Resp {
    let mut x = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult \
         xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>bkt</Name><IsTruncated>false</IsTruncated>",
    );
    for (k, size, etag) in keys {
        x.push_str(&format!("<Contents><Key>{k}</Key><Size>{size}</Size>"));
        if let Some(e) = etag {
            x.push_str(&format!("<ETag>&quot;{e}&quot;</ETag>"));
        }
        x.push_str("<LastModified>2024-01-01T00:00:00.000Z</LastModified></Contents>");
    }
    x.push_str("</ListBucketResult>");
    Resp::ok(
        &[("content-type", "application/xml".to_string())],
        x.into_bytes(),
    )
}

pub fn is_list(r: &Req) -> bool {
    r.method == "GET" && r.query.contains("list-type=2")
}

/// Bytes `a..=b` of `data` as a 206 answer saying they are bytes `a..=b` of it.
pub fn partial(data: &[u8], a: u64, b: u64, etag: Option<&str>) -> Resp {
    let mut h = vec![("content-range", format!("bytes {a}-{b}/{}", data.len()))];
    if let Some(e) = etag {
        h.push(("etag", format!("\"{e}\"")));
    }
    let mut r = Resp::ok(&h, data[a as usize..=b as usize].to_vec());
    r.status = 206;
    r
}

/// A listing whose keys are URL-encoded (as trawl asks), `keys` as the store wrote them.
pub fn encoded_listing(keys: &[(&str, i64)]) -> Resp {
    let mut x = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult \
         xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>bkt</Name>\
         <EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>",
    );
    for (k, size) in keys {
        x.push_str(&format!(
            "<Contents><Key>{k}</Key><Size>{size}</Size>\
             <LastModified>2024-01-01T00:00:00.000Z</LastModified></Contents>"
        ));
    }
    x.push_str("</ListBucketResult>");
    Resp::ok(
        &[("content-type", "application/xml".to_string())],
        x.into_bytes(),
    )
}

/// One page of a ListObjectsV2 answer: `keys` (key, size), common `prefixes`, and `next` (a
/// continuation token: the listing goes on) or none (its last page), all written as given.
pub fn listing_page(keys: &[(&str, i64)], prefixes: &[&str], next: Option<&str>) -> Resp {
    let mut x = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult \
         xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>bkt</Name>",
    );
    match next {
        Some(t) => x.push_str(&format!(
            "<IsTruncated>true</IsTruncated><NextContinuationToken>{t}</NextContinuationToken>"
        )),
        None => x.push_str("<IsTruncated>false</IsTruncated>"),
    }
    for (k, size) in keys {
        x.push_str(&format!(
            "<Contents><Key>{k}</Key><Size>{size}</Size><ETag>&quot;e&quot;</ETag>\
             <LastModified>2024-01-01T00:00:00.000Z</LastModified></Contents>"
        ));
    }
    for p in prefixes {
        x.push_str(&format!(
            "<CommonPrefixes><Prefix>{p}</Prefix></CommonPrefixes>"
        ));
    }
    x.push_str("</ListBucketResult>");
    Resp::ok(
        &[("content-type", "application/xml".to_string())],
        x.into_bytes(),
    )
}

/// The value of the query parameter `name` of a request, decoded; None where it is absent.
pub fn param(r: &Req, name: &str) -> Option<String> {
    r.query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == name).then(|| {
            percent_encoding::percent_decode_str(v)
                .decode_utf8_lossy()
                .into_owned()
        })
    })
}

/// The answer a store holding `keys` (key, size; in key order) gives the listing `r` asks
/// for, in one page: the keys below its prefix, those below a further `/` as common prefixes
/// where it asks for a level.
pub fn listing_for(r: &Req, keys: &[(&str, i64)]) -> Resp {
    let prefix = param(r, "prefix").unwrap_or_default();
    let level = param(r, "delimiter").is_some();
    let mut found = Vec::new();
    let mut prefixes: Vec<&str> = Vec::new();
    for (k, size) in keys {
        let Some(rest) = k.strip_prefix(prefix.as_str()) else {
            continue;
        };
        match rest.find('/') {
            Some(at) if level => {
                let p = &k[..prefix.len() + at + 1];
                if prefixes.last() != Some(&p) {
                    prefixes.push(p);
                }
            }
            _ => found.push((*k, *size)),
        }
    }
    listing_page(&found, &prefixes, None)
}
