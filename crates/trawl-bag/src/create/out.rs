//! A bag made at `--out`: each payload file linked or copied into a directory of its own,
//! the copies read back against their sources, the tag files written, and the whole renamed
//! into place.

use std::ops::ControlFlow;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use trawl_digest::Algorithm;
use trawl_scan::{Progress, ScanConfig};
use trawl_spool::Sorted;
use trawl_stop::Stop;

use super::{CreateOptions, Created, LINKS_LEFT_OUT, refused, write_atomic, write_tag_files};
use crate::payload::{Hashed, Listing, hash_stream};
use crate::{BagError, io_err};

/// A bag made at `--out`: what it is made from.
pub(super) struct Made<'a> {
    pub(super) dir: &'a Path,
    pub(super) out: &'a Path,
    pub(super) files: &'a Arc<Sorted>,
    pub(super) listing: &'a Listing<'a>,
    pub(super) info: &'a [(String, String)],
    /// [`LINKS_LEFT_OUT`]'s text (empty: no such file).
    pub(super) left_out: &'a [u8],
}

impl Made<'_> {
    /// In a directory of its own, under a name no one else has, renamed into place once whole.
    pub(super) fn create(
        &self,
        opts: &CreateOptions<'_>,
        cfg: &ScanConfig,
        progress: &dyn Progress,
        stop: &Stop,
        created: &mut Created,
    ) -> Result<ControlFlow<()>, BagError> {
        let (out, listing, info) = (self.out, self.listing, self.info);
        let (made, parent, name) = self.make_dir()?;
        let tmp = made.path().to_path_buf();
        let result = (|| {
            let ControlFlow::Continue(copied) = self.link_or_copy(&tmp, opts, stop, created)?
            else {
                return Ok(ControlFlow::Break(()));
            };
            if self
                .check_copies(&tmp, &copied, opts, cfg, progress, stop)?
                .is_break()
            {
                return Ok(ControlFlow::Break(()));
            }
            if !self.left_out.is_empty() {
                write_atomic(&tmp.join(LINKS_LEFT_OUT), self.left_out)?;
            }
            write_tag_files(
                &tmp,
                Some(listing),
                &opts.algorithms,
                Some(info),
                true,
                &opts.algorithms,
                &[],
            )?;
            // Never over anything that appeared at `out` meanwhile (an empty directory
            // would be replaced by rename(2)).
            let dir = trawl_read::DirAt::open(&parent).map_err(io_err(&parent))?;
            let tmp_name = tmp.file_name().map(|n| n.as_bytes()).unwrap_or_default();
            dir.rename(tmp_name, &dir, name.as_bytes())
                .map_err(io_err(out))?;
            Ok(ControlFlow::Continue(()))
        })();
        match result {
            Ok(ControlFlow::Continue(())) => {
                // Renamed: nothing left for the guard to remove.
                let _ = made.keep();
                Ok(ControlFlow::Continue(()))
            }
            // Stopped or failed: the guard removes the directory it made, and only that.
            other => other,
        }
    }

    /// A directory of its own for the bag, made now beside `out` under a name no one else has
    /// (never one that is there already, whoever made it): removed on failure (when dropped),
    /// renamed into place on success. With it, the directory it is in and `out`'s name there;
    /// refused when `out` is there already or names no directory.
    fn make_dir(&self) -> Result<(tempfile::TempDir, PathBuf, &std::ffi::OsStr), BagError> {
        let out = self.out;
        if out.exists() {
            return Err(refused(
                out,
                "already exists; --out must name a new directory",
            ));
        }
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = out
            .file_name()
            .ok_or_else(|| refused(out, "no directory name"))?;
        let made = tempfile::Builder::new()
            .prefix(&format!(".{}.", name.to_string_lossy()))
            .suffix(".trawl-tmp")
            .tempdir_in(&parent)
            .map_err(io_err(&parent))?;
        Ok((made, parent, name))
    }

    /// Every payload file into `tmp/data`: copied (a reflink where the file system offers one,
    /// which shares blocks but no writes), or hard-linked where it can be with `link` (never a
    /// link's target); the copies, each with the digests its source had.
    fn link_or_copy(
        &self,
        tmp: &Path,
        opts: &CreateOptions<'_>,
        stop: &Stop,
        created: &mut Created,
    ) -> Result<ControlFlow<(), Arc<Sorted>>, BagError> {
        let (dir, files) = (self.dir, self.files);
        let spools = &opts.spools;
        let mut copied = spools.spool(2);
        let walked = files.for_each(|rel, value| {
            // Once stopping, the rest of the list is passed over, nothing copied.
            if stop.is_stopping() {
                return Ok(());
            }
            let rel = std::ffi::OsStr::from_bytes(rel);
            let src = dir.join(rel);
            let dst = tmp.join("data").join(rel);
            let step = (|| {
                if let Some(p) = dst.parent() {
                    std::fs::create_dir_all(p).map_err(io_err(p))?;
                }
                // A link itself is never put in the bag: what it points to is copied.
                let is_link = std::fs::symlink_metadata(&src)
                    .map(|m| m.file_type().is_symlink())
                    .unwrap_or(false);
                if opts.link && !is_link && std::fs::hard_link(&src, &dst).is_ok() {
                    created.linked += 1;
                } else {
                    // FICLONE where the file system shares blocks (XFS, btrfs), else a copy.
                    let reflinked =
                        reflink_copy::reflink_or_copy(&src, &dst).map_err(io_err(&src))?;
                    if reflinked.is_none() {
                        created.reflinked += 1;
                    }
                    created.copied += 1;
                    let mut key = b"data/".to_vec();
                    key.extend_from_slice(rel.as_bytes());
                    copied.push(&key, &value[8..]).map_err(spools.err())?;
                }
                Ok(())
            })();
            step.map_err(crate::Ended::Bag)
        });
        match walked {
            Ok(()) => {}
            Err(crate::Ended::Bag(e)) => return Err(e),
            Err(crate::Ended::Spool(e)) => return Err(spools.err()(e)),
        }
        if stop.is_stopping() {
            return Ok(ControlFlow::Break(()));
        }
        Ok(ControlFlow::Continue(Arc::new(
            copied.finish().map_err(spools.err())?,
        )))
    }

    /// The copies read back and checked against their sources' digests: the first that differs
    /// (or a stop) ends the creation with nothing created.
    fn check_copies(
        &self,
        tmp: &Path,
        copied: &Arc<Sorted>,
        opts: &CreateOptions<'_>,
        cfg: &ScanConfig,
        progress: &dyn Progress,
        stop: &Stop,
    ) -> Result<ControlFlow<()>, BagError> {
        let spools = &opts.spools;
        let check = Listing {
            sorted: copied,
            layout: &opts.algorithms,
            prefix: b"",
            skip: 0,
        };
        let mut bad: Option<String> = None;
        let fed = hash_stream(
            &crate::payload::beneath(tmp),
            tmp,
            &opts.algorithms,
            cfg,
            progress,
            stop,
            |feeder| -> std::io::Result<()> {
                let mut records = copied.iter()?;
                while let Some((rel, value)) = records.next_record()? {
                    let rel = String::from_utf8_lossy(rel).into_owned();
                    if feeder.send(rel, value.to_vec()).is_break() {
                        break;
                    }
                }
                Ok(())
            },
            |rel, want: Vec<u8>, hashed| {
                if !copied_as_read(&check, &opts.algorithms, &want, &hashed) && bad.is_none() {
                    bad = Some(rel);
                }
            },
        );
        fed.map_err(spools.err())?;
        if stop.is_stopping() {
            return Ok(ControlFlow::Break(()));
        }
        if let Some(p) = bad {
            return Err(refused(
                &tmp.join(p),
                "copy does not match its source; nothing was created",
            ));
        }
        Ok(ControlFlow::Continue(()))
    }
}

/// Whether a copy read back (`hashed`) has every digest of `algorithms` its source had
/// (`want`, laid out as `check` says).
fn copied_as_read(
    check: &Listing<'_>,
    algorithms: &[Algorithm],
    want: &[u8],
    hashed: &Hashed,
) -> bool {
    match hashed {
        Hashed::Digests { digests, .. } => algorithms.iter().all(|a| {
            let got = digests
                .iter()
                .find(|(b, _)| b == a)
                .map(|(_, v)| v.as_slice());
            got.is_some() && got == check.digest(want, *a)
        }),
        _ => false,
    }
}
