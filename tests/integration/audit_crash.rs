//! `trawl audit` when things go wrong around it: a kill -9 mid-run, a second audit on the same
//! catalog, a file that is no catalog, a full disk.

use std::time::{Duration, Instant};

use crate::audit::{audit, count, flip_byte, paths, set, tree};
use crate::util::{Dir, bytes_read_by, wait_until};

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
