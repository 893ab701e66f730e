//! Files cut into shards for a fleet of workers (the cluster mode's unit of work): at most
//! `max_files` files and `max_bytes` bytes each, largest files first (the long reads start
//! first, and the small files that end the run pack densely, so the slowest shard is short).
//! A file larger than `max_bytes` is a shard of its own. The same files always give the same
//! shards and the same keys, so a task retried after a lost worker is the same task.

use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// One unit of work.
#[derive(Debug, Clone, PartialEq)]
pub struct Shard {
    pub files: Vec<PathBuf>,
    pub bytes: u64,
}

impl Shard {
    /// A key naming the shard by its files (hex of BLAKE3 over the names and sizes' total).
    pub fn key(&self) -> String {
        let mut h = blake3::Hasher::new();
        for f in &self.files {
            let b = f.as_os_str().as_bytes();
            h.update(&(b.len() as u64).to_le_bytes());
            h.update(b);
        }
        h.update(&self.bytes.to_le_bytes());
        h.finalize().to_hex()[..32].to_string()
    }
}

/// Packs `files` (path, size) into shards: sorted by size, largest first (ties by path), each
/// shard filled until the next file would pass either bound.
pub fn pack(mut files: Vec<(PathBuf, u64)>, max_files: usize, max_bytes: u64) -> Vec<Shard> {
    let max_files = max_files.max(1);
    files.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| a.0.as_os_str().as_bytes().cmp(b.0.as_os_str().as_bytes()))
    });
    let mut out: Vec<Shard> = Vec::new();
    let mut cur = Shard {
        files: Vec::new(),
        bytes: 0,
    };
    for (path, size) in files {
        let full = cur.files.len() >= max_files
            || (!cur.files.is_empty() && cur.bytes.saturating_add(size) > max_bytes);
        if full {
            out.push(std::mem::replace(
                &mut cur,
                Shard {
                    files: Vec::new(),
                    bytes: 0,
                },
            ));
        }
        cur.bytes += size;
        cur.files.push(path);
    }
    if !cur.files.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(sizes: &[u64]) -> Vec<(PathBuf, u64)> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, s)| (PathBuf::from(format!("f{i:03}")), *s))
            .collect()
    }

    #[test]
    fn shards_keep_their_bounds_take_every_file_once_and_start_with_the_largest() {
        let sizes: Vec<u64> = (0..500u64).map(|i| (i * 7919) % 1000 + 1).collect();
        let shards = pack(files(&sizes), 40, 5_000);
        let mut seen: Vec<PathBuf> = shards.iter().flat_map(|s| s.files.clone()).collect();
        seen.sort();
        assert_eq!(
            seen,
            files(&sizes).into_iter().map(|f| f.0).collect::<Vec<_>>()
        );
        for s in &shards {
            assert!(s.files.len() <= 40);
            assert!(s.bytes <= 5_000, "{}", s.bytes);
        }
        let total: u64 = shards.iter().map(|s| s.bytes).sum();
        assert_eq!(total, sizes.iter().sum::<u64>());
        assert_eq!(
            shards[0].files[0],
            PathBuf::from(format!(
                "f{:03}",
                sizes.iter().position(|s| *s == 1000).unwrap()
            ))
        );
    }

    #[test]
    fn a_file_past_the_byte_bound_is_a_shard_alone_and_keys_are_stable() {
        let shards = pack(files(&[10, 9_000, 20, 30]), 100, 1_000);
        assert_eq!(shards.len(), 2);
        assert_eq!(shards[0].files, [PathBuf::from("f001")]);
        assert_eq!(shards[1].bytes, 60);
        let mut reversed = files(&[10, 9_000, 20, 30]);
        reversed.reverse();
        let again = pack(reversed, 100, 1_000);
        assert_eq!(
            again, shards,
            "the order files are listed in changes nothing"
        );
        assert_eq!(again[1].key(), shards[1].key());
        assert_ne!(shards[0].key(), shards[1].key());
        assert!(pack(Vec::new(), 10, 10).is_empty());
    }
}
