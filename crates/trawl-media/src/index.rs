//! What indexing an FLV file finds ([`FlvIndex`]: keyframes, codecs, tag counts, problems) and
//! how it fails ([`FlvError`]).

use std::path::{Path, PathBuf};

use serde::Serialize;

/// Why a file could not be indexed.
#[derive(Debug, thiserror::Error)]
pub enum FlvError {
    /// The file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path concerned.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file does not start with the FLV signature.
    #[error("{}: not an FLV file (no 'FLV' signature)", path.display())]
    NotFlv {
        /// The path concerned.
        path: PathBuf,
    },
    /// The file ends inside its 9-byte header.
    #[error("{}: truncated FLV header ({size} bytes)", path.display())]
    TruncatedHeader {
        /// The path concerned.
        path: PathBuf,
        /// The file's size.
        size: u64,
    },
    /// The header's data offset points before its end or past the file's.
    #[error("{}: bad FLV header: data offset {offset} (must be at least 9 and inside the file)", path.display())]
    BadDataOffset {
        /// The path concerned.
        path: PathBuf,
        /// The offset.
        offset: u64,
    },
}

pub use trawl_report::media::{Keyframe, TagCounts};

/// Where a tag lies: its offset and its size with the 11-byte header (without the 4-byte
/// PreviousTagSize that follows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TagSpan {
    /// The tag's offset in the file.
    pub offset: u64,
    /// Its size, header included.
    pub size: u64,
}

/// What indexing one file found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlvIndex {
    /// The file as given.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Seconds: the largest tag timestamp seen.
    pub duration: f64,
    /// The video codec, from the first video tag.
    pub video_codec: Option<String>,
    /// The audio codec, from the first audio tag.
    pub audio_codec: Option<String>,
    /// From onMetaData, when present.
    /// Pixels, rounded (onMetaData holds them as numbers).
    pub width: Option<u32>,
    /// Pixels, rounded (from onMetaData).
    pub height: Option<u32>,
    /// Frames per second (from onMetaData).
    pub frame_rate: Option<f64>,
    /// Seconds (from onMetaData).
    pub metadata_duration: Option<f64>,
    /// From the AVC sequence header's SPS, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coded_width: Option<u32>,
    /// Pixels (from the SPS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coded_height: Option<u32>,
    /// Frames per second (from the SPS's timing, when it has it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coded_frame_rate: Option<f64>,
    /// Every keyframe, in file order.
    pub keyframes: Vec<Keyframe>,
    /// Tags by kind.
    pub tags: TagCounts,
    /// The header's data offset (9 in files that follow the spec to the letter).
    pub data_offset: u64,
    /// The header's flags byte (4: audio, 1: video).
    pub flags: u8,
    /// Seconds: the timestamp of the last tag.
    pub last_timestamp: f64,
    /// Offset of the last video tag.
    pub last_video_tag: Option<u64>,
    /// The first onMetaData script tag that decodes.
    pub metadata: Option<TagSpan>,
    /// The first video configuration tag (AVC/HEVC sequence header, Enhanced SequenceStart).
    pub video_config: Option<TagSpan>,
    /// The first audio configuration tag (AAC sequence header, Enhanced SequenceStart).
    pub audio_config: Option<TagSpan>,
    /// Bytes from the start of the file that hold complete tags (less than `size` when the
    /// index stopped early).
    pub end: u64,
    /// Where and why the index stops early, or anything odd; empty for a clean file.
    pub problems: Vec<FlvProblem>,
    /// Bytes actually read to build the index.
    pub bytes_read: u64,
    /// Bytes of the video, the audio and the other tags, each tag with its header and the
    /// PreviousTagSize after it (what onMetaData's `videosize`, `audiosize` and `datasize` count).
    #[serde(skip)]
    pub tag_bytes: TagBytes,
}

/// Bytes of the tags of each kind, each with its 11-byte header and the 4 bytes after it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TagBytes {
    /// Of the video tags.
    pub video: u64,
    /// Of the audio tags.
    pub audio: u64,
    /// Of the others (script data, unknown).
    pub other: u64,
}

impl FlvIndex {
    /// Nothing found yet.
    pub fn empty(path: &Path, size: u64) -> FlvIndex {
        FlvIndex {
            path: path.display().to_string(),
            size,
            duration: 0.0,
            video_codec: None,
            audio_codec: None,
            width: None,
            height: None,
            frame_rate: None,
            metadata_duration: None,
            coded_width: None,
            coded_height: None,
            coded_frame_rate: None,
            keyframes: Vec::new(),
            tags: TagCounts::default(),
            data_offset: 0,
            flags: 0,
            last_timestamp: 0.0,
            last_video_tag: None,
            metadata: None,
            video_config: None,
            audio_config: None,
            end: 0,
            problems: Vec::new(),
            bytes_read: 0,
            tag_bytes: TagBytes::default(),
        }
    }

    /// The last keyframe at or before `seconds` (the first one when all are later).
    pub fn keyframe_at(&self, seconds: f64) -> Option<Keyframe> {
        let i = self.keyframes.partition_point(|k| k.time <= seconds);
        self.keyframes.get(i.saturating_sub(1)).copied()
    }
}

/// Something odd in a file, where it is: written in reports as its message (which names the
/// offset too), so that the JSON keeps a list of strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlvProblem {
    /// The offset of the tag (or PreviousTagSize) concerned; `None` for a count of problems
    /// left out.
    pub offset: Option<u64>,
    /// What is odd.
    pub message: String,
}

impl std::fmt::Display for FlvProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl Serialize for FlvProblem {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.message)
    }
}
