//! A profile's list of globs (`Tag-Files-Allowed`, `Payload-Files-Allowed`), each compiled
//! once, and a bag's file names, as bytes, matched against them.

use std::collections::HashSet;

/// How the profile's globs are matched: case matters, `*` and `?` never match a `/`.
const OPTIONS: glob::MatchOptions = glob::MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

/// The globs of one field, compiled: those without a wildcard kept as names (matched by
/// looking them up), the others as patterns.
#[derive(Debug, Clone, Default)]
pub(super) struct Globs {
    /// The globs that hold no `*`, `?` or `[`: each matches itself only.
    names: HashSet<String>,
    /// The other globs.
    patterns: Vec<Pattern>,
}

/// One glob with a wildcard.
#[derive(Debug, Clone)]
struct Pattern {
    /// The glob compiled.
    glob: glob::Pattern,
    /// The text before its first wildcard, which every name it matches starts with.
    prefix: String,
    /// For `dir/*`, `dir/`: such a glob means everything below dir/, as the validators
    /// read it.
    below: Option<String>,
}

impl Globs {
    /// `globs` compiled, or why one of them is no glob (naming `field` and the glob).
    pub(super) fn new(field: &str, globs: &[String]) -> Result<Globs, String> {
        let mut out = Globs::default();
        for g in globs {
            let glob = glob::Pattern::new(g).map_err(|e| format!("{field}: '{g}': {e}"))?;
            match g.find(['*', '?', '[']) {
                None => {
                    out.names.insert(g.clone());
                }
                Some(at) => out.patterns.push(Pattern {
                    glob,
                    prefix: g[..at].to_string(),
                    below: g.strip_suffix("/*").map(|d| format!("{d}/")),
                }),
            }
        }
        Ok(out)
    }

    /// Whether one of the globs matches `name` (relative to the bag's top, `/`-separated).
    /// A name that is not UTF-8 equals no glob's text: where it is not, a glob matches it
    /// only if it matches whatever character stands for each stray byte (so a wildcard, never
    /// a literal, takes that byte).
    pub(super) fn matches(&self, name: &[u8]) -> bool {
        match std::str::from_utf8(name) {
            Ok(text) => {
                self.names.contains(text) || self.patterns.iter().any(|p| p.matches(name, text))
            }
            Err(_) => {
                let (a, b) = (stand_in(name, '\u{FFFD}'), stand_in(name, '\0'));
                self.patterns
                    .iter()
                    .any(|p| p.matches(name, &a) && p.matches(name, &b))
            }
        }
    }
}

impl Pattern {
    /// Whether this glob matches `name`, given as `text` (the name itself when UTF-8).
    fn matches(&self, name: &[u8], text: &str) -> bool {
        if self
            .below
            .as_ref()
            .is_some_and(|d| name.starts_with(d.as_bytes()))
        {
            return true;
        }
        name.starts_with(self.prefix.as_bytes()) && self.glob.matches_with(text, OPTIONS)
    }
}

/// `name` as text, each byte that is not part of valid UTF-8 written as `c`.
fn stand_in(name: &[u8], c: char) -> String {
    let mut out = String::with_capacity(name.len());
    for chunk in name.utf8_chunks() {
        out.push_str(chunk.valid());
        out.extend(chunk.invalid().iter().map(|_| c));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(g: &[&str]) -> Globs {
        let g: Vec<String> = g.iter().map(|s| s.to_string()).collect();
        Globs::new("F", &g).unwrap()
    }

    /// A name that is not UTF-8 is never equal to a glob's text (not even the text its lossy
    /// conversion gives); a wildcard matches its stray bytes.
    #[test]
    fn a_name_that_is_not_utf8_is_matched_on_its_bytes() {
        let name = b"extra\xff.txt";
        assert!(!globs(&["extra\u{FFFD}.txt"]).matches(name));
        assert!(!globs(&["extra\u{FFFD}*"]).matches(name));
        assert!(!globs(&["extra\0.txt"]).matches(name));
        assert!(globs(&["extra?.txt"]).matches(name));
        assert!(globs(&["*"]).matches(name));
        assert!(globs(&["ex*.txt"]).matches(name));
        assert!(!globs(&["*.tx"]).matches(name));
        assert!(globs(&["d/*"]).matches(b"d/sub/\xfe"));
    }

    /// Globs without a wildcard match themselves; `dir/*` everything below dir/; `*` no `/`.
    #[test]
    fn globs_match_as_the_profile_says() {
        let g = globs(&["a.txt", "meta/*", "x*.txt", "[ab]?.md"]);
        for yes in ["a.txt", "meta/one", "meta/deep/two", "x1.txt", "b9.md"] {
            assert!(g.matches(yes.as_bytes()), "{yes}");
        }
        for no in ["b.txt", "metax", "x/1.txt", "c9.md", "A.txt"] {
            assert!(!g.matches(no.as_bytes()), "{no}");
        }
        assert!(
            Globs::new("F", &["[".to_string()])
                .unwrap_err()
                .contains("F: '['")
        );
    }
}
