//! The FLV index from bytes that stream past (the scan's buffers): the [`Walker`] asks for
//! ranges as in a seeking read, and only those bytes are copied out of the buffers; no second
//! read of the file.

use std::path::Path;

use crate::index::{FlvError, FlvIndex};
use crate::walker::Walker;

/// One file's bytes, in order.
pub struct FlvStream {
    walker: Option<Walker>,
    error: Option<FlvError>,
    /// Offset of the next byte to arrive.
    pos: u64,
    /// A wanted range that straddles buffers, as far as it has arrived.
    staged: Vec<u8>,
    /// The file's first bytes, up to the length of the signature.
    head: Vec<u8>,
}

impl FlvStream {
    /// An index of the file at `path` of `size` bytes, built from its bytes in order.
    pub fn new(path: &Path, size: u64) -> FlvStream {
        FlvStream {
            walker: Some(Walker::new(path, size)),
            error: None,
            pos: 0,
            staged: Vec::new(),
            head: Vec::new(),
        }
    }

    /// The next bytes of the file.
    pub fn update(&mut self, chunk: &[u8]) {
        if self.head.len() < 3 {
            let take = (3 - self.head.len()).min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
        }
        let start = self.pos;
        let end = start + chunk.len() as u64;
        self.pos = end;
        while let Some(w) = self.walker.as_mut() {
            let Some((at, len)) = w.want() else { return };
            let from = at + self.staged.len() as u64;
            if len > 0 && from >= end {
                return;
            }
            let result = if len == 0 {
                w.give(&[])
            } else {
                // Wanted ranges only move forward, and every byte of one is taken as it passes.
                debug_assert!(from >= start);
                let off = (from - start) as usize;
                let take = (len - self.staged.len()).min(chunk.len() - off);
                if self.staged.is_empty() && take == len {
                    w.give(&chunk[off..off + len])
                } else {
                    self.staged.extend_from_slice(&chunk[off..off + take]);
                    if self.staged.len() < len {
                        return;
                    }
                    let r = w.give(&self.staged);
                    self.staged.clear();
                    r
                }
            };
            if let Err(e) = result {
                self.error = Some(e);
                self.walker = None;
            }
        }
    }

    /// `None` when the file is not FLV (no `FLV` signature); an error when it claims to be but
    /// its header is unusable.
    pub fn finish(mut self) -> Option<Result<FlvIndex, FlvError>> {
        if self.pos == 0 {
            // An empty file (or one that was never fed): not media.
            return None;
        }
        // FLV only if the file starts with the whole signature: a 1-byte file holding `F` is
        // not a truncated FLV file.
        if self.head != *b"FLV" {
            return None;
        }
        match (self.walker.take(), self.error.take()) {
            (_, Some(FlvError::NotFlv { .. })) => None,
            (_, Some(e)) => Some(Err(e)),
            (Some(w), None) => Some(Ok(w.finish())),
            (None, None) => None,
        }
    }

    /// Whether the bytes seen so far rule FLV out (the lane can stop looking).
    pub fn is_not_flv(&self) -> bool {
        self.walker.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flv::synth::*;

    #[test]
    fn a_file_shorter_than_the_signature_is_not_flv() {
        for bytes in [&b"F"[..], b"FL", b"FLX"] {
            let mut s = FlvStream::new(Path::new("x"), bytes.len() as u64);
            s.update(bytes);
            assert!(s.finish().is_none(), "{bytes:?}");
        }
        let mut s = FlvStream::new(Path::new("x"), 4);
        s.update(b"FLV\x01");
        assert!(
            matches!(s.finish(), Some(Err(_))),
            "a truncated FLV header is one"
        );
    }

    #[test]
    fn buffers_of_any_size_give_the_index_a_seeking_read_gives() {
        let mut v = header(9);
        let mut meta = b"\x02\x00\x0aonMetaData\x08\x00\x00\x00\x01".to_vec();
        meta.extend_from_slice(b"\x00\x05width\x00");
        meta.extend_from_slice(&640f64.to_be_bytes());
        meta.extend_from_slice(&[0, 0, 9]);
        tag(&mut v, 18, 0, &meta);
        tag(&mut v, 9, 0, &[0x17, 0, 0, 0, 0, 1, 2, 3]);
        tag(&mut v, 8, 0, &[0xaf, 0, 0x12, 0x10]);
        for i in 0..40u32 {
            let key = i % 10 == 0;
            let mut p = vec![if key { 0x17 } else { 0x27 }, 1, 0, 0, 0];
            p.resize(5 + (i as usize * 37) % 300, i as u8);
            tag(&mut v, 9, i * 40, &p);
            tag(&mut v, 8, i * 40, &[0xaf, 1, 7, 7]);
        }
        let f = write(&v);
        let mut want = crate::index_file(f.path()).unwrap();
        assert_eq!(want.keyframes.len(), 4);
        assert!(want.metadata.is_some() && want.video_config.is_some());
        want.bytes_read = 0;
        for chunk in [1, 2, 5, 11, 21, 64, 1000, v.len()] {
            let mut s = FlvStream::new(f.path(), v.len() as u64);
            for c in v.chunks(chunk) {
                s.update(c);
            }
            let mut got = s.finish().unwrap().unwrap();
            got.bytes_read = 0;
            assert_eq!(got, want, "chunks of {chunk}");
        }
        // Not FLV: nothing; truncated: the same problems as a seeking read.
        let mut s = FlvStream::new(f.path(), 10);
        s.update(b"GIF89a....");
        assert!(s.is_not_flv());
        assert!(s.finish().is_none());
        let cut = &v[..v.len() - 30];
        let g = write(cut);
        let seek = crate::index_file(g.path()).unwrap();
        let mut s = FlvStream::new(g.path(), cut.len() as u64);
        for c in cut.chunks(100) {
            s.update(c);
        }
        let got = s.finish().unwrap().unwrap();
        assert_eq!(got.problems, seek.problems);
        assert_eq!(got.keyframes, seek.keyframes);
        assert!(!got.problems.is_empty());
    }
}
