//! A bag's per-file state kept out of RAM: payload paths with their digests or sizes go to
//! spools (sorted runs on disk past a budget, read back in path order), files are hashed as a
//! stream with only the ones under way held, and payload manifests are written in one pass
//! over a spool. A bag of any number of files is created, validated or updated in bounded
//! memory.

use std::io::Write;
use std::ops::ControlFlow;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use trawl_atomic::AtomicFile;
use trawl_digest::Algorithm;
use trawl_report::BagFinding;
use trawl_scan::{
    DigestLanes, Links, LocalRoots, Outcome, Progress, Reading, ScanConfig, ScanError, Source,
    read_named,
};
use trawl_spool::{Sorted, Spool};
use trawl_stop::Stop;

use crate::{BagError, io_err};

/// The RAM a bag operation gives its spools when the caller says nothing.
pub const DEFAULT_MEMORY: usize = 32 << 20;

/// Where and how much a bag operation spools.
#[derive(Debug, Clone)]
pub struct Spools {
    /// The spools' files go in private directories under this one (removed at the end).
    pub dir: PathBuf,
    /// RAM for all the operation's spools together.
    pub memory: usize,
}

impl Default for Spools {
    fn default() -> Spools {
        Spools {
            dir: std::env::temp_dir(),
            memory: DEFAULT_MEMORY,
        }
    }
}

impl Spools {
    /// A spool with `1/share` of the budget.
    pub(crate) fn spool(&self, share: usize) -> Spool {
        Spool::new(&self.dir, (self.memory / share.max(1)).max(1))
    }

    /// A spool's failure, named by the directory its files go under.
    pub(crate) fn err(&self) -> impl Fn(std::io::Error) -> BagError + '_ {
        |source| BagError::Io {
            path: self.dir.clone(),
            source,
        }
    }
}

/// What became of a file sent to [`hash_stream`], as a bag reports it.
pub(crate) enum Hashed {
    /// Read whole: its size and a digest of each algorithm asked for.
    Digests {
        /// Bytes read.
        size: u64,
        /// Each algorithm's digest.
        digests: Vec<(Algorithm, Vec<u8>)>,
    },
    /// Could not be read (counts as unreadable).
    Unreadable(BagFinding),
    /// Not a regular file, refused, or another failure.
    Failed(BagFinding),
}

impl Hashed {
    /// The reading service's outcome as a bag's finding.
    fn of(rel: &str, o: Outcome) -> Hashed {
        match o {
            Outcome::Read(rec) => Hashed::Digests {
                size: rec.size,
                digests: rec.digests(),
            },
            Outcome::Gone(path) => {
                Hashed::Unreadable(BagFinding::from_error(&trawl_read::ReadError::Vanished {
                    path,
                }))
            }
            Outcome::Failed(ScanError::Read(e)) => Hashed::Unreadable(BagFinding::from_error(&e)),
            Outcome::Failed(e) => Hashed::Failed(BagFinding::from_error(&e)),
            Outcome::Refused { path, why } => {
                Hashed::Failed(BagFinding::about(path.display(), why.to_string()))
            }
            Outcome::Unread(_) => {
                Hashed::Unreadable(BagFinding::about(rel, "not read (interrupted)"))
            }
        }
    }
}

/// Sends payload files, named below the bag, to [`hash_stream`]'s reading.
pub(crate) struct Feeder<'f, 'a, T>(&'f mut trawl_scan::Feeder<'a, (String, T)>);

impl<T> Feeder<'_, '_, T> {
    /// Queues `rel` (a path below the root); `Break` once the engine has stopped.
    pub(crate) fn send(&mut self, rel: String, with: T) -> ControlFlow<()> {
        let name = rel.as_bytes().to_vec();
        self.0.send(0, &name, (rel, with))
    }
}

/// The disk's reading of a bag at `root`: each file opened by its name in its directory, that
/// directory opened beneath the bag.
pub(crate) fn beneath(root: &Path) -> LocalRoots {
    LocalRoots::new(vec![root.to_path_buf()], Links::Beneath)
}

/// Hashes the files `feed` sends (from a thread of its own, as it produces them) with `algs`
/// in one read each, through trawl-scan's reading service from `source` (whose root 0 is the
/// bag, `root`), and hands each result to `done` with what it was sent with.
#[allow(clippy::too_many_arguments)]
pub(crate) fn hash_stream<T: Send, R: Send>(
    source: &dyn Source,
    root: &Path,
    algs: &[Algorithm],
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
    feed: impl FnOnce(&mut Feeder<'_, '_, T>) -> R + Send,
    mut done: impl FnMut(String, T, Hashed),
) -> R {
    let mut cfg = cfg.clone();
    cfg.roots = vec![root.to_path_buf()];
    let lanes = DigestLanes(algs.to_vec());
    let reading = Reading {
        source,
        cfg: &cfg,
        lanes: &lanes,
        cap: None,
        announce: true,
    };
    read_named(
        &reading,
        progress,
        stop,
        |f| feed(&mut Feeder(f)),
        |(rel, with), o| {
            let h = Hashed::of(&rel, o);
            done(rel, with, h)
        },
    )
}

/// The digests of `algs` of everything `r` yields, read once in 64 KiB steps (a tag file of
/// any size is hashed in that much memory).
pub(crate) fn digest_reader(
    mut r: impl std::io::Read,
    algs: &[Algorithm],
) -> std::io::Result<Vec<Vec<u8>>> {
    let mut hashers: Vec<_> = algs.iter().map(|a| a.hasher()).collect();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        for h in &mut hashers {
            h.update(&buf[..n]);
        }
    }
    Ok(hashers.into_iter().map(|h| h.finish()).collect())
}

/// Payload digests in path order, from a spool: each record's key is a path (below the bag
/// after `prefix`), its value `skip` bytes of something else, then the digests of `layout`.
pub(crate) struct Listing<'a> {
    pub sorted: &'a Arc<Sorted>,
    pub layout: &'a [Algorithm],
    pub prefix: &'a [u8],
    pub skip: usize,
}

impl Listing<'_> {
    /// The digest of `alg` in a record's value.
    pub(crate) fn digest<'v>(&self, value: &'v [u8], alg: Algorithm) -> Option<&'v [u8]> {
        let mut off = self.skip;
        for a in self.layout {
            let n = a.output_len();
            if *a == alg {
                return value.get(off..off + n);
            }
            off += n;
        }
        None
    }
}

/// Writes `manifest-ALG.txt` for each of `algs` under `root` in one pass over `listing`, each
/// file written whole under a temporary name, then renamed into place.
pub(crate) fn write_payload_manifests(
    root: &Path,
    listing: &Listing<'_>,
    algs: &[Algorithm],
) -> Result<(), BagError> {
    let mut outs = Vec::new();
    for alg in algs {
        let p = root.join(format!("manifest-{}.txt", alg.bagit_name()));
        let f = AtomicFile::create(&p)?;
        outs.push((*alg, p, std::io::BufWriter::with_capacity(1 << 16, f)));
    }
    let mut line = Vec::new();
    let mut path = Vec::new();
    use crate::Ended;
    let read = listing.sorted.for_each(|key, value| {
        path.clear();
        path.extend_from_slice(listing.prefix);
        path.extend_from_slice(key);
        let enc = crate::encode_path(&path);
        for (alg, p, w) in outs.iter_mut() {
            line.clear();
            // Every spooled entry holds each algorithm's digest; one without is never written
            // as an empty digest, but ends the writing with the file named.
            let Some(d) = listing.digest(value, *alg) else {
                return Err(Ended::Bag(BagError::Refused {
                    path: root.join(std::ffi::OsStr::from_bytes(&path)),
                    msg: format!("no {alg} digest was kept for it; no manifest written"),
                }));
            };
            line.extend_from_slice(hex::encode(d).as_bytes());
            line.extend_from_slice(b"  ");
            line.extend_from_slice(&enc);
            line.push(b'\n');
            w.write_all(&line).map_err(|e| Ended::Bag(io_err(p)(e)))?;
        }
        Ok(())
    });
    match read {
        Ok(()) => {}
        Err(Ended::Bag(e)) => return Err(e),
        Err(Ended::Spool(e)) => return Err(io_err(root)(e)),
    }
    for (_, p, w) in outs {
        let f = w.into_inner().map_err(|e| io_err(&p)(e.into_error()))?;
        f.commit().map_err(io_err(&p))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A payload directory swapped for a link to elsewhere after the bag was listed: the file
    /// is refused, not read from outside the bag; a last component swapped for a link too.
    #[test]
    fn no_payload_file_is_read_through_a_link() {
        let top = tempfile::tempdir().unwrap();
        let bag = top.path().join("bag");
        std::fs::create_dir_all(bag.join("data/kept")).unwrap();
        std::fs::write(bag.join("data/kept/f"), b"inside").unwrap();
        std::fs::create_dir_all(top.path().join("outside")).unwrap();
        std::fs::write(top.path().join("outside/f"), b"outside").unwrap();
        std::os::unix::fs::symlink(top.path().join("outside"), bag.join("data/sub")).unwrap();
        std::os::unix::fs::symlink(top.path().join("outside/f"), bag.join("data/kept/g")).unwrap();
        let cfg = ScanConfig::new(vec![bag.clone()]);
        let mut got: Vec<(String, String)> = Vec::new();
        hash_stream(
            &beneath(&bag),
            &bag,
            &[Algorithm::Sha256],
            &cfg,
            &trawl_scan::NoProgress,
            &Stop::new(),
            |f| {
                for n in ["data/kept/f", "data/sub/f", "data/kept/g", "data/gone/f"] {
                    let _ = f.send(n.to_string(), ());
                }
            },
            |rel, (), h| {
                let what = match h {
                    Hashed::Digests { size, .. } => format!("read {size}"),
                    Hashed::Unreadable(f) | Hashed::Failed(f) => format!("{f:?}"),
                };
                got.push((rel, what));
            },
        );
        got.sort();
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(
            got[0].0 == "data/gone/f" && got[0].1.contains("vanished"),
            "{got:?}"
        );
        assert_eq!(got[1], ("data/kept/f".into(), "read 6".into()));
        assert!(
            got[2].0 == "data/kept/g" && got[2].1.contains("symbolic link"),
            "{got:?}"
        );
        assert!(
            got[3].0 == "data/sub/f" && got[3].1.contains("outside the root"),
            "{got:?}"
        );
    }
}
