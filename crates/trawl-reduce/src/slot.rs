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
    /// A file's blocks at one size, kept between files.
    pub(crate) scratch: Blocks,
    /// Record numbers grouped by partition, and where each partition's group starts.
    pub(crate) order: Vec<u32>,
    pub(crate) starts: Vec<u32>,
}

/// A file's blocks at one size: keys, lengths, zero flags, and a buffer for the keys.
#[derive(Default)]
pub(crate) struct Blocks {
    keys: Vec<u128>,
    lens: Vec<u32>,
    zero: Vec<bool>,
    buf: Vec<u8>,
}

impl Blocks {
    /// `f`'s blocks of `size` bytes, in place of the last ones.
    #[inline]
    fn fill(&mut self, f: &FileReduce, size: usize) {
        self.keys.clear();
        self.lens.clear();
        self.zero.clear();
        let (keys, lens, zero) = (&mut self.keys, &mut self.lens, &mut self.zero);
        f.for_each_block(size, &mut self.buf, &mut |_, key, len, z| {
            keys.push(key);
            lens.push(len);
            zero.push(z);
        });
    }
}

/// The file [`Slot::add`] stages: its facts, the codecs per unit, the sample's threshold, and
/// whether it is one key at every size.
struct File<'f> {
    f: &'f FileReduce,
    ncodec: usize,
    threshold: Option<u64>,
    short: bool,
}

impl File<'_> {
    /// Whether `key` falls outside the sample (never, unless sampling).
    #[inline]
    fn out_of_sample(&self, key: u128) -> bool {
        self.threshold.is_some_and(|t| ((key >> 64) as u64) >= t)
    }
}

impl Slot {
    /// Sums what no key decides and stages the records of `f`: a reader runs it once per
    /// file, on the hot path, its parts sharing the slot's buffers (each size's blocks summed
    /// and staged in arrival order, then the chunks).
    pub(crate) fn add(&mut self, c: &Partitions, f: &FileReduce) {
        let cfg = &c.cfg;
        let file = File {
            f,
            ncodec: cfg.codecs.len(),
            threshold: cfg.sample_threshold(),
            // One key at every size: staged once, as a short key.
            short: f.size > 0 && f.size < c.short_below,
        };
        let attributing = cfg.attributing();
        // Scratch vectors kept between files (a small file's facts came with four allocations).
        let mut b = std::mem::take(&mut self.scratch);
        // What the first codec stores of this file (or part), for the breakdowns.
        let mut stored = 0u64;
        for (idx, &size) in c.sizes.iter().enumerate() {
            b.fill(f, size);
            let is_unit = idx == c.unit_index;
            self.stage(&b, idx, is_unit, &file);
            if file.short && idx == 0 {
                self.stage_short(&b, &file, c.unit_index < c.sizes.len());
            }
            if idx == 0
                && attributing
                && let Some(id) = f.file
            {
                self.log_keys(&b, id);
            }
            if is_unit && file.ncodec > 0 {
                stored += self.sum_units(&b, &file);
            }
        }
        if cfg.cdc_avg.is_some() {
            self.stage_chunks(c.sizes.len(), &file);
        }
        self.scratch = b;
        if let Some(id) = f.file
            && attributing
            && cfg.breakdown.is_some()
        {
            self.facts.push((id, f.size, stored, f.kind));
        }
    }

    /// One size's blocks summed, and the non-zero ones in the sample staged (a short file's
    /// are not: it is staged once, as a short key); the unit way's with their codecs' sizes.
    #[inline]
    fn stage(&mut self, b: &Blocks, idx: usize, is_unit: bool, file: &File<'_>) {
        let (f, ncodec) = (file.f, file.ncodec);
        let t = &mut self.totals.ways[idx];
        let recs = &mut self.recs[idx];
        for i in 0..b.keys.len() {
            t.add(b.lens[i] as u64, b.zero[i]);
            // Zero blocks are thin-provisioned: counted apart, never indexed.
            if b.zero[i] {
                continue;
            }
            if file.out_of_sample(b.keys[i]) || file.short {
                continue;
            }
            recs.push((b.keys[i], b.lens[i]));
            if is_unit {
                self.carried
                    .extend((0..ncodec).map(|k| f.units[i * ncodec + k].1));
            }
            self.waiting += 1;
        }
    }

    /// A short file's one key, staged once for every size (with its unit's codecs' sizes
    /// where a unit size is counted), unless it is zero or out of the sample.
    #[inline]
    fn stage_short(&mut self, b: &Blocks, file: &File<'_>, has_unit: bool) {
        if b.zero[0] || file.out_of_sample(b.keys[0]) {
            return;
        }
        self.short.push((b.keys[0], b.lens[0]));
        if has_unit {
            let units = &file.f.units;
            self.short_carried
                .extend((0..file.ncodec).map(|k| units[k].1));
        }
        self.waiting += 1;
    }

    /// The smallest size's non-zero blocks logged with file `id`, for the ranking.
    #[inline]
    fn log_keys(&mut self, b: &Blocks, id: u32) {
        for i in 0..b.keys.len() {
            if !b.zero[i] {
                self.keylog.push((b.keys[i], b.lens[i], id));
            }
        }
    }

    /// The unit size's compression summed (zero units apart, exactly; units out of the sample
    /// skipped); what the first codec stores of the file's non-zero units, returned.
    #[inline]
    fn sum_units(&mut self, b: &Blocks, file: &File<'_>) -> u64 {
        let (f, ncodec) = (file.f, file.ncodec);
        let t = &mut self.totals;
        let mut stored = 0u64;
        for u in 0..b.keys.len() {
            let first = f.units[u * ncodec];
            if !b.zero[u] && first != (u32::MAX, u32::MAX) {
                stored += first.1 as u64;
            }
            if first == (u32::MAX, u32::MAX) {
                continue; // not in the sample
            }
            // Zero units are always measured and kept apart, exactly.
            let z = b.zero[u];
            if z {
                t.zero_logical += b.lens[u] as u64;
            } else {
                t.sampled_units += 1;
                t.sampled_logical += b.lens[u] as u64;
            }
            let sizes = &f.units[u * ncodec..(u + 1) * ncodec];
            if z {
                add_unit(&mut t.zero_compressed, &mut t.zero_allocated, sizes);
            } else {
                add_unit(&mut t.compressed, &mut t.allocated, sizes);
            }
        }
        t.units += b.keys.len() as u64;
        stored
    }

    /// The file's CDC chunks summed (way `w`), and the non-zero ones in the sample staged.
    #[inline]
    fn stage_chunks(&mut self, w: usize, file: &File<'_>) {
        for &(key, len, z) in &file.f.chunks {
            self.totals.add_chunk(w, len as u64, z);
            if z {
                continue;
            }
            if file.out_of_sample(key) {
                continue;
            }
            self.recs[w].push((key, len));
            self.waiting += 1;
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
        self.sort_by_partition(c);
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

    /// A stable counting sort of record numbers by partition (`order`, each way's groups
    /// starting at `starts`): way by way, then the key log (as way `nways`), then the short
    /// keys (`nways + 1`).
    fn sort_by_partition(&mut self, c: &Partitions) {
        let p = c.parts.len();
        let nways = self.recs.len();
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
    }

    /// Partition `q`'s short keys, staged in `part` (each way's record, once it spills);
    /// how many.
    fn give_short(&self, c: &Partitions, q: usize, part: &mut Part) -> std::io::Result<usize> {
        let p = c.parts.len();
        let nways = self.recs.len();
        let ncodec = c.cfg.codecs.len();
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
        Ok(hi - lo)
    }

    /// Partition `q`'s part of the key log, written to its log (made at its first record).
    fn give_keylog(&self, c: &Partitions, q: usize, part: &mut Part) -> std::io::Result<()> {
        let p = c.parts.len();
        let nways = self.recs.len();
        let s = &self.starts[nways * (p + 1)..(nways + 1) * (p + 1)];
        let (lo, hi) = (s[q] as usize, s[q + 1] as usize);
        if hi == lo {
            return Ok(());
        }
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
        taken += self.give_short(c, q, part)? as u64;
        self.give_keylog(c, q, part)?;
        part.measure(c, taken)
    }
}
