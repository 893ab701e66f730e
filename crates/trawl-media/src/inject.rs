//! `flv inject`: a copy of an FLV file whose first tag is an onMetaData script tag carrying the
//! keyframe index (`keyframes.filepositions` / `keyframes.times`), as yamdi and flvmeta write
//! it, with every offset counted in the new file.
//!
//! Layout of the copy: a 9-byte header (data offset 9, audio/video flags from the tags found),
//! PreviousTagSize 0, the new onMetaData tag and its PreviousTagSize, then every complete tag
//! of the input in order except its old onMetaData tag. The existing onMetaData keys are kept in
//! their order; the keys listed in [`SET_KEYS`] are replaced. AMF0 numbers are 8 bytes whatever
//! their value, so the new tag's size is known before the offsets that go into it.
//!
//! Reflinks (`cp --reflink`): where OUT's filesystem can share extents with IN (XFS, btrfs), the
//! body is not copied but cloned (FICLONERANGE). A clone needs the source and destination
//! offsets on the same block boundary, so the new onMetaData gets a `trawlpadding` value that
//! makes the body's shift a whole number of blocks (an array of strings of spaces: ffmpeg
//! rejects metadata strings over 255 bytes); the few bytes before the first block boundary are
//! copied. Without reflinks (ext4, tmpfs, another filesystem) nothing is padded and the body
//! goes through `copy_file_range`.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;

use crate::amf::{self, Value};
use crate::index::FlvIndex;

/// The keys written (any existing value is replaced, or dropped where the file has no tags
/// the key speaks of: `audiosize` in a file without audio, say). `width` and `height` (from an
/// AVC sequence header) and `audiosamplerate`, `audiosamplesize` and `stereo` (from the first
/// audio tag's format bits, which Enhanced FLV audio has not) are set where the tags tell them,
/// and an existing value is kept otherwise.
pub const SET_KEYS: &[&str] = &[
    "hasKeyframes",
    "hasVideo",
    "hasAudio",
    "hasMetadata",
    "canSeekToEnd",
    "duration",
    "filesize",
    "datasize",
    "videosize",
    "audiosize",
    "videodatarate",
    "audiodatarate",
    "videocodecid",
    "audiocodecid",
    "lasttimestamp",
    "lastkeyframetimestamp",
    "lastkeyframelocation",
    "metadatacreator",
    "keyframes",
];

/// The key whose value pads the onMetaData tag for a reflinked copy; an existing one is
/// dropped, like the keys in [`SET_KEYS`].
pub const PADDING_KEY: &str = "trawlpadding";

/// Whether the copy may share IN's blocks, as `cp --reflink`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reflink {
    /// Where OUT's filesystem can, for inputs of 1 MiB or more.
    #[default]
    Auto,
    /// Or fail.
    Always,
    /// Copy every byte.
    Never,
}

/// Below this body size, `Reflink::Auto` copies: a padding of up to a block is not worth it.
const REFLINK_MIN: u64 = 1 << 20;

/// What was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Injected {
    /// The new file's size.
    pub size: u64,
    /// Keyframes in the index written.
    pub keyframes: usize,
    /// Size of the new onMetaData tag, header included.
    pub metadata_tag: u64,
    /// Bytes at the end of the input that were not complete tags and were left out.
    pub dropped_tail: u64,
    /// Bytes of the copy that share IN's blocks (reflink) rather than being copied.
    pub shared: u64,
}

/// An AMF0 strict array that encodes to exactly `n` bytes more than an empty one: strings of
/// spaces (3 + up to 255 bytes each: ffmpeg refuses longer strings in metadata) and, for a
/// remainder under 3 bytes, nulls (1 byte each).
fn padding(n: usize) -> Value {
    const MOST: usize = 3 + 255;
    let mut items = vec![Value::String(" ".repeat(255)); n / MOST];
    match n % MOST {
        r @ 3.. => items.push(Value::String(" ".repeat(r - 3))),
        r => items.extend(std::iter::repeat_n(Value::Null, r)),
    }
    Value::Array(items)
}

/// Whether `out` (empty) can share `src`'s blocks, and the filesystem's block size if so.
/// FICLONE shares all of `src` with `out`: it is constant time where it works and the plainest
/// test of whether it works; `out` is emptied again at once.
fn clone_block(src: &File, out: &File) -> io::Result<u64> {
    // SAFETY: FICLONE takes the source descriptor as its argument; both descriptors are open.
    if unsafe { libc::ioctl(out.as_raw_fd(), libc::FICLONE, src.as_raw_fd()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    out.set_len(0)?;
    // SAFETY: statvfs is plain data, filled in by the call.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: fstatvfs writes only into `st`, which we own.
    if unsafe { libc::fstatvfs(out.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((st.f_bsize as u64).max(512))
}

/// Shares `src` from `src_offset` to its end with `out` at `dest_offset` (both block-aligned).
fn clone_range(src: &File, src_offset: u64, out: &File, dest_offset: u64) -> io::Result<()> {
    let arg = libc::file_clone_range {
        src_fd: src.as_raw_fd() as i64,
        src_offset,
        src_length: 0, // to the end of `src`
        dest_offset,
    };
    // SAFETY: FICLONERANGE reads the struct, which lives across the call.
    if unsafe { libc::ioctl(out.as_raw_fd(), libc::FICLONERANGE, &arg) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The old onMetaData's entries trawl does not set itself (kept in the new one).
fn kept_metadata(idx: &FlvIndex, src: &File) -> io::Result<Vec<(String, Value)>> {
    let mut kept: Vec<(String, Value)> = Vec::new();
    if let Some(m) = idx.metadata {
        let mut payload = vec![0u8; (m.size - 11) as usize];
        (&*src).seek(SeekFrom::Start(m.offset + 11))?;
        (&*src).read_exact(&mut payload)?;
        if let Ok((_, Value::EcmaArray(kv) | Value::Object(kv))) = amf::script_tag(&payload) {
            kept = kv
                .into_iter()
                .filter(|(k, _)| !SET_KEYS.contains(&k.as_str()) && k != PADDING_KEY)
                .collect();
        }
    }
    Ok(kept)
}

/// The block size to share IN's blocks by (a reflink clone), or None to copy every byte.
fn sharing_block(
    src: &File,
    out: &File,
    reflink: Reflink,
    seekable: bool,
    body: u64,
) -> io::Result<Option<u64>> {
    Ok(match reflink {
        _ if !seekable => None,
        Reflink::Never => None,
        Reflink::Auto if body < REFLINK_MIN => None,
        _ => match clone_block(src, out) {
            Ok(b) if b <= 1 << 16 => Some(b),
            Ok(b) => {
                if reflink == Reflink::Always {
                    return Err(io::Error::other(format!(
                        "cannot share IN's blocks: a {b}-byte block is more than a padding string holds"
                    )));
                }
                None
            }
            Err(e) if reflink == Reflink::Always => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot share IN's blocks (reflink): {e}"),
                ));
            }
            Err(_) => None,
        },
    })
}

/// The new onMetaData payload: the kept entries, the figures trawl sets, the keyframe index at
/// `positions` in the copy, and `pad` bytes of padding (a clone's alignment). `tag_len` is the
/// size of the tag it goes in (header included), which `datasize` counts.
///
/// The figures are the ones flvmeta's checker (`flvmeta -C`) computes from the tags and
/// compares with what onMetaData says (see [`crate::TagFigures`]): each kind's tags with their headers
/// (not the 4 bytes after each); `datasize` the script data tags, this one included; the rates
/// the payloads after each tag's first byte, in units of 1,024 bits a second over the time from
/// the first audio or video tag to the last tag plus one frame; the keyframes every video tag
/// flagged key, the first at each timestamp; codec ids and audio format from the first tag's
/// header. Long on purpose: the keys in the order they are written.
fn metadata_payload(
    idx: &FlvIndex,
    kept: &[(String, Value)],
    positions: &dyn Fn(u64) -> u64,
    filesize: u64,
    tag_len: u64,
    pad: Option<usize>,
) -> Vec<u8> {
    let f = &idx.figures;
    let keys = &f.flagged;
    let last = keys.last();
    let num = Value::Number;
    let (has_video, has_audio) = (f.video_ts.0.is_some(), f.audio_ts.0.is_some());
    let last_ms = (idx.last_timestamp * 1000.0).round() as u32;
    let play = f.play_time(last_ms);
    let old_meta = idx.metadata.map_or(0, |m| m.size);
    let rate = |bytes: u64| {
        if play > 0.0 {
            bytes as f64 / 1024.0 * 8.0 / play
        } else {
            0.0
        }
    };
    // The audio format bits (rate, size, channels), where the tag has them: not under Enhanced
    // FLV's ExHeader (format 9), whose low bits are a packet type.
    let audio_bits = f.audio_flags.filter(|b| b >> 4 != 9);
    let mut known: Vec<(&str, Value)> = Vec::new();
    if has_video && let (Some(w), Some(h)) = (idx.coded_width, idx.coded_height) {
        known.push(("width", num(f64::from(w))));
        known.push(("height", num(f64::from(h))));
    }
    if has_audio && let Some(b) = audio_bits {
        let rates = [5500.0, 11000.0, 22050.0, 44100.0];
        known.push(("audiosamplerate", num(rates[usize::from((b >> 2) & 3)])));
        known.push(("audiosamplesize", num(if b & 2 != 0 { 16.0 } else { 8.0 })));
        known.push(("stereo", Value::Bool(b & 1 != 0)));
    }
    // Kept keys in their order, those trawl knows better replaced where they stand.
    let mut kv: Vec<(String, Value)> = kept
        .iter()
        .map(|(k, v)| match known.iter().position(|(n, _)| n == k) {
            Some(i) => (k.clone(), known.remove(i).1),
            None => (k.clone(), v.clone()),
        })
        .filter(|(k, _)| {
            // Audio keys of a file without audio (and video keys without video) say something
            // the tags do not.
            let audio_key = ["audiosamplerate", "audiosamplesize", "stereo"].contains(&k.as_str());
            let video_key = ["width", "height"].contains(&k.as_str());
            (has_audio || !audio_key) && (has_video || !video_key)
        })
        .collect();
    kv.extend(known.into_iter().map(|(k, v)| (k.to_string(), v)));
    kv.extend([
        ("hasKeyframes".into(), Value::Bool(!keys.is_empty())),
        ("hasVideo".into(), Value::Bool(has_video)),
        ("hasAudio".into(), Value::Bool(has_audio)),
        ("hasMetadata".into(), Value::Bool(true)),
        // The last video tag is flagged key.
        ("canSeekToEnd".into(), Value::Bool(f.ends_on_key)),
        ("duration".into(), num(play)),
        ("filesize".into(), num(filesize as f64)),
        (
            "datasize".into(),
            num((f.script.saturating_sub(old_meta) + tag_len) as f64),
        ),
    ]);
    if has_video {
        kv.push(("videosize".into(), num(f.video as f64)));
        kv.push(("videodatarate".into(), num(rate(f.video_data))));
        if let Some(id) = f.video_codec_id {
            kv.push(("videocodecid".into(), num(f64::from(id))));
        }
    }
    if has_audio {
        kv.push(("audiosize".into(), num(f.audio as f64)));
        kv.push(("audiodatarate".into(), num(rate(f.audio_data))));
        let id = match (f.audio_flags, f.audio_fourcc) {
            (_, Some(fourcc)) => Some(fourcc),
            (Some(b), None) if b >> 4 != 9 => Some(u32::from(b >> 4)),
            _ => None,
        };
        if let Some(id) = id {
            kv.push(("audiocodecid".into(), num(f64::from(id))));
        }
    }
    kv.extend([
        ("lasttimestamp".into(), num(idx.last_timestamp)),
        (
            "lastkeyframetimestamp".into(),
            num(last.map_or(0.0, |k| k.time)),
        ),
        (
            "lastkeyframelocation".into(),
            num(last.map_or(0.0, |k| positions(k.offset) as f64)),
        ),
        (
            "metadatacreator".into(),
            Value::String(concat!("trawl ", env!("CARGO_PKG_VERSION")).into()),
        ),
        (
            "keyframes".into(),
            Value::Object(vec![
                (
                    "filepositions".into(),
                    Value::Array(
                        keys.iter()
                            .map(|k| num(positions(k.offset) as f64))
                            .collect(),
                    ),
                ),
                (
                    "times".into(),
                    Value::Array(keys.iter().map(|k| num(k.time)).collect()),
                ),
            ]),
        ),
    ]);
    if let Some(n) = pad {
        kv.push((PADDING_KEY.into(), padding(n)));
    }
    amf::script_payload("onMetaData", &Value::EcmaArray(kv))
}

/// The copy's FLV header and its first tag, the new onMetaData, with the size after it.
fn flv_head(idx: &FlvIndex, payload: &[u8], tag_len: u64, shift_base: u64) -> Vec<u8> {
    let mut head = Vec::with_capacity(shift_base as usize);
    let flags = (idx.flags & !5)
        | if idx.tags.audio > 0 { 4 } else { 0 }
        | if idx.tags.video > 0 { 1 } else { 0 };
    head.extend_from_slice(b"FLV\x01");
    head.push(flags);
    head.extend_from_slice(&9u32.to_be_bytes());
    head.extend_from_slice(&0u32.to_be_bytes());
    head.push(18);
    head.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    head.extend_from_slice(&[0; 7]); // timestamp 0, extended 0, stream id 0
    head.extend_from_slice(payload);
    head.extend_from_slice(&(tag_len as u32).to_be_bytes());
    head
}

/// Writes the copy of `src` (indexed as `idx`) to `out`.
///
/// Long on purpose: one plan of the copy (where each stretch of the input lands, the padding a
/// clone needs), used first by the clone and then by the copy of the rest.
pub fn inject(
    idx: &FlvIndex,
    src: &File,
    out: &mut File,
    reflink: Reflink,
) -> io::Result<Injected> {
    let kept = kept_metadata(idx, src)?;
    let first = idx.data_offset + 4;
    let end = idx.end.max(first);
    let removed = idx.metadata.map_or(0, |m| m.size + 4);
    let body = end - first - removed;
    // The input's stretches that are copied, in order: the tags before and after the old
    // onMetaData tag (which is left out).
    let segments: Vec<(u64, u64)> = match idx.metadata {
        Some(m) => vec![(first, m.offset), (m.offset + m.size + 4, end)],
        None => vec![(first, end)],
    };
    // A device or FIFO as OUT (a stream) is written front to back: no clone, no seek, no truncate.
    let seekable = out.metadata()?.is_file();
    if !seekable && reflink == Reflink::Always {
        return Err(io::Error::other(
            "cannot share IN's blocks (reflink): OUT is not a regular file",
        ));
    }
    let block = sharing_block(src, out, reflink, seekable, body)?;
    // Offsets in the copy: the tags move by `shift`, and those after the old metadata tag by
    // its size more.
    let meta_for =
        |positions: &dyn Fn(u64) -> u64, filesize: u64, tag_len: u64, pad: Option<usize>| {
            metadata_payload(idx, &kept, positions, filesize, tag_len, pad)
        };
    // Where each segment lands for a given start of the body.
    let placed = |shift_base: u64| {
        let mut at = shift_base;
        segments
            .iter()
            .map(|&(from, to)| {
                let here = at;
                at += to - from;
                (from, to, here)
            })
            .collect::<Vec<_>>()
    };
    let bare = 11 + meta_for(&|_| 0, 0, 0, block.map(|_| 0)).len() as u64;
    // For a clone, pad so that the largest segment moves by a whole number of blocks.
    let (pad, biggest) = match block {
        Some(b) => {
            let (i, &(from, _, at)) = placed(13 + bare + 4)
                .iter()
                .enumerate()
                .max_by_key(|(_, (from, to, _))| to - from)
                .expect("at least one segment");
            let shift = at as i128 - from as i128;
            ((-shift).rem_euclid(b as i128) as u64, Some(i))
        }
        None => (0, None),
    };
    let tag_len = bare + pad;
    let shift_base = 13 + tag_len + 4;
    let positions = |o: u64| {
        let moved = shift_base + (o - first);
        match idx.metadata {
            Some(m) if o > m.offset => moved - removed,
            _ => moved,
        }
    };
    let size = shift_base + body;
    let payload = meta_for(&positions, size, tag_len, block.map(|_| pad as usize));
    debug_assert_eq!(11 + payload.len() as u64, tag_len);
    if payload.len() >= 1 << 24 {
        return Err(io::Error::other(format!(
            "the keyframe index needs a {}-byte script tag, more than FLV's 16 MiB limit",
            payload.len()
        )));
    }

    let head = flv_head(idx, &payload, tag_len, shift_base);
    // The clone first: the header and the bytes before the first block boundary are then
    // written over the start of it (copy-on-write of one block).
    let mut cloned: Option<(usize, u64)> = None;
    if let (Some(b), Some(i)) = (block, biggest) {
        let (from, to, at) = placed(shift_base)[i];
        let up = from.div_ceil(b) * b;
        if up < to {
            debug_assert_eq!((at + (up - from)) % b, 0);
            match clone_range(src, up, out, at + (up - from)) {
                Ok(()) => cloned = Some((i, up)),
                Err(e) if reflink == Reflink::Always => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("cannot share IN's blocks (reflink): {e}"),
                    ));
                }
                Err(_) => {}
            }
        }
    }
    if seekable {
        out.seek(SeekFrom::Start(0))?;
    }
    out.write_all(&head)?;
    let mut shared = 0;
    for (i, (from, to, at)) in placed(shift_base).into_iter().enumerate() {
        let to = match cloned {
            Some((c, up)) if c == i => {
                shared = to - up;
                up
            }
            _ => to,
        };
        if to > from {
            if seekable {
                out.seek(SeekFrom::Start(at))?;
            }
            (&*src).seek(SeekFrom::Start(from))?;
            let n = io::copy(&mut src.take(to - from), out)?;
            if n != to - from {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the input shrank while it was copied",
                ));
            }
        }
    }
    // A clone runs to IN's end: cut what is past the last complete tag.
    if seekable {
        out.set_len(size)?;
    }
    Ok(Injected {
        size,
        keyframes: idx.figures.flagged.len(),
        metadata_tag: tag_len,
        dropped_tail: idx.size - end,
        shared,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_adds_exactly_the_bytes_asked_for() {
        let mut empty = Vec::new();
        amf::encode(&Value::Array(Vec::new()), &mut empty);
        for n in (0..3000).chain([65535]) {
            let mut v = Vec::new();
            amf::encode(&padding(n), &mut v);
            assert_eq!(v.len(), empty.len() + n, "padding({n})");
            // ffmpeg reads strings of up to 255 bytes only.
            if let Value::Array(items) = padding(n) {
                assert!(items.iter().all(|i| match i {
                    Value::String(s) => s.len() <= 255,
                    i => *i == Value::Null,
                }));
            }
        }
    }
}
