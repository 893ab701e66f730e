//! An object's version and content directories against its manifest: what they hold (and
//! SHOULD NOT), the content files the manifest lists and the object lacks or the other way
//! round, and each content file to read with every digest the inventories give for it.

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;

use super::versions::{GivenFor, Prior};
use super::{Checked, ContentRead, Expect, Kind, join};
use crate::inventory::{Inventory, algorithm, digest_paths, normalized};
use crate::log::Log;
use crate::tree::{Name, OcflDir};

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
        let listed = dir
            .open(v.as_bytes())
            .map_err(|e| e.to_string())
            .and_then(|d| {
                let e = d.list().map_err(|e| e.to_string())?;
                Ok((d, e))
            });
        let (vdir, entries) = match listed {
            Ok(e) => e,
            Err(_) => {
                log.error(
                    "E046",
                    v,
                    "the inventory lists this version, but its directory is missing",
                );
                continue;
            }
        };
        for (name, kind) in entries {
            let at = join(v.as_bytes(), &name);
            if name == b"inventory.json" || sidecars.get(v).map(String::as_bytes) == Some(&name) {
            } else if name == root.content_directory.as_bytes() && kind == Kind::Dir {
                let before = seen.len();
                walk_content(&*vdir, &at, true, &mut seen, &mut special, log);
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

/// Adds the files under `rel` (a content directory, or below one, held by `parent`) to
/// `seen`, naming empty directories below the content directory (E024).
fn walk_content(
    parent: &dyn OcflDir,
    rel: &[u8],
    top: bool,
    seen: &mut HashSet<Name>,
    special: &mut HashSet<Name>,
    log: &mut Log,
) {
    // `rel`'s directory, opened by its name in `parent`.
    let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
    let listed = parent.open(name).map_err(|e| e.to_string()).and_then(|d| {
        let e = d.list().map_err(|e| e.to_string())?;
        Ok((d, e))
    });
    let (here, entries) = match listed {
        Ok(e) => e,
        Err(e) => {
            log.error("E024", rel, format!("cannot be listed: {e}"));
            return;
        }
    };
    if entries.is_empty() && !top {
        log.error("E024", rel, "an empty directory in the content directory");
    }
    for (name, kind) in entries {
        let at = join(rel, &name);
        match kind {
            Kind::Dir => walk_content(&*here, &at, false, seen, special, log),
            Kind::File => {
                seen.insert(at);
            }
            // Matched to the manifest like a file, and never read.
            Kind::Other => {
                seen.insert(at.clone());
                special.insert(at);
            }
        }
    }
}
