//! Messages to stderr: `trawl: <path>: <reason>`, printed above the progress bar if there is one.

use std::fmt::Arguments;

/// Prints `trawl: MESSAGE` on stderr.
pub fn error(args: Arguments<'_>) {
    let line = format!("trawl: {args}");
    crate::progress::println(&line);
}

/// Prints `trawl: warning: MESSAGE` on stderr.
pub fn warning(args: Arguments<'_>) {
    let line = format!("trawl: warning: {args}");
    crate::progress::println(&line);
}
