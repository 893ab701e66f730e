//! An audit's figures for monitoring (the Prometheus text format's input): the run's times and
//! outcome, its files and bytes by verdict, and the collection's standing. A figure that is
//! `None` is not known (or does not apply) and is left out of the output, not written as 0.

/// One run of `trawl audit` (or the catalog's last run, as `catalog report` sees it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditMetrics {
    /// The catalog's path, as the `catalog` label gives it.
    pub catalog: String,
    /// The run's number in the catalog, where it got one.
    pub run: Option<i64>,
    /// When the run started (seconds since the Unix epoch).
    pub started: i64,
    /// When it ended (None: it has not, as far as the catalog knows).
    pub finished: Option<i64>,
    /// The run went to its end (complete, or partial by its budget), whatever it found; false
    /// for a run that failed or was interrupted.
    pub success: bool,
    /// When the catalog's last run that went to its end ended (this one, if it did).
    pub last_success: Option<i64>,
    /// Files and bytes by verdict, every verdict named (0 where none), in this order.
    pub verdicts: Vec<VerdictFigures>,
    /// Files whose content the run read.
    pub files_read: Option<u64>,
    /// Bytes the run read.
    pub bytes_read: Option<u64>,
    /// Registered files the run did not read (verified recently enough, or past its budget).
    pub not_read: Option<u64>,
    /// Seconds since the least recently verified present file was verified, at the end.
    pub oldest_verification_age: Option<i64>,
    /// Present files never verified by a read.
    pub never_verified: Option<u64>,
    /// Files due for verification under the collection's policy (None: no policy to say).
    pub files_due: Option<u64>,
}

/// One verdict's figures in a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerdictFigures {
    /// The verdict's name (`ok`, `corrupt`, ...).
    pub verdict: String,
    /// Paths given it.
    pub files: u64,
    /// Their sizes in bytes, summed (None: not known, as for a metadata-only run's ok files).
    pub bytes: Option<u64>,
}
