//! Excluding what is not to be read (`--exclude`, `--exclude-from`, `--exclude-if-present`) on
//! scan, audit and bag create: the patterns held to git's own matcher, the walk to strace (an
//! excluded directory is never opened), the counts and the outputs to find(1) and coreutils.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::util::{Dir, mkfifo, skip, tool};

/// The names of a `-z` manifest (`HEX  NAME\0`), as bytes.
fn manifest_names(path: &Path) -> BTreeSet<Vec<u8>> {
    std::fs::read(path)
        .unwrap()
        .split(|&b| b == 0)
        .filter(|l| !l.is_empty())
        .map(|l| l[l.iter().position(|&b| b == b' ').unwrap() + 2..].to_vec())
        .collect()
}

/// Runs a command in `dir`; its stdout, asserting it succeeded.
pub(crate) fn output(dir: &Path, prog: &Path, args: &[&OsStr]) -> Vec<u8> {
    let o = Command::new(prog)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{} {args:?}: {}",
        prog.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

pub(crate) fn json(d: &Dir, name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(d.join(name)).unwrap()).unwrap()
}

/// A tree with a name for every form of pattern, names that are not UTF-8 included.
fn pattern_tree(d: &Dir) {
    for n in [
        &b"t/a.tmp"[..],
        b"t/sub/b.tmp",
        b"t/build/x",
        b"t/sub/build/y",
        b"t/top.txt",
        b"t/sub/top.txt",
        b"t/doc/r.txt",
        b"t/doc/sub/r.txt",
        b"t/a/z",
        b"t/a/b/c/z",
        b"t/keep.log",
        b"t/sub/keep.log",
        b"t/sub/x.log",
        b"t/caf\xc3\xa9",
        b"t/caf\xc3\xa9s",
        b"t/x\xff",
        b"t/x\xff\xfe",
        b"t/d\xfe/in",
        b"t/#hash",
        b"t/sp ace",
        b"t/nested/cache/deep/f",
        b"t/nested/cachefile",
        b"t/plain",
    ] {
        d.create(n, n);
    }
}

/// The patterns of `pattern_tree`, one a line, with a comment and a blank line.
const PATTERNS: &str = "# build products\n*.tmp\n/top.txt\nbuild/\na/**/z\ndoc/*.txt\n\n*.log\n!keep.log\ncaf?\nx?\nd?/\n\\#hash\ncache/\n";

/// What git leaves out (files it lists as untracked and not ignored), with `exclude_args`
/// (its `-x PATTERN` / `-X FILE`) in their order: names relative to `t`, as bytes.
fn git_keeps(d: &Dir, git: &Path, exclude_args: &[&str]) -> BTreeSet<Vec<u8>> {
    let repo = d.join("ref");
    if !repo.exists() {
        output(
            d.path(),
            git,
            &["init".as_ref(), "-q".as_ref(), "ref".as_ref()],
        );
    }
    let mut args: Vec<&OsStr> = vec![
        "--git-dir=ref/.git".as_ref(),
        "--work-tree=t".as_ref(),
        "ls-files".as_ref(),
        "-z".as_ref(),
        "--others".as_ref(),
    ];
    args.extend(exclude_args.iter().map(OsStr::new));
    output(d.path(), git, &args)
        .split(|&b| b == 0)
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// Every form of pattern (anchored, directories only, `**`, a negation, `?` on bytes that are
/// not UTF-8, an escaped `#`) leaves out of a scan exactly what git leaves out of its listing,
/// from a file and given one by one; and the order of `--exclude` and `--exclude-from` on the
/// command line is the order the patterns take, as git takes `-x` and `-X`.
#[test]
fn patterns_leave_out_what_git_leaves_out() {
    let Some(git) = tool("git") else { return };
    let d = Dir::new();
    pattern_tree(&d);
    std::fs::write(d.join("pats"), PATTERNS).unwrap();
    let want = git_keeps(&d, &git, &["--exclude-from=pats"]);
    // A sanity check of the reference: it left things out, and kept the taken-back name.
    assert!(
        want.len() < 23 && want.contains(&b"keep.log"[..]),
        "{want:?}"
    );
    d.cmd()
        .args(["scan", "t", "-q", "--no-reduce", "-z", "-m", "sha256sum:S1"])
        .args(["--exclude-from", "pats"])
        .run()
        .code(0);
    assert_eq!(manifest_names(&d.join("S1")), want);
    let mut one_by_one =
        d.cmd()
            .args(["scan", "t", "-q", "--no-reduce", "-z", "-m", "sha256sum:S2"]);
    for p in PATTERNS
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        one_by_one = one_by_one.arg(format!("--exclude={p}"));
    }
    one_by_one.run().code(0);
    assert_eq!(manifest_names(&d.join("S2")), want);

    // Order: the command line's. A negation after the pattern takes the name back; before it,
    // it does not. (git gives `-x` patterns precedence over `-X` files whatever their order:
    // it cannot be the reference here; the expectation is written out.)
    std::fs::write(d.join("neg"), "!sub/x.log\n").unwrap();
    let logs_out = git_keeps(&d, &git, &["--exclude=*.log"]);
    assert!(!logs_out.contains(&b"sub/x.log"[..]));
    for (n, args) in [
        ("S3", ["--exclude=*.log", "--exclude-from=neg"]),
        ("S4", ["--exclude-from=neg", "--exclude=*.log"]),
    ] {
        d.cmd()
            .args(["scan", "t", "-q", "--no-reduce", "-z", "-m"])
            .arg(format!("sha256sum:{n}"))
            .args(args)
            .run()
            .code(0);
        let mut want = logs_out.clone();
        if n == "S3" {
            want.insert(b"sub/x.log".to_vec());
        }
        assert_eq!(manifest_names(&d.join(n)), want, "{args:?}");
    }
}

/// An excluded directory is never opened, so never listed (no getdents64 can reach it): in a
/// trace of every system call that names a file, nothing below it is named, the directory
/// itself neither; a directory holding an `--exclude-if-present` name is looked into for that
/// name alone. The same trace without the exclusion names them (the check can fail).
#[test]
fn an_excluded_directory_is_never_opened_or_listed() {
    let Some(strace) = tool("strace") else { return };
    let d = Dir::new();
    for f in [
        "t/keep/f",
        "t/big/d1/f",
        "t/big/d2/g",
        "t/box/.nobackup",
        "t/box/inner/h",
    ] {
        d.create(f.as_bytes(), b"x");
    }
    let trace = |extra: &[&str]| -> String {
        let o = Command::new(&strace)
            .args([
                "-f",
                "-qq",
                "-e",
                "trace=%file,getdents64",
                "-o",
                "trace.txt",
            ])
            .arg(env!("CARGO_BIN_EXE_trawl"))
            .args(["scan", "t", "-q", "--no-reduce"])
            .args(extra)
            .current_dir(d.path())
            .output()
            .unwrap();
        let text = std::fs::read_to_string(d.join("trace.txt")).unwrap_or_default();
        if !o.status.success() && text.is_empty() {
            return String::new();
        }
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        text
    };
    let plain = trace(&[]);
    if plain.is_empty() {
        skip("strace cannot trace here (ptrace not permitted)");
        return;
    }
    let getdents = |t: &str| t.lines().filter(|l| l.contains("getdents64(")).count();
    for name in ["\"t/big", "\"t/box\"", "\"t/box/inner"] {
        assert!(plain.contains(name), "the control run names {name}");
    }
    let excluded = trace(&["--exclude", "big/", "--exclude-if-present", ".nobackup"]);
    assert!(excluded.contains("\"t/keep\""), "the walk was traced");
    for name in ["\"t/big", "\"t/box\"", "\"t/box/inner"] {
        let seen: Vec<&str> = excluded.lines().filter(|l| l.contains(name)).collect();
        assert!(seen.is_empty(), "{name} named by {seen:?}");
    }
    // The one look into box: whether it holds the name, without listing it.
    assert!(excluded.contains("\"t/box/.nobackup\""));
    // Five directories fewer listed: big, big/d1, big/d2, box, box/inner (each listed
    // until getdents64 returns 0, at least twice).
    assert!(
        getdents(&excluded) + 10 <= getdents(&plain),
        "getdents64: {} with the exclusion, {} without",
        getdents(&excluded),
        getdents(&plain)
    );
}

/// What is excluded is counted (files and their bytes, directories) and named in the JSON
/// report, as find(1) with -prune counts it, and is in no output: the manifest, the file list,
/// the JSON Lines, the page, the ncdu export, the duplicate groups, the reduction's bytes.
#[test]
fn excluded_entries_are_counted_and_absent_from_every_output() {
    let Some(find) = tool("find") else { return };
    let d = Dir::new();
    let same = vec![9u8; 5000];
    d.create(b"t/a.dat", &[1u8; 3000]);
    d.create(b"t/dup1", &same);
    d.create(b"t/sub/dup2", &same);
    d.create(b"t/sub/skipme.tmp", b"EXCLUDED-CONTENT-1");
    d.create(b"t/sub/also.tmp", b"EXCLUDED-CONTENT-22");
    d.create(b"t/cache/dup3", &same);
    d.create(b"t/cache/d/cached.dat", b"EXCLUDED-CONTENT-333");
    d.cmd()
        .args(["scan", "t", "--exclude", "*.tmp", "--exclude", "cache/"])
        .args([
            "-m",
            "sha256sum:S",
            "--json",
            "r.json",
            "--jsonl",
            "r.jsonl",
        ])
        .args([
            "--html",
            "r.html",
            "--ncdu",
            "r.ncdu",
            "--duplicates",
            "d.txt",
        ])
        .run()
        .code(0)
        .stdout_has("excluded: 1 directory (not listed), 2 files (37 B)");
    let f = |args: &[&str]| -> Vec<u8> {
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        output(d.path(), &find, &args)
    };
    // find's view: what is kept, the files excluded with their sizes, the directory pruned.
    let kept: BTreeSet<String> = String::from_utf8(f(&[
        "t", "-path", "t/cache", "-prune", "-o", "-type", "f", "!", "-name", "*.tmp", "-print",
    ]))
    .unwrap()
    .lines()
    .map(|l| l.strip_prefix("t/").unwrap().to_string())
    .collect();
    let sizes = String::from_utf8(f(&[
        "t", "-path", "t/cache", "-prune", "-o", "-type", "f", "-name", "*.tmp", "-printf", "%s\n",
    ]))
    .unwrap();
    let excluded_bytes: u64 = sizes.lines().map(|l| l.parse::<u64>().unwrap()).sum();
    let pruned = f(&["t", "-type", "d", "-name", "cache", "-prune", "-print"]);
    let kept_bytes: u64 = String::from_utf8(f(&[
        "t", "-path", "t/cache", "-prune", "-o", "-type", "f", "!", "-name", "*.tmp", "-printf",
        "%s\n",
    ]))
    .unwrap()
    .lines()
    .map(|l| l.parse::<u64>().unwrap())
    .sum();

    let r = json(&d, "r.json");
    let x = &r["excluded"];
    assert_eq!(x["files"], sizes.lines().count() as u64);
    assert_eq!(x["bytes"], excluded_bytes);
    assert_eq!(
        x["directories"],
        pruned
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count() as u64
    );
    assert_eq!(x["patterns"], serde_json::json!(["*.tmp", "cache/"]));
    let listed: Vec<&str> = x["listed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["t/cache", "t/sub/also.tmp", "t/sub/skipme.tmp"]);
    let files: BTreeSet<String> = r["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            e["path"]
                .as_str()
                .unwrap()
                .strip_prefix("t/")
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(files, kept);
    let names: BTreeSet<String> = manifest_names_text(&d.join("S"));
    assert_eq!(names, kept);
    assert_eq!(r["totals"]["bytes"], kept_bytes);
    assert_eq!(r["reduction"]["dedup"][0]["logical_bytes"], kept_bytes);
    // The duplicate group holds the two kept copies, not the excluded third.
    let dups = std::fs::read_to_string(d.join("d.txt")).unwrap();
    assert!(dups.contains("dup1") && dups.contains("dup2") && !dups.contains("dup3"));
    // No output names an excluded entry (the JSON report only under `excluded`).
    let mut report = r.clone();
    report.as_object_mut().unwrap().remove("excluded");
    let outputs = [
        ("S", std::fs::read(d.join("S")).unwrap()),
        ("r.json", serde_json::to_vec(&report).unwrap()),
        ("r.jsonl", std::fs::read(d.join("r.jsonl")).unwrap()),
        ("r.html", std::fs::read(d.join("r.html")).unwrap()),
        ("r.ncdu", std::fs::read(d.join("r.ncdu")).unwrap()),
        // Its comment lines give the command line, exclusions included.
        (
            "d.txt",
            dups.lines()
                .filter(|l| !l.starts_with('#'))
                .collect::<String>()
                .into_bytes(),
        ),
    ];
    for (name, bytes) in &outputs {
        for gone in ["skipme", "also.tmp", "cache", "dup3", "EXCLUDED-CONTENT"] {
            assert!(
                !bytes.windows(gone.len()).any(|w| w == gone.as_bytes()),
                "{name} names {gone}"
            );
        }
    }
    // Without the flags the report has no `excluded` at all (reports of before stay as they
    // were).
    d.cmd()
        .args(["scan", "t", "-q", "--json", "plain.json"])
        .run()
        .code(0);
    assert!(json(&d, "plain.json").get("excluded").is_none());
}

/// The names of a manifest written without `-z` (plain names here).
fn manifest_names_text(path: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split_once("  ").unwrap().1.to_string())
        .collect()
}

/// A huge excluded set is named up to a bound and counted past it: 1,000 names in path order,
/// the rest counted, every file's bytes summed.
#[test]
fn the_excluded_list_is_bounded_and_the_rest_counted() {
    let d = Dir::new();
    for i in 0..1200 {
        d.create(format!("t/f{i:04}.tmp").as_bytes(), b"ab");
    }
    d.create(b"t/kept", b"k");
    d.cmd()
        .args([
            "scan",
            "t",
            "-q",
            "--no-reduce",
            "--exclude",
            "*.tmp",
            "--json",
            "r.json",
        ])
        .run()
        .code(0);
    let x = json(&d, "r.json")["excluded"].clone();
    assert_eq!(
        (x["files"].as_u64(), x["bytes"].as_u64()),
        (Some(1200), Some(2400))
    );
    let listed = x["listed"].as_array().unwrap();
    assert_eq!(listed.len(), 1000);
    assert_eq!(x["not_listed"], 200);
    assert_eq!(listed[0]["path"], "t/f0000.tmp");
    assert_eq!(listed[999]["path"], "t/f0999.tmp");
}

/// A rule that cannot be used is refused by name, exit 2, before anything is read or any output
/// made; an `--exclude-from` file is read as trawl reads a small input (a FIFO is refused at
/// once, a file past 1 MiB refused naming the limit). A pattern past 4096 bytes (a megabyte of
/// `*` would take the matcher a gigabyte), more than 1 MiB of patterns or 65,536 wildcards
/// across every flag are refused before anything is compiled; so is what can never match (a `..` component, a NUL,
/// an `--exclude-if-present` name longer than a name can be).
#[test]
fn a_bad_rule_is_refused_by_name_before_anything_is_read() {
    let d = Dir::new();
    d.create(b"t/a", b"a");
    std::fs::write(d.join("bad.txt"), "ok\nbad[\n").unwrap();
    std::fs::write(d.join("notutf8.txt"), b"ok\n\xff\n").unwrap();
    std::fs::write(d.join("big.txt"), vec![b'x'; 2 << 20]).unwrap();
    mkfifo(&d.join("fifo"));
    std::fs::write(d.join("long.txt"), vec![b'*'; (1 << 20) - 1]).unwrap();
    let half = format!("{}\n", "a".repeat(4095)).repeat(150);
    std::fs::write(d.join("half.txt"), &half).unwrap();
    std::fs::write(d.join("nul.txt"), b"ok\na\0b\n").unwrap();
    let wild = format!("{}\n", "*".repeat(4096)).repeat(255);
    std::fs::write(d.join("wild.txt"), &wild).unwrap();
    let long_name = "n".repeat(256);
    let cases: Vec<(Vec<&OsStr>, &str)> = vec![
        (
            vec!["--exclude".as_ref(), "a[".as_ref()],
            "--exclude 'a[': bad pattern",
        ),
        (
            vec!["--exclude=".as_ref()],
            "--exclude '': an empty pattern",
        ),
        (
            vec!["--exclude".as_ref(), "!/".as_ref()],
            "--exclude '!/': an empty pattern",
        ),
        (
            vec!["--exclude".as_ref(), OsStr::from_bytes(b"\xff")],
            "--exclude: a pattern must be UTF-8 text",
        ),
        (
            vec!["--exclude-from".as_ref(), "bad.txt".as_ref()],
            "bad.txt:2: 'bad[': bad pattern",
        ),
        (
            vec!["--exclude-from".as_ref(), "notutf8.txt".as_ref()],
            "notutf8.txt:2: a pattern must be UTF-8 text",
        ),
        (
            vec!["--exclude-from".as_ref(), "missing.txt".as_ref()],
            "--exclude-from missing.txt: cannot read it: no such file",
        ),
        (
            vec!["--exclude-from".as_ref(), "fifo".as_ref()],
            "--exclude-from fifo: FIFO (named pipe), not read",
        ),
        (
            vec!["--exclude-from".as_ref(), "big.txt".as_ref()],
            "more than the 1048576",
        ),
        (
            vec!["--exclude-if-present".as_ref(), "a/b".as_ref()],
            "--exclude-if-present 'a/b': expected one name",
        ),
        (
            vec!["--exclude-from".as_ref(), "long.txt".as_ref()],
            "long.txt:1: '*****",
        ),
        (
            vec!["--exclude-from".as_ref(), "long.txt".as_ref()],
            "(1048575 bytes)': a pattern of 1048575 bytes, longer than the 4096",
        ),
        (
            vec![
                "--exclude-from".as_ref(),
                "half.txt".as_ref(),
                "--exclude-from".as_ref(),
                "half.txt".as_ref(),
            ],
            "--exclude-from half.txt: more than 1048576 bytes of patterns in all",
        ),
        (
            vec!["--exclude-from".as_ref(), "wild.txt".as_ref()],
            "--exclude-from wild.txt: more than 65536 wildcards (*, ? and [) in all the patterns",
        ),
        (
            vec!["--exclude".as_ref(), "../x".as_ref()],
            "--exclude '../x': it holds a '..' component, which no path below the root has, so it can never match",
        ),
        (
            vec!["--exclude-from".as_ref(), "nul.txt".as_ref()],
            "nul.txt:2: 'a\\0b': it holds a NUL byte",
        ),
        (
            vec!["--exclude-if-present".as_ref(), long_name.as_ref()],
            "a name of 256 bytes, longer than the 255 a file name can have",
        ),
    ];
    for (args, want) in &cases {
        d.cmd()
            .args(["scan", "t", "-m", "sha256sum:S"])
            .args(args)
            .run_within(20)
            .code(2)
            .stderr_has(want);
        assert!(!d.join("S").exists(), "{args:?}: an output was made");
    }
    // The same words from audit and bag create, with no catalog and no bag made.
    let (args, want) = &cases[0];
    d.cmd()
        .args(["audit", "t", "-c", "cat.db"])
        .args(args)
        .run()
        .code(2)
        .stderr_has(want);
    assert!(!d.join("cat.db").exists());
    d.cmd()
        .args(["bag", "create", "t", "--out", "bag"])
        .args(args)
        .run()
        .code(2)
        .stderr_has(want);
    assert!(!d.join("bag").exists());
    d.cmd()
        .args(["audit", "--ocfl", "t", "-c", "cat.db", "--exclude", "x"])
        .run()
        .code(2)
        .stderr_has("do not apply with --ocfl");
}

/// `excluded.listed[].holds` spells a name that is not UTF-8 as `if_present[]` does: the text
/// lossily, and its bytes in `holds_hex` (only then; a UTF-8 name has no `holds_hex`).
#[test]
fn a_held_name_that_is_not_utf8_has_its_bytes_in_holds_hex() {
    let d = Dir::new();
    d.create(b"t/keep.txt", b"k");
    d.create(b"t/odd/n\xffb", b"");
    d.create(b"t/plain/.nobackup", b"");
    d.cmd()
        .args(["scan", "t", "-q", "--json", "r.json"])
        .args([
            "--exclude-if-present".as_ref(),
            OsStr::from_bytes(b"n\xffb"),
        ])
        .args(["--exclude-if-present", ".nobackup"])
        .run()
        .code(0);
    let x = json(&d, "r.json")["excluded"].clone();
    assert_eq!(x["if_present"][0]["path_hex"], "6eff62", "{x}");
    let listed = x["listed"].as_array().unwrap();
    assert_eq!(listed.len(), 2, "{x}");
    assert_eq!(listed[0]["path"], "t/odd");
    assert_eq!(listed[0]["holds"], "n\u{fffd}b");
    assert_eq!(listed[0]["holds_hex"], "6eff62");
    assert_eq!(listed[1]["holds"], ".nobackup");
    assert!(listed[1].get("holds_hex").is_none(), "{x}");
}
