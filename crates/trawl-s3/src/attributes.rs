//! A multipart upload's part size as the store reports it (GetObjectAttributes with its
//! parts), so that a value made of parts is compared at the size it was made at rather than a
//! guessed one. Where the store does not answer it (not implemented, not permitted:
//! `s3:GetObjectAttributes`), or answers with parts that do not add up to the object, the size
//! is unknown and the caller guesses as before.

use aws_sdk_s3::types::ObjectAttributes;

use crate::parts::MAX_PARTS;
use crate::{ObjectUrl, Store, Stored};

/// Parts asked for per GetObjectAttributes page (the most S3 gives).
const PAGE: i32 = 1000;

impl Store {
    /// The part size of each `(key, stored)` where it is a multipart upload whose every part
    /// but the last has one size, the last no more, as the store reports them and adding up to
    /// the object's size in its part count; None for the rest (several in flight, in order).
    pub fn part_sizes_many(
        &self,
        url: &ObjectUrl,
        objects: &[(String, Stored)],
    ) -> Vec<Option<u64>> {
        let tasks: Vec<_> = objects
            .iter()
            .map(|(k, st)| {
                let (client, url, k) = (self.client.clone(), url.clone(), k.clone());
                let (size, parts) = (st.size, st.parts);
                self.rt.spawn(async move {
                    match parts {
                        Some(n) if n > 1 && n <= MAX_PARTS => {
                            part_size(&client, &url, &k, size, n).await
                        }
                        _ => None,
                    }
                })
            })
            .collect();
        self.rt.block_on(async {
            let mut out = Vec::with_capacity(tasks.len());
            for t in tasks {
                out.push(t.await.ok().flatten());
            }
            out
        })
    }
}

/// The part size of `key` (`size` bytes in `n` parts) by its parts as the store lists them,
/// page by page; None where any answer is missing, refused or does not add up.
async fn part_size(
    client: &aws_sdk_s3::Client,
    url: &ObjectUrl,
    key: &str,
    size: u64,
    n: u32,
) -> Option<u64> {
    let mut sizes: Vec<u64> = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let out = client
            .get_object_attributes()
            .bucket(url.bucket())
            .key(key)
            .object_attributes(ObjectAttributes::ObjectParts)
            .max_parts(PAGE)
            .set_part_number_marker(marker.take())
            .send()
            .await
            .ok()?;
        let parts = out.object_parts()?;
        if parts.total_parts_count() != Some(n as i32) {
            return None;
        }
        let before = sizes.len();
        for p in parts.parts() {
            // Parts come in order, numbered from 1, each once.
            if p.part_number() != Some(sizes.len() as i32 + 1) {
                return None;
            }
            sizes.push(u64::try_from(p.size()?).ok()?);
        }
        if sizes.len() > n as usize || sizes.len() == before {
            break;
        }
        match parts.next_part_number_marker() {
            Some(m) if parts.is_truncated() == Some(true) => marker = Some(m.to_string()),
            _ => break,
        }
    }
    uniform(&sizes, size, n)
}

/// The one size every part but the last has (the last no larger, none empty), where the parts
/// are `n` and add up to `size`.
fn uniform(sizes: &[u64], size: u64, n: u32) -> Option<u64> {
    let (&first, rest) = sizes.split_first()?;
    let (&last, middle) = rest.split_last().unwrap_or((&first, &[]));
    let adds_up = sizes.iter().try_fold(0u64, |a, s| a.checked_add(*s)) == Some(size);
    (sizes.len() == n as usize
        && adds_up
        && first > 0
        && last > 0
        && last <= first
        && middle.iter().all(|s| *s == first))
    .then_some(first)
}

#[cfg(test)]
mod tests {
    use super::uniform;

    #[test]
    fn a_part_size_is_one_size_for_every_part_but_a_smaller_last() {
        assert_eq!(uniform(&[5, 5, 3], 13, 3), Some(5));
        assert_eq!(uniform(&[5, 5, 5], 15, 3), Some(5));
        // Parts of several sizes, a larger last part, a sum or count that disagrees: unknown.
        assert_eq!(uniform(&[5, 4, 3], 12, 3), None);
        assert_eq!(uniform(&[5, 5, 6], 16, 3), None);
        assert_eq!(uniform(&[5, 5, 3], 14, 3), None);
        assert_eq!(uniform(&[5, 5, 3], 13, 4), None);
        assert_eq!(uniform(&[0, 0], 0, 2), None);
        assert_eq!(uniform(&[], 0, 0), None);
        assert_eq!(uniform(&[u64::MAX, u64::MAX], 1, 2), None);
    }
}
