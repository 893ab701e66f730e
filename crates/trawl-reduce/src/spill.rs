//! Past the memory budget (`--memory`): fingerprint records are appended, sequentially, to one of
//! 64 partition files by the top 6 bits of the key, under a private temporary directory that is
//! removed when the run ends (normally, on error or on Ctrl-C). Each partition is then counted in
//! RAM on its own, with the keys the in-RAM table already held for it, so the figures are exactly
//! those of an in-RAM run.

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
    dir: tempfile::TempDir,
    files: Vec<BufWriter<File>>,
    extra: usize,
    /// 8 (the top 64 bits, all a compact index keeps) or 16 (`--exact-keys`).
    key_bytes: usize,
    pub bytes: u64,
}

impl Spill {
    /// Creates the partition files under `parent`; every record carries `extra` values and
    /// `key_bytes` (8 or 16) of the key, from its top.
    pub fn new(parent: &Path, extra: usize, key_bytes: usize) -> std::io::Result<Spill> {
        let dir = tempfile::Builder::new()
            .prefix("trawl-spill-")
            .tempdir_in(parent)?;
        let files = (0..PARTS)
            .map(|q| {
                File::create(dir.path().join(format!("part-{q:02}")))
                    .map(|f| BufWriter::with_capacity(WRITE_BUFFER, f))
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Spill {
            dir,
            files,
            extra,
            key_bytes,
            bytes: 0,
        })
    }

    pub fn write(&mut self, key: u128, len: u32, extra: &[u32]) -> std::io::Result<()> {
        let f = &mut self.files[(key >> (128 - BITS)) as usize];
        if self.key_bytes == 8 {
            f.write_all(&((key >> 64) as u64).to_le_bytes())?;
        } else {
            f.write_all(&key.to_le_bytes())?;
        }
        f.write_all(&len.to_le_bytes())?;
        for i in 0..self.extra {
            f.write_all(&extra.get(i).copied().unwrap_or(0).to_le_bytes())?;
        }
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
            extra,
            key_bytes,
            ..
        } = self;
        for w in files {
            // Flushed, not synced: the files are read back from the page cache and deleted;
            // a write error (a full disk) surfaces here or in the writes before.
            w.into_inner().map_err(|e| e.into_error())?;
        }
        Ok(SpillReader {
            dir,
            extra,
            key_bytes,
        })
    }
}

/// A finished [`Spill`], read partition by partition.
pub struct SpillReader {
    dir: tempfile::TempDir,
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
        let (dir, extra, key_bytes) = (&self.dir, self.extra, self.key_bytes);
        {
            let path = dir.path().join(format!("part-{q:02}"));
            let mut r = BufReader::with_capacity(256 << 10, File::open(&path)?);
            let mut err = None;
            {
                let mut it = std::iter::from_fn(|| {
                    let mut head = [0u8; 20];
                    let head = &mut head[..key_bytes + 4];
                    match r.read_exact(head) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return None,
                        Err(e) => {
                            err = Some(e);
                            return None;
                        }
                    }
                    let mut ex = vec![0u32; extra];
                    for v in ex.iter_mut() {
                        let mut b = [0u8; 4];
                        if let Err(e) = r.read_exact(&mut b) {
                            err = Some(e);
                            return None;
                        }
                        *v = u32::from_le_bytes(b);
                    }
                    Some(Record {
                        key: if key_bytes == 8 {
                            (u64::from_le_bytes(head[..8].try_into().expect("8 bytes")) as u128)
                                << 64
                        } else {
                            u128::from_le_bytes(head[..16].try_into().expect("16 bytes"))
                        },
                        len: u32::from_le_bytes(head[key_bytes..].try_into().expect("4 bytes")),
                        extra: ex,
                    })
                });
                f(&mut it);
            }
            if let Some(e) = err {
                return Err(e);
            }
            std::fs::remove_file(&path)?;
        }
        Ok(())
    }
}

/// Partitions in a spill.
pub const PARTITIONS: usize = PARTS;
