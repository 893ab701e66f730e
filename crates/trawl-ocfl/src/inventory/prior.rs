//! An earlier version's inventory held against the root's: the same versions, logical paths
//! and content, and (SHOULD) the same metadata.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

use super::{Inventory, digest_paths, state_of};
use crate::log::Log;

/// Each logical path of `version`'s state, with the digest (as written) its content is listed
/// under in the manifest; a path whose digest the manifest does not list is left out.
fn logical_map<'a>(inv: &'a Inventory, version: &str) -> HashMap<&'a str, &'a str> {
    let manifest = inv.value.get("manifest").and_then(Value::as_object);
    let (Some(state), Some(manifest)) = (state_of(&inv.value, version), manifest) else {
        return HashMap::new();
    };
    digest_paths(state)
        .filter(|(digest, _)| manifest.get(*digest).is_some_and(Value::is_array))
        .map(|(digest, p)| (p, digest.as_str()))
        .collect()
}

/// The content paths a manifest lists under each digest, each set made once, when first
/// asked for: however many logical paths (and versions) share a digest, its paths are held
/// once. (A set for each logical path held a digest's paths as many times as logical paths
/// named it: the product of two lists an inventory of a few megabytes can make long.)
struct Content<'a> {
    manifest: Option<&'a Map<String, Value>>,
    sets: HashMap<&'a str, BTreeSet<&'a str>>,
}

impl<'a> Content<'a> {
    fn new(inv: &'a Inventory) -> Content<'a> {
        Content {
            manifest: inv.value.get("manifest").and_then(Value::as_object),
            sets: HashMap::new(),
        }
    }

    fn of(&mut self, digest: &'a str) -> &BTreeSet<&'a str> {
        let manifest = self.manifest;
        self.sets.entry(digest).or_insert_with(|| {
            manifest
                .and_then(|m| m.get(digest))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect()
        })
    }
}

fn state_digests(inv: &Inventory, version: &str) -> BTreeSet<String> {
    state_of(&inv.value, version)
        .map(|s| s.keys().cloned().collect())
        .unwrap_or_default()
}

fn version_field<'a>(inv: &'a Inventory, version: &str, key: &str) -> Option<&'a Value> {
    inv.value.get("versions")?.get(version)?.get(key)
}

/// `prior` (an earlier version's inventory) against `newest` (the root's): the versions it
/// has are the newest's first ones, each with the same logical paths mapped to the same
/// content, and (SHOULD) the same metadata.
pub(crate) fn check_prior(newest: &Inventory, prior: &Inventory, log: &mut Log) {
    let at = prior.at.as_slice();
    let ours: BTreeSet<&String> = newest.all_versions.iter().collect();
    let theirs: BTreeSet<&String> = prior.all_versions.iter().collect();
    if !(theirs.is_subset(&ours) && theirs.len() < ours.len()) {
        log.error(
            "E066",
            at,
            format!(
                "its versions ({}) are not earlier versions of the root inventory's",
                prior.all_versions.join(", ")
            ),
        );
        return;
    }
    let mut pair = Pair {
        prior: (prior, Content::new(prior)),
        newest: (newest, Content::new(newest)),
        same_content: HashMap::new(),
    };
    for v in &prior.all_versions {
        if prior.digest_algorithm == newest.digest_algorithm {
            let (a, b) = (state_digests(newest, v), state_digests(prior, v));
            for d in a.symmetric_difference(&b) {
                log.error(
                    "E066",
                    at,
                    format!("version {v}'s state differs from the root inventory's in digest {d}"),
                );
            }
        }
        pair.logical_paths(v, log);
        for key in ["created", "message", "user"] {
            if version_field(prior, v, key) != version_field(newest, v, key) {
                log.warning(
                    "W011",
                    at,
                    format!("version {v}'s `{key}` differs from the root inventory's"),
                );
            }
        }
    }
}

/// An earlier inventory and the root's, each with its manifest's content by digest.
struct Pair<'a> {
    prior: (&'a Inventory, Content<'a>),
    newest: (&'a Inventory, Content<'a>),
    /// Whether a digest's paths in the earlier inventory are among another's in the root's,
    /// asked once a pair.
    same_content: HashMap<(&'a str, &'a str), bool>,
}

impl<'a> Pair<'a> {
    /// Version `v`'s logical paths: the same in both, each mapped to the same content.
    fn logical_paths(&mut self, v: &str, log: &mut Log) {
        let at = self.prior.0.at.as_slice();
        let (mine, root) = (logical_map(self.prior.0, v), logical_map(self.newest.0, v));
        let only_prior: BTreeSet<&str> = mine
            .keys()
            .copied()
            .filter(|k| !root.contains_key(k))
            .collect();
        let only_root: BTreeSet<&str> = root
            .keys()
            .copied()
            .filter(|k| !mine.contains_key(k))
            .collect();
        if only_prior.is_empty() && only_root.is_empty() {
            return self.same_content(v, &mine, &root, log);
        }
        for (what, set) in [
            ("this inventory", only_prior),
            ("the root inventory", only_root),
        ] {
            if !set.is_empty() {
                let list: Vec<&str> = set.into_iter().collect();
                log.error(
                    "E066",
                    at,
                    format!(
                        "version {v}'s logical paths differ: only {what} has {}",
                        list.join(", ")
                    ),
                );
            }
        }
    }

    /// Each logical path of version `v` (the same in both: `mine`, the root's `root`) maps to
    /// the same content.
    fn same_content(
        &mut self,
        v: &str,
        mine: &HashMap<&'a str, &'a str>,
        root: &HashMap<&'a str, &'a str>,
        log: &mut Log,
    ) {
        let at = self.prior.0.at.as_slice();
        let mut keys: Vec<&str> = mine.keys().copied().collect();
        keys.sort_unstable();
        for k in keys {
            let pair = (mine[k], root[k]);
            let within = match self.same_content.get(&pair) {
                Some(known) => *known,
                None => {
                    let theirs = self.newest.1.of(pair.1);
                    let known = self.prior.1.of(pair.0).is_subset(theirs);
                    self.same_content.insert(pair, known);
                    known
                }
            };
            if !within {
                log.error(
                    "E066",
                    at,
                    format!("version {v}'s logical path '{k}' maps to other content than in the root inventory"),
                );
            }
        }
    }
}
