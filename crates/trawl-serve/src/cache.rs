//! The index of each file, computed once and only once even when many first requests for it
//! arrive together (single flight: the first caller computes, the others await the same cell),
//! and computed again when the file's size or modification time changes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{OnceCell, Semaphore};
use trawl_media::FlvIndex;

/// Size and modification time (seconds, nanoseconds): what invalidates an entry.
pub type Stamp = (u64, i64, i64);

type Cell = Arc<OnceCell<Result<Arc<FlvIndex>, String>>>;

/// Entries kept; past this the map is emptied (indexes are cheap to compute again).
const MAX_ENTRIES: usize = 100_000;

pub struct IndexCache {
    map: Mutex<HashMap<PathBuf, (Stamp, Cell)>>,
    /// Caps the indexing done at once.
    permits: Semaphore,
    computed: AtomicU64,
}

impl IndexCache {
    pub fn new(parallel: usize) -> IndexCache {
        IndexCache {
            map: Mutex::new(HashMap::new()),
            permits: Semaphore::new(parallel.max(1)),
            computed: AtomicU64::new(0),
        }
    }

    /// How many indexes were computed so far.
    pub fn computed(&self) -> u64 {
        self.computed.load(Ordering::Relaxed)
    }

    /// The index of `path` as it is at `stamp`, and whether this call computed it.
    pub async fn get(&self, path: &Path, stamp: Stamp) -> (Result<Arc<FlvIndex>, String>, bool) {
        let cell = {
            let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
            if map.len() >= MAX_ENTRIES {
                map.clear();
            }
            let e = map
                .entry(path.to_path_buf())
                .or_insert_with(|| (stamp, Cell::default()));
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
                self.computed.fetch_add(1, Ordering::Relaxed);
                let p = path.to_path_buf();
                match tokio::task::spawn_blocking(move || {
                    trawl_media::index_file_with(&p, trawl_media::SeekMethod::Pread)
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
