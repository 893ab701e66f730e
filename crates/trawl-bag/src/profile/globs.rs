//! A profile's list of globs (`Tag-Files-Allowed`, `Payload-Files-Allowed`), each compiled
//! once, and a bag's file names, as bytes, matched against them.

use std::collections::{HashMap, HashSet};

/// How the profile's globs are matched: case matters, `*` and `?` never match a `/`.
const OPTIONS: glob::MatchOptions = glob::MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

/// The most work [`Globs::first_unmatched`] does, in steps (a look-up of a prefix, a
/// glob's literal ends compared: one step; a glob matched whole: [`FULL_MATCH`] steps): a
/// profile is a few dozen lines, and past this a hostile one of a megabyte would take
/// minutes; well under a second's work.
pub(super) const WORK_MAX: usize = 10_000_000;

/// What matching a glob whole costs, in [`WORK_MAX`]'s steps.
const FULL_MATCH: usize = 25;

/// The globs of one field, compiled: those without a wildcard kept as names (matched by
/// looking them up), the others by the text before their first wildcard (so that a name is
/// tried only against the globs whose start it has).
#[derive(Debug, Clone, Default)]
pub(super) struct Globs {
    /// The globs that hold no `*`, `?` or `[`: each matches itself only.
    names: HashSet<String>,
    /// The other globs, by the text before their first wildcard.
    by_prefix: HashMap<Vec<u8>, Vec<Pattern>>,
    /// The lengths of those texts, each once, shortest first.
    prefix_lens: Vec<usize>,
}

/// One glob with a wildcard.
#[derive(Debug, Clone)]
struct Pattern {
    /// The glob compiled.
    glob: glob::Pattern,
    /// The text after its last wildcard (or class), which every name it matches ends with.
    suffix: String,
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
            let Some(at) = g.find(['*', '?', '[']) else {
                out.names.insert(g.clone());
                continue;
            };
            let end = g.rfind(['*', '?', ']']).map_or(g.len(), |end| end + 1);
            out.by_prefix
                .entry(g.as_bytes()[..at].to_vec())
                .or_default()
                .push(Pattern {
                    glob,
                    suffix: g[end..].to_string(),
                    below: g.strip_suffix("/*").map(|d| format!("{d}/")),
                });
        }
        out.prefix_lens = out.by_prefix.keys().map(Vec::len).collect();
        out.prefix_lens.sort_unstable();
        out.prefix_lens.dedup();
        Ok(out)
    }

    /// The first of `names` (the profile's own, each a name, not a glob) that no glob
    /// matches; Err where finding it would take more than [`WORK_MAX`] steps.
    pub(super) fn first_unmatched<'a>(
        &self,
        names: &'a [String],
    ) -> Result<Option<&'a String>, ()> {
        let mut work = WORK_MAX;
        for n in names {
            if !self.names.contains(n) && !self.matches_within(n.as_bytes(), &mut work)? {
                return Ok(Some(n));
            }
        }
        Ok(None)
    }

    /// Whether one of the globs matches `name` (relative to the bag's top, `/`-separated).
    /// A name that is not UTF-8 equals no glob's text: where it is not, a glob matches it
    /// only if it matches whatever character stands for each stray byte (so a wildcard, never
    /// a literal, takes that byte).
    pub(super) fn matches(&self, name: &[u8]) -> bool {
        let text = std::str::from_utf8(name).ok();
        // A bag's names are matched without a bound: the work grows with the bag.
        let mut unbounded = usize::MAX;
        text.is_some_and(|t| self.names.contains(t))
            || self.matches_within(name, &mut unbounded).unwrap_or(false)
    }

    /// Whether a glob with a wildcard matches `name`, each step taken off `work`; Err once
    /// it is spent.
    fn matches_within(&self, name: &[u8], work: &mut usize) -> Result<bool, ()> {
        let texts = match std::str::from_utf8(name) {
            Ok(text) => vec![text.to_string()],
            Err(_) => vec![stand_in(name, '\u{FFFD}'), stand_in(name, '\0')],
        };
        let mut spend = |steps: usize| {
            *work = work.checked_sub(steps).ok_or(())?;
            Ok::<(), ()>(())
        };
        for &len in self
            .prefix_lens
            .iter()
            .take_while(|&&len| len <= name.len())
        {
            spend(1)?;
            for p in self.by_prefix.get(&name[..len]).into_iter().flatten() {
                spend(1)?;
                if p.below
                    .as_ref()
                    .is_some_and(|d| name.starts_with(d.as_bytes()))
                {
                    return Ok(true);
                }
                if !name.ends_with(p.suffix.as_bytes()) {
                    continue;
                }
                spend(FULL_MATCH * texts.len())?;
                if texts.iter().all(|t| p.glob.matches_with(t, OPTIONS)) {
                    return Ok(true);
                }
            }
        }
        Ok(false)
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
