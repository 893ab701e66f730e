//! The FLV keyframe index (FLV 10.1 and Enhanced FLV/E-RTMP v2 video tag headers).
//!
//! A keyframe is a coded picture with the key flag: for AVC/HEVC (legacy codec ids 7 and 12) the
//! AVC packet type must be 1 (NALU), so the sequence header (0) and end of sequence (2), which
//! carry the key flag but are not pictures, are left out (as ffprobe does; flvmeta and yamdi list
//! them). For Enhanced FLV (bit 7 of the first byte set: frame type in bits 4-6, packet type in
//! the low nibble, then a FourCC) a keyframe is frame type 1 with packet type CodedFrames (1) or
//! CodedFramesX (3); for Multitrack (6) the inner packet type is checked. Command frames (frame
//! type 5) are not pictures.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use crate::walker::Walker;

#[derive(Debug, thiserror::Error)]
pub enum FlvError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not an FLV file (no 'FLV' signature)", path.display())]
    NotFlv { path: PathBuf },
    #[error("{}: truncated FLV header ({size} bytes)", path.display())]
    TruncatedHeader { path: PathBuf, size: u64 },
    #[error("{}: bad FLV header: data offset {offset} (must be at least 9 and inside the file)", path.display())]
    BadDataOffset { path: PathBuf, offset: u64 },
}

/// One keyframe: its time and the byte offset of its tag.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Keyframe {
    /// Seconds (millisecond precision).
    pub time: f64,
    /// Offset of the tag's first byte in the file.
    pub offset: u64,
}

/// Where a tag lies: its offset and its size with the 11-byte header (without the 4-byte
/// PreviousTagSize that follows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TagSpan {
    pub offset: u64,
    pub size: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TagCounts {
    pub video: u64,
    pub audio: u64,
    pub script: u64,
    pub other: u64,
}

/// What indexing one file found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlvIndex {
    pub path: String,
    pub size: u64,
    /// Seconds: the largest tag timestamp seen.
    pub duration: f64,
    pub video_codec: Option<String>,
    pub audio_codec: Option<String>,
    /// From onMetaData, when present.
    pub width: Option<f64>,
    pub height: Option<f64>,
    pub frame_rate: Option<f64>,
    pub metadata_duration: Option<f64>,
    /// From the AVC sequence header's SPS, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coded_width: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coded_height: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coded_frame_rate: Option<f64>,
    pub keyframes: Vec<Keyframe>,
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
    pub problems: Vec<String>,
    /// Bytes actually read to build the index.
    pub bytes_read: u64,
}

pub(crate) fn legacy_video_codec(id: u8) -> String {
    match id {
        2 => "h263 (flv1)".into(),
        3 => "screen video".into(),
        4 => "vp6".into(),
        5 => "vp6a".into(),
        6 => "screen video 2".into(),
        7 => "avc".into(),
        12 => "hevc".into(),
        n => format!("video codec {n}"),
    }
}

pub(crate) fn audio_codec(id: u8) -> String {
    match id {
        0 => "pcm".into(),
        1 => "adpcm".into(),
        2 => "mp3".into(),
        3 => "pcm le".into(),
        4..=6 => "nellymoser".into(),
        7 | 8 => "g711".into(),
        9 => "enhanced audio".into(),
        10 => "aac".into(),
        11 => "speex".into(),
        14 => "mp3 8khz".into(),
        n => format!("audio codec {n}"),
    }
}

/// Whether a video tag whose payload starts with `p` is a keyframe, and its codec name.
pub(crate) fn video_tag(p: &[u8]) -> (bool, Option<String>) {
    let Some(&b0) = p.first() else {
        return (false, None);
    };
    if b0 & 0x80 != 0 {
        // Enhanced FLV: [1][frame type:3][packet type:4] then FourCC (or multitrack byte first).
        let frame_type = (b0 >> 4) & 7;
        let mut packet_type = b0 & 0x0f;
        let mut fourcc_at = 1;
        if packet_type == 6 {
            // Multitrack: [multitrack type:4][inner packet type:4], then FourCC.
            let Some(&b1) = p.get(1) else {
                return (false, None);
            };
            packet_type = b1 & 0x0f;
            fourcc_at = 2;
        }
        let codec = p
            .get(fourcc_at..fourcc_at + 4)
            .map(|f| String::from_utf8_lossy(f).into_owned());
        (
            frame_type == 1 && (packet_type == 1 || packet_type == 3),
            codec,
        )
    } else {
        let frame_type = b0 >> 4;
        let codec_id = b0 & 0x0f;
        let key = frame_type == 1
            && match codec_id {
                // AVC/HEVC: only NALU packets are pictures.
                7 | 12 => p.get(1) == Some(&1),
                _ => true,
            };
        (key, Some(legacy_video_codec(codec_id)))
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
        }
    }

    /// The last keyframe at or before `seconds` (the first one when all are later).
    pub fn keyframe_at(&self, seconds: f64) -> Option<Keyframe> {
        let i = self.keyframes.partition_point(|k| k.time <= seconds);
        self.keyframes.get(i.saturating_sub(1)).copied()
    }
}

/// How [`index_file_with`] reaches the tag headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeekMethod {
    /// One `pread` per tag (header and payload start together).
    Pread,
    /// The file mapped with `MADV_RANDOM` (no read-ahead): only the pages holding tag headers
    /// are touched; no system call per tag, but page faults (one per 64 KiB of file, or fewer
    /// where the page cache holds large folios).
    Mmap,
    /// `Mmap` for files of small tags; otherwise whichever of the two is timed cheaper on the
    /// file, measured again as the walk goes (the default; see `Fetch`).
    Auto,
}

/// Indexes one FLV file by seeking from tag header to tag header.
pub fn index_file(path: &Path) -> Result<FlvIndex, FlvError> {
    index_file_with(path, SeekMethod::Auto)
}

/// Indexes one FLV file; the [`Walker`] asks for the ranges, `method` fetches them.
pub fn index_file_with(path: &Path, method: SeekMethod) -> Result<FlvIndex, FlvError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    index_file_on(path, method, threads)
}

/// Files at least this large are cut into segments indexed at once (see `parallel`).
const PARALLEL_MIN: u64 = 64 << 20;
/// The smallest segment.
const SEGMENT_MIN: u64 = 32 << 20;

/// As [`index_file_with`], on at most `threads` threads.
pub fn index_file_on(
    path: &Path,
    method: SeekMethod,
    threads: usize,
) -> Result<FlvIndex, FlvError> {
    let io = |source| FlvError::Io {
        path: path.into(),
        source,
    };
    let file = open_regular(path).map_err(io)?;
    index_open(path, &file, method, threads)
}

/// Opens `path` for reading without ever blocking (`O_NONBLOCK`: a FIFO put where a file was
/// expected fails here instead of waiting for a writer) and checks with `fstat` that it is a
/// regular file.
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let ft = file.metadata()?.file_type();
    if !ft.is_file() {
        return Err(std::io::Error::other(if ft.is_fifo() {
            "a FIFO (named pipe), not a regular file"
        } else if ft.is_dir() {
            "a directory, not a regular file"
        } else {
            "not a regular file"
        }));
    }
    Ok(file)
}

/// As [`index_file_on`], for a file already open (`path` names it in the index and errors).
pub fn index_open(
    path: &Path,
    file: &File,
    method: SeekMethod,
    threads: usize,
) -> Result<FlvIndex, FlvError> {
    let io = |source| FlvError::Io {
        path: path.into(),
        source,
    };
    let md = file.metadata().map_err(io)?;
    if !md.is_file() {
        return Err(io(std::io::Error::other("not a regular file")));
    }
    let size = md.len();
    // SAFETY: the map is only read and dropped before returning. Its one hazard, another
    // process truncating the file during the walk (a touched page past the new end raises
    // SIGBUS), is caught by the guard registered below before any page is touched: such pages
    // read as zeros and the index is refused. The server (`trawl serve`) uses `Pread`.
    let mut map = match method {
        SeekMethod::Pread => None,
        _ if size == 0 => None,
        _ => {
            // SAFETY: the file may change under the map; the SIGBUS guard registered below, before any page is touched, turns a truncation into zeros and a refused index (see above).
            let m = unsafe { memmap2::MmapOptions::new().map(file) }.map_err(io)?;
            // No read-ahead: only the pages holding tag headers are wanted.
            let _ = m.advise(memmap2::Advice::Random);
            Some(m)
        }
    };
    let shrank = Arc::new(AtomicBool::new(false));
    // Declared after the map, so dropped before it.
    let guard = map
        .as_deref()
        .and_then(|m| trawl_read::sigbus::guard(m, &shrank));
    let method = if map.is_some() && guard.is_none() {
        // No guard to be had: no map either.
        map = None;
        SeekMethod::Pread
    } else {
        method
    };
    let map_ref = map.as_deref();
    let parts = (size / SEGMENT_MIN).min(threads as u64) as usize;
    let index = if size >= PARALLEL_MIN && parts > 1 {
        crate::parallel::index(path, Some(file), map_ref, method, size, parts)
    } else {
        let mut w = Walker::new(path, size);
        drive(&mut w, &mut Fetch::new(Some(file), map_ref, method))
            .map_err(io)?
            .map(|()| w.finish())
    };
    if shrank.load(Ordering::SeqCst) {
        return Err(io(std::io::Error::other(
            "the file shrank while it was indexed (pages past its new end read as zeros); no index",
        )));
    }
    index
}

/// Tag headers fetched with each method, timed, before `Auto` decides.
const AUTO_PROBE: u32 = 128;
/// Tag headers fetched with the chosen method before `Auto` measures again (doubled each time
/// the measurement confirms the choice).
const AUTO_REPROBE: u32 = 4096;
/// Tags closer than this on average (bytes) are always reached through the map: a fault maps
/// at least 64 KiB, which serves many of them, and mapped access won in every page-cache state
/// measured (bench/media's 2 Mbit/s file: 0.10 s mapped against 0.16 s `pread`, 4 KiB-cached;
/// 0.035 against 0.13, cached by a sequential read).
const AUTO_MMAP_BELOW: u64 = 10 << 10;
/// Requests longer than this (a whole onMetaData or configuration payload) are not timed: the
/// probe compares the cost of reaching one tag header.
const AUTO_TIMED_MAX: usize = 64;

/// Fetches the ranges a walk asks for: `pread` or the map, as the method says. `Auto` decides
/// by measurement: its first `AUTO_PROBE` header fetches go through the map, the next
/// `AUTO_PROBE` through `pread`, each run timed, and the cheaper method is kept for the rest of
/// the walk, measured again every `AUTO_REPROBE` headers (a file's start is often cached in
/// smaller folios than the rest; parts of a file may be cached differently). (Runs, not alternation: a fault maps the pages around it, which the next tags use;
/// alternating would halve what mapped access gains from that.) What a mapped access
/// costs depends on the page cache: on Linux 6.18, a file cached by a sequential read is held in
/// large folios that one fault maps whole, and mapped access is cheap whatever the tag size;
/// cached 4 KiB at a time, a fault maps 64 KiB (fault-around) and costs ~5 us, which only
/// small tags amortise (bench/media measures both states).
pub(crate) struct Fetch<'a> {
    /// `None`: the whole file is `map` (bytes in memory).
    file: Option<&'a File>,
    map: Option<&'a [u8]>,
    mapped: bool,
    auto: bool,
    /// Header fetches timed so far, and the nanoseconds they took: [pread, map].
    timed: [u32; 2],
    /// Header fetches since `Auto` last decided (0: it will not measure again), and how many
    /// it waits for before measuring again.
    since: u32,
    reprobe: u32,
    /// What the last measurement chose.
    was_mapped: bool,
    /// Where the first measurement started.
    first: Option<u64>,
    spent: [u64; 2],
    buf: Vec<u8>,
}

impl<'a> Fetch<'a> {
    pub(crate) fn new(
        file: Option<&'a File>,
        map: Option<&'a [u8]>,
        method: SeekMethod,
    ) -> Fetch<'a> {
        Fetch {
            file,
            map,
            mapped: (method == SeekMethod::Mmap || file.is_none()) && map.is_some(),
            auto: method == SeekMethod::Auto && map.is_some() && file.is_some(),
            timed: [0; 2],
            spent: [0; 2],
            since: 0,
            reprobe: AUTO_REPROBE,
            was_mapped: false,
            first: None,
            buf: Vec::new(),
        }
    }

    /// Up to `len` bytes at `at` (fewer at the end of the file).
    pub(crate) fn get(&mut self, at: u64, len: usize) -> std::io::Result<&[u8]> {
        if !self.auto {
            if self.since > 0 && len <= AUTO_TIMED_MAX {
                self.since += 1;
                if self.since == self.reprobe {
                    (self.auto, self.timed, self.spent) = (true, [0; 2], [0; 2]);
                }
            }
            return self.fetch(at, len);
        }
        let m = (self.timed[1] < AUTO_PROBE) as usize;
        self.mapped = m == 1;
        let clock = std::time::Instant::now();
        let n = self.fetch(at, len)?.len();
        if m == 1 && n > 0 {
            // Fault the pages in now, inside the timed span, rather than in the walker.
            let d = self.fetch(at, len)?;
            std::hint::black_box((d[0], d[n - 1]));
        }
        if len <= AUTO_TIMED_MAX {
            self.spent[m] += clock.elapsed().as_nanos() as u64;
            self.timed[m] += 1;
            let first = *self.first.get_or_insert(at);
            let spacing = at.saturating_sub(first) / u64::from(AUTO_PROBE);
            if self.since == 0 && self.timed[1] == AUTO_PROBE && spacing < AUTO_MMAP_BELOW {
                // Small tags: mapped, for good.
                (self.mapped, self.auto, self.since) = (true, false, 0);
                return self.fetch(at, len);
            }
            if self.timed[0] == AUTO_PROBE {
                let mapped = self.spent[1] <= self.spent[0];
                if self.since > 0 && mapped == self.was_mapped {
                    self.reprobe = self.reprobe.saturating_mul(2);
                }
                (self.mapped, self.was_mapped, self.auto, self.since) = (mapped, mapped, false, 1);
            }
        }
        if m == 0 && !self.mapped {
            // The bytes just read.
            return Ok(&self.buf[..n]);
        }
        self.fetch(at, len)
    }

    fn fetch(&mut self, at: u64, len: usize) -> std::io::Result<&[u8]> {
        if let (true, Some(m)) = (self.mapped, self.map) {
            let at = (at as usize).min(m.len());
            let end = at.saturating_add(len).min(m.len());
            return Ok(&m[at..end]);
        }
        let Some(file) = self.file else {
            return Ok(&[]);
        };
        self.buf.resize(len, 0);
        let n = read_at(file, &mut self.buf, at)?;
        Ok(&self.buf[..n])
    }
}

/// Runs a walk to its end.
pub(crate) fn drive(
    w: &mut Walker,
    fetch: &mut Fetch<'_>,
) -> std::io::Result<Result<(), FlvError>> {
    while let Some((at, len)) = w.want() {
        let data = fetch.get(at, len)?;
        if let Err(e) = w.give(data) {
            return Ok(Err(e));
        }
    }
    Ok(Ok(()))
}

/// The rest of a walk over bytes in memory (`data` is the whole file).
fn walk_slice(mut w: Walker, data: &[u8]) -> Result<FlvIndex, FlvError> {
    while let Some((at, len)) = w.want() {
        let at = (at as usize).min(data.len());
        let end = (at + len).min(data.len());
        w.give(&data[at..end])?;
    }
    Ok(w.finish())
}

/// Indexes an FLV file held in memory (`name` is the path reported).
pub fn index_bytes(name: &Path, data: &[u8]) -> Result<FlvIndex, FlvError> {
    walk_slice(Walker::new(name, data.len() as u64), data)
}

/// The segmented walk of a large file (see `parallel`) over bytes in memory, in `parts`
/// segments whatever the size: for tests and fuzzing, which compare it with [`index_bytes`].
pub fn index_bytes_in_parts(name: &Path, data: &[u8], parts: usize) -> Result<FlvIndex, FlvError> {
    let size = data.len() as u64;
    if size == 0 || parts < 2 {
        return index_bytes(name, data);
    }
    crate::parallel::index(name, None, Some(data), SeekMethod::Mmap, size, parts)
}

fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], at + done as u64) {
            Ok(0) => break,
            Ok(k) => done += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

#[cfg(test)]
pub(crate) mod synth {
    //! Hand-made FLV files for unit tests.

    /// A tag: type, payload, timestamp (with the extended byte).
    pub fn tag(out: &mut Vec<u8>, t: u8, ts: u32, payload: &[u8]) -> u64 {
        let at = out.len() as u64;
        let n = payload.len() as u32;
        out.push(t);
        out.extend_from_slice(&n.to_be_bytes()[1..]);
        out.extend_from_slice(&ts.to_be_bytes()[1..]);
        out.push((ts >> 24) as u8);
        out.extend_from_slice(&[0, 0, 0]);
        out.extend_from_slice(payload);
        out.extend_from_slice(&(n + 11).to_be_bytes());
        at
    }

    pub fn header(data_offset: u32) -> Vec<u8> {
        let mut v = b"FLV\x01\x05".to_vec();
        v.extend_from_slice(&data_offset.to_be_bytes());
        v.resize(data_offset as usize, 0);
        v.extend_from_slice(&[0, 0, 0, 0]);
        v
    }

    pub fn write(data: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, data).unwrap();
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::synth::*;

    #[test]
    fn auto_fetch_returns_the_right_bytes_through_every_probe_and_switch() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let data: Vec<u8> = (0..(4u32 << 20))
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        std::fs::write(&p, &data).unwrap();
        let file = File::open(&p).unwrap();
        // SAFETY: a test file of our own that nothing else changes while it is mapped.
        let map = unsafe { memmap2::MmapOptions::new().map(&file) }.unwrap();
        // Spacings both sides of AUTO_MMAP_BELOW; enough headers for several re-measurements;
        // now and then a long (untimed) request, as for an onMetaData payload.
        for step in [1000u64, 12_345] {
            let mut f = Fetch::new(Some(&file), Some(&map), SeekMethod::Auto);
            let (mut at, mut modes) = (0u64, [0u32; 2]);
            for i in 0..40_000u64 {
                let len = if i % 1000 == 7 { 5000 } else { 21 };
                let got = f.get(at, len).unwrap().to_vec();
                let end = (at as usize + len).min(data.len());
                assert_eq!(
                    got,
                    &data[at as usize..end],
                    "step {step}, fetch {i} at {at}"
                );
                modes[f.mapped as usize] += 1;
                at = (at + step) % (data.len() as u64 - 10);
            }
            if step < AUTO_MMAP_BELOW {
                assert_eq!(modes[0], 0, "small tags: mapped from the start, for good");
            } else {
                // Measured at the start and again after 4096, 8192 (or 4096) more headers.
                assert!(modes[0] >= 3 * AUTO_PROBE, "pread runs measured: {modes:?}");
                assert!(
                    modes[1] >= 3 * AUTO_PROBE,
                    "mapped runs measured: {modes:?}"
                );
            }
        }
    }

    /// An onMetaData script tag's payload: an ECMA array of these numbers.
    fn on_metadata(numbers: &[(&str, f64)]) -> Vec<u8> {
        let mut meta = b"\x02\x00\x0aonMetaData\x08".to_vec();
        meta.extend_from_slice(&(numbers.len() as u32).to_be_bytes());
        for (k, n) in numbers {
            meta.extend_from_slice(&(k.len() as u16).to_be_bytes());
            meta.extend_from_slice(k.as_bytes());
            meta.push(0);
            meta.extend_from_slice(&n.to_be_bytes());
        }
        meta.extend_from_slice(&[0, 0, 9]);
        meta
    }

    #[test]
    fn metadata_numbers_that_are_not_finite_are_left_out_and_reported() {
        // Found by the fuzz target: a NaN duration made two equal indexes compare unequal; nor
        // has it a JSON form.
        let mut v = header(9);
        let meta = on_metadata(&[
            ("duration", f64::NAN),
            ("width", f64::INFINITY),
            ("height", 240.0),
        ]);
        tag(&mut v, 18, 0, &meta);
        let k = tag(&mut v, 9, 0, &[0x17, 1, 0, 0, 0, 9]);
        let i = index_bytes(Path::new("nan.flv"), &v).unwrap();
        assert_eq!(i.metadata_duration, None);
        assert_eq!((i.width, i.height), (None, Some(240.0)));
        assert_eq!(
            i.keyframes,
            vec![Keyframe {
                time: 0.0,
                offset: k
            }]
        );
        assert_eq!(
            i.problems,
            vec![
                "onMetaData at offset 13: `width` is not a finite number; ignored",
                "onMetaData at offset 13: `duration` is not a finite number; ignored",
            ]
        );
        assert_eq!(
            index_bytes_in_parts(Path::new("nan.flv"), &v, 2).unwrap(),
            i
        );
    }

    #[test]
    fn avc_keyframes_leave_out_sequence_headers_and_end_of_sequence() {
        let mut v = header(9);
        tag(
            &mut v,
            18,
            0,
            &on_metadata(&[("width", 320.0), ("height", 240.0)]),
        );
        tag(&mut v, 9, 0, &[0x17, 0, 0, 0, 0, 1]); // sequence header: key flag, not a picture
        tag(&mut v, 8, 0, &[0xaf, 0, 0x12]); // AAC config
        let k1 = tag(&mut v, 9, 0, &[0x17, 1, 0, 0, 0, 9, 9]);
        tag(&mut v, 9, 40, &[0x27, 1, 0, 0, 0, 9]);
        let k2 = tag(&mut v, 9, 2000, &[0x17, 1, 0, 0, 0, 9, 9, 9, 9]);
        tag(&mut v, 9, 2040, &[0x17, 2, 0, 0, 0]); // end of sequence
        let f = write(&v);
        let i = index_file(f.path()).unwrap();
        assert_eq!(
            i.keyframes,
            vec![
                Keyframe {
                    time: 0.0,
                    offset: k1
                },
                Keyframe {
                    time: 2.0,
                    offset: k2
                }
            ]
        );
        assert_eq!(i.video_codec.as_deref(), Some("avc"));
        assert_eq!(i.audio_codec.as_deref(), Some("aac"));
        assert_eq!(i.tags.video, 5);
        assert!(i.problems.is_empty());
        assert_eq!(i.duration, 2.04);
        assert_eq!((i.width, i.height), (Some(320.0), Some(240.0)));
    }

    #[test]
    fn enhanced_flv_extended_timestamps_and_a_data_offset_not_9() {
        let mut v = header(13);
        tag(&mut v, 9, 0, b"\x90hvc1"); // SequenceStart, key flag: not a picture
        let k1 = tag(&mut v, 9, 0, b"\x91hvc1\x00\x00\x00x");
        tag(&mut v, 9, 33, b"\xa1hvc1\x00\x00\x00x"); // inter frame
        let big = 0x0100_0000 + 5; // needs the extended timestamp byte
        let k2 = tag(&mut v, 9, big, b"\x93av01x"); // CodedFramesX
        tag(&mut v, 9, big + 1, b"\xd1av01"); // command frame: not a picture
        let k3 = tag(&mut v, 9, big + 2, b"\x96\x01vp09x"); // multitrack, inner CodedFrames
        let f = write(&v);
        let i = index_file(f.path()).unwrap();
        let offs: Vec<u64> = i.keyframes.iter().map(|k| k.offset).collect();
        assert_eq!(offs, vec![k1, k2, k3]);
        assert_eq!(i.keyframes[1].time, big as f64 / 1000.0);
        assert_eq!(i.video_codec.as_deref(), Some("hvc1"));
    }

    #[test]
    fn truncated_and_hostile_files_are_indexed_up_to_where_they_break() {
        let mut v = header(9);
        let k1 = tag(&mut v, 9, 0, &[0x12, 0, 0]); // H.263 keyframe
        let cut = v.len();
        tag(&mut v, 9, 40, &[0x12; 100]);
        // Cut inside the second tag's payload.
        let f = write(&v[..cut + 30]);
        let i = index_file(f.path()).unwrap();
        assert_eq!(i.keyframes.len(), 1);
        assert_eq!(i.keyframes[0].offset, k1);
        assert!(
            i.problems[0].contains(&format!("offset {cut}")),
            "{:?}",
            i.problems
        );
        // A size field claiming 16 MiB in a small file: no allocation, a clear stop.
        let mut h = header(9);
        h.extend_from_slice(&[9, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0x17, 1]);
        let f = write(&h);
        let i = index_file(f.path()).unwrap();
        assert!(i.keyframes.is_empty());
        assert!(
            i.problems[0].contains("runs past the end"),
            "{:?}",
            i.problems
        );
        // Not FLV, truncated header, bad data offset.
        let f = write(b"GIF89a....");
        assert!(matches!(index_file(f.path()), Err(FlvError::NotFlv { .. })));
        let f = write(b"FLV\x01");
        assert!(matches!(
            index_file(f.path()),
            Err(FlvError::TruncatedHeader { .. })
        ));
        let f = write(b"FLV\x01\x05\x00\x00\x00\x03\x00\x00\x00\x00");
        assert!(matches!(
            index_file(f.path()),
            Err(FlvError::BadDataOffset { .. })
        ));
    }

    #[test]
    fn enhanced_samples_have_keyframes_at_video_tags_and_reads_are_a_small_fraction() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/media/enhanced-flv"
        );
        let Ok(rd) = std::fs::read_dir(dir) else {
            eprintln!("SKIPPED: {dir} not present");
            return;
        };
        let mut seen = 0;
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().and_then(|x| x.to_str()) != Some("flv") {
                continue;
            }
            let i = index_file(&p).unwrap();
            assert!(!i.keyframes.is_empty(), "{}: no keyframes", p.display());
            assert!(i.problems.is_empty(), "{:?}", i.problems);
            let data = std::fs::read(&p).unwrap();
            for k in &i.keyframes {
                let o = k.offset as usize;
                assert_eq!(data[o] & 0x1f, 9, "keyframe offset {o} is a video tag");
                assert_eq!(data[o + 11] & 0x80, 0x80, "an Enhanced FLV video tag");
                assert_eq!((data[o + 11] >> 4) & 7, 1, "with the key frame type");
            }
            // These samples have ~370-byte tags, so the 21 bytes looked at per tag are ~6%;
            // in real files tags are kilobytes and the fraction far smaller.
            assert!(
                i.bytes_read * 10 < i.size,
                "read {} of {}",
                i.bytes_read,
                i.size
            );
            seen += 1;
        }
        assert_eq!(seen, 3);
    }
}
