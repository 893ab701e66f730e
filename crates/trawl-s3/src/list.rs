//! The keys under a prefix: ListObjectsV2 page by page, fanned out over the prefix's first
//! level of "directories" (common prefixes) so that a big bucket is listed by several requests
//! at once, the pages handed to the caller's thread through a bounded channel.

use std::ops::ControlFlow;
use std::sync::Arc;

use aws_sdk_s3::operation::list_objects_v2::ListObjectsV2Output;
use aws_sdk_s3::types::{EncodingType, Object};
use tokio::sync::{Semaphore, mpsc};
use trawl_stop::Stop;

use crate::{ObjectUrl, S3Error, Store};

/// Listings under way at once (one per common prefix).
const LISTINGS: usize = 8;

/// One key as the listing gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The whole key.
    pub key: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its ETag, quotes removed.
    pub etag: Option<String>,
    /// When it was last written, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Why the key cannot be read as listed, where it cannot: it is not UTF-8 once decoded
    /// (`key` then holds it as the store encoded it: a lossy copy could name another
    /// object), or the store listed it twice or out of order. Such a key is named, never read.
    pub refused: Option<&'static str>,
}

impl Listed {
    fn of(o: &Object, url_encoded: bool) -> Option<Listed> {
        let size = o.size().unwrap_or(0);
        let (key, refused) = match key_text(o.key()?, url_encoded) {
            Some(k) => (k, None),
            None => (
                o.key()?.to_string(),
                Some("a key that is not UTF-8 once decoded"),
            ),
        };
        Some(Listed {
            key,
            size: u64::try_from(size).unwrap_or(0),
            etag: o.e_tag().map(unquote),
            mtime_ns: o.last_modified().map_or(0, nanos),
            refused: refused.or((size < 0).then_some("listed with a negative size")),
        })
    }
}

/// A key as the listing wrote it, decoded where the store URL-encoded it (as asked: keys
/// with control characters cannot be written in XML 1.0, and a listing holding one would
/// not be read at all). S3 writes a space as `+`. None where the decoded bytes are not UTF-8.
fn key_text(k: &str, url_encoded: bool) -> Option<String> {
    if !url_encoded {
        return Some(k.to_string());
    }
    let plus = k.replace('+', " ");
    percent_encoding::percent_decode_str(&plus)
        .decode_utf8()
        .ok()
        .map(|k| k.into_owned())
}

/// A listing's keys come in order, each once (ListObjectsV2's contract): a key at or before
/// the one before it in the same listing is refused, whatever the store meant by it (two
/// entries for one name would be read twice, the second time unpinned).
#[derive(Default)]
struct InOrder {
    last: Option<String>,
}

impl InOrder {
    fn check(&mut self, mut page: Vec<Listed>) -> Vec<Listed> {
        for l in page.iter_mut().filter(|l| l.refused.is_none()) {
            if self.last.as_ref().is_some_and(|last| l.key <= *last) {
                l.refused = Some("listed twice, or out of order, by the store");
                continue;
            }
            self.last = Some(l.key.clone());
        }
        page
    }
}

/// Whether a listing's answer holds URL-encoded keys.
fn encoded(t: Option<&EncodingType>) -> bool {
    t == Some(&EncodingType::Url)
}

/// A store's time as nanoseconds since the epoch.
pub(crate) fn nanos(t: &aws_smithy_types::DateTime) -> i64 {
    t.secs()
        .saturating_mul(1_000_000_000)
        .saturating_add(i64::from(t.subsec_nanos()))
}

/// An ETag without its quotes.
pub(crate) fn unquote(e: &str) -> String {
    e.trim_matches('"').to_string()
}

type Page = Result<Vec<Listed>, S3Error>;

impl Store {
    /// Every key under `url`'s prefix, in no particular order, handed to `found` on this
    /// thread until it breaks, the listing fails or `stop` is requested.
    pub fn list(
        &self,
        url: &ObjectUrl,
        stop: &Stop,
        found: &mut dyn FnMut(Listed) -> ControlFlow<()>,
    ) -> Result<(), S3Error> {
        let (tx, mut rx) = mpsc::channel::<Page>(LISTINGS * 2);
        let client = self.client.clone();
        let url = url.clone();
        let task = self.rt.spawn(async move {
            let subs = first_level(&client, &url, &tx).await;
            for s in subs {
                let _ = s.await;
            }
        });
        let mut result = Ok(());
        while let Some(page) = rx.blocking_recv() {
            if stop.is_stopping() {
                break;
            }
            match page {
                Ok(keys) => {
                    if keys.into_iter().any(|k| found(k).is_break()) {
                        break;
                    }
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        // Dropping the receiver ends the listings at their next page.
        drop(rx);
        let _ = self.rt.block_on(task);
        result
    }
}

/// The prefix's first level with its delimiter, page by page: its keys into `tx`, and a
/// listing of each common prefix started (at most [`LISTINGS`] at once), whose tasks are
/// returned to be awaited. An error ends it, sent as the last page.
async fn first_level(
    client: &aws_sdk_s3::Client,
    url: &ObjectUrl,
    tx: &mpsc::Sender<Page>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let gate = Arc::new(Semaphore::new(LISTINGS));
    let mut token = None;
    let mut subs = Vec::new();
    let mut order = InOrder::default();
    loop {
        let out = match page(client, url, url.prefix(), true, token.take()).await {
            Ok(o) => o,
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return subs;
            }
        };
        let enc = encoded(out.encoding_type());
        if tx.send(Ok(keys_of(&out, &mut order))).await.is_err() {
            return subs;
        }
        for p in out.common_prefixes().iter().filter_map(|p| p.prefix()) {
            // A prefix that is not UTF-8 once decoded cannot be listed as the store named
            // it: it is one refused entry.
            let Some(p) = key_text(p, enc) else {
                if tx.send(Ok(vec![refused_prefix(p)])).await.is_err() {
                    return subs;
                }
                continue;
            };
            let (client, tx, url, gate) = (client.clone(), tx.clone(), url.clone(), gate.clone());
            subs.push(tokio::spawn(async move {
                let Ok(_permit) = gate.acquire_owned().await else {
                    return;
                };
                list_all(&client, &url, &p, &tx).await;
            }));
        }
        match out.next_continuation_token() {
            Some(t) if out.is_truncated() == Some(true) => token = Some(t.to_string()),
            _ => return subs,
        }
    }
}

impl Store {
    /// One level of the keys under `prefix` (a prefix of `url`'s bucket, ending in `/`):
    /// ListObjectsV2 with the delimiter `/`, page by page. The keys of that level go to
    /// `found` (a common prefix that is not UTF-8 once decoded, as one refused key); the
    /// common prefixes, each once and in the store's order, are returned: the "directories" to
    /// list next. A level lists as one directory of a disk does, so that a cluster's listing
    /// tasks can share a prefix's levels out, each within a budget.
    pub fn list_level(
        &self,
        url: &ObjectUrl,
        prefix: &str,
        found: &mut dyn FnMut(Listed),
    ) -> Result<Vec<String>, S3Error> {
        let mut token = None;
        let mut subs: Vec<String> = Vec::new();
        let mut order = InOrder::default();
        loop {
            let out = self
                .rt
                .block_on(page(&self.client, url, prefix, true, token.take()))?;
            let enc = encoded(out.encoding_type());
            keys_of(&out, &mut order).into_iter().for_each(&mut *found);
            for p in out.common_prefixes().iter().filter_map(|p| p.prefix()) {
                match key_text(p, enc) {
                    // A prefix the store names twice is listed once.
                    Some(p) if subs.last() != Some(&p) => subs.push(p),
                    Some(_) => {}
                    None => found(refused_prefix(p)),
                }
            }
            match out.next_continuation_token() {
                Some(t) if out.is_truncated() == Some(true) => token = Some(t.to_string()),
                _ => return Ok(subs),
            }
        }
    }
}

/// One ListObjectsV2 page of the keys under `prefix` (with the delimiter `/`: one level only),
/// URL-encoded, from `token`.
async fn page(
    client: &aws_sdk_s3::Client,
    url: &ObjectUrl,
    prefix: &str,
    level: bool,
    token: Option<String>,
) -> Result<ListObjectsV2Output, S3Error> {
    client
        .list_objects_v2()
        .bucket(url.bucket())
        .prefix(prefix)
        .set_delimiter(level.then(|| "/".to_string()))
        .encoding_type(EncodingType::Url)
        .set_continuation_token(token)
        .send()
        .await
        .map_err(|e| listing_error(url, prefix, e))
}

/// A page's keys, in its order as `order` checks it.
fn keys_of(out: &ListObjectsV2Output, order: &mut InOrder) -> Vec<Listed> {
    let enc = encoded(out.encoding_type());
    order.check(
        out.contents()
            .iter()
            .filter_map(|o| Listed::of(o, enc))
            .collect(),
    )
}

/// A common prefix that is not UTF-8 once decoded: it cannot be listed as the store named it,
/// and is one refused entry.
fn refused_prefix(p: &str) -> Listed {
    Listed {
        key: p.to_string(),
        size: 0,
        etag: None,
        mtime_ns: 0,
        refused: Some("a prefix that is not UTF-8 once decoded: not listed"),
    }
}

/// Every key under `prefix`, page by page, into `tx` (an error ends it, sent as the last page).
async fn list_all(
    client: &aws_sdk_s3::Client,
    url: &ObjectUrl,
    prefix: &str,
    tx: &mpsc::Sender<Page>,
) {
    let mut token = None;
    let mut order = InOrder::default();
    loop {
        let out = match page(client, url, prefix, false, token.take()).await {
            Ok(o) => o,
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
        };
        if tx.send(Ok(keys_of(&out, &mut order))).await.is_err() {
            return;
        }
        match out.next_continuation_token() {
            Some(t) if out.is_truncated() == Some(true) => token = Some(t.to_string()),
            _ => return,
        }
    }
}

fn listing_error<E>(
    url: &ObjectUrl,
    prefix: &str,
    e: aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
) -> S3Error
where
    E: aws_sdk_s3::error::ProvideErrorMetadata + std::error::Error + 'static,
{
    let what = format!("s3://{}/{prefix}: cannot list", url.bucket());
    S3Error::from_sdk(what, e)
}
