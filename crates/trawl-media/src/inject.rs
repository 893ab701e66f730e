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
use std::path::{Path, PathBuf};

use crate::amf::Value;
use crate::index::FlvIndex;

mod metadata;

use metadata::{kept_metadata, metadata_payload};

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

/// Why a copy could not be written.
#[derive(Debug, thiserror::Error)]
pub enum InjectError {
    /// Reading IN or writing OUT failed (the caller names the files).
    #[error(transparent)]
    Io(#[from] io::Error),
    /// [`Reflink::Always`], but OUT is a device or FIFO, written as a stream: it shares no blocks.
    #[error("{}: cannot share IN's blocks (reflink): OUT is not a regular file", path.display())]
    StreamShares {
        /// OUT.
        path: PathBuf,
    },
    /// [`Reflink::Always`], but OUT's filesystem has blocks larger than a padding can make up.
    #[error("{}: cannot share IN's blocks: a {block}-byte block is more than a padding string holds", path.display())]
    BlockTooLarge {
        /// OUT.
        path: PathBuf,
        /// The filesystem's block size.
        block: u64,
    },
    /// [`Reflink::Always`], but the filesystem would not share IN's blocks with OUT.
    #[error("{}: cannot share IN's blocks (reflink): {source}", path.display())]
    Reflink {
        /// OUT.
        path: PathBuf,
        /// The system's refusal.
        #[source]
        source: io::Error,
    },
    /// The keyframe index does not fit in one script tag.
    #[error("{}: the keyframe index needs a {size}-byte script tag, more than FLV's 16 MiB limit", path.display())]
    IndexTooLarge {
        /// IN.
        path: PathBuf,
        /// The tag's payload size.
        size: usize,
    },
    /// IN ended before the tags it was indexed with.
    #[error("{}: the input shrank while it was copied", path.display())]
    Shrank {
        /// IN.
        path: PathBuf,
    },
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

/// The block size to share IN's blocks by (a reflink clone), or None to copy every byte.
fn sharing_block(
    src: &File,
    out: &File,
    out_path: &Path,
    reflink: Reflink,
    seekable: bool,
    body: u64,
) -> Result<Option<u64>, InjectError> {
    Ok(match reflink {
        _ if !seekable => None,
        Reflink::Never => None,
        Reflink::Auto if body < REFLINK_MIN => None,
        _ => match clone_block(src, out) {
            Ok(b) if b <= 1 << 16 => Some(b),
            Ok(block) => {
                if reflink == Reflink::Always {
                    return Err(InjectError::BlockTooLarge {
                        path: out_path.to_path_buf(),
                        block,
                    });
                }
                None
            }
            Err(source) if reflink == Reflink::Always => {
                return Err(InjectError::Reflink {
                    path: out_path.to_path_buf(),
                    source,
                });
            }
            Err(_) => None,
        },
    })
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

/// Writes the copy of `src` (indexed as `idx`) to `out` (named `out_path`, which its errors
/// name).
pub fn inject(
    idx: &FlvIndex,
    src: &File,
    out: &mut File,
    out_path: &Path,
    reflink: Reflink,
) -> Result<Injected, InjectError> {
    let mut plan = Plan::new(idx, src)?;
    // A device or FIFO as OUT (a stream) is written front to back: no clone, no seek, no truncate.
    let seekable = out.metadata()?.is_file();
    if !seekable && reflink == Reflink::Always {
        return Err(InjectError::StreamShares {
            path: out_path.to_path_buf(),
        });
    }
    let body = plan.body();
    plan.block = sharing_block(src, out, out_path, reflink, seekable, body)?;
    let layout = plan.layout()?;
    let head = flv_head(idx, &layout.payload, layout.tag_len, layout.shift_base);
    // The clone first: the header and the bytes before the first block boundary are then
    // written over the start of it (copy-on-write of one block).
    let cloned = match layout.biggest {
        Some(i) => plan.clone_biggest(&layout, i, src, out, out_path, reflink)?,
        None => None,
    };
    if seekable {
        out.seek(SeekFrom::Start(0))?;
    }
    out.write_all(&head)?;
    let shared = plan.copy(&layout, cloned, src, out, seekable)?;
    // A clone runs to IN's end: cut what is past the last complete tag.
    let size = layout.shift_base + body;
    if seekable {
        out.set_len(size)?;
    }
    Ok(Injected {
        size,
        keyframes: idx.figures.flagged.len(),
        metadata_tag: layout.tag_len,
        dropped_tail: idx.size - plan.end,
        shared,
    })
}

/// One plan of the copy: where each stretch of the input lands and the padding a clone needs,
/// used first by the clone and then by the copy of the rest.
struct Plan<'a> {
    idx: &'a FlvIndex,
    /// The old onMetaData's entries kept in the new one.
    kept: Vec<(String, Value)>,
    /// Where IN's first tag starts (after its first PreviousTagSize).
    first: u64,
    /// The end of IN's last complete tag.
    end: u64,
    /// The bytes of the old onMetaData tag and its size after it, left out.
    removed: u64,
    /// The input's stretches that are copied, in order: the tags before and after the old
    /// onMetaData tag (which is left out).
    segments: Vec<(u64, u64)>,
    /// The block size IN's blocks are shared by, or None to copy every byte.
    block: Option<u64>,
}

/// The plan's figures once the new tag's size is known.
struct Layout {
    /// The new onMetaData tag's size, header included.
    tag_len: u64,
    /// Where the body (IN's tags) starts in the copy.
    shift_base: u64,
    /// The new onMetaData's payload.
    payload: Vec<u8>,
    /// The segment to clone (the largest), when there is a block to share by.
    biggest: Option<usize>,
}

impl<'a> Plan<'a> {
    fn new(idx: &'a FlvIndex, src: &File) -> io::Result<Plan<'a>> {
        let kept = kept_metadata(idx, src)?;
        let first = idx.data_offset + 4;
        let end = idx.end.max(first);
        let segments = match idx.metadata {
            Some(m) => vec![(first, m.offset), (m.offset + m.size + 4, end)],
            None => vec![(first, end)],
        };
        Ok(Plan {
            idx,
            kept,
            first,
            end,
            removed: idx.metadata.map_or(0, |m| m.size + 4),
            segments,
            block: None,
        })
    }

    /// The bytes of IN that are copied.
    fn body(&self) -> u64 {
        self.end - self.first - self.removed
    }

    fn payload(
        &self,
        positions: &dyn Fn(u64) -> u64,
        filesize: u64,
        tag_len: u64,
        pad: Option<usize>,
    ) -> Vec<u8> {
        metadata_payload(self.idx, &self.kept, positions, filesize, tag_len, pad)
    }

    /// Where each segment lands (from, to, at) for a given start of the body.
    fn placed(&self, shift_base: u64) -> Vec<(u64, u64, u64)> {
        let mut at = shift_base;
        self.segments
            .iter()
            .map(|&(from, to)| {
                let here = at;
                at += to - from;
                (from, to, here)
            })
            .collect()
    }

    /// Where the tag at `o` in IN lands in the copy: the tags move by the body's start, and
    /// those after the old metadata tag by its size more.
    fn position(&self, shift_base: u64, o: u64) -> u64 {
        let moved = shift_base + (o - self.first);
        match self.idx.metadata {
            Some(m) if o > m.offset => moved - self.removed,
            _ => moved,
        }
    }

    /// The new tag's size and payload; for a clone, padded so that the largest segment moves
    /// by a whole number of blocks.
    fn layout(&self) -> Result<Layout, InjectError> {
        let bare = 11 + self.payload(&|_| 0, 0, 0, self.block.map(|_| 0)).len() as u64;
        let (pad, biggest) = match self.block {
            Some(b) => {
                let (i, &(from, _, at)) = self
                    .placed(13 + bare + 4)
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
        let positions = |o: u64| self.position(shift_base, o);
        let size = shift_base + self.body();
        let payload = self.payload(&positions, size, tag_len, self.block.map(|_| pad as usize));
        debug_assert_eq!(11 + payload.len() as u64, tag_len);
        if payload.len() >= 1 << 24 {
            return Err(InjectError::IndexTooLarge {
                path: PathBuf::from(&self.idx.path),
                size: payload.len(),
            });
        }
        Ok(Layout {
            tag_len,
            shift_base,
            payload,
            biggest,
        })
    }

    /// Shares segment `i` from its first block boundary to IN's end with OUT; the segment and
    /// where its shared part starts when done.
    fn clone_biggest(
        &self,
        layout: &Layout,
        i: usize,
        src: &File,
        out: &File,
        out_path: &Path,
        reflink: Reflink,
    ) -> Result<Option<(usize, u64)>, InjectError> {
        let Some(b) = self.block else {
            return Ok(None);
        };
        let (from, to, at) = self.placed(layout.shift_base)[i];
        let up = from.div_ceil(b) * b;
        if up >= to {
            return Ok(None);
        }
        debug_assert_eq!((at + (up - from)) % b, 0);
        match clone_range(src, up, out, at + (up - from)) {
            Ok(()) => Ok(Some((i, up))),
            Err(source) if reflink == Reflink::Always => Err(InjectError::Reflink {
                path: out_path.to_path_buf(),
                source,
            }),
            Err(_) => Ok(None),
        }
    }

    /// Copies each segment to where it lands, but the part of one that was `cloned`; the bytes
    /// shared.
    fn copy(
        &self,
        layout: &Layout,
        cloned: Option<(usize, u64)>,
        src: &File,
        out: &mut File,
        seekable: bool,
    ) -> Result<u64, InjectError> {
        let mut shared = 0;
        for (i, (from, to, at)) in self.placed(layout.shift_base).into_iter().enumerate() {
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
                    return Err(InjectError::Shrank {
                        path: PathBuf::from(&self.idx.path),
                    });
                }
            }
        }
        Ok(shared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flv::synth::{header, tag, write};

    /// A small FLV file (two video keyframes) and its index.
    fn small() -> (tempfile::NamedTempFile, FlvIndex) {
        let mut v = header(9);
        tag(&mut v, 9, 0, &[0x12, 0, 0]);
        tag(&mut v, 9, 40, &[0x12, 0, 0]);
        let f = write(&v);
        let idx = crate::index_file(f.path()).unwrap();
        (f, idx)
    }

    /// `Reflink::Always` onto a device (a stream) is refused by its kind, naming OUT, before
    /// anything is written; onto a file where the filesystem shares no blocks, the system's
    /// refusal comes as such, naming OUT.
    #[test]
    fn always_sharing_blocks_is_refused_onto_a_stream_or_where_the_filesystem_cannot() {
        let (f, idx) = small();
        let src = File::open(f.path()).unwrap();
        let null = Path::new("/dev/null");
        let mut out = std::fs::OpenOptions::new().write(true).open(null).unwrap();
        match inject(&idx, &src, &mut out, null, Reflink::Always) {
            Err(InjectError::StreamShares { path }) => assert_eq!(path, null),
            r => panic!("{r:?}"),
        }
        let dir = tempfile::tempdir().unwrap();
        let to = dir.path().join("out.flv");
        let mut out = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&to)
            .unwrap();
        match inject(&idx, &src, &mut out, &to, Reflink::Always) {
            Err(InjectError::Reflink { path, source }) => {
                assert_eq!(path, to);
                assert!(source.raw_os_error().is_some(), "{source}");
            }
            Ok(_) => {} // a filesystem that shares blocks (XFS, btrfs)
            r => panic!("{r:?}"),
        }
    }

    /// An input shorter than its index (it shrank after it was indexed) is said as such,
    /// naming IN.
    #[test]
    fn an_input_that_shrank_since_its_index_is_said_to_have() {
        let (f, idx) = small();
        let src = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(f.path())
            .unwrap();
        src.set_len(idx.end - 10).unwrap();
        let mut out = tempfile::tempfile().unwrap();
        let to = Path::new("out.flv");
        match inject(&idx, &src, &mut out, to, Reflink::Never) {
            Err(InjectError::Shrank { path }) => assert_eq!(path, f.path()),
            r => panic!("{r:?}"),
        }
    }

    /// A keyframe index that needs a script tag over FLV's 16 MiB is refused, naming IN,
    /// before anything is written.
    #[test]
    fn a_keyframe_index_over_16_mib_is_refused() {
        let (f, mut idx) = small();
        let k = idx.figures.flagged[0];
        // 18 bytes a keyframe (two AMF0 numbers): a million of them pass 16 MiB.
        idx.figures.flagged = vec![k; 1 << 20];
        let src = File::open(f.path()).unwrap();
        let mut out = tempfile::tempfile().unwrap();
        match inject(&idx, &src, &mut out, Path::new("out.flv"), Reflink::Never) {
            Err(InjectError::IndexTooLarge { path, size }) => {
                assert_eq!(path, f.path());
                assert!(size >= 1 << 24, "{size}");
            }
            r => panic!("{r:?}"),
        }
        assert_eq!(out.metadata().unwrap().len(), 0);
    }
}
