//! `trawl catalog` and the catalog file itself: export, verify and report, schema upgrades,
//! and triggers, views, tables or a write-ahead log planted beside it.

use std::ffi::OsStr;
use std::path::Path;

use crate::audit::{audit, flip_byte, tree};
use crate::util::{Dir, is_root, run_tool, skip, tool};

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
    r.stderr_has("catalog schema version 1 is older than this trawl's (4)");
    r.stderr_has("`trawl catalog upgrade -c cat.db`");

    let r = read(&["upgrade"]);
    r.code(0);
    r.stdout_has("cat.db: upgraded from schema 1 to 4");
    read(&["upgrade"])
        .code(0)
        .stdout_has("schema 4 already; nothing to do");

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
    report.stdout_has("(schema 4, 4 runs");
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
    r.stderr_has("cat.db: catalog upgraded from schema 1 to 4");
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

/// A directory named as the catalog is refused as no regular file by the commands that only
/// read one too (it was SQLite's "disk I/O error").
#[test]
fn a_directory_is_no_catalog_to_read() {
    let d = Dir::new();
    std::fs::create_dir(d.join("cat.db")).unwrap();
    for args in [
        &["catalog", "due", "-c", "cat.db", "--older-than", "1d"][..],
        &["catalog", "policy", "-c", "cat.db"],
        &["catalog", "export", "-c", "cat.db", "--format", "premis"],
        &["catalog", "report", "-c", "cat.db"],
    ] {
        d.cmd()
            .args(args)
            .run()
            .code(2)
            .stderr_has("cat.db: not a regular file; a catalog is one");
    }
}

/// A registered digest cut short (a part of one, or none) is no digest an audit wrote: the
/// audit stops on it, naming the catalog, rather than compare the part (or nothing) and call
/// the file ok with exit 0. A whole digest of the first algorithms still compares.
#[test]
fn a_registered_digest_cut_short_stops_the_audit() {
    let Some(sqlite) = tool("sqlite3") else {
        return;
    };
    let d = Dir::new();
    d.create(b"t/a", b"alpha\n");
    let audit_a = || d.cmd().args(["audit", "t", "-c", "cat.db", "-q"]).run();
    audit_a().code(0);
    let sql = |q: &str| run_tool(d.path(), &sqlite, &[OsStr::new("cat.db"), OsStr::new(q)]);
    for cut in ["substr(digests, 1, 31)", "zeroblob(0)"] {
        sql(&format!("UPDATE files SET digests = {cut}")).code(0);
        let r = audit_a();
        r.code(2).stderr_has("cat.db").stderr_has("digests are");
        assert!(!r.stdout.contains(" ok"), "{}", r.stdout);
    }
    // The first algorithm's whole digest (sha256 of the catalog's sha256,md5): still compared.
    let sha = {
        let out = std::process::Command::new("sha256sum")
            .arg(d.join("t/a"))
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()[..64].to_string()
    };
    sql(&format!("UPDATE files SET digests = X'{sha}'")).code(0);
    audit_a().code(0);
}
