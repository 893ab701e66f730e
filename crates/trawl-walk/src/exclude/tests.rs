//! The unit tests of `exclude`.

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

/// More wildcards in all than the matcher is given (its memory grows with each: a
/// megabyte of `*` took it a gigabyte) are refused before anything is compiled, naming where
/// they came from, not echoing them; as many as it takes are compiled together.
#[test]
fn patterns_too_wild_together_are_named_by_their_sources_not_echoed() {
    let long = "*?".repeat(PATTERN_MAX / 2);
    let lines = format!("{long}\n").repeat(WILDCARDS_MAX / PATTERN_MAX);
    let mut b = ExclusionBuilder::new();
    b.file(Path::new("rules.txt"), lines.as_bytes()).unwrap();
    assert!(b.build().is_ok());
    let mut b = ExclusionBuilder::new();
    b.file(Path::new("rules.txt"), lines.as_bytes()).unwrap();
    let e = b.pattern(OsStr::new("a*")).unwrap_err().to_string();
    assert!(
        e.starts_with("--exclude-from rules.txt, --exclude: more than 65536 wildcards (*, ? and [) in all the patterns"),
        "{}",
        &e[..e.len().min(300)]
    );
    assert!(e.len() < 300, "{} bytes", e.len());
}

/// One pattern longer than [`PATTERN_MAX`] is refused before it is compiled, named by its
/// file and line and cut short; so are patterns of more than [`PATTERNS_MAX`] bytes in
/// all, across every flag (each file being under its own cap).
#[test]
fn a_pattern_too_long_and_too_many_bytes_in_all_are_refused_before_compiling() {
    let mut b = ExclusionBuilder::new();
    let one = "*".repeat(1 << 20);
    let e = b
        .file(Path::new("rules.txt"), format!("# c\n{one}\n").as_bytes())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("rules.txt:2: '****")
            && e.contains(&format!(
                "... (1048576 bytes)': a pattern of 1048576 bytes, longer than the {PATTERN_MAX}"
            )),
        "{}",
        &e[..e.len().min(300)]
    );
    assert!(e.len() < 300, "{} bytes", e.len());
    let e = ExclusionBuilder::new()
        .pattern(OsStr::new(&one[..PATTERN_MAX + 1]))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("--exclude '**"), "{}", &e[..100]);
    let mut b = ExclusionBuilder::new();
    let line = format!("{}\n", "a".repeat(PATTERN_MAX));
    let file = line.repeat(PATTERNS_MAX / PATTERN_MAX / 2);
    b.file(Path::new("one"), file.as_bytes()).unwrap();
    b.pattern(OsStr::new("x")).unwrap();
    let e = b
        .file(Path::new("two"), file.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--exclude-from one, --exclude, --exclude-from two: more than 1048576 bytes of patterns in all"),
        "{e}"
    );
}

/// A pattern no path below the root can match (a `..` component, a NUL byte) and an
/// `--exclude-if-present` name longer than a file name can be are refused, named.
#[test]
fn what_can_never_match_is_refused() {
    let mut b = ExclusionBuilder::new();
    for p in ["../x", "a/../b", "!/..", "..", "x/.."] {
        let e = b.pattern(OsStr::new(p)).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("--exclude '{p}': it holds a '..' component")),
            "{e}"
        );
    }
    for ok in ["..x", "x..", "a/...b"] {
        b.pattern(OsStr::new(ok)).unwrap();
    }
    let e = b
        .file(Path::new("EX"), b"ok\na\0b\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("EX:2: 'a\\0b': it holds a NUL byte, which no name holds"),
        "{e}"
    );
    let long = "n".repeat(256);
    let e = b.if_present(OsStr::new(&long)).unwrap_err().to_string();
    assert!(
        e.contains("a name of 256 bytes, longer than the 255"),
        "{e}"
    );
    b.if_present(OsStr::new(&long[1..])).unwrap();
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
