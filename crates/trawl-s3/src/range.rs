//! One object's bytes, in order: ranged GETs of [`RANGE`] bytes, several of one object in
//! flight, each pinned to the ETag the object had when it was listed or first answered
//! (`If-Match`, and the answer's own ETag and total size checked, for stores that ignore the
//! header), a body cut short resumed from where it stopped.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::sync::mpsc;

use crate::connect::Patience;
use crate::depth::Depth;
use crate::list::unquote;
use crate::{S3Error, Store, StoreFault};

/// Bytes asked for by one request (an object up to this size is one request).
pub(crate) const RANGE: u64 = 4 << 20;
/// Requests for one object in flight at most.
pub(crate) const PER_OBJECT: usize = 16;
/// Pieces read and not yet consumed, per object.
pub(crate) const AHEAD: usize = 2;

/// An object to read, as the listing or a HeadObject saw it.
#[derive(Debug, Clone)]
pub(crate) struct Want {
    pub(crate) bucket: String,
    pub(crate) key: String,
    /// `s3://BUCKET/KEY`, for messages.
    pub(crate) path: String,
    pub(crate) size: u64,
    /// The version to pin every range to (None: the first answer's).
    pub(crate) etag: Option<String>,
}

/// What one object's reading hands its consumer: its pieces in order, or the failure that
/// ended it.
pub(crate) type Pieces = mpsc::Receiver<Result<Bytes, S3Error>>;

/// The most bytes an object's reading holds at once (the consumer's budget for it).
pub(crate) fn footprint(size: u64) -> u64 {
    size.min(RANGE * (PER_OBJECT + AHEAD) as u64).max(1)
}

/// Starts reading `want` on the store's runtime; its pieces come in order through what is
/// returned.
pub(crate) fn fetch(store: &Store, depth: Arc<Depth>, want: Want) -> Pieces {
    let (tx, rx) = mpsc::channel(AHEAD);
    let (client, patience) = (store.client.clone(), store.patience);
    store.rt.spawn(async move {
        // Made as they are asked for: a size a store claims is never trusted with memory.
        let count = ranges(want.size);
        let mut etag = want.etag.clone();
        let mut pending = VecDeque::new();
        let mut next = 0u64;
        let want = Arc::new(want);
        loop {
            // Without a pin yet, the first answer must come back before more are asked.
            let room = if etag.is_none() {
                1
            } else {
                PER_OBJECT.min(depth.now()).max(1)
            };
            while pending.len() < room && next < count {
                let (want, depth, client, pin) =
                    (want.clone(), depth.clone(), client.clone(), etag.clone());
                let r = range(want.size, next);
                let several = count > 1;
                pending.push_back(tokio::spawn(async move {
                    get_range(&client, &depth, &want, r, pin, several, patience).await
                }));
                next += 1;
            }
            let Some(h) = pending.pop_front() else {
                return;
            };
            let got = match h.await {
                Ok(r) => r,
                Err(e) => Err(S3Error::Request {
                    what: want.path.clone(),
                    fault: StoreFault::Other,
                    message: format!("the read's task failed: {e}"),
                }),
            };
            let failed = got.is_err();
            let piece = got.map(|(b, e)| {
                etag = etag.take().or(e);
                b
            });
            if tx.send(piece).await.is_err() || failed {
                for h in pending {
                    h.abort();
                }
                return;
            }
        }
    });
    rx
}

/// The first byte, last byte and total of a `Content-Range` (`bytes A-B/T`); None where it
/// is not one.
fn answered_span(cr: &str) -> Option<(u64, u64, u64)> {
    let (span, total) = cr.strip_prefix("bytes ")?.split_once('/')?;
    let (a, b) = span.split_once('-')?;
    Some((a.parse().ok()?, b.parse().ok()?, total.parse().ok()?))
}

/// How many requests an object of `size` bytes takes (an empty one: one, asked for whole).
fn ranges(size: u64) -> u64 {
    size.div_ceil(RANGE).max(1)
}

/// The `i`th range of an object of `size` bytes: its first and last byte, inclusive, or None
/// for an empty object (asked for whole: a range of nothing is not satisfiable).
fn range(size: u64, i: u64) -> Option<(u64, u64)> {
    (size > 0).then(|| (i * RANGE, (i + 1).saturating_mul(RANGE).min(size) - 1))
}

/// A pause before attempt `n`, bounded and jittered (full jitter up to 50 ms x 2^n, at most
/// 2 s), so that readers cut off together do not come back together.
async fn backoff(n: u32) {
    let cap = (50u64 << n.min(6)).min(2000);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()));
    tokio::time::sleep(Duration::from_millis(nanos % (cap + 1))).await;
}

fn fault(want: &Want, fault: StoreFault, message: String) -> S3Error {
    S3Error::Request {
        what: want.path.clone(),
        fault,
        message,
    }
}

/// One range read whole: resumed from the byte reached where its body is cut or stalls (no
/// byte for `patience.stall`), every answer checked to be the pinned version of the object and
/// the bytes asked for. `several`: the object takes more than one request, so every answer
/// must carry the ETag that shows it is of the same version as the others. Returns the bytes
/// and the ETag answered.
async fn get_range(
    client: &aws_sdk_s3::Client,
    depth: &Depth,
    want: &Want,
    range: Option<(u64, u64)>,
    mut pin: Option<String>,
    several: bool,
    patience: Patience,
) -> Result<(Bytes, Option<String>), S3Error> {
    let (first, last) = range.unwrap_or((0, 0));
    let expected = range.map_or(0, |(a, b)| b - a + 1) as usize;
    let mut buf = BytesMut::with_capacity(expected);
    let mut cuts = 0u32;
    loop {
        let permit = depth.enter().await;
        let t0 = Instant::now();
        let mut req = client.get_object().bucket(&want.bucket).key(&want.key);
        if range.is_some() {
            req = req.range(format!("bytes={}-{last}", first + buf.len() as u64));
        }
        if let Some(e) = &pin {
            req = req.if_match(format!("\"{e}\""));
        }
        let out = match req.send().await {
            Ok(o) => o,
            Err(e) => {
                let e = S3Error::from_sdk(want.path.clone(), e);
                if e.fault() == StoreFault::Unavailable {
                    depth.throttled();
                }
                return Err(e);
            }
        };
        let start = first + buf.len() as u64;
        let asked = Asked {
            range: range.map(|_| (start, last)),
            several: several || !buf.is_empty(),
        };
        pin = answer_is_asked(want, &out, &asked, pin)?;
        let wait = t0.elapsed();
        let mut body = out.body;
        let cut = loop {
            let Ok(next) = tokio::time::timeout(patience.stall, body.try_next()).await else {
                break Some(format!(
                    "the store sent no byte for {} s",
                    patience.stall.as_secs_f64()
                ));
            };
            match next {
                Ok(Some(c)) => {
                    if buf.len() + c.len() > expected {
                        return Err(fault(
                            want,
                            StoreFault::Other,
                            format!("the store sent more than the {expected} bytes asked for"),
                        ));
                    }
                    buf.extend_from_slice(&c);
                }
                Ok(None) => break None,
                Err(e) => break Some(crate::error::chain(&e)),
            }
        };
        drop(permit);
        depth.answered(
            wait,
            t0.elapsed().saturating_sub(wait),
            first + buf.len() as u64 - start,
        );
        if buf.len() == expected {
            return Ok((buf.freeze(), pin));
        }
        cuts += 1;
        if cuts >= patience.attempts {
            let why = cut.unwrap_or_else(|| "the body ended early".to_string());
            return Err(fault(
                want,
                StoreFault::Connection,
                format!(
                    "cut short {cuts} times, the last at byte {} of {first}-{last}: {why}",
                    first + buf.len() as u64
                ),
            ));
        }
        backoff(cuts).await;
    }
}

/// What one request asked for: the bytes (none: the whole, empty object), and whether the
/// object takes several answers, which must then each carry its ETag.
struct Asked {
    range: Option<(u64, u64)>,
    several: bool,
}

/// Checks an answer's headers against what was asked: the pinned version (its ETag, which
/// pins the object from now on where nothing did yet), the bytes answered and the object's
/// size. Returns the pin.
fn answer_is_asked(
    want: &Want,
    out: &aws_sdk_s3::operation::get_object::GetObjectOutput,
    asked: &Asked,
    pin: Option<String>,
) -> Result<Option<String>, S3Error> {
    let answered = out.e_tag().map(unquote);
    // Without an ETag in each answer, bytes of two versions could be joined unseen.
    if answered.is_none() && asked.several {
        return Err(fault(
            want,
            StoreFault::Other,
            "the store answered a range without an ETag: its ranges cannot be shown to be \
             of one version of the object"
                .to_string(),
        ));
    }
    let pin = match (pin, answered) {
        (Some(p), Some(a)) if p != a => {
            return Err(fault(
                want,
                StoreFault::Replaced,
                format!("replaced while it was read (ETag {p} became {a})"),
            ));
        }
        (None, a) => a,
        (p, _) => p,
    };
    let total = match out.content_range() {
        Some(cr) => {
            // The bytes answered must be the bytes asked for, not only of the right total.
            let span = answered_span(cr);
            let asked_for = asked.range;
            if asked_for.is_none() || span.is_some_and(|(a, b, _)| Some((a, b)) != asked_for) {
                return Err(fault(
                    want,
                    StoreFault::Other,
                    format!(
                        "the store answered {cr} for bytes {}",
                        asked_for.map_or_else(|| "all".to_string(), |(a, b)| format!("{a}-{b}"))
                    ),
                ));
            }
            span.map(|(_, _, t)| t)
        }
        None => out.content_length().and_then(|n| u64::try_from(n).ok()),
    };
    if total != Some(want.size) {
        return Err(fault(
            want,
            StoreFault::Replaced,
            format!(
                "replaced while it was read: {} bytes when listed, {} now",
                want.size,
                total.map_or_else(|| "unknown".to_string(), |t| t.to_string())
            ),
        ));
    }
    Ok(pin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_the_object_once() {
        let all = |size| {
            (0..ranges(size))
                .map(|i| range(size, i))
                .collect::<Vec<_>>()
        };
        assert_eq!(all(0), vec![None]);
        assert_eq!(all(1), vec![Some((0, 0))]);
        assert_eq!(all(RANGE), vec![Some((0, RANGE - 1))]);
        assert_eq!(
            all(RANGE + 1),
            vec![Some((0, RANGE - 1)), Some((RANGE, RANGE))]
        );
        // A size no store holds costs nothing until asked for.
        assert_eq!(ranges(u64::MAX), u64::MAX.div_ceil(RANGE));
        assert_eq!(range(u64::MAX, 0), Some((0, RANGE - 1)));
        let last = ranges(u64::MAX) - 1;
        assert_eq!(range(u64::MAX, last), Some((last * RANGE, u64::MAX - 1)));
    }
}
