//! Chunked reading of one open file, by `read(2)` into pooled buffers or by mapped windows.

use std::ops::Deref;
use std::os::unix::fs::FileExt;

use crate::{BufferPool, OpenedFile, PooledBuf, ReadError};

/// How file contents are brought into memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoMethod {
    /// `read(2)` into buffers from the pool, with sequential read-ahead advice.
    Read,
    /// `mmap(2)` windows of 32 MiB, or a share of that with several consumers
    /// ([`ChunkSource::share_windows`]), or the buffer size if larger, faulted in by whoever
    /// reads them, each guarded against the file shrinking ([`crate::guard_map`]).
    Mmap,
    /// Mapped windows for files of [`AUTO_MAP_MIN`] bytes or more, reads for smaller ones (the
    /// default; the scan narrows it further to files whose consumers keep every core busy; the
    /// README's I/O section has the figures).
    Auto,
}

/// The size from which [`IoMethod::Auto`] maps a file: one whole window.
pub const AUTO_MAP_MIN: u64 = MAP_WINDOW as u64;
const MAP_WINDOW: usize = 32 << 20;

/// The most one `pread` asks for: a buffer larger than this is filled by several. A read
/// returns only when the last page it asked for is in, so one read per 1 MiB buffer leaves the
/// pages already come in uncopied while the rest are on their way; smaller reads copy them as
/// they come. Cold, a tree of 4-16 MiB files read 6% faster this way (docs/performance.md,
/// "Cold reads"); warm, the three more system calls a MiB cost nothing measurable.
const READ_PIECE: usize = 256 << 10;

impl std::str::FromStr for IoMethod {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "read" => Ok(IoMethod::Read),
            "mmap" => Ok(IoMethod::Mmap),
            "auto" => Ok(IoMethod::Auto),
            _ => Err(format!(
                "unknown I/O method '{s}' (expected auto, read or mmap)"
            )),
        }
    }
}

/// A mapped window of a file, registered with the SIGBUS guard while it is mapped.
pub struct Window {
    // Dropped first: unregistered before the unmap.
    _guard: crate::sigbus::MapGuard,
    map: memmap2::Mmap,
}

/// One piece of a file's contents, shared read-only by every consumer of the file.
pub enum Chunk {
    /// Bytes read into a pooled buffer.
    Buf(PooledBuf),
    /// A window of the file mapped into memory.
    Map(Window),
}

impl Deref for Chunk {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Chunk::Buf(b) => b,
            Chunk::Map(w) => &w.map,
        }
    }
}

/// Yields a file's contents chunk by chunk, then checks it did not change.
pub struct ChunkSource<'a> {
    file: OpenedFile,
    pool: &'a BufferPool,
    method: IoMethod,
    offset: u64,
    eof: bool,
    /// Bytes a mapped window spans at most (before the buffer-size floor).
    window: usize,
    /// Set by the SIGBUS guard if a mapped page was past the file's end when touched.
    shrank: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Time spent waiting for a free buffer (the consumers' pace, not the device's).
    waited: std::time::Duration,
}

/// Whether a mapped window's pages are all in the page cache (`mincore`); false when that
/// cannot be told.
fn resident(map: &memmap2::Mmap) -> bool {
    // SAFETY: sysconf has no preconditions.
    let page = (unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).max(4096) as usize;
    let mut vec = vec![0u8; map.len().div_ceil(page)];
    // SAFETY: the range is the mapping's own, and `vec` has a byte for each of its pages.
    let r = unsafe {
        libc::mincore(
            map.as_ptr() as *mut libc::c_void,
            map.len(),
            vec.as_mut_ptr(),
        )
    };
    r == 0 && vec.iter().all(|b| b & 1 == 1)
}

impl<'a> ChunkSource<'a> {
    /// Reads `file` by `method`, with buffers from `pool`.
    pub fn new(file: OpenedFile, pool: &'a BufferPool, method: IoMethod) -> Self {
        let method = match method {
            IoMethod::Auto if file.stamp.size >= AUTO_MAP_MIN => IoMethod::Mmap,
            IoMethod::Auto => IoMethod::Read,
            m => m,
        };
        ChunkSource {
            file,
            pool,
            method,
            offset: 0,
            eof: false,
            window: MAP_WINDOW,
            shrank: Default::default(),
            waited: std::time::Duration::ZERO,
        }
    }

    /// Time spent waiting for a free buffer so far.
    pub fn waited(&self) -> std::time::Duration {
        self.waited
    }

    /// Maps windows of `lanes`' share of 32 MiB (at least 4 MiB; the buffer size if larger).
    /// Every consumer of a file faults in the pages it touches, and a window stays mapped until
    /// the slowest has passed it: with several consumers, the fastest run ahead by as many
    /// windows as their channels hold, all of them resident (four digests of a 2 GiB file:
    /// 202 MiB peak RSS with 32 MiB windows). One consumer keeps whole windows (BLAKE3 hashes
    /// one on all cores).
    pub fn share_windows(&mut self, lanes: usize) {
        self.window = (MAP_WINDOW / lanes.max(1)).max(MAP_WINDOW / 8);
    }

    /// The method this file is read by (`Auto` resolved).
    pub fn method(&self) -> IoMethod {
        self.method
    }

    /// The file being read.
    pub fn file(&self) -> &OpenedFile {
        &self.file
    }

    /// Bytes handed out so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next chunk, or `None` at end of file. A short chunk does not mean end of file.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk>, ReadError> {
        if self.eof {
            return Ok(None);
        }
        match self.method {
            IoMethod::Mmap if self.offset < self.file.stamp.size => self.next_map(),
            _ => self.next_read(),
        }
    }

    fn next_read(&mut self) -> Result<Option<Chunk>, ReadError> {
        // Timed only when it has to wait (a clock read per small file costs more than the wait).
        let mut buf = match self.pool.try_get() {
            Some(b) => b,
            None => {
                let t = std::time::Instant::now();
                let b = self.pool.get();
                self.waited += t.elapsed();
                b
            }
        };
        let space = buf.space();
        let mut filled = 0;
        // Every byte `fstat` counted at open is in: no read just to meet the end (one system
        // call per small file). A file that grew meanwhile is caught by `finish`, whose `fstat`
        // sees the new size.
        let want = self.file.stamp.size.saturating_sub(self.offset);
        // At the tracked offset (`pread`), never the descriptor's position: after mapped
        // windows, or anything else that moved it, the bytes read are still the right ones.
        while filled < space.len() && (filled as u64) < want.max(1) {
            let end = space.len().min(filled + READ_PIECE);
            match self
                .file
                .file
                .read_at(&mut space[filled..end], self.offset + filled as u64)
            {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(ReadError::Read {
                        path: self.file.path.clone(),
                        source: e,
                    });
                }
            }
        }
        buf.set_len(filled);
        self.offset += filled as u64;
        if self.offset == self.file.stamp.size {
            self.eof = true;
        }
        if filled == 0 {
            return Ok(None);
        }
        Ok(Some(Chunk::Buf(buf)))
    }

    fn next_map(&mut self) -> Result<Option<Chunk>, ReadError> {
        // Windows of 32 MiB, not populated up front: few mmap/munmap pairs, and the page faults
        // taken by whichever digest threads touch the pages, in parallel, rather than all by
        // this thread; peak RSS stays a window's worth, not the file's (the measurements:
        // docs/decisions/0010-map-windows-and-coloured-buffers.md).
        let window = self.pool.buffer_size().max(self.window) as u64;
        let len = (self.file.stamp.size - self.offset).min(window) as usize;
        // SAFETY: the map is read-only. If another process truncates the file while it is mapped,
        // touching the lost pages raises SIGBUS: the window is registered with the guard before
        // anyone touches it, which turns that into zeros and `shrank` (reported by `finish`).
        let map = unsafe {
            memmap2::MmapOptions::new()
                .offset(self.offset)
                .len(len)
                .map(&self.file.file)
        }
        .map_err(|e| ReadError::Read {
            path: self.file.path.clone(),
            source: e,
        })?;
        let Some(guard) = crate::sigbus::guard_map(&map, &self.shrank) else {
            // No guard (the handler could not be installed, or too many windows at once): the
            // rest of the file is read instead.
            drop(map);
            self.method = IoMethod::Read;
            return self.next_read();
        };
        // A window not in the page cache is asked of the device at once: its pages come in
        // while the consumers hash the window before, not a fault at a time. (A small one
        // comes in whole with its first fault's read-ahead: not worth the question.)
        if len >= 1 << 20 && !resident(&map) {
            let _ = map.advise(memmap2::Advice::WillNeed);
        }
        self.offset += len as u64;
        Ok(Some(Chunk::Map(Window { _guard: guard, map })))
    }

    /// Checks that the file did not change while it was read; consumes the source. Call it
    /// after every chunk has been consumed and dropped: a mapped page found past the file's
    /// end is only known once it has been touched.
    pub fn finish(self) -> Result<u64, ReadError> {
        if self.shrank.load(std::sync::atomic::Ordering::SeqCst) {
            // A mapped page that could not be had: past a new end, or not delivered.
            return Err(
                if crate::sigbus::file_shrank_below(&self.file.file, self.offset) {
                    ReadError::Changed {
                        path: self.file.path.clone(),
                        detail: "it shrank while mapped: pages past its new end read as zeros"
                            .into(),
                    }
                } else {
                    ReadError::PageLost {
                        path: self.file.path.clone(),
                    }
                },
            );
        }
        self.file.check_unchanged(self.offset)?;
        Ok(self.offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::open_for_read;
    use std::io::Write;

    fn drain(src: &mut ChunkSource<'_>) -> Vec<u8> {
        let mut all = Vec::new();
        while let Some(c) = src.next_chunk().unwrap() {
            all.extend_from_slice(&c);
        }
        all
    }

    #[test]
    fn auto_maps_files_of_a_whole_window_and_reads_smaller_ones() {
        let dir = tempfile::tempdir().unwrap();
        let pool = BufferPool::new(2, 4096);
        for (size, want) in [
            (AUTO_MAP_MIN, IoMethod::Mmap),
            (AUTO_MAP_MIN - 1, IoMethod::Read),
            (0, IoMethod::Read),
        ] {
            let p = dir.path().join(format!("f{size}"));
            std::fs::File::create(&p).unwrap().set_len(size).unwrap();
            let mut src = ChunkSource::new(open_for_read(&p).unwrap(), &pool, IoMethod::Auto);
            assert_eq!(src.method(), want, "{size}");
            assert_eq!(drain(&mut src).len() as u64, size);
            assert_eq!(src.finish().unwrap(), size);
        }
    }

    #[test]
    fn a_buffer_larger_than_a_read_is_filled_whole_by_several() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let buffer = 4 * READ_PIECE;
        // One buffer and a part: the first chunk is a whole buffer (several reads), the second
        // the rest, and the bytes are the file's.
        let data: Vec<u8> = (0..buffer + READ_PIECE / 2 + 1)
            .map(|i| (i % 251) as u8)
            .collect();
        std::fs::write(&p, &data).unwrap();
        let pool = BufferPool::new(2, buffer);
        let mut src = ChunkSource::new(open_for_read(&p).unwrap(), &pool, IoMethod::Read);
        let first = src.next_chunk().unwrap().unwrap();
        assert_eq!(first.len(), buffer);
        assert_eq!(&first[..], &data[..buffer]);
        drop(first);
        let second = src.next_chunk().unwrap().unwrap();
        assert_eq!(&second[..], &data[buffer..]);
        drop(second);
        assert!(src.next_chunk().unwrap().is_none());
        src.finish().unwrap();
    }

    #[test]
    fn several_consumers_share_a_window() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::File::create(&p)
            .unwrap()
            .set_len(40 << 20)
            .unwrap();
        let pool = BufferPool::new(2, 1 << 20);
        for (lanes, first) in [(1, 32 << 20), (4, 8 << 20), (100, 4 << 20)] {
            let mut src = ChunkSource::new(open_for_read(&p).unwrap(), &pool, IoMethod::Auto);
            src.share_windows(lanes);
            assert_eq!(
                src.next_chunk().unwrap().unwrap().len(),
                first,
                "{lanes} lanes"
            );
            assert_eq!(drain(&mut src).len() + first, 40 << 20);
            src.finish().unwrap();
        }
    }

    #[test]
    fn growth_and_shrinkage_during_the_read_are_detected() {
        for method in [IoMethod::Read, IoMethod::Mmap] {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("f");
            std::fs::write(&p, vec![1u8; 10_000]).unwrap();
            let pool = BufferPool::new(2, 4096);
            // Grows after the first chunk.
            let mut src = ChunkSource::new(open_for_read(&p).unwrap(), &pool, method);
            let first = src.next_chunk().unwrap().unwrap();
            // Reads fill a pool buffer; a mapped window is at least 4 MiB (here the whole file).
            let want = if method == IoMethod::Read {
                4096
            } else {
                10_000
            };
            assert_eq!(first.len(), want);
            drop(first);
            std::fs::OpenOptions::new()
                .append(true)
                .open(&p)
                .unwrap()
                .write_all(b"more")
                .unwrap();
            drain(&mut src);
            let e = src.finish().unwrap_err();
            assert_eq!(e.kind(), "changed-during-read", "{method:?}: {e}");
            assert!(e.to_string().contains("no digest recorded"));
            // Shrinks while a chunk is held and before it is read (mapped: the pages past the
            // new end raise SIGBUS when touched, which the guard turns into zeros and a report).
            let mut src = ChunkSource::new(open_for_read(&p).unwrap(), &pool, method);
            let first = src.next_chunk().unwrap().unwrap();
            std::fs::OpenOptions::new()
                .write(true)
                .open(&p)
                .unwrap()
                .set_len(5000)
                .unwrap();
            let sum: u64 = first.iter().map(|&b| b as u64).sum();
            drop(first);
            drain(&mut src);
            let e = src.finish().unwrap_err();
            assert_eq!(e.kind(), "changed-during-read", "{method:?}: {e}");
            if method == IoMethod::Mmap {
                assert_eq!(sum, 5000, "mapped bytes past the new end read as zeros");
                assert!(e.to_string().contains("shrank while mapped"), "{e}");
            }
            // Unchanged: fine.
            let mut src = ChunkSource::new(open_for_read(&p).unwrap(), &pool, method);
            let all = drain(&mut src);
            assert_eq!(src.finish().unwrap(), all.len() as u64);
        }
    }

    #[test]
    fn a_vanished_file_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let e = open_for_read(&dir.path().join("gone")).err().unwrap();
        assert_eq!(e.kind(), "vanished");
        assert!(
            e.to_string()
                .ends_with("gone: vanished before it could be read")
        );
    }

    /// A mapped page lost although the file kept its size (the device failed to deliver it)
    /// is its own error, not a read's `io::Error`.
    #[test]
    fn a_lost_page_of_a_file_that_did_not_shrink_is_page_lost() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![7u8; 10_000]).unwrap();
        let pool = BufferPool::new(2, 4096);
        let mut src = ChunkSource::new(open_for_read(&p).unwrap(), &pool, IoMethod::Read);
        drain(&mut src);
        // As the SIGBUS handler marks it.
        src.shrank.store(true, std::sync::atomic::Ordering::SeqCst);
        let e = src.finish().unwrap_err();
        assert!(
            matches!(&e, ReadError::PageLost { path } if *path == p),
            "{e:?}"
        );
        assert_eq!(e.kind(), "read");
        assert!(e.to_string().ends_with(
            "f: read error: a mapped page could not be read (SIGBUS: an I/O error on the device); no digest recorded"
        ));
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fifo");
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path from a CString that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let e = open_for_read(&p).err().unwrap();
        assert_eq!(e.kind(), "not-regular");
    }
}

#[cfg(test)]
mod offset_tests {
    use super::*;
    use crate::open_for_read;

    /// Reads take the tracked offset, whatever moved the descriptor's position (a mapped
    /// window before the fallback to reads, a seek that failed): no byte is read twice or
    /// skipped, so no wrong digest can be recorded.
    #[test]
    fn reads_follow_the_tracked_offset_not_the_descriptor_position() {
        use std::io::Seek;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let pool = BufferPool::new(2, 4096);
        let mut src = ChunkSource::new(open_for_read(&p).unwrap(), &pool, IoMethod::Read);
        let mut got = Vec::new();
        while let Some(c) = src.next_chunk().unwrap() {
            got.extend_from_slice(&c);
            // Something else moves the descriptor after each chunk.
            (&src.file().file)
                .seek(std::io::SeekFrom::Start(7))
                .unwrap();
        }
        assert_eq!(got, data);
        assert_eq!(src.finish().unwrap(), data.len() as u64);
    }
}
