//! Reports other tools read: the duplicate groups in fclones' format (`--duplicates`) and the
//! ncdu export, checked against a few lines of Python and against those tools.

use std::collections::BTreeSet;
use std::process::Command;

use crate::report::{read_json, tree};
use crate::util::{Dir, python_json, python_with, tool};

/// Groups as sets of names, from fclones' text format (group headers, then indented names).
fn groups_of_text(text: &str) -> BTreeSet<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    let mut cur: Option<BTreeSet<String>> = None;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        if let Some(name) = line.strip_prefix("    ") {
            cur.as_mut().unwrap().insert(name.to_string());
        } else {
            out.extend(cur.take());
            cur = Some(BTreeSet::new());
        }
    }
    out.extend(cur);
    out
}

#[test]
fn duplicates_are_groups_of_equal_content_one_name_per_inode_without_empty_files() {
    if !python_with(&["hashlib"]) {
        return;
    }
    let d = Dir::new();
    tree(&d);
    d.cmd()
        .args([
            "scan",
            "t",
            "-q",
            "--duplicates",
            "dups.txt",
            "--json",
            "r.json",
        ])
        .run()
        .code(0);
    let text = std::fs::read_to_string(d.join("dups.txt")).unwrap();
    assert!(text.starts_with("# Report by fclones "), "{text}");
    // The groups as a few lines of Python find them: by size and SHA-256, one name per inode
    // (the first by name), empty files left out.
    let py = r#"
import hashlib, os, sys, json
root = os.path.abspath(sys.argv[1]); seen = {}; groups = {}
for dp, dn, fn in os.walk(root):
    for f in fn:
        p = os.path.join(dp, f); st = os.stat(p)
        if st.st_size == 0: continue
        k = (st.st_size, hashlib.sha256(open(p, 'rb').read()).hexdigest())
        groups.setdefault(k, {}).setdefault((st.st_dev, st.st_ino), []).append(p)
out = [sorted(min(v) for v in g.values()) for g in groups.values() if len(g) > 1]
print(json.dumps(out))
"#;
    let want: Vec<Vec<String>> = python_json(&d, py, "t");
    let want: BTreeSet<BTreeSet<String>> =
        want.into_iter().map(|g| g.into_iter().collect()).collect();
    assert_eq!(groups_of_text(&text), want, "{text}");
    assert_eq!(want.len(), 2);
    // The report's summary counts the same.
    let r: serde_json::Value = read_json(&d, "r.json");
    let s = &r["duplicates"];
    assert_eq!(s["groups"], 2);
    assert_eq!(s["files"], 5);
    assert_eq!(s["redundant_files"], 3);
    assert_eq!(s["redundant_bytes"], 100_000 + 2 * 12);
    assert_eq!(s["algorithm"], "sha256");
    assert_eq!(s["top"][0]["size"], 100_000);
}

#[test]
fn the_terminal_summary_says_what_duplicates_were_found() {
    let d = Dir::new();
    tree(&d);
    // The same figures as the report's (2 groups, 5 files, 3 redundant), said on the terminal.
    let r = d
        .cmd()
        .args(["scan", "t", "--duplicates", "dups.txt", "--json", "r.json"])
        .run();
    r.code(0);
    r.stdout_has("duplicates: 2 groups of identical files (5 files), ");
    r.stdout_has(" redundant in 3 files (by sha256)");
    // Two directories of the same files: a group of duplicate directories.
    for dir in ["u/c1", "u/c2"] {
        d.create(format!("{dir}/p").as_bytes(), b"pp");
        d.create(format!("{dir}/q").as_bytes(), b"qqq");
    }
    let r = d.cmd().args(["scan", "u", "--json", "u.json"]).run();
    r.code(0);
    r.stdout_has("duplicate directories: 1 group (in the JSON and HTML reports)");
    // Without --duplicates, nothing is said of duplicate files.
    let r = d.cmd().args(["scan", "t"]).run();
    r.code(0);
    assert!(!r.stdout.contains("duplicates:"), "{}", r.stdout);
}

#[test]
fn duplicates_need_a_digest_that_can_tell_files_apart() {
    let d = Dir::new();
    tree(&d);
    d.cmd()
        .args(["scan", "t", "-d", "crc32c", "--duplicates", "dups.txt"])
        .run()
        .code(2)
        .stderr_has("--duplicates compares files by a digest of 128 bits or more");
    assert!(!d.join("dups.txt").exists());
}

#[test]
fn fclones_reads_the_duplicates_report_in_both_formats() {
    let Some(fclones) = tool("fclones") else {
        return;
    };
    let d = Dir::new();
    tree(&d);
    d.cmd()
        .args(["scan", "t", "-q", "--duplicates", "dups.txt"])
        .run()
        .code(0);
    d.cmd()
        .args([
            "scan",
            "t",
            "-q",
            "--duplicates",
            "dups.json",
            "-d",
            "blake3",
        ])
        .run()
        .code(0);
    for report in ["dups.txt", "dups.json"] {
        let input = std::fs::File::open(d.join(report)).unwrap();
        let o = Command::new(&fclones)
            .args(["link", "--dry-run"])
            .current_dir(d.path())
            .stdin(input)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{report}: {stdout}\n{stderr}");
        // Each redundant copy would be replaced by a link to the group's first file.
        let abs = d.path().canonicalize().unwrap();
        for copy in ["t/a/big2.bin", "t/b/x copy.txt", "t/a/sub/x3.txt"] {
            let p = abs.join(copy).display().to_string();
            assert!(
                stdout.contains(&p),
                "{report}: {p} not in\n{stdout}\n{stderr}"
            );
        }
        assert!(
            !stdout.contains("alone") && !stdout.contains("empty"),
            "{stdout}"
        );
    }
    // Nothing was changed.
    assert_eq!(
        std::fs::read(d.join("t/b/x copy.txt")).unwrap(),
        b"hello world\n"
    );
}

/// Files of an ncdu export: path below the root -> (asize, dsize, hard-link flag).
fn ncdu_files(v: &serde_json::Value) -> std::collections::BTreeMap<String, (u64, u64, bool)> {
    fn walk(
        dir: &[serde_json::Value],
        at: &str,
        out: &mut std::collections::BTreeMap<String, (u64, u64, bool)>,
    ) {
        for item in &dir[1..] {
            match item {
                serde_json::Value::Array(sub) => {
                    let name = sub[0]["name"].as_str().unwrap();
                    walk(sub, &format!("{at}{name}/"), out);
                }
                f => {
                    let n = |k: &str| f[k].as_u64().unwrap_or(0);
                    out.insert(
                        format!("{at}{}", f["name"].as_str().unwrap()),
                        (n("asize"), n("dsize"), f["hlnkc"] == true),
                    );
                }
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(v[3].as_array().unwrap(), "", &mut out);
    out
}

#[test]
fn ncdu_reads_the_export_and_finds_the_tree_its_own_scan_finds() {
    let Some(ncdu) = tool("ncdu") else {
        return;
    };
    let d = Dir::new();
    tree(&d);
    d.create(b"t/deep/er/still/f \"q\".txt", &[1u8; 9000]);
    d.cmd()
        .args(["scan", "t", "-q", "--ncdu", "t.ncdu"])
        .run()
        .code(0);
    // ncdu imports trawl's export and writes it out again (it would refuse a malformed one);
    // its own scan of the same tree is the reference.
    let run = |args: &[&str]| {
        let o = Command::new(&ncdu)
            .args(args)
            .current_dir(d.path())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "ncdu {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    run(&["-f", "t.ncdu", "-o", "again.json"]);
    run(&["-o", "ref.json", "t"]);
    let (again, reference) = (read_json(&d, "again.json"), read_json(&d, "ref.json"));
    assert_eq!(
        again[3][0]["name"].as_str().unwrap(),
        d.path().canonicalize().unwrap().join("t").to_str().unwrap()
    );
    assert_eq!(ncdu_files(&again), ncdu_files(&reference));
    assert_eq!(ncdu_files(&again).len(), 10);
    d.cmd()
        .args(["scan", "t/a", "t/b", "--ncdu", "x.ncdu"])
        .run()
        .code(2)
        .stderr_has("--ncdu exports one directory");
}
