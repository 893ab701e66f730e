//! One object's checks short of reading its content: the declaration, the root inventory and
//! its sidecar, the object root's entries, every version's inventory against the newest, the
//! version and content directories against the manifest. What is left is a list of content
//! files to read, each with every digest the inventories give for it.

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;
use trawl_digest::Algorithm;
use trawl_read::DirAt;

use crate::inventory::{self, Inventory, SPEC_VERSIONS, algorithm, digest_paths, normalized};
use crate::log::Log;
pub(crate) use crate::tree::{Kind, Name, join};
use crate::tree::{Unread, kind_of, list, open_rel, read_small};

/// The specification version assumed for an object that does not declare one.
pub(crate) const DEFAULT_SPEC: &str = "1.1";

/// Extensions registered with the OCFL editors (an object's `extensions/` holding another name
/// SHOULD NOT happen).
const REGISTERED_EXTENSIONS: [&str; 7] = [
    "0001-digest-algorithms",
    "0002-flat-direct-storage-layout",
    "0003-hash-and-id-n-tuple-storage-layout",
    "0004-hashed-n-tuple-storage-layout",
    "0005-mutable-head",
    "0006-flat-omit-prefix-storage-layout",
    "0007-n-tuple-omit-prefix-storage-layout",
];

/// An inventory larger than this is refused rather than read into memory.
pub(crate) const INVENTORY_CAP: u64 = 1 << 30;

/// A digest a content file must have, and where it was given.
#[derive(Debug, Clone)]
pub(crate) struct Expect {
    pub alg: Algorithm,
    pub alg_name: String,
    /// Normalized (lower case).
    pub digest: String,
    /// E092 (a manifest's) or E093 (a fixity block's).
    pub code: &'static str,
    /// The inventories that give it (`root`, `v1`, ...).
    pub from: Vec<String>,
}

/// A content file to read, by its content path.
#[derive(Debug)]
pub(crate) struct ContentRead {
    pub path: String,
    pub expect: Vec<Expect>,
}

/// An object's checks so far, and what remains to be read.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    pub log: Log,
    pub id: Option<String>,
    pub spec: String,
    pub reads: Vec<ContentRead>,
}

/// NAMASTE's rule for a declaration's content: trimmed, the first 40 characters, anything but
/// a word character, `.`, `-` or `:` made `_`.
pub(crate) fn namaste_value(content: &str) -> String {
    content
        .trim()
        .chars()
        .take(40)
        .map(|c| {
            if c.is_alphanumeric() || "_.-:".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Checks the object at `dir`. `shown` is how findings name the object's files (empty: as
/// paths below it).
pub(crate) fn check(dir: &DirAt) -> Checked {
    let mut c = Checked {
        spec: DEFAULT_SPEC.into(),
        ..Checked::default()
    };
    let entries = match list(dir) {
        Ok(e) => e,
        Err(e) => {
            c.log.error(
                "E003",
                "",
                format!("cannot list the object's directory: {e}"),
            );
            return c;
        }
    };
    let declarations = declaration(dir, &entries, &mut c);
    if !entries
        .iter()
        .any(|(n, k)| n == b"inventory.json" && *k == Kind::File)
    {
        c.log
            .error("E063", "inventory.json", "the object has no root inventory");
        return c;
    }
    let Some((root, root_raw)) = read_inventory(dir, "inventory.json", &c.spec.clone(), &mut c.log)
    else {
        return c;
    };
    let inventory_valid = !c.log.has_errors();
    c.id = root.id.clone();
    // The inventory's digest, once: for its sidecar, and to hold the newest version's copy to.
    let root_digest = digest_of(&root.digest_algorithm, &root_raw);
    sidecar_of(
        dir,
        "inventory.json",
        &root_digest,
        &root.digest_algorithm,
        &mut c.log,
    );
    object_root(&entries, &declarations, &root, dir, &mut c);
    // A version that is a link (E001 above) is neither listed nor read through.
    let linked: HashSet<&[u8]> = entries
        .iter()
        .filter(|(_, k)| *k == Kind::Other)
        .map(|(n, _)| n.as_slice())
        .collect();
    // The newest version's inventory must be these bytes: held to them by length and digest,
    // so that the two are never in memory at once.
    let root_sum = (root_raw.len(), root_digest);
    drop(root_raw);
    let (prior, sidecars) = version_inventories(dir, (&root, root_sum), &linked, &mut c);
    version_gaps(&entries, &root, &mut c.log);
    let (seen, special) = version_dirs(dir, &root, &linked, &sidecars, &mut c.log);
    // Content is held against a manifest only when the root inventory is sound: an unsound
    // one would make every file look wrong.
    if inventory_valid {
        content(seen, &special, &root, &prior, &mut c);
    }
    c
}

/// The `0=` files: exactly one, `0=ocfl_object_1.x`, holding its own name's value. Sets the
/// spec version; returns the declarations' names (the object root may hold them).
fn declaration(dir: &DirAt, entries: &[(Name, Kind)], c: &mut Checked) -> Vec<Name> {
    let names: Vec<Name> = entries
        .iter()
        .filter(|(n, _)| n.starts_with(b"0="))
        .map(|(n, _)| n.clone())
        .collect();
    if names.is_empty() {
        c.log.error(
            "E003",
            "",
            format!("no declaration (0=ocfl_object_1.x); checked as {}", c.spec),
        );
        return names;
    }
    let mut best: Option<&str> = None;
    for n in &names {
        let v = n
            .strip_prefix(b"0=ocfl_object_")
            .and_then(|v| std::str::from_utf8(v).ok())
            .filter(|v| SPEC_VERSIONS.contains(v));
        match v {
            None => c.log.error(
                "E006",
                n,
                "not a declaration of an OCFL version trawl knows (0=ocfl_object_1.0 or 1.1)",
            ),
            Some(v) if best.is_none_or(|b| v > b) => {
                best = Some(v);
                let want = format!("ocfl_object_{v}");
                let ok = read_small(dir, n, 4096)
                    .map(|b| namaste_value(&String::from_utf8_lossy(&b)) == want)
                    .unwrap_or(false);
                if !ok {
                    c.log
                        .error("E007", n, format!("the declaration must hold '{want}'"));
                }
            }
            Some(_) => {}
        }
    }
    match best {
        None => c.log.error(
            "E003",
            "",
            format!("no declaration names a version; checked as {}", c.spec),
        ),
        Some(v) => {
            c.spec = v.to_string();
            if names.len() > 1 {
                c.log.error(
                    "E003",
                    "",
                    format!("{} declarations; checked as {v}", names.len()),
                );
            }
        }
    }
    names
}

/// Reads and checks the inventory at `rel`, returned with its bytes; `None` when it cannot be
/// read or parsed (E033).
fn read_inventory(
    dir: &DirAt,
    rel: &str,
    default_spec: &str,
    log: &mut Log,
) -> Option<(Inventory, Vec<u8>)> {
    match read_small(dir, rel.as_bytes(), INVENTORY_CAP) {
        Ok(raw) => inventory::check(&raw, rel.as_bytes(), default_spec, log).map(|inv| (inv, raw)),
        Err(e) => {
            log.error("E033", rel, format!("cannot be read: {e}"));
            None
        }
    }
}

/// `raw`'s digest by the OCFL algorithm `alg`, in hex (empty for one trawl does not compute).
pub(crate) fn digest_of(alg: &str, raw: &[u8]) -> String {
    algorithm(alg).map_or_else(String::new, |a| hex::encode(trawl_digest::digest(a, raw)))
}

/// The sidecar of the inventory at `inv` (its bytes `raw`), `inventory.json.ALG`: present, one
/// line `DIGEST inventory.json`, the digest the inventory has.
pub(crate) fn sidecar(dir: &DirAt, inv: &str, raw: &[u8], alg: &str, log: &mut Log) {
    sidecar_of(dir, inv, &digest_of(alg, raw), alg, log);
}

/// As [`sidecar`], the inventory's digest (`actual`, hex) already computed.
pub(crate) fn sidecar_of(dir: &DirAt, inv: &str, actual: &str, alg: &str, log: &mut Log) {
    let name = format!("{inv}.{alg}");
    let text = match read_small(dir, name.as_bytes(), 4096) {
        Ok(t) => t,
        Err(Unread::Missing) => {
            log.error(
                "E058",
                &name,
                "the inventory's sidecar digest file is missing",
            );
            return;
        }
        Err(e) => {
            log.error("E061", &name, format!("cannot be read: {e}"));
            return;
        }
    };
    let text = String::from_utf8_lossy(&text);
    let line = text.lines().next().unwrap_or_default();
    // The digest first, with nothing before it (as ocfl-py reads the line).
    if line.starts_with(char::is_whitespace) {
        log.error("E061", &name, "not one line 'DIGEST inventory.json'");
        return;
    }
    let mut parts = line.split_whitespace();
    let (Some(recorded), Some(file), None) = (parts.next(), parts.next(), parts.next()) else {
        log.error("E061", &name, "not one line 'DIGEST inventory.json'");
        return;
    };
    if file != "inventory.json" || !recorded.bytes().all(|b| b.is_ascii_alphanumeric()) {
        log.error("E061", &name, "not one line 'DIGEST inventory.json'");
        return;
    }
    if actual.is_empty() {
        return;
    }
    // Written as the digest is written: hex in lower case (an upper-case digest here is not
    // the inventory's, as ocfl-py holds too).
    if actual != recorded {
        log.error(
            "E060",
            inv,
            format!("{alg} is {actual}, but {name} records {recorded}"),
        );
    }
}

/// The object root holds the declaration, the inventory and its sidecar, the version
/// directories, and optionally `logs/` and `extensions/`; nothing else.
fn object_root(
    entries: &[(Name, Kind)],
    declarations: &[Name],
    root: &Inventory,
    dir: &DirAt,
    c: &mut Checked,
) {
    let expected = [
        format!("0=ocfl_object_{}", c.spec).into_bytes(),
        b"inventory.json".to_vec(),
        format!("inventory.json.{}", root.digest_algorithm).into_bytes(),
    ];
    for (name, kind) in entries {
        match kind {
            Kind::File => {
                if !expected.contains(name) && !declarations.contains(name) {
                    c.log.error("E001", name, "a file the object root must not hold");
                }
            }
            Kind::Dir => {
                if root.all_versions.iter().any(|v| v.as_bytes() == name) || name == b"logs" {
                } else if name == b"extensions" {
                    extensions(dir, &mut c.log);
                } else if is_version_name(name) {
                    c.log.error(
                        "E046",
                        name,
                        "a version directory the inventory does not list",
                    );
                } else {
                    c.log.error("E001", name, "a directory the object root must not hold");
                }
            }
            Kind::Other => c.log.error(
                "E001",
                name,
                "neither a file nor a directory (a symbolic link?): the object root must not hold it",
            ),
        }
    }
}

/// `v` and digits (`v1`, `v002`).
pub(crate) fn is_version_name(n: &[u8]) -> bool {
    n.len() > 1 && n[0] == b'v' && n[1..].iter().all(u8::is_ascii_digit)
}

/// `extensions/` holds only directories, each (SHOULD) a registered extension.
fn extensions(object: &DirAt, log: &mut Log) {
    let Ok(entries) = open_rel(object, b"extensions")
        .map_err(|_| ())
        .and_then(|d| list(&d).map_err(|_| ()))
    else {
        log.error("E067", "extensions", "cannot be listed");
        return;
    };
    for (name, kind) in entries {
        let at = join(b"extensions", &name);
        if kind != Kind::Dir {
            log.error(
                "E067",
                &at,
                "the extensions directory must hold only directories",
            );
        } else if !REGISTERED_EXTENSIONS
            .iter()
            .any(|r| r.as_bytes() == name.as_slice())
        {
            log.warning("W013", &at, "not a registered extension");
        }
    }
}

/// Digests given for content paths by earlier versions' inventories: path -> (algorithm,
/// digest) -> (code, versions).
type Prior = BTreeMap<String, BTreeMap<(String, String), (&'static str, Vec<String>)>>;

/// Every version's inventory (SHOULD be there): the newest identical to the root's, the
/// earlier ones sound and consistent with it. Returns the digests they give for content, and
/// each version's sidecar name.
fn version_inventories(
    dir: &DirAt,
    (root, root_sum): (&Inventory, (usize, String)),
    linked: &HashSet<&[u8]>,
    c: &mut Checked,
) -> (Prior, BTreeMap<String, String>) {
    let mut prior = Prior::new();
    let mut sidecars = BTreeMap::new();
    let mut prev_spec = "1.0".to_string();
    let mut prev_dir = String::new();
    for (i, v) in root.all_versions.iter().enumerate() {
        if linked.contains(v.as_bytes()) {
            continue;
        }
        let rel = format!("{v}/inventory.json");
        let kind = kind_of(dir, rel.as_bytes());
        if matches!(kind, Some(Kind::Other | Kind::Dir)) {
            c.log.error(
                "E015",
                &rel,
                "not a regular file (a symbolic link, directory or special file): not read",
            );
            // Its sidecar is the one this inventory would have: not a stray file.
            sidecars.insert(
                v.clone(),
                format!("inventory.json.{}", root.digest_algorithm),
            );
            continue;
        }
        if kind != Some(Kind::File) {
            c.log
                .warning("W010", v, "a version directory SHOULD hold its inventory");
            continue;
        }
        let this_spec;
        if i + 1 == root.all_versions.len() {
            match read_small(dir, rel.as_bytes(), INVENTORY_CAP) {
                Err(e) => c.log.error("E033", &rel, format!("cannot be read: {e}")),
                Ok(raw)
                    if raw.len() != root_sum.0
                        || digest_of(&root.digest_algorithm, &raw) != root_sum.1 =>
                {
                    c.log.error(
                        "E064",
                        &rel,
                        "the newest version's inventory must be identical to the root inventory",
                    )
                }
                // The same bytes: the same digest.
                Ok(_) => sidecar_of(dir, &rel, &root_sum.1, &root.digest_algorithm, &mut c.log),
            }
            sidecars.insert(
                v.clone(),
                format!("inventory.json.{}", root.digest_algorithm),
            );
            this_spec = c.spec.clone();
        } else {
            let Some((inv, raw)) = read_inventory(dir, &rel, &c.spec.clone(), &mut c.log) else {
                continue;
            };
            this_spec = inv.spec_version.clone();
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
            sidecars.insert(
                v.clone(),
                format!("inventory.json.{}", inv.digest_algorithm),
            );
            if let (Some(root_id), Some(id)) =
                (&root.id, inv.value.get("id").and_then(Value::as_str))
                && id != root_id
            {
                c.log.error(
                    "E037",
                    &rel,
                    format!("`id` '{id}' is not the root inventory's '{root_id}'"),
                );
            }
            if root.content_directory_set && !inv.content_directory_set {
                c.log.error(
                    "E019",
                    &rel,
                    "the root inventory sets `contentDirectory`, this earlier one does not",
                );
            }
            if inv.content_directory != root.content_directory {
                c.log.error(
                    "E020",
                    &rel,
                    format!(
                        "`contentDirectory` '{}' is not the root inventory's '{}'",
                        inv.content_directory, root.content_directory
                    ),
                );
            }
            if let Some(Value::Object(m)) = inv.value.get("manifest") {
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
                    c.log.error(
                        "E023",
                        &rel,
                        format!(
                            "the manifest lacks content an earlier version's lists: {}",
                            missing.join(", ")
                        ),
                    );
                }
                record(&mut prior, m, &inv.digest_algorithm, "E092", v);
            }
            inventory::check_prior(root, &inv, &mut c.log);
            if let Some(Value::Object(f)) = inv.value.get("fixity") {
                for (alg, block) in f {
                    if let Some(block) = block.as_object() {
                        record(&mut prior, block, alg, "E093", v);
                    }
                }
            }
        }
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
    (prior, sidecars)
}

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
fn version_gaps(entries: &[(Name, Kind)], root: &Inventory, log: &mut Log) {
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

/// The version directories hold the inventory, its sidecar and the content directory (other
/// directories SHOULD NOT be there, files MUST NOT); the content directories hold no empty
/// directory. Returns the content files found, and of them those that are not regular files
/// (links, special files).
fn version_dirs(
    dir: &DirAt,
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
        let listed = open_rel(dir, v.as_bytes())
            .map_err(|e| e.to_string())
            .and_then(|d| {
                let e = list(&d).map_err(|e| e.to_string())?;
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
                walk_content(&vdir, &at, true, &mut seen, &mut special, log);
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

/// The content directories hold exactly the manifest's files; each gets its digests to check.
fn content(
    mut seen: HashSet<Name>,
    special: &HashSet<Name>,
    root: &Inventory,
    prior: &Prior,
    c: &mut Checked,
) {
    // The root fixity block's digests, by content path.
    let mut fixity: BTreeMap<&str, Vec<Expect>> = BTreeMap::new();
    if let Some(Value::Object(f)) = root.value.get("fixity") {
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
                    c.log.error(
                        "E093",
                        p,
                        format!(
                            "the fixity block gives its {alg_name}, but the object does not hold it"
                        ),
                    );
                }
            }
        }
    }
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
        for ((alg_name, d), (code, from)) in prior.get(path).into_iter().flatten() {
            let Some(alg) = algorithm(alg_name) else {
                continue;
            };
            // The same digest given by several inventories is one check, naming them all.
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

/// Adds the files under `rel` (a content directory, or below one, held by `parent`) to
/// `seen`, naming empty directories below the content directory (E024).
fn walk_content(
    parent: &DirAt,
    rel: &[u8],
    top: bool,
    seen: &mut HashSet<Name>,
    special: &mut HashSet<Name>,
    log: &mut Log,
) {
    // `rel`'s directory, opened by its name in `parent`.
    let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
    let listed = open_rel(parent, name)
        .map_err(|e| e.to_string())
        .and_then(|d| {
            let e = list(&d).map_err(|e| e.to_string())?;
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
            Kind::Dir => walk_content(&here, &at, false, seen, special, log),
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::inventory::tests::{d, sound};
    use std::path::Path;

    pub(crate) fn put(dir: &Path, rel: &str, bytes: &[u8]) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    /// `inv` written at `rel` with its sidecar.
    fn inventory_at(dir: &Path, rel: &str, inv: &[u8]) {
        put(dir, rel, inv);
        let line = format!("{}  inventory.json\n", digest_of("sha512", inv));
        put(dir, &format!("{rel}.sha512"), line.as_bytes());
    }

    /// A sound object of one version (`sound()`'s inventory) at `dir`: its declaration, root
    /// and version inventories with their sidecars, and the two content files it lists.
    pub(crate) fn sound_object(dir: &Path) {
        let inv = serde_json::to_vec_pretty(&sound()).unwrap();
        put(dir, "0=ocfl_object_1.1", b"ocfl_object_1.1\n");
        inventory_at(dir, "inventory.json", &inv);
        inventory_at(dir, "v1/inventory.json", &inv);
        put(dir, "v1/content/a.txt", b"a");
        put(dir, "v1/content/sub/b.txt", b"b");
    }

    /// A case of an object's checks: what it is, the edit of a sound object that makes it, and
    /// the codes of the errors and warnings it must raise.
    type Case = (
        &'static str,
        fn(&Path),
        Vec<&'static str>,
        Vec<&'static str>,
    );

    /// The codes `check` raises for the object at `dir`: errors, then warnings.
    fn codes_of(dir: &Path) -> (Vec<&'static str>, Vec<&'static str>) {
        let c = check(&DirAt::open(dir).unwrap());
        let code = |f: &[trawl_report::ocfl::OcflFinding]| f.iter().map(|f| f.code).collect();
        (code(&c.log.errors), code(&c.log.warnings))
    }

    #[test]
    fn a_declaration_value_is_read_as_namaste_says() {
        assert_eq!(namaste_value("ocfl_object_1.1\n"), "ocfl_object_1.1");
        assert_eq!(namaste_value("  ocfl 1.1 \n"), "ocfl_1.1");
        assert_ne!(
            namaste_value("This is not the right content!\n"),
            "ocfl_object_1.0"
        );
    }

    /// A sound object raises nothing, and leaves each manifest file to read with its digest.
    #[test]
    fn a_sound_object_raises_nothing_and_leaves_its_content_to_read() {
        let t = tempfile::tempdir().unwrap();
        sound_object(t.path());
        let c = check(&DirAt::open(t.path()).unwrap());
        assert!(
            c.log.errors.is_empty() && c.log.warnings.is_empty(),
            "{:?}",
            c.log
        );
        assert_eq!(
            (c.id.as_deref(), c.spec.as_str()),
            (Some("info:example/1"), "1.1")
        );
        let reads: Vec<(&str, &str, &str)> = c
            .reads
            .iter()
            .flat_map(|r| {
                r.expect
                    .iter()
                    .map(move |e| (r.path.as_str(), e.code, e.digest.as_str()))
            })
            .collect();
        let (a, b) = (d('a'), d('b'));
        assert_eq!(
            reads,
            [
                ("v1/content/a.txt", "E092", a.as_str()),
                ("v1/content/sub/b.txt", "E092", b.as_str())
            ]
        );
    }

    /// The sidecar is one line, the inventory's digest (hex, lower case) and its name.
    #[test]
    fn a_sidecar_holds_one_line_with_the_inventorys_digest() {
        let t = tempfile::tempdir().unwrap();
        let inv = b"{}";
        put(t.path(), "inventory.json", inv);
        let dir = DirAt::open(t.path()).unwrap();
        let digest = digest_of("sha512", inv);
        let said = |text: Option<String>| {
            let p = t.path().join("inventory.json.sha512");
            let _ = std::fs::remove_file(&p);
            if let Some(s) = text {
                std::fs::write(&p, s).unwrap();
            }
            let mut log = Log::default();
            sidecar(&dir, "inventory.json", inv, "sha512", &mut log);
            log.errors.iter().map(|f| f.code).collect::<Vec<_>>()
        };
        assert!(said(Some(format!("{digest}  inventory.json\n"))).is_empty());
        assert!(said(Some(format!("{digest} inventory.json"))).is_empty());
        assert_eq!(said(None), ["E058"]);
        assert_eq!(
            said(Some(format!("{}  inventory.json\n", digest.to_uppercase()))),
            ["E060"]
        );
        assert_eq!(
            said(Some(format!("{}  inventory.json\n", d('0')))),
            ["E060"]
        );
        for bad in [
            format!(" {digest}  inventory.json\n"),
            format!("{digest}  inventory.json extra\n"),
            format!("{digest}  other.json\n"),
            format!("{digest}\n"),
            format!("{}-  inventory.json\n", &digest[1..]),
            String::new(),
        ] {
            assert_eq!(said(Some(bad.clone())), ["E061"], "{bad:?}");
        }
    }

    /// What an object root holds: one declaration holding its name's value, the inventory and
    /// its sidecar, the versions the inventory lists, `logs/` and `extensions/` (directories
    /// only, registered ones SHOULD), nothing else.
    #[test]
    fn an_object_roots_entries_are_held_to_their_rules() {
        let cases: Vec<Case> = vec![
            (
                "no declaration",
                |p| std::fs::remove_file(p.join("0=ocfl_object_1.1")).unwrap(),
                vec!["E003"],
                vec![],
            ),
            (
                "declaration's content",
                |p| put(p, "0=ocfl_object_1.1", b"ocfl_object_1.0\n"),
                vec!["E007"],
                vec![],
            ),
            (
                "a declaration of an unknown version beside the known one",
                |p| put(p, "0=ocfl_object_2.0", b"ocfl_object_2.0\n"),
                vec!["E006", "E003"],
                vec![],
            ),
            (
                "two declarations",
                |p| put(p, "0=ocfl_object_1.0", b"ocfl_object_1.0\n"),
                vec!["E003"],
                vec![],
            ),
            (
                "a stray file",
                |p| put(p, "notes.txt", b"n"),
                vec!["E001"],
                vec![],
            ),
            (
                "a stray directory",
                |p| put(p, "junk/x", b"x"),
                vec!["E001"],
                vec![],
            ),
            (
                "a version not listed",
                |p| put(p, "v2/x", b"x"),
                vec!["E046"],
                vec![],
            ),
            ("logs", |p| put(p, "logs/log.txt", b"l"), vec![], vec![]),
            (
                "a file in extensions",
                |p| put(p, "extensions/x", b"x"),
                vec!["E067"],
                vec![],
            ),
            (
                "an extension not registered",
                |p| put(p, "extensions/9999-mine/x", b"x"),
                vec![],
                vec!["W013"],
            ),
            (
                "a registered extension",
                |p| put(p, "extensions/0005-mutable-head/x", b"x"),
                vec![],
                vec![],
            ),
            (
                "a link",
                |p| std::os::unix::fs::symlink("v1", p.join("v0")).unwrap(),
                vec!["E001"],
                vec![],
            ),
        ];
        for (what, edit, errors, warnings) in cases {
            let t = tempfile::tempdir().unwrap();
            sound_object(t.path());
            edit(t.path());
            assert_eq!(codes_of(t.path()), (errors, warnings), "{what}");
        }
        let t = tempfile::tempdir().unwrap();
        sound_object(t.path());
        std::fs::remove_file(t.path().join("inventory.json")).unwrap();
        assert_eq!(codes_of(t.path()).0, ["E063"]);
    }

    /// What a version directory holds: its inventory (SHOULD; the newest the root's own
    /// bytes), the sidecar and the content directory, whose files are exactly the manifest's.
    #[test]
    fn a_versions_directory_and_content_are_held_to_the_manifest() {
        let cases: Vec<Case> = vec![
            (
                "a file the manifest lacks",
                |p| put(p, "v1/content/c.txt", b"c"),
                vec!["E023"],
                vec![],
            ),
            (
                "a file the object lacks",
                |p| std::fs::remove_file(p.join("v1/content/a.txt")).unwrap(),
                vec!["E092"],
                vec![],
            ),
            (
                "an empty directory",
                |p| std::fs::create_dir(p.join("v1/content/empty")).unwrap(),
                vec!["E024"],
                vec![],
            ),
            (
                "a stray file",
                |p| put(p, "v1/stray.txt", b"s"),
                vec!["E015"],
                vec![],
            ),
            (
                "a stray directory",
                |p| put(p, "v1/other/x", b"x"),
                vec![],
                vec!["W002"],
            ),
            (
                "an inventory that is not the root's",
                |p| put(p, "v1/inventory.json", b"{}"),
                vec!["E064"],
                vec![],
            ),
            (
                "no inventory",
                |p| {
                    std::fs::remove_file(p.join("v1/inventory.json")).unwrap();
                    std::fs::remove_file(p.join("v1/inventory.json.sha512")).unwrap();
                },
                vec![],
                vec!["W010"],
            ),
            (
                "a link among the content",
                |p| {
                    std::fs::remove_file(p.join("v1/content/a.txt")).unwrap();
                    std::os::unix::fs::symlink("sub/b.txt", p.join("v1/content/a.txt")).unwrap();
                },
                vec!["E092"],
                vec![],
            ),
        ];
        for (what, edit, errors, warnings) in cases {
            let t = tempfile::tempdir().unwrap();
            sound_object(t.path());
            edit(t.path());
            assert_eq!(codes_of(t.path()), (errors, warnings), "{what}");
        }
        let t = tempfile::tempdir().unwrap();
        sound_object(t.path());
        std::fs::remove_dir_all(t.path().join("v1")).unwrap();
        let (errors, _) = codes_of(t.path());
        assert!(errors.contains(&"E046"), "{errors:?}");
    }
}
