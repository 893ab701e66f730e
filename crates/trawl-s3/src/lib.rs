//! Objects as roots: `s3://BUCKET/PREFIX` on AWS S3 and every S3-compatible store, listed,
//! read by ranged requests pinned to one version of each object, and the checksums the store
//! already holds read back without a download.
//!
//! The face: a root ([`ObjectUrl`]), a connection ([`Connection`] makes a [`Store`]), the keys
//! under a prefix ([`Store::list`], each a [`Listed`]), what the store holds of an object
//! ([`Store::stored`], a [`Stored`]: its ETag and checksums, and what each proves against
//! trawl's digests, [`Stored::compare`]), and [`ObjectSource`]: a reading service's
//! [`trawl_scan::Source`] whose bytes come from the store, for every command that reads; a
//! bag under a prefix is [`BagObjects`], the [`trawl_bag::BagTree`] a bag validation reads; an
//! OCFL storage root or object under one is [`OcflObjects`], the [`trawl_ocfl::OcflTree`] an
//! OCFL validation reads.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod attributes;
mod audit;
mod bag;
mod cap;
mod check;
mod connect;
mod depth;
mod error;
mod etag;
mod list;
mod ocfl;
mod parts;
mod range;
mod source;
mod stored;
mod url;

pub use audit::AuditObjects;
pub use bag::{BagObjects, BagObjectsError, TAG_KEYS_MAX};
pub use check::{CheckCounts, CheckError, CheckLine, CheckOptions, Verdict, check};
pub use connect::{Connection, STALL, Store};
pub use error::{S3Error, StoreFault};
pub use etag::multipart_etag;
pub use list::Listed;
pub use ocfl::{OcflObjects, OcflObjectsError};
pub use source::{OBJECT_DEV, ObjectSource, object_ino};
pub use stored::{Check, Proof, Stored, StoredKind};
pub use url::{ObjectUrl, UrlError, is_object_url};
