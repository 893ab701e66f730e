//! The findings of one object (or of a storage root's hierarchy) as they are made.

use trawl_report::ocfl::OcflFinding;

/// Errors and warnings, in the order found.
#[derive(Debug, Default)]
pub(crate) struct Log {
    pub errors: Vec<OcflFinding>,
    pub warnings: Vec<OcflFinding>,
}

fn finding(code: &'static str, at: &str, message: String) -> OcflFinding {
    OcflFinding {
        code,
        path: (!at.is_empty()).then(|| at.to_string()),
        message,
    }
}

impl Log {
    /// An error about `at` (a path below the object or root; empty: about the whole).
    pub fn error(&mut self, code: &'static str, at: &str, message: impl Into<String>) {
        self.errors.push(finding(code, at, message.into()));
    }

    /// A warning about `at`.
    pub fn warning(&mut self, code: &'static str, at: &str, message: impl Into<String>) {
        self.warnings.push(finding(code, at, message.into()));
    }
}
