//! `trawl scan --reuse CATALOG`: digests taken from an audit catalog for the files still as it
//! recorded them, held to coreutils' digests of the files as they are, and to what a full scan
//! writes; the files read are seen in the readers' open log (`TRAWL_TEST_OPEN_LOG`).

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::util::{Dir, Run, digest_by, mkfifo, run_tool, tool};

const FILES: [(&str, &[u8]); 5] = [
    ("a.txt", b"alpha\n"),
    ("sub/b.bin", b"\x00\x01\x02 binary"),
    ("sub/deep/c", b"gamma gamma gamma"),
    ("twin", b"gamma gamma gamma"),
    ("empty", b""),
];

/// A tree `t` of [`FILES`] registered in `cat.db` by an audit that began more than two seconds
/// after the files last changed (a file changed closer to the audit that read it is not taken:
/// its times could hide a change made within the same clock tick).
fn registered() -> Dir {
    let d = Dir::new();
    for (name, body) in FILES {
        d.create(format!("t/{name}").as_bytes(), body);
    }
    std::thread::sleep(std::time::Duration::from_millis(3100));
    d.cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .run()
        .code(0);
    d
}

/// `scan t` with `extra`, the files it opened (by their path below `t`, sorted) and its JSON
/// report.
fn scan(d: &Dir, extra: &[&str]) -> (Run, Vec<String>, Value) {
    let log = d.join("opened.log");
    let _ = std::fs::remove_file(&log);
    let mut c = d
        .cmd()
        .args(["scan", "t", "-q", "--json", "r.json"])
        .args(extra);
    c.cmd.env("TRAWL_TEST_OPEN_LOG", &log);
    let r = c.run();
    let mut opened: Vec<String> = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim_start_matches("t/").to_string())
        .collect();
    opened.sort();
    let v = std::fs::read(d.join("r.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    (r, opened, v)
}

/// The manifest `tool` (sha256sum, sha1sum) writes of the tree as it is: coreutils' digests,
/// names in byte order.
fn reference(d: &Dir, tool: &str) -> String {
    let mut names: Vec<&str> = FILES.iter().map(|(n, _)| *n).collect();
    names.sort();
    names
        .iter()
        .map(|n| {
            let body = std::fs::read(d.join("t").join(n)).unwrap();
            format!("{}  {n}\n", digest_by(tool, &body))
        })
        .collect()
}

/// Whether a writer (an audit) holds the catalog's lock: a shared probe of its `flock` fails.
fn held(catalog: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(catalog).unwrap();
    // SAFETY: flock on a descriptor this function owns; released when it closes.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) != 0 }
}

fn read(d: &Dir, name: &str) -> String {
    std::fs::read_to_string(d.join(name)).unwrap()
}

fn counts(v: &Value) -> (u64, u64, u64) {
    let u = &v["reuse"];
    let n = |k: &str| u[k].as_u64().unwrap_or_else(|| panic!("reuse.{k} in {u}"));
    (n("taken"), n("read"), n("changed"))
}

/// Every file unchanged: none is opened, every digest comes from the catalog, and the manifest,
/// the report's files and its duplicate groups are a full scan's, byte for byte (the manifest
/// also coreutils'). An audit writing the catalog meanwhile changes nothing.
#[test]
fn an_unchanged_tree_is_taken_whole_from_the_catalog_as_a_full_scan_would_write_it() {
    let d = registered();
    let (full, opened, vfull) = scan(&d, &["-m", "sha256sum:full.txt", "--no-reduce"]);
    full.code(0);
    assert_eq!(opened.len(), FILES.len(), "a full scan reads every file");
    assert!(vfull.get("reuse").is_none());
    let args = ["-m", "sha256sum:reused.txt", "--reuse", "cat.db"];
    let (r, opened, v) = scan(&d, &args);
    r.code(0);
    assert_eq!(opened, Vec::<String>::new(), "nothing opened");
    assert_eq!(counts(&v), (5, 0, 0));
    assert_eq!(
        v["reuse"]["rule"],
        serde_json::json!(["size", "mtime", "ctime", "inode"])
    );
    assert_eq!(read(&d, "reused.txt"), read(&d, "full.txt"));
    assert_eq!(read(&d, "reused.txt"), reference(&d, "sha256sum"));
    assert_eq!(v["files"], vfull["files"]);
    let dups = |extra: &[&str]| {
        let mut a = vec!["--duplicates", "d.json", "--no-reduce"];
        a.extend_from_slice(extra);
        scan(&d, &a).0.code(0);
        let g: Value = serde_json::from_str(&read(&d, "d.json")).unwrap();
        g["groups"].clone()
    };
    let groups = dups(&["--reuse", "cat.db"]);
    assert_eq!(groups, dups(&[]));
    assert_eq!(groups.as_array().map(Vec::len), Some(1), "{groups}");
    // The summary says it.
    let r = d
        .cmd()
        .args(["scan", "t", "--reuse", "cat.db", "-m", "sha256sum:s.txt"])
        .run();
    r.code(0)
        .stdout_has("reuse: 5 files' digests taken from cat.db");
    // An audit holding the catalog (and writing it) while a scan reads it.
    let mut audit = Command::new(env!("CARGO_BIN_EXE_trawl"));
    audit
        .current_dir(d.path())
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .env("TRAWL_TEST_WALK_DELAY_MS", "400")
        .stdout(Stdio::null());
    let mut child = audit.spawn().unwrap();
    crate::util::wait_until("the audit holds the catalog", || held(&d.join("cat.db")));
    let (r, _, v) = scan(&d, &args);
    r.code(0);
    assert_eq!(counts(&v), (5, 0, 0));
    assert!(child.wait().unwrap().success());
}

/// A file rewritten in place with its mtime put back (as `touch -r` does): its ctime moved, so
/// it is read again and its new digest written; the others are taken. With the ctime left out
/// of the rule it is taken from the catalog with its old digest (why leaving it out is
/// dangerous); an audit, which never takes a digest from the catalog, calls it corrupt.
#[test]
fn a_file_rewritten_under_its_restored_mtime_is_read_again_but_an_audit_must_read() {
    let d = registered();
    let c = d.join("t/sub/deep/c");
    let before = digest_by("sha256sum", &std::fs::read(&c).unwrap());
    crate::audit::flip_byte(&c, 0);
    let (r, opened, v) = scan(&d, &["-m", "sha256sum:m.txt", "--reuse", "cat.db"]);
    r.code(0);
    assert_eq!(opened, ["sub/deep/c"]);
    assert_eq!(counts(&v), (4, 1, 1));
    let m = read(&d, "m.txt");
    assert_eq!(m, reference(&d, "sha256sum"));
    assert!(
        !m.contains(&format!("{before}  sub/deep/c\n")),
        "the new digest, not the catalog's:\n{m}"
    );

    let args = [
        "-m",
        "sha256sum:m.txt",
        "--reuse",
        "cat.db",
        "--reuse-ignore",
        "ctime",
    ];
    let (r, opened, v) = scan(&d, &args);
    r.code(0);
    assert_eq!(opened, Vec::<String>::new());
    assert_eq!(counts(&v), (5, 0, 0));
    assert_eq!(
        v["reuse"]["rule"],
        serde_json::json!(["size", "mtime", "inode"])
    );
    assert!(read(&d, "m.txt").contains(&format!("{before}  sub/deep/c\n")));

    let r = d.cmd().args(["audit", "t", "-c", "cat.db"]).run();
    r.code(1).stdout_has("sub/deep/c");
    r.counted(&[("corrupt", 1), ("ok", 4)]);
}

/// The catalog records sha256 only: a scan that asks for sha1 too reads every file (and says
/// why), its manifests coreutils'.
#[test]
fn a_catalog_lacking_a_digest_asked_for_reads_every_file() {
    let d = registered();
    let args = [
        "-d",
        "sha256,sha1",
        "-m",
        "sha1sum:s1.txt",
        "-m",
        "sha256sum:s256.txt",
        "--reuse",
        "cat.db",
    ];
    let (r, opened, v) = scan(&d, &args);
    r.code(0);
    r.stderr_has("the catalog records no sha1 digest (it records sha256): every file is read");
    assert_eq!(opened.len(), FILES.len());
    assert_eq!(counts(&v), (0, 5, 0));
    assert_eq!(read(&d, "s1.txt"), reference(&d, "sha1sum"));
    assert_eq!(read(&d, "s256.txt"), reference(&d, "sha256sum"));
}

/// What is not a catalog, and what would read every file anyway, are refused before anything
/// is read (exit 2), naming the file or the flags.
#[test]
fn what_is_not_a_catalog_or_reads_every_file_is_refused() {
    let d = Dir::new();
    d.create(b"t/a", b"a");
    d.create(b"notes.txt", b"not a database\n");
    mkfifo(&d.join("fifo"));
    std::fs::create_dir(d.join("adir")).unwrap();
    let refused = |args: &[&str], want: &str| {
        let r = d
            .cmd()
            .args(["scan", "t", "-m", "sha256sum:m.txt"])
            .args(args)
            .run();
        r.code(2).stderr_has(want);
        assert!(!Path::new(&d.join("m.txt")).exists(), "no manifest left");
    };
    refused(&["--reuse", "notes.txt"], "notes.txt: not a trawl catalog");
    refused(&["--reuse", "none.db"], "none.db: no such catalog");
    refused(&["--reuse", "fifo"], "fifo: not a regular file");
    refused(&["--reuse", "adir"], "adir: not a regular file");
    refused(
        &["--reuse", "notes.txt", "--dedup", "4k"],
        "--reuse cannot go with the data reduction",
    );
    refused(
        &["--reuse", "notes.txt", "--media-index", "idx"],
        "--reuse cannot go with --media-index",
    );
    refused(
        &["--reuse", "notes.txt", "--reuse-ignore", "inode,mtime"],
        "--reuse-ignore 'mtime': expected inode or ctime",
    );
    refused(&["--reuse-ignore", "ctime"], "--reuse");
}

/// A digest the catalog holds as text (hex typed into it by hand) is no digest: its bytes
/// would be written as one. The scan stops naming the catalog and the column, as an audit
/// does, and writes no manifest.
#[test]
fn a_digest_stored_as_text_is_refused_not_taken() {
    let Some(sqlite) = tool("sqlite3") else {
        return;
    };
    let d = Dir::new();
    d.create(b"t/a", b"alpha\n");
    d.cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .run()
        .code(0);
    // Verified in 2100: the row is not racy without waiting 2 s after the file was written.
    let sql = "UPDATE files SET last_verified = 4102444800, digests = lower(hex(digests))";
    run_tool(d.path(), &sqlite, &["cat.db".as_ref(), sql.as_ref()]).code(0);
    let r = d
        .cmd()
        .args([
            "scan",
            "t",
            "-q",
            "--reuse",
            "cat.db",
            "-m",
            "sha256sum:m.txt",
        ])
        .run();
    r.code(2).stderr_has("cat.db: ").stderr_has("name: digests");
    assert!(!d.join("m.txt").exists(), "no manifest");
}

/// A file whose mtime is past 2262 (as `touch -d 2300-01-01` sets it; nanoseconds since the
/// epoch no longer fit in 64 bits) is audited and then taken from the catalog with its digest,
/// as coreutils computes it: the audit neither stops nor hangs on its time.
#[test]
fn a_file_dated_past_2262_is_audited_and_taken() {
    let Some(sqlite) = tool("sqlite3") else {
        return;
    };
    let d = Dir::new();
    let f = d.create(b"t/future", b"from the future\n");
    let year_2300 = std::time::UNIX_EPOCH + std::time::Duration::from_secs(10_413_792_000);
    let set = std::fs::File::options().write(true).open(&f).unwrap();
    if set.set_modified(year_2300).is_err() {
        return crate::util::skip("this file system keeps no time past 2262");
    }
    d.cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .run_within(20)
        .code(0);
    // Verified in 2100: the row is not racy without waiting 2 s after the file was written.
    let sql = "UPDATE files SET last_verified = 4102444800";
    run_tool(d.path(), &sqlite, &["cat.db".as_ref(), sql.as_ref()]).code(0);
    let args = [
        "scan",
        "t",
        "-q",
        "--reuse",
        "cat.db",
        "-m",
        "sha256sum:m.txt",
    ];
    let r = d.cmd().args(args).args(["--json", "r.json"]).run_within(20);
    r.code(0);
    let v: Value = serde_json::from_str(&read(&d, "r.json")).unwrap();
    assert_eq!(counts(&v), (1, 0, 0));
    let want = digest_by("sha256sum", b"from the future\n");
    assert_eq!(read(&d, "m.txt"), format!("{want}  future\n"));
}
