//! The new onMetaData tag's payload: the old tag's entries trawl does not set, the figures it
//! sets from the tags, the keyframe index at its place in the copy, and a clone's padding.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

use super::{PADDING_KEY, SET_KEYS};
use crate::amf::{self, Value};
use crate::index::{FlvIndex, TagFigures};

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

/// The old onMetaData's entries trawl does not set itself (kept in the new one).
pub(super) fn kept_metadata(idx: &FlvIndex, src: &File) -> io::Result<Vec<(String, Value)>> {
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
/// header. The keys go in the order they are written.
pub(super) fn metadata_payload(
    idx: &FlvIndex,
    kept: &[(String, Value)],
    positions: &dyn Fn(u64) -> u64,
    filesize: u64,
    tag_len: u64,
    pad: Option<usize>,
) -> Vec<u8> {
    let f = &idx.figures;
    let num = Value::Number;
    let tracks = Tracks {
        video: f.video_ts.0.is_some(),
        audio: f.audio_ts.0.is_some(),
    };
    let last_ms = (idx.last_timestamp * 1000.0).round() as u32;
    let play = f.play_time(last_ms);
    let old_meta = idx.metadata.map_or(0, |m| m.size);
    let mut kv = kept_in_place(kept, tracks, known_from_tags(idx, tracks));
    kv.extend([
        ("hasKeyframes".into(), Value::Bool(!f.flagged.is_empty())),
        ("hasVideo".into(), Value::Bool(tracks.video)),
        ("hasAudio".into(), Value::Bool(tracks.audio)),
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
    track_figures(&mut kv, f, tracks, play);
    keyframe_entries(&mut kv, idx, positions);
    if let Some(n) = pad {
        kv.push((PADDING_KEY.into(), padding(n)));
    }
    amf::script_payload("onMetaData", &Value::EcmaArray(kv))
}

/// Which tracks the file has tags of (a first timestamp seen).
#[derive(Clone, Copy)]
struct Tracks {
    video: bool,
    audio: bool,
}

/// The audio format bits (rate, size, channels) of the first audio tag, where it has them: not
/// under Enhanced FLV's ExHeader (format 9), whose low bits are a packet type.
fn audio_bits(f: &TagFigures) -> Option<u8> {
    f.audio_flags.filter(|b| b >> 4 != 9)
}

/// What the tags tell better than an old onMetaData: the picture size (from the AVC sequence
/// header) and the audio format (from the first audio tag's bits).
fn known_from_tags(idx: &FlvIndex, tracks: Tracks) -> Vec<(&'static str, Value)> {
    let num = Value::Number;
    let mut known: Vec<(&str, Value)> = Vec::new();
    if tracks.video
        && let (Some(w), Some(h)) = (idx.coded_width, idx.coded_height)
    {
        known.push(("width", num(f64::from(w))));
        known.push(("height", num(f64::from(h))));
    }
    if tracks.audio
        && let Some(b) = audio_bits(&idx.figures)
    {
        let rates = [5500.0, 11000.0, 22050.0, 44100.0];
        known.push(("audiosamplerate", num(rates[usize::from((b >> 2) & 3)])));
        known.push(("audiosamplesize", num(if b & 2 != 0 { 16.0 } else { 8.0 })));
        known.push(("stereo", Value::Bool(b & 1 != 0)));
    }
    known
}

/// The kept keys in their order, those in `known` replaced where they stand and the rest of
/// `known` after them; a track's keys dropped where the file has no tags of it.
fn kept_in_place(
    kept: &[(String, Value)],
    tracks: Tracks,
    mut known: Vec<(&'static str, Value)>,
) -> Vec<(String, Value)> {
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
            (tracks.audio || !audio_key) && (tracks.video || !video_key)
        })
        .collect();
    kv.extend(known.into_iter().map(|(k, v)| (k.to_string(), v)));
    kv
}

/// Each track's size, data rate (over `play` seconds) and codec id.
fn track_figures(kv: &mut Vec<(String, Value)>, f: &TagFigures, tracks: Tracks, play: f64) {
    let num = Value::Number;
    let rate = |bytes: u64| {
        if play > 0.0 {
            bytes as f64 / 1024.0 * 8.0 / play
        } else {
            0.0
        }
    };
    if tracks.video {
        kv.push(("videosize".into(), num(f.video as f64)));
        kv.push(("videodatarate".into(), num(rate(f.video_data))));
        if let Some(id) = f.video_codec_id {
            kv.push(("videocodecid".into(), num(f64::from(id))));
        }
    }
    if tracks.audio {
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
}

/// The last timestamps, the creator, and the keyframe index at `positions` in the copy.
fn keyframe_entries(kv: &mut Vec<(String, Value)>, idx: &FlvIndex, positions: &dyn Fn(u64) -> u64) {
    let num = Value::Number;
    let keys = &idx.figures.flagged;
    let last = keys.last();
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
