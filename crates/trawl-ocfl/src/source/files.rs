//! An object's logical files as an audit sees them: from its root inventory (held to its
//! sidecar) and every earlier version's, each logical path's content file and the digests it
//! must have, or why it is not audited.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use serde_json::{Map, Value};
use trawl_digest::Algorithm;

use crate::OcflError;
use crate::inventory::{Inventory, algorithm, digest_paths, normalized, state_of};
use crate::log::Log;
use crate::tree::OcflDir;

/// Digests by algorithm.
pub(super) type Digests = Vec<(Algorithm, Vec<u8>)>;

/// Where a logical path's bytes are: its content file and the digests it must have, or why
/// it is not read.
pub(super) enum Content {
    File { path: String, expected: Digests },
    Refused(OcflError),
}

/// One object's logical files: (version, logical path) -> its content.
pub(super) type Files = HashMap<(String, String), Content>;

/// An object's logical files, and the digest algorithm its root inventory uses.
pub(super) struct Object {
    pub files: Files,
    pub algorithm: Algorithm,
}

/// The root inventory's name below its object.
const ROOT: &[u8] = b"inventory.json";

/// A path below an object, from its bytes.
fn below(rel: &[u8]) -> PathBuf {
    PathBuf::from(std::ffi::OsStr::from_bytes(rel))
}

/// A path the inventory gives (content or logical) as the plain names it is made of: no empty,
/// `.` or `..` element, not absolute, no NUL; `None` otherwise.
pub(super) fn plain(path: &str) -> Option<Vec<Vec<u8>>> {
    let segs: Vec<Vec<u8>> = path.split('/').map(|s| s.as_bytes().to_vec()).collect();
    segs.iter()
        .all(|s| trawl_read::is_plain_name(s))
        .then_some(segs)
}

/// The files of the object at `dir`, from its root inventory (held to its sidecar) and every
/// earlier version's, or why there are none.
pub(super) fn object_files(dir: &dyn OcflDir) -> Result<Object, OcflError> {
    let (inv, alg) = trusted_inventory(dir)?;
    let given = given_digests(dir, &inv, alg);
    Ok(Object {
        files: logical_files(&inv, alg, &given),
        algorithm: alg,
    })
}

/// The object's root inventory and its algorithm, if it lists a version, names an algorithm
/// trawl computes and matches its sidecar (the inventory's own fixity: one that does not
/// match is not trusted).
fn trusted_inventory(dir: &dyn OcflDir) -> Result<(Inventory, Algorithm), OcflError> {
    let raw = dir
        .read_small(ROOT, crate::object::INVENTORY_CAP)
        .map_err(|source| OcflError::InventoryUnread {
            path: below(ROOT),
            source,
        })?;
    let mut log = Log::default();
    let inv = crate::inventory::check(&raw, ROOT, "1.1", &mut log).ok_or_else(|| {
        OcflError::InventoryInvalid {
            path: below(ROOT),
            message: log
                .errors
                .first()
                .map_or_else(|| "not valid JSON".to_string(), |f| f.message.clone()),
        }
    })?;
    if inv.all_versions.is_empty() {
        return Err(OcflError::NoVersion { path: below(ROOT) });
    }
    let alg = algorithm(&inv.digest_algorithm).ok_or_else(|| OcflError::UnknownAlgorithm {
        path: below(ROOT),
        algorithm: inv.digest_algorithm.clone(),
    })?;
    let mut side = Log::default();
    crate::object::sidecar(
        dir,
        "inventory.json",
        &raw,
        &inv.digest_algorithm,
        &mut side,
    );
    if let Some(f) = side.errors.first() {
        return Err(OcflError::Untrusted {
            path: below(f.path.as_ref().map_or(ROOT, |p| p.path.as_bytes())),
            message: f.message.clone(),
        });
    }
    Ok((inv, alg))
}

/// Every digest given for a content path, oldest inventory first: the earlier versions'
/// manifests (each written when its version was), then the root's, then the fixity block's.
fn given_digests(dir: &dyn OcflDir, inv: &Inventory, alg: Algorithm) -> HashMap<String, Digests> {
    let mut given = Given::default();
    for v in &inv.all_versions[..inv.all_versions.len() - 1] {
        if let Some((a, m)) = prior_manifest(dir, v) {
            given.add_block(&m, a);
        }
    }
    if let Some(m) = inv.value.get("manifest").and_then(Value::as_object) {
        given.add_block(m, alg);
    }
    if let Some(Value::Object(f)) = inv.value.get("fixity") {
        for (name, block) in f {
            if let (Some(a), Some(block)) = (algorithm(name), block.as_object()) {
                given.add_block(block, a);
            }
        }
    }
    given.0
}

/// Version `v`'s own inventory's algorithm and manifest, where it has both (one that cannot
/// be read or is not JSON gives nothing).
fn prior_manifest(dir: &dyn OcflDir, v: &str) -> Option<(Algorithm, Map<String, Value>)> {
    let rel = format!("{v}/inventory.json");
    let raw = dir
        .read_small(rel.as_bytes(), crate::object::INVENTORY_CAP)
        .ok()?;
    let mut ignored = Log::default();
    let mut prior = crate::inventory::check(&raw, rel.as_bytes(), "1.1", &mut ignored)?;
    let a = algorithm(&prior.digest_algorithm)?;
    match prior.value.remove("manifest") {
        Some(Value::Object(m)) => Some((a, m)),
        _ => None,
    }
}

/// Digests given per content path, each (algorithm, digest) once.
#[derive(Default)]
struct Given(HashMap<String, Digests>);

impl Given {
    /// Each digest of a manifest or fixity block of algorithm `a`.
    fn add_block(&mut self, block: &Map<String, Value>, a: Algorithm) {
        for (d, p) in digest_paths(block) {
            let Ok(bytes) = hex::decode(normalized(d)) else {
                continue;
            };
            let e = self.0.entry(p.to_string()).or_default();
            if !e.iter().any(|(x, y)| *x == a && *y == bytes) {
                e.push((a, bytes));
            }
        }
    }
}

/// Every version's logical files, each with its content, or why it is not audited.
fn logical_files(inv: &Inventory, alg: Algorithm, given: &HashMap<String, Digests>) -> Files {
    let manifest = inv.value.get("manifest").and_then(Value::as_object);
    let mut files = Files::new();
    for v in &inv.all_versions {
        for (digest, l) in state_of(&inv.value, v).into_iter().flat_map(digest_paths) {
            let content = manifest
                .and_then(|m| m.get(digest))
                .and_then(Value::as_array)
                .and_then(|c| c.first())
                .and_then(Value::as_str);
            let path = below(format!("{v}/{l}").as_bytes());
            let c = match content {
                Some(content) => content_of(inv, alg, given, (path, digest), content),
                None => Content::Refused(OcflError::StateDigestUnknown {
                    path,
                    digest: digest.clone(),
                }),
            };
            files.insert((v.clone(), l.to_string()), c);
        }
    }
    files
}

/// The content of the logical file at `path` (below the object) whose state gives it
/// `digest`, stored at `content`: within the object, and in one of its versions'
/// directories, with a digest of the inventory's algorithm; refused here otherwise, before
/// it is looked for.
fn content_of(
    inv: &Inventory,
    alg: Algorithm,
    given: &HashMap<String, Digests>,
    (path, digest): (PathBuf, &str),
    content: &str,
) -> Content {
    let inside = plain(content).is_some_and(|segs| {
        segs.len() > 2 && inv.all_versions.iter().any(|v| v.as_bytes() == segs[0])
    });
    let expected = given.get(content).cloned().unwrap_or_default();
    if !inside {
        Content::Refused(OcflError::ContentOutside {
            path,
            content: content.to_string(),
        })
    } else if !expected.iter().any(|(a, _)| *a == alg) {
        Content::Refused(OcflError::DigestForm {
            path,
            digest: digest.to_string(),
            algorithm: inv.digest_algorithm.clone(),
        })
    } else {
        Content::File {
            path: content.to_string(),
            expected,
        }
    }
}
