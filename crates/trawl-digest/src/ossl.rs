//! OpenSSL's MD5 and SHA-512, the back-end chosen by measurement for the two algorithms where the
//! RustCrypto crates are slowest (`cargo run --release -p trawl-digest --example backends`).
//!
//! Measured on the development machine (AMD EPYC, Zen 4, one core, 1 MiB updates): MD5 669 MB/s
//! in OpenSSL 3.0's hand-scheduled assembly against 560 MB/s in `md-5` 0.11; SHA-512 745 MB/s in
//! OpenSSL's AVX2/BMI2 code against 523 MB/s in `sha2` 0.11 (ring and aws-lc: 534). SHA-1 and
//! SHA-256 run on SHA-NI in both at the same speed and stay with RustCrypto.

use openssl::md::{Md, MdRef};
use openssl::md_ctx::MdCtx;

use crate::Algorithm;

/// An EVP digest context for MD5 or SHA-512.
pub(crate) struct OsslHasher {
    ctx: MdCtx,
    algorithm: Algorithm,
}

fn md(alg: Algorithm) -> Option<&'static MdRef> {
    match alg {
        Algorithm::Md5 => Some(Md::md5()),
        Algorithm::Sha512 => Some(Md::sha512()),
        _ => None,
    }
}

impl OsslHasher {
    /// `None` for the algorithms left to RustCrypto, and where OpenSSL refuses the algorithm (MD5
    /// under a FIPS-only provider) or cannot allocate a context: the caller then uses RustCrypto.
    pub(crate) fn new(alg: Algorithm) -> Option<Self> {
        let md = md(alg)?;
        let mut ctx = MdCtx::new().ok()?;
        ctx.digest_init(md).ok()?;
        Some(OsslHasher {
            ctx,
            algorithm: alg,
        })
    }

    pub(crate) fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    pub(crate) fn update(&mut self, data: &[u8]) {
        // EVP_DigestUpdate fails only on a context that was never initialised, which `new` rules out.
        self.ctx
            .digest_update(data)
            .expect("EVP_DigestUpdate on an initialised context");
    }

    pub(crate) fn finish(mut self) -> Vec<u8> {
        let mut out = vec![0; self.algorithm.output_len()];
        let n = self
            .ctx
            .digest_final(&mut out)
            .expect("EVP_DigestFinal_ex on an initialised context");
        debug_assert_eq!(n, out.len());
        out
    }
}

/// Whether OpenSSL computes `alg` here, and the library's version line if so.
pub(crate) fn implementation(alg: Algorithm) -> Option<String> {
    OsslHasher::new(alg).map(|_| format!("openssl ({})", openssl::version::version()))
}
