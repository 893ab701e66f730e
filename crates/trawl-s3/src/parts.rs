//! What a multipart upload's values are made of: each part's digest at a part size, and the
//! values S3 makes of them (the multipart ETag, a composite checksum), with the part sizes an
//! object of a given size and part count can have been uploaded in.

use trawl_digest::{Algorithm, Hasher};
use trawl_scan::{Lane, LaneOutput};

/// The most parts an upload has (S3's limit): a part count above it (an ETag's or a
/// checksum's `-N`, which the store writes) is no upload's, and is not believed.
pub(crate) const MAX_PARTS: u32 = 10_000;

/// Each part's digest by one algorithm, at one part size.
pub(crate) struct PartLane {
    alg: Algorithm,
    part: u64,
    in_part: u64,
    cur: Option<Hasher>,
    done: Vec<Vec<u8>>,
}

/// What a [`PartLane`] made of a file: its algorithm, part size and the parts' digests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PartDigests {
    pub(crate) alg: Algorithm,
    pub(crate) part: u64,
    pub(crate) digests: Vec<Vec<u8>>,
}

impl PartLane {
    pub(crate) fn new(alg: Algorithm, part: u64) -> PartLane {
        PartLane {
            alg,
            part: part.max(1),
            in_part: 0,
            cur: None,
            done: Vec::new(),
        }
    }
}

impl Lane for PartLane {
    fn update(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() {
            let room = (self.part - self.in_part) as usize;
            let (now, rest) = chunk.split_at(room.min(chunk.len()));
            self.cur
                .get_or_insert_with(|| self.alg.hasher())
                .update(now);
            self.in_part += now.len() as u64;
            if self.in_part == self.part {
                let h = self.cur.take().unwrap_or_else(|| self.alg.hasher());
                self.done.push(h.finish());
                self.in_part = 0;
            }
            chunk = rest;
        }
    }

    fn finish(mut self: Box<Self>) -> LaneOutput {
        if let Some(h) = self.cur.take() {
            self.done.push(h.finish());
        }
        LaneOutput::Other(Box::new(PartDigests {
            alg: self.alg,
            part: self.part,
            digests: self.done,
        }))
    }
}

/// The value S3 makes of the parts' digests: the digest of their concatenation (an ETag's MD5
/// of MD5s, a composite checksum's).
pub(crate) fn of_parts(p: &PartDigests) -> Vec<u8> {
    let mut h = p.alg.hasher();
    for d in &p.digests {
        h.update(d);
    }
    h.finish()
}

/// The part sizes an object of `size` bytes in `parts` parts may have been uploaded in, the
/// user's first (`given`, where it gives that count), then whole mebibytes (what uploaders
/// use), at most two: each costs a pass of hashing. None where no size gives that count, or
/// where the count is more than an upload has (a part's digest is held per part: a planted
/// `-33554432` would hold one for each byte of a 32 MiB file).
pub(crate) fn part_sizes(size: u64, parts: u32, given: Option<u64>) -> Vec<u64> {
    if parts > MAX_PARTS {
        return Vec::new();
    }
    let n = u64::from(parts.max(1));
    let fits = |p: u64| p > 0 && size.div_ceil(p) == n;
    let mut out = Vec::new();
    if let Some(g) = given.filter(|g| fits(*g)) {
        out.push(g);
    }
    const MIB: u64 = 1 << 20;
    let mut p = size.div_ceil(n).div_ceil(MIB) * MIB;
    while out.len() < 2 && fits(p) {
        if !out.contains(&p) {
            out.push(p);
        }
        p += MIB;
    }
    if out.is_empty() && fits(size.div_ceil(n)) {
        out.push(size.div_ceil(n));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_cut_at_the_part_size_whatever_the_chunks() {
        let data: Vec<u8> = (0..25u8).collect();
        let mut lane = Box::new(PartLane::new(Algorithm::Md5, 10));
        for c in data.chunks(7) {
            lane.update(c);
        }
        let LaneOutput::Other(b) = lane.finish() else {
            panic!()
        };
        let p = b.downcast::<PartDigests>().unwrap();
        let want: Vec<Vec<u8>> = data
            .chunks(10)
            .map(|c| trawl_digest::digest(Algorithm::Md5, c))
            .collect();
        assert_eq!(p.digests, want);
    }

    #[test]
    fn part_sizes_give_the_part_count() {
        const MIB: u64 = 1 << 20;
        // 20 MiB in 3 parts: 8 MiB parts (and 9 MiB would too).
        assert_eq!(part_sizes(20 * MIB, 3, None), vec![7 * MIB, 8 * MIB]);
        assert_eq!(
            part_sizes(20 * MIB, 3, Some(8 * MIB)),
            vec![8 * MIB, 7 * MIB]
        );
        // A given size that does not give the count is not tried.
        assert_eq!(part_sizes(20 * MIB, 3, Some(5 * MIB))[0], 7 * MIB);
        assert_eq!(part_sizes(10, 3, None), vec![4]);
        // A part count no upload has: no size is tried, however well it divides.
        assert_eq!(
            part_sizes(32 * MIB, 32 * MIB as u32, None),
            Vec::<u64>::new()
        );
        assert_eq!(part_sizes(10_001, 10_001, Some(1)), Vec::<u64>::new());
        assert_eq!(part_sizes(10_000, 10_000, Some(1)), vec![1]);
    }
}
