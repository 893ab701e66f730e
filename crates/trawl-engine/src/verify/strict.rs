//! `--strict`: the files under the root that the manifest does not list.

use std::path::Path;
use std::sync::Arc;

use trawl_spool::{Sorted, Spool};
use trawl_stop::{Reason, Stop};

/// Why the unlisted files could not be found.
pub(crate) enum Unlisted {
    /// A store's listing failed (its error).
    Listing(String),
    /// The names could not wait on disk.
    Spool(std::io::Error),
}

impl From<std::io::Error> for Unlisted {
    fn from(e: std::io::Error) -> Unlisted {
        Unlisted::Spool(e)
    }
}

/// Every regular file under `root` (or every object `objects` lists) that no entry names (as
/// manifest names, sorted), except the manifest itself: the walk's names are sorted in a spool
/// and merged with the entries'.
pub(crate) fn unlisted_files(
    root: &Path,
    objects: Option<&dyn trawl_scan::Listing>,
    opts: &trawl_walk::WalkOptions,
    manifest: &Path,
    listed: &Arc<Sorted>,
    temp: &Path,
    memory: usize,
) -> Result<Vec<Vec<u8>>, Unlisted> {
    let (tx, rx) = crossbeam_channel::bounded(1024);
    let stop = Stop::new();
    // The manifest itself is not an unlisted file; compare by identity, not by name.
    let manifest_id = std::fs::metadata(manifest).ok().map(|m| {
        use std::os::unix::fs::MetadataExt;
        (m.dev(), m.ino())
    });
    let roots = vec![root.to_path_buf()];
    let names = crate::names::ManifestNames::new(&roots);
    let mut found = Spool::new(temp, memory);
    std::thread::scope(|s| {
        s.spawn(|| {
            match objects {
                Some(l) => l.list(&opts.excluding, &stop, &mut |item| match tx.send(item) {
                    Ok(()) => std::ops::ControlFlow::Continue(()),
                    Err(_) => std::ops::ControlFlow::Break(()),
                }),
                None => trawl_walk::walk(&roots, opts, &tx, &stop, &|_| {}),
            }
            drop(tx);
        });
        for item in rx {
            // A store that cannot be listed leaves no way to know what is unlisted: the run
            // fails rather than say nothing is.
            if let (Some(_), trawl_walk::WalkItem::Error(e)) = (objects, &item) {
                stop.request(Reason::Failed);
                return Err(Unlisted::Listing(e.to_string()));
            }
            if let trawl_walk::WalkItem::File(f) = item {
                if manifest_id == Some((f.dev, f.ino)) {
                    continue;
                }
                if let Err(e) = found.push(&names.name(&f.path), &[]) {
                    stop.request(Reason::Failed);
                    return Err(Unlisted::Spool(e));
                }
            }
        }
        Ok(())
    })?;
    let found = Arc::new(found.finish()?);
    let mut listed = listed.iter()?;
    let mut next_listed = listed.next_record()?.map(|(k, _)| k.to_vec());
    let mut out = Vec::new();
    found.for_each(|name, _| {
        while next_listed.as_deref().is_some_and(|l| l < name) {
            next_listed = listed.next_record()?.map(|(k, _)| k.to_vec());
        }
        if next_listed.as_deref() != Some(name) {
            out.push(name.to_vec());
        }
        Ok::<(), std::io::Error>(())
    })?;
    Ok(out)
}
