//! Digest algorithms: names, hex widths, and incremental hashers over byte chunks.
//!
//! Every algorithm is a real, well-kept crate (`sha2`/`sha1`/`md-5` with SHA-NI detected at run time,
//! `sha3`, `blake2`, `blake3` with its SIMD and optional rayon parallelism, `xxhash-rust`,
//! `crc32c`); with the default `openssl` feature, MD5 and SHA-512 come from OpenSSL built from
//! source, which is faster at both (see `ossl.rs`), and fall back to RustCrypto where OpenSSL
//! refuses them. This module only gives them one
//! shape, [`Hasher`], so that the read pipeline can feed them the same buffers.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::fmt;
use std::str::FromStr;

use digest::consts::{U16, U20, U28, U32, U48};
use sha2::Digest as _;

#[cfg(feature = "openssl")]
mod ossl;

/// A digest algorithm trawl can compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    /// MD5 (RFC 1321).
    Md5,
    /// SHA-1.
    Sha1,
    /// SHA-224.
    Sha224,
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
    /// SHA3-224.
    Sha3_224,
    /// SHA3-256.
    Sha3_256,
    /// SHA3-384.
    Sha3_384,
    /// SHA3-512.
    Sha3_512,
    /// BLAKE2b with a 512-bit result (`b2sum`'s default).
    Blake2b,
    /// BLAKE2b with shorter results, as `b2sum -l N` and `cksum -a blake2b -l N` write them
    /// (the lengths in use; others are refused by name).
    Blake2b128,
    /// BLAKE2b-160.
    Blake2b160,
    /// BLAKE2b-224.
    Blake2b224,
    /// BLAKE2b-256.
    Blake2b256,
    /// BLAKE2b-384.
    Blake2b384,
    /// BLAKE2s with a 256-bit result.
    Blake2s,
    /// BLAKE3 (256 bits).
    Blake3,
    /// XXH3 with a 128-bit result.
    Xxh3,
    /// CRC-32C (Castagnoli).
    Crc32c,
    /// SHA-512/256 (FIPS 180-4): SHA-512's rounds cut to 256 bits.
    Sha512_256,
    /// SM3 (GB/T 32905), as `cksum -a sm3` writes it.
    Sm3,
}

impl Algorithm {
    /// Every algorithm.
    pub const ALL: [Algorithm; 22] = [
        Algorithm::Md5,
        Algorithm::Sha1,
        Algorithm::Sha224,
        Algorithm::Sha256,
        Algorithm::Sha384,
        Algorithm::Sha512,
        Algorithm::Sha3_224,
        Algorithm::Sha3_256,
        Algorithm::Sha3_384,
        Algorithm::Sha3_512,
        Algorithm::Blake2b,
        Algorithm::Blake2s,
        Algorithm::Blake3,
        Algorithm::Xxh3,
        Algorithm::Crc32c,
        Algorithm::Blake2b128,
        Algorithm::Blake2b160,
        Algorithm::Blake2b224,
        Algorithm::Blake2b256,
        Algorithm::Blake2b384,
        Algorithm::Sha512_256,
        Algorithm::Sm3,
    ];

    /// Lower-case name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Md5 => "md5",
            Algorithm::Sha1 => "sha1",
            Algorithm::Sha224 => "sha224",
            Algorithm::Sha256 => "sha256",
            Algorithm::Sha384 => "sha384",
            Algorithm::Sha512 => "sha512",
            Algorithm::Sha3_224 => "sha3-224",
            Algorithm::Sha3_256 => "sha3-256",
            Algorithm::Sha3_384 => "sha3-384",
            Algorithm::Sha3_512 => "sha3-512",
            Algorithm::Blake2b => "blake2b",
            Algorithm::Blake2s => "blake2s",
            Algorithm::Blake3 => "blake3",
            Algorithm::Xxh3 => "xxh3",
            Algorithm::Crc32c => "crc32c",
            Algorithm::Blake2b128 => "blake2b-128",
            Algorithm::Blake2b160 => "blake2b-160",
            Algorithm::Blake2b224 => "blake2b-224",
            Algorithm::Blake2b256 => "blake2b-256",
            Algorithm::Blake2b384 => "blake2b-384",
            Algorithm::Sha512_256 => "sha512-256",
            Algorithm::Sm3 => "sm3",
        }
    }

    /// The name in a BagIt manifest's file name (`manifest-NAME.txt`): Python's `hashlib` names,
    /// which bagit-python and most BagIt tools look for (`sha3_256`, not `sha3-256`).
    pub fn bagit_name(self) -> &'static str {
        match self {
            Algorithm::Sha3_224 => "sha3_224",
            Algorithm::Sha3_256 => "sha3_256",
            Algorithm::Sha3_384 => "sha3_384",
            Algorithm::Sha3_512 => "sha3_512",
            Algorithm::Sha512_256 => "sha512_256",
            a => a.name(),
        }
    }

    /// Whether BagIt tools other than trawl are expected to check it (the `hashlib`-guaranteed
    /// algorithms); BLAKE3, XXH3 and CRC32C are trawl's own.
    pub fn is_bagit_standard(self) -> bool {
        !matches!(
            self,
            Algorithm::Blake3
                | Algorithm::Xxh3
                | Algorithm::Crc32c
                | Algorithm::Blake2b128
                | Algorithm::Blake2b160
                | Algorithm::Blake2b224
                | Algorithm::Blake2b256
                | Algorithm::Blake2b384
                | Algorithm::Sha512_256
                | Algorithm::Sm3
        )
    }

    /// Upper-case tag used by BSD-style (`--tag`) manifest lines.
    pub fn bsd_tag(self) -> &'static str {
        match self {
            Algorithm::Md5 => "MD5",
            Algorithm::Sha1 => "SHA1",
            Algorithm::Sha224 => "SHA224",
            Algorithm::Sha256 => "SHA256",
            Algorithm::Sha384 => "SHA384",
            Algorithm::Sha512 => "SHA512",
            Algorithm::Sha3_224 => "SHA3-224",
            Algorithm::Sha3_256 => "SHA3-256",
            Algorithm::Sha3_384 => "SHA3-384",
            Algorithm::Sha3_512 => "SHA3-512",
            Algorithm::Blake2b => "BLAKE2b",
            Algorithm::Blake2s => "BLAKE2s",
            Algorithm::Blake3 => "BLAKE3",
            Algorithm::Xxh3 => "XXH128",
            Algorithm::Crc32c => "CRC32C",
            Algorithm::Blake2b128 => "BLAKE2b-128",
            Algorithm::Blake2b160 => "BLAKE2b-160",
            Algorithm::Blake2b224 => "BLAKE2b-224",
            Algorithm::Blake2b256 => "BLAKE2b-256",
            Algorithm::Blake2b384 => "BLAKE2b-384",
            Algorithm::Sha512_256 => "SHA512/256",
            Algorithm::Sm3 => "SM3",
        }
    }

    /// Parses a BSD tag (`SHA256`, `MD5`, `BLAKE2b-256`, OpenSSL's `SHA2-256` and
    /// `SHA2-512/256`, ...), case-insensitively.
    pub fn from_bsd_tag(tag: &str) -> Option<Algorithm> {
        // OpenSSL 3 names the SHA-2 family `SHA2-NNN`.
        let tag = match tag.get(..5) {
            Some(p) if p.eq_ignore_ascii_case("sha2-") => &tag[5..],
            _ => tag,
        };
        let plain = |t: &str| {
            Algorithm::ALL
                .into_iter()
                .find(|a| a.bsd_tag().eq_ignore_ascii_case(t))
        };
        plain(tag)
            .or_else(|| plain(&format!("SHA{tag}")))
            .or_else(|| tag.replace('/', "-").parse().ok())
    }

    /// Length of the digest in bytes.
    pub fn output_len(self) -> usize {
        match self {
            Algorithm::Md5 => 16,
            Algorithm::Sha1 => 20,
            Algorithm::Sha224 | Algorithm::Sha3_224 | Algorithm::Blake2b224 => 28,
            Algorithm::Sha256
            | Algorithm::Sha3_256
            | Algorithm::Blake2s
            | Algorithm::Blake2b256
            | Algorithm::Sha512_256
            | Algorithm::Sm3 => 32,
            Algorithm::Sha384 | Algorithm::Sha3_384 | Algorithm::Blake2b384 => 48,
            Algorithm::Sha512 | Algorithm::Sha3_512 | Algorithm::Blake2b => 64,
            Algorithm::Blake3 => 32,
            Algorithm::Xxh3 | Algorithm::Blake2b128 => 16,
            Algorithm::Blake2b160 => 20,
            Algorithm::Crc32c => 4,
        }
    }

    /// Length of the digest in hex characters.
    pub fn hex_len(self) -> usize {
        self.output_len() * 2
    }

    /// A fresh incremental hasher.
    pub fn hasher(self) -> Hasher {
        #[cfg(feature = "openssl")]
        if let Some(h) = ossl::OsslHasher::new(self) {
            return Hasher {
                inner: Inner::Ossl(h),
                parallel: false,
            };
        }
        let inner = match self {
            Algorithm::Md5 => Inner::Md5(md5::Md5::new()),
            Algorithm::Sha1 => Inner::Sha1(sha1::Sha1::new()),
            Algorithm::Sha256 => Inner::Sha256(sha2::Sha256::new()),
            Algorithm::Sha512 => Inner::Sha512(Box::new(sha2::Sha512::new())),
            Algorithm::Sha224 => Inner::Other(Box::new(sha2::Sha224::new()), self),
            Algorithm::Sha384 => Inner::Other(Box::new(sha2::Sha384::new()), self),
            Algorithm::Sha3_224 => Inner::Other(Box::new(sha3::Sha3_224::new()), self),
            Algorithm::Sha3_256 => Inner::Other(Box::new(sha3::Sha3_256::new()), self),
            Algorithm::Sha3_384 => Inner::Other(Box::new(sha3::Sha3_384::new()), self),
            Algorithm::Sha3_512 => Inner::Other(Box::new(sha3::Sha3_512::new()), self),
            Algorithm::Blake2b => Inner::Other(Box::new(blake2::Blake2b512::new()), self),
            Algorithm::Blake2s => Inner::Other(Box::new(blake2::Blake2s256::new()), self),
            Algorithm::Blake3 => Inner::Blake3(Box::new(blake3::Hasher::new())),
            Algorithm::Xxh3 => Inner::Xxh3(Box::new(xxhash_rust::xxh3::Xxh3::new())),
            Algorithm::Crc32c => Inner::Crc32c(0),
            Algorithm::Blake2b128 => Inner::Other(Box::new(blake2::Blake2b::<U16>::new()), self),
            Algorithm::Blake2b160 => Inner::Other(Box::new(blake2::Blake2b::<U20>::new()), self),
            Algorithm::Blake2b224 => Inner::Other(Box::new(blake2::Blake2b::<U28>::new()), self),
            Algorithm::Blake2b256 => Inner::Other(Box::new(blake2::Blake2b::<U32>::new()), self),
            Algorithm::Blake2b384 => Inner::Other(Box::new(blake2::Blake2b::<U48>::new()), self),
            Algorithm::Sha512_256 => Inner::Other(Box::new(sha2::Sha512_256::new()), self),
            Algorithm::Sm3 => Inner::Other(Box::new(sm3::Sm3::new()), self),
        };
        Hasher {
            inner,
            parallel: false,
        }
    }

    /// The library (and, where it is known at run time, its version) that computes this
    /// algorithm in this build, for reports.
    pub fn implementation(self) -> String {
        #[cfg(feature = "openssl")]
        if let Some(name) = ossl::implementation(self) {
            return name;
        }
        match self {
            Algorithm::Md5 => "RustCrypto md-5",
            Algorithm::Sha1 => "RustCrypto sha1",
            Algorithm::Sha224 | Algorithm::Sha256 | Algorithm::Sha384 | Algorithm::Sha512 => {
                "RustCrypto sha2"
            }
            Algorithm::Sha3_224
            | Algorithm::Sha3_256
            | Algorithm::Sha3_384
            | Algorithm::Sha3_512 => "RustCrypto sha3",
            Algorithm::Blake2b
            | Algorithm::Blake2s
            | Algorithm::Blake2b128
            | Algorithm::Blake2b160
            | Algorithm::Blake2b224
            | Algorithm::Blake2b256
            | Algorithm::Blake2b384 => "RustCrypto blake2",
            Algorithm::Sha512_256 => "RustCrypto sha2",
            Algorithm::Sm3 => "RustCrypto sm3",
            Algorithm::Blake3 => "blake3",
            Algorithm::Xxh3 => "xxhash-rust",
            Algorithm::Crc32c => "crc32c",
        }
        .to_string()
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Error for an algorithm name trawl does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownAlgorithm(pub String);

impl fmt::Display for UnknownAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown digest algorithm '{}' (known: md5, sha1, sha224, sha256, sha384, sha512, sha512-256, sha3-224, sha3-256, sha3-384, sha3-512, blake2b, blake2b-128, blake2b-160, blake2b-224, blake2b-256, blake2b-384, blake2s, blake3, xxh3, crc32c, sm3)",
            self.0
        )
    }
}

impl std::error::Error for UnknownAlgorithm {}

impl FromStr for Algorithm {
    type Err = UnknownAlgorithm;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let l = s.trim().to_ascii_lowercase();
        Ok(match l.as_str() {
            "md5" => Algorithm::Md5,
            "sha1" | "sha-1" => Algorithm::Sha1,
            "sha224" | "sha-224" => Algorithm::Sha224,
            "sha256" | "sha-256" => Algorithm::Sha256,
            "sha384" | "sha-384" => Algorithm::Sha384,
            "sha512" | "sha-512" => Algorithm::Sha512,
            "sha3-224" | "sha3_224" => Algorithm::Sha3_224,
            "sha3-256" | "sha3_256" => Algorithm::Sha3_256,
            "sha3-384" | "sha3_384" => Algorithm::Sha3_384,
            "sha3-512" | "sha3_512" => Algorithm::Sha3_512,
            "blake2b" | "blake2b-512" | "blake2b512" | "b2" => Algorithm::Blake2b,
            "blake2b-128" | "blake2b128" => Algorithm::Blake2b128,
            "blake2b-160" | "blake2b160" => Algorithm::Blake2b160,
            "blake2b-224" | "blake2b224" => Algorithm::Blake2b224,
            "blake2b-256" | "blake2b256" => Algorithm::Blake2b256,
            "blake2b-384" | "blake2b384" => Algorithm::Blake2b384,
            "sha512-256" | "sha512_256" | "sha-512/256" | "sha512/256" => Algorithm::Sha512_256,
            "sm3" => Algorithm::Sm3,
            "blake2s" | "blake2s-256" | "blake2s256" => Algorithm::Blake2s,
            "blake3" | "b3" => Algorithm::Blake3,
            "xxh3" | "xxh128" | "xxh3-128" => Algorithm::Xxh3,
            "crc32c" => Algorithm::Crc32c,
            _ => return Err(UnknownAlgorithm(s.to_string())),
        })
    }
}

/// Parses a comma-separated list, rejecting duplicates and keeping the given order.
pub fn parse_list(s: &str) -> Result<Vec<Algorithm>, UnknownAlgorithm> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let a: Algorithm = part.parse()?;
        if !out.contains(&a) {
            out.push(a);
        }
    }
    if out.is_empty() {
        return Err(UnknownAlgorithm(s.to_string()));
    }
    Ok(out)
}

enum Inner {
    Md5(md5::Md5),
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
    Sha512(Box<sha2::Sha512>),
    Blake3(Box<blake3::Hasher>),
    Xxh3(Box<xxhash_rust::xxh3::Xxh3>),
    Crc32c(u32),
    /// The algorithms with no special handling, through RustCrypto's common trait.
    Other(Box<dyn digest::DynDigest + Send>, Algorithm),
    #[cfg(feature = "openssl")]
    Ossl(ossl::OsslHasher),
}

/// An incremental hasher for one [`Algorithm`].
pub struct Hasher {
    inner: Inner,
    parallel: bool,
}

/// Below this chunk size BLAKE3's multithreaded update costs more than it saves.
const BLAKE3_PARALLEL_MIN: usize = 256 * 1024;

impl Hasher {
    /// Lets BLAKE3 spread one large chunk over the rayon pool (other algorithms are inherently
    /// sequential and ignore this).
    pub fn with_parallel(mut self, yes: bool) -> Self {
        self.parallel = yes;
        self
    }

    /// The algorithm this hasher computes.
    pub fn algorithm(&self) -> Algorithm {
        match &self.inner {
            Inner::Md5(_) => Algorithm::Md5,
            Inner::Sha1(_) => Algorithm::Sha1,
            Inner::Sha256(_) => Algorithm::Sha256,
            Inner::Sha512(_) => Algorithm::Sha512,
            Inner::Blake3(_) => Algorithm::Blake3,
            Inner::Xxh3(_) => Algorithm::Xxh3,
            Inner::Crc32c(_) => Algorithm::Crc32c,
            Inner::Other(_, a) => *a,
            #[cfg(feature = "openssl")]
            Inner::Ossl(h) => h.algorithm(),
        }
    }

    /// Hashes the next bytes.
    pub fn update(&mut self, data: &[u8]) {
        match &mut self.inner {
            Inner::Md5(h) => h.update(data),
            Inner::Sha1(h) => h.update(data),
            Inner::Sha256(h) => h.update(data),
            Inner::Sha512(h) => h.update(data),
            Inner::Blake3(h) => {
                if self.parallel && data.len() >= BLAKE3_PARALLEL_MIN {
                    h.update_rayon(data);
                } else {
                    h.update(data);
                }
            }
            Inner::Xxh3(h) => h.update(data),
            Inner::Crc32c(c) => *c = crc32c::crc32c_append(*c, data),
            Inner::Other(h, _) => h.update(data),
            #[cfg(feature = "openssl")]
            Inner::Ossl(h) => h.update(data),
        }
    }

    /// Finishes and returns the digest bytes (big-endian for XXH3-128 and CRC32C, matching
    /// `xxhsum -H2` and the usual CRC32C hex rendering).
    pub fn finish(self) -> Vec<u8> {
        match self.inner {
            Inner::Md5(h) => h.finalize().to_vec(),
            Inner::Sha1(h) => h.finalize().to_vec(),
            Inner::Sha256(h) => h.finalize().to_vec(),
            Inner::Sha512(h) => h.finalize().to_vec(),
            Inner::Blake3(h) => h.finalize().as_bytes().to_vec(),
            Inner::Xxh3(h) => h.digest128().to_be_bytes().to_vec(),
            Inner::Crc32c(c) => c.to_be_bytes().to_vec(),
            Inner::Other(h, _) => h.finalize().to_vec(),
            #[cfg(feature = "openssl")]
            Inner::Ossl(h) => h.finish(),
        }
    }
}

/// Digests `data` in one call.
pub fn digest(alg: Algorithm, data: &[u8]) -> Vec<u8> {
    let mut h = alg.hasher();
    h.update(data);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hx(a: Algorithm, d: &[u8]) -> String {
        hex::encode(digest(a, d))
    }

    #[test]
    fn the_lengths_and_algorithms_gnu_cksum_and_b2sum_write() {
        // "abc": GB/T 32905's SM3 vector, FIPS 180-4's SHA-512/256, and what `b2sum -l N`
        // (coreutils) and Python's hashlib.blake2b(digest_size=N/8) print.
        for (a, want) in [
            (
                Algorithm::Sm3,
                "66c7f0f462eeedd9d1f2d46bdc10e4e24167c4875cf2f7a2297da02b8f4ba8e0",
            ),
            (
                Algorithm::Sha512_256,
                "53048e2681941ef99b2e29b76b4c7dabe4c2d0c634fc6d46e0e2f13107e7af23",
            ),
            (Algorithm::Blake2b128, "cf4ab791c62b8d2b2109c90275287816"),
            (
                Algorithm::Blake2b160,
                "384264f676f39536840523f284921cdc68b6846b",
            ),
            (
                Algorithm::Blake2b224,
                "9bd237b02a29e43bdd6738afa5b53ff0eee178d6210b618e4511aec8",
            ),
            (
                Algorithm::Blake2b256,
                "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319",
            ),
            (
                Algorithm::Blake2b384,
                "6f56a82c8e7ef526dfe182eb5212f7db9df1317e57815dbda46083fc30f54ee6c66ba83be64b302d7cba6ce15bb556f4",
            ),
        ] {
            assert_eq!(hx(a, b"abc"), want, "{a}");
            assert_eq!(a.hex_len(), want.len(), "{a}");
            assert_eq!(a.name().parse::<Algorithm>().unwrap(), a);
            assert_eq!(Algorithm::from_bsd_tag(a.bsd_tag()), Some(a));
        }
        // The tags GNU cksum and OpenSSL write.
        assert_eq!(
            Algorithm::from_bsd_tag("BLAKE2b-256"),
            Some(Algorithm::Blake2b256)
        );
        assert_eq!(Algorithm::from_bsd_tag("SM3"), Some(Algorithm::Sm3));
        assert_eq!(Algorithm::from_bsd_tag("SHA2-256"), Some(Algorithm::Sha256));
        assert_eq!(
            Algorithm::from_bsd_tag("SHA2-512/256"),
            Some(Algorithm::Sha512_256)
        );
        assert_eq!(
            Algorithm::from_bsd_tag("SHA512/256"),
            Some(Algorithm::Sha512_256)
        );
        assert_eq!(Algorithm::from_bsd_tag("BLAKE2b-8"), None);
    }

    #[test]
    fn known_vectors() {
        // Published test vectors for "abc".
        assert_eq!(
            hx(Algorithm::Md5, b"abc"),
            "900150983cd24fb0d6963f7d28e17f72"
        );
        assert_eq!(
            hx(Algorithm::Sha1, b"abc"),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            hx(Algorithm::Sha256, b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hx(Algorithm::Sha512, b"abc"),
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a\
             2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
        );
        assert_eq!(
            hx(Algorithm::Blake3, b""),
            "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
        );
        // CRC-32C check value for "123456789".
        assert_eq!(hx(Algorithm::Crc32c, b"123456789"), "e3069283");
        // FIPS 180-4, FIPS 202 and RFC 7693 vectors for "abc".
        assert_eq!(
            hx(Algorithm::Sha224, b"abc"),
            "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7"
        );
        assert_eq!(
            hx(Algorithm::Sha384, b"abc"),
            "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed\
             8086072ba1e7cc2358baeca134c825a7"
        );
        assert_eq!(
            hx(Algorithm::Sha3_256, b"abc"),
            "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532"
        );
        assert_eq!(
            hx(Algorithm::Blake2b, b"abc"),
            "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1\
             7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923"
        );
        assert_eq!(
            hx(Algorithm::Blake2s, b"abc"),
            "508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982"
        );
        // XXH128 of the empty input, as printed by `xxhsum -H2`.
        assert_eq!(hx(Algorithm::Xxh3, b""), "99aa06d3014798d86001c324468d497f");
    }

    #[test]
    fn incremental_equals_one_shot() {
        let data: Vec<u8> = (0..1_000_000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        for a in Algorithm::ALL {
            let mut h = a.hasher().with_parallel(true);
            for c in data.chunks(300_001) {
                h.update(c);
            }
            assert_eq!(h.finish(), digest(a, &data), "{a}");
        }
    }

    /// OpenSSL's MD5 and SHA-512 against RustCrypto's, an independent implementation, over
    /// lengths around the block boundaries (64 and 128 bytes, padding spilling into another
    /// block) fed in chunks of every shape.
    #[cfg(feature = "openssl")]
    #[test]
    fn openssl_agrees_with_rustcrypto() {
        let data: Vec<u8> = (0..300_007u32).map(|i| (i * 31 + i / 7) as u8).collect();
        for a in [Algorithm::Md5, Algorithm::Sha512] {
            assert!(
                matches!(a.hasher().inner, Inner::Ossl(_)),
                "{a} is not computed by OpenSSL"
            );
            assert!(a.implementation().starts_with("openssl (OpenSSL "), "{a}");
            for len in [
                0, 1, 55, 56, 63, 64, 65, 111, 112, 127, 128, 129, 1000, 300_007,
            ] {
                let d = &data[..len];
                let want = match a {
                    Algorithm::Md5 => md5::Md5::digest(d).to_vec(),
                    _ => sha2::Sha512::digest(d).to_vec(),
                };
                for chunk in [1, 7, 64, 4096, len.max(1)] {
                    let mut h = a.hasher();
                    for c in d.chunks(chunk) {
                        h.update(c);
                    }
                    assert_eq!(h.finish(), want, "{a} len {len} chunk {chunk}");
                }
            }
        }
    }

    #[test]
    fn parse_names() {
        assert_eq!(
            parse_list("md5,SHA-256,sha256").unwrap(),
            vec![Algorithm::Md5, Algorithm::Sha256]
        );
        assert!(parse_list("sha3").is_err());
        assert_eq!(
            parse_list("sha3_256,SHA3-512,b2,blake2s").unwrap(),
            vec![
                Algorithm::Sha3_256,
                Algorithm::Sha3_512,
                Algorithm::Blake2b,
                Algorithm::Blake2s
            ]
        );
        for a in Algorithm::ALL {
            assert_eq!(a.name().parse::<Algorithm>().unwrap(), a);
            assert_eq!(a.bagit_name().parse::<Algorithm>().unwrap(), a);
            assert_eq!(Algorithm::from_bsd_tag(a.bsd_tag()), Some(a));
        }
        assert_eq!(Algorithm::from_bsd_tag("SHA512"), Some(Algorithm::Sha512));
    }
}
