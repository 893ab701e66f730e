//! Which files hold the duplicates: a key log per block, read back against the final counts;
//! the files' names in a log on disk and their shares in a spool, so that nothing is held per
//! file in RAM but the few files ranked.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::sync::Arc;

use trawl_report::reduction::TopFile;
use trawl_spool::{Sorted, Spool};

use crate::config::ReduceConfig;
use crate::index::Index;
use crate::spill;

/// Bytes of shares held in RAM before they go to disk.
const SHARES_MEMORY: usize = 4 << 20;

/// Bytes of the key log held in RAM before it goes to disk (a scan of up to about 350,000
/// blocks writes none).
const KEYLOG_MEMORY: usize = 4 << 20;

/// Appends (key, length, file) of each non-zero block to the key log (made on first use).
pub(crate) fn log_keys(
    log: &mut Option<spill::Spill>,
    cfg: &ReduceConfig,
    file: u32,
    keys: &[u128],
    lens: &[u32],
    zero: &[bool],
) -> std::io::Result<()> {
    if log.is_none() {
        let dir = cfg.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
        *log = Some(spill::Spill::new(
            &dir,
            1,
            if cfg.exact_keys { 16 } else { 8 },
            KEYLOG_MEMORY,
        )?);
    }
    let w = log.as_mut().expect("just made");
    for i in 0..keys.len() {
        if !zero[i] {
            w.write(keys[i], lens[i], &[file])?;
        }
    }
    Ok(())
}

/// The registered files' names, in the order they were numbered, in an unnamed temporary file.
pub(crate) struct NameLog {
    w: BufWriter<File>,
    count: u32,
}

impl NameLog {
    pub(crate) fn new(cfg: &ReduceConfig) -> std::io::Result<NameLog> {
        let dir = cfg.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
        Ok(NameLog {
            w: BufWriter::with_capacity(64 << 10, tempfile::tempfile_in(dir)?),
            count: 0,
        })
    }

    /// Writes a name (bytes: made text, lossily, only for the files ranked); returns its number.
    pub(crate) fn add(&mut self, name: &[u8]) -> std::io::Result<u32> {
        self.w.write_all(&(name.len() as u32).to_le_bytes())?;
        self.w.write_all(name)?;
        self.count += 1;
        Ok(self.count - 1)
    }

    /// The names from the first, in order.
    fn reader(self) -> std::io::Result<NameReader> {
        let mut f = self.w.into_inner().map_err(|e| e.into_error())?;
        f.rewind()?;
        Ok(NameReader {
            r: BufReader::with_capacity(64 << 10, f),
            next: 0,
            name: Vec::new(),
        })
    }
}

struct NameReader {
    r: BufReader<File>,
    next: u32,
    name: Vec<u8>,
}

impl NameReader {
    /// The name of file `id` (ids asked in increasing order).
    fn name(&mut self, id: u32) -> std::io::Result<String> {
        while self.next <= id {
            let mut len = [0u8; 4];
            self.r.read_exact(&mut len)?;
            self.name.resize(u32::from_le_bytes(len) as usize, 0);
            self.r.read_exact(&mut self.name)?;
            self.next += 1;
        }
        Ok(String::from_utf8_lossy(&self.name).into_owned())
    }
}

/// Each duplicate block's (duplicate bytes, share of the saving) for its file, keyed by the
/// file's number (big-endian, so that byte order is number order).
pub(crate) struct Shares(Spool);

impl Shares {
    pub(crate) fn new(cfg: &ReduceConfig) -> Shares {
        let dir = cfg.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
        Shares(Spool::new(&dir, SHARES_MEMORY))
    }

    fn add(&mut self, file: u32, len: u32, share: f64) -> std::io::Result<()> {
        let mut v = [0u8; 16];
        v[..8].copy_from_slice(&(len as u64).to_le_bytes());
        v[8..].copy_from_slice(&share.to_le_bytes());
        self.0.push(&file.to_be_bytes(), &v)
    }
}

/// Attributes one partition of the key log against the final counts of its keys.
pub(crate) fn attribute_partition(
    reader: &spill::SpillReader,
    q: usize,
    counts: &Index,
    per: &mut Shares,
) -> std::io::Result<()> {
    let mut err = None;
    reader.read(q, &mut |records| {
        for r in records {
            let c = counts.count(r.key);
            if c >= 2
                && err.is_none()
                && let Err(e) = per.add(r.extra[0], r.len, r.len as f64 * (c - 1) as f64 / c as f64)
            {
                err = Some(e);
            }
        }
    })?;
    err.map_or(Ok(()), Err)
}

/// The `top` files with the largest share of the saving (ties by name), from the shares summed
/// per file in the order they were added.
pub(crate) fn rank(
    per: Shares,
    names: NameLog,
    top: usize,
    block_size: u64,
) -> std::io::Result<Vec<TopFile>> {
    let sorted = Arc::new(per.0.finish()?);
    let mut names = names.reader()?;
    // (share, name, duplicate bytes), at most a few times `top` of them.
    let mut best: Vec<(f64, String, u64)> = Vec::new();
    let order = |a: &(f64, String, u64), b: &(f64, String, u64)| {
        b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1))
    };
    let mut offer = |id: u32, dup: u64, share: f64, best: &mut Vec<_>| -> std::io::Result<()> {
        if dup == 0 {
            return Ok(());
        }
        best.push((share, names.name(id)?, dup));
        if best.len() >= 4 * top + 64 {
            best.sort_by(order);
            best.truncate(top);
        }
        Ok(())
    };
    let mut cur: Option<(u32, u64, f64)> = None;
    read_sorted(&sorted, |id, len, share| {
        match &mut cur {
            Some((c, dup, sh)) if *c == id => {
                *dup += len;
                *sh += share;
            }
            _ => {
                if let Some((c, dup, sh)) = cur.take() {
                    offer(c, dup, sh, &mut best)?;
                }
                cur = Some((id, len, share));
            }
        }
        Ok(())
    })?;
    if let Some((c, dup, sh)) = cur {
        offer(c, dup, sh, &mut best)?;
    }
    best.sort_by(order);
    best.truncate(top);
    Ok(best
        .into_iter()
        .map(|(share, path, dup)| TopFile {
            path,
            block_size,
            duplicate_bytes: dup,
            saved_bytes: share.round() as u64,
        })
        .collect())
}

fn read_sorted(
    s: &Arc<Sorted>,
    mut f: impl FnMut(u32, u64, f64) -> std::io::Result<()>,
) -> std::io::Result<()> {
    s.for_each(|k, v| {
        let id = u32::from_be_bytes(k.try_into().expect("4 bytes"));
        let len = u64::from_le_bytes(v[..8].try_into().expect("8 bytes"));
        let share = f64::from_le_bytes(v[8..16].try_into().expect("8 bytes"));
        f(id, len, share)
    })
}
