//! The media lane: the FLV keyframe index from a scan's bytes as they pass (files that are not
//! FLV cost one look at their first bytes).

use std::path::{Path, PathBuf};

use trawl_scan::{Lane, LaneOutput};

use crate::{FlvIndex, FlvStream};

/// What the media lane yields for an FLV file, as [`LaneOutput::Other`]: the index, or why a file
/// with the FLV signature could not be indexed (always `Some`; a file that is not FLV yields
/// [`LaneOutput::Nothing`]).
pub type MediaOutput = Option<Result<FlvIndex, String>>;

/// The FLV walk starts only once a file's first bytes are the signature: most files are not
/// FLV, and a walker for each (its index, its copies of the path) cost more than reading a small
/// file.
pub enum MediaLane {
    /// Not yet known: the file's first bytes are gathered until the signature can be told.
    Head {
        /// The path concerned.
        path: PathBuf,
        /// The file's size.
        size: u64,
        /// Its first bytes so far.
        head: [u8; 3],
        /// How many of them.
        seen: usize,
    },
    /// An FLV file, indexed as its bytes come.
    Flv(Box<FlvStream>),
    /// Not an FLV file: the rest of its bytes are ignored.
    NotFlv,
}

impl MediaLane {
    /// A lane for the file at `path` of `size` bytes.
    pub fn new(path: &Path, size: u64) -> MediaLane {
        MediaLane::Head {
            path: path.to_path_buf(),
            size,
            head: [0; 3],
            seen: 0,
        }
    }
}

impl Lane for MediaLane {
    fn update(&mut self, chunk: &[u8]) {
        match self {
            MediaLane::Flv(s) => {
                if !s.is_not_flv() {
                    s.update(chunk)
                }
            }
            MediaLane::NotFlv => {}
            MediaLane::Head {
                path,
                size,
                head,
                seen,
            } => {
                let take = (3 - *seen).min(chunk.len());
                head[*seen..*seen + take].copy_from_slice(&chunk[..take]);
                *seen += take;
                if !b"FLV".starts_with(&head[..*seen]) {
                    *self = MediaLane::NotFlv;
                } else if *seen == 3 {
                    let mut s = FlvStream::new(path, *size);
                    s.update(&head[..]);
                    if take < chunk.len() {
                        s.update(&chunk[take..]);
                    }
                    *self = MediaLane::Flv(Box::new(s));
                }
            }
        }
    }

    fn finish(self: Box<Self>) -> LaneOutput {
        let MediaLane::Flv(s) = *self else {
            // Not FLV, or shorter than the signature.
            return LaneOutput::Nothing;
        };
        match s.finish() {
            None => LaneOutput::Nothing,
            Some(r) => {
                let out: MediaOutput = Some(r.map_err(|e| e.to_string()));
                LaneOutput::Other(Box::new(out))
            }
        }
    }

    fn reads_all(&self) -> bool {
        // Tag headers and the few payloads it parses.
        false
    }
}
