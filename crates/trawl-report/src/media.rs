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
    /// Video tags.
    pub video: u64,
    /// Audio tags.
    pub audio: u64,
    /// Script data tags (onMetaData).
    pub script: u64,
    /// Tags of any other type.
    pub other: u64,
}

/// The `flv` object of a file in a scan's report (keys written sorted, as schema 1 has them).
/// It is read back too: a scan's records keep it, as JSON, while they wait on disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FlvSummary {
    /// The file was indexed.
    Indexed {
        /// Seconds: the largest tag timestamp seen.
        duration: f64,
        /// The video codec.
        video_codec: Option<String>,
        /// The audio codec.
        audio_codec: Option<String>,
        /// Pixels: from onMetaData, else from the video's sequence header.
        width: Option<u32>,
        /// Pixels, as the width.
        height: Option<u32>,
        /// How many keyframes.
        keyframes: usize,
        /// The first.
        first_keyframe: Option<Keyframe>,
        /// The last.
        last_keyframe: Option<Keyframe>,
        /// Tags by type.
        tags: TagCounts,
        /// Where and why the index stops early, or anything odd; empty for a clean file.
        problems: Vec<String>,
    },
    /// The file starts like FLV but could not be indexed.
    Failed {
        /// Why.
        error: String,
    },
}

/// A keyframe index file (`flv index --json`, `scan --media-index`): `files` are the media
/// crate's full indexes, written with their keys sorted, as schema 1 has them.
#[derive(Debug, Clone, Serialize)]
pub struct IndexFile<T: Serialize> {
    /// One index per file.
    #[serde(serialize_with = "crate::sorted_keys")]
    pub files: Vec<T>,
    /// The layout's version ([`crate::SCHEMA_VERSION`]).
    pub schema_version: u32,
}

impl<T: Serialize> IndexFile<T> {
    /// An index file of `files`, at this version.
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
    /// FLV files indexed.
    pub files: u64,
    /// Their keyframes.
    pub keyframes: u64,
    /// Files with a problem.
    pub with_problems: u64,
}

/// Keyframe intervals are counted in these buckets (seconds): a player seeks no finer than the
/// interval, so long ones are what to look for.
pub const KEYFRAME_INTERVAL_EDGES: [f64; 7] = [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0];

/// How many keyframe intervals fall in `[from, to)` seconds (`to` null: or longer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalBucket {
    /// Seconds, from.
    pub from: f64,
    /// Seconds, to (None: no bound).
    pub to: Option<f64>,
    /// How many intervals.
    pub intervals: u64,
}

/// One FLV file in the media section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlvRow {
    /// The file as reports spell it.
    pub path: String,
    /// Its size.
    pub size: u64,
    /// Seconds: the largest tag timestamp.
    pub duration: f64,
    /// How many keyframes.
    pub keyframes: u64,
    /// The video codec.
    pub video_codec: Option<String>,
    /// The audio codec.
    pub audio_codec: Option<String>,
    /// Pixels.
    pub width: Option<u32>,
    /// Pixels.
    pub height: Option<u32>,
    /// The longest time between two keyframes, seconds.
    pub max_interval: Option<f64>,
    /// Keyframe intervals per bucket of [`KEYFRAME_INTERVAL_EDGES`].
    pub intervals: Vec<u64>,
    /// What is odd in it.
    pub problems: Vec<String>,
    /// Set when the file starts like FLV but could not be indexed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The FLV files of a scan (`media` in its JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MediaReport {
    /// FLV files indexed.
    pub files: u64,
    /// Their keyframes.
    pub keyframes: u64,
    /// Seconds, all files.
    pub duration: f64,
    /// Files with a problem.
    pub with_problems: u64,
    /// Files that start like FLV and could not be indexed.
    pub failed: u64,
    /// Every file's keyframe intervals, in sum.
    pub intervals: Vec<IntervalBucket>,
    /// The first [`MediaReport::LISTED`] files met, sorted by path.
    pub listed: Vec<FlvRow>,
}

impl MediaReport {
    /// Files listed one by one; the rest are in the sums.
    pub const LISTED: usize = 1000;

    /// The bucket of an interval.
    pub fn bucket(dt: f64) -> usize {
        KEYFRAME_INTERVAL_EDGES
            .iter()
            .position(|e| dt < *e)
            .unwrap_or(KEYFRAME_INTERVAL_EDGES.len())
    }

    /// Adds another report's files (a cluster's shard): sums, and the listed rows kept sorted
    /// by path up to [`MediaReport::LISTED`].
    pub fn merge(&mut self, o: MediaReport) {
        if self.intervals.is_empty() {
            self.intervals = o.intervals.clone();
        } else {
            for (a, b) in self.intervals.iter_mut().zip(&o.intervals) {
                a.intervals += b.intervals;
            }
        }
        self.files += o.files;
        self.keyframes += o.keyframes;
        self.duration += o.duration;
        self.with_problems += o.with_problems;
        self.failed += o.failed;
        self.listed.extend(o.listed);
        self.listed.sort_by(|a, b| a.path.cmp(&b.path));
        self.listed.truncate(Self::LISTED);
    }

    /// Counts a file in (its keyframe times in order).
    pub fn add(&mut self, mut row: FlvRow, times: &[f64]) {
        if self.intervals.is_empty() {
            self.intervals = (0..=KEYFRAME_INTERVAL_EDGES.len())
                .map(|b| IntervalBucket {
                    from: if b == 0 {
                        0.0
                    } else {
                        KEYFRAME_INTERVAL_EDGES[b - 1]
                    },
                    to: KEYFRAME_INTERVAL_EDGES.get(b).copied(),
                    intervals: 0,
                })
                .collect();
        }
        row.intervals = vec![0; KEYFRAME_INTERVAL_EDGES.len() + 1];
        for w in times.windows(2) {
            let dt = (w[1] - w[0]).max(0.0);
            let b = Self::bucket(dt);
            row.intervals[b] += 1;
            self.intervals[b].intervals += 1;
            row.max_interval = Some(row.max_interval.map_or(dt, |m: f64| m.max(dt)));
        }
        self.files += 1;
        self.keyframes += row.keyframes;
        self.duration += row.duration;
        self.with_problems += u64::from(!row.problems.is_empty());
        self.failed += u64::from(row.error.is_some());
        if self.listed.len() < Self::LISTED {
            self.listed.push(row);
        }
    }
}
