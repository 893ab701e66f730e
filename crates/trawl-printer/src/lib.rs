//! Renderers, apart from computing: human text and HTML built from the typed report model
//! (`trawl-report`).

// Unsafe code only in tests (to make FIFOs).
#![deny(missing_docs)]
#![cfg_attr(not(test), forbid(unsafe_code))]

pub mod audit;
pub mod bag;
pub mod fclones;
pub mod html;
pub mod human;
pub mod ncdu;
pub mod ocfl;
pub mod reduction;
pub mod scan;
pub mod terminal;
pub mod verify;
