//! The cluster's walk of `s3://` roots: a prefix listed a level at a time (its keys as files,
//! its common prefixes the "directories" the next listing tasks list), within a task's budget
//! as the walk of a disk is.

use std::path::{Path, PathBuf};

use trawl_report::ExcludedTally;
use trawl_s3::{ObjectSource, ObjectUrl};
use trawl_walk::{WalkError, WalkItem};

use crate::listing::{ListBudget, Listing, add_item, budgeted};
use crate::{ClusterError, ScanWork};

/// A listing task over root number `idx` of `objects`: its prefix (`dirs` None) or each of
/// `dirs` (prefixes below it, as `s3://BUCKET/KEY/` paths), a level each, depth first within
/// `budget`; the levels not listed yet are the result's `dirs`. A level whose listing fails is
/// a failed entry naming the prefix, as one machine's listing names it; the others go on.
pub(crate) fn list_task(
    work: &ScanWork,
    objects: &ObjectSource,
    idx: usize,
    dirs: Option<Vec<PathBuf>>,
    budget: ListBudget,
) -> Result<Listing, ClusterError> {
    let url = objects.roots().get(idx).ok_or(ClusterError::NoRoot(idx))?;
    let mut out = Listing::default();
    let mut excluded = ExcludedTally::default();
    let excluding = &work.cfg.walk.excluding;
    let (_, rest) = budgeted(dirs, budget, |d| {
        let prefix = match d {
            None => url.prefix().to_string(),
            Some(d) => level_of(url, &d)?,
        };
        let mut found = 0;
        let mut take = |item: WalkItem| {
            found += usize::from(matches!(item, WalkItem::File(_) | WalkItem::Excluded(_)));
            add_item(&mut out, &mut excluded, item, &|_| 1);
        };
        let subs = objects
            .list_level(idx, &prefix, excluding, &mut take)
            .unwrap_or_else(|e| {
                take(WalkItem::Error(WalkError::Other(e.to_string())));
                Vec::new()
            });
        let subs = subs.iter().map(|s| url.key_path(s)).collect();
        Ok::<_, ClusterError>(((), subs, found))
    })?;
    out.dirs = rest;
    out.excluded = excluded.finish(&[], &[]);
    Ok(out)
}

/// The key prefix a listing task's directory `dir` names: `s3://BUCKET/KEY/` below `url`'s
/// prefix (what a listing handed on), else refused.
fn level_of(url: &ObjectUrl, dir: &Path) -> Result<String, ClusterError> {
    let refused = || ClusterError::NotALevel {
        path: dir.to_path_buf(),
        root: url.root_path(),
    };
    let d = dir.to_str().ok_or_else(refused)?;
    let key = d
        .strip_prefix("s3://")
        .and_then(|d| d.strip_prefix(url.bucket()))
        .and_then(|d| d.strip_prefix('/'))
        .ok_or_else(refused)?;
    if !key.starts_with(url.prefix()) || key.len() == url.prefix().len() || !key.ends_with('/') {
        return Err(refused());
    }
    Ok(key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory handed to a listing task is a prefix below the root's, ending in `/`;
    /// anything else (another bucket, above the root, the root itself) is refused by name.
    #[test]
    fn a_level_is_a_prefix_below_the_roots() {
        let url = ObjectUrl::parse("s3://bkt/p".as_ref()).unwrap().unwrap();
        let level = |d: &str| level_of(&url, Path::new(d));
        assert_eq!(level("s3://bkt/p/a/").unwrap(), "p/a/");
        assert_eq!(level("s3://bkt/p/a//").unwrap(), "p/a//");
        for bad in [
            "s3://bkt/p/",
            "s3://bkt/q/a/",
            "s3://other/p/a/",
            "s3://bkt/p/a",
            "/p/a/",
        ] {
            let e = level(bad).unwrap_err();
            assert!(e.to_string().starts_with(bad), "{e}");
        }
    }
}
