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
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::fetch::{Fetch, SeekMethod, drive};
use crate::index::{FlvError, FlvIndex, NotRegular};
use crate::walker::Walker;

/// Indexes one FLV file by seeking from tag header to tag header.
pub fn index_file(path: &Path) -> Result<FlvIndex, FlvError> {
    index_file_with(path, SeekMethod::Auto)
}

/// Indexes one FLV file; the walker asks for the ranges, `method` fetches them.
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
    let file = open_regular(path)?;
    index_open(path, &file, method, threads)
}

/// Opens `path` for reading without ever blocking (`O_NONBLOCK`: a FIFO put where a file was
/// expected fails here instead of waiting for a writer) and checks with `fstat` that it is a
/// regular file ([`FlvError::NotRegular`] if not).
pub fn open_regular(path: &Path) -> Result<File, FlvError> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source| FlvError::Io {
        path: path.into(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(io)?;
    let ft = file.metadata().map_err(io)?.file_type();
    if let Some(kind) = NotRegular::of(ft) {
        return Err(FlvError::NotRegular {
            path: path.into(),
            kind,
        });
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
    if let Some(kind) = NotRegular::of(md.file_type()) {
        return Err(FlvError::NotRegular {
            path: path.into(),
            kind,
        });
    }
    let size = md.len();
    let shrank = Arc::new(AtomicBool::new(false));
    let mut map = map_file(file, method, size).map_err(io)?;
    // Declared after the map, so dropped before it.
    let guard = map
        .as_deref()
        .and_then(|m| trawl_read::guard_map(m, &shrank));
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
        return Err(fault(path, file, size));
    }
    index
}

/// Why a mapped page of `file` (`size` bytes when mapped) could not be read: the file shrank,
/// or else the device failed to deliver it.
fn fault(path: &Path, file: &File, size: u64) -> FlvError {
    let path = path.into();
    if trawl_read::file_shrank_below(file, size) {
        FlvError::Shrank { path }
    } else {
        FlvError::Unreadable { path }
    }
}

/// The file mapped for reading, unless `method` reads it with `pread` or it is empty.
///
/// The map is only read and dropped before the index returns. Its one hazard, another process
/// truncating the file during the walk (a touched page past the new end raises SIGBUS), is
/// caught by the guard [`index_open`] registers before any page is touched: such pages read as
/// zeros and the index is refused. The server (`trawl serve`) uses `Pread`.
fn map_file(file: &File, method: SeekMethod, size: u64) -> std::io::Result<Option<memmap2::Mmap>> {
    match method {
        SeekMethod::Pread => Ok(None),
        _ if size == 0 => Ok(None),
        _ => {
            // SAFETY: the file may change under the map; the SIGBUS guard index_open registers, before any page is touched, turns a truncation into zeros and a refused index (see above).
            let m = unsafe { memmap2::MmapOptions::new().map(file) }?;
            // No read-ahead: only the pages holding tag headers are wanted.
            let _ = m.advise(memmap2::Advice::Random);
            Ok(Some(m))
        }
    }
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
    use crate::fetch::{AUTO_MMAP_BELOW, AUTO_PROBE};
    use crate::index::Keyframe;

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
        assert_eq!((i.width, i.height), (None, Some(240)));
        assert_eq!(
            i.keyframes,
            vec![Keyframe {
                time: 0.0,
                offset: k
            }]
        );
        assert_eq!(
            i.problems
                .iter()
                .map(|p| p.message.as_str())
                .collect::<Vec<_>>(),
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
        assert_eq!((i.width, i.height), (Some(320), Some(240)));
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

    /// A FIFO or a directory where an FLV file was expected is refused by its kind, naming
    /// the path, and a FIFO is never waited on.
    #[test]
    fn a_fifo_or_a_directory_is_refused_as_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f.flv");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo on a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for (p, want) in [
            (fifo, NotRegular::Fifo),
            (dir.path().to_path_buf(), NotRegular::Directory),
        ] {
            match open_regular(&p) {
                Err(FlvError::NotRegular { path, kind }) => {
                    assert_eq!((path, kind), (p.clone(), want))
                }
                r => panic!("{}: {r:?}", p.display()),
            }
            match index_file(&p) {
                Err(FlvError::NotRegular { path, kind }) => {
                    assert_eq!((path, kind), (p.clone(), want))
                }
                r => panic!("{}: {r:?}", p.display()),
            }
        }
        // A directory opened already: index_open checks too.
        let d = File::open(dir.path()).unwrap();
        assert!(matches!(
            index_open(dir.path(), &d, SeekMethod::Pread, 1),
            Err(FlvError::NotRegular {
                kind: NotRegular::Directory,
                ..
            })
        ));
    }

    /// A page the guard caught is the file's shrinking where it is now smaller than when
    /// mapped, and the device's failure otherwise.
    #[test]
    fn a_caught_page_fault_is_a_shrink_or_an_unreadable_page() {
        let f = write(&[0; 100]);
        let file = File::open(f.path()).unwrap();
        assert!(matches!(
            fault(f.path(), &file, 200),
            FlvError::Shrank { path } if path == f.path()
        ));
        assert!(matches!(
            fault(f.path(), &file, 100),
            FlvError::Unreadable { path } if path == f.path()
        ));
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
            i.problems[0].message.contains(&format!("offset {cut}")),
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
            i.problems[0].message.contains("runs past the end"),
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
}
