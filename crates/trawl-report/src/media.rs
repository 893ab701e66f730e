//! What a scan's report says of one FLV file: a summary of its keyframe index (the full index
//! goes to `--media-index`, in the media crate's own `FlvIndex` form).

use serde::{Deserialize, Serialize};

/// One keyframe: its time and the byte offset of its tag (the media crate's indexes hold
/// these too).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Keyframe {
    /// Seconds (millisecond precision).
    pub time: f64,
    /// Offset of the tag's first byte in the file.
    pub offset: u64,
}

/// Tags by type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TagCounts {
    pub video: u64,
    pub audio: u64,
    pub script: u64,
    pub other: u64,
}

/// The `flv` object of a file in a scan's report (keys written sorted, as schema 1 has them).
/// It is read back too: a scan's records keep it, as JSON, while they wait on disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FlvSummary {
    Indexed {
        /// Seconds: the largest tag timestamp seen.
        duration: f64,
        video_codec: Option<String>,
        audio_codec: Option<String>,
        /// Pixels: from onMetaData, else from the video's sequence header.
        width: Option<u32>,
        height: Option<u32>,
        keyframes: usize,
        first_keyframe: Option<Keyframe>,
        last_keyframe: Option<Keyframe>,
        tags: TagCounts,
        /// Where and why the index stops early, or anything odd; empty for a clean file.
        problems: Vec<String>,
    },
    /// The file starts like FLV but could not be indexed.
    Failed { error: String },
}

/// A keyframe index file (`flv index --json`, `scan --media-index`): `files` are the media
/// crate's full indexes, written with their keys sorted, as schema 1 has them.
#[derive(Debug, Clone, Serialize)]
pub struct IndexFile<T: Serialize> {
    #[serde(serialize_with = "crate::sorted_keys")]
    pub files: Vec<T>,
    pub schema_version: u32,
}

impl<T: Serialize> IndexFile<T> {
    pub fn new(files: Vec<T>) -> IndexFile<T> {
        IndexFile {
            files,
            schema_version: crate::SCHEMA_VERSION,
        }
    }
}

/// The FLV files a scan indexed, in sum (for summaries; not part of the JSON of schema 1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MediaTotals {
    pub files: u64,
    pub keyframes: u64,
    pub with_problems: u64,
}
