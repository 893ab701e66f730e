//! Output writers, apart from computing: files that appear whole or not at all, the JSON and
//! JSON Lines records, and the human summary.

pub mod atomic;
pub mod human;
pub mod json;
pub mod reduction;

pub use atomic::AtomicFile;
