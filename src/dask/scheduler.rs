//! Where a cluster run finds its scheduler: the address in the file `dask scheduler
//! --scheduler-file FILE` writes, read as trawl reads a small input.

use std::path::Path;

use anyhow::bail;
use trawl_read::ReadError;

/// The most a scheduler file may hold: Dask writes a few hundred bytes there (the address, the
/// scheduler's id and services) when it starts, before any worker joins.
pub const SCHEDULER_FILE_CAP: u64 = 1 << 20;

/// The scheduler's address in `path`: the file read whole ([`trawl_read::read_whole`]: never
/// waiting on a FIFO, a regular file only, at most [`SCHEDULER_FILE_CAP`] bytes) and parsed
/// as JSON (nesting bounded, so no file can exhaust the stack). An error naming the file for
/// one that cannot be read, is not JSON, or holds no `PROTOCOL://` address.
pub fn scheduler_address(path: &Path) -> anyhow::Result<String> {
    let bytes = match trawl_read::read_whole(path, SCHEDULER_FILE_CAP) {
        Ok(b) => b,
        Err(ReadError::Vanished { .. }) => {
            bail!("{}: cannot read it: no such file", path.display())
        }
        Err(e) => return Err(e.into()),
    };
    let doc: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => bail!(
            "{}: not a scheduler file (JSON with an \"address\"): {e}",
            path.display()
        ),
    };
    match doc.get("address").and_then(serde_json::Value::as_str) {
        Some(a) if a.contains("://") => Ok(a.to_string()),
        _ => bail!("{}: no scheduler address in it", path.display()),
    }
}
