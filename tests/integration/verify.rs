//! `trawl verify`: manifests in every form GNU's `-c`, BSD and hashdeep write, judged as those
//! tools judge them; lines of any length; names resolved as sha256sum resolves them, and held
//! beneath the root under `--root` or `--confine`.

use crate::util::{Dir, sha256_hex};

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

/// Lines that are no checksum lines are named, as warnings: the files' verdicts decide the exit
/// code, as with `sha256sum -c` (0 here); with --strict they are errors, and the code is 2.
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
    r.stderr_has("trawl: warning: sums:2: not a checksum line");
    r.stderr_has("trawl: warning: sums:3:");
    assert!(
        r.stdout.contains("a: OK"),
        "the good line is still checked: {}",
        r.stdout
    );
    if let Some(g) = gnu(&d, "sha256sum", &["-c", "sums"]) {
        r.code(g.code);
    }
    r.code(0);
    d.cmd()
        .args(["verify", "sums", "--strict"])
        .run()
        .code(2)
        .stderr_has("trawl: sums:2: not a checksum line");
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

/// A GNU checker (`b2sum`, `sha256sum`, `cksum`) run on `args` in `d`; None (skipped) when it
/// is not installed.
pub(crate) fn gnu(d: &Dir, name: &str, args: &[&str]) -> Option<crate::util::Run> {
    let prog = crate::util::tool(name)?;
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    Some(crate::util::run_tool(d.path(), &prog, &args))
}

#[test]
fn verify_resolves_names_as_sha256sum_does_and_confines_them_under_root() {
    let d = Dir::new();
    d.create(b"r/etc/hostname", b"inside the root\n");
    d.create(b"secret", b"outside\n");
    let inside = sha256_hex(b"inside the root\n");
    d.create(b"r/SUMS", format!("{inside}  .//etc/hostname\n").as_bytes());
    // sha256sum -c, run in the root, reads ROOT/etc/hostname.
    let gnu = std::process::Command::new("sha256sum")
        .args(["-c", "SUMS"])
        .current_dir(d.join("r"))
        .output()
        .unwrap();
    assert!(gnu.status.success(), "{gnu:?}");
    d.cmd()
        .args(["verify", "r/SUMS", "--root", "r"])
        .run()
        .code(0)
        .stdout_has("etc/hostname: OK");
    d.cmd().args(["verify", "SUMS"]).run_in("r").code(0);
    // A received manifest that reaches out: refused under --root, named, nothing read.
    let out = sha256_hex(b"outside\n");
    d.create(
        b"r/EVIL",
        format!(
            "{out}  ../secret\n{out}  {}\n{inside}  etc/hostname\n",
            d.join("secret").display()
        )
        .as_bytes(),
    );
    let r = d.cmd().args(["verify", "r/EVIL", "--root", "r"]).run();
    r.code(2)
        .stderr_has("r/EVIL:1: ../secret: refused")
        .stderr_has("r/EVIL:2: ")
        .stdout_has("etc/hostname: OK");
    assert!(!r.stdout.contains("secret: OK"), "{}", r.stdout);
    // Without --root (or with --no-confine) they are checked as sha256sum -c checks them.
    d.cmd()
        .args(["verify", "EVIL"])
        .run_in("r")
        .code(0)
        .stdout_has("../secret: OK");
    d.cmd()
        .args(["verify", "EVIL", "--confine"])
        .run_in("r")
        .code(2);
    d.cmd()
        .args(["verify", "r/EVIL", "--root", "r", "--no-confine"])
        .run()
        .code(0);
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
