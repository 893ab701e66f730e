//! The figures no key decides, summed: the one struct a reader's slot, the counter, a cluster
//! map and the report's assembly all add into (a new figure is added here, once).

use serde::{Deserialize, Serialize};

use crate::facts::add_unit;

/// One way of cutting's sums: blocks and bytes in all, and of zeros.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WayTotals {
    /// Blocks (or chunks) cut.
    pub blocks: u64,
    /// Their bytes.
    pub logical_bytes: u64,
    /// Blocks whose bytes are all zero.
    pub zero_blocks: u64,
    /// Their bytes.
    pub zero_bytes: u64,
}

impl WayTotals {
    /// Counts one block (or chunk) of `len` bytes, a zero one when `zero`.
    #[inline]
    pub(crate) fn add(&mut self, len: u64, zero: bool) {
        self.blocks += 1;
        self.logical_bytes += len;
        if zero {
            self.zero_blocks += 1;
            self.zero_bytes += len;
        }
    }

    fn merge(&mut self, o: &WayTotals) {
        self.blocks += o.blocks;
        self.logical_bytes += o.logical_bytes;
        self.zero_blocks += o.zero_blocks;
        self.zero_bytes += o.zero_bytes;
    }
}

/// What no key decides, summed over some files: per way of cutting (each size, then CDC
/// chunks), its [`WayTotals`]; chunk sizes by power of two; and per codec, the compressed and
/// allocated bytes of the non-zero units and of the zero ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Per way of cutting, in the order the reduction cuts.
    pub ways: Vec<WayTotals>,
    /// CDC chunks by size: index k counts chunks of 2^k to 2^(k+1)-1 bytes.
    pub chunk_sizes: Vec<u64>,
    /// Compression units cut.
    pub units: u64,
    /// Per codec: compressed bytes of the non-zero units (of the sample, when sampled).
    pub compressed: Vec<u64>,
    /// Per codec: their allocated bytes (sector-rounded, threshold applied).
    pub allocated: Vec<u64>,
    /// Per codec: compressed bytes of the zero units.
    pub zero_compressed: Vec<u64>,
    /// Per codec: allocated bytes of the zero units.
    pub zero_allocated: Vec<u64>,
    /// Bytes of the zero units.
    pub zero_logical: u64,
    /// Non-zero units in the sample (a sampled run; otherwise 0).
    #[serde(default)]
    pub sampled_units: u64,
    /// Their bytes.
    #[serde(default)]
    pub sampled_logical: u64,
}

impl Totals {
    /// Zero sums for `ways` ways of cutting and `ncodec` codecs.
    pub(crate) fn new(ways: usize, ncodec: usize) -> Totals {
        Totals {
            ways: vec![WayTotals::default(); ways],
            chunk_sizes: vec![0; 64],
            compressed: vec![0; ncodec],
            allocated: vec![0; ncodec],
            zero_compressed: vec![0; ncodec],
            zero_allocated: vec![0; ncodec],
            ..Totals::default()
        }
    }

    /// Adds `o`'s sums to these (of the same shape).
    pub(crate) fn merge(&mut self, o: &Totals) {
        for (a, b) in self.ways.iter_mut().zip(&o.ways) {
            a.merge(b);
        }
        let add = |a: &mut Vec<u64>, b: &Vec<u64>| a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        add(&mut self.chunk_sizes, &o.chunk_sizes);
        add(&mut self.compressed, &o.compressed);
        add(&mut self.allocated, &o.allocated);
        add(&mut self.zero_compressed, &o.zero_compressed);
        add(&mut self.zero_allocated, &o.zero_allocated);
        self.zero_logical += o.zero_logical;
        self.sampled_units += o.sampled_units;
        self.sampled_logical += o.sampled_logical;
        self.units += o.units;
    }

    /// Counts one CDC chunk of `len` bytes in way `w` (the last) and in the chunk sizes.
    #[inline]
    pub(crate) fn add_chunk(&mut self, w: usize, len: u64, zero: bool) {
        self.chunk_sizes[63 - len.max(1).leading_zeros() as usize] += 1;
        self.ways[w].add(len, zero);
    }

    /// Adds one compression unit of `len` bytes, with its per-codec (compressed, allocated)
    /// sizes, to the zero or the non-zero sums.
    pub(crate) fn add_unit(&mut self, len: u64, zero: bool, sizes: &[(u32, u32)]) {
        self.units += 1;
        if zero {
            add_unit(&mut self.zero_compressed, &mut self.zero_allocated, sizes);
            self.zero_logical += len;
        } else {
            add_unit(&mut self.compressed, &mut self.allocated, sizes);
        }
    }
}
