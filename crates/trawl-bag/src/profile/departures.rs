//! A bag's departures from a profile, each a finding naming the profile's field.

use trawl_report::BagFinding;
use trawl_walk::SkipKind;

use super::{Profile, Seen, manifest_algorithms, shown};

/// What `s` (a bag as seen) departs from in `p`: one finding per departure, naming the field.
pub(super) fn departures(p: &Profile, s: &Seen) -> Vec<BagFinding> {
    let mut d = Departures {
        p,
        s,
        id: p.identifier(),
        out: Vec::new(),
    };
    d.identifier();
    d.bag_info();
    d.manifests();
    d.fetch_and_serialization();
    d.tag_files();
    // The payload's rules, when it was listed.
    if let Some(payload) = &s.payload {
        d.payload_files(payload);
        d.data_empty(payload);
    }
    d.out
}

/// The departures found so far, of the bag `s` from the profile `p` (whose identifier is `id`).
struct Departures<'a> {
    p: &'a Profile,
    s: &'a Seen,
    id: String,
    out: Vec<BagFinding>,
}

impl Departures<'_> {
    /// One departure from `field`.
    fn say(&mut self, field: &str, what: String) {
        self.out.push(BagFinding::about(
            "profile",
            format!("{field}: {what} ({})", self.id),
        ))
    }

    /// Why a file `name` the profile requires is not there: a name that is there but no
    /// regular file (a FIFO) is no tag or payload file.
    fn absent(&self, name: &str) -> String {
        match self.s.special(name) {
            Some(SkipKind::Symlink) => format!("{name} is a symbolic link, not a regular file"),
            Some(k) => format!(
                "{name} is a {}, not a regular file",
                k.describe().trim_end_matches(", not read")
            ),
            None => format!("no {name}"),
        }
    }

    /// The bag names the profile it follows (as the profiles' own validator requires), in a
    /// version the profile accepts.
    fn identifier(&mut self) {
        let (p, s) = (self.p, self.s);
        let named: Vec<&str> = s
            .info
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("BagIt-Profile-Identifier"))
            .map(|(_, v)| v.as_str())
            .collect();
        if named.is_empty() {
            self.say(
                "BagIt-Profile-Identifier",
                "bag-info.txt does not name the profile".into(),
            );
        } else if named.len() > 1 {
            // A bag follows one profile: with two lines (this one's among them) which one is
            // left unsaid.
            self.say(
                "BagIt-Profile-Identifier",
                format!(
                    "bag-info.txt has {} BagIt-Profile-Identifier lines ('{}'); a bag names the one profile it follows",
                    named.len(),
                    named.join("', '")
                ),
            );
        } else if !named.contains(&self.id.as_str()) {
            self.say(
                "BagIt-Profile-Identifier",
                format!("bag-info.txt names '{}'", named.join("', '")),
            );
        }
        if !p.accept_versions.contains(&s.version) {
            self.say(
                "Accept-BagIt-Version",
                format!(
                    "the bag is version '{}', the profile accepts {}",
                    s.version,
                    p.accept_versions.join(", ")
                ),
            );
        }
    }

    /// Each `Bag-Info` rule: required, repeatable, its values.
    fn bag_info(&mut self) {
        let (p, s) = (self.p, self.s);
        for (label, rule) in &p.bag_info {
            let values: Vec<&str> = s
                .info
                .iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case(label))
                .map(|(_, v)| v.as_str())
                .collect();
            if rule.required && values.is_empty() {
                self.say("Bag-Info", format!("'{label}' is required and absent"));
            }
            if !rule.repeatable && values.len() > 1 {
                self.say(
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
                    self.say("Bag-Info", format!("'{label}' is '{v}', {what}"));
                }
            }
        }
    }

    /// The manifests and tag manifests required and allowed, by algorithm.
    fn manifests(&mut self) {
        let (p, s) = (self.p, self.s);
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
            for a in required.iter().filter(|a| !have.contains(&a.as_bytes())) {
                self.say(field_req, format!("no {prefix}{a}.txt"));
            }
            if let Some(allowed) = allowed {
                for a in have
                    .iter()
                    .filter(|a| !allowed.iter().any(|x| x.as_bytes() == **a))
                {
                    self.say(
                        field_allowed,
                        format!("{prefix}{}.txt is not allowed", shown(a)),
                    );
                }
            }
        }
    }

    /// fetch.txt allowed or required; a serialization required (this bag is a directory).
    fn fetch_and_serialization(&mut self) {
        let p = self.p;
        let fetch = self.s.tags.iter().any(|t| t == b"fetch.txt");
        if fetch && !p.allow_fetch {
            self.say("Allow-Fetch.txt", "the bag has a fetch.txt".into());
        }
        if !fetch && p.fetch_required {
            self.say("Fetch.txt-Required", "the bag has no fetch.txt".into());
        }
        if p.serialization.as_deref() == Some("required") {
            self.say(
                "Serialization",
                "the profile requires a serialized bag; this is a directory".into(),
            );
        }
    }

    /// The tag files required, and those allowed.
    fn tag_files(&mut self) {
        let (p, s) = (self.p, self.s);
        let present = |t: &String| s.tags.iter().any(|n| n == t.as_bytes());
        for t in p.tag_files_required.iter().filter(|t| !present(t)) {
            let why = self.absent(t);
            self.say("Tag-Files-Required", why);
        }
        if p.tag_files_allowed.is_none() {
            return;
        }
        // The files every bag may hold are allowed (those the profile requires are among its
        // globs: a profile where they are not is refused).
        let implicit = |t: &Vec<u8>| {
            [&b"bagit.txt"[..], b"bag-info.txt", b"fetch.txt"].contains(&t.as_slice())
                || !manifest_algorithms(std::slice::from_ref(t), "manifest-").is_empty()
                || !manifest_algorithms(std::slice::from_ref(t), "tagmanifest-").is_empty()
        };
        let tags = s.tags.iter().chain(
            s.special
                .iter()
                .map(|(n, _)| n)
                .filter(|n| !n.starts_with(b"data/")),
        );
        for t in tags.filter(|t| !implicit(t) && !p.tag_globs.matches(t)) {
            self.say("Tag-Files-Allowed", format!("{} is not allowed", shown(t)));
        }
    }

    /// The payload files required, and those allowed (`payload` as listed, with sizes).
    fn payload_files(&mut self, payload: &[(Vec<u8>, u64)]) {
        let (p, s) = (self.p, self.s);
        for f in &p.payload_files_required {
            if !payload.iter().any(|(n, _)| n == f.as_bytes()) {
                let why = self.absent(f);
                self.say("Payload-Files-Required", why);
            }
        }
        if p.payload_files_allowed.is_some() {
            let payload = payload.iter().map(|(n, _)| n).chain(
                s.special
                    .iter()
                    .map(|(n, _)| n)
                    .filter(|n| n.starts_with(b"data/")),
            );
            for f in payload.filter(|f| !p.payload_globs.matches(f)) {
                self.say(
                    "Payload-Files-Allowed",
                    format!("{} is not allowed", shown(f)),
                );
            }
        }
    }

    /// Data-Empty (specification 1.4.0): no file at all, or a single file of zero bytes.
    fn data_empty(&mut self, payload: &[(Vec<u8>, u64)]) {
        let others = self
            .s
            .special
            .iter()
            .filter(|(n, _)| n.starts_with(b"data/"))
            .count();
        let empty =
            others == 0 && (payload.is_empty() || (payload.len() == 1 && payload[0].1 == 0));
        if self.p.data_empty && !empty {
            let mut holds = format!(
                "{} files of {} bytes",
                payload.len(),
                payload.iter().map(|(_, n)| n).sum::<u64>()
            );
            if others > 0 {
                holds.push_str(&format!(" and {others} entries that are not regular files"));
            }
            self.say(
                "Data-Empty",
                format!("data/ must hold no file or one empty file; it holds {holds}"),
            );
        }
    }
}
