//! The compression codecs measured per unit: LZ4 (liblz4 1.9.4 through `lz4-sys`, block format,
//! `LZ4_compress_default`: the reference implementation at the version most systems ship; 1.10
//! and lz4_flex emit streams up to ~15% different on some text), zstd (libzstd through
//! the `zstd` crate, single-shot frames) and gzip (flate2 on zlib-rs, raw deflate + gzip framing).

use std::io::Write;

/// A codec at a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// LZ4 (its fast mode, level 1).
    Lz4,
    /// Zstandard at this level.
    Zstd(i32),
    /// Deflate (zlib-rs) at this level.
    Gzip(u32),
}

impl Codec {
    /// The codec's name as reports and flags spell it.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Lz4 => "lz4",
            Codec::Zstd(_) => "zstd",
            Codec::Gzip(_) => "gzip",
        }
    }

    /// The level; `None` for LZ4, which has one (its default, `LZ4_compress_default`).
    pub fn level(self) -> Option<i64> {
        match self {
            Codec::Lz4 => None,
            Codec::Zstd(l) => Some(l as i64),
            Codec::Gzip(l) => Some(l as i64),
        }
    }

    /// The implementation and version whose output sizes are reported.
    pub fn implementation(self) -> String {
        match self {
            Codec::Lz4 => "liblz4 1.9.4 (block format, LZ4_compress_default)".into(),
            Codec::Zstd(_) => {
                let v = zstd::zstd_safe::version_number();
                format!(
                    "libzstd {}.{}.{} (frame, no checksum)",
                    v / 10000,
                    v / 100 % 100,
                    v % 100
                )
            }
            Codec::Gzip(_) => "flate2 on zlib-rs (gzip member)".into(),
        }
    }

    /// Parses `lz4`, `zstd`, `zstd:3`, `gzip:6`.
    pub fn parse(s: &str) -> Result<Codec, String> {
        let (name, level) = match s.split_once(':') {
            Some((n, l)) => (
                n,
                Some(
                    l.parse::<i32>()
                        .map_err(|_| format!("codec '{s}': bad level '{l}'"))?,
                ),
            ),
            None => (s, None),
        };
        match name {
            "lz4" => match level {
                None | Some(1) => Ok(Codec::Lz4),
                Some(_) => Err(format!("codec '{s}': lz4 has one level")),
            },
            "zstd" => {
                let l = level.unwrap_or(1);
                if !(-7..=22).contains(&l) {
                    return Err(format!("codec '{s}': zstd levels are -7 to 22"));
                }
                Ok(Codec::Zstd(l))
            }
            "gzip" => {
                let l = level.unwrap_or(6);
                if !(1..=9).contains(&l) {
                    return Err(format!("codec '{s}': gzip levels are 1 to 9"));
                }
                Ok(Codec::Gzip(l as u32))
            }
            _ => Err(format!(
                "unknown codec '{s}' (lz4, zstd[:LEVEL], gzip[:LEVEL])"
            )),
        }
    }
}

// liblz4's own entry points that `lz4-sys` does not declare (they are in the library it links,
// liblz4 1.9.4, under LZ4_STATIC_LINKING_ONLY): compressing with a state made once and reset
// cheaply, rather than the 16 KiB state LZ4_compress_default clears on every call, which cost
// more than compressing a small file. The output is the same (checked in the tests below).
// These declarations are why lz4-sys is pinned to one version in the workspace's Cargo.toml.
unsafe extern "C" {
    fn LZ4_sizeofState() -> std::ffi::c_int;
    fn LZ4_initStream(buffer: *mut std::ffi::c_void, size: usize) -> *mut std::ffi::c_void;
    fn LZ4_compress_fast_extState_fastReset(
        state: *mut std::ffi::c_void,
        src: *const std::ffi::c_char,
        dst: *mut std::ffi::c_char,
        src_size: std::ffi::c_int,
        dst_capacity: std::ffi::c_int,
        acceleration: std::ffi::c_int,
    ) -> std::ffi::c_int;
}

/// Reusable compression state for one thread.
pub struct Compressor {
    codec: Codec,
    out: Vec<u8>,
    /// The bytes of `out` the last compression wrote.
    n: usize,
    zstd: Option<zstd::bulk::Compressor<'static>>,
    /// LZ4's state (8-byte aligned, as LZ4_stream_t wants), initialized once.
    lz4: Vec<u64>,
}

impl Compressor {
    /// A compressor for `codec`, with its buffers.
    pub fn new(codec: Codec) -> Compressor {
        let zstd = match codec {
            Codec::Zstd(l) => {
                let mut c = zstd::bulk::Compressor::new(l).expect("zstd context");
                let _ = c.include_checksum(false);
                let _ = c.include_contentsize(true);
                Some(c)
            }
            _ => None,
        };
        Compressor {
            codec,
            out: Vec::new(),
            n: 0,
            zstd,
            lz4: Vec::new(),
        }
    }

    /// The codec it compresses with.
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// Compresses `data`; the compressed bytes stay in [`Compressor::output`].
    pub fn compress(&mut self, data: &[u8]) -> usize {
        match self.codec {
            Codec::Lz4 => {
                if self.lz4.is_empty() {
                    // SAFETY: a pure function.
                    let size = unsafe { LZ4_sizeofState() } as usize;
                    self.lz4 = vec![0u64; size.div_ceil(8)];
                    // SAFETY: the buffer is `size` bytes or more, 8-byte aligned.
                    let s = unsafe { LZ4_initStream(self.lz4.as_mut_ptr().cast(), size) };
                    assert!(!s.is_null(), "LZ4 state");
                }
                // Grown, never cleared: zeroing a unit-sized buffer before each unit cost as
                // much as a small file's compression.
                let bound = lz4_bound(data.len());
                if self.out.len() < bound {
                    self.out.resize(bound, 0);
                }
                // SAFETY: the state was initialized by LZ4_initStream and only ever used by
                // this function since (what the fast reset requires); both buffers are valid
                // for the lengths given; the output holds LZ4_compressBound, so compression
                // cannot fail for a unit (< 2 GiB).
                let n = unsafe {
                    LZ4_compress_fast_extState_fastReset(
                        self.lz4.as_mut_ptr().cast(),
                        data.as_ptr().cast(),
                        self.out.as_mut_ptr().cast(),
                        lz4_len(data.len()),
                        lz4_len(bound),
                        1,
                    )
                };
                assert!(n > 0 || data.is_empty(), "LZ4 compression failed");
                self.n = n.max(0) as usize;
                return self.n;
            }
            Codec::Zstd(_) => {
                self.out.clear();
                let c = self.zstd.as_mut().expect("zstd context");
                self.out
                    .reserve(zstd::zstd_safe::compress_bound(data.len()));
                c.compress_to_buffer(data, &mut self.out).expect("sized");
            }
            Codec::Gzip(l) => {
                self.out.clear();
                let mut e = flate2::write::GzEncoder::new(
                    std::mem::take(&mut self.out),
                    flate2::Compression::new(l),
                );
                e.write_all(data).expect("in memory");
                self.out = e.finish().expect("in memory");
            }
        }
        self.n = self.out.len();
        self.n
    }

    /// The last unit compressed (as long as [`Compressor::compress`] said).
    pub fn output(&self) -> &[u8] {
        &self.out[..self.n]
    }
}

fn lz4_bound(len: usize) -> usize {
    // SAFETY: a pure function of its argument.
    (unsafe { lz4_sys::LZ4_compressBound(lz4_len(len)) }).max(16) as usize
}

/// A length as LZ4 takes it: units are at most MAX_BLOCK (`ReduceConfig::check`), far below
/// `i32::MAX`.
fn lz4_len(n: usize) -> i32 {
    i32::try_from(n).expect("units are at most MAX_BLOCK")
}

/// Decompresses what [`Compressor`] produced (for the round-trip checks).
#[cfg(test)]
fn decompress(codec: Codec, data: &[u8], len: usize) -> Vec<u8> {
    match codec {
        Codec::Lz4 => {
            let mut out = vec![0u8; len];
            // SAFETY: buffers valid for the lengths given; decompress_safe never writes past them.
            let n = unsafe {
                lz4_sys::LZ4_decompress_safe(
                    data.as_ptr().cast(),
                    out.as_mut_ptr().cast(),
                    lz4_len(data.len()),
                    lz4_len(len),
                )
            };
            assert_eq!(n as usize, len, "lz4 round trip");
            out
        }
        Codec::Zstd(_) => zstd::bulk::decompress(data, len).expect("zstd"),
        Codec::Gzip(_) => {
            let mut d = flate2::read::GzDecoder::new(data);
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut d, &mut out).expect("gzip");
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_what_was_counted() {
        let text: Vec<u8> = b"the quick brown fox jumps over the lazy dog. "
            .iter()
            .cycle()
            .take(32768)
            .copied()
            .collect();
        let mut x = 1u64;
        let random: Vec<u8> = (0..32768)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for codec in [Codec::Lz4, Codec::Zstd(1), Codec::Zstd(3), Codec::Gzip(6)] {
            let mut c = Compressor::new(codec);
            for data in [&text[..], &random[..], &[][..], &[0u8; 4096][..]] {
                let n = c.compress(data);
                assert_eq!(n, c.output().len());
                assert_eq!(decompress(codec, c.output(), data.len()), data, "{codec:?}");
            }
            assert!(c.compress(&text) < 2000, "{codec:?} compresses text");
        }
    }

    #[test]
    fn lz4_with_a_reused_state_writes_what_lz4_compress_default_writes() {
        let mut x = 7u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut c = Compressor::new(Codec::Lz4);
        // Sizes on both sides of LZ4's 64 KiB table switch, in an order that changes the table
        // type and grows and shrinks the input between calls.
        for len in [
            0usize, 1, 13, 200, 4096, 32768, 70_000, 65_535, 65_536, 100, 300_000, 5,
        ] {
            for kind in 0..3 {
                let data: Vec<u8> = (0..len)
                    .map(|i| match kind {
                        0 => (next() % 256) as u8,
                        1 => b"abcabcabd"[i % 9],
                        _ => (next() % 4) as u8 + b'a',
                    })
                    .collect();
                let mut want = vec![0u8; lz4_bound(len)];
                // SAFETY: valid buffers of the lengths given.
                let n = unsafe {
                    lz4_sys::LZ4_compress_default(
                        data.as_ptr().cast(),
                        want.as_mut_ptr().cast(),
                        len as i32,
                        want.len() as i32,
                    )
                };
                want.truncate(n.max(0) as usize);
                assert_eq!(c.compress(&data), want.len(), "{len} {kind}");
                assert_eq!(c.output(), &want[..], "{len} {kind}");
            }
        }
    }

    #[test]
    fn parses_codec_specs() {
        assert_eq!(Codec::parse("zstd:3").unwrap(), Codec::Zstd(3));
        assert_eq!(Codec::parse("gzip").unwrap(), Codec::Gzip(6));
        assert!(Codec::parse("brotli").is_err());
        assert!(Codec::parse("gzip:12").is_err());
    }
}
