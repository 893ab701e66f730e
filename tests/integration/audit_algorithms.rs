//! The digest algorithms an audit records and checks, added later and exported, and hashdeep's
//! audit agreeing with ours.

use std::collections::BTreeSet;
use std::ffi::OsStr;

use crate::audit::{audit, count, flip_byte, moved_from, paths, set, tree};
use crate::util::{Dir, run_tool, tool};

#[test]
fn hashdeep_audit_agrees_on_corrupt_missing_new_and_moved() {
    let Some(hd) = tool("hashdeep") else { return };
    let d = Dir::new();
    tree(&d);
    let known = run_tool(
        &d.join("t"),
        &hd,
        &[
            OsStr::new("-c"),
            OsStr::new("sha256"),
            OsStr::new("-l"),
            OsStr::new("-r"),
            OsStr::new("."),
        ],
    );
    known.code(0);
    std::fs::write(d.join("known.txt"), &known.stdout_bytes).unwrap();
    audit(&d, &[]).0.code(0);

    flip_byte(&d.join("t/f0.txt"), 3);
    std::fs::write(d.join("t/f1.txt"), "edited\n").unwrap();
    std::fs::remove_file(d.join("t/f2.txt")).unwrap();
    d.create(b"t/added.txt", b"brand new\n");
    std::fs::rename(d.join("t/f3.txt"), d.join("t/sub/f3-renamed.txt")).unwrap();

    let theirs = run_tool(
        &d.join("t"),
        &hd,
        &[
            OsStr::new("-c"),
            OsStr::new("sha256"),
            OsStr::new("-l"),
            OsStr::new("-r"),
            OsStr::new("-a"),
            OsStr::new("-vv"),
            OsStr::new("-k"),
            OsStr::new("../known.txt"),
            OsStr::new("."),
        ],
    );
    assert_eq!(theirs.code, 1, "hashdeep's audit fails too: {theirs:?}");
    let mut no_match = BTreeSet::new();
    let mut not_used = BTreeSet::new();
    let mut moved = BTreeSet::new();
    for line in theirs.stdout.lines() {
        let Some((p, what)) = line.split_once(": ") else {
            continue;
        };
        let p = p.trim_start_matches("./").to_string();
        match what {
            "No match" => {
                no_match.insert(p);
            }
            "Known file not used" => {
                not_used.insert(p);
            }
            w if w.starts_with("Moved from ") => {
                moved.insert((p, w["Moved from ./".len()..].to_string()));
            }
            _ => {}
        }
    }
    let (r, v) = audit(&d, &[]);
    r.code(1);
    let exists = |p: &String| d.join("t").join(p).exists();
    // Changed content at a known path: hashdeep says "No match" (and "not used" for the old
    // hash); trawl says corrupt or modified, telling the two apart by size and mtime.
    let changed: BTreeSet<String> = no_match
        .iter()
        .filter(|p| not_used.contains(*p))
        .cloned()
        .collect();
    let ours_changed: BTreeSet<String> = paths(&v, "corrupt")
        .union(&paths(&v, "modified"))
        .cloned()
        .collect();
    assert_eq!(ours_changed, changed);
    assert_eq!(paths(&v, "corrupt"), set(&["f0.txt"]));
    let new: BTreeSet<String> = no_match.difference(&changed).cloned().collect();
    assert_eq!(paths(&v, "new"), new);
    let missing: BTreeSet<String> = not_used
        .iter()
        .filter(|p| !exists(p) && !moved.iter().any(|(_, from)| from == *p))
        .cloned()
        .collect();
    assert_eq!(paths(&v, "missing"), missing);
    let theirs_moved: BTreeSet<String> = moved.iter().map(|(to, _)| to.clone()).collect();
    assert_eq!(paths(&v, "moved"), theirs_moved);
    for (to, from) in &moved {
        assert_eq!(&moved_from(&v, to), from);
    }
}

#[test]
fn an_audit_records_and_checks_the_new_algorithms() {
    let d = Dir::new();
    tree(&d);
    let r = d
        .cmd()
        .args([
            "audit",
            "t",
            "-c",
            "cat.db",
            "-q",
            "-d",
            "sha3-256,blake2b",
            "--json",
            "a.json",
        ])
        .run();
    r.code(0);
    flip_byte(&d.join("t/f3.txt"), 2);
    let (r, v) = audit(&d, &[]);
    r.code(1);
    assert_eq!(v["algorithms"], serde_json::json!(["sha3-256", "blake2b"]));
    let e = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["state"] == "corrupt")
        .unwrap();
    assert_eq!(e["expected"]["blake2b"].as_str().unwrap().len(), 128);
    assert_eq!(e["expected"]["sha3-256"].as_str().unwrap().len(), 64);
    // The catalog exports what it records, as b2sum reads it.
    if let Some(b2sum) = tool("b2sum") {
        let r = d
            .cmd()
            .args([
                "catalog", "export", "-c", "cat.db", "--format", "b2sum", "-o", "B2",
            ])
            .run();
        r.code(0);
        let r = run_tool(
            &d.join("t"),
            &b2sum,
            &[OsStr::new("-c"), d.join("B2").as_os_str()],
        );
        assert!(r.stdout.contains("f3.txt: FAILED"), "{}", r.stdout);
        assert!(r.stdout.contains("f4.txt: OK"), "{}", r.stdout);
    }
}

/// A later audit adds an algorithm to a catalog (`-d sha256,md5` on a sha256 catalog): a file
/// gets it when next read (moved ones too), never called changed for it. Until then
/// `catalog export --format md5sum` leaves it out, says how many and the first, and exits 3;
/// after an audit that read every file, coreutils' `md5sum -c` checks the whole export. A list
/// that leaves out one of the catalog's algorithms is refused.
#[test]
fn a_later_audit_adds_an_algorithm_that_the_export_then_has() {
    let Some(md5sum) = tool("md5sum") else {
        return;
    };
    let d = Dir::new();
    tree(&d);
    audit(&d, &[]).0.code(0);
    let r = d
        .cmd()
        .args(["audit", "t", "-c", "cat.db", "-d", "md5"])
        .run();
    r.code(2);
    r.stderr_has("this catalog records sha256; --digest md5 leaves out sha256");
    // Added by an audit that reads nothing (every file verified within the day).
    let (r, v) = audit(&d, &["-d", "sha256,md5", "--older-than", "1d"]);
    r.code(0);
    assert_eq!(v["algorithms"], serde_json::json!(["sha256", "md5"]));
    assert_eq!(v["files_read"], 0);
    let export = |d: &Dir| {
        d.cmd()
            .args([
                "catalog", "export", "-c", "cat.db", "--format", "md5sum", "-o", "M",
            ])
            .run()
    };
    let r = export(&d);
    r.code(3);
    r.stderr_has("cat.db: 9 of 9 registered files have no md5 digest yet (the first: ");
    r.stderr_has("/t/f0.txt): not in the manifest");
    assert_eq!(std::fs::read_to_string(d.join("M")).unwrap(), "");
    // Read again, each file gets md5 and stays ok; a moved one gets it where it went.
    std::fs::rename(d.join("t/f3.txt"), d.join("t/sub/f3-moved.txt")).unwrap();
    let (r, v) = audit(&d, &[]);
    r.code(0);
    assert_eq!(count(&v, "ok"), 8, "{v}");
    assert_eq!(paths(&v, "moved"), set(&["sub/f3-moved.txt"]));
    for state in ["corrupt", "modified", "new", "missing"] {
        assert_eq!(count(&v, state), 0, "{state}: {v}");
    }
    export(&d).code(0);
    let m = std::fs::read_to_string(d.join("M")).unwrap();
    assert_eq!(m.lines().filter(|l| !l.starts_with('#')).count(), 9, "{m}");
    let check = run_tool(
        &d.join("t"),
        &md5sum,
        &[OsStr::new("-c"), d.join("M").as_os_str()],
    );
    check.code(0);
    assert_eq!(
        check.stdout.matches(": OK\n").count(),
        9,
        "{}",
        check.stdout
    );
    d.cmd()
        .args(["catalog", "verify", "-c", "cat.db"])
        .run()
        .code(0);
}
