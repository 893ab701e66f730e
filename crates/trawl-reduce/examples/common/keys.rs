//! The keys the table benchmarks insert, from their first two arguments: N random 64-bit keys
//! (default 64 million), each a repeat of an earlier one with probability DUP percent (default 20).

use xxhash_rust::xxh3::xxh3_64;

/// The keys, from `args[1]` and `args[2]`.
pub fn from_args(args: &[String]) -> Vec<u64> {
    let n: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(64_000_000);
    let dup: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20);
    (0..n)
        .map(|i| {
            let r = xxh3_64(&i.to_le_bytes());
            let src = if r % 100 < dup && i > 0 { r % i } else { i };
            xxh3_64(&(src ^ 0x5eed).to_le_bytes())
        })
        .collect()
}
