//! Digest algorithms: names, hex widths, and incremental hashers over byte chunks.
//!
//! Every algorithm is a real, well-kept crate (`sha2`/`sha1`/`md-5` with SHA-NI detected at run time,
//! `sha3`, `blake2`, `blake3` with its SIMD and optional rayon parallelism, `xxhash-rust`,
//! `crc32c`, and `crc-fast` for S3's CRC-32 and CRC-64/NVME: the crate the AWS SDKs use, which
//! picks its PCLMULQDQ/VPCLMULQDQ or NEON kernel at run time and measured faster than `crc32fast`
//! at CRC-32, 14 against 8.3 GB/s on one Xeon core with VPCLMULQDQ); with the default `openssl` feature, MD5 and
//! SHA-512 come from OpenSSL built from source, which is faster at both (see `ossl.rs`), and fall
//! back to RustCrypto where OpenSSL refuses them. This module only gives them one shape,
//! [`Hasher`], so that the read pipeline can feed them the same buffers.
//!
//! The face: an [`Algorithm`] (parsed from its names, [`parse_list`] for a list, or
//! [`UnknownAlgorithm`]) makes a [`Hasher`]; [`digest()`] digests bytes in one call.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod algorithm;
mod hasher;
#[cfg(feature = "openssl")]
mod ossl;

pub use algorithm::{Algorithm, UnknownAlgorithm, parse_list};
pub use hasher::{Hasher, digest};
