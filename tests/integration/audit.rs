//! `trawl audit` and `trawl catalog`: scenario tests against a real tree, each verdict checked
//! through the JSON report (and the exit code), plus crash, lock, full-disk and tamper cases.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{Dir, Run, bytes_read_by, is_root, run_tool, skip, tool, wait_until};

/// Flips one byte in place, keeping size and mtime (what `touch -r` restores).
pub(crate) fn flip_byte(p: &Path, at: usize) {
    let before = std::fs::metadata(p).unwrap().modified().unwrap();
    let mut data = std::fs::read(p).unwrap();
    data[at] ^= 0x20;
    std::fs::write(p, &data).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
    f.set_modified(before).unwrap();
}

fn audit(d: &Dir, extra: &[&str]) -> (Run, Value) {
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
fn paths(v: &Value, state: &str) -> BTreeSet<String> {
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

fn moved_from(v: &Value, dest: &str) -> String {
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

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn count(v: &Value, state: &str) -> u64 {
    v["counts"][state].as_u64().unwrap()
}

fn tree(d: &Dir) {
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

/// 160 files of 64 KiB read at 2 MiB/s: about 5 s, long enough to be killed in the middle.
fn slow_tree(d: &Dir) {
    for i in 0..160 {
        let data: Vec<u8> = (0..65536u32)
            .map(|j| (j.wrapping_mul(i + 7) >> 3) as u8)
            .collect();
        d.create(format!("t/d{}/f{i:03}", i % 4).as_bytes(), &data);
    }
}

#[test]
fn kill_9_mid_audit_then_resume_accounts_for_every_file_once() {
    let d = Dir::new();
    slow_tree(&d);
    audit(&d, &[]).0.code(0);
    flip_byte(&d.join("t/d1/f005"), 10);
    flip_byte(&d.join("t/d3/f155"), 10);
    let mut child = d
        .cmd()
        .args([
            "audit",
            "t",
            "-c",
            "cat.db",
            "-q",
            "-j",
            "1",
            "--limit-rate",
            "2M",
        ])
        .cmd;
    let mut child = child.spawn().unwrap();
    // Killed once it holds the catalog (its run begun) and has read 2 MiB (a second of reads).
    let pid = child.id();
    wait_for_flock(pid);
    wait_until("the audit read 2 MiB", || bytes_read_by(pid) > 2 << 20);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let rep = d.cmd().args(["catalog", "report", "-c", "cat.db"]).run();
    rep.code(0);
    rep.stdout_has("run 2 was interrupted");
    let (r, v) = audit(&d, &[]);
    r.code(1);
    r.stderr_has("resuming");
    assert_eq!(v["run"], 2, "the interrupted run is resumed, not restarted");
    assert_eq!(paths(&v, "corrupt"), set(&["d1/f005", "d3/f155"]));
    let total: u64 = [
        "ok",
        "corrupt",
        "modified",
        "missing",
        "new",
        "moved",
        "unreadable",
    ]
    .iter()
    .map(|s| count(&v, s))
    .sum();
    assert_eq!(total, 160, "every file accounted for exactly once: {v}");
    assert_eq!(count(&v, "ok"), 158);
    // Files read before the kill are counted with the verdicts committed with them, and not
    // read again: the run's figure covers both segments, each file once.
    assert_eq!(v["files_read"], 160, "{v}");
    d.cmd()
        .args(["catalog", "verify", "-c", "cat.db"])
        .run()
        .code(0);
}

/// Waits until `pid` holds an exclusive `flock` (the catalog's writer lock).
fn wait_for_flock(pid: u32) {
    let t0 = Instant::now();
    let want = format!(" FLOCK  ADVISORY  WRITE {pid} ");
    while !std::fs::read_to_string("/proc/locks")
        .unwrap_or_default()
        .lines()
        .any(|l| l.contains(&want))
    {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the first audit never took the lock"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_second_audit_on_the_same_catalog_is_refused_naming_the_pid_through_any_link() {
    let d = Dir::new();
    slow_tree(&d);
    d.cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .run()
        .code(0);
    // The same catalog by other names: the lock belongs to the file, not to a name.
    std::os::unix::fs::symlink("cat.db", d.join("sym.db")).unwrap();
    std::fs::hard_link(d.join("cat.db"), d.join("hard.db")).unwrap();
    let mut first = d
        .cmd()
        .args(["audit", "t", "-c", "cat.db", "-q", "--limit-rate", "2M"])
        .cmd
        .spawn()
        .unwrap();
    let pid = first.id();
    wait_for_flock(pid);
    let seconds: Vec<_> = ["cat.db", "sym.db", "hard.db"]
        .iter()
        .map(|c| (c, d.cmd().args(["audit", "t", "-c", c, "-q"]).run()))
        .collect();
    first.kill().unwrap();
    first.wait().unwrap();
    for (c, second) in seconds {
        second.code(2);
        assert!(
            second
                .stderr
                .contains(&format!("{c}: catalog is in use by pid {pid}")),
            "{}",
            second.stderr
        );
    }
    // The killed holder leaves no stale lock.
    d.cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .run()
        .code(0);
    d.cmd()
        .args(["catalog", "verify", "-c", "hard.db"])
        .run()
        .code(0);
}

#[test]
fn an_existing_file_that_is_not_a_catalog_is_never_started_over() {
    let d = Dir::new();
    tree(&d);
    d.create(b"empty.db", b"");
    d.create(b"notes.db", b"my notes, not a database\n");
    d.cmd()
        .args(["audit", "t", "-c", "empty.db", "-q"])
        .run()
        .code(2)
        .stderr_has("empty.db: an empty file, not a trawl catalog");
    assert_eq!(std::fs::read(d.join("empty.db")).unwrap(), b"");
    d.cmd()
        .args(["audit", "t", "-c", "notes.db", "-q"])
        .run()
        .code(2)
        .stderr_has("notes.db: not a trawl catalog");
    assert_eq!(
        std::fs::read(d.join("notes.db")).unwrap(),
        b"my notes, not a database\n"
    );
    // --init makes the empty file a catalog, explicitly; it never takes a non-empty one.
    d.cmd()
        .args(["audit", "t", "-c", "empty.db", "-q", "--init"])
        .run()
        .code(0);
    d.cmd()
        .args(["audit", "t", "-c", "notes.db", "-q", "--init"])
        .run()
        .code(2);
    d.cmd()
        .args(["catalog", "verify", "-c", "empty.db"])
        .run()
        .code(0);
    // A path that does not exist is created, and nothing is left if it cannot be.
    d.cmd()
        .args(["audit", "t", "-c", "new.db", "-q"])
        .run()
        .code(0);
    assert!(!d.join("new.db.lock").exists());
}

#[test]
fn full_disk_while_writing_the_catalog_is_a_clear_error_and_the_catalog_stays_consistent() {
    let d = Dir::new();
    tree(&d);
    audit(&d, &[]).0.code(0);
    let size = std::fs::metadata(d.join("cat.db")).unwrap().len();
    for i in 0..3000 {
        d.create(
            format!("t/many/a-rather-long-file-name-to-fill-pages-{i:05}").as_bytes(),
            format!("{i}").as_bytes(),
        );
    }
    let r = d
        .cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .file_size_limit(size + 64 * 1024)
        .run();
    r.code(2);
    assert!(
        r.stderr.contains("cat.db") && (r.stderr.contains("full") || r.stderr.contains("I/O")),
        "{}",
        r.stderr
    );
    // Still a catalog that opens, reports, and audits to completion afterwards.
    d.cmd()
        .args(["catalog", "report", "-c", "cat.db"])
        .run()
        .code(0);
    let (r, v) = audit(&d, &[]);
    r.code(0);
    assert_eq!(count(&v, "new") + count(&v, "ok"), 3009, "{v}");
    d.cmd()
        .args(["catalog", "verify", "-c", "cat.db"])
        .run()
        .code(0);
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
fn catalog_export_is_read_by_sha256sum() {
    let Some(sha) = tool("sha256sum") else { return };
    let d = Dir::new();
    tree(&d);
    d.create(b"t/name with\\backslash", b"b");
    audit(&d, &[]).0.code(0);
    let r = d
        .cmd()
        .args(["catalog", "export", "-c", "cat.db", "-o", "SUMS"])
        .run();
    r.code(0);
    let c = run_tool(
        &d.join("t"),
        &sha,
        &[OsStr::new("-c"), OsStr::new("../SUMS")],
    );
    c.code(0);
    assert_eq!(c.stdout.lines().filter(|l| l.ends_with(": OK")).count(), 10);
    // hashdeep and bagit exports have their shapes.
    let hd = d
        .cmd()
        .args(["catalog", "export", "-c", "cat.db", "--format", "hashdeep"])
        .run();
    hd.code(0);
    assert!(
        hd.stdout.starts_with("%%%% HASHDEEP-1.0\n"),
        "{}",
        hd.stdout
    );
    let bag = d
        .cmd()
        .args(["catalog", "export", "-c", "cat.db", "--format", "bagit"])
        .run();
    bag.code(0);
    bag.stdout_has("  data/sub/deep.bin\n");
}

#[test]
fn catalog_verify_names_the_run_whose_rows_were_tampered_with() {
    let Some(sqlite) = tool("sqlite3") else {
        return;
    };
    let d = Dir::new();
    tree(&d);
    audit(&d, &[]).0.code(0);
    std::fs::write(d.join("t/f1.txt"), "edited, longer than before\n").unwrap();
    audit(&d, &[]).0.code(0);
    audit(&d, &[]).0.code(0);
    let ok = d.cmd().args(["catalog", "verify", "-c", "cat.db"]).run();
    ok.code(0);
    let head = ok.stdout.split_whitespace().last().unwrap().to_string();
    let sql = |q: &str| run_tool(d.path(), &sqlite, &[OsStr::new("cat.db"), OsStr::new(q)]);

    // Hide the modification recorded in run 2.
    sql("UPDATE events SET state = 'ok' WHERE run = 2").code(0);
    let r = d.cmd().args(["catalog", "verify", "-c", "cat.db"]).run();
    r.code(1);
    r.stderr_has("run 2");
    r.stdout_has("BROKEN at run 2");
    sql("UPDATE events SET state = 'modified' WHERE run = 2").code(0);
    d.cmd()
        .args(["catalog", "verify", "-c", "cat.db"])
        .run()
        .code(0);

    // Rewrite a registered digest so that a corruption would pass: the last seal catches it.
    sql("UPDATE files SET digests = zeroblob(32) WHERE name = CAST('f0.txt' AS BLOB)").code(0);
    let r = d.cmd().args(["catalog", "verify", "-c", "cat.db"]).run();
    r.code(1);
    assert!(
        r.stderr.contains("run 3") && r.stderr.contains("file table"),
        "{}",
        r.stderr
    );

    // Removing the newest run is caught only against a head kept elsewhere.
    let d2 = Dir::new();
    tree(&d2);
    audit(&d2, &[]).0.code(0);
    audit(&d2, &[]).0.code(0);
    let ok = d2.cmd().args(["catalog", "verify", "-c", "cat.db"]).run();
    let head2 = ok.stdout.split_whitespace().last().unwrap().to_string();
    let _ = head;
    run_tool(
        d2.path(),
        &sqlite,
        &[
            OsStr::new("cat.db"),
            OsStr::new("DELETE FROM runs WHERE id = 2"),
        ],
    )
    .code(0);
    d2.cmd()
        .args(["catalog", "verify", "-c", "cat.db", "--expect", &head2])
        .run()
        .code(1);
}

#[test]
fn catalog_verify_catches_edits_of_every_column_an_audit_decides_by_and_a_malformed_file() {
    let Some(sqlite) = tool("sqlite3") else {
        return;
    };
    for edit in [
        "UPDATE files SET ino = ino + 1 WHERE name = CAST('f0.txt' AS BLOB)",
        "UPDATE files SET dev = dev + 1 WHERE name = CAST('f0.txt' AS BLOB)",
        // A directory's row renamed: every file under it has another path.
        "UPDATE dirs SET path = CAST('elsewhere/' AS BLOB) WHERE path = x''",
        "UPDATE meta SET value = 'md5' WHERE key = 'algorithms'",
        "UPDATE files SET last_verdict = 'ok', missing_since = NULL",
    ] {
        let d = Dir::new();
        tree(&d);
        audit(&d, &[]).0.code(0);
        d.cmd()
            .args(["catalog", "verify", "-c", "cat.db"])
            .run()
            .code(0);
        run_tool(d.path(), &sqlite, &[OsStr::new("cat.db"), OsStr::new(edit)]).code(0);
        let r = d.cmd().args(["catalog", "verify", "-c", "cat.db"]).run();
        r.code(1);
        assert!(r.stdout.contains("BROKEN at run 1"), "{edit}: {}", r.stdout);
    }
    // Bytes of an index page overwritten: SQLite's integrity check finds it before any digest.
    let d = Dir::new();
    tree(&d);
    audit(&d, &[]).0.code(0);
    let q = |s: &str| {
        run_tool(d.path(), &sqlite, &[OsStr::new("cat.db"), OsStr::new(s)])
            .stdout
            .trim()
            .parse::<u64>()
            .unwrap()
    };
    let page = q("PRAGMA page_size");
    let root = q("SELECT rootpage FROM sqlite_master WHERE name = 'events_path'");
    let mut bytes = std::fs::read(d.join("cat.db")).unwrap();
    let end = (root * page) as usize;
    for b in &mut bytes[end - 200..end] {
        *b = 0x5a;
    }
    std::fs::write(d.join("cat.db"), bytes).unwrap();
    let r = d.cmd().args(["catalog", "verify", "-c", "cat.db"]).run();
    r.code(1);
    r.stdout_has("catalog file DAMAGED");
}

#[test]
fn unknown_schema_version_and_foreign_files_are_clear_errors() {
    let Some(sqlite) = tool("sqlite3") else {
        return;
    };
    let d = Dir::new();
    tree(&d);
    audit(&d, &[]).0.code(0);
    run_tool(
        d.path(),
        &sqlite,
        &[OsStr::new("cat.db"), OsStr::new("PRAGMA user_version = 99")],
    )
    .code(0);
    let r = d.cmd().args(["audit", "t", "-c", "cat.db"]).run();
    r.code(2);
    r.stderr_has("cat.db: catalog schema version 99");
    d.cmd()
        .args(["catalog", "report", "-c", "cat.db"])
        .run()
        .code(2);
    std::fs::write(d.join("notes.db"), "just text, not SQLite at all, long enough to look like a header..........................................................").unwrap();
    let r = d.cmd().args(["audit", "t", "-c", "notes.db"]).run();
    r.code(2);
    r.stderr_has("notes.db: not a trawl catalog");
    run_tool(
        d.path(),
        &sqlite,
        &[OsStr::new("other.db"), OsStr::new("CREATE TABLE x(y)")],
    )
    .code(0);
    let r = d.cmd().args(["audit", "t", "-c", "other.db"]).run();
    r.code(2);
    r.stderr_has("other.db: not a trawl catalog");
}

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

#[test]
fn catalog_report_lists_files_by_state_and_verify_expect_wants_a_digest() {
    let d = Dir::new();
    tree(&d);
    audit(&d, &[]).0.code(0);
    flip_byte(&d.join("t/f1.txt"), 3);
    std::fs::remove_file(d.join("t/f2.txt")).unwrap();
    audit(&d, &[]).0.code(1);
    let r = d
        .cmd()
        .args([
            "catalog",
            "report",
            "-c",
            "cat.db",
            "--list",
            "corrupt,missing",
        ])
        .run();
    r.code(0);
    let listed: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("corrupt ") || l.starts_with("missing "))
        .collect();
    assert_eq!(listed.len(), 2, "{}", r.stdout);
    assert!(
        listed[0].starts_with("corrupt") && listed[0].contains("t/f1.txt"),
        "{listed:?}"
    );
    assert!(
        listed[1].starts_with("missing") && listed[1].contains("t/f2.txt"),
        "{listed:?}"
    );
    d.cmd()
        .args(["catalog", "report", "-c", "cat.db", "--list", "broken"])
        .run()
        .code(2)
        .stderr_has("--list broken: not a state");
    d.cmd()
        .args(["catalog", "verify", "-c", "cat.db", "--expect", "run-2"])
        .run()
        .code(2)
        .stderr_has("not a chain digest (64 hex digits");
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

/// A catalog written by the trawl before schema 2, with what that trawl printed for it.
fn v1_reference(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/catalog-v1");
    String::from_utf8_lossy(&std::fs::read(p.join(name)).unwrap()).into_owned()
}

#[test]
fn a_schema_1_catalog_is_upgraded_in_place_and_answers_as_before() {
    let d = Dir::new();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/catalog-v1/cat.db");
    std::fs::copy(&src, d.join("cat.db")).unwrap();
    let read = |args: &[&str]| {
        let mut a = vec!["catalog"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["-c", "cat.db"]);
        d.cmd().args(&a).run()
    };

    // Read-only commands do not upgrade; they say how.
    let r = read(&["report"]);
    r.code(2);
    r.stderr_has("catalog schema version 1 is older than this trawl's (2)");
    r.stderr_has("`trawl catalog upgrade -c cat.db`");

    let r = read(&["upgrade"]);
    r.code(0);
    r.stdout_has("cat.db: upgraded from schema 1 to 2");
    read(&["upgrade"])
        .code(0)
        .stdout_has("schema 2 already; nothing to do");

    // The chain sealed under schema 1 verifies, to the same head: every value came across.
    let v = read(&["verify"]);
    v.code(0);
    assert_eq!(v.stdout, v1_reference("verify.txt"));
    let mut exp = read(&["export"]);
    exp.code(0);
    assert_eq!(exp.stdout, v1_reference("export.sha256"));
    // And that export is coreutils' view of the tree, but for the corrupt file, whose
    // registered digest stays the reference.
    let theirs = v1_reference("sha256sum.txt");
    let differ: Vec<_> = exp
        .stdout
        .lines()
        .zip(theirs.lines())
        .filter(|(a, b)| a != b)
        .map(|(a, _)| a.to_string())
        .collect();
    assert_eq!(differ.len(), 1, "{differ:?}");
    assert!(differ[0].ends_with("  top.txt"), "{differ:?}");
    exp = read(&["export", "--format", "hashdeep"]);
    assert_eq!(exp.stdout, v1_reference("export.hashdeep"));
    let report = read(&["report", "--list", "corrupt,missing,modified,new,moved,ok"]);
    report.code(0);
    report.stdout_has("(schema 2, 4 runs");
    let body = report.stdout.split_once('\n').unwrap().1;
    assert_eq!(body, v1_reference("report.txt"));
    for (file, name) in [
        ("data/a/g-moved", "history-moved.txt"),
        ("data/top.txt", "history-corrupt.txt"),
        ("data/gone.txt", "history-gone.txt"),
    ] {
        let at = format!("/tmp/trawl-v1-fixture/{file}");
        let h = d
            .cmd()
            .args(["catalog", "history", "-c", "cat.db", at.as_str()])
            .run();
        h.code(0);
        assert_eq!(h.stdout, v1_reference(name), "{file}");
    }

    // An audit upgrades a schema 1 catalog by itself, says so, and chains on from its head.
    let d2 = Dir::new();
    std::fs::copy(&src, d2.join("cat.db")).unwrap();
    tree(&d2);
    let (r, _) = audit(&d2, &[]);
    r.code(0);
    r.stderr_has("cat.db: catalog upgraded from schema 1 to 2");
    let v = d2.cmd().args(["catalog", "verify", "-c", "cat.db"]).run();
    v.code(0);
    v.stdout_has("5 sealed runs");
    let head = v1_reference("verify.txt");
    let head = head.split_whitespace().last().unwrap();
    d2.cmd()
        .args(["catalog", "verify", "-c", "cat.db", "--expect", head])
        .run()
        .code(0);
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

/// A tree of two files audited once into `cat.db`.
fn audited(d: &Dir) {
    d.create(b"t/a.txt", b"alpha alpha alpha\n");
    d.create(b"t/b.txt", b"bravo bravo bravo\n");
    d.cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .run()
        .code(0);
}

/// Rewrites `t/a.txt` with other bytes of the same size and mtime: silent corruption.
fn corrupt_a(d: &Dir) {
    let p = d.join("t/a.txt");
    let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
    std::fs::write(&p, b"alpha alpha alphX\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
}

#[test]
fn a_catalog_with_planted_triggers_views_or_tables_is_refused_and_verify_says_so() {
    let Some(sqlite) = tool("sqlite3") else {
        return;
    };
    let plants = [
        (
            "CREATE TRIGGER hide AFTER INSERT ON events BEGIN \
             UPDATE events SET state = 'ok' WHERE run = NEW.run AND dir = NEW.dir AND name = NEW.name; END",
            "trigger 'hide' on 'events' (not created by trawl)",
        ),
        (
            "DROP VIEW event_paths; CREATE VIEW event_paths AS SELECT e.run, d.root AS root, \
             CAST(d.path || e.name AS BLOB) AS path, 'ok' AS state, e.size, e.mtime_ns, e.expected, \
             e.actual, NULL AS other_root, NULL AS other_path, e.detail, e.dir, e.name \
             FROM events e JOIN dirs d ON d.id = e.dir",
            "view 'event_paths' (redefined)",
        ),
        (
            "CREATE TABLE extra(x)",
            "table 'extra' (not created by trawl)",
        ),
    ];
    for (sql, says) in plants {
        let d = Dir::new();
        audited(&d);
        run_tool(d.path(), &sqlite, &[OsStr::new("cat.db"), OsStr::new(sql)]).code(0);
        corrupt_a(&d);
        let r = d.cmd().args(["audit", "t", "-c", "cat.db"]).run();
        assert_eq!(r.code, 2, "{sql}: {}\n{}", r.stdout, r.stderr);
        r.stderr_has(says).stderr_has("not used");
        assert!(!r.stdout.contains("ok 2"), "{}", r.stdout);
        let v = d.cmd().args(["catalog", "verify", "-c", "cat.db"]).run();
        v.code(1);
        v.stdout_has("catalog schema ALTERED").stderr_has(says);
        // Every other reader refuses it too.
        let rep = d.cmd().args(["catalog", "report", "-c", "cat.db"]).run();
        assert_eq!(rep.code, 2, "{}", rep.stderr);
    }
    // And the unaltered catalog is used, the corruption found.
    let d = Dir::new();
    audited(&d);
    corrupt_a(&d);
    let r = d.cmd().args(["audit", "t", "-c", "cat.db"]).run();
    r.code(1).stdout_has("corrupt");
}

#[test]
fn a_write_ahead_log_planted_beside_a_catalog_is_not_applied() {
    let Some(sqlite) = tool("sqlite3") else {
        return;
    };
    let d = Dir::new();
    audited(&d);
    // A log made on a copy of the catalog, holding a trigger, copied beside the catalog while
    // the copy's connection is still open (SQLite removes a log when its last connection ends).
    std::fs::copy(d.join("cat.db"), d.join("copy.db")).unwrap();
    run_tool(
        d.path(),
        &sqlite,
        &[
            OsStr::new("copy.db"),
            OsStr::new(
                "PRAGMA journal_mode = WAL; CREATE TRIGGER hide AFTER INSERT ON events BEGIN SELECT 1; END;",
            ),
            OsStr::new(".shell cp copy.db-wal planted-wal"),
        ],
    )
    .code(0);
    assert!(d.join("planted-wal").exists());
    let plant = |how: &str| {
        let _ = std::fs::remove_file(d.join("cat.db-wal"));
        match how {
            "link" => {
                std::os::unix::fs::symlink(d.join("planted-wal"), d.join("cat.db-wal")).unwrap()
            }
            _ => {
                std::fs::copy(d.join("planted-wal"), d.join("cat.db-wal")).unwrap();
                std::os::unix::fs::chown(d.join("cat.db-wal"), Some(65534), Some(65534)).unwrap();
            }
        }
    };
    let mut hows = vec!["link"];
    if is_root() {
        hows.push("another owner");
    } else {
        skip("(a part) a log of another owner needs root to chown");
    }
    for how in hows {
        plant(how);
        let r = d.cmd().args(["audit", "t", "-c", "cat.db"]).run();
        assert_eq!(r.code, 2, "{how}: {}", r.stderr);
        r.stderr_has("cat.db-wal").stderr_has("not opened");
        let v = d.cmd().args(["catalog", "verify", "-c", "cat.db"]).run();
        assert_eq!(v.code, 2, "{how}: {}", v.stderr);
        std::fs::remove_file(d.join("cat.db-wal")).unwrap();
        // Without it, the catalog is as trawl left it: no trigger.
        d.cmd()
            .args(["catalog", "verify", "-c", "cat.db"])
            .run()
            .code(0)
            .stdout_has("chain OK");
    }
}

/// A hashdeep export to stdout that cannot hold a name (a line break in it) writes nothing,
/// as its message says; the formats that hold the name write it.
#[test]
fn a_catalog_export_that_cannot_hold_a_name_writes_nothing() {
    let d = Dir::new();
    d.create(b"t/plain", b"p");
    d.create(b"t/line\nbreak", b"b");
    d.cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .run()
        .code(0);
    let r = d
        .cmd()
        .args(["catalog", "export", "-c", "cat.db", "--format", "hashdeep"])
        .run();
    assert_eq!(r.code, 2, "{}", r.stderr);
    r.stderr_has("nothing written");
    assert_eq!(r.stdout, "", "nothing on stdout");
    // The formats that hold the name write it.
    d.cmd()
        .args(["catalog", "export", "-c", "cat.db", "--format", "sha256sum"])
        .run()
        .code(0)
        .stdout_has("plain");
}
