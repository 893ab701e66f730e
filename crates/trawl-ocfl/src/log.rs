//! The findings of one object (or of a storage root's hierarchy) as they are made: the first
//! [`KEPT`] errors and warnings each, the rest counted, so that an inventory that breaks a rule
//! a million times costs a count, not a million messages.

use trawl_report::{JsonPath, OcflFinding};

/// Errors (and, apart, warnings) kept in full per object; past it they are counted.
pub(crate) const KEPT: usize = 1000;

/// Errors and warnings, in the order found.
#[derive(Debug, Default)]
pub(crate) struct Log {
    pub errors: Vec<OcflFinding>,
    pub warnings: Vec<OcflFinding>,
    /// Errors past [`KEPT`].
    pub errors_not_listed: u64,
    /// Warnings past [`KEPT`].
    pub warnings_not_listed: u64,
}

fn finding(code: &'static str, at: &[u8], message: String) -> OcflFinding {
    OcflFinding {
        code,
        path: (!at.is_empty()).then(|| JsonPath::from_bytes(at)),
        message,
    }
}

impl Log {
    /// An error about `at` (a path below the object or root, as bytes; empty: about the
    /// whole).
    pub fn error(&mut self, code: &'static str, at: impl AsRef<[u8]>, message: impl Into<String>) {
        if self.errors.len() < KEPT {
            self.errors.push(finding(code, at.as_ref(), message.into()));
        } else {
            self.errors_not_listed += 1;
        }
    }

    /// A warning about `at`.
    pub fn warning(
        &mut self,
        code: &'static str,
        at: impl AsRef<[u8]>,
        message: impl Into<String>,
    ) {
        if self.warnings.len() < KEPT {
            self.warnings
                .push(finding(code, at.as_ref(), message.into()));
        } else {
            self.warnings_not_listed += 1;
        }
    }

    /// Whether any error was found.
    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }

    /// Errors found in all, listed or not.
    pub fn error_count(&self) -> u64 {
        self.errors.len() as u64 + self.errors_not_listed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_past_the_cap_are_counted_not_kept() {
        let mut log = Log::default();
        for i in 0..KEPT + 5 {
            log.error("E048", "inventory.json", format!("version v{i}"));
            log.warning("W007", "inventory.json", "m");
        }
        assert_eq!(log.errors.len(), KEPT);
        assert_eq!(log.errors_not_listed, 5);
        assert_eq!(log.warnings_not_listed, 5);
        assert_eq!(log.error_count(), KEPT as u64 + 5);
    }

    #[test]
    fn a_path_that_is_not_utf8_keeps_its_bytes() {
        let mut log = Log::default();
        log.error("E023", b"v1/content/a\xff", "x");
        log.error("E023", "v1/content/a\u{fffd}", "x");
        let (a, b) = (&log.errors[0].path, &log.errors[1].path);
        assert_ne!(a, b);
        assert_eq!(
            a.as_ref().unwrap().path_hex.as_deref(),
            Some("76312f636f6e74656e742f61ff")
        );
    }
}
