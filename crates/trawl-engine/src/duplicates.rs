//! Duplicate files found from the scan's own digests: each non-empty file's (size, digest,
//! inode, absolute name) goes to a [`Spool`], so that files of equal content come out next to
//! each other, in bounded memory whatever the file count. Only one group's names are held at a
//! time.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

use trawl_digest::Algorithm;
use trawl_report::{DuplicateSummary, FileGroup as Group};
use trawl_scan::FileRecord;
use trawl_spool::{Sorted, Spool};

/// The digests a duplicate search may compare by, strongest first. CRC-32C is not among them:
/// 32 bits would make equal content out of chance.
const BY_STRENGTH: [Algorithm; 14] = [
    Algorithm::Sha512,
    Algorithm::Sha3_512,
    Algorithm::Blake2b,
    Algorithm::Sha384,
    Algorithm::Sha3_384,
    Algorithm::Sha256,
    Algorithm::Sha3_256,
    Algorithm::Blake3,
    Algorithm::Blake2s,
    Algorithm::Sha224,
    Algorithm::Sha3_224,
    Algorithm::Sha1,
    Algorithm::Xxh3,
    Algorithm::Md5,
];

/// The strongest of `algs` to compare files by, if any will do.
pub fn comparing_digest(algs: &[Algorithm]) -> Option<Algorithm> {
    BY_STRENGTH.into_iter().find(|a| algs.contains(a))
}

/// Collects the files of a scan.
pub struct DuplicateSink {
    spool: Spool,
    algorithm: Algorithm,
    key: Vec<u8>,
}

impl DuplicateSink {
    pub fn new(dir: &std::path::Path, budget: usize, algorithm: Algorithm) -> DuplicateSink {
        DuplicateSink {
            spool: Spool::new(dir, budget),
            algorithm,
            key: Vec::new(),
        }
    }

    /// Notes one file read (empty files are no one's duplicates).
    pub fn add(&mut self, rec: &FileRecord) -> io::Result<()> {
        if rec.size == 0 {
            return Ok(());
        }
        let Some(digest) = rec
            .outputs
            .iter()
            .find_map(|o| o.digest().filter(|(a, _)| *a == self.algorithm))
            .map(|(_, d)| d)
        else {
            return Ok(());
        };
        let name = std::path::absolute(&rec.path)?;
        // Largest files first; then by content, by inode (names of one inode together), by
        // name.
        let k = &mut self.key;
        k.clear();
        k.extend_from_slice(&(!rec.size).to_be_bytes());
        k.extend_from_slice(digest);
        k.extend_from_slice(&rec.dev.to_be_bytes());
        k.extend_from_slice(&rec.ino.to_be_bytes());
        k.extend_from_slice(name.as_os_str().as_bytes());
        self.spool.push(k, &[])
    }

    /// Sorts what was collected and counts the groups.
    pub fn finish(self) -> io::Result<Duplicates> {
        let sorted = Arc::new(self.spool.finish()?);
        let mut d = Duplicates {
            sorted,
            algorithm: self.algorithm,
            summary: DuplicateSummary {
                algorithm: self.algorithm.name().to_string(),
                ..DuplicateSummary::default()
            },
        };
        let mut summary = std::mem::take(&mut d.summary);
        d.for_each_group(&mut |g| {
            summary.add(&g.to_report());
            Ok(())
        })?;
        d.summary = summary;
        Ok(d)
    }
}

/// The groups of a finished scan, to be written as often as asked.
pub struct Duplicates {
    sorted: Arc<Sorted>,
    /// The digest files were compared by.
    pub algorithm: Algorithm,
    /// The groups' counts, as the report gives them.
    pub summary: DuplicateSummary,
}

impl std::fmt::Debug for Duplicates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Duplicates")
            .field("algorithm", &self.algorithm)
            .field("summary", &self.summary)
            .finish()
    }
}

impl Duplicates {
    /// Each group of two or more inodes, largest files first, one name per inode (the first
    /// by name).
    pub fn for_each_group(&self, f: &mut dyn FnMut(&Group) -> io::Result<()>) -> io::Result<()> {
        let dl = self.algorithm.output_len();
        let head = 8 + dl;
        let mut cur: Option<(Vec<u8>, Group)> = None;
        let mut last_inode: Vec<u8> = Vec::new();
        let flush = |cur: &mut Option<(Vec<u8>, Group)>,
                     f: &mut dyn FnMut(&Group) -> io::Result<()>|
         -> io::Result<()> {
            if let Some((_, g)) = cur.take()
                && g.names.len() >= 2
            {
                f(&g)?;
            }
            Ok(())
        };
        self.sorted.for_each(|k, _| -> io::Result<()> {
            if k.len() < head + 16 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a duplicate record is damaged",
                ));
            }
            let (content, rest) = k.split_at(head);
            let (inode, name) = rest.split_at(16);
            if cur.as_ref().is_none_or(|(c, _)| c != content) {
                flush(&mut cur, f)?;
                let size = !u64::from_be_bytes(content[..8].try_into().expect("8 bytes"));
                cur = Some((
                    content.to_vec(),
                    Group {
                        size,
                        digest: content[8..].to_vec(),
                        names: Vec::new(),
                    },
                ));
                last_inode.clear();
            }
            if last_inode != inode {
                last_inode.clear();
                last_inode.extend_from_slice(inode);
                let (_, g) = cur.as_mut().expect("just set");
                g.names.push(name.to_vec());
            }
            Ok(())
        })?;
        flush(&mut cur, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_strongest_digest_is_chosen_and_crc_alone_is_refused() {
        use Algorithm::*;
        assert_eq!(comparing_digest(&[Md5, Sha256, Xxh3]), Some(Sha256));
        assert_eq!(comparing_digest(&[Blake3, Sha512]), Some(Sha512));
        assert_eq!(comparing_digest(&[Xxh3, Md5]), Some(Xxh3));
        assert_eq!(comparing_digest(&[Crc32c]), None);
        assert_eq!(comparing_digest(&[]), None);
    }
}
