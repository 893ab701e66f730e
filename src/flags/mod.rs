//! Command-line flags: [`lowargs`] is what the user typed, [`hiargs`] the plan built from it.

pub mod hiargs;
pub mod lowargs;

pub use lowargs::LowArgs;

use clap::Parser;

/// Parses a command line; on `--help`/`--version` or a usage error, prints and returns the
/// exit code (0 for help, 2 for a usage error).
pub fn parse_from(argv: Vec<std::ffi::OsString>) -> Result<LowArgs, u8> {
    let invocation = hiargs::invocation(argv.get(1..).unwrap_or_default());
    let mut a = LowArgs::try_parse_from(argv).map_err(|e| {
        let _ = e.print();
        if e.use_stderr() { 2 } else { 0 }
    })?;
    a.invocation = invocation;
    Ok(a)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every command, positional argument and option says what it is for in `--help`.
    #[test]
    fn every_argument_and_option_has_a_help_line() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in cmd.get_arguments() {
                let id = a.get_id().as_str();
                if id == "help" || id == "version" {
                    continue;
                }
                if a.get_help().is_none() && a.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                if sub.get_about().is_none() {
                    missing.push(format!("{path} {} (the command)", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&super::LowArgs::command(), "trawl", &mut missing);
        assert!(missing.is_empty(), "no help line: {missing:?}");
    }
}
