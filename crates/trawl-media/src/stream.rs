//! The FLV index from bytes that stream past (the scan's buffers): the [`Walker`] asks for
//! ranges as in a seeking read, and only those bytes are copied out of the buffers; no second
//! read of the file.

use std::path::Path;

use crate::flv::{FlvError, FlvIndex};
use crate::walker::Walker;

/// One file's bytes, in order.
pub struct FlvStream {
    walker: Option<Walker>,
    error: Option<FlvError>,
    /// Offset of the next byte to arrive.
    pos: u64,
    /// A wanted range that straddles buffers, as far as it has arrived.
    staged: Vec<u8>,
}

impl FlvStream {
    pub fn new(path: &Path, size: u64) -> FlvStream {
        FlvStream {
            walker: Some(Walker::new(path, size)),
            error: None,
            pos: 0,
            staged: Vec::new(),
        }
    }

    /// The next bytes of the file.
    pub fn update(&mut self, chunk: &[u8]) {
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
