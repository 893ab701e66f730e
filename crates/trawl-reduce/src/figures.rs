//! Every figure of a reduction, counted, put in the report's shape: the sizes cut at, one way
//! of cutting's counts, and [`Figures`] (by the [`Counter`](crate::Counter) on one machine, or
//! summed from a cluster's partitions by [`assemble`](crate::assemble)).

use trawl_report::{
    CdcJson, CompressionJson, DedupCounts, DedupJson, HardLinks, ReductionJson, SampleJson,
    SizeBucket, TopFile,
};

use crate::attribution::RefBytes;
use crate::config::ReduceConfig;
use crate::dedup::ratio;
use crate::totals::Totals;

/// The sizes the reduction cuts at, in its order: the dedup sizes asked for, then the
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
    t: &crate::totals::WayTotals,
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
    /// What no key decides (compression's sums; the ways' counts are in `sizes` and `cdc`).
    pub(crate) totals: Totals,
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
                b.stored_bytes = Some(crate::attribution::whole_bytes(stored));
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
        let nonzero = logical - self.totals.zero_logical;
        let scale = if sampling && self.totals.sampled_logical > 0 {
            nonzero as f64 / self.totals.sampled_logical as f64
        } else {
            1.0
        };
        cfg.codecs
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let allocated = (self.totals.allocated[i] as f64 * scale).round() as u64
                    + self.totals.zero_allocated[i];
                // Codecs imply a unit index (see `cut_sizes`).
                let unique = self.combined[i];
                let combined = if sampling {
                    (unique as f64 / rate).round() as u64
                } else {
                    unique
                };
                let (sample, combined_sample) = match sampling {
                    true => self.intervals(cfg, nonzero, allocated, combined),
                    false => (None, None),
                };
                CompressionJson {
                    codec: c.name().into(),
                    level: c.level(),
                    implementation: c.implementation(),
                    unit: cfg.unit as u64,
                    sector: cfg.sector as u64,
                    threshold: cfg.threshold,
                    units: self.totals.units,
                    logical_bytes: logical,
                    compressed_bytes: (self.totals.compressed[i] as f64 * scale).round() as u64
                        + self.totals.zero_compressed[i],
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

    /// A sampled run's intervals, at 99%, of a codec's `allocated` bytes (of the `nonzero`
    /// logical bytes) and of its `combined` figure.
    fn intervals(
        &self,
        cfg: &ReduceConfig,
        nonzero: u64,
        allocated: u64,
        combined: u64,
    ) -> (Option<SampleJson>, Option<SampleJson>) {
        let rate = cfg.sample.unwrap_or(1.0);
        // An estimate of `value` within `hw` either side, at 99%.
        let interval = |value: u64, hw: f64| SampleJson {
            rate,
            kept: self.totals.sampled_units,
            confidence: 0.99,
            low: (value as f64 - hw).max(0.0).round() as u64,
            high: (value as f64 + hw).round() as u64,
        };
        let sample = {
            // Hoeffding: the mean allocated fraction of m units, each in [0, r].
            let r = (cfg.unit + cfg.sector) as f64 / cfg.unit as f64;
            let m = self.totals.sampled_units.max(1) as f64;
            let hw = r * ((2.0f64 / 0.01).ln() / (2.0 * m)).sqrt() * nonzero as f64;
            interval(allocated, hw)
        };
        // Distinct units kept by hash threshold at `rate`: the estimate sums each kept
        // unit's allocated size a over `rate`, whose variance is at most
        // (1 - rate) / rate * max(a) * the estimate (a <= unit + sector).
        let combined_sample = {
            let most = (cfg.unit + cfg.sector) as f64;
            let hw = 2.576 * ((1.0 - rate) / rate * most * combined as f64).sqrt();
            interval(combined, hw)
        };
        (Some(sample), Some(combined_sample))
    }
}
