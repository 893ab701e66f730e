//! What a catalog records of its files' fixity, as a preservation record (PREMIS) describes it:
//! the registered files with their digests, and the checks of them. Plain data, lent for the
//! time of one call: a catalog of any size streams through these one row at a time.

/// A registered file: its whole path (the root's path joined to the path below it; for an
/// object store, `s3://BUCKET/PREFIX/KEY`), its registered size and digests.
#[derive(Debug, Clone, Copy)]
pub struct FixityObject<'a> {
    /// The path's bytes, as the file system or the store gives them.
    pub path: &'a [u8],
    /// The registered size in bytes.
    pub size: u64,
    /// The registered digests: the algorithm's name as trawl writes it (`sha256`, `md5`) and
    /// the digest's bytes.
    pub digests: &'a [(&'static str, Vec<u8>)],
}

/// One verdict on one file that a catalog records (see the catalog's `for_each_fixity_check`
/// for which are recorded).
#[derive(Debug, Clone, Copy)]
pub struct FixityCheck<'a> {
    /// The audit run that gave it.
    pub run: i64,
    /// When (seconds since the Unix epoch): the run's start, or the time the file's latest ok
    /// read recorded.
    pub time: i64,
    /// The run's mode: `full` (contents read) or `stored` (the store's own checksums).
    pub mode: &'a str,
    /// The verdict's name (`ok`, `corrupt`, `missing`, ...).
    pub verdict: &'a str,
    /// The file's whole path, as in [`FixityObject::path`].
    pub path: &'a [u8],
    /// What the audit said of it, if anything (`content changed but size and mtime did not`).
    pub detail: Option<&'a str>,
}
