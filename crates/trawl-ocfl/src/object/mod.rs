//! One object's checks short of reading its content: the declaration, the root inventory and
//! its sidecar, the object root's entries, every version's inventory against the newest, the
//! version and content directories against the manifest. What is left is a list of content
//! files to read, each with every digest the inventories give for it.

mod files;
#[cfg(test)]
pub(crate) mod tests;
mod versions;

use std::collections::HashSet;

use trawl_digest::Algorithm;

use crate::inventory::{self, Inventory, SPEC_VERSIONS, algorithm};
use crate::log::Log;
pub(crate) use crate::tree::{Kind, Name, join};
use crate::tree::{OcflDir, Unread};
use files::{content, version_dirs};
use versions::{version_gaps, version_inventories};

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
pub(crate) fn check(dir: &dyn OcflDir) -> Checked {
    let mut c = Checked {
        spec: DEFAULT_SPEC.into(),
        ..Checked::default()
    };
    let entries = match dir.list() {
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
fn declaration(dir: &dyn OcflDir, entries: &[(Name, Kind)], c: &mut Checked) -> Vec<Name> {
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
                let ok = dir
                    .read_small(n, 4096)
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
    dir: &dyn OcflDir,
    rel: &str,
    default_spec: &str,
    log: &mut Log,
) -> Option<(Inventory, Vec<u8>)> {
    match dir.read_small(rel.as_bytes(), INVENTORY_CAP) {
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
pub(crate) fn sidecar(dir: &dyn OcflDir, inv: &str, raw: &[u8], alg: &str, log: &mut Log) {
    sidecar_of(dir, inv, &digest_of(alg, raw), alg, log);
}

/// As [`sidecar`], the inventory's digest (`actual`, hex) already computed.
pub(crate) fn sidecar_of(dir: &dyn OcflDir, inv: &str, actual: &str, alg: &str, log: &mut Log) {
    let name = format!("{inv}.{alg}");
    let text = match dir.read_small(name.as_bytes(), 4096) {
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
    dir: &dyn OcflDir,
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
fn extensions(object: &dyn OcflDir, log: &mut Log) {
    let Ok(entries) = object
        .open(b"extensions")
        .map_err(|_| ())
        .and_then(|d| d.list().map_err(|_| ()))
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
