//! A reader's staging slot for the [`crate::Counter`]: what no key decides, summed, and the records
//! of the files it took, handed to their key partitions a batch at a time.

use std::sync::TryLockError;
use std::sync::atomic::Ordering;

use crate::attribution::Facts;
use crate::facts::{FileReduce, add_unit};
use crate::partition::{Part, Partitions, lock};
use crate::spill;
use crate::totals::Totals;

/// Records (over all ways of cutting) a slot holds before it hands them to the partitions:
/// about 64 per partition at 64 partitions, so that a partition's lock is taken once for a
/// batch, not for a record.
pub(crate) const SLOT_RECORDS: usize = 4096;

/// Bytes of the key log (for the ranking) held in RAM before it goes to disk, all partitions
/// together (a scan of up to about 350,000 blocks writes none).
const KEYLOG_MEMORY: usize = 4 << 20;

/// A reader's staging: what no key decides, summed, and the records waiting for their
/// partitions.
#[derive(Default)]
pub(crate) struct Slot {
    pub(crate) totals: Totals,
    /// Per way: (key, length) of each non-zero record in the sample, in the order they came.
    pub(crate) recs: Vec<Vec<(u128, u32)>>,
    /// The unit way's carried values, `ncodec` per record.
    pub(crate) carried: Vec<u32>,
    /// Records of files that are one key at every size (see [`crate::short`]), and their
    /// carried values.
    pub(crate) short: Vec<(u128, u32)>,
    pub(crate) short_carried: Vec<u32>,
    /// (key, length, file) of the smallest size's non-zero blocks (when attributing).
    pub(crate) keylog: Vec<(u128, u32, u32)>,
    /// (file, bytes, bytes the first codec stores, format) per file or part (breakdowns).
    pub(crate) facts: Vec<(u32, u64, u64, Option<&'static str>)>,
    pub(crate) waiting: usize,
    /// A file's blocks at one size: keys, lengths, zero flags, and a buffer for the keys.
    pub(crate) scratch: (Vec<u128>, Vec<u32>, Vec<bool>, Vec<u8>),
    /// Record numbers grouped by partition, and where each partition's group starts.
    pub(crate) order: Vec<u32>,
    pub(crate) starts: Vec<u32>,
}

impl Slot {
    /// Sums what no key decides and stages the records of `f`.
    ///
    /// Long on purpose: a reader runs it once per file, on the hot path, and its parts share
    /// the slot's buffers (the sums, then each way's records staged in arrival order).
    pub(crate) fn add(&mut self, c: &Partitions, f: &FileReduce) {
        let cfg = &c.cfg;
        let ncodec = cfg.codecs.len();
        let threshold = cfg.sample_threshold();
        let attributing = cfg.attributing();
        let out_of_sample = |key: u128| threshold.is_some_and(|t| ((key >> 64) as u64) >= t);
        // Scratch vectors kept between files (a small file's facts came with four allocations).
        let (mut keys, mut lens, mut zero, mut buf) = std::mem::take(&mut self.scratch);
        // What the first codec stores of this file (or part), for the breakdowns.
        let mut stored = 0u64;
        // One key at every size: staged once, below.
        let short = f.size > 0 && f.size < c.short_below;
        for (idx, &size) in c.sizes.iter().enumerate() {
            keys.clear();
            lens.clear();
            zero.clear();
            f.for_each_block(size, &mut buf, &mut |_, key, len, z| {
                keys.push(key);
                lens.push(len);
                zero.push(z);
            });
            let is_unit = idx == c.unit_index;
            let t = &mut self.totals.ways[idx];
            let recs = &mut self.recs[idx];
            for i in 0..keys.len() {
                t.add(lens[i] as u64, zero[i]);
                // Zero blocks are thin-provisioned: counted apart, never indexed.
                if zero[i] {
                    continue;
                }
                if out_of_sample(keys[i]) || short {
                    continue;
                }
                recs.push((keys[i], lens[i]));
                if is_unit {
                    self.carried
                        .extend((0..ncodec).map(|k| f.units[i * ncodec + k].1));
                }
                self.waiting += 1;
            }
            if short && idx == 0 && !zero[0] && !out_of_sample(keys[0]) {
                self.short.push((keys[0], lens[0]));
                if c.unit_index < c.sizes.len() {
                    self.short_carried.extend((0..ncodec).map(|k| f.units[k].1));
                }
                self.waiting += 1;
            }
            if idx == 0
                && attributing
                && let Some(id) = f.file
            {
                for i in 0..keys.len() {
                    if !zero[i] {
                        self.keylog.push((keys[i], lens[i], id));
                    }
                }
            }
            if is_unit && ncodec > 0 {
                let t = &mut self.totals;
                for u in 0..keys.len() {
                    let first = f.units[u * ncodec];
                    if !zero[u] && first != (u32::MAX, u32::MAX) {
                        stored += first.1 as u64;
                    }
                    if first == (u32::MAX, u32::MAX) {
                        continue; // not in the sample
                    }
                    // Zero units are always measured and kept apart, exactly.
                    let z = zero[u];
                    if z {
                        t.zero_logical += lens[u] as u64;
                    } else {
                        t.sampled_units += 1;
                        t.sampled_logical += lens[u] as u64;
                    }
                    let sizes = &f.units[u * ncodec..(u + 1) * ncodec];
                    if z {
                        add_unit(&mut t.zero_compressed, &mut t.zero_allocated, sizes);
                    } else {
                        add_unit(&mut t.compressed, &mut t.allocated, sizes);
                    }
                }
                t.units += keys.len() as u64;
            }
        }
        if cfg.cdc_avg.is_some() {
            let w = c.sizes.len();
            for &(key, len, z) in &f.chunks {
                self.totals.add_chunk(w, len as u64, z);
                if z {
                    continue;
                }
                if out_of_sample(key) {
                    continue;
                }
                self.recs[w].push((key, len));
                self.waiting += 1;
            }
        }
        self.scratch = (keys, lens, zero, buf);
        if let Some(id) = f.file
            && attributing
            && cfg.breakdown.is_some()
        {
            self.facts.push((id, f.size, stored, f.kind));
        }
    }

    /// Hands every partition its records: those whose partition is free first, then the
    /// rest, waiting for each. Within a partition, records go in in the order they came.
    pub(crate) fn hand_over(&mut self, c: &Partitions) -> std::io::Result<()> {
        if !self.facts.is_empty() {
            let mut facts = lock(&c.facts);
            let facts = facts.get_or_insert_with(|| Facts::new(&c.cfg));
            for (id, bytes, stored, kind) in self.facts.drain(..) {
                facts.add(id, bytes, stored, kind)?;
            }
        }
        if self.waiting == 0 && self.keylog.is_empty() {
            return Ok(());
        }
        let p = c.parts.len();
        let nways = self.recs.len();
        // A stable counting sort of record numbers by partition: way by way, then the key log
        // (as way `nways`), then the short keys (`nways + 1`).
        self.order.clear();
        self.starts.clear();
        for w in 0..nways + 2 {
            let base = self.order.len() as u32;
            let mut count = vec![0u32; p + 1];
            let keys: Box<dyn Iterator<Item = u128> + '_> = if w < nways {
                Box::new(self.recs[w].iter().map(|r| r.0))
            } else if w == nways {
                Box::new(self.keylog.iter().map(|r| r.0))
            } else {
                Box::new(self.short.iter().map(|r| r.0))
            };
            let parts: Vec<u32> = keys.map(|k| c.part_of(k) as u32).collect();
            for &q in &parts {
                count[q as usize + 1] += 1;
            }
            for q in 0..p {
                count[q + 1] += count[q];
            }
            self.starts.extend(count.iter().map(|x| base + x));
            let mut at = count;
            self.order.resize(base as usize + parts.len(), 0);
            for (i, &q) in parts.iter().enumerate() {
                self.order[(base + at[q as usize]) as usize] = i as u32;
                at[q as usize] += 1;
            }
        }
        let mut later = Vec::new();
        for q in 0..p {
            if !self.has_records(q, p, nways) {
                continue;
            }
            match c.parts[q].try_lock() {
                Ok(mut part) => self.give(c, q, &mut part)?,
                Err(TryLockError::Poisoned(e)) => self.give(c, q, &mut e.into_inner())?,
                Err(TryLockError::WouldBlock) => {
                    c.busy.fetch_add(1, Ordering::Relaxed);
                    later.push(q);
                }
            }
            c.batches.fetch_add(1, Ordering::Relaxed);
        }
        for q in later {
            let t = std::time::Instant::now();
            let mut part = lock(&c.parts[q]);
            trawl_scan::waited_on_a_lock(t.elapsed());
            self.give(c, q, &mut part)?;
        }
        for r in &mut self.recs {
            r.clear();
        }
        self.carried.clear();
        self.short.clear();
        self.short_carried.clear();
        self.keylog.clear();
        self.waiting = 0;
        Ok(())
    }

    fn has_records(&self, q: usize, p: usize, nways: usize) -> bool {
        (0..nways + 2).any(|w| {
            let s = &self.starts[w * (p + 1)..(w + 1) * (p + 1)];
            s[q + 1] > s[q]
        })
    }

    /// Partition `q`'s records of every way and of the key log, into `part`.
    fn give(&self, c: &Partitions, q: usize, part: &mut Part) -> std::io::Result<()> {
        let p = c.parts.len();
        let nways = self.recs.len();
        let ncodec = c.cfg.codecs.len();
        if c.spilling.load(Ordering::Relaxed) && !part.spilled {
            part.spill(c)?;
        }
        let mut taken = 0u64;
        for w in 0..nways {
            let s = &self.starts[w * (p + 1)..(w + 1) * (p + 1)];
            let (lo, hi) = (s[q] as usize, s[q + 1] as usize);
            let carry = if w == c.unit_index { ncodec } else { 0 };
            let d = &mut part.ways[w];
            for &i in &self.order[lo..hi] {
                let i = i as usize;
                let (key, len) = self.recs[w][i];
                d.insert(key, len, &self.carried[i * carry..(i + 1) * carry])?;
            }
            taken += (hi - lo) as u64;
        }
        let s = &self.starts[(nways + 1) * (p + 1)..(nways + 2) * (p + 1)];
        let (lo, hi) = (s[q] as usize, s[q + 1] as usize);
        let carry = if c.unit_index < c.sizes.len() {
            ncodec
        } else {
            0
        };
        for &i in &self.order[lo..hi] {
            let i = i as usize;
            let (key, len) = self.short[i];
            let carried = &self.short_carried[i * carry..(i + 1) * carry];
            if part.spilled {
                // A spilling partition takes no more short keys: each way gets the record.
                for w in 0..c.sizes.len() {
                    let k = if w == c.unit_index { carry } else { 0 };
                    part.ways[w].insert(key, len, &carried[..k])?;
                }
            } else {
                part.short.stage(key, len, carried);
            }
        }
        taken += (hi - lo) as u64;
        let s = &self.starts[nways * (p + 1)..(nways + 1) * (p + 1)];
        let (lo, hi) = (s[q] as usize, s[q + 1] as usize);
        if hi > lo {
            if part.keylog.is_none() {
                let dir = c.cfg.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
                part.keylog = Some(spill::Spill::new(
                    &dir,
                    1,
                    if c.cfg.exact_keys { 16 } else { 8 },
                    KEYLOG_MEMORY / p,
                )?);
            }
            let log = part.keylog.as_mut().expect("just made");
            for &i in &self.order[lo..hi] {
                let (key, len, file) = self.keylog[i as usize];
                log.write(key, len, &[file])?;
            }
        }
        part.measure(c, taken)
    }
}
