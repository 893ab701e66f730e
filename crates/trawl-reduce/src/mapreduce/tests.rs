//! The unit tests of `mapreduce`.

use super::*;
use crate::codec::Codec;
use crate::tests::data;
use crate::{Accumulator, FileReducer};

/// Files with duplicates inside and across them, zero runs, short tails, compressible
/// text and empty files.
fn files() -> Vec<(String, Vec<u8>)> {
    let shared = data(300_000, 1);
    let text: Vec<u8> = b"the quick brown fox jumps over the lazy dog\n"
        .iter()
        .copied()
        .cycle()
        .take(200_000)
        .collect();
    let mut out = Vec::new();
    for i in 0..24u64 {
        let mut d = data(10_000 + (i as usize * 7919) % 90_000, 100 + i);
        if i % 2 == 0 {
            d.extend_from_slice(&shared[..(i as usize + 1) * 8192]);
        }
        if i % 3 == 0 {
            d.extend(vec![0u8; 65_536 + i as usize * 100]);
        }
        if i % 4 == 0 {
            d.extend_from_slice(&text);
        }
        if i % 5 == 0 {
            d.extend_from_slice(&shared);
        }
        out.push((format!("d{}/f{i:02}", i % 3), d));
    }
    out.push(("empty".into(), Vec::new()));
    out.push(("copy".into(), out[4].1.clone()));
    out
}

fn cfg() -> Arc<ReduceConfig> {
    Arc::new(ReduceConfig {
        dedup_sizes: vec![4096, 16384, 65536],
        cdc_avg: Some(8192),
        codecs: vec![Codec::Lz4, Codec::Zstd(1)],
        top_files: 5,
        breakdown: Some(crate::config::BreakdownConfig {
            depth: 1,
            roots: vec![b"d0".to_vec(), b"d1".to_vec(), b"d2".to_vec()],
        }),
        ..ReduceConfig::default()
    })
}

fn facts(cfg: &Arc<ReduceConfig>, id: u32, d: &[u8]) -> FileReduce {
    let mut r = FileReducer::new(cfg.clone()).with_file(id);
    for p in d.chunks(65_536) {
        r.update(p);
    }
    r.finish()
}

fn one_machine(
    cfg: &Arc<ReduceConfig>,
    files: &[(String, Vec<u8>)],
) -> (ReductionJson, Option<Breakdown>) {
    let mut acc = Accumulator::new(cfg.clone());
    for (name, d) in files {
        let id = acc.register(std::path::Path::new(name));
        acc.add(&facts(cfg, id, d)).unwrap();
    }
    acc.finish().unwrap();
    (acc.report(), acc.breakdown())
}

fn cluster(
    cfg: &Arc<ReduceConfig>,
    files: &[(String, Vec<u8>)],
    shards: usize,
    partitions: u32,
) -> ((ReductionJson, Option<Breakdown>), usize) {
    let mut maps = Vec::new();
    for shard in files.chunks(files.len().div_ceil(shards)) {
        let mut acc = Accumulator::mapping(cfg.clone(), partitions);
        for (name, d) in shard {
            let id = acc.register(std::path::Path::new(name));
            acc.add(&facts(cfg, id, d)).unwrap();
        }
        acc.finish().unwrap();
        maps.push(acc.take_map().unwrap());
    }
    let wire: usize = maps.iter().flat_map(|m| &m.partitions).map(Vec::len).sum();
    let parts: Vec<PartitionResult> = (0..partitions as usize)
        .map(|q| {
            let blobs: Vec<&[u8]> = maps.iter().map(|m| &m.partitions[q][..]).collect();
            reduce_partition(&blobs).unwrap()
        })
        .collect();
    let totals: Vec<MapTotals> = maps.into_iter().map(|m| m.totals).collect();
    (assemble(cfg, &totals, &parts).unwrap(), wire)
}

#[test]
fn a_cluster_counts_every_figure_as_one_machine_does() {
    let files = files();
    for cfg in [
        cfg(),
        // No codecs and a unit size not among the dedup sizes; no attribution.
        Arc::new(ReduceConfig {
            dedup_sizes: vec![8192],
            codecs: vec![],
            cdc_avg: None,
            top_files: 0,
            ..ReduceConfig::default()
        }),
        // The unit size not among the dedup sizes, with codecs.
        Arc::new(ReduceConfig {
            dedup_sizes: vec![4096],
            codecs: vec![Codec::Gzip(1)],
            top_files: 3,
            ..ReduceConfig::default()
        }),
    ] {
        let one = one_machine(&cfg, &files);
        assert!(one.0.dedup[0].counts.unique_blocks < one.0.dedup[0].counts.blocks);
        assert_eq!(one.1.is_some(), cfg.breakdown.is_some());
        for (shards, partitions) in [(1, 1), (3, 16), (5, 256), (26, 7)] {
            let (many, _) = cluster(&cfg, &files, shards, partitions);
            assert_eq!(many, one, "{shards} shards, {partitions} partitions");
        }
    }
    let (one, breakdown) = one_machine(&cfg(), &files);
    assert_eq!(one.top_files.as_ref().unwrap().len(), 5);
    assert!(one.dedup[0].counts.references.len() >= 3);
    let b = breakdown.unwrap();
    assert!(b.directories.len() >= 3 && !b.types.is_empty());
}

#[test]
fn a_partition_from_another_configuration_or_version_is_refused() {
    let files = files();
    let mut a = Accumulator::mapping(cfg(), 4);
    a.add(&facts(&cfg(), 0, &files[0].1)).unwrap();
    let a = a.take_map().unwrap();
    let other = Arc::new(ReduceConfig {
        dedup_sizes: vec![4096],
        ..ReduceConfig::default()
    });
    let mut b = Accumulator::mapping(other.clone(), 4);
    b.add(&facts(&other, 0, &files[1].1)).unwrap();
    let b = b.take_map().unwrap();
    assert!(matches!(
        reduce_partition(&[&a.partitions[0], &b.partitions[0]]),
        Err(ReduceError::Ways { map: 1, .. })
    ));
    // A batch header's version byte sits after its magic.
    let mut newer = a.partitions[1].clone();
    let at = newer.windows(3).position(|w| w == b"TRB").unwrap() + 3;
    newer[at] += 1;
    assert_eq!(
        reduce_partition(&[&a.partitions[1], &newer]),
        Err(ReduceError::Batch {
            map: 1,
            source: BatchError::Version {
                found: crate::batch::BATCH_VERSION + 1
            }
        })
    );
}

/// One generated file: pieces from a few seeds (so that blocks repeat within and across
/// files, at any alignment), zero runs and text, each of a length that leaves short tails.
fn generated(pieces: &[(u8, u8, u16)]) -> Vec<u8> {
    let mut d = Vec::new();
    for &(kind, seed, len) in pieces {
        let len = usize::from(len);
        match kind % 4 {
            0 => d.extend_from_slice(&data(len, u64::from(seed % 6) + 1)),
            1 => d.extend(std::iter::repeat_n(0u8, len)),
            2 => d.extend(b"abcdefgh".iter().copied().cycle().take(len)),
            _ => d.extend_from_slice(&data(len.max(4096) / 4096 * 4096, u64::from(seed % 3) + 9)),
        }
    }
    d
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

    /// Over generated trees, shard counts and partition counts, a cluster's figures are one
    /// machine's, every one of them (the fixed cases above, generalised).
    #[test]
    fn over_generated_trees_a_cluster_counts_as_one_machine_does(
        tree in proptest::collection::vec(
            proptest::collection::vec((0u8..4, 0u8..6, 1u16..40_000), 0..6),
            1..10,
        ),
        shards in 1usize..12,
        partitions in 1u32..40,
        which in 0usize..3,
    ) {
        let files: Vec<(String, Vec<u8>)> = tree
            .iter()
            .enumerate()
            .map(|(i, p)| (format!("d{}/f{i}", i % 3), generated(p)))
            .collect();
        let cfg = match which {
            0 => cfg(),
            1 => Arc::new(ReduceConfig {
                dedup_sizes: vec![8192],
                codecs: vec![],
                cdc_avg: None,
                top_files: 0,
                ..ReduceConfig::default()
            }),
            _ => Arc::new(ReduceConfig {
                dedup_sizes: vec![4096],
                codecs: vec![Codec::Gzip(1)],
                top_files: 3,
                ..ReduceConfig::default()
            }),
        };
        let one = one_machine(&cfg, &files);
        let (many, _) = cluster(&cfg, &files, shards.min(files.len()), partitions);
        proptest::prop_assert_eq!(many, one);
    }
}
