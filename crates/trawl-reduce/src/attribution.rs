//! Which files hold the duplicates: a key log per block, read back against the final counts;
//! the files' names in a log on disk, their shares and their own figures (bytes, what the
//! first codec stores, format) in spools, so that nothing is held per file in RAM but the few
//! files ranked. The same pass feeds the breakdowns by directory and type.

use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::sync::Arc;

use trawl_report::TopFile;
use trawl_spool::Spool;

use crate::breakdown::BreakdownBuilder;
use crate::config::ReduceConfig;
use crate::spill;

/// Bytes of shares held in RAM before they go to disk.
const SHARES_MEMORY: usize = 4 << 20;

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
    /// The next file's name.
    fn next_name(&mut self) -> std::io::Result<&[u8]> {
        let mut len = [0u8; 4];
        self.r.read_exact(&mut len)?;
        self.name.resize(u32::from_le_bytes(len) as usize, 0);
        self.r.read_exact(&mut self.name)?;
        self.next += 1;
        Ok(&self.name)
    }
}

/// Each file's own figures, per part of it folded in: bytes, bytes the first codec stores,
/// and its format; keyed by the file's number.
pub(crate) struct Facts(Spool);

impl Facts {
    pub(crate) fn new(cfg: &ReduceConfig) -> Facts {
        let dir = cfg.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
        Facts(Spool::new(&dir, SHARES_MEMORY))
    }

    pub(crate) fn add(
        &mut self,
        file: u32,
        bytes: u64,
        allocated: u64,
        kind: Option<&'static str>,
    ) -> std::io::Result<()> {
        let mut v = Vec::with_capacity(24);
        v.extend_from_slice(&bytes.to_le_bytes());
        v.extend_from_slice(&allocated.to_le_bytes());
        v.extend_from_slice(kind.unwrap_or("").as_bytes());
        self.0.push(&file.to_be_bytes(), &v)
    }
}

/// Files counted under another name than the one they were numbered with, keyed by the
/// file's number (big-endian: byte order is number order).
pub(crate) struct Renames(Spool);

impl Renames {
    pub(crate) fn new(cfg: &ReduceConfig) -> Renames {
        let dir = cfg.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
        Renames(Spool::new(&dir, SHARES_MEMORY))
    }

    pub(crate) fn add(&mut self, file: u32, name: &[u8]) -> std::io::Result<()> {
        self.0.push(&file.to_be_bytes(), name)
    }
}

/// The formats `infer` names, so that a format read back from a spool is a `&'static str`
/// again (an unknown one is dropped).
pub(crate) fn static_kind(k: &[u8]) -> Option<&'static str> {
    if k.is_empty() {
        return None;
    }
    KINDS.with(|kinds| {
        let mut kinds = kinds.borrow_mut();
        if let Some(s) = kinds.iter().find(|s| s.as_bytes() == k) {
            return Some(*s);
        }
        // Each distinct format is leaked once: there are about a hundred.
        let s: &'static str = Box::leak(String::from_utf8_lossy(k).into_owned().into_boxed_str());
        kinds.push(s);
        Some(s)
    })
}

thread_local! {
    static KINDS: std::cell::RefCell<Vec<&'static str>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Each duplicate block's (duplicate bytes, share of the saving) for its file, keyed by the
/// file's number (big-endian, so that byte order is number order).
pub(crate) struct Shares(Spool);

impl Shares {
    /// One of `parts` partitions' shares (RAM split between them).
    pub(crate) fn new(cfg: &ReduceConfig, parts: usize) -> Shares {
        let dir = cfg.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
        Shares(Spool::new(&dir, SHARES_MEMORY / parts.max(1)))
    }

    fn add(&mut self, file: u32, len: u32, share: Share) -> std::io::Result<()> {
        let mut v = [0u8; 24];
        v[..8].copy_from_slice(&(len as u64).to_le_bytes());
        v[8..].copy_from_slice(&share.to_le_bytes());
        self.0.push(&file.to_be_bytes(), &v)
    }
}

/// A share of bytes in whole parts of [`SHARE_ONE`]: shares are summed as whole numbers, so
/// that a sum is the same whatever order its terms come in (a file's blocks met in another
/// order, partitions cut another way, a cluster's shards: a sum of floats is not), and each
/// term is rounded once, the same way everywhere, before it is summed.
pub(crate) type Share = u128;

/// One byte, as a [`Share`]: parts of 2^-32 bytes, fine enough that the rounding of a billion
/// blocks' shares stays under a byte.
pub(crate) const SHARE_ONE: Share = 1 << 32;

/// `len` bytes times `num / den`, as a [`Share`] (rounded to the nearest part, halves up).
pub(crate) fn share(len: u32, num: u64, den: u64) -> Share {
    let den = Share::from(den.max(1));
    (Share::from(len) * Share::from(num) * SHARE_ONE + den / 2) / den
}

/// A share in whole bytes, as reports show it (halves up): a file's share of the saving, a
/// row's, a reference bucket's stored bytes.
pub(crate) fn whole_bytes(s: Share) -> u64 {
    u64::try_from(s / SHARE_ONE + Share::from(s % SHARE_ONE >= SHARE_ONE / 2)).unwrap_or(u64::MAX)
}

/// Per reference-count bucket: the bytes of every occurrence of its blocks (what storage
/// without dedup holds) and, summed as each occurrence's `1/c` share, the bytes of the blocks
/// once (what dedup stores), in parts of a byte.
pub(crate) type RefBytes = [(u64, Share); 13];

/// Attributes one partition of the key log against the final counts of its keys (`count`).
pub(crate) fn attribute_partition(
    reader: &spill::SpillReader,
    q: usize,
    count: &dyn Fn(u128) -> u64,
    per: &mut Shares,
    ref_bytes: &mut RefBytes,
) -> std::io::Result<()> {
    let mut err = None;
    reader.read(q, &mut |records| {
        for r in records {
            let c = count(r.key);
            let b = crate::dedup::ref_bucket(c);
            ref_bytes[b].0 += r.len as u64;
            ref_bytes[b].1 += share(r.len, 1, c);
            if c >= 2
                && err.is_none()
                && let Err(e) = per.add(r.extra[0], r.len, share(r.len, c - 1, c))
            {
                err = Some(e);
            }
        }
    })?;
    err.map_or(Ok(()), Err)
}

/// The `top` files with the largest share of the saving (ties by name), from the shares of
/// every partition summed per file, partition by partition, each in the order they were added;
/// every file also goes to the breakdown, if one is made.
pub(crate) fn rank(
    per: Vec<Shares>,
    names: NameLog,
    facts: Facts,
    renames: Option<Renames>,
    top: usize,
    block_size: u64,
    mut breakdown: Option<&mut BreakdownBuilder>,
) -> std::io::Result<Vec<TopFile>> {
    let mut cursors = Vec::with_capacity(per.len());
    for p in per {
        cursors.push(Cursor::new(Arc::new(p.0.finish()?).iter()?)?);
    }
    let mut shares = MergedShares::new(cursors);
    let facts = Arc::new(facts.0.finish()?);
    let count = names.count;
    let mut names = names.reader()?;
    let mut facts = Cursor::new(facts.iter()?)?;
    let mut renames = match renames {
        Some(r) => Some(Cursor::new(Arc::new(r.0.finish()?).iter()?)?),
        None => None,
    };
    let mut renamed = Vec::new();
    // (share, name, duplicate bytes), at most a few times `top` of them.
    let mut best: Vec<(Share, String, u64)> = Vec::new();
    for id in 0..count {
        let mut name = names.next_name()?;
        if let Some(r) = renames.as_mut()
            && renamed_to(r, id, &mut renamed)?
        {
            name = &renamed;
        }
        let (dup, share) = file_shares(&mut shares, id)?;
        let (bytes, allocated, kind) = file_facts(&mut facts, id)?;
        if let Some(b) = breakdown.as_deref_mut() {
            b.add(name, bytes, dup, share, allocated, kind)?;
        }
        if dup > 0 && top > 0 {
            best.push((share, String::from_utf8_lossy(name).into_owned(), dup));
            if best.len() >= 4 * top + 64 {
                best.sort_by(by_saving);
                best.truncate(top);
            }
        }
    }
    best.sort_by(by_saving);
    best.truncate(top);
    Ok(best
        .into_iter()
        .map(|(share, path, dup)| TopFile {
            path,
            block_size,
            duplicate_bytes: dup,
            saved_bytes: saved(share),
        })
        .collect())
}

/// Files by the bytes their share of the saving stands for, largest first, ties by name.
fn by_saving(a: &(Share, String, u64), b: &(Share, String, u64)) -> std::cmp::Ordering {
    saved(b.0).cmp(&saved(a.0)).then_with(|| a.1.cmp(&b.1))
}

/// An attribution record that cannot be read.
fn damaged() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "an attribution record is damaged",
    )
}

/// The file number a record's key holds.
fn id_of(k: &[u8]) -> std::io::Result<u32> {
    Ok(u32::from_be_bytes(k.try_into().map_err(|_| damaged())?))
}

/// Whether file `id` was renamed: its last name then in `renamed` (the renames passed).
fn renamed_to(r: &mut Cursor, id: u32, renamed: &mut Vec<u8>) -> std::io::Result<bool> {
    let mut found = false;
    while let Some((k, v)) = r.peek() {
        if id_of(k)? != id {
            break;
        }
        renamed.clear();
        renamed.extend_from_slice(v);
        found = true;
        r.advance()?;
    }
    Ok(found)
}

/// File `id`'s duplicate bytes and share of the saving, summed over its records (passed).
fn file_shares(shares: &mut MergedShares, id: u32) -> std::io::Result<(u64, Share)> {
    let (mut dup, mut share) = (0u64, 0 as Share);
    while let Some((k, v)) = shares.peek() {
        if id_of(k)? != id {
            break;
        }
        if v.len() != 24 {
            return Err(damaged());
        }
        dup += u64::from_le_bytes(v[..8].try_into().expect("8 bytes"));
        share += Share::from_le_bytes(v[8..24].try_into().expect("16 bytes"));
        shares.advance()?;
    }
    Ok((dup, share))
}

/// File `id`'s bytes, bytes the first codec stores, and format, from its facts (passed).
fn file_facts(facts: &mut Cursor, id: u32) -> std::io::Result<(u64, u64, Option<&'static str>)> {
    let (mut bytes, mut allocated, mut kind) = (0u64, 0u64, None);
    while let Some((k, v)) = facts.peek() {
        if id_of(k)? != id {
            break;
        }
        if v.len() < 16 {
            return Err(damaged());
        }
        bytes += u64::from_le_bytes(v[..8].try_into().expect("8 bytes"));
        allocated += u64::from_le_bytes(v[8..16].try_into().expect("8 bytes"));
        kind = kind.or_else(|| static_kind(&v[16..]));
        facts.advance()?;
    }
    Ok((bytes, allocated, kind))
}

/// The bytes a file's share of the saving stands for, as the report shows them: files are
/// ranked by these, ties by name.
pub(crate) fn saved(share: Share) -> u64 {
    whole_bytes(share)
}

/// A pass over a spool that can look at its next record before taking it.
pub(crate) struct Cursor {
    r: trawl_spool::Records,
    key: Vec<u8>,
    value: Vec<u8>,
    some: bool,
}

impl Cursor {
    pub(crate) fn new(r: trawl_spool::Records) -> std::io::Result<Cursor> {
        let mut c = Cursor {
            r,
            key: Vec::new(),
            value: Vec::new(),
            some: false,
        };
        c.advance()?;
        Ok(c)
    }

    pub(crate) fn peek(&self) -> Option<(&[u8], &[u8])> {
        self.some
            .then_some((self.key.as_slice(), self.value.as_slice()))
    }

    pub(crate) fn advance(&mut self) -> std::io::Result<()> {
        match self.r.next_record()? {
            Some((k, v)) => {
                self.key.clear();
                self.key.extend_from_slice(k);
                self.value.clear();
                self.value.extend_from_slice(v);
                self.some = true;
            }
            None => self.some = false,
        }
        Ok(())
    }
}

/// The shares of every partition as one stream in file order: a file's shares from the first
/// partition, then the next, each in the order they were added (a merge of the partitions'
/// sorted spools, ties by partition).
struct MergedShares {
    cursors: Vec<Cursor>,
    heap: BinaryHeap<std::cmp::Reverse<(u64, usize)>>,
}

impl MergedShares {
    fn new(cursors: Vec<Cursor>) -> MergedShares {
        let heap = cursors
            .iter()
            .enumerate()
            .filter_map(|(q, c)| c.peek().map(|(k, _)| std::cmp::Reverse((order_key(k), q))))
            .collect();
        MergedShares { cursors, heap }
    }

    /// The next record's key and value, if any.
    fn peek(&self) -> Option<(&[u8], &[u8])> {
        let std::cmp::Reverse((_, q)) = self.heap.peek()?;
        self.cursors[*q].peek()
    }

    pub(crate) fn advance(&mut self) -> std::io::Result<()> {
        let Some(std::cmp::Reverse((_, q))) = self.heap.pop() else {
            return Ok(());
        };
        let c = &mut self.cursors[q];
        c.advance()?;
        if let Some((k, _)) = c.peek() {
            self.heap.push(std::cmp::Reverse((order_key(k), q)));
        }
        Ok(())
    }
}

/// A share record's key (a file's number, 4 bytes big-endian) as a number that sorts alike
/// (a damaged key sorts last, and the ranking refuses it).
fn order_key(k: &[u8]) -> u64 {
    <[u8; 4]>::try_from(k).map_or(u64::MAX, |b| u32::from_be_bytes(b) as u64)
}
