//! What `?start=` means and the stream that answers it: the FLV header, the onMetaData tag (or a
//! synthesized one), the codec configuration tags a decoder needs, then the file from the
//! chosen keyframe's tag.
//!
//! Telling seconds from bytes: players that seek by bytes (nginx's flv module, lighttpd's
//! mod_flv_streaming) send an offset taken from `keyframes.filepositions`, so an integer that is
//! the offset of a keyframe tag is bytes. Anything else (`12`, `12.5`, `9999`) is seconds, and
//! seconds past the file's duration are no place in it ([`past_the_end`]).

use std::fs::File;
use std::io;

use trawl_media::amf::{self, Value};
use trawl_media::{FlvIndex, Keyframe};

/// Why a seek's answer cannot be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SeekError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file, as its index names it.
        path: String,
        /// The underlying error.
        source: io::Error,
    },
    /// A tag the page cache does not hold all of, asked of a read that never waits: the plan
    /// is made again on the blocking pool.
    #[error("{path}: not in the page cache")]
    NotCached {
        /// The file, as its index names it.
        path: String,
    },
    /// A codec configuration tag too large for the bounded prefix: the request, not the file
    /// or the server, is what cannot be answered (422).
    #[error(
        "a codec configuration tag of {size} bytes: more than a seek's answer holds ({PREFIX_CAP} bytes); request the file without start="
    )]
    TooLarge {
        /// The file, as its index names it.
        path: String,
        /// The tag's size.
        size: u64,
    },
}

/// Where a seek starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Start {
    /// At a time, in seconds.
    Seconds(f64),
    /// At a byte offset (a keyframe's).
    Bytes(u64),
}

/// Reads a `start` value against the file's index; `None` when it is not a number. An offset
/// in `keyframes.filepositions` as flvmeta, yamdi and `trawl flv inject` write it is bytes:
/// a keyframe's, or that of another video tag flagged key (the codec configuration tag they
/// list for time 0, an end-of-sequence tag).
pub fn parse_start(v: &str, idx: &FlvIndex) -> Option<Start> {
    let listed = |list: &[Keyframe], n: u64| list.binary_search_by_key(&n, |k| k.offset).is_ok();
    if let Ok(n) = v.parse::<u64>()
        && n > 0
        && (listed(&idx.keyframes, n) || listed(&idx.figures.flagged, n))
    {
        return Some(Start::Bytes(n));
    }
    let s: f64 = v.parse().ok()?;
    (s.is_finite() && s >= 0.0).then_some(Start::Seconds(s))
}

/// Whether `start` lies past the end of the file: seconds beyond its duration (a file whose
/// duration is unknown, 0, has no end to pass).
pub fn past_the_end(start: Start, idx: &FlvIndex) -> bool {
    matches!(start, Start::Seconds(s) if idx.duration > 0.0 && s > idx.duration)
}

/// The keyframe a seek starts at: the last one at or before the time or byte.
pub fn keyframe_for(start: Start, idx: &FlvIndex) -> Option<Keyframe> {
    match start {
        Start::Seconds(s) => idx.keyframe_at(s),
        Start::Bytes(b) => {
            let i = idx.keyframes.partition_point(|k| k.offset <= b);
            idx.keyframes.get(i.saturating_sub(1)).copied()
        }
    }
}

/// A seek's answer: `prefix`, then the file's bytes `from..to`.
#[derive(Debug, Clone, PartialEq)]
pub struct SeekBody {
    pub prefix: Vec<u8>,
    pub from: u64,
    pub to: u64,
    pub keyframe: Keyframe,
}

impl SeekBody {
    pub fn len(&self) -> u64 {
        self.prefix.len() as u64 + self.to - self.from
    }
}

/// The most a seek's answer holds in memory before the file's bytes (its header, metadata and
/// codec configuration tags), per request: what the file declares cannot make a connection
/// hold more. Real configuration tags are a few hundred bytes.
pub const PREFIX_CAP: u64 = 256 << 10;
/// A metadata tag larger than this is not copied: one is synthesized from the index instead.
const METADATA_COPY_MAX: u64 = 128 << 10;

/// How a plan reads the file's tags: exactly `buf.len()` bytes at an offset, or why not.
pub(crate) type ReadAt<'a> = &'a dyn Fn(&File, &mut [u8], u64) -> Result<(), Unread>;

/// Why a [`ReadAt`] read nothing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unread {
    /// The page cache does not hold every byte asked for (a read that never waits).
    #[error("not in the page cache")]
    NotCached,
    /// The read failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// [`ReadAt`] waiting for the storage.
pub(crate) fn read_waiting(file: &File, buf: &mut [u8], at: u64) -> Result<(), Unread> {
    Ok(std::os::unix::fs::FileExt::read_exact_at(file, buf, at)?)
}

/// Builds the answer for a seek to keyframe `k`, reading tags with `read`; `None` when it is
/// the first keyframe (or there is none): then the whole file is the answer. A configuration
/// tag that would take the prefix past [`PREFIX_CAP`] is [`SeekError::TooLarge`], naming its
/// size; a tag `read` has not in the page cache is [`SeekError::NotCached`], an error of `read`
/// [`SeekError::Io`].
pub(crate) fn plan(
    idx: &FlvIndex,
    file: &File,
    k: Option<Keyframe>,
    read: ReadAt<'_>,
) -> Result<Option<SeekBody>, SeekError> {
    let io = |why| match why {
        Unread::NotCached => SeekError::NotCached {
            path: idx.path.clone(),
        },
        Unread::Io(source) => SeekError::Io {
            path: idx.path.clone(),
            source,
        },
    };
    let Some(k) = k else { return Ok(None) };
    if idx.keyframes.first() == Some(&k) {
        return Ok(None);
    }
    let mut prefix = b"FLV\x01".to_vec();
    prefix.push(idx.flags & 5);
    prefix.extend_from_slice(&9u32.to_be_bytes());
    prefix.extend_from_slice(&0u32.to_be_bytes());
    match idx.metadata {
        Some(m) if m.offset < k.offset && m.size <= METADATA_COPY_MAX => {
            copy_tag(file, read, m.offset, m.size, &mut prefix).map_err(io)?
        }
        _ => synthesize_metadata(idx, &mut prefix),
    }
    for span in [idx.video_config, idx.audio_config].into_iter().flatten() {
        if span.offset < k.offset {
            if prefix.len() as u64 + span.size + 4 > PREFIX_CAP {
                return Err(SeekError::TooLarge {
                    path: idx.path.clone(),
                    size: span.size,
                });
            }
            copy_tag(file, read, span.offset, span.size, &mut prefix).map_err(io)?;
        }
    }
    Ok(Some(SeekBody {
        prefix,
        from: k.offset,
        to: idx.end.max(k.offset),
        keyframe: k,
    }))
}

/// Appends the tag of `size` bytes at `at` and its previous-tag-size field; `size` is bounded
/// by the caller (by [`PREFIX_CAP`] or [`METADATA_COPY_MAX`]), far below `u32::MAX`.
fn copy_tag(
    file: &File,
    read: ReadAt<'_>,
    at: u64,
    size: u64,
    out: &mut Vec<u8>,
) -> Result<(), Unread> {
    let start = out.len();
    let prev = u32::try_from(size).expect("a tag's size is bounded by the caller");
    let len = prev as usize;
    out.resize(start + len, 0);
    read(file, &mut out[start..], at)?;
    out.extend_from_slice(&prev.to_be_bytes());
    Ok(())
}

/// An onMetaData tag for a file that has none: what the index knows.
fn synthesize_metadata(idx: &FlvIndex, out: &mut Vec<u8>) {
    let mut kv = vec![("duration".to_string(), Value::Number(idx.duration))];
    let w = idx.width.or(idx.coded_width).map(f64::from);
    let h = idx.height.or(idx.coded_height).map(f64::from);
    if let (Some(w), Some(h)) = (w, h) {
        kv.push(("width".into(), Value::Number(w)));
        kv.push(("height".into(), Value::Number(h)));
    }
    let payload = amf::script_payload("onMetaData", &Value::EcmaArray(kv));
    let size = 11 + payload.len() as u32;
    out.push(18);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&[0; 7]);
    out.extend_from_slice(&payload);
    out.extend_from_slice(&size.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idx() -> FlvIndex {
        let mut i = FlvIndex::empty(std::path::Path::new("x.flv"), 1_000_000);
        i.duration = 60.0;
        i.keyframes = vec![
            Keyframe {
                time: 0.0,
                offset: 400,
            },
            Keyframe {
                time: 2.0,
                offset: 90_000,
            },
            Keyframe {
                time: 4.0,
                offset: 180_000,
            },
        ];
        i
    }

    #[test]
    fn seconds_and_bytes_are_told_apart_and_snap_to_the_keyframe_before() {
        let i = idx();
        assert_eq!(parse_start("3", &i), Some(Start::Seconds(3.0)));
        assert_eq!(parse_start("3.5", &i), Some(Start::Seconds(3.5)));
        assert_eq!(parse_start("90000", &i), Some(Start::Bytes(90_000)));
        // Not a keyframe's offset: seconds, past the end of this 60 s file.
        assert_eq!(parse_start("100000", &i), Some(Start::Seconds(100_000.0)));
        assert!(past_the_end(Start::Seconds(100_000.0), &i));
        assert!(!past_the_end(Start::Seconds(4.5), &i));
        assert!(!past_the_end(Start::Bytes(90_000), &i));
        // A sequence header flagged key, listed in filepositions for time 0: bytes, and the
        // whole file.
        let mut j = i.clone();
        j.figures.flagged = vec![Keyframe {
            time: 0.0,
            offset: 350,
        }];
        assert_eq!(parse_start("350", &j), Some(Start::Bytes(350)));
        assert_eq!(
            keyframe_for(Start::Bytes(350), &j),
            j.keyframes.first().copied()
        );
        assert_eq!(parse_start("-1", &i), None);
        assert_eq!(parse_start("abc", &i), None);
        assert_eq!(parse_start("NaN", &i), None);
        let k = |s| keyframe_for(s, &i).unwrap().offset;
        assert_eq!(k(Start::Seconds(3.0)), 90_000);
        assert_eq!(k(Start::Seconds(4.0)), 180_000);
        assert_eq!(k(Start::Seconds(1e9)), 180_000);
        assert_eq!(k(Start::Bytes(100_000)), 90_000);
        assert_eq!(k(Start::Bytes(90_000)), 90_000);
    }

    /// A tag the page cache does not hold, asked of a read that never waits: its own error,
    /// for the caller to plan again on the blocking pool.
    #[test]
    fn a_tag_not_in_the_page_cache_is_not_cached() {
        let f = tempfile::tempfile().unwrap();
        f.set_len(1 << 20).unwrap();
        let mut i = idx();
        i.video_config = Some(trawl_media::TagSpan {
            offset: 200,
            size: 100,
        });
        let read: ReadAt<'_> = &|_, _, _| Err(Unread::NotCached);
        let e = plan(&i, &f, i.keyframes.get(1).copied(), read).unwrap_err();
        assert!(
            matches!(&e, SeekError::NotCached { path } if *path == i.path),
            "{e:?}"
        );
    }

    /// A file declaring a 16 MiB codec configuration tag: the seek is refused before anything
    /// is read into memory; a large metadata tag is synthesized rather than copied.
    #[test]
    fn what_a_seek_holds_in_memory_is_bounded() {
        let f = tempfile::tempfile().unwrap();
        f.set_len(40 << 20).unwrap();
        let mut i = idx();
        i.video_config = Some(trawl_media::TagSpan {
            offset: 200,
            size: 16 << 20,
        });
        let read: ReadAt<'_> = &read_waiting;
        let e = plan(&i, &f, i.keyframes.get(1).copied(), read).unwrap_err();
        assert!(
            matches!(e, SeekError::TooLarge { size, .. } if size == 16 << 20),
            "{e:?}"
        );
        assert!(e.to_string().contains("16777216 bytes"), "{e}");
        let mut i = idx();
        i.metadata = Some(trawl_media::TagSpan {
            offset: 13,
            size: 16 << 20,
        });
        let b = plan(&i, &f, i.keyframes.get(1).copied(), read)
            .unwrap()
            .unwrap();
        assert!((b.prefix.len() as u64) < PREFIX_CAP, "{}", b.prefix.len());
    }
}
