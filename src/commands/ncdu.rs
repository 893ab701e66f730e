//! `--ncdu FILE`: the scanned directory in ncdu's export format, from the records in path order.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use anyhow::Context;
use trawl_engine::Records;
use trawl_printer::{NcduFile, NcduWriter};

use super::output::Output;

pub fn write(out: &mut Output, records: &Records, root: &Path) -> anyhow::Result<()> {
    let abs = std::path::absolute(root).with_context(|| format!("{}", root.display()))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let r = (|| -> std::io::Result<()> {
        let mut w = NcduWriter::new(
            &mut *out,
            abs.as_os_str().as_bytes(),
            env!("CARGO_PKG_VERSION"),
            now,
        )?;
        records.for_each(|f| -> std::io::Result<()> {
            let rel = f.path.strip_prefix(root).unwrap_or(&f.path);
            w.file(&NcduFile {
                rel: rel.as_os_str().as_bytes(),
                asize: f.size,
                dsize: f.disk_bytes,
                ino: f.ino,
                nlink: f.nlink,
            })
        })?;
        w.finish()?;
        Ok(())
    })();
    r.map_err(|e| out.error(e, "cannot write"))
}
