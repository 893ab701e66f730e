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

/// Pages with nothing in them a listing takes in a row before it is taken for one without end.
const EMPTY_PAGES: u32 = 100;

/// What one listing (of a prefix, a level or all below it) has taken so far, to hold the
/// store's pages to ListObjectsV2's contract: each key comes from one listing only (a level's
/// keys directly under its prefix, a whole listing's below it), in order and once, and so does
/// each common prefix (one "directory" below the level); a key that breaks it is refused,
/// whatever the store meant by it (two entries for one name would be read twice, the second
/// time unpinned). A listing whose pages do not advance (the page just asked for given again,
/// a page of nothing new, or pages of nothing at all without end) fails: it would never end.
struct Taking {
    prefix: String,
    level: bool,
    last: Option<String>,
    /// The last common prefix taken, decoded, and as the store wrote it.
    last_sub: Option<(String, String)>,
    /// The keys and common prefixes of the page being taken that are new to the listing.
    fresh: usize,
    empty: u32,
}

impl Taking {
    fn new(prefix: &str, level: bool) -> Taking {
        Taking {
            prefix: prefix.to_string(),
            level,
            last: None,
            last_sub: None,
            fresh: 0,
            empty: 0,
        }
    }

    /// Whether `key` is one this listing may give: below its prefix, and at a level's, no
    /// deeper (what is deeper is its common prefixes' to give).
    fn within(&self, key: &str) -> bool {
        key.strip_prefix(&self.prefix)
            .is_some_and(|rest| !self.level || !rest.contains('/'))
    }

    /// A page's keys, each refused where it breaks the contract.
    fn keys(&mut self, mut page: Vec<Listed>) -> Vec<Listed> {
        for l in page.iter_mut() {
            if l.refused.is_some() {
                // Refused for what it is (not UTF-8, a negative size): new all the same.
                self.fresh += 1;
            } else if !self.within(&l.key) {
                l.refused = Some(ELSEWHERE);
            } else if self.last.as_ref().is_some_and(|last| l.key <= *last) {
                l.refused = Some("listed twice, or out of order, by the store");
            } else {
                self.last = Some(l.key.clone());
                self.fresh += 1;
            }
        }
        page
    }

    /// A level's common prefix as the store wrote it (`enc`: URL-encoded): Ok(Some(prefix))
    /// to be listed, Ok(None) where it is the one just given again (listed once), Err(entry)
    /// where it is refused, an entry naming it.
    fn sub(&mut self, raw: &str, enc: bool) -> Result<Option<String>, Listed> {
        let Some(p) = key_text(raw, enc) else {
            // Not UTF-8 once decoded: it cannot be listed as the store named it.
            self.fresh += 1;
            return Err(refused_prefix(
                raw,
                "a prefix that is not UTF-8 once decoded: not listed",
            ));
        };
        self.checked_sub(&p, raw)
            .map(|new| new.then_some(p.clone()))
            .map_err(|why| refused_prefix(&p, why))
    }

    /// Whether the common prefix `p` (as the store wrote it: `raw`) is to be listed (false:
    /// the one just before, given again), or why not. One that decodes to the one before but
    /// was written otherwise (`d%41/` after `dA/`, from a store that does not encode keys as
    /// asked) is another prefix: taken for the first, what lies below it would go unlisted.
    fn checked_sub(&mut self, p: &str, raw: &str) -> Result<bool, &'static str> {
        let seg = p
            .strip_prefix(&self.prefix)
            .and_then(|rest| rest.strip_suffix('/'));
        if !self.level || seg.is_none_or(|s| s.contains('/')) {
            return Err(NOT_ONE_LEVEL);
        }
        // Some(written the same way) where it is the one before, once decoded.
        let again = match &self.last_sub {
            Some((last, last_raw)) if p == last.as_str() => Some(raw == last_raw.as_str()),
            Some((last, _)) if p < last.as_str() => return Err(OUT_OF_ORDER),
            _ => None,
        };
        match again {
            Some(true) => Ok(false),
            Some(false) => Err(WRITTEN_TWO_WAYS),
            None => {
                self.last_sub = Some((p.to_string(), raw.to_string()));
                self.fresh += 1;
                Ok(true)
            }
        }
    }

    /// The token of the page after `out` (whose keys and common prefixes have been taken),
    /// None at the listing's end; `asked`: the token `out` was asked with. Err where the
    /// listing does not advance.
    fn next(
        &mut self,
        out: &ListObjectsV2Output,
        asked: Option<&str>,
    ) -> Result<Option<String>, &'static str> {
        let taken = std::mem::take(&mut self.fresh);
        if out.is_truncated() != Some(true) {
            return Ok(None);
        }
        // Ending here would leave the rest unlisted without a word: every object after it
        // missing to an audit.
        let Some(token) = out.next_continuation_token().filter(|t| !t.is_empty()) else {
            return Err("the store says its listing goes on, and gives no token to go on from");
        };
        let given = out.contents().len() + out.common_prefixes().len();
        self.empty = if given == 0 { self.empty + 1 } else { 0 };
        if asked == Some(token) || (given > 0 && taken == 0) || self.empty > EMPTY_PAGES {
            return Err(
                "the store's listing does not advance (a page given again, or pages of \
                        nothing new): not listed on",
            );
        }
        Ok(Some(token.to_string()))
    }
}

/// Why a common prefix is not listed that is not one name below the level listed.
const NOT_ONE_LEVEL: &str = "a common prefix not one level below the prefix listed";

/// Why a common prefix is not listed that comes before the one before it.
const OUT_OF_ORDER: &str = "a common prefix listed out of order";

/// Why a common prefix is not listed that decodes to the one before it, written otherwise.
const WRITTEN_TWO_WAYS: &str = "a common prefix written otherwise than the one before it, and \
                                the same once decoded (a store that does not encode keys as \
                                asked?): not listed";

/// Why a key is refused that a listing gave outside its part of the prefix.
const ELSEWHERE: &str = "listed where it is not (outside the prefix listed, or below one of \
                         its common prefixes), by the store";

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
    let mut token: Option<String> = None;
    let mut subs = Vec::new();
    let mut taking = Taking::new(url.prefix(), true);
    loop {
        let asked = token.take();
        let out = match page(client, url, url.prefix(), true, asked.clone()).await {
            Ok(o) => o,
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return subs;
            }
        };
        let enc = encoded(out.encoding_type());
        let mut keys = taking.keys(keys_of(&out));
        let mut new = Vec::new();
        for p in out.common_prefixes().iter().filter_map(|p| p.prefix()) {
            match taking.sub(p, enc) {
                Ok(Some(p)) => new.push(p),
                Ok(None) => {}
                Err(refused) => keys.push(refused),
            }
        }
        if tx.send(Ok(keys)).await.is_err() {
            return subs;
        }
        for p in new {
            let (client, tx, url, gate) = (client.clone(), tx.clone(), url.clone(), gate.clone());
            subs.push(tokio::spawn(async move {
                let Ok(_permit) = gate.acquire_owned().await else {
                    return;
                };
                list_all(&client, &url, &p, &tx).await;
            }));
        }
        match taking.next(&out, asked.as_deref()) {
            Ok(Some(t)) => token = Some(t),
            Ok(None) => return subs,
            Err(why) => {
                let _ = tx.send(Err(stalled(url, url.prefix(), why))).await;
                return subs;
            }
        }
    }
}

impl Store {
    /// One level of the keys under `prefix` (a prefix of `url`'s bucket, ending in `/`):
    /// ListObjectsV2 with the delimiter `/`, page by page. The keys of that level go to
    /// `found` (a common prefix that is not one name below the level, as one refused key);
    /// the common prefixes, each once and in order, are returned: the "directories" to list
    /// next. A level lists as one directory of a disk does, so that a cluster's listing tasks
    /// can share a prefix's levels out, each within a budget.
    pub fn list_level(
        &self,
        url: &ObjectUrl,
        prefix: &str,
        found: &mut dyn FnMut(Listed),
    ) -> Result<Vec<String>, S3Error> {
        let mut token: Option<String> = None;
        let mut subs: Vec<String> = Vec::new();
        let mut taking = Taking::new(prefix, true);
        loop {
            let asked = token.take();
            let out = self
                .rt
                .block_on(page(&self.client, url, prefix, true, asked.clone()))?;
            let enc = encoded(out.encoding_type());
            taking.keys(keys_of(&out)).into_iter().for_each(&mut *found);
            for p in out.common_prefixes().iter().filter_map(|p| p.prefix()) {
                match taking.sub(p, enc) {
                    Ok(Some(p)) => subs.push(p),
                    Ok(None) => {}
                    Err(refused) => found(refused),
                }
            }
            match taking.next(&out, asked.as_deref()) {
                Ok(Some(t)) => token = Some(t),
                Ok(None) => return Ok(subs),
                Err(why) => return Err(stalled(url, prefix, why)),
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

/// A page's keys, in its order, decoded.
fn keys_of(out: &ListObjectsV2Output) -> Vec<Listed> {
    let enc = encoded(out.encoding_type());
    out.contents()
        .iter()
        .filter_map(|o| Listed::of(o, enc))
        .collect()
}

/// A common prefix that is not listed, as one refused entry saying why.
fn refused_prefix(p: &str, why: &'static str) -> Listed {
    Listed {
        key: p.to_string(),
        size: 0,
        etag: None,
        mtime_ns: 0,
        refused: Some(why),
    }
}

/// Every key under `prefix`, page by page, into `tx` (an error ends it, sent as the last page).
async fn list_all(
    client: &aws_sdk_s3::Client,
    url: &ObjectUrl,
    prefix: &str,
    tx: &mpsc::Sender<Page>,
) {
    let mut token: Option<String> = None;
    let mut taking = Taking::new(prefix, false);
    loop {
        let asked = token.take();
        let out = match page(client, url, prefix, false, asked.clone()).await {
            Ok(o) => o,
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
        };
        if tx.send(Ok(taking.keys(keys_of(&out)))).await.is_err() {
            return;
        }
        match taking.next(&out, asked.as_deref()) {
            Ok(Some(t)) => token = Some(t),
            Ok(None) => return,
            Err(why) => {
                let _ = tx.send(Err(stalled(url, prefix, why))).await;
                return;
            }
        }
    }
}

/// A listing of `prefix` that does not advance, as its failure.
fn stalled(url: &ObjectUrl, prefix: &str, why: &str) -> S3Error {
    S3Error::Request {
        what: format!("s3://{}/{prefix}: cannot list", url.bucket()),
        fault: crate::StoreFault::Other,
        message: why.to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> Listed {
        Listed {
            key: k.to_string(),
            size: 1,
            etag: None,
            mtime_ns: 0,
            refused: None,
        }
    }

    fn refusals(t: &mut Taking, keys: &[&str]) -> Vec<Option<&'static str>> {
        let page = keys.iter().map(|k| key(k)).collect();
        t.keys(page).into_iter().map(|l| l.refused).collect()
    }

    /// A level's keys are those directly under its prefix, a whole listing's those below it,
    /// each after the one before; a level's common prefixes are one name below it, in order,
    /// the one just given again listed once.
    #[test]
    fn a_listing_takes_only_what_is_its_own_once() {
        let mut level = Taking::new("p/", true);
        let got = refusals(&mut level, &["p/a", "p/d/x", "q/a", "p/a", "p/b"]);
        let twice = Some("listed twice, or out of order, by the store");
        assert_eq!(got, [None, Some(ELSEWHERE), Some(ELSEWHERE), twice, None]);
        let mut all = Taking::new("p/d/", false);
        let got = refusals(&mut all, &["p/d/x/y", "p/a", "p/d/z"]);
        assert_eq!(got, [None, Some(ELSEWHERE), None]);
        let sub = |t: &mut Taking, p: &str| t.checked_sub(p, p);
        assert_eq!(sub(&mut level, "p/d/"), Ok(true));
        assert_eq!(sub(&mut level, "p/d/"), Ok(false));
        // The same once decoded, written otherwise: another prefix, not the one given again.
        assert_eq!(level.checked_sub("p/d/", "p/%64/"), Err(WRITTEN_TWO_WAYS));
        assert_eq!(sub(&mut level, "p//"), Err(OUT_OF_ORDER));
        assert_eq!(sub(&mut level, "p/e/"), Ok(true));
        for stray in ["p/", "q/", "p/e", "p/e/f/", "other/"] {
            assert_eq!(sub(&mut level, stray), Err(NOT_ONE_LEVEL), "{stray}");
        }
        assert_eq!(sub(&mut all, "p/d/q/"), Err(NOT_ONE_LEVEL));
    }

    fn page(keys: &[&str], next: Option<&str>) -> ListObjectsV2Output {
        let contents = keys.iter().map(|k| Object::builder().key(*k).build());
        ListObjectsV2Output::builder()
            .set_contents(Some(contents.collect()))
            .is_truncated(next.is_some())
            .set_next_continuation_token(next.map(str::to_string))
            .build()
    }

    /// Pages go on while each brings something new under a new token; the token just asked
    /// with, a page of nothing new, or empty pages without end stop the listing.
    #[test]
    fn a_listing_that_does_not_advance_stops() {
        let mut t = Taking::new("p/", true);
        let take = |t: &mut Taking, keys: &[&str], asked: Option<&str>, next: Option<&str>| {
            let out = page(keys, next);
            t.keys(keys_of(&out));
            t.next(&out, asked)
        };
        assert_eq!(
            take(&mut t, &["p/a"], None, Some("1")),
            Ok(Some("1".into()))
        );
        assert_eq!(take(&mut t, &["p/b"], Some("1"), None), Ok(None));
        assert!(take(&mut t, &["p/c"], Some("2"), Some("2")).is_err());
        assert!(take(&mut t, &["p/a", "p/c"], Some("3"), Some("4")).is_err());
        for i in 0..EMPTY_PAGES {
            let asked = format!("e{i}");
            let next = format!("e{}", i + 1);
            assert!(take(&mut t, &[], Some(&asked), Some(&next)).is_ok(), "{i}");
        }
        assert!(take(&mut t, &[], Some("x"), Some("y")).is_err());
        // Truncated, and no token (or an empty one) to go on from.
        let mut t = Taking::new("p/", true);
        for token in [None, Some(String::new())] {
            let out = ListObjectsV2Output::builder()
                .is_truncated(true)
                .set_next_continuation_token(token)
                .build();
            assert!(t.next(&out, None).is_err());
        }
    }
}
