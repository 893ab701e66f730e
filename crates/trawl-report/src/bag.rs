//! A bag validation's report: findings (errors and warnings) that name what they are about, the
//! files a holey bag has yet to fetch, and what was checked.

use serde::Serialize;

/// One finding: what it is about (a tag file, a payload path, the payload directory), the line
/// of a tag file where it applies, and what is wrong. Shown as `SUBJECT: line N: MESSAGE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BagFinding {
    /// What it is about (a tag file, a payload path), when it is about one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The tag file's line, when it applies to one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl BagFinding {
    /// About the bag as a whole.
    pub fn bag(message: impl Into<String>) -> BagFinding {
        BagFinding {
            subject: None,
            line: None,
            message: message.into(),
        }
    }

    /// About a file (a tag file or a payload path).
    pub fn about(subject: impl std::fmt::Display, message: impl Into<String>) -> BagFinding {
        BagFinding {
            subject: Some(subject.to_string()),
            line: None,
            message: message.into(),
        }
    }

    /// From an error whose text starts with the path it names (`PATH: reason`): the path
    /// becomes the subject.
    pub fn from_error<E: std::fmt::Display + ?Sized>(e: &E) -> BagFinding {
        let text = e.to_string();
        match text.split_once(": ") {
            Some((subject, message)) => BagFinding::about(subject, message),
            None => BagFinding::bag(text),
        }
    }

    /// About one line of a tag file.
    pub fn at_line(
        file: impl std::fmt::Display,
        line: usize,
        message: impl Into<String>,
    ) -> BagFinding {
        BagFinding {
            subject: Some(file.to_string()),
            line: Some(line),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for BagFinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(s) = &self.subject {
            write!(f, "{s}: ")?;
        }
        if let Some(l) = self.line {
            write!(f, "line {l}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// A payload file a holey bag lists in fetch.txt and does not hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToFetch {
    /// Where to fetch it from.
    pub url: String,
    /// Its length, when fetch.txt gives it.
    pub length: Option<u64>,
    /// Where it goes in the bag.
    pub path: String,
}

/// What validating a bag found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BagReport {
    /// The bag's declared BagIt version.
    pub version: String,
    /// What makes the bag invalid.
    pub errors: Vec<BagFinding>,
    /// What does not, but is worth saying.
    pub warnings: Vec<BagFinding>,
    /// Files fetch.txt lists and the bag does not hold.
    pub to_fetch: Vec<ToFetch>,
    /// Payload files whose digests were checked.
    pub files_checked: u64,
    /// Their bytes.
    pub bytes_checked: u64,
    /// Payload files that could not be read (permissions, I/O errors).
    pub unreadable: u64,
    /// The algorithms of the payload manifests when trawl computes none of them: the bag was
    /// not checked (it is neither valid nor invalid as far as trawl can tell).
    pub cannot_check: Vec<String>,
    /// Validated without reading the payload (`--fast`): the file list and Payload-Oxum only.
    pub fast: bool,
    /// The BagIt Profile the bag was held to (its identifier), when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

impl BagReport {
    /// Complete, every digest matching, nothing unreadable.
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
            && self.to_fetch.is_empty()
            && self.unreadable == 0
            && self.cannot_check.is_empty()
    }

    /// Nothing wrong was found, but no payload manifest could be checked.
    pub fn is_unchecked(&self) -> bool {
        self.errors.is_empty() && !self.cannot_check.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_shows_its_subject_and_line() {
        assert_eq!(
            BagFinding::at_line("manifest-sha256.txt", 3, "'x' is not a sha256 digest").to_string(),
            "manifest-sha256.txt: line 3: 'x' is not a sha256 digest"
        );
        assert_eq!(
            BagFinding::about("data/a", "missing").to_string(),
            "data/a: missing"
        );
        assert_eq!(BagFinding::bag("no manifest").to_string(), "no manifest");
    }
}
