//! Renderers, apart from computing: human text built from the typed report model
//! (`trawl-report`), and files that appear whole or not at all.

// Unsafe code only in tests (to make FIFOs).
#![cfg_attr(not(test), forbid(unsafe_code))]

pub mod atomic;
pub mod audit;
pub mod bag;
pub mod fclones;
pub mod html;
pub mod human;
pub mod ncdu;
pub mod reduction;
pub mod scan;
pub mod terminal;
pub mod verify;

pub use atomic::AtomicFile;
