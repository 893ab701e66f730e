//! Renderers, apart from computing: human text built from the typed report model
//! (`trawl-report`), and files that appear whole or not at all.

pub mod atomic;
pub mod audit;
pub mod human;
pub mod reduction;
pub mod scan;

pub use atomic::AtomicFile;
