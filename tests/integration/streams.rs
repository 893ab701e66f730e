//! A reader that goes away: stderr (and stdout) a pipe already closed, as in `2>&1 | head`. The
//! messages are lost, nothing else: no abort, the outputs asked for are written, and the exit
//! code is the one the run decides. A stdout that cannot be written (a full disk) is another
//! matter: an error, exit 2.

use crate::util::*;

/// A tree with a file that cannot be read (as an unprivileged user): one message on stderr.
fn tree_with_an_unreadable_file(d: &Dir) {
    d.create(b"t/a.txt", b"alpha\n");
    d.create(b"t/b.txt", b"bravo\n");
    let bad = d.create(b"t/secret", b"no");
    std::fs::set_permissions(&bad, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    std::fs::set_permissions(
        d.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
}

#[test]
fn scan_with_stderr_closed_writes_its_report_and_exits_2_for_the_unreadable_file() {
    let d = Dir::new();
    tree_with_an_unreadable_file(&d);
    for both in [false, true] {
        let json = format!("r{both}.json");
        let r = d
            .cmd_unprivileged()
            .args(["scan", "t", "-q", "--json", &json])
            .run_with_stderr_closed(both);
        r.code(2);
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(d.join(&json)).unwrap()).unwrap();
        assert_eq!(report["totals"]["files"], 2, "both={both}");
        assert_eq!(report["totals"]["failed"], 1, "both={both}");
    }
}

#[test]
fn verify_with_stderr_closed_ends_as_it_ends_with_stderr_open() {
    let d = Dir::new();
    d.create(b"t/a.txt", b"alpha\n");
    // One good line, one for a file that is not there, one that is no checksum line at all
    // (an error on stderr).
    let sums = format!(
        "{}  t/a.txt\n{}  t/gone.txt\nnot a checksum line\n",
        "c5d6d4ef6b1ad9a06c0e5c5d0eb8b3e1e0bb84a8a8e3ba5b21b5c2e1c1b87a6e",
        "0000000000000000000000000000000000000000000000000000000000000000"
    );
    d.create(b"SUMS", sums.as_bytes());
    let open = d.cmd().args(["verify", "SUMS"]).run();
    assert!(
        open.stderr.contains("not a checksum line"),
        "{}",
        open.stderr
    );
    assert_ne!(open.code, 0);
    d.cmd()
        .args(["verify", "SUMS"])
        .run_with_stderr_closed(false)
        .code(open.code);
}

#[test]
fn bag_create_and_validate_with_stderr_closed_make_and_check_the_bag() {
    let d = Dir::new();
    d.create(b"b/one.txt", b"one\n");
    d.create(b"b/two.txt", b"two\n");
    // xxh3 is not a BagIt algorithm: a warning on stderr first.
    d.cmd()
        .args(["bag", "create", "b", "-d", "sha256,xxh3"])
        .run_with_stderr_closed(true)
        .code(0);
    assert!(d.join("b/bagit.txt").exists() && d.join("b/manifest-sha256.txt").exists());
    d.cmd()
        .args(["bag", "validate", "b"])
        .run_with_stderr_closed(true)
        .code(0);
    std::fs::write(d.join("b/data/one.txt"), b"changed\n").unwrap();
    d.cmd()
        .args(["bag", "validate", "b"])
        .run_with_stderr_closed(true)
        .code(1);
}

#[test]
fn a_usage_error_with_stderr_closed_is_exit_2() {
    let d = Dir::new();
    d.cmd()
        .args(["scan", "--digest", "sha265", "."])
        .run_with_stderr_closed(true)
        .code(2);
}

#[test]
fn audit_with_stderr_closed_records_the_run_and_ends_as_with_stderr_open() {
    let (open, closed) = (Dir::new(), Dir::new());
    tree_with_an_unreadable_file(&open);
    tree_with_an_unreadable_file(&closed);
    let want = open
        .cmd_unprivileged()
        .args(["audit", "t", "-c", "cat.db"])
        .run();
    assert!(want.stderr.contains("secret"), "{}", want.stderr);
    closed
        .cmd_unprivileged()
        .args(["audit", "t", "-c", "cat.db"])
        .run_with_stderr_closed(true)
        .code(want.code);
    assert!(closed.join("cat.db").exists());
}

#[test]
fn every_command_that_reports_on_stderr_ends_as_it_does_with_stderr_open() {
    let d = Dir::new();
    d.create(b"t/a.txt", b"alpha\n");
    d.create(b"not.flv", b"plain text");
    d.create(b"bad.json", b"{ nope");
    let cases: &[&[&str]] = &[
        &["catalog", "report", "-c", "missing.db"],
        &["catalog", "history", "-c", "missing.db"],
        &["flv", "index", "not.flv"],
        &["flv", "inject", "not.flv", "out.flv"],
        &["report", "bad.json", "--html", "r.html"],
        &["bag", "validate", "t"],
        &["bag", "recover", "t"],
        &["serve", "missing-dir"],
        &["verify", "missing-manifest"],
        &["scan", "t", "missing"],
        &["man", "/proc/forbidden/here"],
    ];
    for args in cases {
        let open = d.cmd().args(*args).run();
        assert!(!open.stderr.is_empty(), "{args:?} says nothing on stderr");
        for both in [false, true] {
            let closed = d.cmd().args(*args).run_with_stderr_closed(both);
            assert_eq!(
                closed.code, open.code,
                "{args:?} (stdout closed too: {both}): {}",
                closed.stderr
            );
        }
    }
}

/// A stdout that cannot be written (a full disk: /dev/full) is an error, exit 2, for every
/// command that prints its result there; a reader gone away (EPIPE) is not (streams.rs).
#[test]
fn a_full_stdout_is_an_error_for_every_command_that_prints_its_result() {
    let d = Dir::new();
    d.create(b"p/a", b"alpha\n");
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let run = |args: &[&str]| {
        let mut c = d.cmd().args(args).cmd;
        c.stdout(full());
        Run::from(c.output().unwrap())
    };
    run(&["bag", "create", "p", "--out", "bag"])
        .code(2)
        .stderr_has("stdout: cannot write");
    assert!(d.join("bag/bagit.txt").exists(), "the bag itself is made");
    run(&["bag", "validate", "bag"])
        .code(2)
        .stderr_has("stdout: cannot write");
    run(&["bag", "update", "bag", "--digest", "sha256,md5"])
        .code(2)
        .stderr_has("stdout: cannot write");
    run(&["scan", "p"])
        .code(2)
        .stderr_has("stdout: cannot write");
    d.cmd()
        .args(["scan", "p", "-q", "--json", "r.json"])
        .run()
        .code(0);
    run(&["report", "r.json", "--html", "-"])
        .code(2)
        .stderr_has("cannot write");
    // An audit's event lines: the first that cannot be written ends them, exit 2.
    d.cmd()
        .args(["audit", "p", "-c", "cat.db", "-q"])
        .run()
        .code(0);
    d.create(b"p/b", b"beta\n");
    run(&["audit", "p", "-c", "cat.db"])
        .code(2)
        .stderr_has("stdout: cannot write");
}
