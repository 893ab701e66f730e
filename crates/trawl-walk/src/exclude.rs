//! What the walk leaves out at the user's word (`--exclude PATTERN`, `--exclude-from FILE`,
//! `--exclude-if-present NAME`): the rules, checked before anything is read, and the questions
//! the walk asks of them for each entry it lists.
//!
//! A pattern is a line of a `.gitignore` file, matched by the `ignore` crate's gitignore matcher
//! against the entry's path relative to the root it was found under (as rsync and git match):
//! a pattern with no `/` but a trailing one matches a name at any depth; one with a `/` at its
//! start or in its middle is anchored at the root; a trailing `/` matches directories only;
//! `*` and `?` stay within a name, `**` crosses directories; a leading `!` takes back what an
//! earlier pattern excluded (the last pattern that matches decides), except below a directory
//! already excluded, which is never listed. Names are matched on their bytes: a name that is
//! not UTF-8 is matched as it is, never through a lossy copy (so `?` is one byte, and no two
//! names are ever taken for one). A directory holding one of the `--exclude-if-present` names
//! (any kind of entry, links not followed) is excluded whole, a root included.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// The longest pattern taken, in bytes: a longer one is refused, naming where it came from
/// (the matcher's automaton grows with a pattern's wildcards).
pub const PATTERN_MAX: usize = 4096;

/// The most bytes of patterns taken in all, across every `--exclude` and `--exclude-from`.
pub const PATTERNS_MAX: usize = 1 << 20;

/// The most wildcards (`*`, `?`, `[`) taken in all the patterns: the matcher's memory grows
/// with each (about a kilobyte), so a megabyte of `*` would take a gigabyte.
pub const WILDCARDS_MAX: usize = 65_536;

/// The longest name a directory can hold (`NAME_MAX` of Linux's file systems): an
/// `--exclude-if-present` name longer than this can never be present.
const NAME_MAX: usize = 255;

/// The rules of a walk's exclusion; empty by default (nothing is left out).
#[derive(Debug, Clone, Default)]
pub struct Exclusion(Option<Arc<Rules>>);

#[derive(Debug)]
struct Rules {
    /// Each glob's `from` is the index of its pattern in `patterns`.
    matcher: Gitignore,
    /// The patterns in the order given (a file's lines where they came from a file).
    patterns: Vec<String>,
    /// The names whose presence excludes a directory.
    present: Vec<OsString>,
}

/// A rule that cannot be used, refused before anything is read; each names the flag or the
/// file (and line) it came from.
#[derive(Debug, thiserror::Error)]
pub enum ExcludeError {
    /// A pattern the matcher refuses (an unclosed `[`, a bad range).
    #[error("{origin}'{}': bad pattern: {why}", shown(pattern))]
    Pattern {
        /// Where it came from: `--exclude ` or `FILE:LINE: `.
        origin: String,
        /// The pattern as given.
        pattern: String,
        /// What is wrong with it.
        why: String,
    },
    /// A pattern that is no glob at all: empty, or only `!` and `/`.
    #[error(
        "{origin}'{}': an empty pattern, which matches nothing",
        shown(pattern)
    )]
    Empty {
        /// Where it came from.
        origin: String,
        /// The pattern as given.
        pattern: String,
    },
    /// A pattern that is not UTF-8 text (the matcher's patterns are text; a name that is not
    /// UTF-8 is matched by `?`, `*` or a class).
    #[error(
        "{}: a pattern must be UTF-8 text (a name that is not can be matched with ? or *)",
        origin.trim_end_matches([' ', ':'])
    )]
    NotText {
        /// Where it came from.
        origin: String,
    },
    /// Patterns each good alone that the matcher cannot take all together (too many, or too
    /// long: its automaton has a size limit), named by where they came from.
    #[error(
        "{sources}: {count} patterns ({bytes} bytes), more than the matcher can take together \
         ({why}); give fewer or shorter patterns"
    )]
    TooMuch {
        /// Where they came from: `--exclude`, `--exclude-from FILE`, each once.
        sources: String,
        /// How many patterns there are.
        count: usize,
        /// Their bytes, all together.
        bytes: usize,
        /// What the matcher said.
        why: String,
    },
    /// A pattern longer than `PATTERN_MAX` (4096) bytes.
    #[error(
        "{origin}'{}': a pattern of {bytes} bytes, longer than the {PATTERN_MAX} trawl takes for one",
        shown(pattern)
    )]
    TooLong {
        /// Where it came from.
        origin: String,
        /// The pattern as given.
        pattern: String,
        /// Its length in bytes.
        bytes: usize,
    },
    /// Patterns of more than `PATTERNS_MAX` (1 MiB) in all, named by where they came from.
    #[error(
        "{sources}: more than {PATTERNS_MAX} bytes of patterns in all (the most trawl takes \
         across every --exclude and --exclude-from); give fewer or shorter patterns"
    )]
    TooLongTogether {
        /// Where they came from: `--exclude`, `--exclude-from FILE`, each once.
        sources: String,
    },
    /// Patterns of more than `WILDCARDS_MAX` (65,536) wildcards in all, named by where they
    /// came from.
    #[error(
        "{sources}: more than {WILDCARDS_MAX} wildcards (*, ? and [) in all the patterns (the \
         matcher's memory grows with each); give fewer patterns or fewer wildcards"
    )]
    TooWild {
        /// Where they came from: `--exclude`, `--exclude-from FILE`, each once.
        sources: String,
    },
    /// A pattern that can never match a path below the root: a `..` component, a NUL byte.
    #[error("{origin}'{}': {why}, so it can never match", shown(pattern))]
    NeverMatches {
        /// Where it came from.
        origin: String,
        /// The pattern as given (a NUL shown as `\0`).
        pattern: String,
        /// What it holds that no path does.
        why: &'static str,
    },
    /// An `--exclude-if-present` name longer than a file name can be.
    #[error(
        "--exclude-if-present '{}': a name of {bytes} bytes, longer than the {NAME_MAX} a file name can have, so it can never be present",
        shown(&name.to_string_lossy())
    )]
    LongName {
        /// The name as given.
        name: OsString,
        /// Its length in bytes.
        bytes: usize,
    },
    /// An `--exclude-if-present` name that is not one name.
    #[error(
        "--exclude-if-present '{}': expected one name, e.g. .nobackup (no '/', not empty, '.' or '..')",
        name.to_string_lossy()
    )]
    Name {
        /// The name as given.
        name: OsString,
    },
}

/// A pattern as an error shows it: a long one cut short (a line of an `--exclude-from` file may
/// be a megabyte), saying how long it is.
fn shown(pattern: &str) -> String {
    const SHOWN: usize = 100;
    if pattern.len() <= SHOWN {
        return pattern.to_string();
    }
    let mut end = SHOWN;
    while !pattern.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &pattern[..end], pattern.len())
}

/// Builds an [`Exclusion`] from the flags, in the order given.
pub struct ExclusionBuilder {
    builder: GitignoreBuilder,
    patterns: Vec<String>,
    /// Where each pattern came from, as an error names it: `--exclude ` or `FILE:LINE: `.
    origins: Vec<String>,
    /// Where the patterns came from: `--exclude` or `--exclude-from FILE` (one entry for all
    /// of a file's lines), for an error that concerns them all.
    sources: Vec<String>,
    present: Vec<OsString>,
    /// The bytes of the patterns taken so far, all together.
    bytes: usize,
    /// Their wildcards (`*`, `?`, `[`), all together.
    wildcards: usize,
}

impl Default for ExclusionBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ExclusionBuilder {
    /// No rule yet.
    pub fn new() -> ExclusionBuilder {
        // Rooted at "." so that the matcher strips nothing from the relative paths it is
        // given; an unclosed `[` is refused rather than taken literally, so that a typo says so.
        let mut builder = GitignoreBuilder::new(".");
        builder.allow_unclosed_class(false);
        ExclusionBuilder {
            builder,
            patterns: Vec::new(),
            origins: Vec::new(),
            sources: Vec::new(),
            present: Vec::new(),
            bytes: 0,
            wildcards: 0,
        }
    }

    /// One `--exclude PATTERN`: a `.gitignore` line taken as given, never a comment (a leading
    /// `#` is part of the pattern).
    pub fn pattern(&mut self, pattern: &OsStr) -> Result<(), ExcludeError> {
        let origin = "--exclude ".to_string();
        let Some(text) = pattern.to_str() else {
            return Err(ExcludeError::NotText { origin });
        };
        let line = match text.strip_prefix('#') {
            Some(_) => format!("\\{text}"),
            None => text.to_string(),
        };
        self.source("--exclude".to_string());
        self.add(&origin, text, &line)
    }

    /// The lines of an `--exclude-from FILE` (`text`, read from `path`): one pattern a line,
    /// as in a `.gitignore` file (`#` starts a comment line, blank lines are skipped, trailing
    /// spaces are dropped unless escaped with `\`).
    pub fn file(&mut self, path: &Path, text: &[u8]) -> Result<(), ExcludeError> {
        // A byte-order mark at the start is no part of the first pattern.
        let text = text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text);
        self.source(format!("--exclude-from {}", path.display()));
        for (i, line) in text.split(|&b| b == b'\n').enumerate() {
            let origin = format!("{}:{}: ", path.display(), i + 1);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let Ok(line) = std::str::from_utf8(line) else {
                return Err(ExcludeError::NotText { origin });
            };
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            self.add(&origin, line, line)?;
        }
        Ok(())
    }

    /// The patterns of an `--exclude-from FILE` (`text`, read from `path`) as they would be
    /// given one by one with `--exclude`, each checked: the same rules, in the same order.
    pub fn file_patterns(path: &Path, text: &[u8]) -> Result<Vec<String>, ExcludeError> {
        let mut b = ExclusionBuilder::new();
        b.file(path, text)?;
        Ok(b.patterns)
    }

    /// One `--exclude-if-present NAME`.
    pub fn if_present(&mut self, name: &OsStr) -> Result<(), ExcludeError> {
        let b = name.as_bytes();
        if b.is_empty() || b.contains(&b'/') || b == b"." || b == b".." || b.contains(&0) {
            return Err(ExcludeError::Name {
                name: name.to_os_string(),
            });
        }
        if b.len() > NAME_MAX {
            return Err(ExcludeError::LongName {
                name: name.to_os_string(),
                bytes: b.len(),
            });
        }
        if !self.present.iter().any(|n| n == name) {
            self.present.push(name.to_os_string());
        }
        Ok(())
    }

    fn source(&mut self, source: String) {
        if !self.sources.contains(&source) {
            self.sources.push(source);
        }
    }

    fn add(&mut self, origin: &str, shown: &str, line: &str) -> Result<(), ExcludeError> {
        self.refuse_never(origin, shown, line)?;
        // What is left once the markers are taken off must be a glob: `!`, `/` or `!/` alone
        // would match nothing (or, for the matcher, everything), which is never what was meant.
        let body = line.strip_prefix('!').unwrap_or(line);
        let body = body.trim_start_matches('/').trim_end_matches([' ', '/']);
        if body.is_empty() {
            return Err(ExcludeError::Empty {
                origin: origin.to_string(),
                pattern: shown.to_string(),
            });
        }
        // The glob's `from` carries the pattern's index, so that what matched is told as it
        // was given (the matcher's own copy has a `#` escaped and trailing spaces dropped).
        let index = PathBuf::from(self.patterns.len().to_string());
        self.builder
            .add_line(Some(index), line)
            .map_err(|e| ExcludeError::Pattern {
                origin: origin.to_string(),
                pattern: shown.to_string(),
                why: glob_error(&e),
            })?;
        self.patterns.push(shown.to_string());
        self.origins.push(origin.to_string());
        Ok(())
    }

    /// Refuses what the matcher should never be given, before it compiles anything: a
    /// pattern that is too long, or too many bytes or wildcards of them in all; one holding what no path
    /// below the root holds (a NUL byte, a `..` component).
    fn refuse_never(&mut self, origin: &str, shown: &str, line: &str) -> Result<(), ExcludeError> {
        if line.len() > PATTERN_MAX {
            return Err(ExcludeError::TooLong {
                origin: origin.to_string(),
                pattern: shown.to_string(),
                bytes: line.len(),
            });
        }
        self.bytes += line.len();
        if self.bytes > PATTERNS_MAX {
            return Err(ExcludeError::TooLongTogether {
                sources: self.sources.join(", "),
            });
        }
        self.wildcards += line.bytes().filter(|b| b"*?[".contains(b)).count();
        if self.wildcards > WILDCARDS_MAX {
            return Err(ExcludeError::TooWild {
                sources: self.sources.join(", "),
            });
        }
        let never = |why| ExcludeError::NeverMatches {
            origin: origin.to_string(),
            pattern: shown.replace('\0', "\\0"),
            why,
        };
        if line.contains('\0') {
            return Err(never("it holds a NUL byte, which no name holds"));
        }
        let body = line.strip_prefix('!').unwrap_or(line).trim_end_matches(' ');
        if body.split('/').any(|c| c == "..") {
            return Err(never(
                "it holds a '..' component, which no path below the root has",
            ));
        }
        Ok(())
    }

    /// The rules; empty when none was given.
    pub fn build(self) -> Result<Exclusion, ExcludeError> {
        if self.patterns.is_empty() && self.present.is_empty() {
            return Ok(Exclusion(None));
        }
        // Each pattern was compiled alone as it was added; what fails here is all of them
        // together, so the error names where they came from, not one of them.
        let matcher = self.builder.build().map_err(|e| match &self.patterns[..] {
            [one] => ExcludeError::Pattern {
                origin: self.origins[0].clone(),
                pattern: one.clone(),
                why: glob_error(&e),
            },
            all => ExcludeError::TooMuch {
                sources: self.sources.join(", "),
                count: all.len(),
                bytes: all.iter().map(String::len).sum(),
                why: glob_error(&e),
            },
        })?;
        Ok(Exclusion(Some(Arc::new(Rules {
            matcher,
            patterns: self.patterns,
            present: self.present,
        }))))
    }
}

/// The matcher's words for a bad glob, without its repetition of the pattern.
fn glob_error(e: &ignore::Error) -> String {
    match e {
        ignore::Error::Glob { err, .. } => err.clone(),
        e => e.to_string(),
    }
}

/// Why an entry is left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// This pattern (as given) matched it.
    Pattern(String),
    /// It is a directory holding this name (`--exclude-if-present`).
    Holds(OsString),
}

impl Why {
    /// The pattern, when a pattern matched.
    pub fn pattern(&self) -> Option<&str> {
        match self {
            Why::Pattern(p) => Some(p),
            Why::Holds(_) => None,
        }
    }

    /// The name held, when it is a directory holding an `--exclude-if-present` name.
    pub fn holds(&self) -> Option<&OsStr> {
        match self {
            Why::Holds(n) => Some(n),
            Why::Pattern(_) => None,
        }
    }
}

impl Exclusion {
    /// Whether no rule was given.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// The patterns, in the order given.
    pub fn patterns(&self) -> &[String] {
        self.0.as_ref().map_or(&[], |r| &r.patterns)
    }

    /// The `--exclude-if-present` names.
    pub fn if_present(&self) -> &[OsString] {
        self.0.as_ref().map_or(&[], |r| &r.present)
    }

    /// The `--exclude-if-present` names as bytes.
    pub fn if_present_bytes(&self) -> Vec<&[u8]> {
        self.if_present().iter().map(|n| n.as_bytes()).collect()
    }

    /// The pattern that excludes the entry at `rel` (its path relative to its root), a
    /// directory or not; None when none does (or the last one that matches takes it back).
    pub fn matched(&self, rel: &Path, is_dir: bool) -> Option<&str> {
        let rules = self.0.as_ref()?;
        match rules.matcher.matched(rel, is_dir) {
            Match::Ignore(g) => Some(
                g.from()
                    .and_then(|i| i.to_str()?.parse::<usize>().ok())
                    .and_then(|i| rules.patterns.get(i))
                    .map_or(g.original(), String::as_str),
            ),
            Match::None | Match::Whitelist(_) => None,
        }
    }

    /// The first `--exclude-if-present` name the directory `dir` holds (looked up without
    /// listing it, links not followed); None when it holds none, or cannot be looked into.
    pub fn held_by(&self, dir: &Path) -> Option<&OsStr> {
        let rules = self.0.as_ref()?;
        rules
            .present
            .iter()
            .find(|n| std::fs::symlink_metadata(dir.join(n)).is_ok())
            .map(OsString::as_os_str)
    }

    /// Whether the file at `rel` (relative to its root) is left out by a pattern: a directory
    /// above it excluded (from the top, as the walk meets them: nothing below an excluded
    /// directory is ever taken back), or the file itself. For files the walk did not meet
    /// (an audit's registered files that are gone).
    pub fn excludes_file(&self, rel: &Path) -> bool {
        if self.0.is_none() {
            return false;
        }
        let mut above = PathBuf::new();
        let mut parts = rel.components().peekable();
        while let Some(c) = parts.next() {
            above.push(c);
            let last = parts.peek().is_none();
            if self.matched(&above, !last).is_some() {
                return true;
            }
        }
        false
    }

    /// Why the entry at `path` (`rel` below its root) is left out, if it is: a pattern, or, for
    /// a directory, a name it holds.
    pub fn why(&self, path: &Path, rel: &Path, is_dir: bool) -> Option<Why> {
        self.0.as_ref()?;
        if !rel.as_os_str().is_empty()
            && let Some(p) = self.matched(rel, is_dir)
        {
            return Some(Why::Pattern(p.to_string()));
        }
        if is_dir {
            return self.held_by(path).map(|n| Why::Holds(n.to_os_string()));
        }
        None
    }
}

#[cfg(test)]
mod tests;
