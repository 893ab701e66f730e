//! The other way to insert fingerprints, measured: one key at a time into a hash table far
//! larger than the caches, with software prefetch, no staging. Same keys as `table_bench`
//! (N random 64-bit keys, DUP% of them repeats). Prints, on one thread:
//!
//! - `touch`: the floor, one read-modify-write of a random cache line per key in a table of the
//!   same size, prefetched DIST keys ahead;
//! - `bucket`: a bucketed table at the fingerprint table's density: 9 slots of 7 bytes (48-bit
//!   remainder, count byte) and a fill byte per 64-byte line, linear probing from line to line,
//!   the home line taken from the remainder; sized once for all the distinct keys (load 0.75 at
//!   the end), so it never grows: growth, the staging API and its callbacks are left out, and
//!   what is printed is an upper bound for such a table.
//!
//!     hash_probe N DUP_PERCENT [DIST]
//!
//! Kept as the measured reason the fingerprint table merges sorted batches instead (README,
//! "Data reduction").

use std::time::Instant;

#[path = "common/keys.rs"]
mod keys;

const REM_MASK: u64 = (1 << 48) - 1;
const SLOTS: usize = 9;

/// A populated anonymous mapping of `lines` 64-byte lines.
fn table(lines: usize) -> memmap2::MmapMut {
    let mut m = memmap2::MmapMut::map_anon(lines * 64).expect("map");
    // Written once, so that page faults are not counted in the rates.
    for i in (0..m.len()).step_by(4096) {
        m[i] = 0;
    }
    m
}

#[inline]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast(), std::arch::x86_64::_MM_HINT_T0)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let keys = keys::from_args(&args);
    let n = keys.len();
    let dist: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(16);
    // Distinct in the 48 bits this table keeps (a partitioned one would imply 8 more).
    let distinct = {
        let mut s: Vec<u64> = keys.iter().map(|k| (k >> 8 & REM_MASK).max(1)).collect();
        s.sort_unstable();
        s.dedup();
        s.len()
    };
    let lines = (distinct as f64 / 0.75 / SLOTS as f64) as usize + 64;
    let home = |k: u64| (((k >> 8 & REM_MASK) as u128 * (lines - 64) as u128) >> 48) as usize;

    let mut m = table(lines);
    let p = m.as_mut_ptr();
    let t0 = Instant::now();
    for i in 0..n {
        if i + dist < n {
            // SAFETY: `home(k) < lines`.
            prefetch(unsafe { p.add(home(keys[i + dist]) * 64) } as *const u8);
        }
        let k = keys[i];
        m[home(k) * 64 + (k & 63) as usize] += 1;
    }
    let touch = n as f64 / t0.elapsed().as_secs_f64() / 1e6;
    drop(m);

    let mut m = table(lines);
    let p = m.as_mut_ptr();
    let (mut new, mut extra_lines) = (0u64, 0u64);
    let t0 = Instant::now();
    for i in 0..n {
        if i + dist < n {
            // SAFETY: `home(k) < lines`.
            prefetch(unsafe { p.add(home(keys[i + dist]) * 64) } as *const u8);
        }
        let k = keys[i];
        let rem = (k >> 8 & REM_MASK).max(1);
        let mut b = home(k);
        loop {
            let line = &mut m[b * 64..b * 64 + 64];
            // A slot is 7 bytes, read as the low 7 of 8 (the ninth's eighth is the fill byte).
            let slot = |j: usize| u64::from_le_bytes(line[7 * j..7 * j + 8].try_into().unwrap());
            let mut hit = usize::MAX;
            for j in (0..SLOTS).rev() {
                if slot(j) >> 8 & REM_MASK == rem {
                    hit = j;
                }
            }
            if hit != usize::MAX {
                line[7 * hit] = line[7 * hit].saturating_add(1).min(254);
                break;
            }
            let fill = line[63] as usize;
            if fill < SLOTS {
                line[7 * fill..7 * fill + 7].copy_from_slice(&(rem << 8 | 1).to_le_bytes()[..7]);
                line[63] += 1;
                new += 1;
                break;
            }
            b += 1;
            extra_lines += 1;
            assert!(b < lines, "ran off the table's end");
        }
    }
    let bucket = n as f64 / t0.elapsed().as_secs_f64() / 1e6;
    assert_eq!(new as usize, distinct);
    println!(
        "hash_probe keys {n} distinct {distinct} dist {dist} touch_per_s {touch:.1}M bucket_inserts_per_s {bucket:.1}M load {:.2} bytes_per_distinct {:.2} extra_lines_per_key {:.3}",
        distinct as f64 / ((lines - 64) * SLOTS) as f64,
        (lines * 64) as f64 / distinct as f64,
        extra_lines as f64 / n as f64
    );
}
