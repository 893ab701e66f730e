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
    /// Its files, in the order given.
    pub files: Vec<PathBuf>,
    /// Their bytes in all.
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

/// Packs `files` (path, size) into shards of at most `max_files` files and `max_bytes` bytes,
/// as few as the bounds allow and as even as they can be: a file larger than `max_bytes` is a
/// shard alone; the others, largest first (ties by path), each go to the emptiest of N shards
/// (by bytes) that has room, N the fewest the bounds allow, one more while some file finds no
/// room. Even shards end together: filling one shard after another left a small last one,
/// and a worker idle beside it.
pub fn pack(mut files: Vec<(PathBuf, u64)>, max_files: usize, max_bytes: u64) -> Vec<Shard> {
    let max_files = max_files.max(1);
    let max_bytes = max_bytes.max(1);
    files.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| a.0.as_os_str().as_bytes().cmp(b.0.as_os_str().as_bytes()))
    });
    let split = files.partition_point(|f| f.1 > max_bytes);
    let rest = files.split_off(split);
    let mut out: Vec<Shard> = files
        .into_iter()
        .map(|(path, bytes)| Shard {
            files: vec![path],
            bytes,
        })
        .collect();
    if rest.is_empty() {
        return out;
    }
    let total: u64 = rest.iter().map(|f| f.1).sum();
    let mut n = (total.div_ceil(max_bytes) as usize).max(rest.len().div_ceil(max_files));
    loop {
        if let Some(shards) = spread(&rest, n, max_files, max_bytes) {
            out.extend(shards);
            return out;
        }
        n += 1;
    }
}

/// The files (largest first) in `n` shards, each to the emptiest with room; None if one finds
/// none.
fn spread(
    files: &[(PathBuf, u64)],
    n: usize,
    max_files: usize,
    max_bytes: u64,
) -> Option<Vec<Shard>> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    let mut out: Vec<Shard> = (0..n)
        .map(|_| Shard {
            files: Vec::new(),
            bytes: 0,
        })
        .collect();
    // Shards with room for another file, emptiest first (ties by number: the order is stable).
    let mut open: BinaryHeap<Reverse<(u64, usize)>> = (0..n).map(|i| Reverse((0, i))).collect();
    for (path, size) in files {
        // The emptiest shard is the likeliest to fit; if it cannot, none can.
        let Reverse((bytes, i)) = open.pop()?;
        if bytes + size > max_bytes {
            return None;
        }
        let s = &mut out[i];
        s.bytes += size;
        s.files.push(path.clone());
        if s.files.len() < max_files {
            open.push(Reverse((s.bytes, i)));
        }
    }
    out.retain(|s| !s.files.is_empty());
    Some(out)
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
    fn shards_are_as_few_as_the_bounds_allow_and_even() {
        let sizes: Vec<u64> = (0..268u64)
            .map(|i| (i * 7919) % 16_000_000 + 1000)
            .collect();
        let total: u64 = sizes.iter().sum();
        // 5% of room: the files fit in 8 shards.
        let shards = pack(files(&sizes), 10_000, total / 8 * 105 / 100);
        assert_eq!(shards.len(), 8);
        let (lo, hi) = (
            shards.iter().map(|s| s.bytes).min().unwrap(),
            shards.iter().map(|s| s.bytes).max().unwrap(),
        );
        assert!(hi - lo < hi / 50, "{lo}..{hi}");
    }

    #[test]
    fn a_file_past_the_byte_bound_is_a_shard_alone_and_keys_are_stable() {
        let shards = pack(files(&[10, 9_000, 20, 30]), 100, 1_000);
        assert_eq!(shards.len(), 2, "{shards:?}");
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
