//! Where a bag is read from: [`BagTree`], what validation asks of a directory on disk
//! ([`super::DiskBag`]) or of objects under a prefix of a store, and the tag files read through
//! it within their caps.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use trawl_report::BagReport;
use trawl_scan::Source;
use trawl_spool::Sorted;

use crate::payload::Spools;
use crate::{BagError, io_err};

/// The payload as listed: its regular files under `data/`.
pub struct Payload {
    /// By path (`data/...`), each with its size (8 bytes, big-endian) first, then what the
    /// tree keeps of it besides (validation reads the names only).
    pub files: Arc<Sorted>,
    /// How many files.
    pub count: u64,
    /// Their bytes, together.
    pub bytes: u64,
}

/// A bag's files as validation reads them, wherever they are. Every name is relative to the
/// bag's root (`bagit.txt`, `data/a.txt`), `/`-separated.
pub trait BagTree {
    /// The bag as messages name it (a directory's path, `s3://BUCKET/PREFIX`); each file's
    /// path is this joined with its name.
    fn root(&self) -> &Path;

    /// The tag file `name`, opened for reading from its start; None: no such file. A name
    /// that is not one plain name below the root, or a file that is not a regular one, is
    /// refused (an error naming it), never read elsewhere. The reader ends where the file
    /// does: a caller reads at most what it caps a tag file of its kind at.
    fn open_tag(&self, name: &str) -> Result<Option<Box<dyn Read + '_>>, BagError>;

    /// Whether the tag file `name` is there.
    fn has(&self, name: &str) -> bool;

    /// The UTF-8 names of the entries at the bag's top, sorted.
    fn names_at_top(&self) -> Result<Vec<String>, BagError>;

    /// Whether `data/` is the bag's payload directory: what is wrong with it into `report`.
    fn payload_directory(&self, report: &mut BagReport);

    /// What, outside `data/`, is no file validation can read (a FIFO, a device, a key that is
    /// no plain name): each into `report`.
    fn odd_tag_entries(&self, report: &mut BagReport) -> Result<(), BagError>;

    /// The payload's files, sorted by name; what cannot be listed into `report`.
    fn payload(&self, report: &mut BagReport, spools: &Spools) -> Result<Payload, BagError>;

    /// Where the payload's bytes are read from: root 0 is the bag, its files named as above.
    fn source(&self) -> &dyn Source;

    /// Whether a `bag create` in place was cut short here (its journal is there), for the
    /// message of a bag without `bagit.txt`.
    fn interrupted_creation(&self) -> bool {
        false
    }
}

/// The most a tag file is read into memory, by kind: what is past it is refused with a message
/// naming the limit (a manifest linked to an endless device, a hostile 300 MB bag-info line).
pub(crate) const BAGIT_TXT_MAX: u64 = 64 << 10;
pub(crate) const INFO_MAX: u64 = 1 << 20;
pub(crate) const MANIFEST_MAX: u64 = 1 << 30;

pub(crate) fn cap_for(name: &str) -> u64 {
    match name {
        "bagit.txt" => BAGIT_TXT_MAX,
        "bag-info.txt" | "package-info.txt" => INFO_MAX,
        _ => MANIFEST_MAX,
    }
}

/// Reads the tag file `name` whole, as [`BagTree::open_tag`] opens it, at most
/// `cap_for(name)` bytes: one larger is refused, naming the limit, with no more than that
/// read.
pub(crate) fn read_tag(tree: &dyn BagTree, name: &str) -> Result<Option<Vec<u8>>, BagError> {
    let p = tree.root().join(name);
    let Some(file) = tree.open_tag(name)? else {
        return Ok(None);
    };
    let cap = cap_for(name);
    let mut out = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut out)
        .map_err(io_err(&p))?;
    if out.len() as u64 > cap {
        let limit = if cap >= 1 << 20 {
            format!("{} MiB", cap >> 20)
        } else {
            format!("{} KiB", cap >> 10)
        };
        return Err(BagError::Refused {
            path: p,
            msg: format!(
                "larger than the {limit} trawl reads for a tag file of this kind; not read"
            ),
        });
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree whose every tag file is endless (an answer that never ends, a device).
    struct Endless(trawl_scan::LocalRoots);

    impl BagTree for Endless {
        fn root(&self) -> &Path {
            Path::new("endless")
        }
        fn open_tag(&self, _: &str) -> Result<Option<Box<dyn Read + '_>>, BagError> {
            Ok(Some(Box::new(std::io::repeat(b'x'))))
        }
        fn has(&self, _: &str) -> bool {
            true
        }
        fn names_at_top(&self) -> Result<Vec<String>, BagError> {
            Ok(Vec::new())
        }
        fn payload_directory(&self, _: &mut BagReport) {}
        fn odd_tag_entries(&self, _: &mut BagReport) -> Result<(), BagError> {
            Ok(())
        }
        fn payload(&self, _: &mut BagReport, _: &Spools) -> Result<Payload, BagError> {
            unreachable!("not listed here")
        }
        fn source(&self) -> &dyn Source {
            &self.0
        }
    }

    /// Whatever a tree's reader yields, a tag file is read to its cap and one byte more, then
    /// refused with the limit named: an endless one ends too.
    #[test]
    fn an_endless_tag_file_is_read_to_its_cap_and_refused() {
        let tree = Endless(trawl_scan::LocalRoots::new(
            Vec::new(),
            trawl_scan::Links::Beneath,
        ));
        for (name, limit) in [("bagit.txt", "64 KiB"), ("bag-info.txt", "1 MiB")] {
            match read_tag(&tree, name) {
                Err(BagError::Refused { path, msg }) => {
                    assert_eq!(path, Path::new("endless").join(name));
                    assert!(msg.contains(&format!("larger than the {limit}")), "{msg}");
                }
                other => panic!("{name}: {:?}", other.map(|o| o.map(|v| v.len()))),
            }
        }
        // A payload manifest is read in pieces cut at line ends: a line past four pieces ends
        // it, named, rather than growing without bound.
        let mut pieces = 0;
        let read = super::super::read_utf8_pieces(&tree, "manifest-sha256.txt", &mut |_, _| {
            pieces += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(pieces, 0);
        assert!(read.unwrap_err().contains("a line longer than 4 MiB"));
    }
}
