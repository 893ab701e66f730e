//! Block fingerprints: XXH3-128 of a 4 KiB block, and of a larger block made of such blocks.

use xxhash_rust::xxh3::xxh3_128;

/// The fingerprint of a block made of these 4 KiB blocks: its own for one, else XXH3-128 of
/// their fingerprints, 16 bytes each (a 128 KiB block costs hashing 512 bytes).
pub(crate) fn block_fp(fps: &[u128], buf: &mut Vec<u8>) -> u128 {
    if let [one] = fps {
        return *one;
    }
    buf.clear();
    for fp in fps {
        buf.extend_from_slice(&fp.to_le_bytes());
    }
    xxh3_128(buf)
}

pub(crate) fn is_zero(b: &[u8]) -> bool {
    b.iter().fold(0u8, |a, &x| a | x) == 0
}
