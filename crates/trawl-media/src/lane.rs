//! The media lane: the FLV keyframe index from a scan's bytes as they pass (files that are not
//! FLV cost one look at their first bytes).

use std::path::Path;

use trawl_scan::{Lane, LaneOutput};

use crate::{FlvIndex, FlvStream};

/// What the media lane yields for an FLV file, as [`LaneOutput::Other`]: the index, or why a file
/// with the FLV signature could not be indexed (always `Some`; a file that is not FLV yields
/// [`LaneOutput::Nothing`]).
pub type MediaOutput = Option<Result<FlvIndex, String>>;

pub struct MediaLane(FlvStream);

impl MediaLane {
    pub fn new(path: &Path, size: u64) -> MediaLane {
        MediaLane(FlvStream::new(path, size))
    }
}

impl Lane for MediaLane {
    fn update(&mut self, chunk: &[u8]) {
        if !self.0.is_not_flv() {
            self.0.update(chunk)
        }
    }

    fn finish(self: Box<Self>) -> LaneOutput {
        match self.0.finish() {
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
