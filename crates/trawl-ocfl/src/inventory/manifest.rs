//! An inventory's content paths: the manifest's (their form, each listed once, none both a
//! file and a directory) and the fixity block's.

use std::collections::HashSet;

use serde_json::Value;

use super::{Inventory, algorithm, digest_form, normalized};
use crate::log::Log;

/// The manifest: digests of the inventory's algorithm, each once, with content paths that are
/// sound and distinct. Returns the paths that passed (their version directories are checked
/// once the versions are known) and the digests as written (a state must use them exactly).
pub(super) fn manifest(
    m: &Value,
    inv: &mut Inventory,
    log: &mut Log,
) -> (Vec<String>, HashSet<String>) {
    let at = inv.at.clone();
    let mut good = Vec::new();
    let mut written = HashSet::new();
    let Value::Object(m) = m else {
        log.error("E041", &at, "`manifest` is not a JSON object");
        return (good, written);
    };
    let alg = inv.digest_algorithm.clone();
    let mut seen_digests = HashSet::new();
    let mut paths = HashSet::new();
    for (digest, files) in m {
        if digest_form(&alg, digest) != Some(true) {
            log.error(
                "E025",
                &at,
                format!("manifest digest '{digest}' is not of the form of {alg}"),
            );
            continue;
        }
        let Value::Array(files) = files else {
            log.error(
                "E092",
                &at,
                format!("manifest entry for {digest} is not a list of paths"),
            );
            continue;
        };
        written.insert(digest.clone());
        let norm = normalized(digest);
        if !seen_digests.insert(norm.clone()) {
            log.error(
                "E096",
                &at,
                format!("manifest digest {norm} is listed more than once (in different cases)"),
            );
        }
        for f in files {
            let Some(f) = f.as_str() else {
                log.error(
                    "E092",
                    &at,
                    format!("manifest entry for {digest} holds a path that is not a string"),
                );
                continue;
            };
            inv.manifest_files.insert(f.to_string(), norm.clone());
            if content_path(f, &inv.content_directory, &at, &mut paths, log) {
                good.push(f.to_string());
            }
        }
    }
    for d in files_that_are_directories(paths.iter().map(String::as_str)) {
        log.error(
            "E101",
            &at,
            format!("content path '{d}' is both a file and a directory"),
        );
    }
    (good, written)
}

/// The paths of `paths` that are also another's directory (`a` beside `a/b`), in byte order.
/// Sorted, the paths that begin with `p/` follow one another from the first that is not less
/// than `p/`: one search a path, in memory and time about the paths' own size. (Holding every
/// path's parent directories as strings of their own took the square of a long path's length:
/// 255 MB for an inventory of 64 KB.)
pub(super) fn files_that_are_directories<'a>(paths: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut sorted: Vec<&str> = paths.collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = Vec::new();
    for p in &sorted {
        let below = format!("{p}/");
        let first = sorted.partition_point(|q| *q < below.as_str());
        if sorted.get(first).is_some_and(|q| q.starts_with(&below)) {
            out.push(*p);
        }
    }
    out
}

/// A content path: `vN/CONTENT/...` with no empty, `.` or `..` element, listed once.
fn content_path(
    path: &str,
    content_dir: &str,
    at: &[u8],
    paths: &mut HashSet<String>,
    log: &mut Log,
) -> bool {
    if path.starts_with('/') || path.ends_with('/') {
        log.error(
            "E100",
            at,
            format!("content path '{path}' begins or ends with '/'"),
        );
        return false;
    }
    let mut parts = path.splitn(3, '/');
    let (Some(v), Some(cd), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
        log.error(
            "E042",
            at,
            format!("content path '{path}' is not vN/{content_dir}/..."),
        );
        return false;
    };
    if !(v.len() > 1 && v.starts_with('v') && v[1..].bytes().all(|b| b.is_ascii_digit())) {
        log.error(
            "E042",
            at,
            format!("content path '{path}' does not begin with a version directory"),
        );
        return false;
    }
    if cd != content_dir {
        log.error(
            "E042",
            at,
            format!("content path '{path}' is not in the content directory '{content_dir}'"),
        );
        return false;
    }
    if rest.split('/').any(|e| matches!(e, "" | "." | "..")) {
        log.error(
            "E099",
            at,
            format!("content path '{path}' has an empty, '.' or '..' element"),
        );
        return false;
    }
    if !paths.insert(path.to_string()) {
        log.error(
            "E101",
            at,
            format!("content path '{path}' is listed more than once"),
        );
        return false;
    }
    true
}

/// The fixity block: known algorithms, digests of their form each once, content paths that the
/// manifest lists.
pub(super) fn fixity(f: &Value, inv: &Inventory, log: &mut Log) {
    let at = inv.at.as_slice();
    let Value::Object(f) = f else {
        let code = if inv.spec_version == "1.0" {
            "E056"
        } else {
            "E111"
        };
        log.error(code, at, "`fixity` is not a JSON object");
        return;
    };
    for (alg, block) in f {
        if algorithm(alg).is_none() {
            log.error(
                "E056",
                at,
                format!("fixity algorithm '{alg}' is not one the specification or its extension 0001 names, or not one trawl computes"),
            );
            continue;
        }
        let Value::Object(block) = block else {
            log.error(
                "E057",
                at,
                format!("fixity block for {alg} is not a JSON object"),
            );
            continue;
        };
        let mut seen = HashSet::new();
        for (digest, files) in block {
            if digest_form(alg, digest) != Some(true) {
                log.error(
                    "E057",
                    at,
                    format!("fixity digest '{digest}' is not of the form of {alg}"),
                );
                continue;
            }
            let Value::Array(files) = files else {
                log.error(
                    "E057",
                    at,
                    format!("fixity entry {alg} {digest} is not a list of paths"),
                );
                continue;
            };
            let norm = normalized(digest);
            if !seen.insert(norm.clone()) {
                log.error(
                    "E097",
                    at,
                    format!(
                        "fixity {alg} digest {norm} is listed more than once (in different cases)"
                    ),
                );
            }
            for p in files {
                fixity_path(p.as_str().unwrap_or_default(), (alg, &norm), inv, log);
            }
        }
    }
}

/// One content path of the fixity block of `alg` (under digest `norm`): of a content path's
/// form, and one the manifest lists.
fn fixity_path(p: &str, (alg, norm): (&str, &str), inv: &Inventory, log: &mut Log) {
    let at = inv.at.as_slice();
    if p.starts_with('/') || p.ends_with('/') {
        log.error(
            "E100",
            at,
            format!("fixity {alg} content path '{p}' begins or ends with '/'"),
        );
    } else if p.split('/').any(|e| matches!(e, "" | "." | "..")) {
        log.error(
            "E099",
            at,
            format!("fixity {alg} content path '{p}' has an empty, '.' or '..' element"),
        );
    } else if !inv.manifest_files.contains_key(p) {
        log.error(
            "E057",
            at,
            format!("fixity {alg} {norm} lists '{p}', which the manifest does not"),
        );
    }
}
