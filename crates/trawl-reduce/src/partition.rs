//! The key partitions a [`crate::Counter`]'s readers hand their records to, and what the
//! readers' slots share with it: the way records are cut and keyed, the partitions under their
//! locks, the files' facts, and the memory the partitions' indexes hold against the budget.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::attribution::Facts;
use crate::config::ReduceConfig;
use crate::dedup::Dedup;
use crate::figures::cut_sizes;
use crate::short::Short;
use crate::spill;

/// Records taken by a partition between two measurements of its indexes against the budget,
/// all partitions together (a budget is passed by at most about that many entries).
const MEASURE_EVERY: u64 = 4096;

/// What a counter's slots hand their records to: how records are cut (`sizes`, the unit's
/// among them) and keyed (the top `bits` bits pick a partition), the partitions, the files'
/// facts (breakdowns), and the budget's and the locks' counts.
pub(crate) struct Partitions {
    pub(crate) cfg: Arc<ReduceConfig>,
    pub(crate) sizes: Vec<usize>,
    pub(crate) unit_index: usize,
    /// Partitions by the key's top `bits` bits.
    pub(crate) bits: u32,
    /// A file (or a large file's last part) shorter than this is one key at every size,
    /// stored once ([`crate::short`]); 0: never (exact keys).
    pub(crate) short_below: u64,
    pub(crate) parts: Vec<Mutex<Part>>,
    pub(crate) facts: Mutex<Option<Facts>>,
    /// Bytes the partitions' indexes held when each last measured them.
    pub(crate) held: AtomicU64,
    /// Past the budget: every partition spills from its next batch on.
    pub(crate) spilling: AtomicBool,
    /// Batches handed to partitions, and of those the ones that found theirs busy.
    pub(crate) batches: AtomicU64,
    pub(crate) busy: AtomicU64,
}

impl Partitions {
    /// `partitions` key partitions (a power of two) for `cfg`.
    pub(crate) fn new(cfg: Arc<ReduceConfig>, partitions: usize) -> Partitions {
        let bits = partitions.trailing_zeros();
        let (sizes, unit_index) = cut_sizes(&cfg);
        let parts = (0..partitions)
            .map(|_| Mutex::new(Part::new(&cfg, &sizes, unit_index, bits)))
            .collect();
        Partitions {
            short_below: if cfg.exact_keys {
                0
            } else {
                sizes.iter().min().map_or(0, |&m| m as u64)
            },
            sizes,
            unit_index,
            bits,
            parts,
            facts: Mutex::new(None),
            held: AtomicU64::new(0),
            spilling: AtomicBool::new(false),
            batches: AtomicU64::new(0),
            busy: AtomicU64::new(0),
            cfg,
        }
    }

    /// The partition of `key`.
    #[inline]
    pub(crate) fn part_of(&self, key: u128) -> usize {
        if self.bits == 0 {
            0
        } else {
            (key >> (128 - self.bits)) as usize
        }
    }
}

/// One key partition: a distinct-record index per way of cutting (each block size, then CDC
/// chunks), and the key log of the smallest size's blocks that fall in it.
pub(crate) struct Part {
    pub(crate) ways: Vec<Dedup>,
    /// Keys the same at every size (not chunks).
    pub(crate) short: Short,
    pub(crate) keylog: Option<spill::Spill>,
    pub(crate) spilled: bool,
    /// Bytes its indexes held when last measured, and records taken since.
    pub(crate) held: u64,
    pub(crate) unmeasured: u64,
    pub(crate) taken: u64,
}

impl Part {
    /// An empty partition of `bits`-bit keys, a distinct-record index per size of `sizes`
    /// (the unit's, at `unit_index`, carrying its codecs' sizes), then CDC chunks.
    fn new(cfg: &ReduceConfig, sizes: &[usize], unit_index: usize, bits: u32) -> Part {
        let ncodec = cfg.codecs.len();
        let mut ways: Vec<Dedup> = sizes
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                // The unit size carries each unit's allocated sizes, summed over unique
                // units.
                let carry = if i == unit_index { ncodec } else { 0 };
                Dedup::new(s as u32, carry, cfg.exact_keys, bits)
            })
            .collect();
        if cfg.cdc_avg.is_some() {
            ways.push(Dedup::new(0, 0, cfg.exact_keys, bits));
        }
        let carry = if unit_index < sizes.len() { ncodec } else { 0 };
        Part {
            ways,
            short: Short::new(carry, 4096 >> bits),
            keylog: None,
            spilled: false,
            held: 0,
            unmeasured: 0,
            taken: 0,
        }
    }

    /// After `taken` more records: every so often, its indexes' memory against the budget.
    pub(crate) fn measure(&mut self, c: &Partitions, taken: u64) -> std::io::Result<()> {
        let Some(budget) = c.cfg.memory else {
            return Ok(());
        };
        self.unmeasured += taken;
        self.taken += taken;
        // Measuring walks every part of every table: done after a sixteenth more records, at
        // most every few thousand over all partitions.
        let every = (MEASURE_EVERY / c.parts.len() as u64).max(64);
        if self.spilled || self.unmeasured < (self.taken / 16).min(every) {
            return Ok(());
        }
        self.unmeasured = 0;
        let now: u64 =
            self.ways.iter().map(Dedup::memory_bytes).sum::<u64>() + self.short.memory_bytes();
        let before = std::mem::replace(&mut self.held, now);
        let total = if now >= before {
            c.held.fetch_add(now - before, Ordering::Relaxed) + (now - before)
        } else {
            c.held.fetch_sub(before - now, Ordering::Relaxed) - (before - now)
        };
        if total > budget {
            c.spilling.store(true, Ordering::Relaxed);
            self.spill(c)?;
        }
        Ok(())
    }

    /// From now on, this partition's records go to spill files.
    pub(crate) fn spill(&mut self, c: &Partitions) -> std::io::Result<()> {
        let dir = c.cfg.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
        let ncodec = c.cfg.codecs.len();
        let kb = if c.cfg.exact_keys { 16 } else { 8 };
        for (w, d) in self.ways.iter_mut().enumerate() {
            // What is staged goes into the table first: the spill holds what comes after.
            d.flush();
            let extra = if w == c.unit_index { ncodec } else { 0 };
            d.spill = Some(spill::Spill::new(&dir, extra, kb, 0)?);
        }
        self.spilled = true;
        Ok(())
    }
}

/// A lock whose holder panicked is still taken: a batch is folded in whole or not at all, and
/// the panic itself reaches the caller where the thread is joined.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
