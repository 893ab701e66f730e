//! The binary driven as a user would: stdout, stderr and exit code.

mod arguments;
mod audit;
mod bag;
mod bag_recover;
mod cluster;
mod exclude;
mod fixity;
mod flv;
mod golden;
mod interop;
mod io_errors;
mod names;
mod ocfl;
mod order;
mod outputs;
mod readme;
mod reduce;
mod report;
mod scale;
mod scan;
mod serve;
mod shell;
mod special_files;
mod streams;
mod util;
mod verify;
