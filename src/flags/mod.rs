//! Command-line flags: [`lowargs`] is what the user typed, [`hiargs`] and [`plans`] the plans
//! built from it.

pub mod hiargs;
pub mod lowargs;
pub mod plans;

pub use lowargs::LowArgs;

/// Parses a command line; on `--help`/`--version` or a usage error, prints and returns the
/// exit code (0 for help, 2 for a usage error).
pub fn parse_from(argv: Vec<std::ffi::OsString>) -> Result<LowArgs, u8> {
    let invocation = hiargs::invocation(argv.get(1..).unwrap_or_default());
    let mut a = parse_low(argv).map_err(|e| {
        if e.use_stderr() && crate::messages::capturing() {
            crate::messages::to_stderr(&e.render().to_string());
        } else {
            let _ = e.print();
        }
        if e.use_stderr() { 2 } else { 0 }
    })?;
    a.invocation = invocation;
    Ok(a)
}

/// The flags that shape what a reduction measures: given any of them, a scan measures it
/// whatever outputs were asked for.
const REDUCTION_FLAGS: [&str; 11] = [
    "top_files",
    "depth",
    "dedup",
    "cdc",
    "compress",
    "unit",
    "sector",
    "threshold",
    "sample",
    "exact_keys",
    "count_links",
];

/// Parses a command line into the flags as typed, noting which a default left unset where
/// the plan depends on it (a reduction flag given: see `ReduceArgs::reduction_flags`).
pub fn parse_low<I, T>(argv: I) -> Result<LowArgs, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::{CommandFactory, FromArgMatches};
    let m = LowArgs::command().try_get_matches_from(argv)?;
    let mut a = LowArgs::from_arg_matches(&m)?;
    if let (lowargs::Command::Scan(s), Some(sm)) = (&mut a.command, m.subcommand_matches("scan")) {
        s.reduce.reduction_flags = REDUCTION_FLAGS
            .iter()
            .any(|id| sm.value_source(id) == Some(clap::parser::ValueSource::CommandLine));
    }
    let (excluding, sub) = match &mut a.command {
        lowargs::Command::Scan(s) => (&mut s.excluding, m.subcommand_matches("scan")),
        lowargs::Command::Audit(s) => (&mut s.excluding, m.subcommand_matches("audit")),
        lowargs::Command::Bag(lowargs::BagCommand::Create(s)) => (
            &mut s.excluding,
            m.subcommand_matches("bag")
                .and_then(|b| b.subcommand_matches("create")),
        ),
        _ => return Ok(a),
    };
    if let Some(sm) = sub {
        excluding.order = exclusion_order(sm);
    }
    Ok(a)
}

/// The order `--exclude` (false) and `--exclude-from` (true) were given in, by their places
/// on the command line.
fn exclusion_order(m: &clap::ArgMatches) -> Vec<bool> {
    let at = |id: &str, from_file: bool| {
        m.indices_of(id)
            .into_iter()
            .flatten()
            .map(move |i| (i, from_file))
    };
    let mut all: Vec<(usize, bool)> = at("exclude", false)
        .chain(at("exclude_from", true))
        .collect();
    all.sort_unstable();
    all.into_iter().map(|(_, f)| f).collect()
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
