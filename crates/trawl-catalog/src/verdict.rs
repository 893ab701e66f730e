//! The states a path can be in after an audit, and the three audit modes.

/// Full (read and compare contents), metadata-only (size and mtime), or stored (the checksums
/// the files' store keeps, compared with the registered digests; nothing read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditMode {
    /// Read and compare contents.
    Full,
    /// Compare size and modification time only.
    Metadata,
    /// Compare the store's own checksums of each file (looked up, not read) with the digests
    /// registered from a read; size and time as a metadata-only audit does.
    Stored,
}

impl AuditMode {
    pub(crate) fn name(self) -> &'static str {
        match self {
            AuditMode::Full => "full",
            AuditMode::Metadata => "metadata",
            AuditMode::Stored => "stored",
        }
    }

    /// The mode a run's record names (an unknown name: full).
    pub(crate) fn from_name(s: &str) -> AuditMode {
        [AuditMode::Metadata, AuditMode::Stored]
            .into_iter()
            .find(|m| m.name() == s)
            .unwrap_or(AuditMode::Full)
    }
}

/// The verdict on one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// As registered.
    Ok,
    /// Same size and time as registered, different content.
    Corrupt,
    /// Corrupt in an earlier audit, and read as registered again: its content was restored.
    Restored,
    /// Changed: its size or time differs.
    Modified,
    /// Registered, and not found.
    Missing,
    /// Found, and not registered.
    New,
    /// A registered file found under another name.
    Moved,
    /// Found, and could not be read.
    Unreadable,
    /// Found as registered, and not compared: its store holds no checksum of the whole content
    /// that the catalog records (a no-download audit).
    Uncompared,
}

impl Verdict {
    /// Every verdict.
    pub const ALL: [Verdict; 9] = [
        Verdict::Ok,
        Verdict::Corrupt,
        Verdict::Restored,
        Verdict::Modified,
        Verdict::Missing,
        Verdict::New,
        Verdict::Moved,
        Verdict::Unreadable,
        Verdict::Uncompared,
    ];

    /// Its name in reports and flags.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Corrupt => "corrupt",
            Verdict::Restored => "restored",
            Verdict::Modified => "modified",
            Verdict::Missing => "missing",
            Verdict::New => "new",
            Verdict::Moved => "moved",
            Verdict::Unreadable => "unreadable",
            Verdict::Uncompared => "uncompared",
        }
    }

    /// The verdict a name stands for.
    pub fn from_name(s: &str) -> Option<Verdict> {
        Verdict::ALL.into_iter().find(|v| v.name() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every verdict's name reads back to it, the names are the report's states, and nothing
    /// else reads as a verdict.
    #[test]
    fn every_verdict_has_a_name_that_reads_back() {
        let names: Vec<&str> = Verdict::ALL.iter().map(|v| v.name()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            Verdict::ALL.len(),
            "no two verdicts share a name"
        );
        for v in Verdict::ALL {
            assert_eq!(Verdict::from_name(v.name()), Some(v));
        }
        // The names are the report's states, the same set.
        let mut states = trawl_report::AUDIT_STATES.to_vec();
        states.sort();
        assert_eq!(sorted, states);
        assert_eq!(Verdict::from_name("Corrupt"), None);
        assert_eq!(Verdict::from_name(""), None);
    }

    /// Each mode's name reads back to it, and each is one the report says what it proves of.
    #[test]
    fn every_mode_has_a_name_that_reads_back() {
        for m in [AuditMode::Full, AuditMode::Metadata, AuditMode::Stored] {
            assert_eq!(AuditMode::from_name(m.name()), m);
            assert!(!trawl_report::audit_mode_proves(m.name()).is_empty());
        }
    }
}
