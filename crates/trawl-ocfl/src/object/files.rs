//! An object's version and content directories against its manifest: what they hold (and
//! SHOULD NOT), the content files the manifest lists and the object lacks or the other way
//! round, and each content file to read with every digest the inventories give for it.

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;

use super::versions::{GivenFor, Prior};
use super::{Checked, ContentRead, Expect, Kind, join};
use crate::inventory::{Inventory, algorithm, digest_paths, normalized};
use crate::log::Log;
use crate::tree::{Name, OcflDir, Unread};

/// A directory opened, and its entries.
type Opened = (Box<dyn OcflDir>, Vec<(Name, Kind)>);

/// The version directories hold the inventory, its sidecar and the content directory (other
/// directories SHOULD NOT be there, files MUST NOT); the content directories hold no empty
/// directory. Returns the content files found, and of them those that are not regular files
/// (links, special files).
pub(super) fn version_dirs(
    dir: &dyn OcflDir,
    root: &Inventory,
    linked: &HashSet<&[u8]>,
    sidecars: &BTreeMap<String, String>,
    log: &mut Log,
) -> (HashSet<Name>, HashSet<Name>) {
    let mut seen: HashSet<Name> = HashSet::new();
    let mut special: HashSet<Name> = HashSet::new();
    for v in &root.all_versions {
        if linked.contains(v.as_bytes()) {
            continue;
        }
        let Some((vdir, entries)) = version_dir(dir, v, log) else {
            continue;
        };
        for (name, kind) in entries {
            let at = join(v.as_bytes(), &name);
            if name == b"inventory.json" || sidecars.get(v).map(String::as_bytes) == Some(&name) {
            } else if name == root.content_directory.as_bytes() && kind == Kind::Dir {
                let before = seen.len();
                walk_content(&*vdir, &at, &mut seen, &mut special, log);
                if seen.len() == before {
                    log.warning("W003", &at, "an empty content directory");
                }
            } else if kind == Kind::Dir {
                log.warning(
                    "W002",
                    &at,
                    "a version directory SHOULD hold no directory but the content directory",
                );
            } else {
                log.error(
                    "E015",
                    &at,
                    "a version directory must hold only the inventory, its sidecar and the content directory",
                );
            }
        }
    }
    (seen, special)
}

/// Version `v`'s directory, opened and listed; E046 where it is missing, or cannot be
/// listed (a store's refusal is not a directory the object lost).
fn version_dir(dir: &dyn OcflDir, v: &str, log: &mut Log) -> Option<Opened> {
    let why = match dir.open(v.as_bytes()) {
        Ok(d) => match d.list() {
            Ok(e) => return Some((d, e)),
            Err(e) => e.to_string(),
        },
        Err(Unread::Io(e)) => e.to_string(),
        Err(_) => {
            log.error(
                "E046",
                v,
                "the inventory lists this version, but its directory is missing",
            );
            return None;
        }
    };
    log.error(
        "E046",
        v,
        format!("the inventory lists this version, but its directory cannot be listed: {why}"),
    );
    None
}

/// The content directories hold exactly the manifest's files (`seen`, those of them not
/// regular files `special`); each gets its digests to check.
pub(super) fn content(
    mut seen: HashSet<Name>,
    special: &HashSet<Name>,
    root: &Inventory,
    prior: &Prior,
    c: &mut Checked,
) {
    let mut fixity = root_fixity(root, &seen, &mut c.log);
    let Some(root_alg) = algorithm(&root.digest_algorithm) else {
        return;
    };
    let mut listed: Vec<(&String, &String)> = root.manifest_files.iter().collect();
    listed.sort();
    for (path, digest) in listed {
        if !seen.remove(path.as_bytes()) {
            c.log.error(
                "E092",
                path,
                "the manifest lists it, but the object does not hold it",
            );
            continue;
        }
        if special.contains(path.as_bytes()) {
            c.log.error(
                "E092",
                path,
                "a symbolic link or special file, not a file: not read, so its digest is unchecked",
            );
            continue;
        }
        let mut expect = vec![Expect {
            alg: root_alg,
            alg_name: root.digest_algorithm.clone(),
            digest: digest.clone(),
            code: "E092",
            from: vec!["root".into()],
        }];
        expect.extend(fixity.remove(path.as_str()).unwrap_or_default());
        add_prior(&mut expect, prior.get(path));
        c.reads.push(ContentRead {
            path: path.clone(),
            expect,
        });
    }
    let mut extra: Vec<Name> = seen.into_iter().collect();
    extra.sort();
    for p in extra {
        c.log.error(
            "E023",
            &p,
            "the object holds it, but the manifest does not list it",
        );
    }
}

/// The root fixity block's digests, by content path; a path the object does not hold
/// (`seen`) is named.
fn root_fixity<'a>(
    root: &'a Inventory,
    seen: &HashSet<Name>,
    log: &mut Log,
) -> BTreeMap<&'a str, Vec<Expect>> {
    let mut fixity: BTreeMap<&str, Vec<Expect>> = BTreeMap::new();
    let Some(Value::Object(f)) = root.value.get("fixity") else {
        return fixity;
    };
    for (alg_name, block) in f {
        let (Some(alg), Some(block)) = (algorithm(alg_name), block.as_object()) else {
            continue;
        };
        for (digest, p) in digest_paths(block) {
            if seen.contains(p.as_bytes()) {
                fixity.entry(p).or_default().push(Expect {
                    alg,
                    alg_name: alg_name.clone(),
                    digest: normalized(digest),
                    code: "E093",
                    from: vec!["root".into()],
                });
            } else {
                log.error(
                    "E093",
                    p,
                    format!(
                        "the fixity block gives its {alg_name}, but the object does not hold it"
                    ),
                );
            }
        }
    }
    fixity
}

/// Adds the digests earlier inventories give for a content file to `expect`: the same digest
/// given by several inventories is one check, naming them all.
fn add_prior(expect: &mut Vec<Expect>, given: Option<&GivenFor>) {
    for ((alg_name, d), (code, from)) in given.into_iter().flatten() {
        let Some(alg) = algorithm(alg_name) else {
            continue;
        };
        match expect
            .iter_mut()
            .find(|e| e.alg == alg && e.digest == *d && e.code == *code)
        {
            Some(e) => e.from.extend(from.iter().cloned()),
            None => expect.push(Expect {
                alg,
                alg_name: alg_name.clone(),
                digest: d.clone(),
                code,
                from: from.clone(),
            }),
        }
    }
}

/// The directory `rel`, named `name` in `parent`, opened and listed; E024 where it cannot be.
fn listed(parent: &dyn OcflDir, name: &[u8], rel: &[u8], log: &mut Log) -> Option<Opened> {
    let listed = parent.open(name).map_err(|e| e.to_string()).and_then(|d| {
        let e = d.list().map_err(|e| e.to_string())?;
        Ok((d, e))
    });
    match listed {
        Ok(l) => Some(l),
        Err(e) => {
            log.error("E024", rel, format!("cannot be listed: {e}"));
            None
        }
    }
}

/// Adds the files under the content directory `rel` (held by `vdir`) to `seen`, naming empty
/// directories below it (E024). Depth-first in name order, one level of the stack a level of
/// the tree: a store's keys may lie deeper than any thread's stack could recurse.
fn walk_content(
    vdir: &dyn OcflDir,
    rel: &[u8],
    seen: &mut HashSet<Name>,
    special: &mut HashSet<Name>,
    log: &mut Log,
) {
    let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
    let Some((top, mut entries)) = listed(vdir, name, rel, log) else {
        return;
    };
    entries.reverse();
    // Each directory being walked: its path, itself, and its entries still to take (the
    // next last).
    let mut stack = vec![(rel.to_vec(), top, entries)];
    while let Some((at, here, entries)) = stack.last_mut() {
        let Some((name, kind)) = entries.pop() else {
            stack.pop();
            continue;
        };
        let child = join(at, &name);
        match kind {
            Kind::Dir => {
                if let Some((d, mut e)) = listed(&**here, &name, &child, log) {
                    if e.is_empty() {
                        log.error(
                            "E024",
                            &child,
                            "an empty directory in the content directory",
                        );
                    }
                    e.reverse();
                    stack.push((child, d, e));
                }
            }
            Kind::File => {
                seen.insert(child);
            }
            // Matched to the manifest like a file, and never read.
            Kind::Other => {
                seen.insert(child.clone());
                special.insert(child);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::Unread;

    /// A chain of directories `left` deep (each named by whatever it is opened as, holding one
    /// directory `a`), a file `f` at its bottom: a store's keys may be longer than any path
    /// a disk resolves.
    struct Chain {
        left: usize,
    }

    impl OcflDir for Chain {
        fn open(&self, rel: &[u8]) -> Result<Box<dyn OcflDir>, Unread> {
            match (rel.is_empty(), self.left) {
                (true, left) => Ok(Box::new(Chain { left })),
                (false, 0) => Err(Unread::NotFile),
                (false, left) => Ok(Box::new(Chain { left: left - 1 })),
            }
        }

        fn list(&self) -> std::io::Result<Vec<(Name, Kind)>> {
            Ok(match self.left {
                0 => vec![(b"f".to_vec(), Kind::File)],
                _ => vec![(b"a".to_vec(), Kind::Dir)],
            })
        }

        fn kind_of(&self, _: &[u8]) -> Option<Kind> {
            None
        }

        fn read_small(&self, _: &[u8], _: u64) -> Result<Vec<u8>, Unread> {
            Err(Unread::Missing)
        }
    }

    /// Content thousands of directories deep is walked on a thread whose stack holds a few
    /// levels of recursion at most (it overflowed, aborting the run, where one level of the
    /// tree was a frame of the walk).
    #[test]
    fn content_deeper_than_a_threads_stack_is_walked() {
        let depth = 5000;
        let (seen, log) = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || {
                let (mut seen, mut special, mut log) = Default::default();
                let vdir = Chain { left: depth + 1 };
                walk_content(&vdir, b"v1/content", &mut seen, &mut special, &mut log);
                (seen, log)
            })
            .unwrap()
            .join()
            .unwrap();
        let want = format!("v1/content/{}f", "a/".repeat(depth));
        assert_eq!(seen, HashSet::from([want.into_bytes()]));
        assert!(!log.has_errors(), "{:?}", log.errors);
    }
}
