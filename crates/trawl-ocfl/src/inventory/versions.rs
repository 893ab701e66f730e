//! An inventory's versions: their sequence, and each version's block (`created`, `state`,
//! `message`, `user`).

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::created::parse_created;
use super::manifest::files_that_are_directories;
use super::{Inventory, digest_form, normalized};
use crate::log::Log;

/// The version names: `v1`, `v2`, ... or zero-padded (`v001`, ...) all alike, with no gap.
pub(super) fn version_sequence(versions: &Value, at: &[u8], log: &mut Log) -> Vec<String> {
    let mut all = Vec::new();
    let Value::Object(versions) = versions else {
        log.error("E044", at, "`versions` is not a JSON object");
        return all;
    };
    if versions.is_empty() {
        log.error("E008", at, "`versions` holds no version");
        return all;
    }
    let (width, max) = if versions.contains_key("v1") {
        (0, 999_999usize)
    } else {
        match (2..=10).find(|n| versions.contains_key(&format!("v{:0w$}", 1, w = *n))) {
            Some(n) => (n, 10usize.pow(n as u32 - 1) - 1),
            None => {
                log.error("E009", at, "`versions` has no v1 (nor a zero-padded one)");
                return all;
            }
        }
    };
    if width > 0 {
        log.warning("W001", at, "version numbers SHOULD NOT be zero-padded");
    }
    for n in 1..=max {
        let v = format!("v{:0w$}", n, w = width);
        if versions.contains_key(&v) {
            all.push(v);
        } else {
            if versions.len() != n - 1 {
                log.error(
                    "E010",
                    at,
                    format!(
                        "`versions` is not a sequence: {v} is missing, or a name is out of form"
                    ),
                );
            }
            return all;
        }
    }
    if versions.len() > max {
        log.error(
            "E011",
            at,
            format!("more versions than zero-padding to {width} digits allows"),
        );
        log.error(
            "E013",
            at,
            format!(
                "a version after v{max} cannot be named with the padding of v{:0w$}",
                1,
                w = width
            ),
        );
    }
    all
}

/// Each version's block: `created`, `state`, `message`, `user`. Returns the digests the states
/// use (normalized).
pub(super) fn check_versions(
    versions: &Map<String, Value>,
    inv: &Inventory,
    written: &HashSet<String>,
    log: &mut Log,
) -> Vec<String> {
    let at = inv.at.as_slice();
    let mut used = Vec::new();
    for v in &inv.all_versions {
        let Some(Value::Object(block)) = versions.get(v) else {
            log.error("E047", at, format!("version {v} is not a JSON object"));
            continue;
        };
        created(block.get("created"), v, at, log);
        match block.get("state") {
            Some(s) => used.extend(state(s, v, inv, written, log)),
            None => log.error("E048", at, format!("version {v} has no `state`")),
        }
        match block.get("message") {
            None => log.warning("W007", at, format!("version {v} SHOULD have a `message`")),
            Some(Value::String(_)) => {}
            Some(_) => log.error("E094", at, format!("version {v} `message` is not a string")),
        }
        user(block.get("user"), v, at, log);
    }
    used
}

/// Version `v`'s `created`: a date-time to the second, with its zone.
fn created(c: Option<&Value>, v: &str, at: &[u8], log: &mut Log) {
    let c = match c {
        None => return log.error("E048", at, format!("version {v} has no `created`")),
        Some(Value::String(c)) => c,
        Some(_) => return log.error("E049", at, format!("version {v} `created` is not a string")),
    };
    let parts = match parse_created(c) {
        Ok(parts) => parts,
        Err(why) => return log.error("E049", at, format!("version {v} `created`: {why}")),
    };
    if !parts.zone {
        log.error(
            "E049",
            at,
            format!("version {v} `created` has no time zone ('{c}')"),
        );
    }
    if !parts.seconds {
        log.error(
            "E049",
            at,
            format!("version {v} `created` is not to the second ('{c}')"),
        );
    }
}

/// Version `v`'s `user` (SHOULD be there): a `name`, and (SHOULD) an `address` that is a URI.
fn user(user: Option<&Value>, v: &str, at: &[u8], log: &mut Log) {
    let user = match user {
        None => return log.warning("W007", at, format!("version {v} SHOULD have a `user`")),
        Some(Value::Object(user)) => user,
        Some(_) => {
            return log.error(
                "E054",
                at,
                format!("version {v} `user` is not a JSON object"),
            );
        }
    };
    if !matches!(user.get("name"), Some(Value::String(_))) {
        log.error(
            "E054",
            at,
            format!("version {v} `user` has no `name` string"),
        );
    }
    match user.get("address") {
        None => log.warning(
            "W008",
            at,
            format!("version {v} `user` SHOULD have an `address`"),
        ),
        Some(Value::String(a)) => {
            if !looks_like_address(a) {
                log.warning(
                    "W009",
                    at,
                    format!(
                        "version {v} `user` `address` SHOULD be a URI (mailto: or an identifier; is '{a}')"
                    ),
                );
            }
        }
        Some(_) => log.error(
            "E054",
            at,
            format!("version {v} `user` `address` is not a string"),
        ),
    }
}

/// A user's address as the specification's examples write them: a scheme of 3 to 6 word
/// characters and a colon (`mailto:`, `https:`).
pub(super) fn looks_like_address(a: &str) -> bool {
    let scheme: Vec<char> = a.chars().take_while(|c| *c != ':').collect();
    a.len() > scheme.len()
        && (3..=6).contains(&scheme.len())
        && scheme.iter().all(|c| c.is_alphanumeric() || *c == '_')
}

/// A version's state: digests of the inventory's algorithm, written as in the manifest,
/// each with logical paths that are sound and distinct.
fn state(
    s: &Value,
    version: &str,
    inv: &Inventory,
    written: &HashSet<String>,
    log: &mut Log,
) -> Vec<String> {
    let at = inv.at.as_slice();
    let mut digests = Vec::new();
    let Value::Object(s) = s else {
        log.error(
            "E050",
            at,
            format!("version {version} `state` is not a JSON object"),
        );
        return digests;
    };
    let mut paths = HashSet::new();
    for (digest, files) in s {
        if digest_form(&inv.digest_algorithm, digest) != Some(true) {
            log.error(
                "E050",
                at,
                format!(
                    "version {version} state digest '{digest}' is not of the form of {}",
                    inv.digest_algorithm
                ),
            );
            continue;
        }
        let Value::Array(files) = files else {
            log.error(
                "E050",
                at,
                format!("version {version} state entry for {digest} is not a list of paths"),
            );
            continue;
        };
        for f in files {
            logical_path(f, (version, digest), &mut paths, at, log);
        }
        if !written.contains(digest) {
            log.error(
                "E050",
                at,
                format!(
                    "version {version} state digest {digest} is not written so in the manifest"
                ),
            );
        }
        digests.push(normalized(digest));
    }
    for d in files_that_are_directories(paths.iter().map(String::as_str)) {
        log.error(
            "E095",
            at,
            format!("version {version} logical path '{d}' is both a file and a directory"),
        );
    }
    digests
}

/// One logical path of `version`'s state (listed under `digest`): a string, listed once, with
/// no empty, `.` or `..` element; added to `paths` if sound.
fn logical_path(
    f: &Value,
    (version, digest): (&str, &str),
    paths: &mut HashSet<String>,
    at: &[u8],
    log: &mut Log,
) {
    let Some(p) = f.as_str() else {
        log.error(
            "E050",
            at,
            format!("version {version} state entry for {digest} holds a path that is not a string"),
        );
        return;
    };
    if paths.contains(p) {
        log.error(
            "E095",
            at,
            format!("version {version} state lists logical path '{p}' more than once"),
        );
    } else if p.starts_with('/') || p.ends_with('/') {
        log.error(
            "E053",
            at,
            format!("version {version} logical path '{p}' begins or ends with '/'"),
        );
    } else if p.split('/').any(|e| matches!(e, "" | "." | "..")) {
        log.error(
            "E052",
            at,
            format!("version {version} logical path '{p}' has an empty, '.' or '..' element"),
        );
    } else {
        paths.insert(p.to_string());
    }
}
