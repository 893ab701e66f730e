//! `flv inject`: a copy of an FLV file whose first tag is an onMetaData script tag carrying the
//! keyframe index (`keyframes.filepositions` / `keyframes.times`), as yamdi and flvmeta write
//! it, with every offset counted in the new file.
//!
//! Layout of the copy: a 9-byte header (data offset 9, audio/video flags from the tags found),
//! PreviousTagSize 0, the new onMetaData tag and its PreviousTagSize, then every complete tag
//! of the input in order except its old onMetaData tag. The existing onMetaData keys are kept in
//! their order; the keys listed in [`SET_KEYS`] are replaced. AMF0 numbers are 8 bytes whatever
//! their value, so the new tag's size is known before the offsets that go into it.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

use crate::amf::{self, Value};
use crate::flv::FlvIndex;

/// The keys written (any existing value is replaced).
pub const SET_KEYS: &[&str] = &[
    "hasKeyframes",
    "hasVideo",
    "hasAudio",
    "hasMetadata",
    "canSeekToEnd",
    "duration",
    "filesize",
    "lasttimestamp",
    "lastkeyframetimestamp",
    "lastkeyframelocation",
    "metadatacreator",
    "keyframes",
];

/// What was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Injected {
    pub size: u64,
    pub keyframes: usize,
    /// Size of the new onMetaData tag, header included.
    pub metadata_tag: u64,
    /// Bytes at the end of the input that were not complete tags and were left out.
    pub dropped_tail: u64,
}

/// Writes the copy of `src` (indexed as `idx`) to `out`.
pub fn inject(idx: &FlvIndex, src: &File, out: &mut File) -> io::Result<Injected> {
    let mut kept: Vec<(String, Value)> = Vec::new();
    if let Some(m) = idx.metadata {
        let mut payload = vec![0u8; (m.size - 11) as usize];
        (&*src).seek(SeekFrom::Start(m.offset + 11))?;
        (&*src).read_exact(&mut payload)?;
        if let Ok((_, Value::EcmaArray(kv) | Value::Object(kv))) = amf::script_tag(&payload) {
            kept = kv
                .into_iter()
                .filter(|(k, _)| !SET_KEYS.contains(&k.as_str()))
                .collect();
        }
    }
    let first = idx.data_offset + 4;
    let end = idx.end.max(first);
    let removed = idx.metadata.map_or(0, |m| m.size + 4);
    let body = end - first - removed;
    // Offsets in the copy: the tags move by `shift`, and those after the old metadata tag by
    // its size more.
    let meta_for = |positions: &dyn Fn(u64) -> u64, filesize: u64| {
        let last = idx.keyframes.last();
        let num = Value::Number;
        let mut kv = kept.clone();
        kv.extend([
            (
                "hasKeyframes".into(),
                Value::Bool(!idx.keyframes.is_empty()),
            ),
            ("hasVideo".into(), Value::Bool(idx.tags.video > 0)),
            ("hasAudio".into(), Value::Bool(idx.tags.audio > 0)),
            ("hasMetadata".into(), Value::Bool(true)),
            // As flvmeta checks it: the last video picture is a keyframe.
            (
                "canSeekToEnd".into(),
                Value::Bool(last.is_some_and(|k| Some(k.offset) == idx.last_video_tag)),
            ),
            ("duration".into(), num(idx.duration)),
            ("filesize".into(), num(filesize as f64)),
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
                            idx.keyframes
                                .iter()
                                .map(|k| num(positions(k.offset) as f64))
                                .collect(),
                        ),
                    ),
                    (
                        "times".into(),
                        Value::Array(idx.keyframes.iter().map(|k| num(k.time)).collect()),
                    ),
                ]),
            ),
        ]);
        amf::script_payload("onMetaData", &Value::EcmaArray(kv))
    };
    let tag_len = 11 + meta_for(&|_| 0, 0).len() as u64;
    let shift_base = 13 + tag_len + 4;
    let positions = |o: u64| {
        let moved = shift_base + (o - first);
        match idx.metadata {
            Some(m) if o > m.offset => moved - removed,
            _ => moved,
        }
    };
    let size = shift_base + body;
    let payload = meta_for(&positions, size);
    debug_assert_eq!(11 + payload.len() as u64, tag_len);
    if payload.len() >= 1 << 24 {
        return Err(io::Error::other(format!(
            "the keyframe index needs a {}-byte script tag, more than FLV's 16 MiB limit",
            payload.len()
        )));
    }

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
    head.extend_from_slice(&payload);
    head.extend_from_slice(&(tag_len as u32).to_be_bytes());
    out.write_all(&head)?;
    let mut copy = |from: u64, to: u64| -> io::Result<()> {
        if to > from {
            (&*src).seek(SeekFrom::Start(from))?;
            let n = io::copy(&mut (&*src).take(to - from), out)?;
            if n != to - from {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the input shrank while it was copied",
                ));
            }
        }
        Ok(())
    };
    match idx.metadata {
        Some(m) => {
            copy(first, m.offset)?;
            copy(m.offset + m.size + 4, end)?;
        }
        None => copy(first, end)?,
    }
    Ok(Injected {
        size,
        keyframes: idx.keyframes.len(),
        metadata_tag: tag_len,
        dropped_tail: idx.size - end,
    })
}
