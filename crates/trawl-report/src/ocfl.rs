//! An OCFL validation's report: each object's findings (errors and warnings, each with the
//! specification's validation code), findings about the storage root's hierarchy, and the
//! totals. Records are produced one object at a time, so that a storage root of any size is
//! reported in bounded memory.

use serde::Serialize;

use crate::JsonPath;

/// How bad a finding is: an error makes what it is about invalid, a warning does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// A MUST of the specification broken (codes `E...`).
    Error,
    /// A SHOULD of the specification not followed (codes `W...`).
    Warning,
}

/// One finding: the validation code, the path it is about (below the object, or below the
/// storage root for the hierarchy's findings), and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OcflFinding {
    /// The specification's validation code (`E092`, `W004`).
    pub code: &'static str,
    /// The file or directory it is about, when it is about one (`path`, and `path_hex` when
    /// its bytes are not UTF-8).
    #[serde(flatten)]
    pub path: Option<JsonPath>,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for OcflFinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] ", self.code)?;
        if let Some(p) = &self.path {
            write!(f, "{p}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// One object's validation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ObjectReport {
    /// The object's directory (as given, or joined to the storage root's): `path`, and
    /// `path_hex` when its bytes are not UTF-8.
    #[serde(flatten)]
    pub path: JsonPath,
    /// The object's `id`, when its root inventory gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The specification version the object declares (or is assumed to follow).
    pub spec: String,
    /// What breaks the specification's MUSTs; the object is valid when there is none.
    pub errors: Vec<OcflFinding>,
    /// What departs from its SHOULDs.
    pub warnings: Vec<OcflFinding>,
    /// Errors found past those listed (a list is capped; these are counted, not kept).
    #[serde(skip_serializing_if = "is_zero")]
    pub errors_not_listed: u64,
    /// Warnings found past those listed.
    #[serde(skip_serializing_if = "is_zero")]
    pub warnings_not_listed: u64,
    /// Content files read and checked against their digests.
    pub files_checked: u64,
    /// Their bytes.
    pub bytes_checked: u64,
    /// Content files that could not be read (each also an error).
    pub unreadable: u64,
}

impl ObjectReport {
    /// No error.
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
}

/// What a validation of one path (a storage root or an object) found in all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct OcflSummary {
    /// The path validated, as given (`path`, and `path_hex` when its bytes are not UTF-8).
    #[serde(flatten)]
    pub path: JsonPath,
    /// `storage_root`, `storage_hierarchy` (a directory below a storage root) or `object`.
    pub kind: &'static str,
    /// The storage root's declared specification version (an object's, for an object).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
    /// Objects validated.
    pub objects: u64,
    /// Of them, valid (warnings allowed).
    pub valid: u64,
    /// Of them, invalid.
    pub invalid: u64,
    /// Findings about the storage root itself and its hierarchy (never about one object).
    pub root_errors: Vec<OcflFinding>,
    /// Warnings about the storage root itself.
    pub root_warnings: Vec<OcflFinding>,
    /// The storage root's errors found past those listed (counted, not kept).
    #[serde(skip_serializing_if = "is_zero")]
    pub root_errors_not_listed: u64,
    /// The storage root's warnings found past those listed.
    #[serde(skip_serializing_if = "is_zero")]
    pub root_warnings_not_listed: u64,
    /// Errors in all, the objects' and the root's.
    pub errors: u64,
    /// Warnings in all.
    pub warnings: u64,
    /// Content files read and checked.
    pub files_checked: u64,
    /// Their bytes.
    pub bytes_checked: u64,
    /// Content files that could not be read.
    pub unreadable: u64,
    /// False when the validation stopped early (interrupted): what was not reached is unchecked.
    pub complete: bool,
}

impl OcflSummary {
    /// Every object valid and the hierarchy sound.
    pub fn is_valid(&self) -> bool {
        self.errors == 0
    }

    /// Adds an object's figures.
    pub fn add(&mut self, o: &ObjectReport) {
        self.objects += 1;
        if o.is_valid() {
            self.valid += 1;
        } else {
            self.invalid += 1;
        }
        self.errors += o.errors.len() as u64 + o.errors_not_listed;
        self.warnings += o.warnings.len() as u64 + o.warnings_not_listed;
        self.files_checked += o.files_checked;
        self.bytes_checked += o.bytes_checked;
        self.unreadable += o.unreadable;
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
