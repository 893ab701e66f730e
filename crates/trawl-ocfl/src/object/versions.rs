//! An object's versions: every version's inventory (the newest identical to the root's, the
//! earlier ones sound and consistent with it, each with its sidecar) and the version
//! directories' sequence.

use std::collections::{BTreeMap, HashSet};

use serde_json::{Map, Value};

use super::{Checked, INVENTORY_CAP, Kind, Name, is_version_name};
use super::{digest_of, read_inventory, sidecar, sidecar_of};
use crate::inventory::{self, Inventory, digest_paths, normalized};
use crate::log::Log;
use crate::tree::OcflDir;

/// Digests given for content paths by earlier versions' inventories, by path.
pub(super) type Prior = BTreeMap<String, GivenFor>;

/// The digests given for one content path: (algorithm, digest) -> (code, versions).
pub(super) type GivenFor = BTreeMap<(String, String), (&'static str, Vec<String>)>;

/// What the versions' inventories give: the digests the earlier ones give for content, and
/// each version's sidecar name.
#[derive(Default)]
struct Given {
    prior: Prior,
    sidecars: BTreeMap<String, String>,
}

/// Every version's inventory (SHOULD be there): the newest identical to the root's (its
/// bytes' length and digest, `root_sum`), the earlier ones sound and consistent with it.
/// Returns the digests they give for content, and each version's sidecar name.
pub(super) fn version_inventories(
    dir: &dyn OcflDir,
    (root, root_sum): (&Inventory, (usize, String)),
    linked: &HashSet<&[u8]>,
    c: &mut Checked,
) -> (Prior, BTreeMap<String, String>) {
    let mut given = Given::default();
    let mut prev_spec = "1.0".to_string();
    let mut prev_dir = String::new();
    for (i, v) in root.all_versions.iter().enumerate() {
        if linked.contains(v.as_bytes()) {
            continue;
        }
        let rel = format!("{v}/inventory.json");
        let kind = dir.kind_of(rel.as_bytes());
        if matches!(kind, Some(Kind::Other | Kind::Dir)) {
            c.log.error(
                "E015",
                &rel,
                "not a regular file (a symbolic link, directory or special file): not read",
            );
            // Its sidecar is the one this inventory would have: not a stray file.
            given.sidecar(v, &root.digest_algorithm);
            continue;
        }
        if kind != Some(Kind::File) {
            c.log
                .warning("W010", v, "a version directory SHOULD hold its inventory");
            continue;
        }
        let this_spec = if i + 1 == root.all_versions.len() {
            newest(dir, &rel, (root, &root_sum), &mut c.log);
            given.sidecar(v, &root.digest_algorithm);
            c.spec.clone()
        } else {
            match given.earlier(dir, v, root, c) {
                Some(spec) => spec,
                None => continue,
            }
        };
        if prev_spec > this_spec {
            c.log.error(
                "E103",
                &rel,
                format!("follows specification {this_spec}, earlier than {prev_dir}'s {prev_spec}"),
            );
        }
        prev_spec = this_spec;
        prev_dir = v.clone();
    }
    (given.prior, given.sidecars)
}

/// The newest version's inventory, at `rel`: the root's bytes (held to them by length and
/// digest), with its sidecar.
fn newest(
    dir: &dyn OcflDir,
    rel: &str,
    (root, root_sum): (&Inventory, &(usize, String)),
    log: &mut Log,
) {
    match dir.read_small(rel.as_bytes(), INVENTORY_CAP) {
        Err(e) => log.error("E033", rel, format!("cannot be read: {e}")),
        Ok(raw)
            if raw.len() != root_sum.0 || digest_of(&root.digest_algorithm, &raw) != root_sum.1 =>
        {
            log.error(
                "E064",
                rel,
                "the newest version's inventory must be identical to the root inventory",
            )
        }
        // The same bytes: the same digest.
        Ok(_) => sidecar_of(dir, rel, &root_sum.1, &root.digest_algorithm, log),
    }
}

impl Given {
    /// Version `v`'s sidecar, as inventories of algorithm `alg` name it.
    fn sidecar(&mut self, v: &str, alg: &str) {
        self.sidecars
            .insert(v.to_string(), format!("inventory.json.{alg}"));
    }

    /// An earlier version `v`'s inventory: sound, with its sidecar, consistent with the root's,
    /// its manifest keeping what the versions before gave; the digests it gives are added.
    /// Returns the specification it follows (None: it could not be read as an inventory).
    fn earlier(
        &mut self,
        dir: &dyn OcflDir,
        v: &str,
        root: &Inventory,
        c: &mut Checked,
    ) -> Option<String> {
        let rel = format!("{v}/inventory.json");
        let (inv, raw) = read_inventory(dir, &rel, &c.spec.clone(), &mut c.log)?;
        if let Some(head) = inv.value.get("head").and_then(Value::as_str)
            && head != v
        {
            c.log.error(
                "E040",
                &rel,
                format!("`head` is {head}, but this inventory is version {v}'s"),
            );
        }
        sidecar(dir, &rel, &raw, &inv.digest_algorithm, &mut c.log);
        drop(raw);
        self.sidecar(v, &inv.digest_algorithm);
        held_to_root(&inv, root, &rel, &mut c.log);
        if let Some(Value::Object(m)) = inv.value.get("manifest") {
            keeps_earlier_content(&self.prior, m, &rel, &mut c.log);
            record(&mut self.prior, m, &inv.digest_algorithm, "E092", v);
        }
        inventory::check_prior(root, &inv, &mut c.log);
        if let Some(Value::Object(f)) = inv.value.get("fixity") {
            for (alg, block) in f {
                if let Some(block) = block.as_object() {
                    record(&mut self.prior, block, alg, "E093", v);
                }
            }
        }
        Some(inv.spec_version)
    }
}

/// An earlier inventory (at `rel`) names the root's object and content directory.
fn held_to_root(inv: &Inventory, root: &Inventory, rel: &str, log: &mut Log) {
    if let (Some(root_id), Some(id)) = (&root.id, inv.value.get("id").and_then(Value::as_str))
        && id != root_id
    {
        log.error(
            "E037",
            rel,
            format!("`id` '{id}' is not the root inventory's '{root_id}'"),
        );
    }
    if root.content_directory_set && !inv.content_directory_set {
        log.error(
            "E019",
            rel,
            "the root inventory sets `contentDirectory`, this earlier one does not",
        );
    }
    if inv.content_directory != root.content_directory {
        log.error(
            "E020",
            rel,
            format!(
                "`contentDirectory` '{}' is not the root inventory's '{}'",
                inv.content_directory, root.content_directory
            ),
        );
    }
}

/// A manifest (of the inventory at `rel`) lists every content path the earlier versions'
/// inventories gave (`prior`).
fn keeps_earlier_content(prior: &Prior, m: &Map<String, Value>, rel: &str, log: &mut Log) {
    let listed: HashSet<&str> = m
        .values()
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let missing: Vec<&str> = prior
        .keys()
        .map(String::as_str)
        .filter(|p| !listed.contains(p))
        .collect();
    if !missing.is_empty() {
        log.error(
            "E023",
            rel,
            format!(
                "the manifest lacks content an earlier version's lists: {}",
                missing.join(", ")
            ),
        );
    }
}

/// Adds the digests `block` (of algorithm `alg`) gives, as version `version`'s, to `prior`.
fn record(
    prior: &mut Prior,
    block: &serde_json::Map<String, Value>,
    alg: &str,
    code: &'static str,
    version: &str,
) {
    for (digest, p) in digest_paths(block) {
        let e = prior
            .entry(p.to_string())
            .or_default()
            .entry((alg.to_string(), normalized(digest)))
            .or_insert((code, Vec::new()));
        e.1.push(version.to_string());
    }
}

/// The version directories on disk, named in one sequence (`v1`, `v2`, ... with no gap).
pub(super) fn version_gaps(entries: &[(Name, Kind)], root: &Inventory, log: &mut Log) {
    let width = root.all_versions.first().map_or(0, |v| v.len() - 1);
    let mut on_disk: Vec<u64> = entries
        .iter()
        .filter(|(n, k)| *k == Kind::Dir && is_version_name(n))
        .filter_map(|(n, _)| std::str::from_utf8(&n[1..]).ok()?.parse().ok())
        .collect();
    on_disk.sort_unstable();
    for (i, n) in on_disk.iter().enumerate() {
        if *n != i as u64 + 1 {
            let missing = format!("v{:0w$}", i + 1, w = if width > 1 { width } else { 0 });
            log.error(
                "E010",
                &missing,
                "the version directories are not a sequence: this one is missing",
            );
            return;
        }
    }
}
