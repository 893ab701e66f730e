//! The algorithms: their names (trawl's, BagIt's, BSD tags'), digest widths, the libraries
//! that compute them, and their parsing from names.

use std::fmt;
use std::str::FromStr;

#[cfg(feature = "openssl")]
use crate::ossl;

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
    /// CRC-32/ISO-HDLC: zlib's, gzip's and S3's `CRC32` (`cksum -a crc32b` in coreutils 9.6).
    Crc32,
    /// CRC-64/NVME: the full-object checksum S3 stores for every new object
    /// (`x-amz-checksum-crc64nvme`).
    Crc64Nvme,
}

impl Algorithm {
    /// Every algorithm.
    pub const ALL: [Algorithm; 24] = [
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
        Algorithm::Crc32,
        Algorithm::Crc64Nvme,
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
            Algorithm::Crc32 => "crc32",
            Algorithm::Crc64Nvme => "crc64nvme",
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
    /// algorithms); BLAKE3, XXH3 and the CRCs are trawl's own.
    pub fn is_bagit_standard(self) -> bool {
        !matches!(
            self,
            Algorithm::Blake3
                | Algorithm::Xxh3
                | Algorithm::Crc32c
                | Algorithm::Crc32
                | Algorithm::Crc64Nvme
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
            Algorithm::Crc32 => "CRC32",
            Algorithm::Crc64Nvme => "CRC64NVME",
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
            Algorithm::Crc32c | Algorithm::Crc32 => 4,
            Algorithm::Crc64Nvme => 8,
        }
    }

    /// Length of the digest in hex characters.
    pub fn hex_len(self) -> usize {
        self.output_len() * 2
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
            // The kernel it picked from the CPU's features (`x86_64-avx512-vpclmulqdq`, ...).
            Algorithm::Crc32 | Algorithm::Crc64Nvme => {
                return format!(
                    "crc-fast ({})",
                    crc_fast::get_calculator_target(crc_fast::CrcAlgorithm::Crc64Nvme)
                );
            }
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
            "unknown digest algorithm '{}' (known: md5, sha1, sha224, sha256, sha384, sha512, sha512-256, sha3-224, sha3-256, sha3-384, sha3-512, blake2b, blake2b-128, blake2b-160, blake2b-224, blake2b-256, blake2b-384, blake2s, blake3, xxh3, crc32c, crc32, crc64nvme, sm3)",
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
            "crc32" | "crc-32" | "crc32b" => Algorithm::Crc32,
            "crc64nvme" | "crc64-nvme" | "crc-64-nvme" | "crc-64/nvme" => Algorithm::Crc64Nvme,
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(
            parse_list("crc64nvme,CRC32,crc32c").unwrap(),
            vec![Algorithm::Crc64Nvme, Algorithm::Crc32, Algorithm::Crc32c]
        );
        assert_eq!("crc32b".parse(), Ok(Algorithm::Crc32));
        assert_eq!(
            Algorithm::from_bsd_tag("CRC-64/NVME"),
            Some(Algorithm::Crc64Nvme)
        );
        assert_eq!(Algorithm::Crc64Nvme.output_len(), 8);
        assert_eq!(Algorithm::Crc32.output_len(), 4);
        let msg = "crc64".parse::<Algorithm>().unwrap_err().to_string();
        assert!(msg.contains("crc32, crc64nvme"), "{msg}");
    }
}
