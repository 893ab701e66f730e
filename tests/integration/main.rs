//! The binary driven as a user would: stdout, stderr and exit code.

mod audit;
mod bag;
mod cluster;
mod exclude;
mod fixity;
mod flv;
mod golden;
mod hardening;
mod interop;
mod ocfl;
mod order;
mod readme;
mod reduce;
mod report;
mod round4;
mod safety;
mod scale;
mod scan;
mod serve;
mod shell;
mod streams;
mod util;
mod verify;
