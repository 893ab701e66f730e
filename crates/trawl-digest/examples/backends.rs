//! Picks MD5's and SHA-512's back-end by measurement: one core, 1 MiB updates over 64 MiB, best of
//! 5, RustCrypto's crates against what `Algorithm::hasher` uses in this build (OpenSSL with the
//! default `openssl` feature).
//!
//!     cargo run --release -p trawl-digest --example backends

use std::hint::black_box;
use std::time::Instant;

use trawl_digest::Algorithm;

fn mbps(data: &[u8], mut f: impl FnMut(&[u8])) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        f(data);
        best = best.min(t.elapsed().as_secs_f64());
    }
    data.len() as f64 / best / 1e6
}

fn rustcrypto<D: sha2::Digest>(data: &[u8]) {
    let mut h = D::new();
    for c in data.chunks(1 << 20) {
        h.update(c);
    }
    black_box(h.finalize());
}

fn main() {
    let data: Vec<u8> = (0..64u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    println!(
        "{:8} {:>16} {:>16}  trawl's choice",
        "", "RustCrypto MB/s", "trawl MB/s"
    );
    for alg in [
        Algorithm::Md5,
        Algorithm::Sha1,
        Algorithm::Sha256,
        Algorithm::Sha512,
    ] {
        let rc = mbps(
            &data,
            match alg {
                Algorithm::Md5 => rustcrypto::<md5::Md5>,
                Algorithm::Sha1 => rustcrypto::<sha1::Sha1>,
                Algorithm::Sha256 => rustcrypto::<sha2::Sha256>,
                _ => rustcrypto::<sha2::Sha512>,
            },
        );
        let ours = mbps(&data, |d| {
            let mut h = alg.hasher();
            for c in d.chunks(1 << 20) {
                h.update(c);
            }
            black_box(h.finish());
        });
        println!(
            "{:8} {rc:16.0} {ours:16.0}  {}",
            alg.name(),
            alg.implementation()
        );
    }
}
