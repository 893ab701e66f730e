//! Command-line flags: [`lowargs`] is what the user typed, [`hiargs`] and [`plans`] the plans
//! built from it ([`reads`]: what a scan reads its files for, `--reuse`), [`policy`] a policy's
//! values (periods, budgets, times of day).

pub mod hiargs;
pub mod lowargs;
pub mod plans;
pub mod policy;
pub mod reads;
pub mod stores;

pub use lowargs::LowArgs;

/// Parses a command line; the parser's error on `--help`/`--version` or a usage error.
pub fn parse_from(argv: Vec<std::ffi::OsString>) -> Result<LowArgs, clap::Error> {
    let invocation = hiargs::invocation(argv.get(1..).unwrap_or_default());
    let mut a = parse_low(argv)?;
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

/// One argument given on a command line: its id, its long flag (None for a positional
/// argument) and the values given (none for a flag that takes none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Given {
    /// The argument's id (its field's name in [`lowargs`]).
    pub id: String,
    /// Its long flag, `--top-files`.
    pub long: Option<String>,
    /// The values given, as given.
    pub values: Vec<std::ffi::OsString>,
}

/// Every argument given on the command line `argv` to the command `sub` (a default or an
/// environment variable gives none), in the order the command declares its arguments.
pub fn given(argv: Vec<std::ffi::OsString>, sub: &str) -> Result<Vec<Given>, clap::Error> {
    use clap::CommandFactory;
    use clap::parser::ValueSource;
    let cmd = LowArgs::command();
    let m = cmd.clone().try_get_matches_from(argv)?;
    let (Some(c), Some(sm)) = (cmd.find_subcommand(sub), m.subcommand_matches(sub)) else {
        return Ok(Vec::new());
    };
    Ok(c.get_arguments()
        .filter(|a| sm.value_source(a.get_id().as_str()) == Some(ValueSource::CommandLine))
        .map(|a| {
            let id = a.get_id().as_str();
            let values = match a.get_action().takes_values() {
                true => sm
                    .get_raw(id)
                    .map(|v| v.map(ToOwned::to_owned).collect())
                    .unwrap_or_default(),
                false => Vec::new(),
            };
            Given {
                id: id.to_string(),
                long: a.get_long().map(|l| format!("--{l}")),
                values,
            }
        })
        .collect())
}

/// Where each value of the positional argument `id` of the command `sub` stands in `args` (the
/// command's arguments: without the program's and the command's names), in the order of the
/// values; None for one that cannot be placed. The parser says it: a token that is such a
/// value, replaced by a probe, leaves every other value as it was and gives the probe in its
/// place, where an option's value equal to it (`--temp-dir x x`) gives no probe among the
/// values, and a flag equal to it (`-q -- -q`), replaced, adds values. (The parser's own
/// indices are not places: it numbers `--flag=VALUE` as two.)
pub fn places(sub: &str, id: &str, args: &[std::ffi::OsString]) -> Vec<Option<usize>> {
    let values_of = |args: &[std::ffi::OsString]| {
        let mut argv: Vec<std::ffi::OsString> = vec!["trawl".into(), sub.into()];
        argv.extend_from_slice(args);
        given(argv, sub).ok().map(|g| {
            g.into_iter()
                .find(|g| g.id == id)
                .map(|g| g.values)
                .unwrap_or_default()
        })
    };
    let Some(values) = values_of(args) else {
        return Vec::new();
    };
    let probe = std::ffi::OsString::from("\u{0}trawl-probe\u{0}");
    let mut out = vec![None; values.len()];
    for (i, a) in args.iter().enumerate() {
        if !values.contains(a) {
            continue;
        }
        let mut trial = args.to_vec();
        trial[i] = probe.clone();
        let Some(now) = values_of(&trial).filter(|v| v.len() == values.len()) else {
            continue;
        };
        let changed: Vec<usize> = (0..now.len()).filter(|&n| now[n] != values[n]).collect();
        if let [n] = changed[..]
            && now[n] == probe
        {
            out[n] = Some(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    fn os(v: &[&str]) -> Vec<std::ffi::OsString> {
        v.iter().map(Into::into).collect()
    }

    /// Each path's place among the arguments, told from an option's value equal to it and
    /// from a flag spelled like it, whatever form the options take.
    #[test]
    fn each_path_is_placed_among_the_arguments_and_nothing_else_is() {
        let args = os(&["--temp-dir", "x", "x", "/abs", "--json=y", "y"]);
        assert_eq!(
            super::places("scan", "paths", &args),
            [Some(2), Some(3), Some(5)]
        );
        let args = os(&["-q", "-j", "2", "--", "-q", "2"]);
        assert_eq!(super::places("scan", "paths", &args), [Some(4), Some(5)]);
        let args = os(&["--top-files=5", "5", "--depth", "5"]);
        assert_eq!(super::places("scan", "paths", &args), [Some(1)]);
        // A command line the parser refuses places nothing.
        assert!(super::places("scan", "paths", &os(&["--nope"])).is_empty());
    }

    /// The arguments given, by their long flags, in the command's order, with their values as
    /// given; defaults left out.
    #[test]
    fn the_arguments_given_come_in_the_commands_order_with_their_values() {
        let argv = os(&[
            "trawl",
            "scan",
            "-q",
            "b",
            "-d",
            "md5",
            "a",
            "--top-files=3",
            "-m",
            "x:y",
        ]);
        let g = super::given(argv, "scan").unwrap();
        let shown: Vec<(String, Option<String>, Vec<std::ffi::OsString>)> =
            g.into_iter().map(|g| (g.id, g.long, g.values)).collect();
        let want = [
            ("paths", None, os(&["b", "a"])),
            ("digest", Some("--digest"), os(&["md5"])),
            ("manifest", Some("--manifest"), os(&["x:y"])),
            ("top_files", Some("--top-files"), os(&["3"])),
            ("quiet", Some("--quiet"), os(&[])),
        ];
        let want: Vec<_> = want
            .into_iter()
            .map(|(i, l, v)| (i.to_string(), l.map(str::to_string), v))
            .collect();
        assert_eq!(shown, want);
    }

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
