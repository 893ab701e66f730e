//! A scan or an audit spread over a cluster, as typed pieces the cluster's glue (the Python
//! package on Dask) runs on its workers and client: one directory's listing ([`listing`]), the
//! shards a listing is cut into ([`shards`]), one shard's map and one partition's reduce
//! ([`map`]), the client's merge of the shards' parts into the report `trawl scan` makes
//! ([`merge`]) and an audit's listings and reads ([`audit`]). Flags are parsed and outputs rendered by the `trawl` crate; what a shard's
//! result is, is decided here, from a [`ScanWork`].
#![warn(missing_docs)]

pub mod audit;
mod error;
pub mod listing;
pub mod map;
pub mod merge;
pub mod shards;
mod work;

pub use error::ClusterError;
pub use listing::{ListBudget, ListedFile, Listing};
pub use map::{MapResult, ReduceFailure, map, reduce};
pub use merge::{Merge, ShardPart};
pub use shards::{ShardBounds, ShardPlan, Walk};
pub use work::ScanWork;

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
        "trawl {} batch {} audit 2",
        env!("CARGO_PKG_VERSION"),
        trawl_reduce::BATCH_VERSION
    )
}
