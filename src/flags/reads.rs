//! What a scan reads its files for: whether it measures the data reduction, and `--reuse`
//! (digests taken from a catalog for the files still as it recorded them, which are then not
//! read at all).

use std::path::PathBuf;

use super::lowargs::ScanArgs;
use crate::failure::Refused;

/// Whether a scan measures data reduction. A fixity scan (manifests or other per-file outputs
/// only, no reduction flag) is not charged for a reduction nobody asked for; a bare scan, a JSON
/// report or a page shows one; `--reduce` and `--no-reduce` decide it. A scan that reuses
/// digests measures none (a reduction flag with `--reuse` is refused: see [`ReusePlan`]).
pub(super) fn measures_reduction(a: &ScanArgs) -> bool {
    if a.reduce.no_reduce || a.reuse.is_some() {
        return false;
    }
    let per_file_only = (!a.manifest.is_empty()
        || a.jsonl.is_some()
        || a.duplicates.is_some()
        || a.ncdu.is_some()
        || a.media_index.is_some())
        && a.json.is_none()
        && a.html.is_none();
    !per_file_only || a.reduce.force_reduce || a.reduce.reduction_flags
}

/// `--reuse CATALOG` and what `--reuse-ignore` leaves out of the identity rule.
#[derive(Debug, Clone)]
pub struct ReusePlan {
    /// The catalog, opened read-only.
    pub catalog: PathBuf,
    /// Device and inode numbers are not compared (`--reuse-ignore inode`).
    pub ignore_inode: bool,
    /// The status change time is not compared (`--reuse-ignore ctime`).
    pub ignore_ctime: bool,
}

impl ReusePlan {
    /// The plan of `a`'s `--reuse`, if given; refused with what needs every file's bytes (a
    /// reduction asked for, `--media-index`) or with roots in a store.
    pub fn from_args(a: &ScanArgs) -> anyhow::Result<Option<ReusePlan>> {
        let Some(catalog) = &a.reuse else {
            return Ok(None);
        };
        let reads = ", which reads every file: a file whose digests --reuse takes is not read; \
                     give one or the other";
        if a.reduce.force_reduce || a.reduce.reduction_flags {
            let why = format!(
                " cannot go with the data reduction (--reduce, or a flag that shapes it: --dedup, \
                 --cdc, --compress, --sample, ...){reads}"
            );
            return Err(Refused::flag("--reuse", why).into());
        }
        if a.media_index.is_some() {
            let why = format!(" cannot go with --media-index (the FLV index){reads}");
            return Err(Refused::flag("--reuse", why).into());
        }
        if a.paths
            .iter()
            .any(|p| p.as_os_str().as_encoded_bytes().starts_with(b"s3://"))
        {
            let why = " takes the digests of local files only: an object in a store has no \
                       inode or ctime to hold it to";
            return Err(Refused::flag("--reuse", why).into());
        }
        let mut plan = ReusePlan {
            catalog: catalog.clone(),
            ignore_inode: false,
            ignore_ctime: false,
        };
        for word in a.reuse_ignore.iter().flat_map(|l| l.split(',')) {
            match word.trim() {
                "inode" => plan.ignore_inode = true,
                "ctime" => plan.ignore_ctime = true,
                other => {
                    let why = format!(" '{other}': expected inode or ctime (comma-separated)");
                    return Err(Refused::flag("--reuse-ignore", why).into());
                }
            }
        }
        Ok(Some(plan))
    }

    /// What must be as the catalog recorded it, in the words of the report's `rule`.
    pub fn rule(&self) -> Vec<String> {
        let mut r = vec!["size", "mtime"];
        if !self.ignore_ctime {
            r.push("ctime");
        }
        if !self.ignore_inode {
            r.push("inode");
        }
        r.into_iter().map(String::from).collect()
    }
}
