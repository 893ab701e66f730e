//! An OCFL validation's human output: each object's findings, prefixed with the object, and a
//! verdict per invalid object and per path validated.

use crate::{human_bytes, human_count};
use trawl_report::{JsonPath, ObjectReport, OcflFinding, OcflSummary};

/// Findings about `what` to print: `(is_error, text)`, warnings after errors, each list
/// closed by how many more were found than it holds.
fn listed(
    what: &JsonPath,
    (errors, more_errors): (&[OcflFinding], u64),
    (warnings, more_warnings): (&[OcflFinding], u64),
    with_warnings: bool,
) -> Vec<(bool, String)> {
    let mut out: Vec<(bool, String)> = errors
        .iter()
        .map(|e| (true, format!("{what}: {e}")))
        .collect();
    let more = |n: u64, one: &str, many: &str| {
        format!(
            "{what}: {n} more {} not listed",
            if n == 1 { one } else { many }
        )
    };
    if more_errors > 0 {
        out.push((true, more(more_errors, "error", "errors")));
    }
    if with_warnings {
        out.extend(warnings.iter().map(|w| (false, format!("{what}: {w}"))));
        if more_warnings > 0 {
            out.push((false, more(more_warnings, "warning", "warnings")));
        }
    }
    out
}

/// An object's findings to print: `(is_error, text)`, warnings after errors.
pub fn ocfl_object_findings(o: &ObjectReport, warnings: bool) -> Vec<(bool, String)> {
    listed(
        &o.path,
        (&o.errors, o.errors_not_listed),
        (&o.warnings, o.warnings_not_listed),
        warnings,
    )
}

/// `OBJECT is NOT valid: ...` for an invalid object, nothing for a valid one (the totals say
/// how many were).
pub fn ocfl_object_verdict(o: &ObjectReport) -> Option<String> {
    (!o.is_valid()).then(|| {
        format!(
            "{} is NOT a valid OCFL {} object: {}",
            o.path,
            o.spec,
            human_count(
                o.errors.len() as u64 + o.errors_not_listed,
                "error",
                "errors"
            )
        )
    })
}

/// The storage root's own findings: `(is_error, text)`.
pub fn ocfl_root_findings(s: &OcflSummary, warnings: bool) -> Vec<(bool, String)> {
    listed(
        &s.path,
        (&s.root_errors, s.root_errors_not_listed),
        (&s.root_warnings, s.root_warnings_not_listed),
        warnings,
    )
}

/// One line of totals for a path validated.
pub fn ocfl_verdict(s: &OcflSummary) -> String {
    let read = format!(
        "{} ({}) read and checked",
        human_count(s.files_checked, "content file", "content files"),
        human_bytes(s.bytes_checked)
    );
    let warned = if s.warnings > 0 {
        format!(", {}", human_count(s.warnings, "warning", "warnings"))
    } else {
        String::new()
    };
    let head = verdict_head(s);
    let mut line = if s.kind == "inventory" {
        format!("{head}{warned}")
    } else {
        format!("{head}; {read}{warned}")
    };
    if s.kind != "object" && !s.root_errors.is_empty() {
        line += &format!(
            "; the storage hierarchy has {}",
            human_count(
                s.root_errors.len() as u64 + s.root_errors_not_listed,
                "error",
                "errors"
            )
        );
    }
    if s.unreadable > 0 {
        line += &format!(
            "; {} could not be read",
            human_count(s.unreadable, "file", "files")
        );
    }
    if !s.complete {
        line += "; INTERRUPTED: what was not reached is unchecked";
    }
    line
}

/// What the path validated is, and whether it is valid (a hierarchy: its objects' counts).
fn verdict_head(s: &OcflSummary) -> String {
    let spec = s.spec.as_deref().unwrap_or("?");
    if s.kind == "inventory" {
        let valid = if s.is_valid() {
            "a valid"
        } else {
            "NOT a valid"
        };
        format!(
            "{} is {valid} OCFL {spec} inventory (checked alone)",
            s.path
        )
    } else if s.kind != "object" {
        let what = if s.kind == "storage_root" {
            "storage root"
        } else {
            "storage hierarchy"
        };
        format!(
            "OCFL {spec} {what} {}: {}, {} valid, {} invalid",
            s.path,
            human_count(s.objects, "object", "objects"),
            s.valid,
            s.invalid
        )
    } else if s.is_valid() {
        format!("{} is a valid OCFL {spec} object", s.path)
    } else {
        format!("{} is NOT a valid OCFL {spec} object", s.path)
    }
}
