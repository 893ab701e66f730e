//! The index of each file, computed once and only once even when many first requests for it
//! arrive together (single flight: the first caller computes, the others await the same cell),
//! and computed again when the file's size or modification time changes.

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;
use std::sync::{Arc, Mutex};

use tokio::sync::{OnceCell, Semaphore};
use trawl_media::FlvIndex;

/// Size and modification time (seconds, nanoseconds): what invalidates an entry.
pub type Stamp = (u64, i64, i64);

type Cell = Arc<OnceCell<Result<Arc<FlvIndex>, String>>>;

/// Device and inode: a file is cached as itself, whatever name reached it.
pub type FileId = (u64, u64);

/// Entries kept; past this the map is emptied (indexes are cheap to compute again).
const MAX_ENTRIES: usize = 100_000;

pub struct IndexCache {
    map: Mutex<HashMap<FileId, (Stamp, Cell)>>,
    /// Caps the indexing done at once.
    permits: Semaphore,
}

impl IndexCache {
    pub fn new(parallel: usize) -> IndexCache {
        IndexCache {
            map: Mutex::new(HashMap::new()),
            permits: Semaphore::new(parallel.max(1)),
        }
    }

    /// The index of the open `file` (`id`, named `path` in errors) as it is at `stamp`, and
    /// whether this call computed it. The index is computed from the descriptor, never by
    /// opening a name again.
    pub async fn get(
        &self,
        id: FileId,
        path: &Path,
        file: &File,
        stamp: Stamp,
    ) -> (Result<Arc<FlvIndex>, String>, bool) {
        let cell = {
            let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
            if map.len() >= MAX_ENTRIES {
                map.clear();
            }
            let e = map.entry(id).or_insert_with(|| (stamp, Cell::default()));
            if e.0 != stamp {
                *e = (stamp, Cell::default());
            }
            e.1.clone()
        };
        let mut mine = false;
        let r = cell
            .get_or_init(|| async {
                mine = true;
                let _permit = self.permits.acquire().await.expect("never closed");
                let p = path.to_path_buf();
                let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
                let f = match file.try_clone() {
                    Ok(f) => f,
                    Err(e) => return Err(format!("{}: {e}", p.display())),
                };
                match tokio::task::spawn_blocking(move || {
                    trawl_media::index_open(&p, &f, trawl_media::SeekMethod::Pread, threads)
                })
                .await
                {
                    Ok(Ok(i)) => Ok(Arc::new(i)),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(e) => Err(format!("indexing failed: {e}")),
                }
            })
            .await
            .clone();
        (r, mine)
    }
}
