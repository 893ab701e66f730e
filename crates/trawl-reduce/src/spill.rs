//! Past the memory budget (`--memory`): fingerprint records are appended, sequentially, to one of
//! 64 partition files by the top 6 bits of the key, under a private temporary directory that is
//! removed when the run ends (normally, on error or on Ctrl-C). Each partition is then counted in
//! RAM on its own, with the keys the in-RAM table already held for it, so the figures are exactly
//! those of an in-RAM run.
//!
//! A spill may be given some RAM of its own (the key log of the files-with-most-duplicates ranking
//! is): its partitions are held in memory up to that many bytes, and the directory and its files
//! are made only when they are passed, so that a small scan writes no file at all. A partition's
//! file is made when its first record comes: a counting partition that owns a few of the 64
//! partitions (see [`crate::counter`]) makes only those.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

/// Write buffer per partition file: 64 of them per spill, and a scan has a spill per block size,
/// one for the chunks and the key log (16 KiB each: 8 MiB in all; 64 KiB made it 32 MiB).
const WRITE_BUFFER: usize = 16 << 10;

/// Partition-selecting bits of the key.
pub const BITS: u32 = 6;
const PARTS: usize = 1 << BITS;

/// One spilled record: key, block length, carried values (a unit's allocated sizes).
pub struct Record {
    pub key: u128,
    pub len: u32,
    pub extra: Vec<u32>,
}

pub struct Spill {
    parent: std::path::PathBuf,
    /// Made when the RAM stage is passed.
    dir: Option<tempfile::TempDir>,
    /// Each partition's file once it has a record (on disk).
    files: Vec<Option<BufWriter<File>>>,
    /// The partitions while they are in RAM (empty once on disk).
    mem: Vec<Vec<u8>>,
    ram: usize,
    extra: usize,
    /// 8 (the top 64 bits, all a compact index keeps) or 16 (`--exact-keys`).
    key_bytes: usize,
    pub bytes: u64,
}

impl Spill {
    /// A spill whose partition files go under `parent` once more than `ram` bytes of records
    /// were written (0: at once); every record carries `extra` values and `key_bytes` (8 or 16)
    /// of the key, from its top.
    pub fn new(
        parent: &Path,
        extra: usize,
        key_bytes: usize,
        ram: usize,
    ) -> std::io::Result<Spill> {
        let mut s = Spill {
            parent: parent.to_path_buf(),
            dir: None,
            files: Vec::new(),
            mem: vec![Vec::new(); PARTS],
            ram,
            extra,
            key_bytes,
            bytes: 0,
        };
        if ram == 0 {
            s.move_to_disk()?;
        }
        Ok(s)
    }

    /// Makes the directory and moves what RAM held into partition files.
    fn move_to_disk(&mut self) -> std::io::Result<()> {
        let dir = tempfile::Builder::new()
            .prefix("trawl-spill-")
            .tempdir_in(&self.parent)?;
        self.files = (0..PARTS).map(|_| None).collect();
        self.dir = Some(dir);
        for (q, m) in std::mem::take(&mut self.mem).into_iter().enumerate() {
            if !m.is_empty() {
                self.file(q)?.write_all(&m)?;
            }
        }
        Ok(())
    }

    /// Partition `q`'s file, made on first use (on disk).
    fn file(&mut self, q: usize) -> std::io::Result<&mut BufWriter<File>> {
        let dir = self.dir.as_ref().expect("on disk");
        if self.files[q].is_none() {
            let f = File::create(dir.path().join(format!("part-{q:02}")))?;
            self.files[q] = Some(BufWriter::with_capacity(WRITE_BUFFER, f));
        }
        Ok(self.files[q].as_mut().expect("just made"))
    }

    pub fn write(&mut self, key: u128, len: u32, extra: &[u32]) -> std::io::Result<()> {
        let q = (key >> (128 - BITS)) as usize;
        if self.dir.is_none() {
            let m = &mut self.mem[q];
            write_record(m, key, len, extra, self.key_bytes, self.extra)?;
            self.bytes += (self.key_bytes + 4 + 4 * self.extra) as u64;
            if self.bytes > self.ram as u64 {
                self.move_to_disk()?;
            }
            return Ok(());
        }
        let (key_bytes, n_extra) = (self.key_bytes, self.extra);
        write_record(self.file(q)?, key, len, extra, key_bytes, n_extra)?;
        self.bytes += (self.key_bytes + 4 + 4 * self.extra) as u64;
        Ok(())
    }

    /// Reads the partitions back one at a time (each file deleted once read).
    pub fn for_each_partition(
        self,
        f: &mut dyn FnMut(usize, &mut dyn Iterator<Item = Record>),
    ) -> std::io::Result<()> {
        let r = self.into_reader()?;
        for q in 0..PARTS {
            r.read(q, &mut |it| f(q, it))?;
        }
        Ok(())
    }

    /// Ends the writing; the partitions can then be read in any order.
    pub fn into_reader(self) -> std::io::Result<SpillReader> {
        let Spill {
            dir,
            files,
            mem,
            extra,
            key_bytes,
            ..
        } = self;
        for w in files.into_iter().flatten() {
            // Flushed, not synced: the files are read back from the page cache and deleted;
            // a write error (a full disk) surfaces here or in the writes before.
            w.into_inner().map_err(|e| e.into_error())?;
        }
        Ok(SpillReader {
            dir,
            mem,
            extra,
            key_bytes,
        })
    }
}

/// Encodes one record as [`Spill::write`] writes it to a file.
fn write_record(
    w: &mut impl Write,
    key: u128,
    len: u32,
    extra: &[u32],
    key_bytes: usize,
    n_extra: usize,
) -> std::io::Result<()> {
    if key_bytes == 8 {
        w.write_all(&((key >> 64) as u64).to_le_bytes())?;
    } else {
        w.write_all(&key.to_le_bytes())?;
    }
    w.write_all(&len.to_le_bytes())?;
    for i in 0..n_extra {
        w.write_all(&extra.get(i).copied().unwrap_or(0).to_le_bytes())?;
    }
    Ok(())
}

/// A finished [`Spill`], read partition by partition.
pub struct SpillReader {
    /// None: the partitions never left RAM (`mem`).
    dir: Option<tempfile::TempDir>,
    mem: Vec<Vec<u8>>,
    extra: usize,
    key_bytes: usize,
}

impl SpillReader {
    /// Reads partition `q` (its file is deleted once read).
    pub fn read(
        &self,
        q: usize,
        f: &mut dyn FnMut(&mut dyn Iterator<Item = Record>),
    ) -> std::io::Result<()> {
        let (extra, key_bytes) = (self.extra, self.key_bytes);
        let path = self
            .dir
            .as_ref()
            .map(|d| d.path().join(format!("part-{q:02}")));
        {
            // A partition that never had a record on disk has no file.
            let file = match &path {
                Some(p) => match File::open(p) {
                    Ok(f) => Some(f),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                    Err(e) => return Err(e),
                },
                None => None,
            };
            let path = path.filter(|_| file.is_some());
            let mut r: Box<dyn Read + '_> = match file {
                Some(f) => Box::new(BufReader::with_capacity(256 << 10, f)),
                None => Box::new(self.mem.get(q).map_or(&[][..], Vec::as_slice)),
            };
            let mut err = None;
            {
                let mut it = std::iter::from_fn(|| {
                    read_record(&mut *r, key_bytes, extra).unwrap_or_else(|e| {
                        err = Some(e);
                        None
                    })
                });
                f(&mut it);
            }
            if let Some(e) = err {
                return Err(e);
            }
            if let Some(p) = &path {
                std::fs::remove_file(p)?;
            }
        }
        Ok(())
    }
}

/// The next record of a spill file (a key of `key_bytes`, a length, `extra` values); None
/// at its end.
#[inline]
fn read_record(
    r: &mut dyn Read,
    key_bytes: usize,
    extra: usize,
) -> std::io::Result<Option<Record>> {
    let mut head = [0u8; 20];
    let head = &mut head[..key_bytes + 4];
    match r.read_exact(head) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut ex = vec![0u32; extra];
    for v in ex.iter_mut() {
        let mut b = [0u8; 4];
        r.read_exact(&mut b)?;
        *v = u32::from_le_bytes(b);
    }
    Ok(Some(Record {
        key: if key_bytes == 8 {
            (u64::from_le_bytes(head[..8].try_into().expect("8 bytes")) as u128) << 64
        } else {
            u128::from_le_bytes(head[..16].try_into().expect("16 bytes"))
        },
        len: u32::from_le_bytes(head[key_bytes..].try_into().expect("4 bytes")),
        extra: ex,
    }))
}

/// Partitions in a spill.
pub const PARTITIONS: usize = PARTS;

#[cfg(test)]
mod tests {
    use super::*;

    /// Partition, key, length and carried values of a record read back.
    type Back = (usize, u128, u32, Vec<u32>);

    fn records(ram: usize, n: u32, parent: &Path) -> (Vec<Back>, bool) {
        let mut s = Spill::new(parent, 2, 8, ram).unwrap();
        for i in 0..n {
            let key = (u128::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835)) | 1;
            s.write(key, i, &[i, i * 3]).unwrap();
        }
        let on_disk = s.dir.is_some();
        let mut out = Vec::new();
        s.for_each_partition(&mut |q, it| {
            out.extend(it.map(|r| (q, r.key, r.len, r.extra)));
        })
        .unwrap();
        (out, on_disk)
    }

    #[test]
    fn records_come_back_the_same_from_ram_and_from_disk() {
        let parent = tempfile::tempdir().unwrap();
        let (in_ram, disk) = records(1 << 20, 5000, parent.path());
        assert!(!disk);
        // Nothing was made under the parent while the records fit.
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
        let (past, disk) = records(1000, 5000, parent.path());
        assert!(disk);
        let (at_once, _) = records(0, 5000, parent.path());
        assert_eq!(in_ram.len(), 5000);
        assert_eq!(in_ram, past);
        assert_eq!(in_ram, at_once);
        // Keys keep their top 64 bits, in their partition.
        assert!(
            in_ram
                .iter()
                .all(|(q, k, _, _)| (k >> (128 - BITS)) as usize == *q)
        );
    }
}
