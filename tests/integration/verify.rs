use crate::util::Dir;

#[test]
fn verify_reports_ok_failed_missing_and_strict_extras() {
    let d = Dir::new();
    d.create(b"t/a", b"a");
    d.create(b"t/b", b"b");
    d.create(b"t/sub/c", b"c");
    d.cmd()
        .args(["scan", "t", "-m", "sha256sum:sums", "-q"])
        .run()
        .code(0);
    let r = d.cmd().args(["verify", "sums", "--root", "t"]).run();
    r.code(0);
    assert_eq!(r.stdout, "a: OK\nb: OK\nsub/c: OK\n");

    std::fs::write(d.join("t/a"), b"A").unwrap();
    std::fs::remove_file(d.join("t/b")).unwrap();
    d.create(b"t/new", b"n");
    let r = d.cmd().args(["verify", "sums", "--root", "t"]).run();
    r.code(1);
    assert_eq!(
        r.stdout,
        "a: FAILED (sha256 differs)\nb: MISSING\nsub/c: OK\n"
    );
    assert!(
        r.stderr
            .contains("3 listed: 1 OK, 1 FAILED, 1 missing, 0 unreadable"),
        "{}",
        r.stderr
    );
    let r = d
        .cmd()
        .args([
            "verify",
            "sums",
            "--root",
            "t",
            "--strict",
            "--failures-only",
        ])
        .run();
    r.code(1);
    assert_eq!(
        r.stdout,
        "a: FAILED (sha256 differs)\nb: MISSING\nnew: NOT IN MANIFEST\n"
    );
}

#[test]
fn verify_reads_bsd_and_hashdeep_and_checks_sizes() {
    let d = Dir::new();
    d.create(b"t/a", b"hello");
    d.cmd()
        .args([
            "scan",
            "t",
            "-d",
            "md5,sha256",
            "-m",
            "bsd:tags",
            "-m",
            "hashdeep:hd",
            "-q",
        ])
        .run()
        .code(0);
    d.cmd()
        .args(["verify", "tags", "--root", "t"])
        .run()
        .code(0);
    // hashdeep names are relative to the root (`./a`), as `cd t && hashdeep -r -l .` writes
    // them: verified against the root.
    d.cmd().args(["verify", "hd", "--root", "t"]).run().code(0);
    // A hashdeep row with the right digests but a wrong size fails on the size.
    let hd = std::fs::read_to_string(d.join("hd"))
        .unwrap()
        .replace("\n5,", "\n6,");
    std::fs::write(d.join("hd"), hd).unwrap();
    let r = d.cmd().args(["verify", "hd", "--root", "t"]).run();
    r.code(1);
    assert!(
        r.stdout.contains("a: FAILED (size is 5, manifest says 6)"),
        "{}",
        r.stdout
    );
}

#[test]
fn malformed_manifest_lines_are_named() {
    let d = Dir::new();
    d.create(b"a", b"a");
    let good = "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  a\n";
    std::fs::write(
        d.join("sums"),
        format!("{good}this is not a line\n{}  x\n", "ab".repeat(10)),
    )
    .unwrap();
    let r = d.cmd().args(["verify", "sums"]).run();
    r.code(2);
    r.stderr_has("trawl: sums:2: not a checksum line");
    r.stderr_has("trawl: sums:3:");
    assert!(
        r.stdout.contains("a: OK"),
        "the good line is still checked: {}",
        r.stdout
    );
}

/// As `sha256sum -c`: each line is judged on its own (the file is read again for the line that
/// disagrees), one OK and one FAILED.
#[test]
fn same_file_twice_with_different_digests_judges_each_line() {
    let d = Dir::new();
    d.create(b"a", b"a");
    let text = format!(
        "{}  a\n{}  a\n",
        "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb",
        "0".repeat(64)
    );
    std::fs::write(d.join("sums"), text).unwrap();
    let r = d.cmd().args(["verify", "sums"]).run();
    r.code(1);
    assert_eq!(
        r.stdout.lines().take(2).collect::<Vec<_>>(),
        ["a: OK", "a: FAILED (sha256 differs)"],
        "{}",
        r.stdout
    );
    let gnu = crate::util::run_tool(
        d.path(),
        &crate::util::tool("sha256sum").unwrap(),
        &[std::ffi::OsStr::new("-c"), std::ffi::OsStr::new("sums")],
    );
    assert_eq!(gnu.code, r.code, "{gnu:?}");
}

#[test]
fn awkward_names_round_trip_through_every_format() {
    let d = Dir::new();
    crate::util::make_awkward(&d, "t");
    for (fmt, digest) in [
        ("sha256sum", "sha256"),
        ("bsd", "sha1"),
        ("b3sum", "blake3"),
        ("xxh128sum", "xxh3"),
        ("md5sum", "md5"),
    ] {
        let m = format!("{fmt}:m-{fmt}");
        d.cmd()
            .args(["scan", "t", "-d", digest, "-m", &m, "-q"])
            .run()
            .code(0);
        let r = d
            .cmd()
            .args(["verify", &format!("m-{fmt}"), "--root", "t", "--strict"])
            .run();
        r.code(0);
        assert_eq!(
            r.stdout.lines().filter(|l| l.ends_with(": OK")).count(),
            8,
            "{fmt}: {}",
            r.stdout
        );
    }
    // NUL-terminated: no escaping at all.
    d.cmd()
        .args(["scan", "t", "-m", "sha256sum:z", "-z", "-q"])
        .run()
        .code(0);
    let z = std::fs::read(d.join("z")).unwrap();
    assert_eq!(z.iter().filter(|&&b| b == 0).count(), 8);
    assert!(z.windows(13).any(|w| w == b"new\nline.txt\0"));
    d.cmd().args(["verify", "z", "--root", "t"]).run().code(0);
}

#[test]
fn a_file_that_is_no_manifest_gets_a_handful_of_lines_and_one_verdict() {
    let d = Dir::new();
    d.create(b"t/a.txt", b"alpha\n");
    d.cmd()
        .args(["scan", "t", "-q", "--json", "scan.json"])
        .run()
        .code(0);
    let lines = std::fs::read_to_string(d.join("scan.json"))
        .unwrap()
        .lines()
        .count();
    assert!(lines > 20, "{lines}");
    let r = d.cmd().args(["verify", "scan.json"]).run();
    r.code(2)
        .stderr_has("scan.json:5: not a checksum line")
        .stderr_has(&format!(
            "scan.json: {} more lines that are not checksum lines",
            lines - 5
        ))
        .stderr_has("no properly formatted checksum lines found");
    assert!(!r.stderr.contains("scan.json:6:"), "{}", r.stderr);
    assert!(r.stderr.lines().count() <= 8, "{}", r.stderr);
}

#[test]
fn verify_from_another_directory_names_the_root_to_give() {
    let d = Dir::new();
    d.create(b"data/t/a.txt", b"alpha\n");
    d.create(b"elsewhere/.keep", b"");
    d.cmd()
        .args(["scan", ".", "-q", "-m", "sha256sum:SUMS"])
        .run_in("data")
        .code(0);
    // From the parent: every name is missing here, and found beside the manifest.
    d.cmd()
        .args(["verify", "data/SUMS"])
        .run()
        .code(1)
        .stderr_has("run with --root data");
    // From a directory where nothing is: the general hint.
    d.cmd()
        .args(["verify", "../data/SUMS", "--root", "."])
        .run_in("elsewhere")
        .code(1);
    let r = d.cmd().args(["verify", "../data/SUMS"]).run_in("elsewhere");
    r.code(1).stderr_has("run with --root ../data");
    // Given --root, no hint.
    let r = d
        .cmd()
        .args(["verify", "data/SUMS", "--root", "data"])
        .run();
    r.code(0);
    assert!(!r.stderr.contains("--root"), "{}", r.stderr);
}
