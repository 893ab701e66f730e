//! OCFL (the Oxford Common File Layout, specifications 1.0 and 1.1): validating storage roots
//! and objects, with the specification's validation codes.
//!
//! Everything but the content is checked from the inventories and the directory listings, one
//! object at a time; the content is then read by the scan engine (as `trawl scan` reads, one
//! read per file with every algorithm the inventories ask for), a batch of objects at a time,
//! and each object's report handed on as soon as its batch is done. Memory holds one batch,
//! never the whole storage root.
//!
//! The face: [`validate`] (a storage root, an object, or an inventory file alone), and
//! [`validate_tree`] of an [`OcflTree`] (a directory on disk, or objects under a prefix of a
//! store, one [`OcflDir`] at a time), their reports in
//! `trawl_report` (`OcflSummary`, `ObjectReport`), and [`OcflError`] when nothing could be
//! checked; [`OcflSource`], an audit's walk and reads over storage roots (each version's files
//! under their logical paths, the inventories' digests as the expected ones).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod content;
mod error;
mod inventory;
mod json;
mod log;
mod object;
mod root;
mod source;
mod tree;
#[doc(hidden)]
pub mod untrusted;
mod validate;

pub use crate::error::OcflError;
pub use crate::inventory::SPEC_VERSIONS;
pub use crate::source::OcflSource;
pub use crate::tree::{Kind, Name, OcflDir, OcflTree, Unread};
pub use crate::validate::{validate, validate_tree};
