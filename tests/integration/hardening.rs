//! Round three of the adversary's tests: planted journals, catalogs and state folders that must
//! not act for their planter, inputs that must not spin or panic, outputs that must not replace
//! inputs.

use crate::util::*;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// `verify` on stdin, NUL-separated (GNU `-z`), with one line of `len` bytes between two good
/// ones: it ends, the long line is refused by number when over 1 MiB, and the good lines are
/// checked either way.
fn verify_long_line(len: usize) -> Run {
    let d = Dir::new();
    d.create(b"root/a", b"x");
    d.create(b"root/b", b"x");
    let good = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881";
    let mut data = format!("{good}  a\0{good}  ").into_bytes();
    data.resize(data.len() + len - 66, b'n');
    data.extend_from_slice(format!("\0{good}  b\0").as_bytes());
    let m = d.create(b"manifest", &data);
    drop(data);
    // Bounded: the old parser spun on such a line forever.
    d.cmd()
        .args(["verify", "-", "--root", "root"])
        .run_within_stdin(60, std::fs::File::open(m).unwrap().into())
}

#[test]
fn verify_reads_past_a_manifest_line_of_any_length() {
    const MIB: usize = 1 << 20;
    for len in [MIB - 1, MIB] {
        let r = verify_long_line(len);
        // The long name is not a file: it is listed, then missing.
        assert_ne!(r.code, -1, "killed: {}", r.stderr);
        r.stdout_has("a: OK").stdout_has("b: OK");
        assert!(!r.stderr.contains("longer than"), "{}", r.stderr);
    }
    for len in [MIB + 1, 100 * MIB] {
        let r = verify_long_line(len);
        assert_ne!(r.code, -1, "killed: {}", r.stderr);
        r.stdout_has("a: OK")
            .stdout_has("b: OK")
            .stderr_has("-:2: longer than 1048576 bytes: not read");
        assert_ne!(r.code, 0, "a refused line is a problem: {}", r.stderr);
    }
}

/// A journal planted in a directory by whoever can write into it: `bag recover` refuses it
/// whole, and nothing outside the directory (or inside it) changes.
#[test]
fn bag_recover_refuses_a_planted_journal() {
    let header =
        "trawl bag create journal v2: these entries were moved into data/; tag files written: ";
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "absolute tag name",
            format!("{header}manifest-sha256.txt {{OUT}}/victim\n"),
            "never writes",
        ),
        (
            "tag name through ..",
            format!("{header}../victim\n"),
            "never writes",
        ),
        (
            "payload name through ..",
            format!("{header}bagit.txt\n../victim\n"),
            "no top-level entry",
        ),
        (
            "payload name with a slash",
            format!("{header}bagit.txt\nx/victim\n"),
            "no top-level entry",
        ),
        (
            "payload name through .. percent-encoded",
            format!("{header}bagit.txt\n%2E%2E%2Fvictim\n"),
            "no top-level entry",
        ),
        (
            "not a journal at all",
            "hello\n../victim\n".into(),
            "not a journal",
        ),
    ];
    for (what, journal, says) in cases {
        let d = Dir::new();
        d.create(b"out/victim", b"precious");
        d.create(b"b/keep", b"mine");
        let out = d.join("out");
        let journal = journal.replace("{OUT}", out.to_str().unwrap());
        std::fs::write(d.join("b/.trawl-bag-journal"), &journal).unwrap();
        std::fs::create_dir(d.join("b/data")).unwrap();
        let r = d.cmd().args(["bag", "recover", "b"]).run();
        assert_ne!(r.code, 0, "{what}: {}", r.stderr);
        r.stderr_has(says).stderr_has("nothing was changed");
        assert_eq!(
            std::fs::read(d.join("out/victim")).unwrap(),
            b"precious",
            "{what}"
        );
        assert!(d.join("b/keep").exists(), "{what}");
        assert!(
            d.join("b/.trawl-bag-journal").exists(),
            "{what}: the journal stays"
        );
    }
}

/// A staging directory or `data/` that is a link to elsewhere: nothing is moved through it,
/// neither out of it (a file outside pulled in) nor into it.
#[test]
fn bag_recover_never_moves_through_a_linked_payload_directory() {
    for staging in [".trawl-bag-payload", "data"] {
        let d = Dir::new();
        d.create(b"outside/secret", b"0600 file");
        d.create(b"b/keep", b"mine");
        std::os::unix::fs::symlink(d.join("outside"), d.join("b").join(staging)).unwrap();
        std::fs::write(
            d.join("b/.trawl-bag-journal"),
            "trawl bag create journal v2: these entries were moved into data/; tag files written: bagit.txt\nsecret\n",
        )
        .unwrap();
        let r = d.cmd().args(["bag", "recover", "b"]).run();
        assert_ne!(r.code, 0, "{staging}: {}", r.stdout);
        r.stderr_has("not a directory");
        assert!(
            d.join("outside/secret").exists(),
            "{staging}: the outside file stayed"
        );
        assert!(
            !d.join("b/secret").exists(),
            "{staging}: nothing was pulled in"
        );
    }
    // And a payload entry that is itself a link is moved back as the link, never followed.
    let d = Dir::new();
    d.create(b"outside/f", b"outside");
    std::fs::create_dir_all(d.join("b/data")).unwrap();
    std::os::unix::fs::symlink(d.join("outside"), d.join("b/data/x")).unwrap();
    std::fs::write(
        d.join("b/.trawl-bag-journal"),
        "trawl bag create journal v2: these entries were moved into data/; tag files written: bagit.txt\nx\n",
    )
    .unwrap();
    d.cmd().args(["bag", "recover", "b"]).run().code(0);
    assert!(
        d.join("b/x")
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(d.join("outside/f").exists());
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
fn a_catalog_with_planted_triggers_or_views_is_refused_and_verify_says_so() {
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

/// `verify --confine` resolves every name beneath the root: a directory link that leaves it,
/// or a name that is a link to outside (a device, say), is not read, not even opened; links
/// that stay inside are followed, the name itself included.
#[test]
fn verify_confine_reads_nothing_through_a_link_out_of_the_root() {
    let d = Dir::new();
    d.create(b"outside/secret", b"secret");
    d.create(b"root/sub/f", b"inside");
    std::os::unix::fs::symlink(d.join("outside"), d.join("root/up")).unwrap();
    std::os::unix::fs::symlink("sub", d.join("root/in")).unwrap();
    std::os::unix::fs::symlink("sub/f", d.join("root/alias")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", d.join("root/devlink")).unwrap();
    std::os::unix::fs::symlink("../../outside/secret", d.join("root/sub/out")).unwrap();
    let manifest = format!(
        "{}  up/secret\n{}  in/f\n{}  devlink\n{}  sub/f\n{}  alias\n{}  sub/out\n",
        sha256_hex(b"secret"),
        sha256_hex(b"inside"),
        sha256_hex(b""),
        sha256_hex(b"inside"),
        sha256_hex(b"inside"),
        sha256_hex(b"secret"),
    );
    d.create(b"SUMS", manifest.as_bytes());
    let r = d
        .cmd()
        .args(["verify", "SUMS", "--root", "root", "--confine"])
        .run_within(30);
    assert_ne!(r.code, 0, "{}", r.stdout);
    r.stdout_has("in/f: OK")
        .stdout_has("sub/f: OK")
        .stdout_has("alias: OK");
    for name in ["up/secret", "devlink", "sub/out"] {
        let line = r
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no line for {name}: {}", r.stdout));
        assert!(line.contains("leads outside the root"), "{line}");
    }
    // Without confinement, names resolve as sha256sum resolves them.
    d.cmd()
        .args(["verify", "SUMS", "--root", "root", "--no-confine"])
        .run_within(30)
        .stdout_has("up/secret: OK")
        .stdout_has("sub/out: OK");
}

/// Arguments that are not UTF-8, or counts no run can take: a clear refusal or a normal run,
/// never a panic.
#[test]
fn no_argument_panics_the_command() {
    let d = Dir::new();
    d.create(b"t\xff/f", b"x");
    let r = d
        .cmd()
        .args([
            OsStr::from_bytes(b"audit"),
            OsStr::from_bytes(b"t\xff"),
            OsStr::from_bytes(b"-c"),
            OsStr::from_bytes(b"cat\xfe.db"),
        ])
        .run();
    r.code(0);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    let sql = tool("sqlite3");
    if let Some(sqlite) = sql {
        let o = run_tool(
            d.path(),
            &sqlite,
            &[
                OsStr::from_bytes(b"cat\xfe.db"),
                OsStr::new("SELECT options FROM runs"),
            ],
        );
        assert!(
            o.stdout.starts_with("audit t\u{fffd} -c cat\u{fffd}.db"),
            "{}",
            o.stdout
        );
    }
    for args in [
        vec!["scan", "-j", "0", "t"],
        vec!["scan", "-j", "100000", "t"],
        vec!["serve", "-j", "0", "t"],
        vec!["serve", "--max-connections", "0", "t"],
        vec!["serve", "--max-connections", "18446744073709551615", "t"],
        vec!["scan", "--top-files", "18446744073709551615", "t"],
    ] {
        let r = d.cmd().args(&args).run();
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("is not in"), "{args:?}: {}", r.stderr);
    }
    for (args, says) in [
        (vec!["scan", "--unit", "4G", "t"], "at most 64M"),
        (vec!["scan", "--unit", "3G", "t"], "at most 64M"),
        (vec!["scan", "--dedup", "4K,128M", "t"], "at most 64M"),
    ] {
        let r = d.cmd().args(&args).run();
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        r.stderr_has(says);
    }
}

/// An output that names an input (by any name) is refused before anything is written, and the
/// input is left as it was; a temporary directory trawl did not make is never removed.
#[test]
fn no_output_replaces_an_input_or_a_directory_trawl_did_not_make() {
    let d = Dir::new();
    let video = crate::flv::flv_with_keyframes();
    d.create(b"v.flv", &video);
    std::os::unix::fs::symlink("v.flv", d.join("alias.flv")).unwrap();
    for out in ["v.flv", "alias.flv"] {
        let r = d.cmd().args(["flv", "index", "v.flv", "--json", out]).run();
        assert_eq!(r.code, 2, "{}", r.stderr);
        r.stderr_has("is the input v.flv");
        assert_eq!(std::fs::read(d.join("v.flv")).unwrap(), video);
    }
    d.create(b"t/a", b"a");
    let sums = d
        .cmd()
        .args(["scan", "t", "-q", "-m", "sha256sum:SUMS"])
        .run();
    sums.code(0);
    let before = std::fs::read(d.join("SUMS")).unwrap();
    let r = d
        .cmd()
        .args(["verify", "SUMS", "--root", ".", "--json", "SUMS"])
        .run();
    assert_eq!(r.code, 2, "{}", r.stderr);
    r.stderr_has("is the input SUMS");
    assert_eq!(std::fs::read(d.join("SUMS")).unwrap(), before);
    // A file given as a scan root is not an output either.
    let r = d.cmd().args(["scan", "t/a", "--json", "t/a"]).run();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(std::fs::read(d.join("t/a")).unwrap(), b"a");
    // A directory of the name an older trawl used for its temporary bag stays untouched.
    d.create(b"bo/.dest.trawl-tmp/keep", b"someone's");
    d.cmd()
        .args(["bag", "create", "t", "--out", "bo/dest", "-q"])
        .run()
        .code(0);
    assert_eq!(
        std::fs::read(d.join("bo/.dest.trawl-tmp/keep")).unwrap(),
        b"someone's"
    );
    assert!(d.join("bo/dest/bagit.txt").exists());
    let left: Vec<_> = std::fs::read_dir(d.join("bo"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left.len(), 2, "no temporary directory left: {left:?}");
}

/// `--media-index DIR` writes under DIR only: a subdirectory of DIR that is a link to
/// elsewhere is refused, not written through.
#[test]
fn media_indexes_are_never_written_through_a_link() {
    let d = Dir::new();
    d.create(b"t/sub/v.flv", &crate::flv::flv_with_keyframes());
    std::fs::create_dir_all(d.join("idx")).unwrap();
    std::fs::create_dir_all(d.join("outside")).unwrap();
    std::os::unix::fs::symlink(d.join("outside"), d.join("idx/sub")).unwrap();
    let r = d
        .cmd()
        .args(["scan", "t", "-q", "--media-index", "idx"])
        .run();
    assert_eq!(r.code, 2, "{}", r.stderr);
    r.stderr_has("symbolic link inside --media-index");
    assert_eq!(std::fs::read_dir(d.join("outside")).unwrap().count(), 0);
    // Without the link the index lands where it belongs.
    std::fs::remove_file(d.join("idx/sub")).unwrap();
    d.cmd()
        .args(["scan", "t", "-q", "--media-index", "idx"])
        .run()
        .code(0);
    assert!(d.join("idx/sub/v.flv.keyframes.json").exists());
}

/// Control characters in names reach no terminal raw: not in messages on stderr (a FIFO
/// skipped, a root that does not exist), not in verify's lines on stdout.
#[test]
fn names_cannot_send_escape_sequences_or_forge_lines() {
    let d = Dir::new();
    let evil: &[u8] = b"t/a\x1b]0;pwned\x07\x1b[2Jb";
    d.create(evil, b"x");
    mkfifo(&d.join(std::ffi::OsStr::from_bytes(b"t/fifo\x1b[31m")));
    let r = d.cmd().args(["scan", "t"]).run();
    assert!(
        !r.stderr.contains('\x1b') && !r.stdout.contains('\x1b'),
        "{:?}",
        r.stderr
    );
    r.stderr_has("fifo\\033[31m");
    let sums = format!("{}  a\x1b]0;pwned\x07\x1b[2Jb\n", sha256_hex(b"x"));
    d.create(b"SUMS", sums.as_bytes());
    let r = d.cmd().args(["verify", "SUMS", "--root", "t"]).run();
    r.code(0);
    assert!(!r.stdout_bytes.contains(&0x1b), "{:?}", r.stdout);
    r.stdout_has("\\a\\033]0;pwned\\007\\033[2Jb: OK");
    let r = d
        .cmd()
        .args([
            OsStr::new("scan"),
            OsStr::from_bytes(b"nothere\nforged: line"),
        ])
        .run();
    assert_eq!(r.code, 2);
    assert_eq!(r.stderr.trim_end().lines().count(), 1, "{:?}", r.stderr);
    r.stderr_has("nothere\\nforged: line");
}

/// `serve` serves FLV files (every file with `--all`), never a dotfile, a catalog or SQLite's
/// files beside it, nor a file's name with a trailing `/`; the log counts the bytes sent.
#[test]
fn serve_serves_what_it_promises_and_logs_what_it_sent() {
    let d = Dir::new();
    let video = crate::flv::flv_with_keyframes();
    d.create(b"www/a.flv", &video);
    d.create(b"www/notes.txt", b"notes");
    d.create(b"www/.git/config", b"[remote] url=secret");
    d.create(b"www/t/f", b"x");
    d.cmd()
        .args(["audit", "www/t", "-c", "www/cat.db", "-q"])
        .run()
        .code(0);
    d.create(b"www/cat.db-wal", b"a log");
    let status = |srv: &Serve, p: &str| {
        let r = srv.get(p, "");
        String::from_utf8_lossy(&r[..12.min(r.len())]).into_owned()
    };
    let srv = Serve::start(&d, "www", &[]);
    assert!(status(&srv, "/a.flv").ends_with("200"));
    for p in [
        "/notes.txt",
        "/a.flv/",
        "/.git/config",
        "/cat.db",
        "/cat.db-wal",
    ] {
        assert!(status(&srv, p).ends_with("404"), "{p}");
    }
    let log = srv.stop();
    let want = format!("\"GET /a.flv HTTP/1.1\" 200 {}", video.len());
    assert!(log.contains(&want), "{log}");
    let srv = Serve::start(&d, "www", &["--all"]);
    assert!(status(&srv, "/notes.txt").ends_with("200"));
    for p in [
        "/.git/config",
        "/%2Egit/config",
        "/cat.db",
        "/cat.db-wal",
        "/notes.txt/",
    ] {
        assert!(status(&srv, p).ends_with("404"), "{p}");
    }
    srv.stop();
}

/// What a command says it did is what it did: a hashdeep export to stdout that cannot hold a
/// name writes nothing (as it says); `bag validate -L` is refused, not ignored.
#[test]
fn commands_do_what_they_say() {
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
    d.cmd()
        .args(["bag", "create", "t", "--out", "b", "-q"])
        .run();
    for cmd in ["validate", "update"] {
        let mut args = vec!["bag", cmd, "b", "-L"];
        if cmd == "update" {
            args.extend(["-d", "md5"]);
        }
        let r = d.cmd().args(&args).run();
        assert_eq!(r.code, 2, "{cmd}: {}", r.stderr);
        r.stderr_has("-L/--follow");
    }
}

/// A fetch.txt of a million bad lines and 100,000 items no manifest lists: validated in
/// bounded memory, with a hundred problem lines shown and the rest counted.
#[test]
fn a_hostile_fetch_txt_costs_bounded_memory_and_output() {
    let d = Dir::new();
    d.create(b"b/one.txt", b"one\n");
    d.cmd().args(["bag", "create", "b", "-q"]).run().code(0);
    let mut fetch = String::new();
    for i in 0..1_000_000u32 {
        fetch.push_str("not a fetch line\n");
        if i % 10 == 0 {
            fetch.push_str(&format!("https://example.invalid/{i} 1 data/f{i:07}\n"));
        }
    }
    std::fs::write(d.join("b/fetch.txt"), &fetch).unwrap();
    let r = d.cmd().args(["bag", "validate", "b"]).run_within(120);
    assert_eq!(r.code, 1, "{}", &r.stderr[..r.stderr.len().min(2000)]);
    let lines = r.stderr.lines().count();
    assert!(lines < 300, "{lines} lines of output");
    r.stderr_has("999900 more problem lines like those above")
        .stderr_has("99900 more problem lines like those above");
    let (code, rss) = peak_rss_apart(&d, &["bag", "validate", "b"]);
    assert_eq!(code, 1);
    assert!(
        rss < 80 << 20,
        "peak RSS {} MiB for a {} MiB fetch.txt",
        rss >> 20,
        fetch.len() >> 20
    );
}
