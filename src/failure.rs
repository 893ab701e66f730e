//! A command's failure, typed, for a caller that reports it itself (the Python package): the
//! parser's refusal ([`Usage`]), a flag's value or an output refused before anything is read
//! ([`Refused`]), an OS error with the file it is about ([`AtPath`]), or anything else; each
//! also as the words the command line prints.

use std::fmt;
use std::path::{Path, PathBuf};

/// One word of a [`Refused`]: a flag as the command line spells it (`--io-depth`), or the text
/// around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word {
    /// A flag, as the command line spells it.
    Flag(String),
    /// Text.
    Text(String),
}

/// A flag's value, or an output, refused before anything is read: the flag it is about (where
/// one is), and the words, each flag they name kept apart from the text around it, so that a
/// caller that names the options its own way (the Python package's keyword arguments) says
/// the same words in its terms. Displayed as the command line says it: `--io-depth -1:
/// expected auto or a number from 1 to 1024`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The flag refused, as the command line spells it; None where no one flag is.
    pub flag: Option<String>,
    /// What is said.
    pub words: Vec<Word>,
}

impl Refused {
    /// `flag`'s value refused: the flag, then `rest` (` -1: expected ...`).
    pub fn flag(flag: &str, rest: impl Into<String>) -> Refused {
        Refused {
            flag: Some(flag.to_string()),
            words: vec![Word::Flag(flag.to_string()), Word::Text(rest.into())],
        }
    }

    /// A refusal in words that name no flag (`only one output may go to stdout ('-')`).
    pub fn text(text: impl Into<String>) -> Refused {
        Refused {
            flag: None,
            words: vec![Word::Text(text.into())],
        }
    }

    /// These words followed by the flag `flag`, which the refusal is about if none was yet.
    pub fn then_flag(mut self, flag: &str) -> Refused {
        self.flag.get_or_insert_with(|| flag.to_string());
        self.words.push(Word::Flag(flag.to_string()));
        self
    }

    /// These words followed by `text`.
    pub fn then_text(mut self, text: impl Into<String>) -> Refused {
        self.words.push(Word::Text(text.into()));
        self
    }

    /// The same words, as a refusal of `flag`'s value (words that name the file, not the flag:
    /// an output's path refused).
    pub fn about(mut self, flag: &str) -> Refused {
        self.flag = Some(flag.to_string());
        self
    }

    /// The words, each flag said by `name`.
    pub fn say(&self, name: &dyn Fn(&str) -> String) -> String {
        self.words
            .iter()
            .map(|w| match w {
                Word::Flag(f) => name(f),
                Word::Text(t) => t.clone(),
            })
            .collect()
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.say(&|flag| flag.to_string()))
    }
}

impl std::error::Error for Refused {}

/// `e` as a refusal of `flag`'s value, where it is a [`Refused`] (an output's path refused by
/// the rules, in words that name the file); any other error as it is.
pub(crate) fn about(e: anyhow::Error, flag: &str) -> anyhow::Error {
    match e.downcast::<Refused>() {
        Ok(r) => r.about(flag).into(),
        Err(e) => e,
    }
}

/// What was being done to which file, as an error's context (`PATH: cannot create`): the path
/// kept typed, for a caller that hands it on (the Python package's `OSError.filename`).
#[derive(Debug)]
pub struct AtPath {
    /// The file.
    pub path: PathBuf,
    /// What could not be done to it.
    pub what: &'static str,
}

impl AtPath {
    /// `what` could not be done to `path`.
    pub fn new(path: &Path, what: &'static str) -> AtPath {
        AtPath {
            path: path.to_path_buf(),
            what,
        }
    }
}

impl fmt::Display for AtPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.what)
    }
}

/// What the parser found wrong with a command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageKind {
    /// A flag the command does not have.
    Unknown,
    /// A value the flag does not take.
    Invalid,
    /// A value given to a flag that takes none, or one too many.
    Unexpected,
    /// A value missing (a flag without its value, a required argument absent).
    Missing,
    /// Two flags that cannot be given together.
    Conflict,
    /// A request for the help or the version, not an error: the command line prints them.
    Help,
    /// Anything else the parser refuses.
    Other,
}

/// A command line the parser refused, typed from the parser's own error: what was wrong and
/// the arguments it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage {
    /// What was wrong.
    pub kind: UsageKind,
    /// The flag it is about: one of the command's, as `--top-files`, or, for one it does not
    /// have, as given (`--dedupe`).
    pub flag: Option<String>,
    /// The value refused.
    pub value: Option<String>,
    /// A flag of the command's like the one given (`--dedup`).
    pub suggested: Option<String>,
    /// The flag it cannot be given with.
    pub conflicts: Option<String>,
    /// Why the value was refused (the value parser's words), or the values the flag takes.
    pub reason: Option<String>,
    /// The parser's description of the kind of error.
    pub description: String,
}

impl Usage {
    /// The typed fields of the parser's error: each argument it names found among the
    /// command line's flags by how the parser shows it (`--top-files <N>`), and named by its
    /// long flag.
    pub(crate) fn of(e: &clap::Error) -> Usage {
        use clap::error::{ContextKind, ContextValue, ErrorKind};
        let text = |k| match e.get(k) {
            Some(ContextValue::String(s)) => Some(s.clone()),
            Some(ContextValue::Strings(v)) => v.first().cloned(),
            _ => None,
        };
        let kind = match e.kind() {
            ErrorKind::UnknownArgument => UsageKind::Unknown,
            ErrorKind::InvalidValue | ErrorKind::ValueValidation | ErrorKind::InvalidUtf8 => {
                UsageKind::Invalid
            }
            ErrorKind::TooManyValues | ErrorKind::WrongNumberOfValues => UsageKind::Unexpected,
            ErrorKind::TooFewValues
            | ErrorKind::NoEquals
            | ErrorKind::MissingRequiredArgument
            | ErrorKind::MissingSubcommand => UsageKind::Missing,
            ErrorKind::ArgumentConflict => UsageKind::Conflict,
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => UsageKind::Help,
            _ => UsageKind::Other,
        };
        let reason = match e.get(ContextKind::ValidValue) {
            Some(ContextValue::Strings(v)) => Some(format!("possible values: {}", v.join(", "))),
            _ => std::error::Error::source(e).map(ToString::to_string),
        };
        Usage {
            kind,
            flag: text(ContextKind::InvalidArg).map(|a| long_flag(&a).unwrap_or(a)),
            value: text(ContextKind::InvalidValue),
            suggested: text(ContextKind::SuggestedArg).map(|a| long_flag(&a).unwrap_or(a)),
            conflicts: text(ContextKind::PriorArg).map(|a| long_flag(&a).unwrap_or(a)),
            reason,
            description: e.kind().as_str().unwrap_or_default().to_string(),
        }
    }
}

/// The long flag (`--top-files`) of the argument the parser shows as `shown` (`--top-files
/// <N>`), found among every command's arguments; None for one that is no argument of trawl's.
fn long_flag(shown: &str) -> Option<String> {
    use clap::CommandFactory;
    fn find(cmd: &clap::Command, shown: &str) -> Option<String> {
        cmd.get_arguments()
            .find(|a| {
                a.to_string() == shown || a.get_long().is_some_and(|l| shown == format!("--{l}"))
            })
            .and_then(|a| a.get_long().map(|l| format!("--{l}")))
            .or_else(|| cmd.get_subcommands().find_map(|s| find(s, shown)))
    }
    // Built, as the parser builds it: an argument shows itself only then.
    let mut cmd = crate::flags::LowArgs::command();
    cmd.build();
    find(&cmd, shown)
}

/// How a command ended without its result: the parser's refusal of its command line, or the
/// error it stopped with.
#[derive(Debug)]
pub enum Failure {
    /// The parser refused the command line (or it asked for the help or the version).
    Usage(clap::Error),
    /// The command's error.
    Error(anyhow::Error),
}

/// An OS error a command stopped with: its number, and the file it is about where the
/// command names one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OsFailure {
    /// The error number (`errno`).
    pub errno: i32,
    /// The file.
    pub path: Option<PathBuf>,
}

impl Failure {
    /// The parser's refusal, typed.
    pub fn usage(&self) -> Option<Usage> {
        match self {
            Failure::Usage(e) => Some(Usage::of(e)),
            Failure::Error(_) => None,
        }
    }

    /// A flag's value or an output refused before anything was read.
    pub fn refused(&self) -> Option<&Refused> {
        match self {
            Failure::Error(e) => e.downcast_ref::<Refused>(),
            Failure::Usage(_) => None,
        }
    }

    /// The OS error the command stopped with (the first in the error's causes that carries a
    /// number), and the file the command names with it.
    pub fn os_error(&self) -> Option<OsFailure> {
        let Failure::Error(e) = self else {
            return None;
        };
        let errno = e
            .chain()
            .find_map(|c| c.downcast_ref::<std::io::Error>()?.raw_os_error())?;
        Some(OsFailure {
            errno,
            path: e.downcast_ref::<AtPath>().map(|a| a.path.clone()),
        })
    }

    /// The words the command line prints for it (without `trawl: `), each flag a refusal
    /// names said by `name`.
    pub fn say(&self, name: &dyn Fn(&str) -> String) -> String {
        match self {
            Failure::Usage(e) => e.render().to_string().trim_end().to_string(),
            Failure::Error(e) => crate::describe_with(e, name),
        }
    }

    /// The words the command line prints for it (without `trawl: `).
    pub fn message(&self) -> String {
        self.say(&|flag| flag.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal says its flags as the caller names them, and as the command line does when
    /// displayed.
    #[test]
    fn a_refusal_says_its_flags_as_the_caller_names_them() {
        let r = Refused::text("x: named by ")
            .then_flag("--json")
            .then_text(" and by ")
            .then_flag("--html");
        assert_eq!(r.to_string(), "x: named by --json and by --html");
        assert_eq!(
            r.say(&|f| f.trim_start_matches('-').to_uppercase()),
            "x: named by JSON and by HTML"
        );
        assert_eq!(r.flag.as_deref(), Some("--json"));
        assert_eq!(r.about("--html").flag.as_deref(), Some("--html"));
        let r = Refused::flag("--io-depth", " -1: expected auto");
        assert_eq!(r.to_string(), "--io-depth -1: expected auto");
    }

    fn run(args: &[&std::ffi::OsStr]) -> crate::Ran {
        let mut argv: Vec<std::ffi::OsString> = vec!["trawl".into(), "scan".into()];
        argv.extend(args.iter().map(|a| a.to_os_string()));
        crate::run_captured(argv)
    }

    /// A command run in-process ends with its failure typed where it is known as a type: a
    /// flag's value refused names the flag, whatever its words; an OS error carries its number
    /// and the file, whatever the file's name; and nothing is printed.
    #[test]
    fn a_failure_comes_typed_from_where_it_is_known() {
        let t = tempfile::tempdir().unwrap();
        let tree = t.path().join("tree");
        std::fs::create_dir(&tree).unwrap();
        std::fs::write(tree.join("f"), b"x").unwrap();
        // A directory named like an OS error's words, refused as --temp-dir's value.
        let odd = t.path().join("Permission denied (os error 13)");
        let r = run(&["--temp-dir".as_ref(), odd.as_os_str(), tree.as_os_str()]);
        let f = r.failure.unwrap();
        assert_eq!(r.code, 2);
        assert_eq!(f.refused().unwrap().flag.as_deref(), Some("--temp-dir"));
        assert_eq!(f.os_error(), None);
        let said = f.say(&|flag| flag.trim_start_matches('-').replace('-', "_"));
        assert_eq!(said, format!("temp_dir {}: not a directory", odd.display()));
        assert_eq!(
            f.message(),
            format!("--temp-dir {}: not a directory", odd.display())
        );
        // A manifest in a directory that does not exist, named like a usage error.
        let sums = t
            .path()
            .join("error: unexpected argument '--x'")
            .join("SUMS");
        let spec = format!("sha256sum:{}", sums.display());
        let r = run(&["-m".as_ref(), spec.as_ref(), tree.as_os_str()]);
        let f = r.failure.unwrap();
        assert!(f.refused().is_none() && f.usage().is_none());
        let os = f.os_error().unwrap();
        assert_eq!(
            (os.errno, os.path.as_deref()),
            (libc::ENOENT, Some(sums.as_path()))
        );
        // A run that ends with its result has no failure; its messages are kept, in order.
        std::os::unix::fs::symlink("/nonexistent/target", tree.join("dangling")).unwrap();
        let r = run(&["-q".as_ref(), "-L".as_ref(), tree.as_os_str()]);
        assert!(r.failure.is_none());
        assert_eq!(r.code, 2);
        assert_eq!(r.said.len(), 1, "{:?}", r.said);
        assert!(r.said[0].starts_with(&tree.join("dangling").display().to_string()));
    }

    fn usage(args: &[&str]) -> Usage {
        let mut argv = vec!["trawl", "scan"];
        argv.extend(args);
        match crate::flags::parse_low(argv) {
            Err(e) => Usage::of(&e),
            Ok(_) => panic!("{args:?} parsed"),
        }
    }

    /// The parser's errors, typed: the flag by its long name whatever form was given, the
    /// value, a similar flag, the flag it conflicts with, and the value parser's reason.
    #[test]
    fn the_parsers_errors_come_typed_with_the_flags_they_name() {
        let u = usage(&["--dedupe=4k", "x"]);
        assert_eq!(u.kind, UsageKind::Unknown);
        assert_eq!(u.flag.as_deref(), Some("--dedupe"));
        assert_eq!(u.suggested.as_deref(), Some("--dedup"));
        let u = usage(&["--top-files=-3", "x"]);
        assert_eq!(u.kind, UsageKind::Invalid);
        assert_eq!(
            (u.flag.as_deref(), u.value.as_deref()),
            (Some("--top-files"), Some("-3"))
        );
        assert!(u.reason.is_some());
        let u = usage(&["--no-reduce=1", "x"]);
        assert_eq!(u.kind, UsageKind::Unexpected);
        assert_eq!(
            (u.flag.as_deref(), u.value.as_deref()),
            (Some("--no-reduce"), Some("1"))
        );
        let u = usage(&["--io=fast", "x"]);
        assert_eq!(
            (u.kind, u.flag.as_deref()),
            (UsageKind::Invalid, Some("--io"))
        );
        assert!(u.reason.unwrap().contains("mmap"));
        let u = usage(&["--reduce", "--no-reduce", "x"]);
        assert_eq!(u.kind, UsageKind::Conflict);
        let mut both = [u.flag.unwrap(), u.conflicts.unwrap()];
        both.sort();
        assert_eq!(both, ["--no-reduce", "--reduce"]);
        assert_eq!(usage(&["--help"]).kind, UsageKind::Help);
        // A path named like a flag, after `--`, is a path: no error.
        assert!(crate::flags::parse_low(["trawl", "scan", "--", "--dedupe"]).is_ok());
    }
}
