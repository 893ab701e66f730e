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
use trawl_report::BagFinding;
use trawl_walk::SkipKind;

use crate::{BagError, io_err};

mod departures;
mod globs;

use departures::departures;
use globs::Globs;

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
    /// `Tag-Files-Allowed` compiled (by [`Profile::parse`]).
    #[serde(skip)]
    tag_globs: Globs,
    /// `Payload-Files-Allowed` compiled (by [`Profile::parse`]).
    #[serde(skip)]
    payload_globs: Globs,
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
        let file = trawl_read::open_in(None, path, 0).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound if is_url(path) => refused(
                "cannot read the profile: no such file, and a URL is not fetched (trawl reads a profile from a file: download it first)"
                    .into(),
            ),
            _ => unread(e),
        })?;
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

    /// A profile from its JSON (a UTF-8 byte-order mark before it skipped); what it lacks or
    /// holds wrongly is said.
    pub fn parse(json: &[u8]) -> Result<Profile, String> {
        let json = json.strip_prefix(b"\xef\xbb\xbf").unwrap_or(json);
        let mut p: Profile = serde_json::from_slice(json).map_err(|e| e.to_string())?;
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
        // Each glob compiled once, here: never again for each name matched.
        let none = Vec::new();
        p.tag_globs = Globs::new(
            "Tag-Files-Allowed",
            p.tag_files_allowed.as_ref().unwrap_or(&none),
        )?;
        p.payload_globs = Globs::new(
            "Payload-Files-Allowed",
            p.payload_files_allowed.as_ref().unwrap_or(&none),
        )?;
        p.allowed_holds_required()?;
        p.writable_info()?;
        Ok(p)
    }

    /// What a bag made to the profile gets in its bag-info.txt (its identifier, each label
    /// of one allowed value) can be written there and read back as it is: bag-info.txt's
    /// rule for every label, [`crate::tagfile::info_line_fault`].
    fn writable_info(&self) -> Result<(), String> {
        let id = self.identifier();
        let fixed = self
            .bag_info
            .iter()
            .filter(|(label, _)| !label.eq_ignore_ascii_case("BagIt-Profile-Identifier"))
            .filter_map(|(label, rule)| match rule.values.as_deref() {
                Some([only]) => Some((label.as_str(), only.as_str())),
                _ => None,
            });
        let id = (
            "BagIt-Profile-Info's",
            "BagIt-Profile-Identifier",
            id.as_str(),
        );
        let fixed = fixed.map(|(label, value)| ("Bag-Info's", label, value));
        for (field, label, value) in std::iter::once(id).chain(fixed) {
            if let Some(why) = crate::tagfile::info_line_fault(label, value) {
                return Err(format!(
                    "{field} '{label}': its value {value:?} cannot go into bag-info.txt: {why}"
                ));
            }
        }
        Ok(())
    }

    /// A list of what is allowed holds at least what is required (specification 1.4.0).
    fn allowed_holds_required(&self) -> Result<(), String> {
        for (required, allowed, fields) in [
            (
                &self.manifests_required,
                &self.manifests_allowed,
                ("Manifests-Required", "Manifests-Allowed"),
            ),
            (
                &self.tag_manifests_required,
                &self.tag_manifests_allowed,
                ("Tag-Manifests-Required", "Tag-Manifests-Allowed"),
            ),
        ] {
            if let Some(allowed) = allowed
                && let Some(r) = required.iter().find(|r| !allowed.contains(r))
            {
                return Err(format!("{} '{r}' is not among {}", fields.0, fields.1));
            }
        }
        for (required, allowed, globs, fields) in [
            (
                &self.tag_files_required,
                &self.tag_files_allowed,
                &self.tag_globs,
                ("Tag-Files-Required", "Tag-Files-Allowed"),
            ),
            (
                &self.payload_files_required,
                &self.payload_files_allowed,
                &self.payload_globs,
                ("Payload-Files-Required", "Payload-Files-Allowed"),
            ),
        ] {
            if allowed.is_none() {
                continue;
            }
            match globs.first_unmatched(required) {
                Ok(None) => {}
                Ok(Some(r)) => {
                    return Err(format!("{} '{r}' is not among {}", fields.0, fields.1));
                }
                Err(()) => {
                    return Err(format!(
                        "{} against {}: more names and globs than trawl holds one against the other ({} steps; a profile is a few dozen lines)",
                        fields.0,
                        fields.1,
                        globs::WORK_MAX
                    ));
                }
            }
        }
        Ok(())
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
        let mut all_tags: Vec<Vec<u8>> = ["bagit.txt", "bag-info.txt"]
            .into_iter()
            .map(String::from)
            .chain(tags.iter().cloned())
            .map(String::into_bytes)
            .collect();
        for a in algorithms {
            all_tags.push(format!("manifest-{}.txt", a.bagit_name()).into_bytes());
            all_tags.push(format!("tagmanifest-{}.txt", a.bagit_name()).into_bytes());
        }
        all_tags.sort();
        let payload = payload.map(|v| v.into_iter().map(|(n, z)| (n.into_bytes(), z)).collect());
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

/// Whether `path` reads as a URL (`scheme://...`, the scheme a letter then letters, digits,
/// `+`, `-` or `.`): a profile is read from a file, never fetched.
fn is_url(path: &Path) -> bool {
    let text = path.to_string_lossy();
    text.split_once("://").is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

/// What a profile is checked against: the bag's declared version and `bag-info.txt`, and the
/// names of its files, as bytes (a name that is not UTF-8 equals none of the profile's).
struct Seen {
    version: String,
    info: Vec<(String, String)>,
    /// Tag files, relative to the bag's top, `/`-separated.
    tags: Vec<Vec<u8>>,
    /// Payload files, `data/...`, with their sizes (None: not listed, and the payload's rules
    /// not checked).
    payload: Option<Vec<(Vec<u8>, u64)>>,
    /// What is neither a regular file nor a directory (a FIFO, a device, a link), anywhere in
    /// the bag, with what it is: no tag or payload file, but present.
    special: Vec<(Vec<u8>, SkipKind)>,
}

impl Seen {
    /// What `name` is when it is present but not a regular file.
    fn special(&self, name: &str) -> Option<SkipKind> {
        self.special
            .iter()
            .find(|(n, _)| n == name.as_bytes())
            .map(|(_, k)| *k)
    }
}

/// A name of the bag's as a finding shows it (a byte that is not UTF-8 as U+FFFD).
fn shown(name: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(name)
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
    let tree = crate::validate::DiskBag::open(root)?;
    // Read as validation reads them: beneath the bag, never blocking, capped.
    let text = |name: &str| -> Result<Option<String>, BagError> {
        Ok(crate::validate::read_tag(&tree, name)?
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

/// Every entry under `dir`, as names relative to `root` (their bytes, never converted):
/// regular files under `data/` into the payload (with sizes), the others into the tags; what
/// is neither a file nor a directory into `special`. Links are not followed.
fn list(root: &Path, dir: &Path, s: &mut Seen) -> Result<(), BagError> {
    use std::os::unix::ffi::OsStrExt;
    for e in std::fs::read_dir(dir).map_err(io_err(dir))? {
        let e = e.map_err(io_err(dir))?;
        let p = e.path();
        let ft = e.file_type().map_err(io_err(&p))?;
        let rel = p
            .strip_prefix(root)
            .unwrap_or(&p)
            .as_os_str()
            .as_bytes()
            .to_vec();
        if ft.is_dir() {
            list(root, &p, s)?;
        } else if !ft.is_file() {
            s.special.push((rel, SkipKind::of(&ft)));
        } else if rel.starts_with(b"data/") {
            let size = e.metadata().map_err(io_err(&p))?.len();
            s.payload.get_or_insert_default().push((rel, size));
        } else {
            s.tags.push(rel);
        }
    }
    Ok(())
}

/// The algorithms of the manifests named `{prefix}-ALG.txt` among the tag files.
fn manifest_algorithms<'a>(tags: &'a [Vec<u8>], prefix: &str) -> Vec<&'a [u8]> {
    tags.iter()
        .filter_map(|t| t.strip_prefix(prefix.as_bytes())?.strip_suffix(b".txt"))
        .filter(|a| !a.contains(&b'/'))
        .collect()
}

#[cfg(test)]
mod tests;
