//! `trawl audit` and `trawl catalog`: scenario tests against a real tree, each verdict checked
//! through the JSON report (and the exit code), plus crash, lock, full-disk and tamper cases.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::Value;

use crate::util::{Dir, Run, is_root};

/// Flips one byte in place, keeping size and mtime (what `touch -r` restores).
pub(crate) fn flip_byte(p: &Path, at: usize) {
    let before = std::fs::metadata(p).unwrap().modified().unwrap();
    let mut data = std::fs::read(p).unwrap();
    data[at] ^= 0x20;
    std::fs::write(p, &data).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
    f.set_modified(before).unwrap();
}

pub(crate) fn audit(d: &Dir, extra: &[&str]) -> (Run, Value) {
    let mut args = vec!["audit", "t", "-c", "cat.db", "--json", "out.json", "-q"];
    args.extend_from_slice(extra);
    let r = d.cmd().args(&args).run();
    let v: Value = match std::fs::read(d.join("out.json")) {
        Ok(b) if r.code != 2 || !b.is_empty() => serde_json::from_slice(&b).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    let _ = std::fs::remove_file(d.join("out.json"));
    (r, v)
}

/// Paths (relative to the tree) of the events in a given state.
pub(crate) fn paths(v: &Value, state: &str) -> BTreeSet<String> {
    let root = v["roots"][0]["path"].as_str().unwrap().to_string() + "/";
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["state"] == state)
        .map(|e| {
            e["path"]
                .as_str()
                .unwrap()
                .strip_prefix(&root)
                .unwrap()
                .to_string()
        })
        .collect()
}

pub(crate) fn moved_from(v: &Value, dest: &str) -> String {
    let root = v["roots"][0]["path"].as_str().unwrap().to_string() + "/";
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["state"] == "moved" && e["path"].as_str().unwrap().ends_with(dest))
        .map(|e| {
            e["moved_from"]
                .as_str()
                .unwrap()
                .strip_prefix(&root)
                .unwrap()
                .to_string()
        })
        .unwrap_or_default()
}

pub(crate) fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

pub(crate) fn count(v: &Value, state: &str) -> u64 {
    v["counts"][state].as_u64().unwrap()
}

pub(crate) fn tree(d: &Dir) {
    for i in 0..8 {
        d.create(
            format!("t/f{i}.txt").as_bytes(),
            format!("content of file {i}\n").as_bytes(),
        );
    }
    d.create(b"t/sub/deep.bin", &[7u8; 100_000]);
}

#[test]
fn audit_reports_each_verdict_and_says_it_in_the_exit_code() {
    let d = Dir::new();
    tree(&d);
    let (r, v) = audit(&d, &[]);
    r.code(0);
    assert_eq!(count(&v, "new"), 9, "first audit registers every file");
    let (r, v) = audit(&d, &[]);
    r.code(0);
    assert_eq!(count(&v, "ok"), 9);
    assert!(v["events"].as_array().unwrap().is_empty());

    flip_byte(&d.join("t/f0.txt"), 3); // silent corruption
    std::fs::write(d.join("t/f1.txt"), "edited, longer than before\n").unwrap(); // modified
    std::fs::remove_file(d.join("t/f2.txt")).unwrap(); // missing
    d.create(b"t/added.txt", b"brand new\n"); // new
    std::fs::rename(d.join("t/f3.txt"), d.join("t/sub/f3-renamed.txt")).unwrap(); // moved
    std::fs::remove_file(d.join("t/f4.txt")).unwrap();
    std::os::unix::fs::symlink("f5.txt", d.join("t/f4.txt")).unwrap(); // replaced by a symlink
    flip_byte(&d.join("t/sub/deep.bin"), 99_999); // corruption in a multi-chunk read too

    let (r, v) = audit(&d, &[]);
    r.code(1);
    assert_eq!(paths(&v, "corrupt"), set(&["f0.txt", "sub/deep.bin"]));
    assert_eq!(paths(&v, "modified"), set(&["f1.txt"]));
    assert_eq!(paths(&v, "missing"), set(&["f2.txt", "f4.txt"]));
    assert_eq!(paths(&v, "new"), set(&["added.txt"]));
    assert_eq!(paths(&v, "moved"), set(&["sub/f3-renamed.txt"]));
    assert_eq!(moved_from(&v, "sub/f3-renamed.txt"), "f3.txt");
    assert_eq!(count(&v, "ok"), 3, "f5, f6, f7");
    let f4 = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"].as_str().unwrap().ends_with("/f4.txt"))
        .unwrap();
    assert_eq!(f4["detail"], "replaced by a symbolic link");
    // The corrupt file's expected digest is the registered one, its actual the one read now.
    let f0 = std::fs::read(d.join("t/f0.txt")).unwrap();
    let c = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["state"] == "corrupt" && e["path"].as_str().unwrap().ends_with("f0.txt"))
        .unwrap();
    assert_eq!(c["actual"]["sha256"], sha256_hex(&f0));
    let mut orig = f0.clone();
    orig[3] ^= 0x20;
    assert_eq!(c["expected"]["sha256"], sha256_hex(&orig));

    // The text report says the same, loudly for corruption.
    let r = d.cmd().args(["audit", "t", "-c", "cat.db"]).run();
    r.code(1);
    r.stdout_has("corrupt     t/f0.txt");
    r.stdout_has("CORRUPT: 2 files");
    r.stderr_has("trawl: t/f0.txt: CORRUPT");
    // Corruption and missing files are reported again until dealt with; the rest is settled.
    assert!(
        r.stdout
            .contains("missing     t/f2.txt: missing since run 3"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("modified    t/"), "{}", r.stdout);

    // Restoring the corrupt file's content makes it ok again, and says so; the missing files
    // forgotten as asked are the only other finding, so the exit code is 0.
    flip_byte(&d.join("t/f0.txt"), 3);
    flip_byte(&d.join("t/sub/deep.bin"), 99_999);
    let (r, v) = audit(&d, &["--forget-missing"]);
    r.code(0);
    assert_eq!(paths(&v, "missing"), set(&["f2.txt", "f4.txt"]));
    assert_eq!(paths(&v, "restored"), set(&["f0.txt", "sub/deep.bin"]));
    let (r, v) = audit(&d, &[]);
    r.code(0);
    assert_eq!(count(&v, "missing"), 0, "forgotten");
    assert_eq!(count(&v, "corrupt"), 0);
}

fn sha256_hex(data: &[u8]) -> String {
    // An independent reference: coreutils if present, else Python's hashlib.
    let out = Command::new("python3")
        .args([
            "-c",
            "import hashlib,sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(data)?;
            c.wait_with_output()
        })
        .expect("python3");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn identical_files_one_moved_is_one_move_from_its_own_path() {
    let d = Dir::new();
    d.create(b"t/a/copy1", b"same bytes");
    d.create(b"t/b/copy2", b"same bytes");
    d.create(b"t/c/other", b"other");
    audit(&d, &[]).0.code(0);
    std::fs::rename(d.join("t/b/copy2"), d.join("t/c/copy2-moved")).unwrap();
    let (r, v) = audit(&d, &[]);
    r.code(0);
    assert_eq!(paths(&v, "moved"), set(&["c/copy2-moved"]));
    assert_eq!(moved_from(&v, "c/copy2-moved"), "b/copy2");
    assert_eq!(count(&v, "missing"), 0);
    assert_eq!(count(&v, "new"), 0);
    assert_eq!(count(&v, "ok"), 2);

    // Both copies gone and one new copy: one move (from the first path in byte order), one missing.
    std::fs::remove_file(d.join("t/a/copy1")).unwrap();
    std::fs::rename(d.join("t/c/copy2-moved"), d.join("t/z")).unwrap();
    let (r, v) = audit(&d, &[]);
    r.code(1);
    assert_eq!(paths(&v, "moved"), set(&["z"]));
    assert_eq!(paths(&v, "missing").len(), 1);

    // History follows the file through its moves.
    let h = d
        .cmd()
        .args(["catalog", "history", "t/z", "-c", "cat.db"])
        .run();
    h.code(0);
    h.stdout_has("moved");
    h.stdout_has("new ");
}

#[test]
fn unreadable_file_is_reported_with_its_reason_and_the_rest_is_audited() {
    let d = Dir::new();
    tree(&d);
    let run = |d: &Dir| {
        let r = d
            .cmd_unprivileged()
            .args(["audit", "t", "-c", "cat.db", "--json", "out.json", "-q"])
            .run();
        let v: Value = serde_json::from_slice(&std::fs::read(d.join("out.json")).unwrap()).unwrap();
        (r, v)
    };
    if is_root() {
        // The unprivileged user writes the catalog; let it.
        for p in ["t", "t/sub"] {
            std::fs::set_permissions(
                d.join(p),
                std::os::unix::fs::PermissionsExt::from_mode(0o777),
            )
            .unwrap();
        }
    }
    run(&d).0.code(0);
    std::fs::set_permissions(
        d.join("t/f6.txt"),
        std::os::unix::fs::PermissionsExt::from_mode(0o000),
    )
    .unwrap();
    let (r, v) = run(&d);
    r.code(2);
    assert!(
        r.stderr.contains("f6.txt") && r.stderr.contains("ermission denied"),
        "{}",
        r.stderr
    );
    assert_eq!(paths(&v, "unreadable"), set(&["f6.txt"]));
    assert_eq!(count(&v, "ok"), 8);
    assert_eq!(count(&v, "missing"), 0, "unreadable is not missing");
}

#[test]
fn metadata_only_sees_size_and_mtime_changes_and_moves_by_inode_but_reads_nothing() {
    let d = Dir::new();
    tree(&d);
    audit(&d, &[]).0.code(0);
    flip_byte(&d.join("t/f0.txt"), 3); // invisible without reading
    std::fs::write(d.join("t/f1.txt"), "edited, longer than before\n").unwrap();
    std::fs::remove_file(d.join("t/f2.txt")).unwrap();
    std::fs::rename(d.join("t/f3.txt"), d.join("t/f3-renamed.txt")).unwrap();
    d.create(b"t/added.txt", b"x");
    let (r, v) = audit(&d, &["--metadata-only"]);
    r.code(1);
    assert_eq!(v["mode"], "metadata");
    assert_eq!(v["bytes_read"], 0);
    assert_eq!(paths(&v, "modified"), set(&["f1.txt"]));
    assert_eq!(paths(&v, "missing"), set(&["f2.txt"]));
    assert_eq!(paths(&v, "moved"), set(&["f3-renamed.txt"]));
    assert_eq!(paths(&v, "new"), set(&["added.txt"]));
    assert_eq!(count(&v, "corrupt"), 0);
    // A full audit afterwards still finds all of it, corruption included.
    let (r, v) = audit(&d, &[]);
    r.code(1);
    assert_eq!(paths(&v, "corrupt"), set(&["f0.txt"]));
    assert_eq!(paths(&v, "modified"), set(&["f1.txt"]));
    assert_eq!(paths(&v, "moved"), set(&["f3-renamed.txt"]));
}

#[test]
fn a_known_corrupt_file_is_reported_by_every_audit_until_restored_partial_ones_too() {
    let d = Dir::new();
    tree(&d);
    audit(&d, &[]).0.code(0);
    flip_byte(&d.join("t/f0.txt"), 3);
    let (r, v) = audit(&d, &[]);
    r.code(1);
    assert_eq!(paths(&v, "corrupt"), set(&["f0.txt"]));
    // Audits that do not read it again still say it is corrupt, and exit 1.
    for partial in [
        &["--metadata-only"][..],
        &["--older-than", "1h"],
        &["--max-bytes", "1"],
    ] {
        let (r, v) = audit(&d, partial);
        r.code(1);
        assert_eq!(paths(&v, "corrupt"), set(&["f0.txt"]), "{partial:?}");
        assert_eq!(count(&v, "corrupt"), 1, "{partial:?}");
        let e = &v["events"].as_array().unwrap()[0];
        let read = e["actual"].is_object();
        assert!(
            read || e["detail"]
                .as_str()
                .unwrap()
                .contains("not read in this one"),
            "{e}"
        );
    }
    // Restored: the next full audit finds it ok, and the partial ones say nothing more.
    flip_byte(&d.join("t/f0.txt"), 3);
    let (r, v) = audit(&d, &[]);
    r.code(0);
    assert_eq!(count(&v, "corrupt"), 0);
    let (r, v) = audit(&d, &["--metadata-only"]);
    r.code(0);
    assert_eq!(count(&v, "corrupt"), 0);
}

#[test]
fn older_than_and_max_bytes_read_part_and_the_next_run_goes_on_from_there() {
    let d = Dir::new();
    for i in 0..10 {
        d.create(format!("t/f{i}").as_bytes(), &vec![b'a' + i as u8; 1000]);
    }
    audit(&d, &[]).0.code(0);
    flip_byte(&d.join("t/f9"), 0);
    // Everything was verified just now: nothing is due.
    let (r, v) = audit(&d, &["--older-than", "1h"]);
    r.code(0);
    assert_eq!(v["files_read"], 0);
    assert_eq!(v["not_read"], 10);
    assert_eq!(count(&v, "corrupt"), 0);
    // An age past any time there is, however written: nothing is due, nothing overflows.
    for age in ["9223372036854775808s", "10000000000000000000s"] {
        let (r, v) = audit(&d, &["--older-than", age]);
        r.code(0);
        assert_eq!(v["files_read"], 0, "{age}");
    }
    // A budget of 3000 bytes: three files per run, least recently verified first.
    let mut found_in = None;
    for run in 0..4 {
        let (r, v) = audit(&d, &["--max-bytes", "3000"]);
        assert!(v["files_read"].as_u64().unwrap() <= 3, "{v}");
        if count(&v, "corrupt") == 1 {
            r.code(1);
            found_in = Some(run);
            break;
        }
        r.code(0);
        assert_eq!(v["status"], "partial");
    }
    assert_eq!(
        found_in,
        Some(3),
        "f9 is reached in the fourth run of three files each"
    );
}

#[test]
fn limit_rate_paces_the_reads() {
    let d = Dir::new();
    d.create(b"t/a", &vec![1u8; 3 << 20]);
    let t0 = Instant::now();
    let (r, v) = audit(&d, &["--limit-rate", "1M"]);
    r.code(0);
    assert_eq!(count(&v, "new"), 1);
    // 3 MiB at 1 MiB/s, less the quarter-second burst allowance.
    let secs = t0.elapsed().as_secs_f64();
    assert!(secs > 2.5, "3 MiB at 1M/s took {secs} s");
}

#[test]
fn a_folder_inside_a_registered_root_is_audited_as_part_of_it_never_registered_again() {
    let d = Dir::new();
    tree(&d);
    audit(&d, &[]).0.code(0);
    flip_byte(&d.join("t/sub/deep.bin"), 10);
    // Auditing the folder alone: the corruption is found against the registered digest.
    let r = d
        .cmd()
        .args(["audit", "t/sub", "-c", "cat.db", "--json", "sub.json"])
        .run();
    r.code(1)
        .stderr_has("inside the registered root")
        .stderr_has("CORRUPT");
    let v: Value = serde_json::from_slice(&std::fs::read(d.join("sub.json")).unwrap()).unwrap();
    assert_eq!(count(&v, "new"), 0, "{v}");
    assert_eq!(count(&v, "corrupt"), 1, "{v}");
    // Still corrupt the next time, not "ok" with the corrupt digest as the reference.
    audit(&d, &[]).0.code(1);
    // A root that holds the registered one: its own files are new, the registered ones stay
    // under their root, and the export lists every file once.
    d.create(b"outside.txt", b"outside\n");
    let r = d
        .cmd()
        .args(["audit", ".", "-c", "cat.db", "--json", "all.json"])
        .run();
    r.stderr_has("holds the registered root");
    let v: Value = serde_json::from_slice(&std::fs::read(d.join("all.json")).unwrap()).unwrap();
    let new: Vec<&str> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["state"] == "new")
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(new.iter().all(|p| !p.contains("/t/")), "{new:?}");
    assert!(new.iter().any(|p| p.ends_with("outside.txt")), "{new:?}");
    let r = d
        .cmd()
        .args(["catalog", "export", "-c", "cat.db", "--format", "sha256sum"])
        .run();
    r.code(0);
    let names: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_once("  ").unwrap().1)
        .collect();
    let distinct: BTreeSet<&str> = names
        .iter()
        .map(|n| n.rsplit('/').next().unwrap())
        .collect();
    // The 9 files of t, outside.txt and sub.json (an earlier run's report); never the report
    // being written.
    assert_eq!(names.len(), 9 + 2, "{names:?}");
    assert!(names.iter().all(|n| !n.contains("trawl-tmp")), "{names:?}");
    assert!(distinct.contains("deep.bin"));
    assert_eq!(
        names.iter().filter(|n| n.ends_with("deep.bin")).count(),
        1,
        "{names:?}"
    );
}

/// A corrupt file whose content is restored gets a `restored` event (its history shows the run
/// it was corrupt, then the run it came back), counted apart from the plainly ok files.
#[test]
fn a_restored_file_is_recorded_as_restored() {
    let d = Dir::new();
    tree(&d);
    audit(&d, &[]).0.code(0);
    flip_byte(&d.join("t/f0.txt"), 3);
    audit(&d, &[]).0.code(1);
    // Corrupt again in a run that does not read it, then read and restored.
    audit(&d, &["--metadata-only"]).0.code(1);
    flip_byte(&d.join("t/f0.txt"), 3);
    let (r, v) = audit(&d, &[]);
    r.code(0);
    assert_eq!(paths(&v, "restored"), set(&["f0.txt"]), "{v}");
    assert_eq!(count(&v, "restored"), 1);
    assert_eq!(
        count(&v, "ok"),
        8,
        "the restored file is not among the plainly ok"
    );
    assert_eq!(count(&v, "corrupt"), 0);
    let ev = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["state"] == "restored")
        .unwrap();
    assert_eq!(
        ev["detail"],
        "corrupt since run 2; its content is as registered again"
    );
    let h = d
        .cmd()
        .args(["catalog", "history", "t/f0.txt", "-c", "cat.db"])
        .run();
    h.code(0);
    let runs: Vec<&str> = h
        .stdout
        .lines()
        .filter(|l| l.starts_with("  run "))
        .collect();
    assert_eq!(runs.len(), 4, "{}", h.stdout);
    assert!(
        runs[1].contains("corrupt") && runs[2].contains("corrupt"),
        "{}",
        h.stdout
    );
    assert!(
        runs[3].contains("restored    ") && runs[3].starts_with("  run 4"),
        "{}",
        h.stdout
    );
    h.stdout_has("registered: ok,");
    // Once restored, plainly ok: no more events.
    let (r, v) = audit(&d, &[]);
    r.code(0);
    assert!(v["events"].as_array().unwrap().is_empty(), "{v}");
    d.cmd()
        .args(["catalog", "verify", "-c", "cat.db"])
        .run()
        .code(0);
}

/// `--forget-missing`: the deletions asked to be accepted are reported and forgotten, and the
/// exit code is 0 when nothing else is wrong (1 still for a corrupt file); a metadata-only
/// audit, which changes no registration, cannot forget and refuses the flag.
#[test]
fn forgetting_missing_files_as_asked_exits_0() {
    let d = Dir::new();
    tree(&d);
    audit(&d, &[]).0.code(0);
    std::fs::remove_file(d.join("t/f2.txt")).unwrap();
    let r = d
        .cmd()
        .args([
            "audit",
            "t",
            "-c",
            "cat.db",
            "--metadata-only",
            "--forget-missing",
        ])
        .run();
    r.code(2);
    r.stderr_has("--forget-missing needs a full audit");
    let r = d
        .cmd()
        .args(["audit", "t", "-c", "cat.db", "--forget-missing"])
        .run();
    r.code(0);
    r.stdout_has("missing     t/f2.txt");
    r.stdout_has("forgotten (--forget-missing): 1 registered file no longer there");
    let (r, v) = audit(&d, &[]);
    r.code(0);
    assert_eq!(count(&v, "missing"), 0);
    // Forgetting does not hide corruption.
    std::fs::remove_file(d.join("t/f3.txt")).unwrap();
    flip_byte(&d.join("t/f1.txt"), 2);
    let (r, v) = audit(&d, &["--forget-missing"]);
    r.code(1);
    assert_eq!(paths(&v, "missing"), set(&["f3.txt"]));
    assert_eq!(paths(&v, "corrupt"), set(&["f1.txt"]));
}

/// The summary's numbers each say what they count: the files read, the files registered, and
/// every verdict's count with its meaning.
#[test]
fn the_audit_summary_says_what_each_number_counts() {
    let d = Dir::new();
    tree(&d);
    let r = d.cmd().args(["audit", "t", "-c", "cat.db"]).run();
    r.code(0);
    r.stdout_has("(full, complete): read 9 files (");
    r.stdout_has("\nregistered 9 files in cat.db (the first audit of these roots)\n");
    r.stdout_has("\n  0 ok: content as registered\n");
    r.stdout_has("\n  9 new: not registered before, registered now\n");
    flip_byte(&d.join("t/f0.txt"), 3);
    std::fs::write(d.join("t/f1.txt"), "edited, longer than before\n").unwrap();
    let r = d.cmd().args(["audit", "t", "-c", "cat.db"]).run();
    r.code(1);
    r.stdout_has("\n  7 ok: content as registered\n");
    r.stdout_has("\n  1 corrupt: content differs from the registered digests");
    r.stdout_has("\n  1 modified: size or mtime changed and the content too");
    assert!(!r.stdout.contains("registered 0"), "{}", r.stdout);
    let r = d
        .cmd()
        .args(["audit", "t", "-c", "cat.db", "--metadata-only"])
        .run();
    r.stdout_has("(metadata, complete): read 0 files (0 B)");
    r.stdout_has("ok: size and mtime as registered (contents not read)");
}
