//! A scan or an audit spread over a cluster, as typed pieces the cluster's glue (the Python
//! package on Dask) runs on its workers and client. Flags are parsed and outputs rendered by the
//! `trawl` crate; what a shard's result is, is decided here, from a [`ScanWork`].
//!
//! The face, in the order a scan runs: a listing task ([`list_task`] within a [`ListBudget`],
//! giving a [`Listing`]; the directories it left handed on [`listing_batch`] at a time); the
//! shards a walk's listings are cut into ([`Walk`], [`ShardPlan`], [`ShardBounds`], whose caps
//! an audit's read tasks keep too); one shard's [`map`] ([`MapResult`]) and one partition's
//! [`reduce`]; the client's [`Merge`] of the shards' parts ([`ShardPart`]) into the report
//! `trawl scan` makes. An audit's side: the [`AuditWorker`]'s listing tasks and reads, the
//! client's [`AuditFeed`] of shards, and the [`RemoteSource`] the catalog's audit reads
//! through. Every failure is a [`ClusterError`]; [`wire_version`] is what every process must
//! agree on.
#![deny(missing_docs)]

mod audit;
mod error;
mod listing;
mod map;
mod merge;
#[cfg(feature = "s3")]
mod objects;
mod pack;
mod shards;
mod work;

pub use audit::{Feed as AuditFeed, Remote, RemoteSource, Worker as AuditWorker};
pub use error::ClusterError;
pub use listing::{ListBudget, ListedFile, Listing, list_task, listing_batch};
pub use map::{MapResult, ReduceFailure, map, reduce};
pub use merge::{Merge, ShardPart};
pub use shards::{ShardBounds, ShardPlan, Walk};
pub use work::ScanWork;

/// The audit's wire decoders, for the fuzz targets (bytes from other machines must give an
/// error, never a panic); not part of the face.
#[doc(hidden)]
pub mod wire {
    use trawl_digest::Algorithm;

    /// Decodes a listing task's result: how many items it holds, or why it does not decode.
    pub fn audit_listing(b: &[u8]) -> Result<usize, String> {
        let mut n = 0;
        crate::audit::take_listing(b, &mut |_| {
            n += 1;
            std::ops::ControlFlow::Continue(())
        })
        .map_err(|e| e.to_string())?;
        Ok(n)
    }

    /// Decodes a read task's result for a catalog of `algorithms`: how many files it holds.
    pub fn audit_reads(b: &[u8], algorithms: &[Algorithm]) -> Result<usize, String> {
        let mut n = 0;
        crate::audit::take_reads(b, algorithms, &trawl_scan::NoProgress, &mut |_| n += 1)
            .map_err(|e| e.to_string())?;
        Ok(n)
    }
}

/// A name from the bytes it crossed the wire as (whatever their encoding).
pub(crate) fn path(b: Vec<u8>) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStringExt;
    std::path::PathBuf::from(std::ffi::OsString::from_vec(b))
}

/// A name as bytes for the wire.
pub(crate) fn bytes(p: &std::path::Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    p.as_os_str().as_bytes().to_vec()
}

/// The version of the formats a cluster's tasks exchange: every worker must run the same.
pub fn wire_version() -> String {
    format!(
        "trawl {} batch {} audit 3 listing 2",
        env!("CARGO_PKG_VERSION"),
        trawl_reduce::BATCH_VERSION
    )
}
