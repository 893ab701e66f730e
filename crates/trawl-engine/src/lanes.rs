//! The lanes a scan runs, assembled from the crates that own them: digests (`trawl-scan`), data
//! reduction (`trawl-reduce`) and the FLV index (`trawl-media`).

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use trawl_digest::Algorithm;
use trawl_media::MediaLane;
use trawl_reduce::{Counter, FileReducer, ReduceConfig};
use trawl_scan::{DigestLanes, FileInfo, Lane, LaneFactory, fill_cores};
use trawl_spool::Spool;

/// A lock whose holder panicked is still taken (what it guards is whole between calls).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Digest lanes plus, if asked, one data-reduction lane and one media lane.
#[derive(Clone)]
pub struct ScanLanes {
    pub digests: Vec<Algorithm>,
    pub reduce: Option<Arc<ReduceConfig>>,
    /// Where every file's reduction facts are folded in, by the thread that read it (a large
    /// file's as it is read: flat memory).
    pub counter: Option<Arc<Counter>>,
    /// Index FLV files.
    pub media: bool,
    /// The inodes with several names met so far: a name after the first gets no reduction lane
    /// (its data is counted once, as `du` counts it). `None` counts every name
    /// (`--count-links`).
    pub links: Option<Arc<Links>>,
}

/// Hard links met during a scan: the inodes seen (only those with several names, so that the
/// set stays small), and the names beyond the first with their bytes. When files are
/// attributed, every name of such an inode also waits on disk, so that the one it is counted
/// under is chosen once all were met: its first name in byte order, whatever order the reads
/// took and however a cluster cut the files into shards (a report is the same every run).
#[derive(Default)]
pub struct Links {
    seen: Mutex<HashSet<(u64, u64)>>,
    /// (device, inode, name) -> the number the counted name was registered under (none for
    /// the others).
    every: Option<Mutex<Option<Spool>>>,
    error: Mutex<Option<std::io::Error>>,
    pub names: AtomicU64,
    pub bytes: AtomicU64,
}

impl Links {
    /// Hard links counted once; with `naming`, every name kept under `temp_dir` for
    /// [`Links::settle`].
    pub fn new(naming: bool, temp_dir: &Path) -> Links {
        Links {
            every: naming.then(|| Mutex::new(Some(Spool::new(temp_dir, 1 << 20)))),
            ..Links::default()
        }
    }

    /// Notes a name of a file with several (`id`: the number it was registered under, when it
    /// is the name counted).
    fn met(&self, file: &FileInfo<'_>, id: Option<u32>) {
        let Some(every) = self.every.as_ref().filter(|_| file.nlink >= 2) else {
            return;
        };
        let mut key = Vec::with_capacity(16 + file.path.as_os_str().len());
        key.extend_from_slice(&file.dev.to_be_bytes());
        key.extend_from_slice(&file.ino.to_be_bytes());
        key.extend_from_slice(file.path.as_os_str().as_bytes());
        let value = id.map(u32::to_be_bytes);
        let value = value.as_ref().map_or(&[][..], |v| &v[..]);
        if let Some(Err(e)) = lock(every).as_mut().map(|s| s.push(&key, value)) {
            lock(&self.error).get_or_insert(e);
        }
    }

    /// Renames in `counter` each hard-linked file counted under a name that is not its first
    /// in byte order (after the last read).
    pub fn settle(&self, counter: &Counter) -> std::io::Result<()> {
        if let Some(e) = lock(&self.error).take() {
            return Err(e);
        }
        let Some(spool) = self.every.as_ref().and_then(|e| lock(e).take()) else {
            return Ok(());
        };
        let sorted = Arc::new(spool.finish()?);
        // Per inode: its first name, and the number of the name counted.
        let mut inode: Option<[u8; 16]> = None;
        let mut first: Vec<u8> = Vec::new();
        let mut counted: Option<(u32, bool)> = None;
        let done = |first: &[u8], counted: Option<(u32, bool)>| match counted {
            Some((id, false)) => counter.rename(id, Path::new(OsStr::from_bytes(first))),
            _ => Ok(()),
        };
        sorted.for_each(|k, v| -> std::io::Result<()> {
            let (ino, name) = k.split_at(16.min(k.len()));
            let ino: [u8; 16] = ino.try_into().unwrap_or_default();
            if inode != Some(ino) {
                if inode.is_some() {
                    done(&first, counted.take())?;
                }
                inode = Some(ino);
                first.clear();
                first.extend_from_slice(name);
            }
            if let Ok(id) = <[u8; 4]>::try_from(v) {
                counted = Some((u32::from_be_bytes(id), name == first.as_slice()));
            }
            Ok(())
        })?;
        if inode.is_some() {
            done(&first, counted)?;
        }
        Ok(())
    }

    /// Whether this name is the first of its inode met in this scan (always, for one name).
    pub fn first_name(&self, file: &FileInfo<'_>) -> bool {
        if file.nlink < 2 {
            return true;
        }
        let first = lock(&self.seen).insert((file.dev, file.ino));
        if !first {
            self.names.fetch_add(1, Ordering::Relaxed);
            self.bytes.fetch_add(file.size, Ordering::Relaxed);
        }
        first
    }
}

/// Whether a file that may spread ([`FileInfo::spread`]) spreads its reduction too: only when
/// every digest beside it is at least as fast on one thread as the reduction (about 3 GB/s a
/// core: BLAKE3, which spreads itself, XXH3, the CRCs). MD5, the SHA families, BLAKE2 and SM3 do
/// 0.3-2 GB/s on one thread and cannot spread, so such a digest holds the file to its own speed
/// whatever the reduction does, and a spread reduction would only take its core on a machine
/// with few (on two cores the default scan of a large file took 7% longer).
fn reduction_spreads(digests: &[Algorithm]) -> bool {
    use Algorithm::*;
    digests
        .iter()
        .all(|a| matches!(a, Blake3 | Xxh3 | Crc32c | Crc32 | Crc64Nvme))
}

impl LaneFactory for ScanLanes {
    fn lanes(&self, file: &FileInfo<'_>) -> Vec<Box<dyn Lane>> {
        let (path, size) = (file.path, file.size);
        let mut l = DigestLanes::of(&self.digests, file, 2);
        let counted = self.links.as_ref().is_none_or(|k| k.first_name(file));
        let mut id = None;
        if let Some(cfg) = self.reduce.as_ref().filter(|_| counted) {
            let spread = file.spread && reduction_spreads(&self.digests);
            let mut r = FileReducer::new(cfg.clone()).with_parallel(spread);
            if let Some(c) = &self.counter {
                if cfg.attributing() {
                    let n = c.register(path);
                    id = Some(n);
                    r = r.with_file(n);
                }
                r = r.with_counter(c.clone());
            }
            l.push(Box::new(r));
        }
        if let Some(k) = &self.links {
            k.met(file, id);
        }
        if self.media && size > 0 {
            l.push(Box::new(MediaLane::new(path, size)));
        }
        l
    }

    fn busy_cores(&self, file: &FileInfo<'_>) -> bool {
        // The media lane only looks at most files' first bytes.
        fill_cores(&self.digests, self.reduce.is_some() as usize, file.spread)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reduction_spreads_only_beside_digests_as_fast_as_it() {
        use Algorithm::*;
        assert!(reduction_spreads(&[]));
        assert!(reduction_spreads(&[Blake3, Xxh3, Crc32c, Crc64Nvme]));
        for slow in [Md5, Sha1, Sha256, Sha512, Sha3_256, Blake2b, Sm3] {
            assert!(!reduction_spreads(&[Blake3, slow]), "{slow}");
        }
    }

    #[test]
    fn the_media_lane_does_not_count_as_busy_the_reduction_lane_does() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let scan = |digests: Vec<Algorithm>, reduce: bool| ScanLanes {
            digests,
            reduce: reduce.then(|| Arc::new(ReduceConfig::default())),
            counter: None,
            media: true,
            links: None,
        };
        let file = FileInfo {
            path: std::path::Path::new("f"),
            size: 64 << 20,
            spread: true,
            dev: 1,
            ino: 1,
            nlink: 1,
        };
        assert_eq!(
            scan(vec![Algorithm::Sha256], false).busy_cores(&file),
            cores == 1
        );
        assert_eq!(
            scan(vec![Algorithm::Sha256], true).busy_cores(&file),
            cores <= 2
        );
    }
}
