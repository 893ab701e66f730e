//! What one file contributes to the reduction, as the reducer hands it to the accumulator.

/// One file's reduction facts, to be folded into a [`Counter`](crate::Counter).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileReduce {
    /// The file's (or part's) length in bytes.
    pub size: u64,
    /// XXH3-128 of each 4 KiB block (the last may be shorter), in order.
    pub fps: Vec<u128>,
    /// Whether each 4 KiB block is all zeros.
    pub zero: Vec<bool>,
    /// Per unit: (compressed bytes, allocated bytes) for each codec, codec-major.
    pub units: Vec<(u32, u32)>,
    /// CDC chunks: fingerprint, length, all zeros.
    pub chunks: Vec<(u128, u32, bool)>,
    /// The file's number from [`Counter::register`](crate::Counter::register), for the files contributing most
    /// duplicate bytes.
    pub file: Option<u32>,
    /// The format its first bytes show (a MIME type), in the part that has them.
    pub kind: Option<&'static str>,
}

impl FileReduce {
    /// Each block of `size` bytes (a multiple of 4 KiB) cut from the start, in order: its
    /// number, its fingerprint (made from its 4 KiB fingerprints), its length (the last block is
    /// as long as what is left) and whether it is all zeros.
    pub(crate) fn for_each_block(
        &self,
        size: usize,
        buf: &mut Vec<u8>,
        each: &mut dyn FnMut(usize, u128, u32, bool),
    ) {
        use crate::config::BASE;
        let n = self.fps.len();
        let last_len = if (self.size as usize).is_multiple_of(BASE) {
            BASE
        } else {
            self.size as usize % BASE
        };
        let k = size / BASE;
        for (g, group) in self.fps.chunks(k).enumerate() {
            let first = g * k;
            let len = if first + group.len() == n {
                (group.len() - 1) * BASE + last_len
            } else {
                group.len() * BASE
            };
            let zero = self.zero[first..first + group.len()].iter().all(|z| *z);
            each(
                g,
                crate::fingerprint::block_fp(group, buf),
                u32::try_from(len).expect("blocks are at most MAX_BLOCK"),
                zero,
            );
        }
    }
}

/// One unit's (compressed, allocated) sizes, per codec, added to the sums of each.
pub(crate) fn add_unit(compressed: &mut [u64], allocated: &mut [u64], sizes: &[(u32, u32)]) {
    for ((c, a), &(clen, alloc)) in compressed.iter_mut().zip(allocated.iter_mut()).zip(sizes) {
        *c += clen as u64;
        *a += alloc as u64;
    }
}
