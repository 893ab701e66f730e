//! Every file's facts folded into the global figures and the report, by one caller: the
//! [`Counter`] behind a `&mut` interface.

use crate::dedup::ratio;
use std::sync::Arc;

use trawl_report::reduction::*;

use crate::attribution::RefBytes;
use crate::config::ReduceConfig;
use crate::counter::Counter;
use crate::facts::FileReduce;

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
///
/// Many readers at once share a [`Counter`] instead.
pub struct Accumulator {
    counter: Counter,
}

impl Accumulator {
    pub fn new(cfg: Arc<ReduceConfig>) -> Accumulator {
        Accumulator {
            counter: Counter::new(cfg),
        }
    }

    /// An accumulator that counts nothing itself: it folds files into a cluster map's batches
    /// over `partitions` fingerprint partitions, taken at the end by [`Accumulator::take_map`].
    pub fn mapping(cfg: Arc<ReduceConfig>, partitions: u32) -> Accumulator {
        Accumulator {
            counter: Counter::mapping(cfg, partitions),
        }
    }

    /// A mapping accumulator's batches and totals (once).
    pub fn take_map(&mut self) -> Option<crate::cluster::MapOutput> {
        self.counter.take_map()
    }

    /// Numbers a file for [`FileReducer::with_file`](crate::FileReducer::with_file).
    pub fn register(&mut self, path: &std::path::Path) -> u32 {
        self.counter.register(path)
    }

    /// Folds in a file or part of a large one (whole groups of blocks, see
    /// [`ReduceConfig::group`]); an I/O error is kept and returned by [`Accumulator::finish`].
    pub fn add_part(&mut self, f: &FileReduce) {
        self.counter.add(f)
    }

    pub fn add(&mut self, f: &FileReduce) -> std::io::Result<()> {
        self.counter.add(f);
        Ok(())
    }

    /// Whether the index went past `--memory` and was spilled.
    pub fn spilled(&self) -> bool {
        self.counter.spilled()
    }

    /// Counts everything (call once, after the last [`Accumulator::add`]).
    pub fn finish(&mut self) -> std::io::Result<()> {
        self.counter.finish()
    }

    /// The breakdowns by directory and type, when asked for and exact (after
    /// [`Accumulator::finish`]).
    pub fn breakdown(&self) -> Option<trawl_report::breakdown::Breakdown> {
        self.counter.breakdown()
    }

    pub fn report(&self) -> ReductionJson {
        self.counter.report()
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

/// One way of cutting's counts: its totals, its distinct records (estimated when sampled) and
/// their histogram.
pub(crate) fn dedup_counts(
    t: &crate::cluster::WayTotals,
    unique_blocks: u64,
    unique_bytes: u64,
    refs: &crate::dedup::Refs,
    sample: Option<SampleJson>,
) -> DedupCounts {
    DedupCounts {
        logical_bytes: t.logical_bytes,
        blocks: t.blocks,
        unique_blocks,
        unique_bytes,
        zero_blocks: t.zero_blocks,
        zero_bytes: t.zero_bytes,
        ratio: ratio(t.logical_bytes, unique_bytes),
        references: crate::dedup::histogram(refs),
        sample,
    }
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
        let compression = self.compression(cfg, logical);
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

    /// Each codec's figures: the sampled sums scaled to the whole, with their intervals when
    /// sampled.
    fn compression(&self, cfg: &ReduceConfig, logical: u64) -> Vec<CompressionJson> {
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
        cfg.codecs
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
                // Distinct units kept by hash threshold at `rate`: the estimate sums each kept
                // unit's allocated size a over `rate`, whose variance is at most
                // (1 - rate) / rate * max(a) * the estimate (a <= unit + sector).
                let combined_sample = sampling.then(|| {
                    let most = (cfg.unit + cfg.sector) as f64;
                    let hw = 2.576 * ((1.0 - rate) / rate * most * combined as f64).sqrt();
                    SampleJson {
                        rate,
                        kept: self.sampled_units,
                        confidence: 0.99,
                        low: (combined as f64 - hw).max(0.0).round() as u64,
                        high: (combined as f64 + hw).round() as u64,
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
                    combined_sample,
                }
            })
            .collect()
    }
}
