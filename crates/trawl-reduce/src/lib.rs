//! Data reduction from the scan's own buffers: fixed-block dedup at several block sizes from one
//! hash pass, content-defined chunking (FastCDC 2020), compression per unit with real codecs, and
//! the combined figure a deduplicating, compressing array would show.
//!
//! The face, in the data's order:
//! - [`ReduceConfig`] (with [`Codec`] and [`BreakdownConfig`]): what to measure.
//! - [`FileReducer`] consumes one file's bytes in order (a scan lane: it runs on the thread that
//!   owns the file, a large file's pieces spread over the rayon pool) and returns a compact
//!   [`FileReduce`]: one XXH3-128 fingerprint per 4 KiB block, per-unit compressed sizes, and CDC
//!   chunk fingerprints.
//! - [`Counter`] folds those into the global counts, from many readers at once, partitioned by
//!   key; its result is order-independent (a set of fingerprints, and sizes that depend only on
//!   content), so any scan order, thread count or partition count gives the same report. Its
//!   documentation states the counting rules; [`Contention`] says how often readers waited.
//! - The same split across machines: a map's [`MapOutput`] (its [`MapTotals`] and one batch set
//!   per partition), [`reduce_partition`] counting one partition from every map's batch, and
//!   [`assemble`] summing partitions and totals into one machine's figures.
//!
//! Inside: `reducer` (one file's bytes to facts), `spread` (a large piece's over the pool),
//! `index` (distinct fingerprints, staged and flushed), `dedup` (distinct records per way of
//! cutting), `short` (keys the same at every size, stored once), `attribution` (which files hold
//! the duplicates), `slot` (a reader's staging), `partition` (the key partitions the slots hand
//! records to), `counter`, `totals` (the sums no key decides), `figures` (the report's shape),
//! `mapreduce`, `batch` (the wire form of a partition's records), `codec`, `spill`, `table` (the
//! fingerprint table) and `breakdown` (by directory and type).
#![deny(missing_docs)]

#[cfg(test)]
mod accumulator;
mod attribution;
mod batch;
mod breakdown;
mod codec;
mod config;
mod counter;
mod dedup;
mod facts;
mod figures;
mod fingerprint;
mod index;
mod lane;
mod mapreduce;
mod partition;
mod reducer;
mod short;
mod slot;
mod spill;
mod spread;
mod table;
mod totals;

#[cfg(test)]
pub(crate) use accumulator::Accumulator;
pub use batch::BATCH_VERSION;
pub use codec::{Codec, Compressor};
pub use config::{BASE, BreakdownConfig, ReduceConfig, SizeCache};
pub use counter::{Contention, Counter};
pub use facts::FileReduce;
pub use mapreduce::{
    MapOutput, MapTotals, Mapper, PartitionResult, ReduceError, assemble, reduce_partition,
};
pub use reducer::FileReducer;
pub use totals::{Totals, WayTotals};

/// The fingerprint table, for `examples/table_bench.rs` (it measures the table alone); not part
/// of the face.
#[doc(hidden)]
pub mod bench {
    pub use crate::table::{FpTable, stage_word};
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use xxhash_rust::xxh3::xxh3_128;

    use super::*;
    use crate::fingerprint::is_zero;

    fn reduce(cfg: &Arc<ReduceConfig>, data: &[u8], pieces: usize) -> FileReduce {
        let mut r = FileReducer::new(cfg.clone());
        for p in data.chunks(pieces.max(1)) {
            r.update(p);
        }
        r.finish()
    }

    /// Pseudo-random bytes (xorshift): the same for the same seed.
    pub(crate) fn data(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn chunks_are_those_of_one_fastcdc_pass_over_the_file_whatever_the_read_sizes() {
        let cfg = Arc::new(ReduceConfig {
            cdc_avg: Some(4096),
            codecs: vec![],
            ..ReduceConfig::default()
        });
        let (min, avg, max) = cfg.cdc_bounds().unwrap();
        // Random bytes (cuts by content), zeros (cuts at `min`), a byte that never cuts (every
        // chunk `max` long), and all three one after another.
        let mut mixed = data(100_000, 7);
        mixed.extend(vec![0u8; 50_000]);
        mixed.extend(vec![0x7bu8; 70_003]);
        mixed.extend(data(33_333, 8));
        let files = [
            data(200_001, 9),
            vec![0u8; 100_000],
            vec![0x7bu8; 70_003],
            mixed,
            data(100, 1),
            vec![],
        ];
        for f in &files {
            let want: Vec<(u128, u32, bool)> = fastcdc::v2020::FastCDC::new(f, min, avg, max)
                .map(|c| {
                    let d = &f[c.offset..c.offset + c.length];
                    (xxh3_128(d), c.length as u32, is_zero(d))
                })
                .collect();
            for piece in [1, 7, 1000, 1024, 4096, 16384, 16385, 65536, 1 << 20] {
                assert_eq!(reduce(&cfg, f, piece).chunks, want, "pieces of {piece}");
            }
        }
        let steady = fastcdc::v2020::FastCDC::new(&files[2], min, avg, max);
        assert!(
            steady.take(4).all(|c| c.length == max),
            "a chunk reaches max"
        );
    }

    #[test]
    fn the_same_facts_whatever_the_read_sizes() {
        let cfg = Arc::new(ReduceConfig {
            cdc_avg: Some(8192),
            codecs: vec![Codec::Lz4, Codec::Zstd(1)],
            ..ReduceConfig::default()
        });
        let d = data(300_001, 5);
        let a = reduce(&cfg, &d, 1 << 20);
        for piece in [1, 1000, 4096, 65536] {
            assert_eq!(reduce(&cfg, &d, piece), a, "pieces of {piece}");
        }
        assert_eq!(a.fps.len(), 300_001usize.div_ceil(4096));
        assert_eq!(a.units.len(), 300_001usize.div_ceil(32768) * 2);
        assert_eq!(
            a.chunks.iter().map(|c| c.1 as u64).sum::<u64>(),
            300_001,
            "chunks cover the file"
        );
    }

    #[test]
    fn unique_figures_settled_at_flushes_do_not_depend_on_repeats() {
        // Under test the staging flushes every few hundred keys, so these files cross many
        // flushes, with short last blocks, chunks and units kept aside until each one.
        for exact_keys in [false, true] {
            let cfg = Arc::new(ReduceConfig {
                dedup_sizes: vec![4096, 65536],
                cdc_avg: Some(8192),
                codecs: vec![Codec::Lz4],
                exact_keys,
                ..ReduceConfig::default()
            });
            let a = data(3_000_001, 1);
            let b = data(2_500_003, 2);
            let run = |files: &[&[u8]]| {
                let mut acc = Accumulator::new(cfg.clone());
                for f in files {
                    acc.add(&reduce(&cfg, f, 1 << 16)).unwrap();
                }
                acc.finish().unwrap();
                acc.report()
            };
            let once = run(&[&a, &b]);
            let again = run(&[&a, &b, &b, &a, &b]);
            // Random data: every block, chunk and unit of a and b is unique.
            for d in &once.dedup {
                assert_eq!(d.counts.unique_blocks, d.counts.blocks);
                assert_eq!(d.counts.unique_bytes, 5_500_004);
            }
            let c = &once.compression[0];
            assert_eq!(c.combined_allocated_bytes, c.allocated_bytes);
            // Repeats add logical bytes and nothing unique.
            for (x, y) in once.dedup.iter().zip(&again.dedup) {
                assert_eq!(y.counts.logical_bytes, 2 * 3_000_001 + 3 * 2_500_003);
                assert_eq!(
                    (y.counts.unique_blocks, y.counts.unique_bytes),
                    (x.counts.unique_blocks, x.counts.unique_bytes),
                );
            }
            let (x, y) = (once.cdc.as_ref().unwrap(), again.cdc.as_ref().unwrap());
            assert_eq!(y.counts.unique_bytes, x.counts.unique_bytes);
            assert_eq!(y.counts.unique_blocks, x.counts.unique_blocks);
            assert_eq!(
                again.compression[0].combined_allocated_bytes,
                c.combined_allocated_bytes
            );
        }
    }

    #[test]
    fn without_codecs_no_index_is_kept_for_the_unit_size() {
        let d = data(1_000_000, 3);
        for (codecs, tables) in [(vec![], 1), (vec![Codec::Lz4], 2)] {
            let cfg = Arc::new(ReduceConfig {
                dedup_sizes: vec![4096],
                codecs,
                ..ReduceConfig::default()
            });
            let mut acc = Accumulator::new(cfg.clone());
            acc.add(&reduce(&cfg, &d, 65536)).unwrap();
            acc.finish().unwrap();
            let c = Counter::new(cfg.clone());
            assert_eq!(c.ways(), tables);
            let r = acc.report();
            assert_eq!(r.dedup.len(), 1);
            assert_eq!(r.dedup[0].counts.unique_blocks, 1_000_000u64.div_ceil(4096));
        }
    }

    #[test]
    fn flushing_a_large_file_in_parts_changes_no_figure() {
        let mk = |flush: usize| {
            Arc::new(ReduceConfig {
                dedup_sizes: vec![4096, 12288, 131072],
                cdc_avg: Some(8192),
                codecs: vec![Codec::Lz4],
                flush_blocks: flush,
                ..ReduceConfig::default()
            })
        };
        let mut d = data(3_000_000, 11);
        d.extend_from_slice(&d.clone()[..1_000_000]);
        d.extend(std::iter::repeat_n(0u8, 300_001));
        let whole = {
            let cfg = mk(usize::MAX);
            let mut acc = Accumulator::new(cfg.clone());
            acc.add(&reduce(&cfg, &d, 100_000)).unwrap();
            acc.finish().unwrap();
            acc.report()
        };
        let cfg = mk(100);
        let counter = Arc::new(Counter::new(cfg.clone()));
        let mut r = FileReducer::new(cfg.clone()).with_counter(counter.clone());
        for p in d.chunks(100_000) {
            r.update(p);
        }
        let rest = r.finish();
        assert!(rest.fps.len() < 1000, "flushed along the way");
        counter.add(&rest);
        counter.finish().unwrap();
        assert_eq!(counter.report(), whole);
        assert_eq!(cfg.group(), 96);
    }

    #[test]
    fn cdc_finds_shifted_duplicates_that_fixed_blocks_miss() {
        let cfg = Arc::new(ReduceConfig {
            dedup_sizes: vec![4096],
            cdc_avg: Some(4096),
            codecs: vec![],
            ..ReduceConfig::default()
        });
        let d = data(1 << 20, 9);
        let mut shifted = vec![1u8; 1000];
        shifted.extend_from_slice(&d);
        let mut acc = Accumulator::new(cfg.clone());
        acc.add(&reduce(&cfg, &d, 1 << 16)).unwrap();
        acc.add(&reduce(&cfg, &shifted, 1 << 16)).unwrap();
        acc.finish().unwrap();
        let r = acc.report();
        let fixed = &r.dedup[0];
        assert!(fixed.counts.ratio.unwrap() < 1.01, "{fixed:?}");
        let cdc = r.cdc.unwrap();
        assert!(cdc.counts.ratio.unwrap() > 1.8, "{cdc:?}");
    }

    #[test]
    fn derived_fingerprints_match_direct_dedup_counts() {
        // Two files made of the same 8 KiB blocks in other orders: at 8K all dedup, at 16K not.
        let a = data(8192, 1);
        let b = data(8192, 2);
        let f1 = [a.clone(), b.clone(), a.clone(), b.clone()].concat();
        let f2 = [b.clone(), a.clone(), b.clone(), a.clone()].concat();
        let cfg = Arc::new(ReduceConfig {
            dedup_sizes: vec![4096, 8192, 16384],
            codecs: vec![],
            ..ReduceConfig::default()
        });
        let mut acc = Accumulator::new(cfg.clone());
        acc.add(&reduce(&cfg, &f1, 5000)).unwrap();
        acc.add(&reduce(&cfg, &f2, 7000)).unwrap();
        acc.finish().unwrap();
        let r = acc.report();
        assert_eq!(r.dedup[1].counts.unique_blocks, 2);
        assert_eq!(r.dedup[2].counts.unique_blocks, 2, "ab and ba");
        assert_eq!(r.dedup[0].counts.unique_blocks, 4);
    }
}
