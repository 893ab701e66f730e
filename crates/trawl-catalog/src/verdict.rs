//! The states a path can be in after an audit, and the two audit modes.

/// Full (read and compare contents) or metadata-only (size and mtime).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditMode {
    Full,
    Metadata,
}

impl AuditMode {
    pub(crate) fn name(self) -> &'static str {
        match self {
            AuditMode::Full => "full",
            AuditMode::Metadata => "metadata",
        }
    }
}

/// The verdict on one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    Ok,
    Corrupt,
    Modified,
    Missing,
    New,
    Moved,
    Unreadable,
}

impl Verdict {
    pub const ALL: [Verdict; 7] = [
        Verdict::Ok,
        Verdict::Corrupt,
        Verdict::Modified,
        Verdict::Missing,
        Verdict::New,
        Verdict::Moved,
        Verdict::Unreadable,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Corrupt => "corrupt",
            Verdict::Modified => "modified",
            Verdict::Missing => "missing",
            Verdict::New => "new",
            Verdict::Moved => "moved",
            Verdict::Unreadable => "unreadable",
        }
    }

    pub fn from_name(s: &str) -> Option<Verdict> {
        Verdict::ALL.into_iter().find(|v| v.name() == s)
    }
}
