//! A large piece's fixed-size facts (block fingerprints, zero flags, the units' compressed
//! sizes) worked out over the rayon pool in segments, each written where it lies in file order.

use std::cell::RefCell;

use xxhash_rust::xxh3::xxh3_128;

use crate::codec::Compressor;
use crate::config::{BASE, ReduceConfig};
use crate::fingerprint::is_zero;
use crate::reducer::unit_sizes;

/// Below this a piece is reduced on the lane's own thread: spreading it costs more than it saves
/// (as for BLAKE3's tree).
pub(crate) const SPREAD_MIN: usize = 256 * 1024;

/// The most bytes one task takes (rounded down to whole units, at least one).
const SEGMENT: usize = 256 * 1024;

thread_local! {
    /// A pool thread's compressors, kept for its next segments: making a zstd context costs more
    /// than compressing a segment.
    static WORKER: RefCell<Vec<Compressor>> = const { RefCell::new(Vec::new()) };
}

/// Whether the pool has more than one thread to spread a piece over (it starts on the first
/// call).
pub(crate) fn pool_has_room() -> bool {
    rayon_core::current_num_threads() > 1
}

/// Fills `fps` and `zero` (one for each 4 KiB block of `data`) and `units` (one per codec for
/// each unit, codec-major) for `data`, a whole number of units that starts at a unit's
/// boundary in its file: the facts one pass in order gives, worked out in segments over the
/// pool.
pub(crate) fn spread(
    cfg: &ReduceConfig,
    data: &[u8],
    mut fps: &mut [u128],
    mut zero: &mut [bool],
    mut units: &mut [(u32, u32)],
) {
    let (unit, n) = (cfg.unit, cfg.codecs.len());
    debug_assert!(data.len().is_multiple_of(unit));
    // One segment per pool thread, at most SEGMENT: a mapped window is many segments, which
    // the threads share out as they get free (beside BLAKE3's work in the same pool).
    let threads = rayon_core::current_num_threads().max(1);
    let per = (data.len() / unit).div_ceil(threads).min(SEGMENT / unit);
    let seg = per.max(1) * unit;
    rayon_core::scope(|s| {
        for d in data.chunks(seg) {
            let (f, rest) = std::mem::take(&mut fps).split_at_mut(d.len() / BASE);
            fps = rest;
            let (z, rest) = std::mem::take(&mut zero).split_at_mut(d.len() / BASE);
            zero = rest;
            let (u, rest) = std::mem::take(&mut units).split_at_mut(d.len() / unit * n);
            units = rest;
            s.spawn(move |_| segment(cfg, d, f, z, u));
        }
    });
}

/// One segment's facts, on a pool thread with its own compressors.
fn segment(
    cfg: &ReduceConfig,
    data: &[u8],
    fps: &mut [u128],
    zero: &mut [bool],
    units: &mut [(u32, u32)],
) {
    for ((b, f), z) in data.chunks_exact(BASE).zip(fps.iter_mut()).zip(zero) {
        *f = xxh3_128(b);
        *z = is_zero(b);
    }
    let n = cfg.codecs.len();
    if n == 0 {
        return;
    }
    WORKER.with(|w| {
        let mut c = w.borrow_mut();
        if !c
            .iter()
            .map(Compressor::codec)
            .eq(cfg.codecs.iter().copied())
        {
            *c = cfg.codecs.iter().map(|x| Compressor::new(*x)).collect();
        }
        let k = cfg.unit / BASE;
        let each = data.chunks_exact(cfg.unit).zip(units.chunks_exact_mut(n));
        for (i, (u, out)) in each.enumerate() {
            unit_sizes(cfg, &mut c, &fps[i * k..(i + 1) * k], u, out);
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::tests::data;
    use crate::{Codec, FileReduce, FileReducer, ReduceConfig};

    /// Random bytes with what the facts must get right at segment edges: zero runs (one
    /// crossing units), text that compresses, units and blocks repeated (the size cache) and an
    /// odd tail.
    fn bytes() -> Vec<u8> {
        let mut d = data(400_000, 1);
        d.extend(std::iter::repeat_n(0u8, 200_000));
        d.extend(b"the fixity of the archive\n".repeat(12_000));
        let again = d[65_536..65_536 + 98_304].to_vec();
        d.extend_from_slice(&again);
        d.extend_from_slice(&data(300_000, 2));
        d.extend(std::iter::repeat_n(0u8, 40_960));
        d.extend_from_slice(&again);
        d.extend_from_slice(&data(12_345, 3));
        d
    }

    /// The facts of `d` fed in pieces of the sizes in turn, in a pool of four threads
    /// (whatever the machine's cores), with a size cache of their own.
    fn facts(cfg: &ReduceConfig, d: &[u8], sizes: &[usize], parallel: bool) -> FileReduce {
        let cfg = Arc::new(ReduceConfig {
            size_cache: Arc::default(),
            ..cfg.clone()
        });
        let pool = rayon_core::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap();
        pool.install(|| {
            let mut r = FileReducer::new(cfg).with_parallel(parallel);
            let (mut at, mut i) = (0, 0);
            while at < d.len() {
                let n = sizes[i % sizes.len()].min(d.len() - at);
                r.update(&d[at..at + n]);
                (at, i) = (at + n, i + 1);
            }
            r.finish()
        })
    }

    #[test]
    fn facts_spread_over_the_pool_are_those_of_one_pass_in_order_for_any_pieces() {
        let d = bytes();
        let odd = [300_001, 7, 4096, 262_144, 524_289, 1, 1 << 20];
        // Whole blocks, not always whole units, before a large piece.
        let blocks = [12_288, 256 << 10, 20_480, 512 << 10];
        let patterns: [&[usize]; 4] = [&odd, &blocks, &[1 << 20], &[d.len()]];
        let configs = [
            (vec![Codec::Lz4], None, None),
            (vec![Codec::Zstd(3)], Some(16 << 10), None),
            (vec![Codec::Lz4, Codec::Zstd(1)], Some(8 << 10), Some(0.5)),
            (vec![Codec::Lz4], None, None),
            (vec![], None, None),
            (vec![Codec::Lz4], None, None),
        ];
        // The fourth with a unit of 64 KiB, the last with one of 1 MiB (larger than the slice
        // the passes in order take at a time).
        for (i, (codecs, cdc_avg, sample)) in configs.into_iter().enumerate() {
            let cfg = ReduceConfig {
                codecs,
                cdc_avg,
                sample,
                unit: match i {
                    3 => 64 << 10,
                    5 => 1 << 20,
                    _ => 32 << 10,
                },
                ..ReduceConfig::default()
            };
            let want = facts(&cfg, &d, &[1000], false);
            assert_eq!(want.fps.len(), d.len().div_ceil(4096));
            // Spread, in every pattern; in order, in pieces other than the reference's (odd
            // ones, and the whole at once: passes taken a slice at a time).
            let whole = [d.len()];
            let runs = patterns
                .iter()
                .map(|p| (*p, true))
                .chain([(&odd[..], false), (&whole[..], false)]);
            for (sizes, parallel) in runs {
                let got = facts(&cfg, &d, sizes, parallel);
                let what = format!("{:?} {sizes:?} parallel {parallel}", cfg.codecs);
                assert_eq!(got.fps, want.fps, "{what}");
                assert_eq!(got.zero, want.zero, "{what}");
                assert_eq!(got.units, want.units, "{what}");
                assert_eq!(got, want, "{what}");
            }
        }
    }
}
