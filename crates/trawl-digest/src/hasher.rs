//! The incremental hasher: one shape, [`Hasher`], over every algorithm's implementation.

use crc_fast::CrcAlgorithm;
use digest::consts::{U16, U20, U28, U32, U48};
use sha2::Digest as _;

use crate::Algorithm;
#[cfg(feature = "openssl")]
use crate::ossl;

impl Algorithm {
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
            Algorithm::Crc32 => Inner::Crc(
                Box::new(crc_fast::Digest::new(CrcAlgorithm::Crc32IsoHdlc)),
                self,
            ),
            Algorithm::Crc64Nvme => Inner::Crc(
                Box::new(crc_fast::Digest::new(CrcAlgorithm::Crc64Nvme)),
                self,
            ),
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
}

enum Inner {
    Md5(md5::Md5),
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
    Sha512(Box<sha2::Sha512>),
    Blake3(Box<blake3::Hasher>),
    Xxh3(Box<xxhash_rust::xxh3::Xxh3>),
    Crc32c(u32),
    /// CRC-32/ISO-HDLC or CRC-64/NVME, whose register `crc-fast` keeps in a `u64`.
    Crc(Box<crc_fast::Digest>, Algorithm),
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
            Inner::Crc(_, a) | Inner::Other(_, a) => *a,
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
            Inner::Crc(h, _) => h.update(data),
            Inner::Other(h, _) => h.update(data),
            #[cfg(feature = "openssl")]
            Inner::Ossl(h) => h.update(data),
        }
    }

    /// Finishes and returns the digest bytes (big-endian for XXH3-128 and the CRCs, matching
    /// `xxhsum -H2`, the usual CRC hex rendering and the bytes whose base64 S3 shows as
    /// `x-amz-checksum-crc32`/`-crc64nvme`).
    pub fn finish(self) -> Vec<u8> {
        match self.inner {
            Inner::Md5(h) => h.finalize().to_vec(),
            Inner::Sha1(h) => h.finalize().to_vec(),
            Inner::Sha256(h) => h.finalize().to_vec(),
            Inner::Sha512(h) => h.finalize().to_vec(),
            Inner::Blake3(h) => h.finalize().as_bytes().to_vec(),
            Inner::Xxh3(h) => h.digest128().to_be_bytes().to_vec(),
            Inner::Crc32c(c) => c.to_be_bytes().to_vec(),
            // The CRC sits in the low bytes of the u64: keep the algorithm's width of them.
            Inner::Crc(h, a) => h.finalize().to_be_bytes()[8 - a.output_len()..].to_vec(),
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
        // The CRC catalogue's check values for "123456789", and the empty input.
        assert_eq!(hx(Algorithm::Crc64Nvme, b"123456789"), "ae8b14860a799888");
        assert_eq!(hx(Algorithm::Crc32, b"123456789"), "cbf43926");
        assert_eq!(hx(Algorithm::Crc64Nvme, b""), "0000000000000000");
        assert_eq!(hx(Algorithm::Crc32, b""), "00000000");
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

    /// A reflected CRC one bit at a time (init and xorout all ones, as both CRCs here have).
    fn bitwise_crc(reflected_poly: u64, width: u32, data: &[u8]) -> u64 {
        let mask = u64::MAX >> (64 - width);
        let mut c = mask;
        for &b in data {
            c ^= u64::from(b);
            for _ in 0..8 {
                c = if c & 1 == 1 {
                    (c >> 1) ^ reflected_poly
                } else {
                    c >> 1
                };
            }
        }
        c ^ mask
    }

    /// crc-fast's folding kernels against the bitwise definition (CRC-64/NVME: polynomial
    /// 0xad93d23594c93659 reflected; CRC-32/ISO-HDLC: 0x04c11db7 reflected), over lengths around
    /// its 16-, 64- and 256-byte strides, fed whole and in uneven chunks.
    #[test]
    fn crcs_agree_with_the_bitwise_definition() {
        let data: Vec<u8> = (0..70_001u32).map(|i| (i * 131 + i / 11) as u8).collect();
        for len in [
            0, 1, 15, 16, 17, 63, 64, 65, 255, 256, 257, 4095, 4096, 70_001,
        ] {
            let d = &data[..len];
            let want64 = bitwise_crc(0x9a6c_9329_ac4b_c9b5, 64, d)
                .to_be_bytes()
                .to_vec();
            let want32 = (bitwise_crc(0xedb8_8320, 32, d) as u32)
                .to_be_bytes()
                .to_vec();
            for (a, want) in [(Algorithm::Crc64Nvme, want64), (Algorithm::Crc32, want32)] {
                assert_eq!(digest(a, d), want, "{a} len {len}");
                let mut h = a.hasher();
                for c in d.chunks(999) {
                    h.update(c);
                }
                assert_eq!(h.finish(), want, "{a} len {len} in chunks");
            }
        }
        assert!(
            Algorithm::Crc64Nvme
                .implementation()
                .starts_with("crc-fast (")
        );
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
}
