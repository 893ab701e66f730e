//! An OCFL validation's human output: each object's findings, prefixed with the object, and a
//! verdict per invalid object and per path validated.

use trawl_report::ocfl::{ObjectReport, OcflSummary};

/// An object's findings to print: `(is_error, text)`, warnings after errors.
pub fn findings(o: &ObjectReport, warnings: bool) -> Vec<(bool, String)> {
    let mut out: Vec<(bool, String)> = o
        .errors
        .iter()
        .map(|e| (true, format!("{}: {e}", o.path)))
        .collect();
    if warnings {
        out.extend(
            o.warnings
                .iter()
                .map(|w| (false, format!("{}: {w}", o.path))),
        );
    }
    out
}

/// `OBJECT is NOT valid: ...` for an invalid object, nothing for a valid one (the totals say
/// how many were).
pub fn object_verdict(o: &ObjectReport) -> Option<String> {
    (!o.is_valid()).then(|| {
        format!(
            "{} is NOT a valid OCFL {} object: {}",
            o.path,
            o.spec,
            crate::human::count(o.errors.len() as u64, "error", "errors")
        )
    })
}

/// The storage root's own findings: `(is_error, text)`.
pub fn root_findings(s: &OcflSummary, warnings: bool) -> Vec<(bool, String)> {
    let mut out: Vec<(bool, String)> = s
        .root_errors
        .iter()
        .map(|e| (true, format!("{}: {e}", s.path)))
        .collect();
    if warnings {
        out.extend(
            s.root_warnings
                .iter()
                .map(|w| (false, format!("{}: {w}", s.path))),
        );
    }
    out
}

/// One line of totals for a path validated.
pub fn verdict(s: &OcflSummary) -> String {
    let read = format!(
        "{} ({}) read and checked",
        crate::human::count(s.files_checked, "content file", "content files"),
        crate::human::bytes(s.bytes_checked)
    );
    let warned = if s.warnings > 0 {
        format!(
            ", {}",
            crate::human::count(s.warnings, "warning", "warnings")
        )
    } else {
        String::new()
    };
    let spec = s.spec.as_deref().unwrap_or("?");
    let head = if s.kind != "object" {
        let what = if s.kind == "storage_root" {
            "storage root"
        } else {
            "storage hierarchy"
        };
        format!(
            "OCFL {spec} {what} {}: {}, {} valid, {} invalid",
            s.path,
            crate::human::count(s.objects, "object", "objects"),
            s.valid,
            s.invalid
        )
    } else if s.is_valid() {
        format!("{} is a valid OCFL {spec} object", s.path)
    } else {
        format!("{} is NOT a valid OCFL {spec} object", s.path)
    };
    let mut line = format!("{head}; {read}{warned}");
    if s.kind != "object" && !s.root_errors.is_empty() {
        line += &format!(
            "; the storage hierarchy has {}",
            crate::human::count(s.root_errors.len() as u64, "error", "errors")
        );
    }
    if s.unreadable > 0 {
        line += &format!(
            "; {} could not be read",
            crate::human::count(s.unreadable, "file", "files")
        );
    }
    if !s.complete {
        line += "; INTERRUPTED: what was not reached is unchecked";
    }
    line
}
