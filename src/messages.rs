//! Messages to stderr: `trawl: <path>: <reason>`, printed above the progress bar if there is one,
//! with control characters escaped (a name cannot act on the terminal or forge a line).

use std::fmt::Arguments;

/// Prints `trawl: MESSAGE` on stderr.
pub fn error(args: Arguments<'_>) {
    let line = format!("trawl: {args}");
    crate::progress::println(&trawl_printer::terminal::message(&line));
}

/// Prints `trawl: warning: MESSAGE` on stderr.
pub fn warning(args: Arguments<'_>) {
    let line = format!("trawl: warning: {args}");
    crate::progress::println(&trawl_printer::terminal::message(&line));
}
