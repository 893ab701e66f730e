//! Command-line flags: [`lowargs`] is what the user typed, [`hiargs`] the plan built from it.

pub mod hiargs;
pub mod lowargs;

pub use lowargs::LowArgs;

use clap::Parser;
use std::process::ExitCode;

/// Parses the command line; on `--help`/`--version` or a usage error, prints and returns the
/// exit code (0 for help, 2 for a usage error).
pub fn parse() -> Result<LowArgs, ExitCode> {
    LowArgs::try_parse().map_err(|e| {
        let _ = e.print();
        if e.use_stderr() {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        }
    })
}
