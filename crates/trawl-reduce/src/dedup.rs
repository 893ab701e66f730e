//! The distinct records of one way of cutting the data (a block size, or CDC chunks) within
//! one key partition: the index, what is staged for it, what its flushes found, and the spill.

use crate::index::{Found, Pending};
use crate::spill;
use trawl_report::{RefBucket, SampleJson};

use crate::index::Index;

/// Distinct records of one way of cutting, in one key partition. What no key decides (blocks,
/// bytes, zero blocks) is summed by the stages that feed it ([`crate::counter`]).
#[derive(Default)]
pub(crate) struct Dedup {
    pub(crate) table: Index,
    pub(crate) pending: Pending,
    /// Unique blocks and bytes, and (for the unit size) the allocated sizes of unique units.
    pub(crate) found: Found,
    /// Past the memory budget: records go to partition files instead of the table.
    pub(crate) spill: Option<spill::Spill>,
    /// Reference-count histogram, when computed partition by partition after a spill.
    pub(crate) refs: Option<Refs>,
}

impl Dedup {
    /// `full`: the block size (0 for chunks); `carry`: values carried per record (the unit
    /// size's allocated sizes, one per codec), summed over unique records; `bits`: the top key
    /// bits the partition fixes.
    pub(crate) fn new(full: u32, carry: usize, exact: bool, bits: u32) -> Dedup {
        Dedup {
            table: Index::for_share(exact, bits),
            pending: Pending {
                full,
                ..Pending::default()
            },
            found: Found {
                carried: vec![0; carry],
                ..Found::default()
            },
            ..Dedup::default()
        }
    }

    /// One non-zero record (in the sample), with the values it carries (those of a unique
    /// record are summed in `found.carried`; they also travel with a spilled record).
    pub(crate) fn insert(&mut self, key: u128, len: u32, carried: &[u32]) -> std::io::Result<()> {
        match &mut self.spill {
            // Decided when the partitions are counted.
            Some(sp) => sp.write(key, len, carried),
            None => {
                self.pending
                    .stage(&mut self.table, &mut self.found, key, len, carried);
                Ok(())
            }
        }
    }

    /// `n` occurrences of one record (see [`Pending::stage_n`]); never spilled.
    pub(crate) fn insert_n(&mut self, key: u128, len: u32, carried: &[u32], n: u64) {
        self.pending
            .stage_n(&mut self.table, &mut self.found, key, len, carried, n);
    }

    /// The index's bytes, with the records kept aside until the next flush.
    pub(crate) fn memory_bytes(&self) -> u64 {
        let p = &self.pending;
        self.table.memory_bytes() + (p.recs.capacity() * 16 + p.carried.capacity() * 4) as u64
    }

    /// Merges what is staged (before a spill starts, and at the end).
    pub(crate) fn flush(&mut self) {
        self.pending.flush(&mut self.table, &mut self.found);
    }

    /// Counts the spilled records partition by partition (each partition's keys taken from the
    /// table, then its records staged and merged), so that memory holds one partition at a
    /// time. The table was flushed when the spill began.
    pub(crate) fn settle_spill(
        &mut self,
        hook: &mut dyn FnMut(usize, &Index) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let Some(sp) = self.spill.take() else {
            self.flush();
            return Ok(());
        };
        let mut refs = Refs::default();
        let mut table = std::mem::take(&mut self.table);
        let mut hook_err = None;
        sp.for_each_partition(&mut |q, records| {
            let mut t = table.take_partition(q as u64);
            for r in records {
                self.pending
                    .stage(&mut t, &mut self.found, r.key, r.len, &r.extra);
            }
            self.pending.flush(&mut t, &mut self.found);
            t.for_each_count(&mut |c| refs.add(c));
            if hook_err.is_none()
                && let Err(e) = hook(q, &t)
            {
                hook_err = Some(e);
            }
        })?;
        if let Some(e) = hook_err {
            return Err(e);
        }
        self.refs = Some(refs);
        Ok(())
    }

    /// The reference-count histogram's buckets (after the flush or the settling).
    pub(crate) fn refs(&self) -> Refs {
        match &self.refs {
            Some(r) => *r,
            None => {
                let mut refs = Refs::default();
                self.table.for_each_count(&mut |c| refs.add(c));
                refs
            }
        }
    }
}

/// (unique blocks, unique bytes) from the distinct records kept, and, when they were sampled
/// (kept if their key is under a threshold, at `rate`), the 99% interval of the bytes. The
/// estimate and its interval stay within what is possible: no fewer bytes than the distinct
/// ones kept, no more than the `nonzero` bytes scanned (a dedup ratio is at least 1).
pub(crate) fn estimate(
    kept_blocks: u64,
    kept_bytes: u64,
    sampled: bool,
    rate: f64,
    nonzero: u64,
) -> (u64, u64, Option<SampleJson>) {
    if !sampled {
        return (kept_blocks, kept_bytes, None);
    }
    let blocks = (kept_blocks as f64 / rate).round() as u64;
    let (floor, cap) = (kept_bytes as f64, nonzero.max(kept_bytes) as f64);
    let bytes = (kept_bytes as f64 / rate).clamp(floor, cap);
    // Hash-threshold sampling: the kept count is binomial; relative error ~ 1/sqrt(kept).
    let rel = 2.576 / (kept_blocks.max(1) as f64).sqrt();
    let s = SampleJson {
        rate,
        kept: kept_blocks,
        confidence: 0.99,
        low: (bytes * (1.0 - rel)).clamp(floor, cap).round() as u64,
        high: (bytes * (1.0 + rel)).clamp(floor, cap).round() as u64,
    };
    (blocks, bytes.round() as u64, Some(s))
}

pub(crate) fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

pub(crate) fn ref_bucket(c: u64) -> usize {
    ((64 - (c.max(1) - 1).leading_zeros()) as usize).min(12)
}

/// Per reference-count bucket: distinct blocks, and the references to them.
#[derive(Debug, Default, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Refs {
    blocks: [u64; 13],
    references: [u64; 13],
}

impl Refs {
    /// Adds another histogram's buckets.
    pub(crate) fn merge(&mut self, o: &Refs) {
        for b in 0..13 {
            self.blocks[b] += o.blocks[b];
            self.references[b] += o.references[b];
        }
    }

    pub(crate) fn add(&mut self, count: u64) {
        let b = ref_bucket(count);
        self.blocks[b] += 1;
        self.references[b] += count;
    }

    /// Takes out one block referenced `count` times (added before).
    pub(crate) fn take(&mut self, count: u64) {
        let b = ref_bucket(count);
        self.blocks[b] -= 1;
        self.references[b] -= count;
    }
}

/// How many distinct blocks are referenced 1, 2, 3-4, 5-8, ... times (2,049 or more in the last).
pub(crate) fn histogram(refs: &Refs) -> Vec<RefBucket> {
    refs.blocks
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(b, n)| {
            let (lo, hi) = if b == 0 {
                (1, 1)
            } else {
                ((1u64 << (b - 1)) + 1, 1u64 << b)
            };
            RefBucket {
                from: lo,
                to: (b < 12).then_some(hi),
                blocks: *n,
                referenced_blocks: refs.references[b],
                logical_bytes: None,
                stored_bytes: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sampled_estimate_stays_within_what_is_possible() {
        // 100 distinct blocks of 4 KiB kept at a 1% rate (39 MiB scaled) from 41 MiB of
        // non-zero data: the interval's top (1.26x the scaled bytes) would pass the data itself,
        // a dedup ratio under 1.
        let nonzero = 41 << 20;
        let (_, bytes, s) = estimate(100, 100 * 4096, true, 0.01, nonzero);
        let s = s.expect("sampled");
        assert!(s.high <= nonzero, "{} > {nonzero}", s.high);
        assert!(bytes <= nonzero && s.low <= bytes);
        // Never fewer bytes than the distinct blocks actually kept.
        let (_, bytes, s) = estimate(4, 4 * 4096, true, 0.5, 1 << 30);
        assert!(s.expect("sampled").low >= 4 * 4096 && bytes >= 4 * 4096);
        // Unsampled: exact.
        assert_eq!(estimate(7, 700, false, 1.0, 1000), (7, 700, None));
    }
}
