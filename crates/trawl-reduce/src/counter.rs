//! Fingerprint counting partitioned by key, for many readers at once: each reader folds its
//! files into a staging slot of its own, a full slot hands each key partition its share of the
//! records under that partition's lock (one table per partition and way of cutting), and at the
//! end the partitions are settled and attributed in parallel. A reader waits only when another
//! hands the same partition a batch at the same moment, or appends a file's name to the name
//! log (one short lock per file numbered for the ranking); the counts say how often each
//! happened ([`Contention`]).
//!
//! The figures do not depend on the number of partitions, threads or slots: unique counts and
//! reference histograms are sums over disjoint key partitions; what no key decides is summed
//! per slot; one file's records reach each partition in the file's order (a slot keeps its
//! records in order, and a large file's parts are handed over as they come), so the shares a
//! file is given in the ranking are summed in the same order as by one thread.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use trawl_report::{Breakdown, ReductionJson, TopFile};

use crate::attribution::{Facts, NameLog, RefBytes, Renames, Shares, attribute_partition};
use crate::breakdown::BreakdownBuilder;
use crate::config::ReduceConfig;
use crate::dedup::{Dedup, Refs, estimate};
use crate::facts::FileReduce;
use crate::figures::{Figures, dedup_counts};
use crate::mapreduce::{MapOutput, Mapper};
use crate::partition::{Part, Partitions, lock};
use crate::short::{Overlap, Short};
use crate::slot::{SLOT_RECORDS, Slot};
use crate::spill;
use crate::table::COUNT_MAX;
use crate::totals::Totals;

/// How often folding a batch into a partition found its lock taken by another reader.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Contention {
    /// Batches handed to partitions.
    pub batches: u64,
    /// Of those, the ones whose partition was busy at the first try (the slot went on to the
    /// other partitions and came back).
    pub busy: u64,
    /// Slots found busy when a reader looked for one.
    pub slot_busy: u64,
    /// Files numbered (for the ranking), and of those the ones that found the name log busy.
    pub named: u64,
    /// Files numbered that found the name log busy.
    pub names_busy: u64,
}

/// Counts every way of cutting the files folded in, partitioned by key. Shared by reference
/// between the readers ([`Counter::add`] takes `&self`).
///
/// The counting rules:
/// - Blocks are cut from the start of each file; a file's last block is as long as what is left
///   and is fingerprinted as it is (so it only matches an equally short block of equal bytes).
/// - A block of any size is a zero block if all its bytes are zero; zero blocks are counted in
///   `zero_blocks`/`zero_bytes` and are neither unique nor indexed.
/// - `unique_blocks`/`unique_bytes`: distinct non-zero blocks and their bytes; `ratio` =
///   `logical_bytes / unique_bytes`.
/// - Compression: each unit (cut like blocks) is compressed alone; `allocated` = the compressed
///   size, or the unit's size if compression saves less than `threshold`, rounded up to `sector`.
///   `ratio` = logical / allocated. Combined: the allocated bytes of distinct non-zero units only
///   (dedup at the unit size, then compression); `combined_ratio` = logical / that.
pub struct Counter {
    /// What the readers' slots hand their records to.
    pub(crate) shared: Partitions,
    pub(crate) slots: Vec<Mutex<Slot>>,
    pub(crate) names: Mutex<Option<NameLog>>,
    /// Files counted under another name than the one they were numbered with.
    renames: Mutex<Option<Renames>>,
    pub(crate) error: Mutex<Option<std::io::Error>>,
    pub(crate) failed: AtomicBool,
    pub(crate) slot_busy: AtomicU64,
    pub(crate) named: AtomicU64,
    pub(crate) names_busy: AtomicU64,
    /// A cluster map's scan: files go to it instead (see [`Counter::mapping`]).
    pub(crate) mapper: Option<Mutex<Mapper>>,
    done: Mutex<Option<Done>>,
}

/// One way of cutting's figures: unique records, their bytes, carried sums (the unit's
/// codecs), and the reference histogram.
type WayFigures = (u64, u64, Vec<u64>, Refs);

/// One partition settled: per way, (unique records, their bytes, carried sums, histogram);
/// its shares of the saving per file, and bytes per reference bucket.
struct Settled {
    ways: Vec<WayFigures>,
    shares: Option<Shares>,
    ref_bytes: RefBytes,
}

/// Everything [`Counter::finish`] worked out, for the report.
struct Done {
    totals: Totals,
    ways: Vec<WayFigures>,
    ref_bytes: Option<RefBytes>,
    top: Option<Vec<TopFile>>,
    breakdown: Option<Breakdown>,
}

/// A path as reports spell it: without a leading `./`.
fn shown(path: &std::path::Path) -> &[u8] {
    let mut shown = path;
    while let Ok(rest) = shown.strip_prefix(".") {
        if rest == shown || rest.as_os_str().is_empty() {
            break;
        }
        shown = rest;
    }
    std::os::unix::ffi::OsStrExt::as_bytes(shown.as_os_str())
}

thread_local! {
    /// The slot this thread tries first (threads spread over the slots as they come).
    static HOME: usize = NEXT_HOME.fetch_add(1, Ordering::Relaxed);
}
static NEXT_HOME: AtomicUsize = AtomicUsize::new(0);

impl Counter {
    /// A counter for `cfg`: `cfg.partitions` key partitions (a power of two up to 64; 0: four
    /// per reader), and a staging slot for each of `cfg.threads` readers and as many more.
    pub fn new(cfg: Arc<ReduceConfig>) -> Counter {
        let threads = cfg.readers();
        let partitions = match cfg.partitions {
            0 => (4 * threads).next_power_of_two(),
            p => p.next_power_of_two(),
        }
        .min(spill::PARTITIONS);
        let shared = Partitions::new(cfg, partitions);
        let ncodec = shared.cfg.codecs.len();
        let nways = shared.sizes.len() + usize::from(shared.cfg.cdc_avg.is_some());
        let slots = (0..2 * threads + 2)
            .map(|_| {
                Mutex::new(Slot {
                    totals: Totals::new(nways, ncodec),
                    recs: vec![Vec::new(); nways],
                    ..Slot::default()
                })
            })
            .collect();
        Counter {
            shared,
            slots,
            names: Mutex::new(None),
            renames: Mutex::new(None),
            error: Mutex::new(None),
            failed: AtomicBool::new(false),
            slot_busy: AtomicU64::new(0),
            named: AtomicU64::new(0),
            names_busy: AtomicU64::new(0),
            mapper: None,
            done: Mutex::new(None),
        }
    }

    /// A counter that counts nothing itself: it folds files into a cluster map's batches over
    /// `partitions` fingerprint partitions, taken at the end by [`Counter::take_map`].
    pub fn mapping(cfg: Arc<ReduceConfig>, partitions: u32) -> Counter {
        // One partition and no slot: nothing is counted here (see `fold`).
        let mut c = Counter::new(Arc::new(ReduceConfig {
            partitions: 1,
            threads: 1,
            ..(*cfg).clone()
        }));
        c.slots.clear();
        c.shared.cfg = cfg.clone();
        c.mapper = Some(Mutex::new(Mapper::new(cfg, partitions)));
        c
    }

    /// A mapping counter's batches and totals (once).
    pub fn take_map(&self) -> Option<MapOutput> {
        let m = self.mapper.as_ref()?;
        let mapper = std::mem::replace(&mut *lock(m), Mapper::new(self.shared.cfg.clone(), 1));
        Some(mapper.finish())
    }

    /// The configuration it counts with.
    pub fn config(&self) -> &Arc<ReduceConfig> {
        &self.shared.cfg
    }

    /// Ways of cutting counted: the sizes (the unit's among them), then CDC chunks.
    pub fn ways(&self) -> usize {
        self.shared.sizes.len() + usize::from(self.shared.cfg.cdc_avg.is_some())
    }

    /// The key partitions.
    pub fn partitions(&self) -> usize {
        self.shared.parts.len()
    }

    /// How often readers found a partition or a slot busy.
    pub fn contention(&self) -> Contention {
        Contention {
            batches: self.shared.batches.load(Ordering::Relaxed),
            busy: self.shared.busy.load(Ordering::Relaxed),
            slot_busy: self.slot_busy.load(Ordering::Relaxed),
            named: self.named.load(Ordering::Relaxed),
            names_busy: self.names_busy.load(Ordering::Relaxed),
        }
    }

    /// Counts file `id` (a number [`Counter::register`] gave) under the name `path` instead:
    /// the name of a hard-linked file that is counted, chosen once all its names were met.
    pub fn rename(&self, id: u32, path: &std::path::Path) -> std::io::Result<()> {
        let name = shown(path);
        if let Some(m) = &self.mapper {
            lock(m).rename(id, name);
            return Ok(());
        }
        let mut r = lock(&self.renames);
        r.get_or_insert_with(|| Renames::new(&self.shared.cfg))
            .add(id, name)
    }

    /// Numbers a file for [`crate::FileReducer::with_file`].
    pub fn register(&self, path: &std::path::Path) -> u32 {
        let name = shown(path);
        if let Some(m) = &self.mapper {
            return lock(m).register(name);
        }
        self.named.fetch_add(1, Ordering::Relaxed);
        // One lock for every reader, held to append a name (numbers must follow the log's
        // order); how often it was found busy is counted.
        let mut names = match self.names.try_lock() {
            Ok(n) => n,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                self.names_busy.fetch_add(1, Ordering::Relaxed);
                let t = std::time::Instant::now();
                let g = lock(&self.names);
                trawl_scan::waited_on_a_lock(t.elapsed());
                g
            }
        };
        let r = match &mut *names {
            Some(n) => n.add(name),
            None => NameLog::new(&self.shared.cfg).and_then(|mut n| {
                let id = n.add(name);
                *names = Some(n);
                id
            }),
        };
        drop(names);
        r.unwrap_or_else(|e| {
            // Kept, and returned by `finish`: the attribution cannot be made without the name.
            self.fail(e);
            0
        })
    }

    /// Whether folding in failed (a spill or log could not be written): the error comes back
    /// from [`Counter::finish`], and a caller may stop early.
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    fn fail(&self, e: std::io::Error) {
        lock(&self.error).get_or_insert(e);
        self.failed.store(true, Ordering::Relaxed);
    }

    /// Folds in a file, or part of a large one (whole groups of blocks, see
    /// [`ReduceConfig::group`]), through this thread's slot; an I/O error is kept and returned
    /// by [`Counter::finish`].
    pub fn add(&self, f: &FileReduce) {
        self.fold(f, false);
    }

    /// As [`Counter::add`], and the slot hands its records to the partitions at once (a large
    /// file's part: a batch of its own, and memory that does not wait).
    pub fn add_now(&self, f: &FileReduce) {
        self.fold(f, true);
    }

    fn fold(&self, f: &FileReduce, now: bool) {
        if let Some(m) = &self.mapper {
            lock(m).add(f);
            return;
        }
        let mut slot = self.slot();
        slot.add(&self.shared, f);
        if (now || slot.waiting >= SLOT_RECORDS)
            && let Err(e) = slot.hand_over(&self.shared)
        {
            self.fail(e);
        }
    }

    /// A free slot, this thread's own first; waits for it only if every slot is busy.
    fn slot(&self) -> MutexGuard<'_, Slot> {
        let n = self.slots.len();
        let home = HOME.with(|h| *h);
        for i in 0..n {
            match self.slots[(home + i) % n].try_lock() {
                Ok(s) => return s,
                Err(TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    self.slot_busy.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        let t = std::time::Instant::now();
        let s = lock(&self.slots[home % n]);
        trawl_scan::waited_on_a_lock(t.elapsed());
        s
    }

    /// Counts everything folded in: the slots' last records, each partition's spill, the
    /// reference histograms and the attribution, partitions in parallel (one at a time after a
    /// spill, so that memory holds one partition's records).
    pub fn finish(&self) -> std::io::Result<()> {
        if self.mapper.is_some() {
            return match lock(&self.error).take() {
                Some(e) => Err(e),
                None => Ok(()),
            };
        }
        let nways = self.shared.parts.first().map_or(0, |p| lock(p).ways.len());
        let totals = self.drain_slots(nways)?;
        let settled = self.settle_all(self.spilled())?;
        let (ways, ref_bytes, shares) = self.sum_settled(nways, settled);
        let attributing = self.shared.cfg.attributing();
        let (top, breakdown) = match attributing {
            true => self.attribute(shares)?,
            false => (None, None),
        };
        *lock(&self.done) = Some(Done {
            totals,
            ways,
            ref_bytes: attributing.then_some(ref_bytes),
            top,
            breakdown,
        });
        Ok(())
    }

    /// Every slot's last records handed over and its sums taken (its memory let go: nothing
    /// is folded in after the end); the first error folding in met, if any.
    fn drain_slots(&self, nways: usize) -> std::io::Result<Totals> {
        let mut totals = Totals::new(nways, self.shared.cfg.codecs.len());
        for s in &self.slots {
            let mut s = lock(s);
            if let Err(e) = s.hand_over(&self.shared) {
                self.fail(e);
            }
            totals.merge(&s.totals);
            *s = Slot::default();
        }
        match lock(&self.error).take() {
            Some(e) => Err(e),
            None => Ok(totals),
        }
    }

    /// The partitions' figures summed: per way (unique records, their bytes, carried sums,
    /// histogram), bytes per reference bucket, and every partition's shares in order.
    fn sum_settled(
        &self,
        nways: usize,
        settled: Vec<Settled>,
    ) -> (Vec<WayFigures>, RefBytes, Vec<Shares>) {
        let cfg = &self.shared.cfg;
        let mut ways: Vec<WayFigures> = (0..nways)
            .map(|w| {
                let carry = if w == self.shared.unit_index {
                    cfg.codecs.len()
                } else {
                    0
                };
                (0, 0, vec![0; carry], Refs::default())
            })
            .collect();
        let mut ref_bytes: RefBytes = [(0, 0); 13];
        let mut shares = Vec::new();
        for s in settled {
            for (a, b) in ways.iter_mut().zip(&s.ways) {
                a.0 += b.0;
                a.1 += b.1;
                for (x, y) in a.2.iter_mut().zip(&b.2) {
                    *x += y;
                }
                a.3.merge(&b.3);
            }
            for (a, b) in ref_bytes.iter_mut().zip(&s.ref_bytes) {
                a.0 += b.0;
                a.1 += b.1;
            }
            shares.extend(s.shares);
        }
        (ways, ref_bytes, shares)
    }

    /// The attribution: the files ranked by the duplicate bytes they hold (the top ones, when
    /// asked for), and the breakdowns by directory and type.
    fn attribute(
        &self,
        shares: Vec<Shares>,
    ) -> std::io::Result<(Option<Vec<TopFile>>, Option<Breakdown>)> {
        let cfg = &self.shared.cfg;
        let mut builder = cfg.breakdown.clone().map(|b| {
            let dir = cfg.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
            BreakdownBuilder::new(b, &dir)
        });
        let facts = lock(&self.shared.facts)
            .take()
            .unwrap_or_else(|| Facts::new(cfg));
        let ranked = match lock(&self.names).take() {
            Some(names) => crate::attribution::rank(
                shares,
                names,
                facts,
                lock(&self.renames).take(),
                cfg.top_files,
                self.shared.sizes[0] as u64,
                builder.as_mut(),
            )?,
            None => Vec::new(),
        };
        let breakdown = builder.map(BreakdownBuilder::finish).transpose()?;
        Ok(((cfg.top_files > 0).then_some(ranked), breakdown))
    }

    /// Every partition settled, in partition order.
    fn settle_all(&self, spilled: bool) -> std::io::Result<Vec<Settled>> {
        let n = self.shared.parts.len();
        let workers = if spilled {
            1
        } else {
            std::thread::available_parallelism()
                .map_or(1, |c| c.get())
                .min(n)
        };
        if workers <= 1 {
            return (0..n).map(|q| self.settle(q)).collect();
        }
        let next = AtomicUsize::new(0);
        let out: Vec<Mutex<Option<std::io::Result<Settled>>>> =
            (0..n).map(|_| Mutex::new(None)).collect();
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| {
                    let _clock = self.shared.cfg.stages.clock(trawl_scan::Stage::Reduce);
                    loop {
                        let q = next.fetch_add(1, Ordering::Relaxed);
                        if q >= n {
                            break;
                        }
                        *lock(&out[q]) = Some(self.settle(q));
                    }
                });
            }
        });
        out.into_iter()
            .map(|m| {
                m.into_inner()
                    .unwrap_or_else(|p| p.into_inner())
                    .expect("every partition settled")
            })
            .collect()
    }

    /// Partition `q` counted: its spill (if any) read back against its index, its histogram, and
    /// its key log attributed against its final counts. Its indexes are let go.
    fn settle(&self, q: usize) -> std::io::Result<Settled> {
        let sh = &self.shared;
        let mut guard = lock(&sh.parts[q]);
        let Part {
            ways,
            short,
            keylog,
            spilled,
            ..
        } = &mut *guard;
        let attributing = sh.cfg.attributing();
        let keylog = keylog.take().map(|k| k.into_reader()).transpose()?;
        let mut per = attributing.then(|| Shares::new(&sh.cfg, sh.parts.len()));
        let mut ref_bytes: RefBytes = [(0, 0); 13];
        let nsizes = sh.sizes.len();
        short.flush();
        let short: &Short = short;
        // Per size: the keys its table shares with the short keys.
        let mut overlaps = vec![Overlap::default(); nsizes];
        for (w, d) in ways.iter_mut().enumerate() {
            let unit = w == sh.unit_index;
            let mut hook = |s: usize, t: &crate::index::Index| -> std::io::Result<()> {
                if let Some(o) = overlaps.get_mut(w) {
                    short.overlap(t, spill::BITS, s as u64, unit, o);
                }
                match (&keylog, &mut per, w) {
                    (Some(r), Some(per), 0) => {
                        let count = |k: u128| (t.count(k) + short.count(k)).min(COUNT_MAX);
                        attribute_partition(r, s, &count, per, &mut ref_bytes)
                    }
                    _ => Ok(()),
                }
            };
            d.settle_spill(&mut hook)?;
        }
        if !*spilled {
            for (w, o) in overlaps.iter_mut().enumerate() {
                let unit = w == sh.unit_index;
                short.overlap(&ways[w].table, sh.bits, q as u64, unit, o);
            }
            if let (Some(r), Some(per)) = (&keylog, &mut per) {
                let t = &ways[0].table;
                let count = |k: u128| (t.count(k) + short.count(k)).min(COUNT_MAX);
                // The spill's partitions this one owns, in order.
                let span = spill::PARTITIONS >> sh.bits;
                for s in q * span..(q + 1) * span {
                    attribute_partition(r, s, &count, per, &mut ref_bytes)?;
                }
            }
        }
        let ways = with_short(std::mem::take(ways), &overlaps, short, sh.unit_index);
        Ok(Settled {
            ways,
            shares: per,
            ref_bytes,
        })
    }

    /// Whether the indexes went past `--memory` and were spilled.
    pub fn spilled(&self) -> bool {
        self.shared.spilling.load(Ordering::Relaxed)
    }

    /// The breakdowns by directory and type, when asked for and exact (after
    /// [`Counter::finish`]).
    pub fn breakdown(&self) -> Option<Breakdown> {
        lock(&self.done).as_ref().and_then(|d| d.breakdown.clone())
    }

    /// The report's reduction figures (after [`Counter::finish`]).
    pub fn report(&self) -> ReductionJson {
        let sh = &self.shared;
        let done = lock(&self.done);
        let empty;
        let d = match &*done {
            Some(d) => d,
            None => {
                empty = Done {
                    totals: Totals::new(self.ways(), sh.cfg.codecs.len()),
                    ways: Vec::new(),
                    ref_bytes: None,
                    top: None,
                    breakdown: None,
                };
                &empty
            }
        };
        let sampled = sh.cfg.sample_threshold().is_some();
        let rate = if sampled {
            sh.cfg.sample.unwrap_or(1.0)
        } else {
            1.0
        };
        let counts = |w: usize| {
            let t = d.totals.ways.get(w).copied().unwrap_or_default();
            let (kb, kbytes, refs) = d
                .ways
                .get(w)
                .map_or((0, 0, Refs::default()), |x| (x.0, x.1, x.3));
            let nonzero = t.logical_bytes - t.zero_bytes;
            let (unique_blocks, unique_bytes, sample) =
                estimate(kb, kbytes, sampled, rate, nonzero);
            dedup_counts(&t, unique_blocks, unique_bytes, &refs, sample)
        };
        let nsizes = sh.sizes.len();
        let mut chunk_sizes = [0u64; 64];
        chunk_sizes.copy_from_slice(&d.totals.chunk_sizes[..64]);
        Figures {
            sizes: sh
                .sizes
                .iter()
                .enumerate()
                .map(|(w, s)| (*s, counts(w)))
                .collect(),
            ref_bytes: d.ref_bytes,
            cdc: sh.cfg.cdc_avg.map(|_| (counts(nsizes), chunk_sizes)),
            combined: d
                .ways
                .get(sh.unit_index)
                .map(|x| x.2.clone())
                .unwrap_or_else(|| vec![0; sh.cfg.codecs.len()]),
            totals: d.totals.clone(),
            top: d.top.clone(),
            attributing: sh.cfg.attributing(),
        }
        .report(&sh.cfg)
    }
}

/// Each way's figures, the short keys (blocks of every size, see [`crate::short`]) counted in
/// once where a way's table holds them too (`overlaps`, per size).
fn with_short(
    ways: Vec<Dedup>,
    overlaps: &[Overlap],
    short: &Short,
    unit_index: usize,
) -> Vec<WayFigures> {
    let (sb, sbytes, scarried, srefs) = short.found();
    ways.into_iter()
        .enumerate()
        .map(|(w, d)| {
            let mut refs = d.refs();
            let (mut blocks, mut bytes, mut carried) =
                (d.found.blocks, d.found.bytes, d.found.carried.clone());
            if let Some(o) = overlaps.get(w) {
                // The short keys are blocks of every size, counted once where a table
                // holds them too.
                blocks = blocks + sb - o.blocks;
                bytes = bytes + sbytes - o.bytes;
                if w == unit_index {
                    for (i, c) in carried.iter_mut().enumerate() {
                        *c = *c + scarried[i] - o.carried.get(i).copied().unwrap_or(0);
                    }
                }
                refs.merge(&srefs);
                o.fix(&mut refs);
            }
            (blocks, bytes, carried, refs)
        })
        .collect()
}

#[cfg(test)]
mod tests;
