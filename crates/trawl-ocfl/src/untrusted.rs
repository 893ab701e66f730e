//! An inventory's bytes checked alone, for the fuzz targets: an `inventory.json` is written by
//! whoever wrote the storage root, and must give findings, never a panic, in memory bounded by
//! its size. Not part of the face.

use crate::log::Log;

/// What checking found: whether the bytes were a JSON object (the rest is checked only
/// then), each error's and warning's code as listed, and how many were past the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Findings {
    /// The root inventory was a JSON object.
    pub parsed: bool,
    /// The errors' codes, in the order found.
    pub errors: Vec<&'static str>,
    /// The warnings' codes, in the order found.
    pub warnings: Vec<&'static str>,
    /// Errors and warnings found past those listed.
    pub not_listed: (u64, u64),
}

/// Checks `raw` as an object's root inventory is checked (as specification 1.1 where its
/// `type` names none); with `prior`, that as an earlier version's inventory (`v1`), held
/// against the root's as an object's are.
pub fn inventory(raw: &[u8], prior: Option<&[u8]>) -> Findings {
    let mut log = Log::default();
    let root = crate::inventory::check(
        raw,
        b"inventory.json",
        crate::object::DEFAULT_SPEC,
        &mut log,
    );
    if let (Some(root), Some(prior)) = (&root, prior)
        && let Some(earlier) =
            crate::inventory::check(prior, b"v1/inventory.json", &root.spec_version, &mut log)
    {
        crate::inventory::check_prior(root, &earlier, &mut log);
    }
    Findings {
        parsed: root.is_some(),
        errors: log.errors.iter().map(|f| f.code).collect(),
        warnings: log.warnings.iter().map(|f| f.code).collect(),
        not_listed: (log.errors_not_listed, log.warnings_not_listed),
    }
}

/// Why the bounded JSON reader refused bytes.
#[derive(Debug)]
pub enum Refused {
    /// Not JSON (or nested past serde_json's depth limit).
    NotJson(String),
    /// Holding it would take more than this budget, in bytes.
    OverBudget(usize),
}

/// The bounded JSON reader alone: the value it keeps (every object and string, and of an
/// array's other elements the first), or why it refused.
pub fn json(raw: &[u8]) -> Result<serde_json::Value, Refused> {
    crate::json::parse(raw).map_err(|e| match e {
        crate::json::ParseError::Json(e) => Refused::NotJson(e.to_string()),
        crate::json::ParseError::TooBig { budget } => Refused::OverBudget(budget),
    })
}
