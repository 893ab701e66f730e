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
//!
//! Without the `client` feature (the binary's `s3` feature turns it on) the crate is its URLs
//! alone, and [`ObjectSource`] a type no value has: the AWS SDK is not compiled.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

#[cfg(not(feature = "client"))]
mod absent;
#[cfg(feature = "client")]
mod attributes;
#[cfg(feature = "client")]
mod audit;
#[cfg(feature = "client")]
mod bag;
#[cfg(feature = "client")]
mod cap;
#[cfg(feature = "client")]
mod check;
#[cfg(feature = "client")]
mod connect;
#[cfg(feature = "client")]
mod depth;
#[cfg(feature = "client")]
mod error;
#[cfg(feature = "client")]
mod etag;
#[cfg(feature = "client")]
mod list;
#[cfg(feature = "client")]
mod ocfl;
#[cfg(feature = "client")]
mod parts;
#[cfg(feature = "client")]
mod range;
#[cfg(feature = "client")]
mod source;
#[cfg(feature = "client")]
mod stored;
mod url;

#[cfg(not(feature = "client"))]
pub use absent::ObjectSource;
#[cfg(feature = "client")]
pub use audit::AuditObjects;
#[cfg(feature = "client")]
pub use bag::{BagObjects, BagObjectsError, TAG_KEYS_MAX};
#[cfg(feature = "client")]
pub use check::{CheckCounts, CheckError, CheckLine, CheckOptions, Verdict, check};
#[cfg(feature = "client")]
pub use connect::{Connection, STALL, Store};
#[cfg(feature = "client")]
pub use error::{S3Error, StoreFault};
#[cfg(feature = "client")]
pub use etag::multipart_etag;
#[cfg(feature = "client")]
pub use list::Listed;
#[cfg(feature = "client")]
pub use ocfl::{OcflObjects, OcflObjectsError};
#[cfg(feature = "client")]
pub use source::{OBJECT_DEV, ObjectSource, object_ino};
#[cfg(feature = "client")]
pub use stored::{Check, Proof, Stored, StoredKind};
pub use url::{ObjectUrl, UrlError, is_object_url};
