//! One inventory's checks, on the inventory alone (no file of the object is looked at): its
//! keys and their types, the version sequence, the manifest's and the states' paths and
//! digests, the fixity block; and an earlier version's inventory held against the newest.

mod created;
mod manifest;
mod prior;
#[cfg(test)]
pub(crate) mod tests;
mod versions;

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::{Map, Value};
use trawl_digest::Algorithm;

use crate::log::Log;
use manifest::{fixity, manifest};
pub(crate) use prior::check_prior;
use versions::{check_versions, version_sequence};

/// The specification versions trawl validates against.
pub const SPEC_VERSIONS: [&str; 2] = ["1.0", "1.1"];

/// What checking an inventory learned of it, for the object's checks that follow.
#[derive(Debug)]
pub(crate) struct Inventory {
    /// The inventory as parsed.
    pub value: Map<String, Value>,
    /// Where it is, below the object (`inventory.json`, `v2/inventory.json`).
    pub at: Vec<u8>,
    pub id: Option<String>,
    pub spec_version: String,
    pub digest_algorithm: String,
    pub content_directory: String,
    pub content_directory_set: bool,
    /// The versions in sequence (`v1`, `v2`, ...), as far as the sequence is sound.
    pub all_versions: Vec<String>,
    /// Every content path of the manifest, with its normalized digest.
    pub manifest_files: HashMap<String, String>,
    pub head: String,
}

/// The algorithm an OCFL name stands for, where trawl computes it.
pub(crate) fn algorithm(name: &str) -> Option<Algorithm> {
    Some(match name {
        "md5" => Algorithm::Md5,
        "sha1" => Algorithm::Sha1,
        "sha256" => Algorithm::Sha256,
        "sha512" => Algorithm::Sha512,
        "blake2b-512" => Algorithm::Blake2b,
        "blake2b-160" => Algorithm::Blake2b160,
        "blake2b-256" => Algorithm::Blake2b256,
        "blake2b-384" => Algorithm::Blake2b384,
        _ => return None,
    })
}

/// Whether `digest` has the form of `alg`'s digests (hex of its length, either case); `None`
/// for an algorithm the specification and its registered extension do not name.
pub(crate) fn digest_form(alg: &str, digest: &str) -> Option<bool> {
    let len = algorithm(alg)?.hex_len();
    Some(digest.len() == len && digest.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Each (digest, path) of a manifest, state or fixity block (`{digest: [path, ...]}`), leaving
/// out what is not a list of strings (the checks above name it).
pub(crate) fn digest_paths(block: &Map<String, Value>) -> impl Iterator<Item = (&String, &str)> {
    block.iter().flat_map(|(digest, paths)| {
        paths
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(move |p| (digest, p))
    })
}

/// A version's `state` block in an inventory, if it is an object.
pub(crate) fn state_of<'a>(
    value: &'a Map<String, Value>,
    version: &str,
) -> Option<&'a Map<String, Value>> {
    value
        .get("versions")?
        .get(version)?
        .get("state")?
        .as_object()
}

/// Digests compare in lower case.
pub(crate) fn normalized(digest: &str) -> String {
    digest.to_ascii_lowercase()
}

/// Checks `raw` (the bytes of the inventory at `at`); `None` when it is not a JSON object
/// (E033, nothing further can be checked). `default_spec` is the version assumed where the
/// inventory's `type` does not give one.
pub(crate) fn check(raw: &[u8], at: &[u8], default_spec: &str, log: &mut Log) -> Option<Inventory> {
    let value: Value = match crate::json::parse(raw) {
        Ok(v) => v,
        Err(e) => {
            log.error("E033", at, e.to_string());
            return None;
        }
    };
    let Value::Object(value) = value else {
        log.error("E033", at, "not a JSON object");
        return None;
    };
    let mut inv = Inventory {
        value: Map::new(),
        at: at.to_vec(),
        id: None,
        spec_version: default_spec.to_string(),
        digest_algorithm: "sha512".into(),
        content_directory: "content".into(),
        content_directory_set: false,
        all_versions: Vec::new(),
        manifest_files: HashMap::new(),
        head: "UNKNOWN".into(),
    };
    let start = log.errors.len();
    structure(&value, &mut inv, log, start);
    inv.value = value;
    Some(inv)
}

/// The inventory's keys, each checked as far as those before it allow: no further than a
/// digest algorithm it cannot check digests of; the manifest's content paths and digests
/// against the versions once their sequence is known.
fn structure(value: &Map<String, Value>, inv: &mut Inventory, log: &mut Log, start: usize) {
    let at = inv.at.clone();
    let at = at.as_slice();
    id(value.get("id"), inv, at, log);
    declared_type(value.get("type"), inv, at, log);
    if !digest_algorithm(value.get("digestAlgorithm"), inv, at, log) {
        return;
    }
    if let Some(cd) = value.get("contentDirectory") {
        content_directory(cd, inv, at, log);
    }
    let (manifest_paths, manifest_digests) = match value.get("manifest") {
        None => {
            log.error("E041", at, "no `manifest`");
            (None, HashSet::new())
        }
        Some(m) => {
            let (paths, digests) = manifest(m, inv, log);
            (Some(paths), digests)
        }
    };
    let mut used = Vec::new();
    match value.get("versions") {
        None => log.error("E041", at, "no `versions`"),
        Some(v) => {
            inv.all_versions = version_sequence(v, at, log);
            if let Value::Object(versions) = v {
                used = check_versions(versions, inv, &manifest_digests, log);
            }
        }
    }
    head(value.get("head"), inv, at, log);
    if inv.all_versions.is_empty() {
        if log.errors.len() == start {
            log.error("E008", at, "no version");
        }
        return;
    }
    if let Some(paths) = manifest_paths {
        manifest_in_versions(&paths, &used, inv, log);
    }
    if let Some(f) = value.get("fixity") {
        fixity(f, inv, log);
    }
}

/// `id`: a string, which SHOULD be a URI.
fn id(id: Option<&Value>, inv: &mut Inventory, at: &[u8], log: &mut Log) {
    match id {
        None => log.error("E036", at, "no `id`"),
        Some(Value::String(id)) if !id.is_empty() => {
            if !looks_like_uri(id) {
                log.warning("W005", at, format!("`id` SHOULD be a URI (is '{id}')"));
            }
            inv.id = Some(id.clone());
        }
        Some(_) => log.error("E037", at, "`id` is empty or not a string"),
    }
}

/// `type`: an inventory type URI naming the specification the inventory follows.
fn declared_type(t: Option<&Value>, inv: &mut Inventory, at: &[u8], log: &mut Log) {
    let t = match t {
        None => return log.error("E036", at, "no `type`"),
        Some(Value::String(t)) => t,
        Some(_) => return log.error("E038", at, "`type` is not a string"),
    };
    let version = t
        .strip_prefix("https://ocfl.io/")
        .and_then(|r| r.strip_suffix("/spec/#inventory"));
    match version {
        None => log.error(
            "E038",
            at,
            format!(
                "`type` is not an inventory type URI (is '{t}'); checked as {}",
                inv.spec_version
            ),
        ),
        Some(v) if SPEC_VERSIONS.contains(&v) => inv.spec_version = v.to_string(),
        Some(v) => log.error(
            "E038",
            at,
            format!(
                "`type` names specification version {v}, which is not 1.0 or 1.1; checked as {}",
                inv.spec_version
            ),
        ),
    }
}

/// `digestAlgorithm`: sha512, or (SHOULD NOT) sha256; false for any other, whose digests
/// cannot be checked.
fn digest_algorithm(a: Option<&Value>, inv: &mut Inventory, at: &[u8], log: &mut Log) -> bool {
    match a {
        None => log.error("E036", at, "no `digestAlgorithm`"),
        Some(Value::String(a)) if a == "sha512" => {}
        Some(Value::String(a)) if a == "sha256" => {
            log.warning(
                "W004",
                at,
                "`digestAlgorithm` is sha256; it SHOULD be sha512",
            );
            inv.digest_algorithm = a.clone();
        }
        Some(a) => {
            log.error(
                "E025",
                at,
                format!("`digestAlgorithm` must be sha512 or sha256 (is {a})"),
            );
            return false;
        }
    }
    true
}

/// `contentDirectory`: one plain name.
fn content_directory(cd: &Value, inv: &mut Inventory, at: &[u8], log: &mut Log) {
    match cd {
        Value::String(cd) if cd.contains('/') => {
            log.error("E017", at, format!("`contentDirectory` '{cd}' holds a '/'"))
        }
        Value::String(cd) if cd == "." || cd == ".." => {
            log.error("E018", at, format!("`contentDirectory` must not be '{cd}'"))
        }
        Value::String(cd) => {
            inv.content_directory = cd.clone();
            inv.content_directory_set = true;
        }
        _ => log.error("E017", at, "`contentDirectory` is not a string"),
    }
}

/// `head`: the newest version.
fn head(h: Option<&Value>, inv: &mut Inventory, at: &[u8], log: &mut Log) {
    let Some(h) = h else {
        return log.error("E036", at, "no `head`");
    };
    if let Some(last) = inv.all_versions.last() {
        inv.head = last.clone();
        if h.as_str() != Some(last.as_str()) {
            log.error(
                "E040",
                at,
                format!("`head` is {h}, but the newest version is {last}"),
            );
        }
    }
}

/// The manifest's content paths each in a version's directory, and its digests exactly those
/// the versions' states use (`used`).
fn manifest_in_versions(paths: &[String], used: &[String], inv: &Inventory, log: &mut Log) {
    let at = inv.at.as_slice();
    for p in paths {
        let v = p.split('/').next().unwrap_or_default();
        if !inv.all_versions.iter().any(|x| x == v) {
            log.error(
                "E042",
                at,
                format!("content path '{p}' is not in a version directory of the object"),
            );
        }
    }
    let in_manifest: BTreeSet<&str> = inv.manifest_files.values().map(String::as_str).collect();
    let in_state: BTreeSet<&str> = used.iter().map(String::as_str).collect();
    let missing: Vec<&str> = in_state.difference(&in_manifest).copied().collect();
    if !missing.is_empty() {
        log.error(
            "E050",
            at,
            format!(
                "the state names digests the manifest does not hold: {}",
                missing.join(", ")
            ),
        );
    }
    let unused: Vec<&str> = in_manifest.difference(&in_state).copied().collect();
    if !unused.is_empty() {
        log.error(
            "E107",
            at,
            format!(
                "the manifest holds digests no version's state uses: {}",
                unused.join(", ")
            ),
        );
    }
}

/// `scheme:` then something, as RFC 3986 begins a URI.
fn looks_like_uri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut c = scheme.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic())
        && c.all(|x| x.is_ascii_alphanumeric() || "+-.".contains(x))
        && !rest.is_empty()
}
