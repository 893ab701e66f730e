//! One inventory's checks, on the inventory alone (no file of the object is looked at): its
//! keys and their types, the version sequence, the manifest's and the states' paths and
//! digests, the fixity block; and an earlier version's inventory held against the newest.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::{Map, Value};
use trawl_digest::Algorithm;

use crate::log::Log;

/// The specification versions trawl validates against.
pub(crate) const SPEC_VERSIONS: [&str; 2] = ["1.0", "1.1"];

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

/// A W3C date-time as inventories write `created`: `YYYY[-MM[-DD]]`, or a whole date then
/// `Thh:mm[:ss[.s+]]` and a zone (`Z` or `+hh:mm`). The parts found, or why it is not one.
/// The form is read by hand (no date library reports which part is missing); the values are
/// held to the calendar by `time`: a day the month has, hours, minutes and offsets in range,
/// and a 60th second only where a leap second can be (the last minute of 30 June or 31
/// December in UTC, which needs the zone).
struct Created {
    zone: bool,
    seconds: bool,
}

fn parse_created(s: &str) -> Result<Created, String> {
    let b = s.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize, n: usize| -> Option<u32> {
        let part = b.get(*i..*i + n)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        *i += n;
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let bad = || format!("'{s}' is not a W3C date-time");
    let year = digits(&mut i, 4).ok_or_else(bad)?;
    let mut out = Created {
        zone: false,
        seconds: false,
    };
    let mut date = [year, 0, 0];
    for (part, (max, min)) in [(12, 1), (31, 1)].into_iter().enumerate() {
        if b.get(i) != Some(&b'-') {
            break;
        }
        i += 1;
        let v = digits(&mut i, 2).ok_or_else(bad)?;
        if v < min || v > max {
            return Err(bad());
        }
        date[part + 1] = v;
    }
    let day = if date[2] > 0 {
        let month = time::Month::try_from(date[1] as u8).map_err(|_| bad())?;
        Some(
            time::Date::from_calendar_date(year as i32, month, date[2] as u8)
                .map_err(|_| format!("'{s}' names a day its month does not have"))?,
        )
    } else {
        None
    };
    if b.get(i) == Some(&b'T') {
        let Some(day) = day else {
            return Err(format!("'{s}' gives a time without a whole date"));
        };
        i += 1;
        let h = digits(&mut i, 2).ok_or_else(bad)?;
        if b.get(i) != Some(&b':') {
            return Err(bad());
        }
        i += 1;
        let m = digits(&mut i, 2).ok_or_else(bad)?;
        if h > 23 || m > 59 {
            return Err(bad());
        }
        let mut second = 0;
        if b.get(i) == Some(&b':') {
            i += 1;
            second = digits(&mut i, 2).ok_or_else(bad)?;
            if second > 60 {
                return Err(bad());
            }
            out.seconds = true;
            if b.get(i) == Some(&b'.') {
                i += 1;
                let start = i;
                while b.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
                if i == start {
                    return Err(bad());
                }
            }
        }
        let mut offset = None;
        match b.get(i) {
            Some(b'Z') => {
                i += 1;
                offset = Some(time::UtcOffset::UTC);
            }
            Some(&sign @ (b'+' | b'-')) => {
                i += 1;
                let oh = digits(&mut i, 2).ok_or_else(bad)?;
                if b.get(i) != Some(&b':') {
                    return Err(bad());
                }
                i += 1;
                let om = digits(&mut i, 2).ok_or_else(bad)?;
                if oh > 23 || om > 59 {
                    return Err(format!("'{s}' has a time zone offset out of range"));
                }
                let k = if sign == b'-' { -1 } else { 1 };
                offset = Some(
                    time::UtcOffset::from_hms(k * oh as i8, k * om as i8, 0).map_err(|_| bad())?,
                );
            }
            _ => {}
        }
        out.zone = offset.is_some();
        if second == 60 {
            leap_second(day, h, m, offset).map_err(|why| format!("'{s}': {why}"))?;
        }
    }
    if i != b.len() {
        return Err(bad());
    }
    Ok(out)
}

/// Whether `day` at `h:m:60` (local time at `offset`) can be a leap second: 23:59:60 UTC on
/// the last day of June or December.
fn leap_second(
    day: time::Date,
    h: u32,
    m: u32,
    offset: Option<time::UtcOffset>,
) -> Result<(), &'static str> {
    let Some(offset) = offset else {
        return Err("a 60th second without a time zone cannot be a leap second");
    };
    let local = time::Time::from_hms(h as u8, m as u8, 59)
        .map(|t| time::PrimitiveDateTime::new(day, t).assume_offset(offset))
        .map_err(|_| "not a time")?;
    let utc = local.to_offset(time::UtcOffset::UTC);
    let end_of_half = matches!(
        (utc.month(), utc.day()),
        (time::Month::June, 30) | (time::Month::December, 31)
    );
    if (utc.hour(), utc.minute(), utc.second()) == (23, 59, 59) && end_of_half {
        Ok(())
    } else {
        Err(
            "a 60th second only where a leap second can be (23:59:60 UTC on 30 June or 31 December)",
        )
    }
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

fn structure(value: &Map<String, Value>, inv: &mut Inventory, log: &mut Log, start: usize) {
    let at = inv.at.clone();
    let at = at.as_slice();
    match value.get("id") {
        None => log.error("E036", at, "no `id`"),
        Some(Value::String(id)) if !id.is_empty() => {
            if !looks_like_uri(id) {
                log.warning("W005", at, format!("`id` SHOULD be a URI (is '{id}')"));
            }
            inv.id = Some(id.clone());
        }
        Some(_) => log.error("E037", at, "`id` is empty or not a string"),
    }
    match value.get("type") {
        None => log.error("E036", at, "no `type`"),
        Some(Value::String(t)) => {
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
        Some(_) => log.error("E038", at, "`type` is not a string"),
    }
    match value.get("digestAlgorithm") {
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
            return;
        }
    }
    if let Some(cd) = value.get("contentDirectory") {
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
    let mut manifest_paths = None;
    let mut manifest_digests = HashSet::new();
    match value.get("manifest") {
        None => log.error("E041", at, "no `manifest`"),
        Some(m) => {
            let (paths, digests) = manifest(m, inv, log);
            manifest_paths = Some(paths);
            manifest_digests = digests;
        }
    }
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
    match value.get("head") {
        None => log.error("E036", at, "no `head`"),
        Some(h) => {
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
    }
    if inv.all_versions.is_empty() {
        if log.errors.len() == start {
            log.error("E008", at, "no version");
        }
        return;
    }
    if let Some(paths) = manifest_paths {
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
    if let Some(f) = value.get("fixity") {
        fixity(f, inv, log);
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

/// The manifest: digests of the inventory's algorithm, each once, with content paths that are
/// sound and distinct. Returns the paths that passed (their version directories are checked
/// once the versions are known) and the digests as written (a state must use them exactly).
fn manifest(m: &Value, inv: &mut Inventory, log: &mut Log) -> (Vec<String>, HashSet<String>) {
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
fn files_that_are_directories<'a>(paths: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
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

/// The version names: `v1`, `v2`, ... or zero-padded (`v001`, ...) all alike, with no gap.
fn version_sequence(versions: &Value, at: &[u8], log: &mut Log) -> Vec<String> {
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
fn check_versions(
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
        match block.get("created") {
            None => log.error("E048", at, format!("version {v} has no `created`")),
            Some(Value::String(c)) => match parse_created(c) {
                Ok(parts) => {
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
                Err(why) => log.error("E049", at, format!("version {v} `created`: {why}")),
            },
            Some(_) => log.error("E049", at, format!("version {v} `created` is not a string")),
        }
        match block.get("state") {
            Some(s) => used.extend(state(s, v, inv, written, log)),
            None => log.error("E048", at, format!("version {v} has no `state`")),
        }
        match block.get("message") {
            None => log.warning("W007", at, format!("version {v} SHOULD have a `message`")),
            Some(Value::String(_)) => {}
            Some(_) => log.error("E094", at, format!("version {v} `message` is not a string")),
        }
        match block.get("user") {
            None => log.warning("W007", at, format!("version {v} SHOULD have a `user`")),
            Some(Value::Object(user)) => {
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
            Some(_) => log.error(
                "E054",
                at,
                format!("version {v} `user` is not a JSON object"),
            ),
        }
    }
    used
}

/// A user's address as the specification's examples write them: a scheme of 3 to 6 word
/// characters and a colon (`mailto:`, `https:`).
fn looks_like_address(a: &str) -> bool {
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
            let Some(p) = f.as_str() else {
                log.error(
                    "E050",
                    at,
                    format!("version {version} state entry for {digest} holds a path that is not a string"),
                );
                continue;
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
                    format!(
                        "version {version} logical path '{p}' has an empty, '.' or '..' element"
                    ),
                );
            } else {
                paths.insert(p.to_string());
            }
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

/// The fixity block: known algorithms, digests of their form each once, content paths that the
/// manifest lists.
fn fixity(f: &Value, inv: &Inventory, log: &mut Log) {
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
                let p = p.as_str().unwrap_or_default();
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
                        format!(
                            "fixity {alg} content path '{p}' has an empty, '.' or '..' element"
                        ),
                    );
                } else if !inv.manifest_files.contains_key(p) {
                    log.error(
                        "E057",
                        at,
                        format!("fixity {alg} {norm} lists '{p}', which the manifest does not"),
                    );
                }
            }
        }
    }
}

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
    let (mut prior_content, mut root_content) = (Content::new(prior), Content::new(newest));
    // Whether a digest's paths in the earlier inventory are among another's in the root's,
    // asked once a pair.
    let mut same_content: HashMap<(&str, &str), bool> = HashMap::new();
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
        let (mine, root) = (logical_map(prior, v), logical_map(newest, v));
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
        if !only_prior.is_empty() || !only_root.is_empty() {
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
        } else {
            let mut keys: Vec<&str> = mine.keys().copied().collect();
            keys.sort_unstable();
            for k in keys {
                let pair = (mine[k], root[k]);
                let within = match same_content.get(&pair) {
                    Some(known) => *known,
                    None => {
                        let theirs = root_content.of(pair.1);
                        let known = prior_content.of(pair.0).is_subset(theirs);
                        same_content.insert(pair, known);
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A sha512 digest written with one hex digit.
    pub(crate) fn d(c: char) -> String {
        c.to_string().repeat(128)
    }

    /// A sound inventory of one version: `a.txt` and `sub/b.txt`, each its own content.
    pub(crate) fn sound() -> Value {
        json!({
            "id": "info:example/1",
            "type": "https://ocfl.io/1.1/spec/#inventory",
            "digestAlgorithm": "sha512",
            "head": "v1",
            "manifest": {d('a'): ["v1/content/a.txt"], d('b'): ["v1/content/sub/b.txt"]},
            "versions": {"v1": {
                "created": "2024-01-01T00:00:00Z",
                "message": "first",
                "user": {"name": "A. Person", "address": "mailto:a@example.org"},
                "state": {d('a'): ["a.txt"], d('b'): ["sub/b.txt"]},
            }},
        })
    }

    /// What checking `inv` logs: the codes of its errors, then of its warnings.
    fn codes(inv: &Value) -> (Vec<&'static str>, Vec<&'static str>) {
        let mut log = Log::default();
        check(
            &serde_json::to_vec(inv).unwrap(),
            b"inventory.json",
            "1.1",
            &mut log,
        );
        let c = |f: &[trawl_report::ocfl::OcflFinding]| f.iter().map(|f| f.code).collect();
        (c(&log.errors), c(&log.warnings))
    }

    /// `sound()` with `edit` applied.
    fn edited(edit: impl FnOnce(&mut Value)) -> Value {
        let mut v = sound();
        edit(&mut v);
        v
    }

    #[test]
    fn a_sound_inventory_raises_nothing_and_says_what_it_holds() {
        let mut log = Log::default();
        let raw = serde_json::to_vec(&sound()).unwrap();
        let inv = check(&raw, b"inventory.json", "1.0", &mut log).unwrap();
        assert!(log.errors.is_empty() && log.warnings.is_empty(), "{log:?}");
        assert_eq!(inv.id.as_deref(), Some("info:example/1"));
        // The type's version, not the one assumed.
        assert_eq!(inv.spec_version, "1.1");
        assert_eq!(
            (inv.head.as_str(), inv.all_versions.as_slice()),
            ("v1", &["v1".to_string()][..])
        );
        assert_eq!(
            inv.manifest_files.get("v1/content/sub/b.txt"),
            Some(&d('b'))
        );
        assert_eq!(inv.content_directory, "content");
        // Not JSON, or JSON but not an object: E033 and nothing else checked.
        for raw in [&b"{\"id\": "[..], b"[1, 2]", b""] {
            let mut log = Log::default();
            assert!(check(raw, b"inventory.json", "1.1", &mut log).is_none());
            assert_eq!(
                log.errors.iter().map(|f| f.code).collect::<Vec<_>>(),
                ["E033"]
            );
        }
    }

    /// Each top-level key missing or of the wrong kind raises its own code (and a SHOULD its
    /// warning).
    #[test]
    fn each_key_missing_or_mistyped_raises_its_code() {
        let cases: Vec<(Value, &str)> = vec![
            (
                edited(|v| drop(v.as_object_mut().unwrap().remove("id"))),
                "E036",
            ),
            (edited(|v| v["id"] = json!("")), "E037"),
            (edited(|v| v["id"] = json!(7)), "E037"),
            (
                edited(|v| drop(v.as_object_mut().unwrap().remove("type"))),
                "E036",
            ),
            (
                edited(|v| v["type"] = json!("https://ocfl.io/2.0/spec/#inventory")),
                "E038",
            ),
            (edited(|v| v["type"] = json!("inventory")), "E038"),
            (
                edited(|v| drop(v.as_object_mut().unwrap().remove("digestAlgorithm"))),
                "E036",
            ),
            (edited(|v| v["digestAlgorithm"] = json!("md5")), "E025"),
            (edited(|v| v["contentDirectory"] = json!("a/b")), "E017"),
            (edited(|v| v["contentDirectory"] = json!(["c"])), "E017"),
            (edited(|v| v["contentDirectory"] = json!("..")), "E018"),
            (
                edited(|v| drop(v.as_object_mut().unwrap().remove("manifest"))),
                "E041",
            ),
            (edited(|v| v["manifest"] = json!([])), "E041"),
            (
                edited(|v| drop(v.as_object_mut().unwrap().remove("versions"))),
                "E041",
            ),
            (edited(|v| v["versions"] = json!([])), "E044"),
            (edited(|v| v["versions"] = json!({})), "E008"),
            (
                edited(|v| drop(v.as_object_mut().unwrap().remove("head"))),
                "E036",
            ),
            (edited(|v| v["head"] = json!("v2")), "E040"),
        ];
        for (inv, code) in cases {
            let (errors, _) = codes(&inv);
            assert!(errors.contains(&code), "{code}: {errors:?} for {inv}");
        }
        assert_eq!(
            codes(&edited(|v| v["id"] = json!("ark-1"))),
            (vec![], vec!["W005"])
        );
        let sha256 = edited(|v| {
            v["digestAlgorithm"] = json!("sha256");
            v["manifest"] = json!({"a".repeat(64): ["v1/content/a.txt"]});
            v["versions"]["v1"]["state"] = json!({"a".repeat(64): ["a.txt"]});
        });
        assert_eq!(codes(&sha256), (vec![], vec!["W004"]));
    }

    /// A manifest's digests and content paths: each rule broken raises its code.
    #[test]
    fn manifest_digests_and_content_paths_are_held_to_their_rules() {
        let with = |m: Value| {
            edited(|v| {
                v["manifest"] = m;
                v["versions"]["v1"]["state"] = json!({d('a'): ["a.txt"]});
            })
        };
        let a = d('a');
        let cases: Vec<(Value, &str)> = vec![
            (json!({"abc": ["v1/content/a.txt"]}), "E025"),
            (
                json!({&a: ["v1/content/a.txt"], a.to_uppercase(): ["v1/content/c"]}),
                "E096",
            ),
            (json!({&a: "v1/content/a.txt"}), "E092"),
            (json!({&a: ["v1/content/a.txt", 5]}), "E092"),
            (json!({&a: ["/v1/content/a.txt"]}), "E100"),
            (json!({&a: ["v1/content/a.txt/"]}), "E100"),
            (json!({&a: ["v1/a.txt"]}), "E042"),
            (json!({&a: ["x1/content/a.txt"]}), "E042"),
            (json!({&a: ["v1/data/a.txt"]}), "E042"),
            (json!({&a: ["v2/content/a.txt"]}), "E042"),
            (json!({&a: ["v1/content/../a.txt"]}), "E099"),
            (json!({&a: ["v1/content//a.txt"]}), "E099"),
            (json!({&a: ["v1/content/./a.txt"]}), "E099"),
            (
                json!({&a: ["v1/content/a.txt"], d('c'): ["v1/content/a.txt"]}),
                "E101",
            ),
            (json!({&a: ["v1/content/a", "v1/content/a/b"]}), "E101"),
            (
                json!({&a: ["v1/content/a.txt"], d('c'): ["v1/content/c"]}),
                "E107",
            ),
        ];
        for (m, code) in cases {
            let (errors, _) = codes(&with(m.clone()));
            assert!(errors.contains(&code), "{code}: {errors:?} for {m}");
        }
        // A name beside a directory of a like name (`a-b` sorts between `a` and `a/`) is not
        // a directory.
        assert_eq!(
            codes(&with(
                json!({&a: ["v1/content/a", "v1/content/a-b", "v1/content/ab/c"]})
            )),
            (vec![], vec![])
        );
    }

    /// A version's state: digests of the inventory's algorithm written as the manifest writes
    /// them, logical paths sound and each once.
    #[test]
    fn state_digests_and_logical_paths_are_held_to_their_rules() {
        let a = d('a');
        let with = |s: Value| edited(|v| v["versions"]["v1"]["state"] = s);
        let cases: Vec<(Value, &str)> = vec![
            (json!([]), "E050"),
            (json!({"abc": ["a.txt"]}), "E050"),
            (json!({d('c'): ["a.txt"], d('b'): ["sub/b.txt"]}), "E050"),
            (
                json!({a.to_uppercase(): ["a.txt"], d('b'): ["sub/b.txt"]}),
                "E050",
            ),
            (json!({&a: "a.txt", d('b'): ["sub/b.txt"]}), "E050"),
            (json!({&a: ["/a.txt"], d('b'): ["sub/b.txt"]}), "E053"),
            (json!({&a: ["a.txt/"], d('b'): ["sub/b.txt"]}), "E053"),
            (json!({&a: ["x/../a.txt"], d('b'): ["sub/b.txt"]}), "E052"),
            (
                json!({&a: ["a.txt", "sub/b.txt"], d('b'): ["sub/b.txt"]}),
                "E095",
            ),
            (json!({&a: ["sub"], d('b'): ["sub/b.txt"]}), "E095"),
        ];
        for (s, code) in cases {
            let (errors, _) = codes(&with(s.clone()));
            assert!(errors.contains(&code), "{code}: {errors:?} for {s}");
        }
    }

    /// A version's block: `created` a W3C date-time to the second with a zone, `state` there,
    /// `message` and `user` (SHOULD) with a `name`, an `address` (SHOULD) that is a URI.
    #[test]
    fn a_versions_block_is_held_to_its_rules() {
        let with = |key: &str, value: Option<Value>| {
            edited(|v| {
                let block = v["versions"]["v1"].as_object_mut().unwrap();
                match value {
                    Some(x) => drop(block.insert(key.into(), x)),
                    None => drop(block.remove(key)),
                }
            })
        };
        for (key, value, errors, warnings) in [
            ("created", None, vec!["E048"], vec![]),
            ("created", Some(json!(20240101)), vec!["E049"], vec![]),
            (
                "created",
                Some(json!("2024-01-01")),
                vec!["E049", "E049"],
                vec![],
            ),
            (
                "created",
                Some(json!("2024-01-01T00:00:00")),
                vec!["E049"],
                vec![],
            ),
            (
                "created",
                Some(json!("2024-01-01T00:00Z")),
                vec!["E049"],
                vec![],
            ),
            (
                "created",
                Some(json!("2023-02-29T00:00:00Z")),
                vec!["E049"],
                vec![],
            ),
            ("message", None, vec![], vec!["W007"]),
            ("message", Some(json!(["m"])), vec!["E094"], vec![]),
            ("user", None, vec![], vec!["W007"]),
            ("user", Some(json!("A. Person")), vec!["E054"], vec![]),
            (
                "user",
                Some(json!({"address": "mailto:a@b.org"})),
                vec!["E054"],
                vec![],
            ),
            (
                "user",
                Some(json!({"name": "A", "address": 5})),
                vec!["E054"],
                vec![],
            ),
            ("user", Some(json!({"name": "A"})), vec![], vec!["W008"]),
            (
                "user",
                Some(json!({"name": "A", "address": "a@b.org"})),
                vec![],
                vec!["W009"],
            ),
        ] {
            assert_eq!(
                codes(&with(key, value.clone())),
                (errors, warnings),
                "{key}: {value:?}"
            );
        }
        let (errors, _) = codes(&edited(|v| v["versions"]["v1"] = json!("v1")));
        assert!(errors.contains(&"E047"), "{errors:?}");
        let (errors, _) = codes(&with("state", None));
        assert!(errors.contains(&"E048"), "{errors:?}");
    }

    /// The fixity block: algorithms the specification or its extension name, their digests'
    /// forms, each once, content paths sound and in the manifest.
    #[test]
    fn a_fixity_block_is_held_to_its_rules() {
        let md5 = |c: char| c.to_string().repeat(32);
        let with = |f: Value| edited(|v| v["fixity"] = f);
        assert_eq!(
            codes(&with(
                json!({"md5": {md5('1'): ["v1/content/a.txt"]}, "blake2b-160": {"2".repeat(40): ["v1/content/sub/b.txt"]}})
            )),
            (vec![], vec![])
        );
        for (f, code) in [
            (json!([]), "E111"),
            (json!({"crc32": {}}), "E056"),
            (json!({"md5": []}), "E057"),
            (json!({"md5": {"123": ["v1/content/a.txt"]}}), "E057"),
            (json!({"md5": {md5('1'): "v1/content/a.txt"}}), "E057"),
            (
                json!({"md5": {md5('a'): ["v1/content/a.txt"], md5('A'): ["v1/content/sub/b.txt"]}}),
                "E097",
            ),
            (json!({"md5": {md5('1'): ["v1/content/c.txt"]}}), "E057"),
            (json!({"md5": {md5('1'): ["/v1/content/a.txt"]}}), "E100"),
            (json!({"md5": {md5('1'): ["v1/content/./a.txt"]}}), "E099"),
        ] {
            let (errors, _) = codes(&with(f.clone()));
            assert_eq!(errors, [code], "{f}");
        }
        // Under specification 1.0 a fixity that is not an object is E056.
        let old = edited(|v| {
            v["type"] = json!("https://ocfl.io/1.0/spec/#inventory");
            v["fixity"] = json!("none");
        });
        assert_eq!(codes(&old).0, ["E056"]);
    }

    /// A digest's form is its algorithm's hex length, in either case; an algorithm neither the
    /// specification nor extension 0001 names has none.
    #[test]
    fn digests_have_their_algorithms_form() {
        assert_eq!(digest_form("sha512", &d('f')), Some(true));
        assert_eq!(digest_form("sha512", &d('F')), Some(true));
        assert_eq!(digest_form("sha512", &d('g')), Some(false));
        assert_eq!(digest_form("sha256", &d('a')), Some(false));
        assert_eq!(digest_form("blake2b-384", &"0".repeat(96)), Some(true));
        assert_eq!(digest_form("md5", &"0".repeat(32)), Some(true));
        assert_eq!(digest_form("sha3-256", &"0".repeat(64)), None);
        assert_eq!(normalized("AbC"), "abc");
    }

    /// Paths that are also another's directory, and only they, whatever lies between them in
    /// byte order; a path of 100,000 elements is checked in a moment.
    #[test]
    fn a_path_is_a_directory_exactly_when_another_begins_with_it_and_a_slash() {
        let paths = ["a", "a-b", "a/b", "ab", "a/b/c", "b", "b.txt", "c/d"];
        assert_eq!(files_that_are_directories(paths.into_iter()), ["a", "a/b"]);
        assert!(files_that_are_directories(["a/b", "a/c"].into_iter()).is_empty());
        let deep = format!("{}x", "a/".repeat(100_000));
        let t = std::time::Instant::now();
        assert!(files_that_are_directories([deep.as_str(), "a/b"].into_iter()).is_empty());
        let with_file = [deep.as_str(), "a/a/a"];
        assert_eq!(files_that_are_directories(with_file.into_iter()), ["a/a/a"]);
        assert!(t.elapsed() < std::time::Duration::from_secs(5));
    }

    /// Versions past what their zero-padding allows are E011 and E013 (`v10` after `v09`: no
    /// gap), and a sequence that does not begin at 1 is E009.
    #[test]
    fn versions_past_their_padding_are_named() {
        let mut log = Log::default();
        let mut v = serde_json::Map::new();
        for n in 1..=10 {
            v.insert(format!("v{n:02}"), json!({}));
        }
        let got = version_sequence(&Value::Object(v), b"inventory.json", &mut log);
        assert_eq!(got.len(), 9);
        let errors: Vec<_> = log.errors.iter().map(|f| f.code).collect();
        assert_eq!(errors, ["E011", "E013"]);
        let mut log = Log::default();
        version_sequence(&json!({"v0": {}, "v2": {}}), b"i", &mut log);
        assert_eq!(log.errors[0].code, "E009");
    }

    /// An earlier version's inventory against the root's: the same versions' states, logical
    /// paths and content; metadata SHOULD be the same.
    #[test]
    fn an_earlier_inventory_is_held_to_the_root_one() {
        let root = edited(|v| {
            v["head"] = json!("v2");
            v["manifest"][d('c')] = json!(["v2/content/c.txt"]);
            v["versions"]["v2"] = json!({
                "created": "2024-02-01T00:00:00Z",
                "message": "second",
                "user": {"name": "A. Person", "address": "mailto:a@example.org"},
                "state": {d('a'): ["a.txt"], d('c'): ["c.txt"]},
            });
        });
        let parse = |v: &Value, at: &[u8]| {
            let mut log = Log::default();
            let inv = check(&serde_json::to_vec(v).unwrap(), at, "1.1", &mut log).unwrap();
            assert!(log.errors.is_empty(), "{log:?}");
            inv
        };
        let newest = parse(&root, b"inventory.json");
        let prior_codes = |v: &Value| {
            let mut log = Log::default();
            check_prior(&newest, &parse(v, b"v1/inventory.json"), &mut log);
            let c = |f: &[trawl_report::ocfl::OcflFinding]| {
                f.iter().map(|f| f.code).collect::<Vec<_>>()
            };
            (c(&log.errors), c(&log.warnings))
        };
        assert_eq!(prior_codes(&sound()), (vec![], vec![]));
        // Not an earlier version: the root's own.
        assert_eq!(prior_codes(&root).0, ["E066"]);
        let moved = edited(|v| {
            v["versions"]["v1"]["state"] = json!({d('a'): ["A.txt"], d('b'): ["sub/b.txt"]})
        });
        assert_eq!(prior_codes(&moved).0, ["E066", "E066"]);
        let other = edited(|v| {
            v["manifest"] = json!({d('a'): ["v1/content/a.txt"], d('e'): ["v1/content/sub/b.txt"]});
            v["versions"]["v1"]["state"] = json!({d('a'): ["a.txt"], d('e'): ["sub/b.txt"]});
        });
        assert_eq!(prior_codes(&other).0, ["E066", "E066"]);
        let elsewhere = edited(|v| v["manifest"][d('b')] = json!(["v1/content/elsewhere.txt"]));
        assert_eq!(prior_codes(&elsewhere).0, ["E066"]);
        let said = edited(|v| v["versions"]["v1"]["message"] = json!("first, said otherwise"));
        assert_eq!(prior_codes(&said), (vec![], vec!["W011"]));
    }

    #[test]
    fn created_dates_are_read_by_part() {
        let ok = parse_created("2019-01-01T02:03:04Z").unwrap();
        assert!(ok.zone && ok.seconds);
        let ok = parse_created("2019-01-01T02:03:04.123+01:00").unwrap();
        assert!(ok.zone && ok.seconds);
        let no_zone = parse_created("2019-01-01T02:03:04").unwrap();
        assert!(!no_zone.zone && no_zone.seconds);
        let no_secs = parse_created("2019-01-01T02:03Z").unwrap();
        assert!(no_secs.zone && !no_secs.seconds);
        for bad in [
            "",
            "2019-13-01T00:00:00Z",
            "yesterday",
            "2019-01-01T25:00:00Z",
            "2019-01-01 00:00:00Z",
            // Days the month does not have, offsets out of range, a 60th second that cannot
            // be a leap second, a time without a whole date.
            "2024-02-31T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-04-31",
            "2024-01-01T00:00:00+99:99",
            "2024-01-01T00:00:00-24:00",
            "2024-01-01T10:00:60Z",
            "2016-12-31T23:59:60",
            "2024-01T10:00Z",
            "2024T10:00Z",
        ] {
            assert!(parse_created(bad).is_err(), "{bad}");
        }
        for good in [
            "2024-02-29T00:00:00Z",
            "2016-12-31T23:59:60Z",
            "2015-06-30T23:59:60.5Z",
            // The same leap second in another zone.
            "2017-01-01T00:59:60+01:00",
            "2015-06-30T18:59:60-05:00",
            "2024-01-01T00:00:00+23:59",
            "2024",
            "2024-02",
        ] {
            assert!(parse_created(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn uris_and_addresses_are_told_from_plain_text() {
        assert!(looks_like_uri("info:fedora/x"));
        assert!(looks_like_uri("https://example.org/a"));
        assert!(!looks_like_uri("ark-123"));
        assert!(!looks_like_uri("1abc:x"));
        assert!(looks_like_address("mailto:a@b.org"));
        assert!(!looks_like_address("a@b.org"));
    }

    #[test]
    fn a_zero_padded_sequence_warns_and_a_gap_is_an_error() {
        let mut log = Log::default();
        let v: Value = serde_json::json!({"v001": {}, "v002": {}});
        assert_eq!(
            version_sequence(&v, b"inventory.json", &mut log),
            ["v001", "v002"]
        );
        assert_eq!(log.warnings[0].code, "W001");
        let mut log = Log::default();
        let v: Value = serde_json::json!({"v1": {}, "v3": {}});
        assert_eq!(version_sequence(&v, b"inventory.json", &mut log), ["v1"]);
        assert_eq!(log.errors[0].code, "E010");
    }
}
