//! The demand-driven FLV tag walker: it says which byte range it needs next, and a driver hands
//! exactly those bytes over, so that one parser serves both seeking reads (`flv::index_file`,
//! which skips every payload) and the scan's buffers (`stream::FlvStream`, which sees every byte
//! anyway and copies out only the ranges asked for).
//!
//! For each tag it asks for the 4-byte PreviousTagSize before it, the 11-byte header and the
//! first bytes of the payload in one range; it asks for a whole payload only for script tags
//! named onMetaData (at most 1 MiB each; the first that decodes is the file's metadata) and the
//! first video configuration record (at most 64 KiB). Sizes are checked against the file size before anything is asked for, so a hostile
//! size field never causes a large read or allocation.

use std::path::{Path, PathBuf};

use crate::index::{FlvError, FlvIndex, FlvProblem, Keyframe, TagSpan};

/// Payload bytes looked at for every tag: enough for an Enhanced FLV multitrack video header
/// (type byte, track byte, FourCC) and the AVC packet type.
pub const PREFIX: usize = 6;
/// The largest onMetaData payload decoded.
pub const META_MAX: u64 = 1 << 20;
/// The largest video configuration record decoded (an AVC record is well under 1 KiB).
pub const CONFIG_MAX: u64 = 64 << 10;
/// Problems listed one by one per file; past this they are counted.
const MAX_PROBLEMS: usize = 16;
/// A forward jump between two tags of one track larger than this is reported (ms).
const JUMP_MS: u32 = 30_000;

#[derive(Debug, Clone, Copy)]
struct Header {
    pos: u64,
    kind: u8,
    size: u32,
    ts: u32,
}

#[derive(Debug, Clone, Copy)]
enum State {
    /// The 9-byte file header.
    Start,
    /// The tag at this offset (preceded by its PreviousTagSize).
    Tag(u64),
    /// A tag whose whole payload is needed.
    Payload(Header),
    Done,
}

/// A problem found, in file order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Problem {
    Text(FlvProblem),
    /// In a segment walk: the first timestamp of a track (0 video, 1 audio), to be checked
    /// against the previous segment's last one when the segments are joined.
    FirstTs {
        track: usize,
        ts: u32,
        pos: u64,
    },
}

/// What a segment walk leaves for the join (see `parallel`).
#[derive(Debug)]
pub(crate) struct Segment {
    pub idx: FlvIndex,
    pub problems: Vec<Problem>,
    pub problems_over: u64,
    /// Where the first tag started.
    pub start: u64,
    /// The PreviousTagSize read before the first tag.
    pub first_prev: Option<u32>,
    /// Where the next tag would start (at or past the segment's end); `None` when the file
    /// ended (or stopped being indexable) inside the segment.
    pub stopped_at: Option<u64>,
    /// The size (with header) of the last tag: the PreviousTagSize the next tag should have.
    pub expect_prev: Option<u32>,
    pub last_ts: [Option<u32>; 2],
}

/// One file's walk.
pub struct Walker {
    path: PathBuf,
    size: u64,
    state: State,
    idx: FlvIndex,
    /// The PreviousTagSize the next tag should be preceded by (`None`: unknown, at the start of
    /// a segment).
    expect_prev: Option<u32>,
    last_ts: [Option<u32>; 2],
    problems: Vec<Problem>,
    problems_over: u64,
    /// A segment walk: stop at the first tag starting at or past this offset.
    stop_at: Option<u64>,
    stopped_at: Option<u64>,
    first_prev: Option<u32>,
    start: u64,
    /// Bytes already read at the start of the next range (the start of a payload read with its
    /// header, or the next tag's first bytes read with a short tag), so that wanted ranges only
    /// move forward, which a streaming driver relies on.
    partial: Vec<u8>,
}

impl Walker {
    pub fn new(path: &Path, size: u64) -> Walker {
        Walker {
            path: path.into(),
            size,
            state: State::Start,
            idx: FlvIndex::empty(path, size),
            expect_prev: Some(0),
            last_ts: [None; 2],
            problems: Vec::new(),
            problems_over: 0,
            stop_at: None,
            stopped_at: None,
            first_prev: None,
            start: 0,
            partial: Vec::new(),
        }
    }

    /// A walk of the tags starting at `start` (a tag's offset, known or guessed) up to the first
    /// tag at or past `stop_at`.
    pub(crate) fn segment(path: &Path, size: u64, start: u64, stop_at: u64) -> Walker {
        let mut w = Walker::new(path, size).stop_at(stop_at);
        w.expect_prev = None;
        w.start = start;
        w.next_tag(start);
        w
    }

    /// Stops the walk at the first tag at or past `stop_at` (the first segment of a file).
    pub(crate) fn stop_at(mut self, stop_at: u64) -> Walker {
        self.stop_at = Some(stop_at);
        self
    }

    /// The byte range needed next (offset, length), or `None` when the walk is over. The length
    /// never reaches past the file size given to [`Walker::new`].
    pub fn want(&self) -> Option<(u64, usize)> {
        let (at, len) = self.range()?;
        let have = self.partial.len();
        Some((at + have as u64, len - have))
    }

    /// The whole range the next step looks at.
    fn range(&self) -> Option<(u64, usize)> {
        match self.state {
            State::Start => Some((0, self.size.min(9) as usize)),
            State::Tag(pos) => {
                let at = pos - 4;
                Some((at, (self.size - at).min(4 + 11 + PREFIX as u64) as usize))
            }
            State::Payload(h) => Some((h.pos + 11, h.size as usize)),
            State::Done => None,
        }
    }

    /// Hands over the bytes asked for by [`Walker::want`]; fewer means the file ended there.
    /// An error means the file is not a (usable) FLV file at all.
    pub fn give(&mut self, data: &[u8]) -> Result<(), FlvError> {
        self.idx.bytes_read += data.len() as u64;
        let joined;
        let data = if self.partial.is_empty() {
            data
        } else {
            let mut v = std::mem::take(&mut self.partial);
            v.extend_from_slice(data);
            joined = v;
            &joined[..]
        };
        match self.state {
            State::Start => self.file_header(data),
            State::Tag(pos) => {
                self.tag_header(pos, data);
                Ok(())
            }
            State::Payload(h) => {
                if data.len() < h.size as usize {
                    self.problem(
                        h.pos,
                        format!(
                            "the file ends inside the tag at offset {}; indexed up to there",
                            h.pos
                        ),
                    );
                    self.state = State::Done;
                } else {
                    self.tag(h, data);
                    self.next_tag(h.pos + 11 + h.size as u64 + 4);
                }
                Ok(())
            }
            State::Done => Ok(()),
        }
    }

    pub fn finish(mut self) -> FlvIndex {
        if let State::Tag(pos) | State::Payload(Header { pos, .. }) = self.state {
            self.problem(
                pos,
                format!("the data ended before the tag at offset {pos}; indexed up to there"),
            );
        }
        let over = self.problems_over;
        let texts = self.problems.into_iter().filter_map(|p| match p {
            Problem::Text(t) => Some(t),
            Problem::FirstTs { .. } => None,
        });
        self.idx.problems = problem_list(texts, over);
        self.idx
    }

    /// The end of a segment walk (the whole segment was handed over).
    pub(crate) fn finish_segment(self) -> Segment {
        Segment {
            idx: self.idx,
            problems: self.problems,
            problems_over: self.problems_over,
            start: self.start,
            first_prev: self.first_prev,
            stopped_at: self.stopped_at,
            expect_prev: self.expect_prev,
            last_ts: self.last_ts,
        }
    }

    fn problem(&mut self, offset: u64, message: String) {
        self.push_problem(FlvProblem {
            offset: Some(offset),
            message,
        });
    }

    fn push_problem(&mut self, p: FlvProblem) {
        let texts = self
            .problems
            .iter()
            .filter(|p| matches!(p, Problem::Text(_)))
            .count();
        if texts < MAX_PROBLEMS {
            self.problems.push(Problem::Text(p));
        } else {
            self.problems_over += 1;
        }
    }

    fn file_header(&mut self, head: &[u8]) -> Result<(), FlvError> {
        let path = || self.path.clone();
        let n = head.len();
        if n >= 3 && &head[..3] != b"FLV" || n < 3 && !b"FLV".starts_with(head) {
            return Err(FlvError::NotFlv { path: path() });
        }
        if n < 9 {
            return Err(FlvError::TruncatedHeader {
                path: path(),
                size: self.size,
            });
        }
        let data_offset = u32::from_be_bytes(head[5..9].try_into().expect("4 bytes")) as u64;
        if data_offset < 9 || data_offset > self.size {
            return Err(FlvError::BadDataOffset {
                path: path(),
                offset: data_offset,
            });
        }
        self.idx.data_offset = data_offset;
        self.idx.flags = head[4];
        self.idx.end = data_offset;
        self.next_tag(data_offset + 4);
        Ok(())
    }

    fn next_tag(&mut self, pos: u64) {
        self.state = if pos - 4 >= self.size {
            State::Done
        } else if self.stop_at.is_some_and(|s| pos >= s) && pos < self.size {
            // (A segment that reaches the end of the file still checks the last
            // PreviousTagSize, as a single walk does.)
            self.stopped_at = Some(pos);
            State::Done
        } else {
            State::Tag(pos)
        };
    }

    fn tag_header(&mut self, pos: u64, data: &[u8]) {
        self.state = State::Done;
        if data.len() >= 4 {
            let prev = u32::from_be_bytes(data[..4].try_into().expect("4 bytes"));
            match self.expect_prev {
                Some(e) if e != prev => self.push_problem(prev_mismatch(pos - 4, prev, e)),
                Some(_) => {}
                None => self.first_prev = Some(prev),
            }
        }
        let rest = data.get(4..).unwrap_or_default();
        if rest.is_empty() {
            return; // the file ends cleanly after the last PreviousTagSize
        }
        if rest.len() < 11 {
            let left = rest.len();
            self.problem(
                pos,
                format!(
                    "truncated tag header at offset {pos} ({left} bytes left); indexed up to there"
                ),
            );
            return;
        }
        let h = Header {
            pos,
            kind: rest[0] & 0x1f,
            size: u32::from_be_bytes([0, rest[1], rest[2], rest[3]]),
            ts: u32::from_be_bytes([rest[7], rest[4], rest[5], rest[6]]),
        };
        let end = pos + 11 + h.size as u64;
        if end > self.size {
            let size = h.size;
            self.problem(
                pos,
                format!(
                    "truncated tag at offset {pos}: its {size}-byte payload runs past the end of the file; indexed up to there"
                ),
            );
            return;
        }
        let prefix = &rest[11..rest.len().min(11 + h.size as usize)];
        let whole = self.read_whole(h, prefix);
        if whole && prefix.len() < h.size as usize {
            self.partial = prefix.to_vec();
            self.state = State::Payload(h);
        } else {
            self.tag(h, prefix);
            self.next_tag(end + 4);
            if let (State::Tag(_), Some(next)) = (self.state, rest.get(11 + h.size as usize..)) {
                self.partial = next.to_vec();
            }
        }
    }

    /// Whether tag `h`, of which `prefix` is read, is read whole before it is looked at: an
    /// onMetaData script tag or the first video configuration record, within their limits.
    fn read_whole(&mut self, h: Header, prefix: &[u8]) -> bool {
        let pos = h.pos;
        match h.kind {
            18 => {
                // Only tags named onMetaData are read whole (the name, an AMF0 string of 10
                // bytes, starts the payload), every one of them, so that a corrupt one is
                // reported wherever it is (and a segmented walk sees what a single one sees);
                // the first that decodes is the file's metadata.
                let want = prefix.starts_with(b"\x02\x00\x0aonM");
                if want && h.size as u64 > META_MAX {
                    self.problem(
                        pos,
                        format!("script tag at offset {pos} larger than 1 MiB: not decoded"),
                    );
                    false
                } else {
                    want
                }
            }
            9 => {
                self.idx.video_config.is_none()
                    && is_video_config(prefix)
                    && h.size as u64 <= CONFIG_MAX
            }
            _ => false,
        }
    }

    /// One complete tag; `payload` is its start (or all of it when it was asked for): what
    /// every tag tells, then what FLV says of its type (video, audio, script data).
    fn tag(&mut self, h: Header, payload: &[u8]) {
        self.expect_prev = Some(11 + h.size);
        self.idx.end = (h.pos + 11 + h.size as u64 + 4).min(self.size);
        self.idx.last_timestamp = h.ts as f64 / 1000.0;
        self.idx.duration = self.idx.duration.max(h.ts as f64 / 1000.0);
        let span = TagSpan {
            offset: h.pos,
            size: 11 + h.size as u64,
        };
        let names = ["video", "audio", "script"];
        let name = match h.kind {
            9 => names[0],
            8 => names[1],
            18 => names[2],
            _ => "",
        };
        // Configuration tags often carry timestamp 0 in files whose pictures start later
        // (an offset stream): they are left out of the continuity checks.
        let config = match h.kind {
            9 => is_video_config(payload),
            8 => is_audio_config(payload),
            _ => false,
        };
        if !config {
            self.continuity(h);
        }
        if h.size == 0 && !name.is_empty() {
            self.problem(h.pos, format!("zero-size {name} tag at offset {}", h.pos));
        }
        self.idx.figures.tag(h.kind, h.pos, h.size, h.ts, payload);
        match h.kind {
            9 => self.video_tag(h, payload, span, config),
            8 => self.audio_tag(payload, span, config),
            18 => self.script_tag(h, payload, span),
            _ => self.idx.tags.other += 1,
        }
    }

    /// Checks a video or audio tag's timestamp against its track's last one (in a segment
    /// walk, keeps the track's first for the join).
    fn continuity(&mut self, h: Header) {
        let Some(track) = [9, 8].iter().position(|&k| k == h.kind) else {
            return;
        };
        match self.last_ts[track] {
            Some(last) => {
                if let Some(p) = ts_problem(track, last, h.ts, h.pos) {
                    self.push_problem(p);
                }
            }
            None if self.stop_at.is_some() => self.problems.push(Problem::FirstTs {
                track,
                ts: h.ts,
                pos: h.pos,
            }),
            None => {}
        }
        self.last_ts[track] = Some(h.ts);
    }

    /// A video tag: a picture, a keyframe, the codec, the first configuration record (an
    /// AVC one's coded size and frame rate).
    fn video_tag(&mut self, h: Header, payload: &[u8], span: TagSpan, config: bool) {
        self.idx.tags.video += 1;
        if is_picture(payload) {
            self.idx.last_video_tag = Some(h.pos);
        }
        let (key, codec) = crate::codecs::video_tag(payload);
        if self.idx.video_codec.is_none() {
            self.idx.video_codec = codec;
        }
        if key {
            self.idx.keyframes.push(Keyframe {
                time: h.ts as f64 / 1000.0,
                offset: h.pos,
            });
        }
        if self.idx.video_config.is_none() && config {
            self.idx.video_config = Some(span);
            if payload[0] & 0x0f == 7
                && let Some(v) = payload.get(5..).and_then(crate::avc::config_record)
            {
                self.idx.coded_width = Some(v.width);
                self.idx.coded_height = Some(v.height);
                self.idx.coded_frame_rate = v.frame_rate;
            }
        }
    }

    /// An audio tag: the codec of the first, the first configuration record.
    fn audio_tag(&mut self, payload: &[u8], span: TagSpan, config: bool) {
        self.idx.tags.audio += 1;
        if let Some(&b) = payload.first()
            && self.idx.audio_codec.is_none()
        {
            self.idx.audio_codec = Some(crate::codecs::audio_codec(b >> 4));
        }
        if config && self.idx.audio_config.is_none() {
            self.idx.audio_config = Some(span);
        }
    }

    /// A script data tag: an onMetaData one read whole is decoded.
    fn script_tag(&mut self, h: Header, payload: &[u8], span: TagSpan) {
        self.idx.tags.script += 1;
        if payload.len() == h.size as usize && payload.starts_with(b"\x02\x00\x0aonM") {
            match crate::amf::script_tag(payload) {
                Ok((name, v)) if name == "onMetaData" => self.on_metadata(h, &v, span),
                Ok(_) => {}
                Err(e) => self.problem(h.pos, format!("script tag at offset {}: {e}", h.pos)),
            }
        }
    }

    /// An onMetaData tag's picture size, frame rate and duration: the first tag's are the
    /// file's metadata.
    fn on_metadata(&mut self, h: Header, v: &crate::amf::Value, span: TagSpan) {
        // A number that is not finite (NaN, infinity) means nothing here and has no JSON
        // form: left out, and said, in every onMetaData tag (so that a segmented walk reports
        // what a single one does); the first tag that decodes is the file's metadata.
        let mut odd = Vec::new();
        let mut num = |k: &'static str| {
            let x = v.get(k).and_then(crate::amf::Value::as_f64)?;
            if x.is_finite() {
                Some(x)
            } else {
                odd.push(k);
                None
            }
        };
        let pixels = |v: Option<f64>| {
            v.filter(|v| (0.0..=f64::from(u32::MAX)).contains(v))
                .map(|v| v.round() as u32)
        };
        let (width, height) = (pixels(num("width")), pixels(num("height")));
        let (frame_rate, duration) = (num("framerate"), num("duration"));
        if self.idx.metadata.is_none() {
            self.idx.width = width;
            self.idx.height = height;
            self.idx.frame_rate = frame_rate;
            self.idx.metadata_duration = duration;
            self.idx.metadata = Some(span);
        }
        for k in odd {
            self.problem(
                h.pos,
                format!(
                    "onMetaData at offset {}: `{k}` is not a finite number; ignored",
                    h.pos
                ),
            );
        }
    }
}

pub(crate) fn prev_mismatch(at: u64, prev: u32, expected: u32) -> FlvProblem {
    FlvProblem {
        offset: Some(at),
        message: format!("PreviousTagSize at offset {at} is {prev}, expected {expected}"),
    }
}

/// A timestamp going backwards or jumping within a track (0 video, 1 audio).
pub(crate) fn ts_problem(track: usize, last: u32, ts: u32, pos: u64) -> Option<FlvProblem> {
    let name = ["video", "audio"][track];
    let message = if ts < last {
        format!("{name} timestamp goes backwards at offset {pos}: {ts} ms after {last} ms")
    } else if ts - last > JUMP_MS {
        format!("{name} timestamp jumps at offset {pos}: {ts} ms after {last} ms")
    } else {
        return None;
    };
    Some(FlvProblem {
        offset: Some(pos),
        message,
    })
}

/// The first `MAX_PROBLEMS` problems, then a count of the rest.
pub(crate) fn problem_list(texts: impl Iterator<Item = FlvProblem>, over: u64) -> Vec<FlvProblem> {
    let mut v: Vec<FlvProblem> = Vec::new();
    let mut extra = over;
    for t in texts {
        if v.len() < MAX_PROBLEMS {
            v.push(t);
        } else {
            extra += 1;
        }
    }
    if extra > 0 {
        v.push(FlvProblem {
            offset: None,
            message: format!("... and {extra} more problems"),
        });
    }
    v
}

/// A video configuration tag: AVC/HEVC sequence header or Enhanced FLV SequenceStart.
fn is_video_config(p: &[u8]) -> bool {
    match p.first() {
        Some(&b) if b & 0x80 != 0 => b & 0x0f == 0,
        Some(&b) => matches!(b & 0x0f, 7 | 12) && p.get(1) == Some(&0),
        None => false,
    }
}

/// An audio configuration tag: AAC sequence header or Enhanced audio SequenceStart.
fn is_audio_config(p: &[u8]) -> bool {
    match p.first() {
        Some(&b) if b >> 4 == 10 => p.get(1) == Some(&0),
        Some(&b) if b >> 4 == 9 => b & 0x0f == 0,
        _ => false,
    }
}

/// A video tag that carries a coded picture (not a configuration, end-of-sequence, metadata or
/// command frame).
fn is_picture(p: &[u8]) -> bool {
    match p.first() {
        Some(&b) if b & 0x80 != 0 => matches!(b & 0x0f, 1 | 3 | 6) && (b >> 4) & 7 != 5,
        Some(&b) if matches!(b & 0x0f, 7 | 12) => p.get(1) == Some(&1),
        Some(&b) => b >> 4 != 5,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::flv::synth::*;
    use crate::index_file;

    #[test]
    fn odd_tags_are_reported_and_the_walk_goes_on() {
        let mut v = header(9);
        tag(&mut v, 9, 0, &[0x12, 0]); // H.263 keyframe
        // A wrong PreviousTagSize after this tag.
        let at = tag(&mut v, 8, 0, &[0x2f, 1]);
        let n = v.len();
        v[n - 4..].copy_from_slice(&999u32.to_be_bytes());
        tag(&mut v, 9, 0, &[]); // zero-size video tag
        tag(&mut v, 9, 80, &[0x22, 0]);
        tag(&mut v, 9, 40, &[0x22, 0]); // backwards
        let k = tag(&mut v, 9, 100_000, &[0x14, 0]); // VP6 keyframe (codec 4), after a jump
        // onMetaData not first.
        let mut meta = b"\x02\x00\x0aonMetaData\x08\x00\x00\x00\x01".to_vec();
        meta.extend_from_slice(b"\x00\x06height\x00");
        meta.extend_from_slice(&480f64.to_be_bytes());
        meta.extend_from_slice(&[0, 0, 9]);
        let m = tag(&mut v, 18, 100_000, &meta);
        let f = write(&v);
        let i = index_file(f.path()).unwrap();
        assert_eq!(i.keyframes.len(), 2);
        assert_eq!(i.keyframes[1].offset, k);
        assert_eq!(i.video_codec.as_deref(), Some("h263 (flv1)"));
        assert_eq!(i.height, Some(480));
        assert_eq!(i.metadata.map(|s| s.offset), Some(m));
        let p = i
            .problems
            .iter()
            .map(|p| p.message.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            p.contains(&format!("PreviousTagSize at offset {} is 999", at + 13)),
            "{p}"
        );
        assert!(p.contains("zero-size video tag"), "{p}");
        assert!(p.contains("goes backwards"), "{p}");
        assert!(p.contains("jumps"), "{p}");
        assert_eq!(i.tags.video, 5);
    }

    #[test]
    fn a_flood_of_problems_is_counted_not_listed() {
        let mut v = header(9);
        for _ in 0..1000 {
            tag(&mut v, 9, 0, &[0x22, 0]);
            let n = v.len();
            v[n - 4..].copy_from_slice(&1u32.to_be_bytes());
        }
        let f = write(&v);
        let i = index_file(f.path()).unwrap();
        assert_eq!(i.tags.video, 1000);
        assert_eq!(i.problems.len(), 17);
        // 1000 mismatches: after each tag, the last one checked at the end of the file.
        assert_eq!(i.problems[16].message, "... and 984 more problems");
        assert_eq!(i.problems[16].offset, None);
        assert!(i.problems[0].offset.is_some());
    }

    #[test]
    fn offsets_past_4_gib_in_a_sparse_file() {
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.flv");
        let file = std::fs::File::create(&path).unwrap();
        let head = header(9);
        file.write_all_at(&head, 0).unwrap();
        // 320 video tags of 16 MiB - 1 payload each (holes): 5.4 GB; keyframe every 10th.
        let size: u32 = (1 << 24) - 1;
        let mut pos = head.len() as u64;
        let mut keys = Vec::new();
        for i in 0..320u32 {
            let mut t = vec![9];
            t.extend_from_slice(&size.to_be_bytes()[1..]);
            let ts = i * 1000;
            t.extend_from_slice(&ts.to_be_bytes()[1..]);
            t.extend_from_slice(&[(ts >> 24) as u8, 0, 0, 0]);
            t.push(if i % 10 == 0 { 0x12 } else { 0x22 });
            file.write_all_at(&t, pos).unwrap();
            file.write_all_at(&(size + 11).to_be_bytes(), pos + 11 + size as u64)
                .unwrap();
            if i % 10 == 0 {
                keys.push(pos);
            }
            pos += 11 + size as u64 + 4;
        }
        drop(file);
        let i = index_file(&path).unwrap();
        assert!(i.size > 5 << 30);
        assert!(i.problems.is_empty(), "{:?}", i.problems);
        let got: Vec<u64> = i.keyframes.iter().map(|k| k.offset).collect();
        assert_eq!(got, keys);
        assert!(*got.last().unwrap() > 1 << 32);
        assert_eq!(i.end, i.size);
    }
}
