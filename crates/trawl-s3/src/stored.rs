//! What a store holds of an object without a download (HeadObject with checksum mode), and
//! what each of its checksums proves against the digests trawl computed of the bytes.

use aws_sdk_s3::types::{ChecksumMode, ChecksumType};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use trawl_digest::Algorithm;

use crate::list::unquote;
use crate::{ObjectUrl, S3Error, Store};

/// How the store's checksums cover the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredKind {
    /// Each checksum is of the whole object's bytes.
    FullObject,
    /// Each checksum is of its parts' checksums (`BASE64-N`, a multipart upload's).
    Composite,
    /// The store says nothing of how (older stores, or no checksum).
    Unsaid,
}

/// What the store holds of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// Its size in bytes.
    pub size: u64,
    /// Its ETag, quotes removed.
    pub etag: Option<String>,
    /// Its version, where the bucket keeps versions.
    pub version: Option<String>,
    /// When it was last written, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Each checksum the store holds, by algorithm: the raw bytes (a composite one's `-N`
    /// taken off, into `parts`).
    pub checksums: Vec<(Algorithm, Vec<u8>)>,
    /// How they cover the object.
    pub kind: StoredKind,
    /// The parts of a multipart upload (from a composite checksum's `-N` or the ETag's).
    pub parts: Option<u32>,
    /// Encrypted with a key the store's ETag is not an MD5 of the bytes under (SSE-KMS, SSE-C).
    pub etag_not_md5: bool,
}

/// What a stored value is, compared with trawl's digests of the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proof {
    /// A full-object checksum by this algorithm.
    Checksum(Algorithm),
    /// A single-part upload's ETag: the MD5 of the bytes.
    EtagMd5,
}

impl std::fmt::Display for Proof {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Proof::Checksum(a) => write!(f, "the store's {} checksum", a.name()),
            Proof::EtagMd5 => f.write_str("the store's ETag (the MD5 of a single-part upload)"),
        }
    }
}

/// The outcome of comparing the store's values with trawl's digests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Every comparable value agrees; the proofs that did.
    Agrees(Vec<Proof>),
    /// A value disagrees with the bytes read.
    Disagrees {
        /// What disagreed.
        proof: Proof,
        /// The store's value, hex.
        stored: String,
        /// trawl's digest of the bytes, hex.
        read: String,
    },
    /// The store holds nothing these digests can be compared with (a composite checksum
    /// without its parts' boundaries, a multipart or encrypted ETag, or no checksum at all).
    Nothing,
}

impl Stored {
    /// The algorithms whose digests would prove something against this object's stored
    /// values (what to compute while reading it).
    pub fn comparable(&self) -> Vec<Algorithm> {
        self.full_object().into_iter().map(|(a, _)| a).collect()
    }

    /// The store's digests of the whole object, by algorithm: its full-object checksums (none
    /// where they are composite), then a single-part upload's ETag as MD5 where it is one.
    /// What [`Stored::compare`] holds trawl's digests to, and what a no-download audit
    /// compares with a catalog's.
    pub fn full_object(&self) -> Vec<(Algorithm, Vec<u8>)> {
        let mut out = match self.kind {
            StoredKind::Composite => Vec::new(),
            _ => self.checksums.clone(),
        };
        if let Some(m) = self.etag_md5() {
            out.push((Algorithm::Md5, m));
        }
        out
    }

    /// What the store holds of the object that is no digest of its whole content, each in a
    /// few words: composite checksums, a multipart ETag, an ETag that is no MD5.
    pub fn withheld(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.kind == StoredKind::Composite {
            for (a, _) in &self.checksums {
                out.push(match self.parts {
                    Some(n) => format!("a composite {} checksum of {n} parts", a.bsd_tag()),
                    None => format!("a composite {} checksum", a.bsd_tag()),
                });
            }
        }
        match self.etag.as_deref() {
            Some(e) if e.contains('-') => out.push(format!("a multipart ETag ({e})")),
            Some(_) if self.etag_not_md5 => {
                out.push("an ETag that is no MD5 (SSE-KMS or SSE-C)".to_string())
            }
            Some(e) if self.etag_md5().is_none() => {
                out.push(format!("an ETag that is no MD5 ({e})"))
            }
            _ => {}
        }
        out
    }

    /// The ETag as an MD5 of the bytes, where it is one: a single-part upload, not encrypted
    /// with KMS or a customer's key.
    fn etag_md5(&self) -> Option<Vec<u8>> {
        let e = self.etag.as_deref()?;
        if self.etag_not_md5 || e.len() != 32 {
            return None;
        }
        hex::decode(e).ok()
    }

    /// Compares the stored values with `digests` (trawl's, of the bytes read).
    pub fn compare(&self, digests: &[(Algorithm, Vec<u8>)]) -> Check {
        let mut agreed = Vec::new();
        for (alg, stored) in self.full_object() {
            // S3 keeps no MD5 checksum: an MD5 here is the ETag's.
            let proof = match alg {
                Algorithm::Md5 => Proof::EtagMd5,
                a => Proof::Checksum(a),
            };
            let Some((_, read)) = digests.iter().find(|(a, _)| *a == alg) else {
                continue;
            };
            if *read != stored {
                return Check::Disagrees {
                    proof,
                    stored: hex::encode(stored),
                    read: hex::encode(read),
                };
            }
            agreed.push(proof);
        }
        if agreed.is_empty() {
            Check::Nothing
        } else {
            Check::Agrees(agreed)
        }
    }
}

/// A stored checksum's bytes and part count from its base64 (`BASE64` or `BASE64-N`).
fn decode(b64: &str) -> Option<(Vec<u8>, Option<u32>)> {
    let (v, parts) = match b64.rsplit_once('-') {
        Some((v, n)) => (v, Some(n.parse().ok()?)),
        None => (b64, None),
    };
    Some((STANDARD.decode(v).ok()?, parts))
}

impl Store {
    /// [`Store::stored`] of each of `keys`, several in flight, in their order.
    pub fn stored_many(&self, url: &ObjectUrl, keys: &[String]) -> Vec<Result<Stored, S3Error>> {
        let each: Vec<(&ObjectUrl, &str)> = keys.iter().map(|k| (url, k.as_str())).collect();
        self.stored_each(&each)
    }

    /// [`Store::stored`] of each object (a root's bucket and a key), all in flight at once, in
    /// their order: the caller bounds how many it asks for together.
    pub fn stored_each(&self, objects: &[(&ObjectUrl, &str)]) -> Vec<Result<Stored, S3Error>> {
        let tasks: Vec<_> = objects
            .iter()
            .map(|(url, k)| {
                let (client, url, k) = (self.client.clone(), (*url).clone(), k.to_string());
                self.rt.spawn(async move { head(&client, &url, &k).await })
            })
            .collect();
        self.rt.block_on(async {
            let mut out = Vec::with_capacity(tasks.len());
            for (t, (url, k)) in tasks.into_iter().zip(objects) {
                out.push(t.await.unwrap_or_else(|e| {
                    Err(S3Error::Request {
                        what: url.key_path(k).display().to_string(),
                        fault: crate::StoreFault::Other,
                        message: format!("the lookup's task failed: {e}"),
                    })
                }));
            }
            out
        })
    }

    /// What the store holds of `key` in `url`'s bucket: its ETag, size and checksums, by one
    /// HeadObject with checksum mode (no download).
    pub fn stored(&self, url: &ObjectUrl, key: &str) -> Result<Stored, S3Error> {
        self.rt.block_on(head(&self.client, url, key))
    }
}

/// One HeadObject with checksum mode.
async fn head(client: &aws_sdk_s3::Client, url: &ObjectUrl, key: &str) -> Result<Stored, S3Error> {
    let r = client
        .head_object()
        .bucket(url.bucket())
        .key(key)
        .checksum_mode(ChecksumMode::Enabled)
        .send()
        .await;
    let h = r.map_err(|e| S3Error::from_sdk(url.key_path(key).display().to_string(), e))?;
    let mut checksums = Vec::new();
    let mut parts = None;
    for (alg, v) in [
        (Algorithm::Crc64Nvme, h.checksum_crc64_nvme()),
        (Algorithm::Crc32, h.checksum_crc32()),
        (Algorithm::Crc32c, h.checksum_crc32_c()),
        (Algorithm::Sha1, h.checksum_sha1()),
        (Algorithm::Sha256, h.checksum_sha256()),
    ] {
        if let Some((bytes, n)) = v.and_then(decode) {
            parts = parts.or(n);
            checksums.push((alg, bytes));
        }
    }
    let etag = h.e_tag().map(unquote);
    let etag_parts = etag
        .as_deref()
        .and_then(|e| e.rsplit_once('-'))
        .and_then(|(_, n)| n.parse::<u32>().ok());
    let kind = match h.checksum_type() {
        Some(ChecksumType::FullObject) => StoredKind::FullObject,
        Some(ChecksumType::Composite) => StoredKind::Composite,
        // Without a type, a `-N` says composite; a plain value is the whole object's.
        _ if parts.is_some() => StoredKind::Composite,
        _ if !checksums.is_empty() => StoredKind::FullObject,
        _ => StoredKind::Unsaid,
    };
    let sse = h.server_side_encryption().map(|s| s.as_str().to_string());
    let etag_not_md5 = etag_parts.is_some()
        || h.sse_customer_algorithm().is_some()
        || sse.is_some_and(|s| s.starts_with("aws:kms"));
    Ok(Stored {
        size: u64::try_from(h.content_length().unwrap_or(0)).unwrap_or(0),
        etag,
        version: h.version_id().map(str::to_string),
        mtime_ns: h.last_modified().map_or(0, crate::list::nanos),
        checksums,
        kind,
        parts: parts.or(etag_parts),
        etag_not_md5,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(checksums: Vec<(Algorithm, Vec<u8>)>, etag: &str, kind: StoredKind) -> Stored {
        Stored {
            size: 3,
            etag: Some(etag.to_string()),
            version: None,
            mtime_ns: 0,
            checksums,
            kind,
            parts: None,
            etag_not_md5: etag.contains('-'),
        }
    }

    #[test]
    fn stored_values_agree_disagree_or_prove_nothing() {
        let md5 = hex::decode("900150983cd24fb0d6963f7d28e17f72").unwrap(); // "abc"
        let crc = vec![1, 2, 3, 4, 5, 6, 7, 8];
        let s = stored(
            vec![(Algorithm::Crc64Nvme, crc.clone())],
            "900150983cd24fb0d6963f7d28e17f72",
            StoredKind::FullObject,
        );
        assert_eq!(s.comparable(), vec![Algorithm::Crc64Nvme, Algorithm::Md5]);
        let read = vec![
            (Algorithm::Md5, md5.clone()),
            (Algorithm::Crc64Nvme, crc.clone()),
        ];
        assert_eq!(
            s.compare(&read),
            Check::Agrees(vec![Proof::Checksum(Algorithm::Crc64Nvme), Proof::EtagMd5])
        );
        let wrong = vec![(Algorithm::Crc64Nvme, vec![0; 8])];
        assert!(matches!(
            s.compare(&wrong),
            Check::Disagrees {
                proof: Proof::Checksum(_),
                ..
            }
        ));
        // A multipart ETag and a composite checksum prove nothing against whole-file digests.
        let m = stored(
            vec![(Algorithm::Crc32c, vec![0; 4])],
            "abcd-3",
            StoredKind::Composite,
        );
        assert_eq!(m.comparable(), Vec::<Algorithm>::new());
        assert_eq!(m.compare(&read), Check::Nothing);
        // What it holds instead, said for a verdict that compares nothing.
        assert_eq!(m.full_object(), Vec::new());
        assert_eq!(
            m.withheld(),
            ["a composite CRC32C checksum", "a multipart ETag (abcd-3)"]
        );
        assert_eq!(
            s.full_object(),
            vec![(Algorithm::Crc64Nvme, crc.clone()), (Algorithm::Md5, md5)]
        );
        assert!(s.withheld().is_empty());
    }

    #[test]
    fn composite_values_carry_their_part_count() {
        assert_eq!(decode("AAAAAA==-12"), Some((vec![0, 0, 0, 0], Some(12))));
        assert_eq!(decode("AAAAAA=="), Some((vec![0, 0, 0, 0], None)));
        assert_eq!(decode("not base64!"), None);
    }
}
