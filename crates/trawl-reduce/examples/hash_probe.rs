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
//!   what is printed is an upper bound for such a table;
//! - `radix`: the reference design: every key partitioned first, then each partition counted in a
//!   cache-sized table: 8 bytes per key scanned, whatever the number of distinct keys.
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

/// Asks for line `line` of `m` ahead of its use.
#[inline]
fn prefetch(m: &[u8], line: usize) {
    let p = m[line * 64..].as_ptr();
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast(), std::arch::x86_64::_MM_HINT_T0)
    }
}

/// Long on purpose: a measurement, start to end, in one body; the cases it times are read top
/// to bottom.
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
    let t0 = Instant::now();
    for i in 0..n {
        if let Some(&ahead) = keys.get(i + dist) {
            prefetch(&m, home(ahead));
        }
        let k = keys[i];
        m[home(k) * 64 + (k & 63) as usize] += 1;
    }
    let touch = n as f64 / t0.elapsed().as_secs_f64() / 1e6;
    drop(m);

    let mut m = table(lines);
    let (mut new, mut extra_lines) = (0u64, 0u64);
    let t0 = Instant::now();
    for i in 0..n {
        if let Some(&ahead) = keys.get(i + dist) {
            prefetch(&m, home(ahead));
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
    drop(m);

    // The reference design: every key, repeats included, partitioned first by its top 12 bits,
    // then each partition counted in an open-addressing table that fits the cache (remainder
    // and count in a u64, load at most 0.5). It holds 8 bytes per key scanned, not per distinct
    // key, until the last partition is counted.
    const RADIX: u32 = 12;
    let t0 = Instant::now();
    let mut start = vec![0usize; (1 << RADIX) + 1];
    for &k in &keys {
        start[(k >> (64 - RADIX)) as usize + 1] += 1;
    }
    for i in 1..start.len() {
        start[i] += start[i - 1];
    }
    let mut parted = vec![0u64; n];
    let mut at = start.clone();
    for &k in &keys {
        let p = (k >> (64 - RADIX)) as usize;
        parted[at[p]] = k;
        at[p] += 1;
    }
    let largest = start.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    let mut table = vec![0u64; (largest * 2).next_power_of_two().max(2)];
    let mut found = 0usize;
    for w in start.windows(2) {
        let part = &parted[w[0]..w[1]];
        let mask = (part.len() * 2).next_power_of_two().max(2) - 1;
        table[..=mask].fill(0);
        for &k in part {
            let rem = (k >> 8 & REM_MASK).max(1);
            let mut h = rem as usize & mask;
            loop {
                let s = table[h];
                if s == 0 {
                    table[h] = rem << 16 | 1;
                    found += 1;
                    break;
                }
                if s >> 16 == rem {
                    table[h] = s + ((s & 0xffff) < 0xffff) as u64;
                    break;
                }
                h = (h + 1) & mask;
            }
        }
    }
    let radix = n as f64 / t0.elapsed().as_secs_f64() / 1e6;
    // The radix run keeps 12 + 48 bits: a few more keys than the 48-bit tables may be distinct.
    assert!(found >= distinct);
    println!(
        "hash_probe keys {n} distinct {distinct} dist {dist} touch_per_s {touch:.1}M bucket_inserts_per_s {bucket:.1}M radix_inserts_per_s {radix:.1}M load {:.2} bytes_per_distinct {:.2} radix_bytes_per_distinct {:.2} extra_lines_per_key {:.3}",
        distinct as f64 / ((lines - 64) * SLOTS) as f64,
        (lines * 64) as f64 / distinct as f64,
        (n * 8) as f64 / found as f64,
        extra_lines as f64 / n as f64
    );
}
