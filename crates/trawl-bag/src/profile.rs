//! BagIt Profiles (specification 1.4.0): what a profile requires of a bag, read from its JSON,
//! and the bag's departures from it, each a finding naming the profile's field.
//!
//! A profile is a few dozen lines of JSON: read whole (a regular file of at most
//! [`PROFILE_MAX`] bytes, opened without blocking), with serde_json. The bag's tag files are
//! listed from its top (everything but `data/`), its payload from `data/`, names only; what is
//! neither a regular file nor a directory is listed apart, and meets no requirement.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use trawl_report::bag::BagFinding;
use trawl_walk::SkipKind;

use crate::{BagError, io_err};

/// The most of a profile file that is read (a profile is a few dozen lines of JSON): past it
/// the file is refused, naming the limit.
pub const PROFILE_MAX: u64 = 1 << 20;

/// One `Bag-Info` entry of a profile.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InfoRule {
    #[serde(default)]
    required: bool,
    /// The values allowed (None: any); an empty list allows none.
    #[serde(default)]
    values: Option<Vec<String>>,
    #[serde(default = "yes")]
    repeatable: bool,
    /// Present in a bag that follows the profile, though not required (specification 1.4.0):
    /// absent, it is said (a warning), not a departure.
    #[serde(default)]
    recommended: bool,
    /// What the element is for (specification 1.3.0): a string when present; a profile with
    /// another type here is refused.
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
}

fn yes() -> bool {
    true
}

/// A BagIt Profile: the fields of specification 1.4.0 that apply to a bag on disk.
#[derive(Debug, Clone, Deserialize)]
pub struct Profile {
    #[serde(rename = "BagIt-Profile-Info")]
    info: BTreeMap<String, serde_json::Value>,
    #[serde(rename = "Bag-Info", default)]
    bag_info: BTreeMap<String, InfoRule>,
    #[serde(rename = "Manifests-Required", default)]
    manifests_required: Vec<String>,
    #[serde(rename = "Manifests-Allowed", default)]
    manifests_allowed: Option<Vec<String>>,
    #[serde(rename = "Tag-Manifests-Required", default)]
    tag_manifests_required: Vec<String>,
    #[serde(rename = "Tag-Manifests-Allowed", default)]
    tag_manifests_allowed: Option<Vec<String>>,
    #[serde(rename = "Tag-Files-Required", default)]
    tag_files_required: Vec<String>,
    #[serde(rename = "Tag-Files-Allowed", default)]
    tag_files_allowed: Option<Vec<String>>,
    #[serde(rename = "Payload-Files-Required", default)]
    payload_files_required: Vec<String>,
    #[serde(rename = "Payload-Files-Allowed", default)]
    payload_files_allowed: Option<Vec<String>>,
    #[serde(rename = "Allow-Fetch.txt", default = "yes")]
    allow_fetch: bool,
    #[serde(rename = "Fetch.txt-Required", default)]
    fetch_required: bool,
    #[serde(rename = "Data-Empty", default)]
    data_empty: bool,
    #[serde(rename = "Serialization", default)]
    serialization: Option<String>,
    #[serde(rename = "Accept-Serialization", default)]
    accept_serialization: Option<Vec<String>>,
    #[serde(rename = "Accept-BagIt-Version")]
    accept_versions: Vec<String>,
}

impl Profile {
    /// Reads the profile at `path`: opened without blocking (a FIFO named here cannot hang
    /// the reader), a regular file only, at most 1 MiB, then parsed. Each
    /// refusal names the file and says why.
    pub fn read(path: &Path) -> Result<Profile, BagError> {
        use std::io::Read;
        let refused = |msg: String| BagError::Refused {
            path: path.to_path_buf(),
            msg,
        };
        let unread = |e: std::io::Error| refused(format!("cannot read the profile: {e}"));
        let file = trawl_read::open_in(None, path, 0).map_err(unread)?;
        let ft = file.metadata().map_err(unread)?.file_type();
        if ft.is_dir() {
            return Err(refused(
                "cannot read the profile: a directory, not a file".into(),
            ));
        }
        if !ft.is_file() {
            return Err(refused(format!(
                "cannot read the profile: {}",
                SkipKind::of(&ft).describe()
            )));
        }
        let mut json = Vec::new();
        file.take(PROFILE_MAX + 1)
            .read_to_end(&mut json)
            .map_err(unread)?;
        if json.len() as u64 > PROFILE_MAX {
            return Err(refused(format!(
                "cannot read the profile: larger than the {} MiB trawl reads for one; not read",
                PROFILE_MAX >> 20
            )));
        }
        Profile::parse(&json).map_err(|e| refused(format!("not a BagIt Profile: {e}")))
    }

    /// A profile from its JSON; what it lacks or holds wrongly is said.
    pub fn parse(json: &[u8]) -> Result<Profile, String> {
        let p: Profile = serde_json::from_slice(json).map_err(|e| e.to_string())?;
        match p.info.get("BagIt-Profile-Identifier") {
            None => return Err("BagIt-Profile-Info has no BagIt-Profile-Identifier".into()),
            Some(serde_json::Value::String(_)) => {}
            // The identifier is the profile's URI, which a bag names in its bag-info.txt.
            Some(v) => {
                return Err(format!(
                    "BagIt-Profile-Info's BagIt-Profile-Identifier is {v}, not a string (the profile's URI)"
                ));
            }
        }
        if let Some(s) = &p.serialization
            && !["required", "optional", "forbidden"].contains(&s.as_str())
        {
            return Err(format!(
                "Serialization is '{s}': expected required, optional or forbidden"
            ));
        }
        for (field, globs) in [
            ("Tag-Files-Allowed", &p.tag_files_allowed),
            ("Payload-Files-Allowed", &p.payload_files_allowed),
        ] {
            for g in globs.iter().flatten() {
                glob::Pattern::new(g).map_err(|e| format!("{field}: '{g}': {e}"))?;
            }
        }
        // A list of what is allowed holds at least what is required (specification 1.4.0).
        for (required, allowed, fields) in [
            (
                &p.manifests_required,
                &p.manifests_allowed,
                ("Manifests-Required", "Manifests-Allowed"),
            ),
            (
                &p.tag_manifests_required,
                &p.tag_manifests_allowed,
                ("Tag-Manifests-Required", "Tag-Manifests-Allowed"),
            ),
        ] {
            if let Some(allowed) = allowed
                && let Some(r) = required.iter().find(|r| !allowed.contains(r))
            {
                return Err(format!("{} '{r}' is not among {}", fields.0, fields.1));
            }
        }
        for (required, allowed, fields) in [
            (
                &p.tag_files_required,
                &p.tag_files_allowed,
                ("Tag-Files-Required", "Tag-Files-Allowed"),
            ),
            (
                &p.payload_files_required,
                &p.payload_files_allowed,
                ("Payload-Files-Required", "Payload-Files-Allowed"),
            ),
        ] {
            if let Some(globs) = allowed
                && let Some(r) = required.iter().find(|r| !matches_any(globs, r))
            {
                return Err(format!("{} '{r}' is not among {}", fields.0, fields.1));
            }
        }
        Ok(p)
    }

    /// `bag-info.txt`'s lines that a bag made to this profile gets besides `given` (the
    /// command line's): the profile's identifier as `BagIt-Profile-Identifier`, and each label
    /// the profile fixes (one allowed value) that `given` lacks. Labels are compared without
    /// case.
    pub fn fixed_info(&self, given: &[(String, String)]) -> Vec<(String, String)> {
        let has = |label: &str| given.iter().any(|(k, _)| k.eq_ignore_ascii_case(label));
        let mut out = Vec::new();
        if !has("BagIt-Profile-Identifier") {
            out.push(("BagIt-Profile-Identifier".to_string(), self.identifier()));
        }
        for (label, rule) in &self.bag_info {
            if let Some([only]) = rule.values.as_deref()
                && !has(label)
                && !label.eq_ignore_ascii_case("BagIt-Profile-Identifier")
            {
                out.push((label.clone(), only.clone()));
            }
        }
        out
    }

    /// Whether the profile says anything of the payload (`Payload-Files-Required`,
    /// `Payload-Files-Allowed`, `Data-Empty`): only then is a payload listed to check it.
    pub fn has_payload_rules(&self) -> bool {
        !self.payload_files_required.is_empty()
            || self.payload_files_allowed.is_some()
            || self.data_empty
    }

    /// The departures of a bag that `bag create` would make, before it makes it: BagIt 1.0,
    /// `info` as its bag-info.txt, manifests and tag manifests of `algorithms`, `tags` its other
    /// tag files, and `payload` (paths under `data/` with sizes) when known (None: the payload
    /// rules are not checked); and what it recommends that `info` lacks (warnings).
    pub fn check_planned(
        &self,
        info: &[(String, String)],
        algorithms: &[trawl_digest::Algorithm],
        tags: &[String],
        payload: Option<Vec<(String, u64)>>,
    ) -> ProfileCheck {
        let mut all_tags: Vec<String> = ["bagit.txt", "bag-info.txt"]
            .into_iter()
            .map(String::from)
            .chain(tags.iter().cloned())
            .collect();
        for a in algorithms {
            all_tags.push(format!("manifest-{}.txt", a.bagit_name()));
            all_tags.push(format!("tagmanifest-{}.txt", a.bagit_name()));
        }
        all_tags.sort();
        let seen = Seen {
            version: "1.0".into(),
            info: info.to_vec(),
            tags: all_tags,
            payload,
            special: Vec::new(),
        };
        ProfileCheck {
            departures: departures(self, &seen),
            warnings: recommendations(self, &seen),
        }
    }

    /// The profile's identifier (its `BagIt-Profile-Identifier`, a string: [`Profile::parse`]
    /// refuses a profile without one).
    pub fn identifier(&self) -> String {
        match self.info.get("BagIt-Profile-Identifier") {
            Some(serde_json::Value::String(s)) => s.clone(),
            _ => String::new(),
        }
    }
}

/// What a profile is checked against: the bag's declared version and `bag-info.txt`, and the
/// names of its files.
struct Seen {
    version: String,
    info: Vec<(String, String)>,
    /// Tag files, relative to the bag's top, `/`-separated.
    tags: Vec<String>,
    /// Payload files, `data/...`, with their sizes (None: not listed, and the payload's rules
    /// not checked).
    payload: Option<Vec<(String, u64)>>,
    /// What is neither a regular file nor a directory (a FIFO, a device, a link), anywhere in
    /// the bag, with what it is: no tag or payload file, but present.
    special: Vec<(String, SkipKind)>,
}

impl Seen {
    /// What `name` is when it is present but not a regular file.
    fn special(&self, name: &str) -> Option<SkipKind> {
        self.special
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, k)| *k)
    }
}

/// The MIME type of a serialized bag, from its first bytes (the formats BagIt Profiles name).
/// Hand-written: five signatures, where a detection library would bring hundreds.
fn serialized_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        Some("application/zip")
    } else if head.starts_with(&[0x1f, 0x8b]) {
        Some("application/gzip")
    } else if head.starts_with(b"7z\xbc\xaf\x27\x1c") {
        Some("application/x-7z-compressed")
    } else if head.get(257..262) == Some(b"ustar") {
        Some("application/x-tar")
    } else {
        None
    }
}

/// A serialized bag (a file, not a directory) against `profile`'s `Serialization` and
/// `Accept-Serialization`: its type, from its first bytes, and the departures. Its content is
/// not read (trawl validates bags as directories).
pub fn check_serialized(
    file: &Path,
    profile: &Profile,
) -> Result<(String, Vec<BagFinding>), BagError> {
    use std::io::Read;
    let mut head = Vec::new();
    // Never waiting: a name swapped for a FIFO since it was found to be a file is not read.
    trawl_read::open_in(None, file, 0)
        .and_then(|f| f.take(512).read_to_end(&mut head))
        .map_err(io_err(file))?;
    let kind = serialized_type(&head);
    let shown = kind.unwrap_or("an unknown type").to_string();
    let mut out = Vec::new();
    let mut say = |field: &str, what: String| {
        out.push(BagFinding::about(
            "profile",
            format!("{field}: {what} ({})", profile.identifier()),
        ))
    };
    if profile.serialization.as_deref() == Some("forbidden") {
        say(
            "Serialization",
            format!("forbidden, and the bag is a file ({shown})"),
        );
    }
    if let Some(accepted) = &profile.accept_serialization
        && !kind.is_some_and(|k| accepted.iter().any(|a| a == k))
    {
        say(
            "Accept-Serialization",
            format!(
                "the bag is {shown}, the profile accepts {}",
                accepted.join(", ")
            ),
        );
    }
    Ok((shown, out))
}

/// What holding a bag to a profile found: its departures (each an error), and what the
/// profile recommends that the bag lacks (each a warning).
#[derive(Debug, Default)]
pub struct ProfileCheck {
    /// Each departure from the profile, naming the field.
    pub departures: Vec<BagFinding>,
    /// Each `Bag-Info` label the profile recommends (`"recommended": true`) that the bag lacks.
    pub warnings: Vec<BagFinding>,
}

/// The bag at `root` against `profile`: one finding per departure, naming the field.
pub fn check_profile(root: &Path, profile: &Profile) -> Result<Vec<BagFinding>, BagError> {
    Ok(hold_to_profile(root, profile)?.departures)
}

/// The bag at `root` against `profile`: its departures, and what the profile recommends that
/// it lacks.
pub fn hold_to_profile(root: &Path, profile: &Profile) -> Result<ProfileCheck, BagError> {
    let seen = seen(root)?;
    Ok(ProfileCheck {
        departures: departures(profile, &seen),
        warnings: recommendations(profile, &seen),
    })
}

/// Each `Bag-Info` label the profile recommends that the bag's bag-info.txt lacks.
fn recommendations(p: &Profile, s: &Seen) -> Vec<BagFinding> {
    p.bag_info
        .iter()
        .filter(|(label, rule)| {
            rule.recommended
                && !rule.required
                && !s.info.iter().any(|(k, _)| k.eq_ignore_ascii_case(label))
        })
        .map(|(label, _)| {
            BagFinding::about(
                "profile",
                format!(
                    "Bag-Info: '{label}' is recommended and absent ({})",
                    p.identifier()
                ),
            )
        })
        .collect()
}

fn seen(root: &Path) -> Result<Seen, BagError> {
    let dir = trawl_read::RootDir::open(root).map_err(io_err(root))?;
    // Read as validation reads them: beneath the bag, never blocking, capped.
    let text = |name: &str| -> Result<Option<String>, BagError> {
        Ok(crate::validate::read_tag(root, &dir, name)?
            .map(|b| String::from_utf8_lossy(&b).into_owned()))
    };
    let labels = |t: Option<String>| {
        t.and_then(|t| crate::tagfile::parse_labels(&t).ok())
            .unwrap_or_default()
    };
    let declared = labels(text("bagit.txt")?);
    let version = declared
        .iter()
        .find(|(k, _)| k == "BagIt-Version")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let info = labels(text("bag-info.txt")?);
    let mut s = Seen {
        version,
        info,
        tags: Vec::new(),
        payload: Some(Vec::new()),
        special: Vec::new(),
    };
    list(root, root, &mut s)?;
    s.tags.sort();
    if let Some(p) = s.payload.as_mut() {
        p.sort();
    }
    s.special.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(s)
}

/// Every entry under `dir`, as names relative to `root`: regular files under `data/` into the
/// payload (with sizes), the others into the tags; what is neither a file nor a directory into
/// `special`. Links are not followed.
fn list(root: &Path, dir: &Path, s: &mut Seen) -> Result<(), BagError> {
    for e in std::fs::read_dir(dir).map_err(io_err(dir))? {
        let e = e.map_err(io_err(dir))?;
        let p = e.path();
        let ft = e.file_type().map_err(io_err(&p))?;
        let rel = p
            .strip_prefix(root)
            .unwrap_or(&p)
            .to_string_lossy()
            .into_owned();
        if ft.is_dir() {
            list(root, &p, s)?;
        } else if !ft.is_file() {
            s.special.push((rel, SkipKind::of(&ft)));
        } else if rel.starts_with("data/") {
            let size = e.metadata().map_err(io_err(&p))?.len();
            s.payload.get_or_insert_default().push((rel, size));
        } else {
            s.tags.push(rel);
        }
    }
    Ok(())
}

/// The algorithms of the manifests named `{prefix}-ALG.txt` among the tag files.
fn manifest_algorithms<'a>(tags: &'a [String], prefix: &str) -> Vec<&'a str> {
    tags.iter()
        .filter_map(|t| t.strip_prefix(prefix)?.strip_suffix(".txt"))
        .filter(|a| !a.contains('/'))
        .collect()
}

fn departures(p: &Profile, s: &Seen) -> Vec<BagFinding> {
    let mut out = Vec::new();
    let mut say = |field: &str, what: String| {
        out.push(BagFinding::about(
            "profile",
            format!("{field}: {what} ({})", p.identifier()),
        ))
    };
    // The bag names the profile it follows (as the profiles' own validator requires).
    let id = p.identifier();
    let named: Vec<&str> = s
        .info
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("BagIt-Profile-Identifier"))
        .map(|(_, v)| v.as_str())
        .collect();
    if named.is_empty() {
        say(
            "BagIt-Profile-Identifier",
            "bag-info.txt does not name the profile".into(),
        );
    } else if named.len() > 1 {
        // A bag follows one profile: with two lines (this one's among them) which one is
        // left unsaid.
        say(
            "BagIt-Profile-Identifier",
            format!(
                "bag-info.txt has {} BagIt-Profile-Identifier lines ('{}'); a bag names the one profile it follows",
                named.len(),
                named.join("', '")
            ),
        );
    } else if !named.contains(&id.as_str()) {
        say(
            "BagIt-Profile-Identifier",
            format!("bag-info.txt names '{}'", named.join("', '")),
        );
    }
    if !p.accept_versions.contains(&s.version) {
        say(
            "Accept-BagIt-Version",
            format!(
                "the bag is version '{}', the profile accepts {}",
                s.version,
                p.accept_versions.join(", ")
            ),
        );
    }
    for (label, rule) in &p.bag_info {
        let values: Vec<&str> = s
            .info
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(label))
            .map(|(_, v)| v.as_str())
            .collect();
        if rule.required && values.is_empty() {
            say("Bag-Info", format!("'{label}' is required and absent"));
        }
        if !rule.repeatable && values.len() > 1 {
            say(
                "Bag-Info",
                format!(
                    "'{label}' is not repeatable and appears {} times",
                    values.len()
                ),
            );
        }
        if let Some(allowed) = &rule.values {
            for v in values.iter().filter(|v| !allowed.iter().any(|a| a == *v)) {
                let what = if allowed.is_empty() {
                    "the profile allows no value (its values list is empty)".to_string()
                } else {
                    format!("not one of {}", allowed.join(", "))
                };
                say("Bag-Info", format!("'{label}' is '{v}', {what}"));
            }
        }
    }
    for (field_req, field_allowed, prefix, required, allowed) in [
        (
            "Manifests-Required",
            "Manifests-Allowed",
            "manifest-",
            &p.manifests_required,
            &p.manifests_allowed,
        ),
        (
            "Tag-Manifests-Required",
            "Tag-Manifests-Allowed",
            "tagmanifest-",
            &p.tag_manifests_required,
            &p.tag_manifests_allowed,
        ),
    ] {
        let have = manifest_algorithms(&s.tags, prefix);
        for a in required.iter().filter(|a| !have.contains(&a.as_str())) {
            say(field_req, format!("no {prefix}{a}.txt"));
        }
        if let Some(allowed) = allowed {
            for a in have.iter().filter(|a| !allowed.iter().any(|x| x == *a)) {
                say(field_allowed, format!("{prefix}{a}.txt is not allowed"));
            }
        }
    }
    let fetch = s.tags.iter().any(|t| t == "fetch.txt");
    if fetch && !p.allow_fetch {
        say("Allow-Fetch.txt", "the bag has a fetch.txt".into());
    }
    if !fetch && p.fetch_required {
        say("Fetch.txt-Required", "the bag has no fetch.txt".into());
    }
    if p.serialization.as_deref() == Some("required") {
        say(
            "Serialization",
            "the profile requires a serialized bag; this is a directory".into(),
        );
    }
    // A name that is there but no regular file (a FIFO) is no tag or payload file.
    let absent = |name: &str| match s.special(name) {
        Some(SkipKind::Symlink) => format!("{name} is a symbolic link, not a regular file"),
        Some(k) => format!(
            "{name} is a {}, not a regular file",
            k.describe().trim_end_matches(", not read")
        ),
        None => format!("no {name}"),
    };
    for t in p.tag_files_required.iter().filter(|t| !s.tags.contains(t)) {
        say("Tag-Files-Required", absent(t));
    }
    if let Some(globs) = &p.tag_files_allowed {
        // The files every bag may hold are allowed (those the profile requires are among its
        // globs: a profile where they are not is refused).
        let implicit = |t: &str| {
            ["bagit.txt", "bag-info.txt", "fetch.txt"].contains(&t)
                || !manifest_algorithms(&[t.to_string()], "manifest-").is_empty()
                || !manifest_algorithms(&[t.to_string()], "tagmanifest-").is_empty()
        };
        let tags = s.tags.iter().chain(
            s.special
                .iter()
                .map(|(n, _)| n)
                .filter(|n| !n.starts_with("data/")),
        );
        for t in tags.filter(|t| !implicit(t) && !matches_any(globs, t)) {
            say("Tag-Files-Allowed", format!("{t} is not allowed"));
        }
    }
    // The payload's rules, when it was listed.
    let Some(payload) = &s.payload else {
        return out;
    };
    for f in &p.payload_files_required {
        if !payload.iter().any(|(n, _)| n == f) {
            say("Payload-Files-Required", absent(f));
        }
    }
    if let Some(globs) = &p.payload_files_allowed {
        let payload = payload.iter().map(|(n, _)| n).chain(
            s.special
                .iter()
                .map(|(n, _)| n)
                .filter(|n| n.starts_with("data/")),
        );
        for f in payload.filter(|f| !matches_any(globs, f)) {
            say("Payload-Files-Allowed", format!("{f} is not allowed"));
        }
    }
    // Data-Empty (specification 1.4.0): no file at all, or a single file of zero bytes.
    let others = s
        .special
        .iter()
        .filter(|(n, _)| n.starts_with("data/"))
        .count();
    let empty = others == 0 && (payload.is_empty() || (payload.len() == 1 && payload[0].1 == 0));
    if p.data_empty && !empty {
        let mut holds = format!(
            "{} files of {} bytes",
            payload.len(),
            payload.iter().map(|(_, n)| n).sum::<u64>()
        );
        if others > 0 {
            holds.push_str(&format!(" and {others} entries that are not regular files"));
        }
        say(
            "Data-Empty",
            format!("data/ must hold no file or one empty file; it holds {holds}"),
        );
    }
    out
}

fn matches_any(globs: &[String], name: &str) -> bool {
    let opts = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    globs.iter().any(|g| {
        glob::Pattern::new(g).is_ok_and(|p| p.matches_with(name, opts))
            // `dir/*` in a profile means everything below dir/, as the validators read it.
            || g.strip_suffix("/*").is_some_and(|d| name.starts_with(&format!("{d}/")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bag of one payload file, with a sha256 manifest and tag manifest, and bag-info.txt.
    fn bag() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        std::fs::create_dir_all(r.join("data/sub")).unwrap();
        std::fs::write(r.join("data/sub/a.txt"), b"abc").unwrap();
        std::fs::write(
            r.join("bagit.txt"),
            "BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n",
        )
        .unwrap();
        std::fs::write(
            r.join("bag-info.txt"),
            "Source-Organization: Example\nContact-Name: A\nContact-Name: B\nBagIt-Profile-Identifier: http://x/p.json\n",
        )
        .unwrap();
        std::fs::write(r.join("manifest-sha256.txt"), "ba78  data/sub/a.txt\n").unwrap();
        std::fs::write(r.join("tagmanifest-sha256.txt"), "00  bagit.txt\n").unwrap();
        t
    }

    /// The base profile, which the bag meets, with `extra` fields added or replaced.
    fn profile(extra: &str) -> Profile {
        let mut v: serde_json::Value = serde_json::from_str(
            r#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "http://x/p.json",
                 "Source-Organization": "x", "External-Description": "d", "Version": "1",
                 "BagIt-Profile-Version": "1.4.0"},
                "Accept-BagIt-Version": ["0.97", "1.0"]}"#,
        )
        .unwrap();
        let e: serde_json::Value = serde_json::from_str(extra).unwrap();
        for (k, x) in e.as_object().unwrap() {
            v[k] = x.clone();
        }
        Profile::parse(v.to_string().as_bytes()).unwrap()
    }

    /// The departures of the test bag from the base profile plus `extra`, as "FIELD: what".
    fn found(t: &tempfile::TempDir, extra: &str) -> Vec<String> {
        check_profile(t.path(), &profile(extra))
            .unwrap()
            .into_iter()
            .map(|f| f.message)
            .collect()
    }

    fn one(t: &tempfile::TempDir, extra: &str, field: &str) {
        let f = found(t, extra);
        assert_eq!(f.len(), 1, "{extra}: {f:?}");
        assert!(f[0].starts_with(&format!("{field}: ")), "{extra}: {f:?}");
        assert!(f[0].ends_with("(http://x/p.json)"), "{f:?}");
    }

    #[test]
    fn a_bag_that_meets_every_field_has_no_departure() {
        let t = bag();
        let all = r#"{"Bag-Info": {"Source-Organization": {"required": true, "values": ["Example"]},
                       "Contact-Name": {"required": true}},
                      "Manifests-Required": ["sha256"], "Manifests-Allowed": ["sha256", "sha512"],
                      "Tag-Manifests-Required": ["sha256"], "Tag-Manifests-Allowed": ["sha256"],
                      "Tag-Files-Required": [], "Tag-Files-Allowed": [],
                      "Payload-Files-Required": ["data/sub/a.txt"], "Payload-Files-Allowed": ["data/sub/*"],
                      "Allow-Fetch.txt": false, "Fetch.txt-Required": false, "Data-Empty": false,
                      "Serialization": "optional", "Accept-Serialization": ["application/zip"]}"#;
        assert_eq!(found(&t, all), Vec::<String>::new());
    }

    #[test]
    fn each_field_is_checked() {
        let t = bag();
        one(
            &t,
            r#"{"Accept-BagIt-Version": ["0.97"]}"#,
            "Accept-BagIt-Version",
        );
        one(
            &t,
            r#"{"Bag-Info": {"External-Identifier": {"required": true}}}"#,
            "Bag-Info",
        );
        one(
            &t,
            r#"{"Bag-Info": {"Source-Organization": {"values": ["Other"]}}}"#,
            "Bag-Info",
        );
        one(
            &t,
            r#"{"Bag-Info": {"Contact-Name": {"repeatable": false}}}"#,
            "Bag-Info",
        );
        one(
            &t,
            r#"{"Manifests-Required": ["sha512"]}"#,
            "Manifests-Required",
        );
        one(&t, r#"{"Manifests-Allowed": ["md5"]}"#, "Manifests-Allowed");
        one(
            &t,
            r#"{"Tag-Manifests-Required": ["md5"]}"#,
            "Tag-Manifests-Required",
        );
        one(
            &t,
            r#"{"Tag-Manifests-Allowed": ["md5"]}"#,
            "Tag-Manifests-Allowed",
        );
        one(
            &t,
            r#"{"Tag-Files-Required": ["DPN/dpnFirstNode.txt"]}"#,
            "Tag-Files-Required",
        );
        one(&t, r#"{"Fetch.txt-Required": true}"#, "Fetch.txt-Required");
        one(&t, r#"{"Serialization": "required"}"#, "Serialization");
        one(
            &t,
            r#"{"Payload-Files-Required": ["data/b.txt"]}"#,
            "Payload-Files-Required",
        );
        one(
            &t,
            r#"{"Payload-Files-Allowed": ["data/*.csv"]}"#,
            "Payload-Files-Allowed",
        );
        one(&t, r#"{"Data-Empty": true}"#, "Data-Empty");
        // A tag file the profile does not allow, and one it does.
        std::fs::create_dir(t.path().join("meta")).unwrap();
        std::fs::write(t.path().join("meta/x.xml"), b"<x/>").unwrap();
        one(
            &t,
            r#"{"Tag-Files-Allowed": ["other/*"]}"#,
            "Tag-Files-Allowed",
        );
        assert!(found(&t, r#"{"Tag-Files-Allowed": ["meta/*"]}"#).is_empty());
        // fetch.txt where the profile forbids one.
        std::fs::write(t.path().join("fetch.txt"), b"http://a/b 3 data/b\n").unwrap();
        one(&t, r#"{"Allow-Fetch.txt": false}"#, "Allow-Fetch.txt");
        assert!(found(&t, r#"{"Fetch.txt-Required": true}"#).is_empty());
    }

    #[test]
    fn the_bag_names_the_profile_it_follows() {
        let t = bag();
        let info = t.path().join("bag-info.txt");
        std::fs::write(
            &info,
            "Source-Organization: Example\nBagIt-Profile-Identifier: http://y/other.json\n",
        )
        .unwrap();
        one(&t, "{}", "BagIt-Profile-Identifier");
        std::fs::write(&info, "Source-Organization: Example\n").unwrap();
        one(&t, "{}", "BagIt-Profile-Identifier");
        std::fs::remove_file(&info).unwrap();
        one(&t, "{}", "BagIt-Profile-Identifier");
    }

    /// Data-Empty: no file, or one file of zero bytes; one byte, or a second empty file, is a
    /// departure.
    #[test]
    fn a_data_empty_bag_holds_no_file_or_one_empty_file() {
        let t = bag();
        let data = t.path().join("data");
        std::fs::remove_dir_all(&data).unwrap();
        std::fs::create_dir(&data).unwrap();
        assert!(found(&t, r#"{"Data-Empty": true}"#).is_empty());
        std::fs::write(data.join(".keep"), b"").unwrap();
        assert!(found(&t, r#"{"Data-Empty": true}"#).is_empty());
        std::fs::write(data.join(".keep"), b"x").unwrap();
        one(&t, r#"{"Data-Empty": true}"#, "Data-Empty");
        std::fs::write(data.join(".keep"), b"").unwrap();
        std::fs::write(data.join(".keep2"), b"").unwrap();
        one(&t, r#"{"Data-Empty": true}"#, "Data-Empty");
    }

    /// `"values": []` allows no value: a value present is a departure (as the python validator
    /// has it); an absent label is not.
    #[test]
    fn an_empty_list_of_values_allows_none() {
        let t = bag();
        let f = found(
            &t,
            r#"{"Bag-Info": {"Source-Organization": {"values": []}}}"#,
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].starts_with("Bag-Info: 'Source-Organization' is 'Example'")
                && f[0].contains("allows no value"),
            "{f:?}"
        );
        assert!(
            found(
                &t,
                r#"{"Bag-Info": {"External-Identifier": {"values": []}}}"#
            )
            .is_empty()
        );
    }

    /// A bag-info.txt that names two profiles (the profile's and another) is a departure, as
    /// it is when it names only another.
    #[test]
    fn a_bag_that_names_two_profiles_is_a_departure() {
        let t = bag();
        std::fs::write(
            t.path().join("bag-info.txt"),
            "Source-Organization: Example\nBagIt-Profile-Identifier: http://x/p.json\n\
             BagIt-Profile-Identifier: http://y/other.json\n",
        )
        .unwrap();
        let f = found(&t, "{}");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].starts_with(
                "BagIt-Profile-Identifier: bag-info.txt has 2 BagIt-Profile-Identifier lines"
            ) && f[0].contains("http://y/other.json"),
            "{f:?}"
        );
    }

    /// A profile's own identifier is a string (a URI): a number is refused, naming the field.
    #[test]
    fn a_profile_identifier_that_is_not_a_string_is_refused() {
        let json = br#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": 42},
                        "Accept-BagIt-Version": ["1.0"]}"#;
        let e = Profile::parse(json).unwrap_err();
        assert!(
            e.contains("BagIt-Profile-Identifier") && e.contains("42") && e.contains("string"),
            "{e}"
        );
    }

    /// A FIFO among the tag files does not count as the tag file a profile requires, and one
    /// under data/ leaves it not empty.
    #[test]
    fn a_fifo_is_not_a_tag_or_payload_file() {
        let t = bag();
        let fifo = |p: &Path| {
            let st = std::process::Command::new("mkfifo")
                .arg(p)
                .status()
                .unwrap();
            assert!(st.success());
        };
        fifo(&t.path().join("extra.txt"));
        let f = found(&t, r#"{"Tag-Files-Required": ["extra.txt"]}"#);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].starts_with("Tag-Files-Required: extra.txt is a FIFO"),
            "{f:?}"
        );
        std::fs::remove_file(t.path().join("extra.txt")).unwrap();
        let data = t.path().join("data");
        std::fs::remove_dir_all(&data).unwrap();
        std::fs::create_dir(&data).unwrap();
        fifo(&data.join("pipe"));
        one(&t, r#"{"Data-Empty": true}"#, "Data-Empty");
    }

    /// The validator's own cases for Tag-Files-Allowed: not given (valid), an existing tag file
    /// not allowed (one departure), a required one not allowed (the profile contradicts
    /// itself: refused, naming both fields).
    #[test]
    fn tag_files_allowed_as_the_python_validator_tests_it() {
        let t = bag();
        assert!(found(&t, "{}").is_empty());
        std::fs::write(t.path().join("tag-foo"), b"").unwrap();
        let f = found(&t, r#"{"Tag-Files-Allowed": []}"#);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].starts_with("Tag-Files-Allowed: tag-foo is not allowed"),
            "{f:?}"
        );
        let contradicts = br#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "x"},
            "Accept-BagIt-Version": ["1.0"], "Tag-Files-Allowed": [], "Tag-Files-Required": ["tag-foo"]}"#;
        let e = Profile::parse(contradicts).unwrap_err();
        assert!(
            e.contains("Tag-Files-Required 'tag-foo' is not among Tag-Files-Allowed"),
            "{e}"
        );
        let manifests = br#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "x"},
            "Accept-BagIt-Version": ["1.0"], "Manifests-Required": ["sha512"], "Manifests-Allowed": ["sha256"]}"#;
        assert!(
            Profile::parse(manifests)
                .unwrap_err()
                .contains("Manifests-Required 'sha512'")
        );
    }

    /// The bagit-profiles-validator's own cases (its test.py), rebuilt: Bag-Info labels, tag
    /// descriptions, manifests allowed and required. Where trawl differs it says so.
    #[test]
    fn the_python_validator_s_cases() {
        let t = bag();
        // Labels: the same case always matches; another case matches too (RFC 8493 labels
        // are compared without case, as the validator's ignore_baginfo_tag_case=True).
        for label in ["BagIt-Profile-Identifier", "BAGIT-PROFILE-IDENTIFIER"] {
            let extra = format!(r#"{{"Bag-Info": {{"{label}": {{"required": true}}}}}}"#);
            assert!(found(&t, &extra).is_empty(), "{label}");
        }
        // A tag's description is a string, when present.
        for bad in ["false", "0"] {
            let json = format!(
                r#"{{"BagIt-Profile-Info": {{"BagIt-Profile-Identifier": "x"}}, "Accept-BagIt-Version": ["1.0"],
                    "Bag-Info": {{"FakeTag": {{"description": {bad}}}}}}}"#
            );
            assert!(Profile::parse(json.as_bytes()).is_err(), "{bad}");
        }
        assert!(
            found(
                &t,
                r#"{"Bag-Info": {"FakeTag": {"description": "some string"}}}"#
            )
            .is_empty()
        );
        // Required not among allowed: the validator reports one error, trawl refuses the
        // profile (it contradicts itself), naming both fields.
        for (req, allowed) in [
            ("Manifests-Required", "Manifests-Allowed"),
            ("Tag-Manifests-Required", "Tag-Manifests-Allowed"),
        ] {
            let json = format!(
                r#"{{"BagIt-Profile-Info": {{"BagIt-Profile-Identifier": "x"}}, "Accept-BagIt-Version": ["1.0"],
                    "{allowed}": ["foo"], "{req}": ["sha256"]}}"#
            );
            let e = Profile::parse(json.as_bytes()).unwrap_err();
            assert!(e.contains(req) && e.contains(allowed), "{e}");
        }
        // A manifest the profile does not allow: one departure each.
        one(
            &t,
            r#"{"Manifests-Allowed": ["foo"], "Manifests-Required": []}"#,
            "Manifests-Allowed",
        );
        one(
            &t,
            r#"{"Tag-Manifests-Allowed": ["foo"], "Tag-Manifests-Required": []}"#,
            "Tag-Manifests-Allowed",
        );
        // More allowed than required: valid.
        assert!(
            found(
                &t,
                r#"{"Manifests-Allowed": ["sha256", "sha512"], "Manifests-Required": ["sha256"]}"#
            )
            .is_empty()
        );
        assert!(found(&t, r#"{"Tag-Manifests-Allowed": ["sha256", "sha512"], "Tag-Manifests-Required": ["sha256"]}"#).is_empty());
    }

    /// The validator's "bar" case: a BagIt 0.96 bag with md5 manifests, DPN tag files and the
    /// bag-info values its profile (bagProfileBar.json, rebuilt here) asks for, valid as a
    /// directory (Serialization optional); then each rule broken once.
    #[test]
    fn the_python_validator_s_bar_bag_and_profile() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        std::fs::create_dir_all(r.join("data")).unwrap();
        std::fs::create_dir_all(r.join("DPN")).unwrap();
        std::fs::write(r.join("data/photo.jpg"), b"jpeg").unwrap();
        std::fs::write(r.join("DPN/dpnFirstNode.txt"), b"node").unwrap();
        std::fs::write(r.join("DPN/dpnRegistry"), b"reg").unwrap();
        std::fs::write(
            r.join("bagit.txt"),
            "BagIt-Version: 0.96\nTag-File-Character-Encoding: UTF-8\n",
        )
        .unwrap();
        let info = "Bag-Count: 1/1\nBag-Size: 1.6M\nBagging-Date: 2012-12-06\nContact-Email: ruestn@yorku.ca\n\
                    Contact-Name: Nick Ruest\nExternal-Description: Sample BagBar for testing\n\
                    Organization-Address: 4700 Keele Street Toronto, Ontario M3J 1P3 Canada\n\
                    Payload-Oxum: 4.1\nSource-Organization: York University\n\
                    BagIt-Profile-Identifier: http://canadiana.org/standards/bagit/tdr_ingest.json\n";
        std::fs::write(r.join("bag-info.txt"), info).unwrap();
        std::fs::write(r.join("manifest-md5.txt"), "x  data/photo.jpg\n").unwrap();
        std::fs::write(r.join("tagmanifest-md5.txt"), "x  bagit.txt\n").unwrap();
        let bar = r#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "http://canadiana.org/standards/bagit/tdr_ingest.json",
              "BagIt-Profile-Version": "1.2.0", "Source-Organization": "Candiana.org", "Version": "1.2"},
            "Bag-Info": {
              "Source-Organization": {"required": true, "values": ["Simon Fraser University", "York University"]},
              "Organization-Address": {"required": true, "values": ["8888 University Drive Burnaby, B.C. V5A 1S6 Canada",
                                                                    "4700 Keele Street Toronto, Ontario M3J 1P3 Canada"]},
              "Contact-Name": {"required": true, "values": ["Mark Jordan", "Nick Ruest"]},
              "Contact-Phone": {"required": false}, "Contact-Email": {"required": true},
              "External-Description": {"required": true}, "External-Identifier": {"required": false},
              "Bag-Size": {"required": true}, "Bag-Group-Identifier": {"required": false},
              "Bag-Count": {"required": true}, "Internal-Sender-Identifier": {"required": false},
              "Internal-Sender-Description": {"required": false}, "Bagging-Date": {"required": true},
              "Payload-Oxum": {"required": true}},
            "Manifests-Required": ["md5"], "Allow-Fetch.txt": false, "Serialization": "optional",
            "Accept-Serialization": ["application/zip"], "Tag-Manifests-Required": ["md5"],
            "Tag-Files-Allowed": ["DPN/*"], "Tag-Files-Required": ["DPN/dpnFirstNode.txt", "DPN/dpnRegistry"],
            "Accept-BagIt-Version": ["0.96"]}"#;
        let p = Profile::parse(bar.as_bytes()).unwrap();
        let departures = |p: &Profile| -> Vec<String> {
            check_profile(r, p)
                .unwrap()
                .into_iter()
                .map(|f| f.message)
                .collect()
        };
        assert_eq!(departures(&p), Vec::<String>::new());
        // Each broken once.
        std::fs::write(r.join("fetch.txt"), "http://a/b 3 data/b\n").unwrap();
        let f = departures(&p);
        assert!(
            f.len() == 1 && f[0].starts_with("Allow-Fetch.txt: "),
            "{f:?}"
        );
        std::fs::remove_file(r.join("fetch.txt")).unwrap();
        std::fs::remove_file(r.join("DPN/dpnRegistry")).unwrap();
        let f = departures(&p);
        assert!(
            f.len() == 1 && f[0].starts_with("Tag-Files-Required: "),
            "{f:?}"
        );
        std::fs::write(r.join("DPN/dpnRegistry"), b"reg").unwrap();
        std::fs::write(
            r.join("bag-info.txt"),
            info.replace("York University", "Elsewhere"),
        )
        .unwrap();
        let f = departures(&p);
        assert!(
            f.len() == 1 && f[0].starts_with("Bag-Info: 'Source-Organization' is 'Elsewhere'"),
            "{f:?}"
        );
        std::fs::write(r.join("bag-info.txt"), info.replace("Bag-Count: 1/1\n", "")).unwrap();
        let f = departures(&p);
        assert!(
            f.len() == 1 && f[0].starts_with("Bag-Info: 'Bag-Count' is required"),
            "{f:?}"
        );
    }

    /// A serialized bag is held to Serialization and Accept-Serialization by its type.
    #[test]
    fn a_serialized_bag_is_held_to_the_accepted_serializations() {
        let t = tempfile::tempdir().unwrap();
        let zip = t.path().join("b.zip");
        std::fs::write(&zip, b"PK\x03\x04rest").unwrap();
        let mut tar = vec![0u8; 512];
        tar[257..262].copy_from_slice(b"ustar");
        let tarf = t.path().join("b.tar");
        std::fs::write(&tarf, &tar).unwrap();
        let p = profile(
            r#"{"Serialization": "optional", "Accept-Serialization": ["application/zip"]}"#,
        );
        let (kind, f) = check_serialized(&zip, &p).unwrap();
        assert_eq!((kind.as_str(), f.len()), ("application/zip", 0));
        let (kind, f) = check_serialized(&tarf, &p).unwrap();
        assert_eq!(kind, "application/x-tar");
        assert!(
            f.len() == 1
                && f[0]
                    .message
                    .starts_with("Accept-Serialization: the bag is application/x-tar"),
            "{f:?}"
        );
        let p = profile(r#"{"Serialization": "forbidden"}"#);
        let (_, f) = check_serialized(&zip, &p).unwrap();
        assert!(
            f.len() == 1 && f[0].message.starts_with("Serialization: forbidden"),
            "{f:?}"
        );
        // A list of types, or refused.
        let bad = br#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "x"},
                       "Accept-BagIt-Version": ["1.0"], "Accept-Serialization": "application/zip"}"#;
        assert!(Profile::parse(bad).is_err());
    }

    /// What a profile fixes goes into a new bag's bag-info.txt (its identifier, each label of
    /// one allowed value the command line lacks); a label the command line gives is left to it.
    #[test]
    fn a_profile_fixes_its_identifier_and_each_label_of_one_value() {
        let p = profile(
            r#"{"Bag-Info": {"Source-Organization": {"required": true, "values": ["Archive"]},
                             "Contact-Name": {"values": ["A", "B"]},
                             "Bag-Group-Identifier": {"values": ["g"]}}}"#,
        );
        let given = vec![("bag-group-identifier".to_string(), "mine".to_string())];
        assert_eq!(
            p.fixed_info(&given),
            vec![
                (
                    "BagIt-Profile-Identifier".to_string(),
                    "http://x/p.json".to_string()
                ),
                ("Source-Organization".to_string(), "Archive".to_string()),
            ]
        );
    }

    /// A recommended label the bag lacks is a warning, never a departure; a bag planned with no
    /// payload listed is not held to the payload's rules, and is once it is listed.
    #[test]
    fn recommended_labels_warn_and_a_planned_bag_s_payload_is_checked_when_listed() {
        let t = bag();
        let p = profile(r#"{"Bag-Info": {"Contact-Phone": {"recommended": true}}}"#);
        let held = hold_to_profile(t.path(), &p).unwrap();
        assert!(held.departures.is_empty(), "{:?}", held.departures);
        assert_eq!(held.warnings.len(), 1);
        assert_eq!(
            held.warnings[0].message,
            "Bag-Info: 'Contact-Phone' is recommended and absent (http://x/p.json)"
        );
        let p = profile(r#"{"Payload-Files-Required": ["data/must"]}"#);
        let info = p.fixed_info(&[]);
        let algs = [trawl_digest::Algorithm::Sha256];
        assert!(
            p.check_planned(&info, &algs, &[], None)
                .departures
                .is_empty()
        );
        let listed = Some(vec![("data/other".to_string(), 3)]);
        let d = p.check_planned(&info, &algs, &[], listed).departures;
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(
            d[0].message
                .starts_with("Payload-Files-Required: no data/must")
        );
    }

    #[test]
    fn a_profile_without_what_it_must_say_is_refused() {
        let no_id = br#"{"BagIt-Profile-Info": {}, "Accept-BagIt-Version": ["1.0"]}"#;
        assert!(
            Profile::parse(no_id)
                .unwrap_err()
                .contains("BagIt-Profile-Identifier")
        );
        let no_versions = br#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "x"}}"#;
        assert!(
            Profile::parse(no_versions)
                .unwrap_err()
                .contains("Accept-BagIt-Version")
        );
        let bad = br#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "x"},
                       "Accept-BagIt-Version": ["1.0"], "Serialization": "sometimes"}"#;
        assert!(Profile::parse(bad).unwrap_err().contains("Serialization"));
    }
}
