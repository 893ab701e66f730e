//! How a walk's byte ranges are read: `pread` or a map, or whichever measures cheaper
//! ([`SeekMethod`]).

use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::index::FlvError;
use crate::walker::Walker;

/// How [`index_file_with`](crate::index_file_with) reaches the tag headers.
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

/// Tag headers fetched with each method, timed, before `Auto` decides.
pub(crate) const AUTO_PROBE: u32 = 128;
/// Tag headers fetched with the chosen method before `Auto` measures again (doubled each time
/// the measurement confirms the choice).
pub(crate) const AUTO_REPROBE: u32 = 4096;
/// Tags closer than this on average (bytes) are always reached through the map: a fault maps
/// at least 64 KiB, which serves many of them, and mapped access won in every page-cache state
/// measured (docs/decisions/0004-flv-seek-by-measurement.md).
pub(crate) const AUTO_MMAP_BELOW: u64 = 10 << 10;
/// Requests longer than this (a whole onMetaData or configuration payload) are not timed: the
/// probe compares the cost of reaching one tag header.
pub(crate) const AUTO_TIMED_MAX: usize = 64;

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
    pub(crate) mapped: bool,
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
