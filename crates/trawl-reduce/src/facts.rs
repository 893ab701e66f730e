//! What one file contributes to the reduction, as the reducer hands it to the accumulator.

/// One file's reduction facts, to be folded into an [`Accumulator`](crate::Accumulator).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileReduce {
    pub size: u64,
    /// XXH3-128 of each 4 KiB block (the last may be shorter), in order.
    pub fps: Vec<u128>,
    /// Whether each 4 KiB block is all zeros.
    pub zero: Vec<bool>,
    /// Per unit: (compressed bytes, allocated bytes) for each codec, codec-major.
    pub units: Vec<(u32, u32)>,
    /// CDC chunks: fingerprint, length, all zeros.
    pub chunks: Vec<(u128, u32, bool)>,
    /// The file's number from [`Accumulator::register`](crate::Accumulator::register), for the files contributing most
    /// duplicate bytes.
    pub file: Option<u32>,
    /// The format its first bytes show (a MIME type), in the part that has them.
    pub kind: Option<&'static str>,
}
