//! The counts of one way of cutting the data (a block size, or CDC chunks).

use crate::index::{Found, Pending};
use crate::spill;
use trawl_report::reduction::RefBucket;
use trawl_report::reduction::{DedupCounts, SampleJson};

use crate::index::Index;

/// Counts for one way of cutting the data.
#[derive(Default)]
pub(crate) struct Dedup {
    pub(crate) table: Index,
    pub(crate) pending: Pending,
    /// Unique blocks and bytes, and (for the unit size) the allocated sizes of unique units.
    pub(crate) found: Found,
    pub(crate) logical_bytes: u64,
    pub(crate) blocks: u64,
    pub(crate) zero_blocks: u64,
    pub(crate) zero_bytes: u64,
    /// Sampling: keys at or above it are left out.
    pub(crate) threshold: Option<u64>,
    pub(crate) rate: f64,
    /// Past the memory budget: records go to partition files instead of the table.
    pub(crate) spill: Option<spill::Spill>,
    /// Reference-count histogram, when computed partition by partition after a spill.
    pub(crate) refs: Option<Refs>,
}

impl Dedup {
    /// `full`: the block size (0 for chunks); `carry`: values carried per record (the unit
    /// size's allocated sizes, one per codec), summed over unique records.
    pub(crate) fn new(
        full: u32,
        carry: usize,
        threshold: Option<u64>,
        rate: f64,
        exact: bool,
    ) -> Dedup {
        Dedup {
            threshold,
            rate,
            table: if exact {
                Index::Exact(Default::default())
            } else {
                Index::default()
            },
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

    /// `carry(i, out)` appends the values carried by record `i` (those of a unique record are
    /// summed in `found.carried`; they also travel with a spilled record).
    pub(crate) fn add(
        &mut self,
        keys: &[u128],
        lens: &[u32],
        zero: &[bool],
        carry: &dyn Fn(usize, &mut Vec<u32>),
    ) -> std::io::Result<()> {
        let mut carried = Vec::with_capacity(self.found.carried.len());
        for i in 0..keys.len() {
            self.logical_bytes += lens[i] as u64;
            self.blocks += 1;
            // Zero blocks are thin-provisioned: counted apart, never indexed.
            if zero[i] {
                self.zero_blocks += 1;
                self.zero_bytes += lens[i] as u64;
                continue;
            }
            if self
                .threshold
                .is_some_and(|t| ((keys[i] >> 64) as u64) >= t)
            {
                continue;
            }
            carried.clear();
            carry(i, &mut carried);
            if let Some(sp) = &mut self.spill {
                // Decided when the partitions are counted.
                sp.write(keys[i], lens[i], &carried)?;
            } else {
                self.pending
                    .stage(&mut self.table, &mut self.found, keys[i], lens[i], &carried);
            }
        }
        Ok(())
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

    pub(crate) fn references(&self) -> Vec<RefBucket> {
        match &self.refs {
            Some(r) => histogram(r),
            None => {
                let mut refs = Refs::default();
                self.table.for_each_count(&mut |c| refs.add(c));
                histogram(&refs)
            }
        }
    }

    /// (unique blocks, unique bytes) and, when sampled, the 99% interval of the bytes.
    pub(crate) fn estimate(&self) -> (u64, u64, Option<SampleJson>) {
        let (unique_blocks, unique_bytes) = (self.found.blocks, self.found.bytes);
        if self.threshold.is_none() {
            return (unique_blocks, unique_bytes, None);
        }
        let blocks = (unique_blocks as f64 / self.rate).round() as u64;
        let bytes = unique_bytes as f64 / self.rate;
        // Hash-threshold sampling: the kept count is binomial; relative error ~ 1/sqrt(kept).
        let rel = 2.576 / (unique_blocks.max(1) as f64).sqrt();
        let s = SampleJson {
            rate: self.rate,
            kept: unique_blocks,
            confidence: 0.99,
            low: (bytes * (1.0 - rel)).max(0.0).round() as u64,
            high: (bytes * (1.0 + rel)).round() as u64,
        };
        (blocks, bytes.round() as u64, Some(s))
    }

    pub(crate) fn counts(&self) -> DedupCounts {
        let (unique_blocks, unique_bytes, sample) = self.estimate();
        DedupCounts {
            logical_bytes: self.logical_bytes,
            blocks: self.blocks,
            unique_blocks,
            unique_bytes,
            zero_blocks: self.zero_blocks,
            zero_bytes: self.zero_bytes,
            ratio: ratio(self.logical_bytes, unique_bytes),
            references: self.references(),
            sample,
        }
    }
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
