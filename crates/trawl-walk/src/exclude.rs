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
mod tests {
    use super::*;

    fn rules(patterns: &[&str]) -> Exclusion {
        let mut b = ExclusionBuilder::new();
        for p in patterns {
            b.pattern(OsStr::new(p)).unwrap();
        }
        b.build().unwrap()
    }

    fn out(e: &Exclusion, rel: &str, is_dir: bool) -> bool {
        e.matched(Path::new(rel), is_dir).is_some()
    }

    /// The forms of a pattern, each against what it must and must not match (the integration
    /// tests hold the same against `git check-ignore`).
    #[test]
    fn patterns_match_as_gitignore_lines_relative_to_the_root() {
        let e = rules(&["*.tmp", "/top", "build/", "a/**/z", "doc/*.txt"]);
        assert!(out(&e, "x.tmp", false) && out(&e, "d/e/x.tmp", false));
        assert!(out(&e, "top", true) && !out(&e, "d/top", true), "anchored");
        assert!(out(&e, "build", true) && out(&e, "d/build", true));
        assert!(!out(&e, "build", false), "dir/ matches directories only");
        assert!(out(&e, "a/z", false) && out(&e, "a/b/c/z", false));
        assert!(out(&e, "doc/r.txt", false) && !out(&e, "doc/sub/r.txt", false));
        assert!(!out(&e, "x.tmpl", false));
        // A negation takes back what an earlier pattern excluded.
        let e = rules(&["*.log", "!keep.log"]);
        assert!(out(&e, "a.log", false) && !out(&e, "keep.log", false));
        // A leading # is part of the pattern, not a comment.
        let e = rules(&["#notes"]);
        assert!(out(&e, "#notes", false));
    }

    /// Names are bytes: `?` and `*` match bytes that are not UTF-8, and a pattern holding
    /// U+FFFD (what a lossy copy of such a byte would show) matches only U+FFFD itself.
    #[test]
    fn names_that_are_not_utf8_are_matched_on_their_bytes_never_lossily() {
        let p = |b: &[u8]| PathBuf::from(OsStr::from_bytes(b));
        let e = rules(&["a?"]);
        assert!(e.matched(&p(b"a\xff"), false).is_some());
        assert!(
            e.matched(&p(b"a\xc3\xa9"), false).is_none(),
            "? is one byte"
        );
        let e = rules(&["x\u{fffd}"]);
        assert!(e.matched(&p(b"x\xff"), false).is_none());
        assert!(e.matched(&p(b"x\xef\xbf\xbd"), false).is_some());
        let e = rules(&["*.bin"]);
        assert!(e.matched(&p(b"d\xfe/\xff.bin"), false).is_some());
    }

    #[test]
    fn bad_rules_are_refused_naming_where_they_came_from() {
        let mut b = ExclusionBuilder::new();
        let e = b.pattern(OsStr::new("a[b")).unwrap_err().to_string();
        assert!(e.starts_with("--exclude 'a[b': bad pattern: "), "{e}");
        for empty in ["", "!", "/", "!/", "  "] {
            let e = b.pattern(OsStr::new(empty)).unwrap_err().to_string();
            assert!(e.contains("an empty pattern"), "{empty:?}: {e}");
        }
        let e = b
            .pattern(OsStr::from_bytes(b"\xff"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--exclude: a pattern must be UTF-8"), "{e}");
        let e = b
            .file(Path::new("EX"), b"# c\n\nok\nbad[\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("EX:4: 'bad[': bad pattern"), "{e}");
        let e = b
            .file(Path::new("EX"), b"fine\n\xfe\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("EX:2: a pattern must be UTF-8"), "{e}");
        for name in ["", "a/b", ".", ".."] {
            let e = b.if_present(OsStr::new(name)).unwrap_err().to_string();
            assert!(e.contains("expected one name"), "{name:?}: {e}");
        }
    }

    /// What fails only once all the patterns are compiled together (the matcher's automaton
    /// has a size limit) names where they came from, not `--exclude` followed by every pattern
    /// (a megabyte of them); one pattern too long is named by its file and line, cut short.
    #[test]
    fn patterns_too_much_together_are_named_by_their_file_not_echoed() {
        let long = "*?".repeat(35_000);
        let mut b = ExclusionBuilder::new();
        b.file(Path::new("rules.txt"), format!("{long}\n").as_bytes())
            .unwrap();
        b.pattern(OsStr::new(&long[1..])).unwrap();
        let e = b.build().unwrap_err().to_string();
        assert!(
            e.starts_with("--exclude-from rules.txt, --exclude: 2 patterns (139999 bytes), ")
                && e.contains("more than the matcher can take together ("),
            "{}",
            &e[..e.len().min(300)]
        );
        assert!(e.len() < 300, "{} bytes", e.len());
        let mut b = ExclusionBuilder::new();
        let one = "*?".repeat(70_000);
        b.file(Path::new("rules.txt"), format!("# c\n{one}\n").as_bytes())
            .unwrap();
        let e = b.build().unwrap_err().to_string();
        assert!(
            e.starts_with("rules.txt:2: '*?*?"),
            "{}",
            &e[..e.len().min(300)]
        );
        assert!(
            e.contains("... (140000 bytes)': bad pattern: "),
            "{}",
            &e[..e.len().min(300)]
        );
        assert!(e.len() < 300, "{} bytes", e.len());
    }

    /// What matched is the pattern as given: a leading `#` not escaped, trailing spaces kept.
    #[test]
    fn the_pattern_that_matched_is_told_as_given() {
        let e = rules(&["#notes", "top   ", "*.o"]);
        assert_eq!(e.matched(Path::new("#notes"), false), Some("#notes"));
        assert_eq!(e.matched(Path::new("top"), false), Some("top   "));
        assert_eq!(e.matched(Path::new("a/b.o"), false), Some("*.o"));
        let w = e.why(Path::new("/t/top"), Path::new("top"), false);
        assert_eq!(w, Some(Why::Pattern("top   ".into())));
    }

    #[test]
    fn a_file_gives_its_lines_comments_and_blanks_left_out() {
        let mut b = ExclusionBuilder::new();
        b.file(
            Path::new("F"),
            b"\xef\xbb\xbf# comment\n*.o\r\n\n  \nlib/\n\\#x\n",
        )
        .unwrap();
        let e = b.build().unwrap();
        assert_eq!(e.patterns(), ["*.o", "lib/", "\\#x"]);
        assert!(out(&e, "a.o", false) && out(&e, "lib", true) && out(&e, "#x", false));
        assert!(ExclusionBuilder::new().build().unwrap().is_empty());
    }

    /// Below an excluded directory nothing is taken back (the walk never lists it), for files
    /// the walk did not meet as for those it did.
    #[test]
    fn a_file_below_an_excluded_directory_is_excluded_whatever_comes_after() {
        let e = rules(&["cache/", "!cache/keep", "*.tmp"]);
        assert!(e.excludes_file(Path::new("a/cache/keep")));
        assert!(e.excludes_file(Path::new("a/b.tmp")));
        assert!(!e.excludes_file(Path::new("a/cache")), "a file named cache");
        assert!(!e.excludes_file(Path::new("a/b")));
    }

    #[test]
    fn a_directory_holding_a_name_is_excluded_links_not_followed() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        std::fs::create_dir_all(d.join("a")).unwrap();
        std::fs::create_dir_all(d.join("b")).unwrap();
        std::fs::write(d.join("a/.nobackup"), b"").unwrap();
        std::os::unix::fs::symlink("nowhere", d.join("b/.nobackup")).unwrap();
        let mut b = ExclusionBuilder::new();
        b.if_present(OsStr::new(".nobackup")).unwrap();
        let e = b.build().unwrap();
        assert_eq!(e.held_by(&d.join("a")), Some(OsStr::new(".nobackup")));
        assert_eq!(e.held_by(&d.join("b")), Some(OsStr::new(".nobackup")));
        assert_eq!(e.held_by(d), None);
        assert_eq!(
            e.why(&d.join("a"), Path::new("a"), true),
            Some(Why::Holds(".nobackup".into()))
        );
    }
}
