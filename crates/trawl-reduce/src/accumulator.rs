//! Every file's facts folded into the global figures and the report.

use crate::dedup::ratio;
use std::sync::Arc;

use trawl_report::reduction::*;

use crate::attribution::{Facts, NameLog, RefBytes, Shares, attribute_partition, log_keys};
use crate::breakdown::BreakdownBuilder;
use crate::config::ReduceConfig;
use crate::dedup::Dedup;
use crate::facts::FileReduce;
use crate::index::Index;
use crate::spill;

/// Folds files into the global figures. Rules:
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
pub struct Accumulator {
    cfg: Arc<ReduceConfig>,
    pub(crate) sizes: Vec<(usize, Dedup)>,
    unit_index: usize,
    cdc: Option<(Dedup, [u64; 64])>,
    compressed: Vec<u64>,
    allocated: Vec<u64>,
    units: u64,
    /// Units compressed (all of them unless sampling) and their logical bytes.
    sampled_units: u64,
    sampled_logical: u64,
    zero_logical: u64,
    zero_compressed: Vec<u64>,
    zero_allocated: Vec<u64>,
    spilled: bool,
    error: Option<std::io::Error>,
    /// Registered files' names, on disk (see [`Accumulator::register`]).
    names: Option<NameLog>,
    /// Per non-zero block at the smallest size: key, length and file, for the attribution at
    /// the end, in partition files like a spill's (16 or 24 bytes per block, sequential writes,
    /// each partition read back once against that partition's final counts).
    keylog: Option<spill::Spill>,
    top: Option<Vec<TopFile>>,
    /// Each numbered file's bytes, stored bytes and format (for the breakdowns).
    facts: Option<Facts>,
    breakdown: Option<trawl_report::breakdown::Breakdown>,
    /// Bytes per reference-count bucket of the smallest size (from the attribution).
    ref_bytes: Option<RefBytes>,
    /// Scratch vectors of [`Accumulator::add`]: keys, lengths, zero flags, bytes.
    scratch: (Vec<u128>, Vec<u32>, Vec<bool>, Vec<u8>),
    /// Blocks added since the indexes' memory was last measured, and in all.
    unmeasured: u64,
    blocks_seen: u64,
    /// A map of a cluster's scan: files go to it instead (see [`Accumulator::mapping`]).
    mapper: Option<Box<crate::cluster::Mapper>>,
}

/// Blocks added between two measurements of the indexes' memory against the budget.
const MEASURE_EVERY: u64 = 4096;

impl Accumulator {
    pub fn new(cfg: Arc<ReduceConfig>) -> Accumulator {
        let threshold = cfg.sample_threshold();
        let rate = if threshold.is_some() {
            cfg.sample.unwrap_or(1.0)
        } else {
            1.0
        };
        let (cut, unit_index) = cut_sizes(&cfg);
        let n = cfg.codecs.len();
        let mut sizes: Vec<(usize, Dedup)> = cut
            .iter()
            .map(|&s| (s, Dedup::new(s as u32, 0, threshold, rate, cfg.exact_keys)))
            .collect();
        if let Some((s, d)) = sizes.get_mut(unit_index) {
            // The unit size carries each unit's allocated sizes, summed over unique units.
            *d = Dedup::new(*s as u32, n, threshold, rate, cfg.exact_keys);
        }
        Accumulator {
            cdc: cfg.cdc_avg.map(|_| {
                (
                    Dedup::new(0, 0, threshold, rate, cfg.exact_keys),
                    [0u64; 64],
                )
            }),
            sampled_units: 0,
            sampled_logical: 0,
            zero_logical: 0,
            zero_compressed: vec![0; cfg.codecs.len()],
            zero_allocated: vec![0; cfg.codecs.len()],
            spilled: false,
            error: None,
            cfg,
            sizes,
            unit_index,
            compressed: vec![0; n],
            allocated: vec![0; n],
            units: 0,
            names: None,
            keylog: None,
            top: None,
            facts: None,
            breakdown: None,
            ref_bytes: None,
            unmeasured: 0,
            blocks_seen: 0,
            scratch: Default::default(),
            mapper: None,
        }
    }

    /// An accumulator that counts nothing itself: it folds files into a cluster map's batches
    /// over `partitions` fingerprint partitions, taken at the end by [`Accumulator::take_map`].
    pub fn mapping(cfg: Arc<ReduceConfig>, partitions: u32) -> Accumulator {
        let mut a = Accumulator::new(cfg.clone());
        a.mapper = Some(Box::new(crate::cluster::Mapper::new(cfg, partitions)));
        a
    }

    /// A mapping accumulator's batches and totals (once).
    pub fn take_map(&mut self) -> Option<crate::cluster::MapOutput> {
        self.mapper.take().map(|m| m.finish())
    }

    /// Numbers a file for [`FileReducer::with_file`].
    pub fn register(&mut self, path: &std::path::Path) -> u32 {
        // As reports spell paths: without a leading `./`.
        let mut shown = path;
        while let Ok(rest) = shown.strip_prefix(".") {
            if rest == shown || rest.as_os_str().is_empty() {
                break;
            }
            shown = rest;
        }
        let name = std::os::unix::ffi::OsStrExt::as_bytes(shown.as_os_str());
        if let Some(m) = &mut self.mapper {
            return m.register(name);
        }
        let r = match &mut self.names {
            Some(n) => n.add(name),
            None => NameLog::new(&self.cfg).and_then(|mut n| {
                let id = n.add(name);
                self.names = Some(n);
                id
            }),
        };
        r.unwrap_or_else(|e| {
            // Kept, and returned by `finish`: the attribution cannot be made without the name.
            self.error.get_or_insert(e);
            0
        })
    }

    /// Whether per-file attribution is on: asked for, and exact (not sampled).
    pub(crate) fn attributing(&self) -> bool {
        self.cfg.attributing()
    }

    /// Folds in part of a large file (whole groups of blocks, see [`ReduceConfig::group`]); an
    /// I/O error is kept and returned by [`Accumulator::finish`].
    pub fn add_part(&mut self, f: &FileReduce) {
        if self.error.is_none()
            && let Err(e) = self.add(f)
        {
            self.error = Some(e);
        }
    }

    pub fn add(&mut self, f: &FileReduce) -> std::io::Result<()> {
        if let Some(m) = &mut self.mapper {
            m.add(f);
            return Ok(());
        }
        let n = f.fps.len();
        let ncodec = self.cfg.codecs.len();
        // Scratch vectors kept between files (a small file's facts came with four allocations).
        let (mut keys, mut lens, mut zero, mut buf) = std::mem::take(&mut self.scratch);
        // What the first codec stores of this file (or part), for the breakdowns.
        let mut stored = 0u64;
        for (idx, (size, d)) in self.sizes.iter_mut().enumerate() {
            keys.clear();
            lens.clear();
            zero.clear();
            f.for_each_block(*size, &mut buf, &mut |_, key, len, z| {
                keys.push(key);
                lens.push(len);
                zero.push(z);
            });
            let is_unit = idx == self.unit_index;
            let carry = |u: usize, out: &mut Vec<u32>| {
                if is_unit {
                    out.extend((0..ncodec).map(|c| f.units[u * ncodec + c].1));
                }
            };
            d.add(&keys, &lens, &zero, &carry)?;
            if idx == 0
                && let Some(id) = f.file
                && self.cfg.attributing()
            {
                // (Borrowing `self` whole here would clash with `self.sizes`; the log is apart.)
                log_keys(&mut self.keylog, &self.cfg, id, &keys, &lens, &zero)?;
            }
            if idx == self.unit_index && ncodec > 0 {
                for u in 0..keys.len() {
                    if !zero[u] && f.units[u * ncodec] != (u32::MAX, u32::MAX) {
                        stored += f.units[u * ncodec].1 as u64;
                    }
                    if f.units[u * ncodec] == (u32::MAX, u32::MAX) {
                        continue; // not in the sample
                    }
                    // Zero units are always measured and kept apart, exactly.
                    let z = zero[u];
                    if z {
                        self.zero_logical += lens[u] as u64;
                    } else {
                        self.sampled_units += 1;
                        self.sampled_logical += lens[u] as u64;
                    }
                    for c in 0..ncodec {
                        let (clen, alloc) = f.units[u * ncodec + c];
                        if z {
                            self.zero_compressed[c] += clen as u64;
                            self.zero_allocated[c] += alloc as u64;
                            continue;
                        }
                        self.compressed[c] += clen as u64;
                        self.allocated[c] += alloc as u64;
                    }
                }
                self.units += keys.len() as u64;
            }
        }
        if let Some((d, sizes)) = &mut self.cdc {
            keys.clear();
            lens.clear();
            zero.clear();
            for (fp, len, z) in &f.chunks {
                keys.push(*fp);
                lens.push(*len);
                zero.push(*z);
                sizes[63 - (*len as u64).max(1).leading_zeros() as usize] += 1;
            }
            d.add(&keys, &lens, &zero, &|_, _| {})?;
        }
        self.scratch = (keys, lens, zero, buf);
        if let Some(id) = f.file
            && self.cfg.attributing()
            && self.cfg.breakdown.is_some()
        {
            let cfg = &self.cfg;
            self.facts
                .get_or_insert_with(|| Facts::new(cfg))
                .add(id, f.size, stored, f.kind)?;
        }
        // Measuring the indexes walks every part of every table: done after a sixteenth more
        // blocks, at most every few thousand (a budget is passed by at most that many entries),
        // not after every file.
        self.unmeasured += n as u64;
        self.blocks_seen += n as u64;
        if self.unmeasured >= (self.blocks_seen / 16).min(MEASURE_EVERY) {
            self.unmeasured = 0;
            return self.maybe_spill();
        }
        Ok(())
    }

    /// Past the memory budget, every index from now on spills to partition files.
    pub(crate) fn maybe_spill(&mut self) -> std::io::Result<()> {
        let Some(budget) = self.cfg.memory else {
            return Ok(());
        };
        if self.sizes[0].1.spill.is_some() {
            return Ok(());
        }
        let used: u64 = self
            .sizes
            .iter()
            .map(|(_, d)| d.memory_bytes())
            .chain(self.cdc.iter().map(|(d, _)| d.memory_bytes()))
            .sum();
        if used <= budget {
            return Ok(());
        }
        let dir = self.cfg.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
        let ncodec = self.cfg.codecs.len();
        let kb = if self.cfg.exact_keys { 16 } else { 8 };
        for (idx, (_, d)) in self.sizes.iter_mut().enumerate() {
            // What is staged goes into the table first: the spill holds what comes after.
            d.flush();
            let extra = if idx == self.unit_index { ncodec } else { 0 };
            d.spill = Some(spill::Spill::new(&dir, extra, kb, 0)?);
        }
        if let Some((d, _)) = &mut self.cdc {
            d.flush();
            d.spill = Some(spill::Spill::new(&dir, 0, kb, 0)?);
        }
        self.spilled = true;
        Ok(())
    }

    /// Whether the index went past `--memory` and was spilled.
    pub fn spilled(&self) -> bool {
        self.spilled
    }

    /// Counts whatever was spilled (call once, after the last [`Accumulator::add`]).
    pub fn finish(&mut self) -> std::io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if self.mapper.is_some() {
            return Ok(());
        }
        // The key log is read partition by partition against each partition's final counts:
        // from the table in RAM, or, after a spill, while the smallest size's partitions are
        // counted.
        let attributing = self.attributing();
        let keylog = self.keylog.take().map(|k| k.into_reader()).transpose()?;
        let mut per = Shares::new(&self.cfg);
        let mut ref_bytes: RefBytes = [(0, 0.0); 13];
        for (idx, (_, d)) in self.sizes.iter_mut().enumerate() {
            let mut hook = |q: usize, t: &Index| -> std::io::Result<()> {
                match (&keylog, idx) {
                    (Some(r), 0) => attribute_partition(r, q, t, &mut per, &mut ref_bytes),
                    _ => Ok(()),
                }
            };
            d.settle_spill(&mut hook)?;
        }
        if let Some((d, _)) = &mut self.cdc {
            d.settle_spill(&mut |_, _| Ok(()))?;
        }
        if attributing {
            if let Some(r) = &keylog
                && !self.spilled
            {
                for q in 0..spill::PARTITIONS {
                    attribute_partition(r, q, &self.sizes[0].1.table, &mut per, &mut ref_bytes)?;
                }
            }
            self.ref_bytes = Some(ref_bytes);
            let mut builder = self.cfg.breakdown.clone().map(|b| {
                let dir = self.cfg.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
                BreakdownBuilder::new(b, &dir)
            });
            let facts = self.facts.take().unwrap_or_else(|| Facts::new(&self.cfg));
            self.top = Some(match self.names.take() {
                Some(names) => crate::attribution::rank(
                    per,
                    names,
                    facts,
                    self.cfg.top_files,
                    self.sizes[0].0 as u64,
                    builder.as_mut(),
                )?,
                None => Vec::new(),
            });
            self.breakdown = builder.map(BreakdownBuilder::finish).transpose()?;
            if self.cfg.top_files == 0 {
                self.top = None;
            }
        }
        Ok(())
    }

    /// The breakdowns by directory and type, when asked for and exact (after
    /// [`Accumulator::finish`]).
    pub fn breakdown(&self) -> Option<trawl_report::breakdown::Breakdown> {
        self.breakdown.clone()
    }

    pub fn report(&self) -> ReductionJson {
        Figures {
            sizes: self.sizes.iter().map(|(s, d)| (*s, d.counts())).collect(),
            ref_bytes: self.ref_bytes,
            cdc: self.cdc.as_ref().map(|(d, sizes)| (d.counts(), *sizes)),
            combined: self
                .sizes
                .get(self.unit_index)
                .map(|(_, d)| d.found.carried.clone())
                .unwrap_or_default(),
            compressed: self.compressed.clone(),
            allocated: self.allocated.clone(),
            zero_compressed: self.zero_compressed.clone(),
            zero_allocated: self.zero_allocated.clone(),
            zero_logical: self.zero_logical,
            sampled_units: self.sampled_units,
            sampled_logical: self.sampled_logical,
            units: self.units,
            top: self.top.clone(),
            attributing: self.attributing(),
        }
        .report(&self.cfg)
    }
}

/// The sizes the accumulator cuts at, in its order: the dedup sizes asked for, then the
/// compression unit if it is not among them (the combined figure needs dedup at the unit size;
/// not without codecs: then there is no combined figure). Returns the sizes and the unit's
/// place among them (`usize::MAX` for none).
pub(crate) fn cut_sizes(cfg: &ReduceConfig) -> (Vec<usize>, usize) {
    let mut sizes = cfg.dedup_sizes.clone();
    let unit_index = match sizes.iter().position(|s| *s == cfg.unit) {
        Some(i) => i,
        None if cfg.codecs.is_empty() && !sizes.is_empty() => usize::MAX,
        None => {
            sizes.push(cfg.unit);
            sizes.len() - 1
        }
    };
    (sizes, unit_index)
}

/// Every figure of a reduction, counted (by one accumulator, or summed from a cluster's
/// partitions), before it is put in the report's shape.
pub(crate) struct Figures {
    /// Per size cut at (see [`cut_sizes`]): its counts.
    pub(crate) sizes: Vec<(usize, DedupCounts)>,
    pub(crate) ref_bytes: Option<RefBytes>,
    pub(crate) cdc: Option<(DedupCounts, [u64; 64])>,
    /// Allocated bytes of the distinct non-zero units, per codec.
    pub(crate) combined: Vec<u64>,
    pub(crate) compressed: Vec<u64>,
    pub(crate) allocated: Vec<u64>,
    pub(crate) zero_compressed: Vec<u64>,
    pub(crate) zero_allocated: Vec<u64>,
    pub(crate) zero_logical: u64,
    pub(crate) sampled_units: u64,
    pub(crate) sampled_logical: u64,
    pub(crate) units: u64,
    pub(crate) top: Option<Vec<TopFile>>,
    pub(crate) attributing: bool,
}

impl Figures {
    pub(crate) fn report(self, cfg: &ReduceConfig) -> ReductionJson {
        let logical = self.sizes[0].1.logical_bytes;
        let base = self.sizes[0].0 as u64;
        let mut dedup: Vec<DedupJson> = self
            .sizes
            .into_iter()
            .filter(|(s, _)| cfg.dedup_sizes.contains(s))
            .map(|(s, counts)| DedupJson {
                block_size: s as u64,
                counts,
            })
            .collect();
        dedup.sort_by_key(|d| d.block_size);
        if let (Some(rb), Some(first)) = (&self.ref_bytes, dedup.first_mut())
            && first.block_size == base
        {
            for b in &mut first.counts.references {
                let (logical, stored) = rb[crate::dedup::ref_bucket(b.from)];
                b.logical_bytes = Some(logical);
                b.stored_bytes = Some(stored.round() as u64);
            }
        }
        let cdc = self.cdc.map(|(counts, sizes)| {
            let (min, avg, max) = cfg.cdc_bounds().expect("cdc configured");
            CdcJson {
                avg_size: avg as u64,
                min_size: min as u64,
                max_size: max as u64,
                counts,
                chunk_sizes: sizes
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| **n > 0)
                    .map(|(k, n)| SizeBucket {
                        from: 1 << k,
                        to: (1u64 << (k + 1)) - 1,
                        chunks: *n,
                    })
                    .collect(),
            }
        });
        let sampling = cfg.sample_threshold().is_some();
        let rate = cfg.sample.unwrap_or(1.0);
        // Scale sampled sums to the whole: by logical bytes for per-unit figures, by the rate for
        // the combined figure (it counts distinct units, sampled by hash threshold).
        let nonzero = logical - self.zero_logical;
        let scale = if sampling && self.sampled_logical > 0 {
            nonzero as f64 / self.sampled_logical as f64
        } else {
            1.0
        };
        let compression = cfg
            .codecs
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let allocated =
                    (self.allocated[i] as f64 * scale).round() as u64 + self.zero_allocated[i];
                // Codecs imply a unit index (see `cut_sizes`).
                let unique = self.combined[i];
                let combined = if sampling {
                    (unique as f64 / rate).round() as u64
                } else {
                    unique
                };
                let sample = sampling.then(|| {
                    // Hoeffding: the mean allocated fraction of m units, each in [0, r].
                    let r = (cfg.unit + cfg.sector) as f64 / cfg.unit as f64;
                    let m = self.sampled_units.max(1) as f64;
                    let hw = r * ((2.0f64 / 0.01).ln() / (2.0 * m)).sqrt() * nonzero as f64;
                    SampleJson {
                        rate,
                        kept: self.sampled_units,
                        confidence: 0.99,
                        low: (allocated as f64 - hw).max(0.0).round() as u64,
                        high: (allocated as f64 + hw).round() as u64,
                    }
                });
                CompressionJson {
                    codec: c.name().into(),
                    level: c.level(),
                    implementation: c.implementation(),
                    unit: cfg.unit as u64,
                    sector: cfg.sector as u64,
                    threshold: cfg.threshold,
                    units: self.units,
                    logical_bytes: logical,
                    compressed_bytes: (self.compressed[i] as f64 * scale).round() as u64
                        + self.zero_compressed[i],
                    allocated_bytes: allocated,
                    ratio: ratio(logical, allocated),
                    combined_allocated_bytes: combined,
                    combined_ratio: ratio(logical, combined),
                    sample,
                }
            })
            .collect();
        ReductionJson {
            fingerprint: if cfg.exact_keys {
                "xxh3-128 per 4 KiB block; larger blocks from their 4 KiB fingerprints; all 128 bits kept"
            } else {
                "xxh3-128 per 4 KiB block; larger blocks from their 4 KiB fingerprints; 56 bits kept (8 implied by the partition + 48 stored)"
            }
            .into(),
            dedup,
            cdc,
            compression,
            top_files: self.top,
            top_files_note: (cfg.top_files > 0 && !self.attributing)
                .then(|| "not computed for a sampled run".into()),
            hardlinks: HardLinks::default(),
        }
    }
}
