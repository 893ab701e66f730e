//! An external sort of byte records (a key and a value each): held in RAM up to a byte budget,
//! past it written as sorted runs to a private temporary directory, and merged back in key
//! order, as many times as asked. It is what keeps a scan's per-file records, a manifest's lines
//! and a bag's payload list flat in RAM whatever the number of files.
//!
//! Written here rather than taken from a crate: the sorters on crates.io pull their items from an
//! iterator and bound a run by a count of items, while a scan pushes records from a callback and
//! its bound is in bytes (paths vary from a few bytes to 4 KiB).

#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Runs merged at once; past it, the runs so far are merged into one first, so that a merge
/// never holds more than this many files and read buffers open.
const FAN_IN: usize = 64;
/// Read buffer per run being merged.
const READ_BUFFER: usize = 64 << 10;
/// What a record costs in RAM beyond its bytes: its place in the index and its two lengths.
const OVERHEAD: usize = 8 + 8;

/// Records being added.
pub struct Spool {
    parent: PathBuf,
    budget: usize,
    mem: Memory,
    runs: Vec<PathBuf>,
    dir: Option<tempfile::TempDir>,
    count: u64,
    spilled_bytes: u64,
}

/// Records in RAM: one arena of `[key length][value length][key][value]`, and where each starts.
#[derive(Default)]
struct Memory {
    arena: Vec<u8>,
    starts: Vec<usize>,
}

impl Memory {
    fn push(&mut self, key: &[u8], value: &[u8]) {
        self.starts.push(self.arena.len());
        self.arena.extend_from_slice(&len32(key).to_le_bytes());
        self.arena.extend_from_slice(&len32(value).to_le_bytes());
        self.arena.extend_from_slice(key);
        self.arena.extend_from_slice(value);
    }

    fn record(&self, start: usize) -> (&[u8], &[u8]) {
        let a = &self.arena[start..];
        let k = u32::from_le_bytes(a[0..4].try_into().expect("4 bytes")) as usize;
        let v = u32::from_le_bytes(a[4..8].try_into().expect("4 bytes")) as usize;
        (&a[8..8 + k], &a[8 + k..8 + k + v])
    }

    fn bytes(&self) -> usize {
        self.arena.len() + self.starts.len() * OVERHEAD
    }

    /// Orders the index by key; equal keys keep the order they came in.
    fn sort(&mut self) {
        let arena = std::mem::take(&mut self.arena);
        let m = Memory {
            arena,
            starts: Vec::new(),
        };
        self.starts
            .sort_by(|&a, &b| m.record(a).0.cmp(m.record(b).0));
        self.arena = m.arena;
    }
}

impl Spool {
    /// An empty spool that holds up to `budget` bytes of records in RAM and writes runs under
    /// `parent` (in a private directory of its own, removed when the spool or its reader goes).
    pub fn new(parent: &Path, budget: usize) -> Spool {
        Spool {
            parent: parent.to_path_buf(),
            budget,
            mem: Memory::default(),
            runs: Vec::new(),
            dir: None,
            count: 0,
            spilled_bytes: 0,
        }
    }

    /// Adds a record. Keys up to 4 GiB, values likewise.
    pub fn push(&mut self, key: &[u8], value: &[u8]) -> io::Result<()> {
        // Lengths are stored in 4 bytes each.
        if u32::try_from(key.len()).is_err() || u32::try_from(value.len()).is_err() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a spool record's key or value is 4 GiB or more",
            ));
        }
        self.mem.push(key, value);
        self.count += 1;
        if self.mem.bytes() > self.budget {
            self.write_run()?;
        }
        Ok(())
    }

    /// Records added so far.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether any record went to disk.
    pub fn spilled(&self) -> bool {
        !self.runs.is_empty()
    }

    /// Sorts what is in RAM and writes it as one run.
    fn write_run(&mut self) -> io::Result<()> {
        self.mem.sort();
        if self.dir.is_none() {
            self.dir = Some(
                tempfile::Builder::new()
                    .prefix("trawl-records-")
                    .tempdir_in(&self.parent)?,
            );
        }
        let dir = self.dir.as_ref().expect("made above").path().to_path_buf();
        let path = dir.join(format!("run-{:06}", self.runs.len()));
        let mem = &self.mem;
        write_run_file(&path, &mut |put| {
            for &s in &mem.starts {
                let (k, v) = mem.record(s);
                put(k, v)?;
            }
            Ok(())
        })?;
        self.spilled_bytes += self.mem.arena.len() as u64;
        self.runs.push(path);
        self.mem = Memory::default();
        if self.runs.len() >= FAN_IN {
            self.merge_runs(&dir)?;
        }
        Ok(())
    }

    /// Merges every run so far into one (keeps the number of open files bounded).
    fn merge_runs(&mut self, dir: &Path) -> io::Result<()> {
        let path = dir.join(format!("merged-{:06}", self.count));
        let mut merge = Merge::new(&self.runs, None)?;
        write_run_file(&path, &mut |put| {
            while let Some((k, v)) = merge.next_record()? {
                put(k, v)?;
            }
            Ok(())
        })?;
        for r in self.runs.drain(..) {
            std::fs::remove_file(r)?;
        }
        self.runs.push(path);
        Ok(())
    }

    /// Ends the adding: what is in RAM is sorted (and stays there), and the records can be read
    /// back in key order, any number of times.
    pub fn finish(mut self) -> io::Result<Sorted> {
        self.mem.sort();
        Ok(Sorted {
            mem: self.mem,
            runs: self.runs,
            _dir: self.dir,
            count: self.count,
        })
    }
}

/// A record writer, handed to the function that fills a run.
type Put<'a> = dyn FnMut(&[u8], &[u8]) -> io::Result<()> + 'a;

/// The records `fill` puts, in the order it puts them, as a run file at `path`.
fn write_run_file(
    path: &Path,
    fill: &mut dyn FnMut(&mut Put<'_>) -> io::Result<()>,
) -> io::Result<()> {
    let mut w = BufWriter::with_capacity(256 << 10, File::create(path)?);
    fill(&mut |k, v| write_record(&mut w, k, v))?;
    w.into_inner().map_err(|e| e.into_error())?;
    Ok(())
}

/// A record's length as stored; [`Spool::push`] refuses one that does not fit.
fn len32(b: &[u8]) -> u32 {
    u32::try_from(b.len()).expect("Spool::push refuses records of 4 GiB or more")
}

fn write_record(w: &mut impl Write, k: &[u8], v: &[u8]) -> io::Result<()> {
    w.write_all(&len32(k).to_le_bytes())?;
    w.write_all(&len32(v).to_le_bytes())?;
    w.write_all(k)?;
    w.write_all(v)
}

/// The records of a finished spool, in key order.
pub struct Sorted {
    mem: Memory,
    runs: Vec<PathBuf>,
    /// Removed (with the runs) when the last reader goes.
    _dir: Option<tempfile::TempDir>,
    count: u64,
}

impl Sorted {
    /// How many records.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether some records are on disk.
    pub fn spilled(&self) -> bool {
        !self.runs.is_empty()
    }

    /// Reads the records in key order (equal keys in the order they were added).
    pub fn iter(self: &Arc<Self>) -> io::Result<Records> {
        let merge = Merge::new(&self.runs, Some(Arc::clone(self)))?;
        Ok(Records { merge })
    }

    /// Calls `f` with each record in key order; stops at the first error, `f`'s or a read's.
    pub fn for_each<E: From<io::Error>>(
        self: &Arc<Self>,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut it = self.iter()?;
        while let Some((k, v)) = it.next_record()? {
            f(k, v)?;
        }
        Ok(())
    }

    /// Calls `f` with each record in key order until it answers `Break` (then `Break`, the
    /// records after it not read); stops at the first error, `f`'s or a read's.
    pub fn for_each_until<E: From<io::Error>>(
        self: &Arc<Self>,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<ControlFlow<()>, E>,
    ) -> Result<ControlFlow<()>, E> {
        let mut it = self.iter()?;
        while let Some((k, v)) = it.next_record()? {
            if f(k, v)?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }
}

/// A pass over a [`Sorted`]: [`Records::next_record`] lends each record in turn.
pub struct Records {
    merge: Merge,
}

impl Records {
    /// The next record (key, value) in key order, or None after the last.
    pub fn next_record(&mut self) -> io::Result<Option<(&[u8], &[u8])>> {
        self.merge.next_record()
    }
}

/// A k-way merge of the sorted runs, and of the sorted records in RAM if there are any.
struct Merge {
    sources: Vec<Source>,
    /// The sources with a record waiting, smallest key on top.
    heap: BinaryHeap<Head>,
    /// The source whose record was lent last: advanced before the next is chosen.
    lent: Option<usize>,
    mem: Option<Arc<Sorted>>,
}

enum Source {
    File {
        r: BufReader<File>,
        key: Vec<u8>,
        value: Vec<u8>,
    },
    /// Position in the spool's sorted index in RAM.
    Mem(usize),
}

/// A source's current key, for the heap. Ties go to the lower source number: runs are numbered
/// in the order they were written and RAM comes last, so equal keys keep their adding order.
struct Head {
    key: Vec<u8>,
    source: usize,
}

impl PartialEq for Head {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Head {}
impl PartialOrd for Head {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Head {
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap.
        o.key.cmp(&self.key).then(o.source.cmp(&self.source))
    }
}

impl Merge {
    fn new(runs: &[PathBuf], mem: Option<Arc<Sorted>>) -> io::Result<Merge> {
        let mut m = Merge {
            sources: Vec::with_capacity(runs.len() + 1),
            heap: BinaryHeap::new(),
            lent: None,
            mem,
        };
        for p in runs {
            m.sources.push(Source::File {
                r: BufReader::with_capacity(READ_BUFFER, File::open(p)?),
                key: Vec::new(),
                value: Vec::new(),
            });
        }
        if m.mem.as_ref().is_some_and(|s| !s.mem.starts.is_empty()) {
            m.sources.push(Source::Mem(0));
        }
        for i in 0..m.sources.len() {
            m.advance(i)?;
        }
        Ok(m)
    }

    /// Loads source `i`'s next record and puts its key on the heap, if it has one.
    fn advance(&mut self, i: usize) -> io::Result<()> {
        let key = match &mut self.sources[i] {
            Source::File { r, key, value } => {
                let mut head = [0u8; 8];
                match read_full(r, &mut head)? {
                    0 => return Ok(()),
                    8 => {}
                    _ => return Err(truncated()),
                }
                let k = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes")) as usize;
                let v = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as usize;
                key.resize(k, 0);
                r.read_exact(key).map_err(|_| truncated())?;
                value.resize(v, 0);
                r.read_exact(value).map_err(|_| truncated())?;
                std::mem::take(key)
            }
            Source::Mem(pos) => {
                let mem = &self.mem.as_ref().expect("a RAM source has its spool").mem;
                let Some(&start) = mem.starts.get(*pos) else {
                    return Ok(());
                };
                mem.record(start).0.to_vec()
            }
        };
        self.heap.push(Head { key, source: i });
        Ok(())
    }

    fn next_record(&mut self) -> io::Result<Option<(&[u8], &[u8])>> {
        if let Some(i) = self.lent.take() {
            if let Source::Mem(pos) = &mut self.sources[i] {
                *pos += 1;
            }
            self.advance(i)?;
        }
        let Some(Head { key, source }) = self.heap.pop() else {
            return Ok(None);
        };
        self.lent = Some(source);
        match &mut self.sources[source] {
            Source::File { key: k, value, .. } => {
                // The key was moved to the heap; give it back for the caller to borrow.
                *k = key;
                Ok(Some((k.as_slice(), value.as_slice())))
            }
            Source::Mem(pos) => {
                let mem = &self.mem.as_ref().expect("a RAM source has its spool").mem;
                Ok(Some(mem.record(mem.starts[*pos])))
            }
        }
    }
}

/// Fills `buf` unless the reader ends first; returns how many bytes it read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn truncated() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "a spool run ends inside a record (was the temporary directory changed meanwhile?)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

    fn all(s: &Arc<Sorted>) -> Pairs {
        let mut out = Vec::new();
        s.for_each(|k, v| {
            out.push((k.to_vec(), v.to_vec()));
            Ok::<(), io::Error>(())
        })
        .unwrap();
        out
    }

    /// Pseudo-random keys with repeats, pushed into a spool with `budget`.
    fn run(budget: usize, n: u64, dir: &Path) -> (Arc<Sorted>, Pairs) {
        let mut s = Spool::new(dir, budget);
        let mut expect = Vec::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = format!("k/{}", x % (n / 2 + 1)).into_bytes();
            let value = i.to_le_bytes().repeat((x % 4) as usize);
            s.push(&key, &value).unwrap();
            expect.push((key, value));
        }
        // A stable sort by key: equal keys in the order they came.
        expect.sort_by(|a, b| a.0.cmp(&b.0));
        let sorted = Arc::new(s.finish().unwrap());
        (sorted, expect)
    }

    /// A pass told to stop reads no record after the one it stopped at, and says it stopped.
    #[test]
    fn for_each_until_stops_at_a_break() {
        let t = tempfile::tempdir().unwrap();
        let mut sp = Spool::new(t.path(), 1 << 20);
        for k in [b"c", b"a", b"b"] {
            sp.push(k, b"").unwrap();
        }
        let s = Arc::new(sp.finish().unwrap());
        let mut seen = Vec::new();
        let r = s.for_each_until(|k, _| {
            seen.push(k.to_vec());
            Ok::<_, io::Error>(match k == b"b" {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            })
        });
        assert!(r.unwrap().is_break());
        assert_eq!(seen, [b"a".to_vec(), b"b".to_vec()]);
        let r = s.for_each_until(|_, _| Ok::<_, io::Error>(ControlFlow::Continue(())));
        assert!(r.unwrap().is_continue());
    }

    #[test]
    fn in_ram_it_is_a_stable_sort() {
        let dir = tempfile::tempdir().unwrap();
        let (s, expect) = run(1 << 30, 5000, dir.path());
        assert!(!s.spilled());
        assert_eq!(all(&s), expect);
    }

    #[test]
    fn spilled_runs_merge_to_the_same_order_as_in_ram() {
        // A budget of a few records: hundreds of runs, so intermediate merges happen too.
        let dir = tempfile::tempdir().unwrap();
        let (s, expect) = run(200, 20_000, dir.path());
        assert!(s.spilled());
        assert_eq!(s.len(), 20_000);
        assert_eq!(all(&s), expect);
        // And a second pass reads the same.
        assert_eq!(all(&s), expect);
    }

    #[test]
    fn the_runs_go_when_the_reader_does() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Spool::new(dir.path(), 10);
        for i in 0..100u32 {
            s.push(&i.to_be_bytes(), b"v").unwrap();
        }
        let sorted = Arc::new(s.finish().unwrap());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let mut it = sorted.iter().unwrap();
        drop(sorted);
        // A pass still open keeps the runs.
        assert_eq!(it.next_record().unwrap().unwrap().0, 0u32.to_be_bytes());
        drop(it);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn an_empty_spool_reads_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let s = Arc::new(Spool::new(dir.path(), 10).finish().unwrap());
        assert!(all(&s).is_empty());
    }
}
