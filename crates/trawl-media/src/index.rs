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
    /// The path names a FIFO, a directory or another thing that is not a regular file.
    #[error("{}: {kind}", path.display())]
    NotRegular {
        /// The path concerned.
        path: PathBuf,
        /// What it is instead.
        kind: NotRegular,
    },
    /// The file shrank while it was mapped: pages past its new end read as zeros.
    #[error("{}: the file shrank while it was indexed (pages past its new end read as zeros); no index", path.display())]
    Shrank {
        /// The path concerned.
        path: PathBuf,
    },
    /// A mapped page could not be read (SIGBUS where the file did not shrink): the device
    /// failed to deliver it.
    #[error("{}: a mapped page could not be read (SIGBUS: an I/O error on the device); no index", path.display())]
    Unreadable {
        /// The path concerned.
        path: PathBuf,
    },
}

/// What a path that should name a regular file names instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotRegular {
    /// A FIFO (named pipe).
    #[error("a FIFO (named pipe), not a regular file")]
    Fifo,
    /// A directory.
    #[error("a directory, not a regular file")]
    Directory,
    /// A device, a socket, something else.
    #[error("not a regular file")]
    Other,
}

impl NotRegular {
    /// What `ft` is, when it is not a regular file.
    pub(crate) fn of(ft: std::fs::FileType) -> Option<NotRegular> {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_file() {
            None
        } else if ft.is_fifo() {
            Some(NotRegular::Fifo)
        } else if ft.is_dir() {
            Some(NotRegular::Directory)
        } else {
            Some(NotRegular::Other)
        }
    }
}

pub use trawl_report::{Keyframe, TagCounts};

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
    /// What an onMetaData writer counts over the tags (`flv inject` writes these).
    #[serde(skip)]
    pub figures: TagFigures,
}

/// What an onMetaData writer counts over the tags, the way flvmeta counts it: its checker
/// (`flvmeta -C`) compares a file's onMetaData with these figures, so a metadata tag written
/// from them passes it. (Where yamdi counts otherwise, `datasize` and the keyframes at one
/// timestamp, flvmeta's checker is followed.)
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TagFigures {
    /// Video tags, each with its 11-byte header (not the 4-byte size after it): `videosize`.
    pub video: u64,
    /// Audio tags, likewise: `audiosize`.
    pub audio: u64,
    /// Script data tags, likewise (`datasize` is these, less the old onMetaData tag, plus the
    /// new one).
    pub script: u64,
    /// Video payload bytes after each tag's first byte (the frame type and codec), over which
    /// `videodatarate` is reckoned.
    pub video_data: u64,
    /// Audio payload bytes after each tag's first byte: `audiodatarate`'s.
    pub audio_data: u64,
    /// The video tags flagged key (frame type 1): coded pictures, and the codec configuration
    /// and end-of-sequence tags that carry the flag too, the first one at each timestamp. What
    /// flvmeta and yamdi list as `keyframes` (yamdi keeps a second one at the same timestamp;
    /// flvmeta's checker wants only the first).
    pub flagged: Vec<Keyframe>,
    /// Whether the last video tag (with a payload) is flagged key: `canSeekToEnd`.
    pub ends_on_key: bool,
    /// The first audio/video timestamp (ms).
    pub first_ts: Option<u32>,
    /// The first audio tag's timestamp, and the first later one that differs (ms): an audio
    /// frame's duration.
    pub audio_ts: (Option<u32>, Option<u32>),
    /// The same for video tags.
    pub video_ts: (Option<u32>, Option<u32>),
    /// The first video tag's codec: its codec id, or under Enhanced FLV its FourCC as a
    /// big-endian number (what the specification has `videocodecid` hold).
    pub video_codec_id: Option<u32>,
    /// The first audio tag's first byte: format, rate, size and channels.
    pub audio_flags: Option<u8>,
    /// The first audio tag's FourCC, where its format is 9 (Enhanced FLV audio).
    pub audio_fourcc: Option<u32>,
}

impl TagFigures {
    /// Counts one tag of type `kind` at `offset` with a `size`-byte payload that starts with
    /// `head` (empty for an empty payload, which flvmeta leaves out of all but the sizes).
    pub(crate) fn tag(&mut self, kind: u8, offset: u64, size: u32, ts: u32, head: &[u8]) {
        let first = head.first().copied();
        let fourcc = |at: usize| {
            head.get(at..at + 4)
                .map(|f| u32::from_be_bytes(f.try_into().expect("4 bytes")))
        };
        let whole = 11 + u64::from(size);
        let data = u64::from(size.saturating_sub(1));
        let firsts = |t: &mut (Option<u32>, Option<u32>)| match *t {
            (None, _) => t.0 = Some(ts),
            (Some(f), None) if f != ts => t.1 = Some(ts),
            _ => {}
        };
        match kind {
            9 => {
                self.video += whole;
                let Some(b) = first else { return };
                self.video_data += data;
                if self.video_ts.0.is_none() {
                    self.video_codec_id = if b & 0x80 == 0 {
                        Some(u32::from(b & 0x0f))
                    } else {
                        // Multitrack (packet type 6) has a track byte before the FourCC.
                        fourcc(if b & 0x0f == 6 { 2 } else { 1 })
                    };
                }
                firsts(&mut self.video_ts);
                self.first_ts.get_or_insert(ts);
                // The frame type: bits 4-7, or 4-6 under Enhanced FLV's ExHeader bit.
                let key = (b >> 4) & 7 == 1;
                self.ends_on_key = key;
                let time = f64::from(ts) / 1000.0;
                if key && self.flagged.last().is_none_or(|k| k.time != time) {
                    self.flagged.push(Keyframe { time, offset });
                }
            }
            8 => {
                self.audio += whole;
                if let Some(b) = first {
                    if self.audio_ts.0.is_none() {
                        self.audio_flags = Some(b);
                        self.audio_fourcc = (b >> 4 == 9).then(|| fourcc(1)).flatten();
                    }
                    self.audio_data += data;
                    firsts(&mut self.audio_ts);
                    self.first_ts.get_or_insert(ts);
                }
            }
            18 => self.script += whole,
            _ => {}
        }
    }

    /// Seconds of play, as flvmeta's checker reckons them for the rates: the last tag's
    /// timestamp `last` (ms) less the first audio or video one, plus one audio frame (one video
    /// frame without audio).
    pub fn play_time(&self, last: u32) -> f64 {
        let frame = |t: (Option<u32>, Option<u32>)| match t {
            (Some(a), Some(b)) => b - a,
            _ => 0,
        };
        let frame = if self.audio_ts.0.is_some() {
            frame(self.audio_ts)
        } else {
            frame(self.video_ts)
        };
        let first = self.first_ts.unwrap_or(0);
        f64::from(last.saturating_sub(first) + frame) / 1000.0
    }

    /// Adds the figures of the tags that follow (a later segment of the same file).
    pub(crate) fn join(&mut self, b: TagFigures) {
        self.video += b.video;
        self.audio += b.audio;
        self.script += b.script;
        self.video_data += b.video_data;
        self.audio_data += b.audio_data;
        let dup = matches!((self.flagged.last(), b.flagged.first()), (Some(x), Some(y)) if x.time == y.time);
        self.flagged
            .extend(b.flagged.into_iter().skip(usize::from(dup)));
        if b.video_ts.0.is_some() {
            self.ends_on_key = b.ends_on_key;
        }
        if self.video_ts.0.is_none() {
            self.video_codec_id = b.video_codec_id;
        }
        if self.audio_ts.0.is_none() {
            self.audio_flags = b.audio_flags;
            self.audio_fourcc = b.audio_fourcc;
        }
        self.first_ts = self.first_ts.or(b.first_ts);
        for (a, b) in [
            (&mut self.audio_ts, b.audio_ts),
            (&mut self.video_ts, b.video_ts),
        ] {
            *a = match (*a, b) {
                ((None, _), b) => b,
                ((Some(f), None), (Some(g), _)) if g != f => (Some(f), Some(g)),
                ((Some(f), None), (_, h)) => (Some(f), h),
                (a, _) => a,
            };
        }
    }
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
            figures: TagFigures::default(),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// (type, offset, payload size, timestamp, first payload bytes) of an H.264 + AAC file as
    /// ffmpeg writes one: configuration tags at 0, a picture keyframe at 0, and an
    /// end-of-sequence tag (flagged key) last.
    fn tags() -> Vec<(u8, u64, u32, u32, Vec<u8>)> {
        let mut v = Vec::new();
        let mut at = 13;
        let mut push = |kind, size: u32, ts, head: &[u8]| {
            v.push((kind, at, size, ts, head.to_vec()));
            at += 11 + u64::from(size) + 4;
        };
        push(18, 300, 0, b"\x02\x00\x0a");
        push(9, 40, 0, &[0x17, 0]); // AVC sequence header
        push(8, 7, 0, &[0xae, 0]); // AAC config: 44 kHz, 16-bit, mono
        push(9, 900, 0, &[0x17, 1]);
        push(8, 200, 0, &[0xae, 1]);
        push(8, 210, 23, &[0xae, 1]);
        push(9, 100, 40, &[0x27, 1]);
        push(9, 0, 60, &[]); // empty: counted in the size only
        push(9, 800, 1000, &[0x17, 1]);
        push(8, 220, 1010, &[0xae, 1]);
        push(9, 5, 1040, &[0x17, 2]); // end of sequence
        v
    }

    fn count(t: &[(u8, u64, u32, u32, Vec<u8>)]) -> TagFigures {
        let mut f = TagFigures::default();
        for (kind, at, size, ts, head) in t {
            f.tag(*kind, *at, *size, *ts, head);
        }
        f
    }

    #[test]
    fn figures_count_what_flvmeta_counts() {
        let t = tags();
        let f = count(&t);
        assert_eq!(f.video, (40 + 900 + 100 + 800 + 5) + 6 * 11);
        assert_eq!(f.audio, (7 + 200 + 210 + 220) + 4 * 11);
        assert_eq!(f.script, 311);
        assert_eq!(f.video_data, 39 + 899 + 99 + 799 + 4);
        assert_eq!(f.audio_data, 6 + 199 + 209 + 219);
        // The sequence header at 0 (the picture keyframe at 0 is the same timestamp), the
        // keyframe at 1 s and the end of sequence, which makes the file end on a key tag.
        let flagged: Vec<(f64, u64)> = f.flagged.iter().map(|k| (k.time, k.offset)).collect();
        assert_eq!(flagged, [(0.0, t[1].1), (1.0, t[8].1), (1.04, t[10].1)]);
        assert!(f.ends_on_key);
        assert_eq!(f.video_codec_id, Some(7));
        assert_eq!(f.audio_flags, Some(0xae));
        // 1040 ms from the first audio/video tag to the last, plus one audio frame of 23 ms.
        assert_eq!(f.play_time(1040), 1.063);
        // Without audio, a video frame (40 ms) is added instead.
        let video: Vec<_> = t.iter().filter(|x| x.0 != 8).cloned().collect();
        assert_eq!(count(&video).play_time(1040), 1.08);
        // A last picture that is not a keyframe: no seeking to the end.
        let mut cut = t.clone();
        cut.pop();
        cut.push((9, 99_999, 50, 1080, vec![0x27, 1]));
        assert!(!count(&cut).ends_on_key);
    }

    #[test]
    fn figures_of_parts_joined_equal_the_whole() {
        let t = tags();
        let whole = count(&t);
        for split in 0..=t.len() {
            let mut a = count(&t[..split]);
            a.join(count(&t[split..]));
            assert_eq!(a, whole, "split before tag {split}");
        }
        // Enhanced FLV: the FourCC is the codec id, the frame type in bits 4-6.
        let mut f = TagFigures::default();
        f.tag(9, 13, 20, 0, b"\x90hvc1");
        f.tag(9, 50, 20, 0, b"\x91hvc1");
        f.tag(8, 90, 20, 0, b"\x90Opus");
        assert_eq!(f.video_codec_id, Some(u32::from_be_bytes(*b"hvc1")));
        assert_eq!(f.audio_fourcc, Some(u32::from_be_bytes(*b"Opus")));
        assert_eq!(f.flagged.len(), 1);
    }
}
