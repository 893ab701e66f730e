//! trawl: reads every byte of a file tree once and answers whether it is intact. The binary is
//! the library's command line with the signal handlers installed.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(trawl_cli::main_with(std::env::args_os().collect(), true))
}
