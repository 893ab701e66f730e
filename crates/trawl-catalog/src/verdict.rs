//! The states a path can be in after an audit, and the two audit modes.

/// Full (read and compare contents) or metadata-only (size and mtime).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditMode {
    /// Read and compare contents.
    Full,
    /// Compare size and modification time only.
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
    /// As registered.
    Ok,
    /// Same size and time as registered, different content.
    Corrupt,
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
}

impl Verdict {
    /// Every verdict.
    pub const ALL: [Verdict; 7] = [
        Verdict::Ok,
        Verdict::Corrupt,
        Verdict::Modified,
        Verdict::Missing,
        Verdict::New,
        Verdict::Moved,
        Verdict::Unreadable,
    ];

    /// Its name in reports and flags.
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

    /// The verdict a name stands for.
    pub fn from_name(s: &str) -> Option<Verdict> {
        Verdict::ALL.into_iter().find(|v| v.name() == s)
    }
}
