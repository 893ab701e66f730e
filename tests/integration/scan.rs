//! `trawl scan` through the binary: digests against coreutils, mmap and read, what is skipped
//! and what is reported, the tree left unchanged, the same report every run.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{Dir, is_root, mkfifo, wait_until};

fn coreutils(prog: &str, file: &std::path::Path) -> String {
    let out = Command::new(prog).arg(file).output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn digests_equal_coreutils_for_every_algorithm_in_one_pass() {
    let d = Dir::new();
    let mut data: Vec<u8> = (0..3_000_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    data.extend_from_slice(b"tail");
    d.create(b"t/big.bin", &data); // several pooled buffers: the fanned-out path
    d.create(b"t/small.txt", b"hello\n"); // one buffer: the inline path
    let r = d
        .cmd()
        .args([
            "scan",
            "t",
            "-d",
            "md5,sha1,sha256,sha512",
            "--json",
            "r.json",
            "-q",
        ])
        .run();
    r.code(0);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("r.json")).unwrap()).unwrap();
    let files = report["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    for f in files {
        let path = d.path().join(f["path"].as_str().unwrap());
        for (alg, prog) in [
            ("md5", "md5sum"),
            ("sha1", "sha1sum"),
            ("sha256", "sha256sum"),
            ("sha512", "sha512sum"),
        ] {
            assert_eq!(
                f["digests"][alg].as_str().unwrap(),
                coreutils(prog, &path),
                "{alg} of {}",
                path.display()
            );
        }
    }
    assert_eq!(report["totals"]["files"], 2);
    assert_eq!(report["schema_version"], 2);
    // The report names the library behind each algorithm: OpenSSL for the two it is faster at
    // in a build with `openssl`, RustCrypto's (SHA-NI code for SHA-256) for the others.
    let imps = report["digest_implementations"].as_object().unwrap();
    assert_eq!(
        imps.keys().collect::<Vec<_>>(),
        ["md5", "sha1", "sha256", "sha512"]
    );
    for alg in ["md5", "sha512"] {
        let imp = imps[alg].as_str().unwrap();
        if cfg!(feature = "openssl") {
            assert!(imp.starts_with("openssl (OpenSSL "), "{imps:?}");
        } else {
            assert!(imp.starts_with("RustCrypto "), "{imps:?}");
        }
    }
    assert_eq!(imps["sha256"], "RustCrypto sha2");
}

#[test]
fn mmap_and_read_agree() {
    let d = Dir::new();
    let data: Vec<u8> = (0..5_000_000u32).map(|i| (i % 251) as u8).collect();
    d.create(b"t/f", &data);
    let a = d
        .cmd()
        .args([
            "scan",
            "t",
            "-d",
            "blake3",
            "-m",
            "b3sum:-",
            "-q",
            "--io",
            "mmap",
            "--buffer-size",
            "64K",
        ])
        .run();
    let b = d
        .cmd()
        .args([
            "scan", "t", "-d", "blake3", "-m", "b3sum:-", "-q", "--io", "read",
        ])
        .run();
    a.code(0);
    b.code(0);
    assert_eq!(a.stdout, b.stdout);
    assert!(a.stdout.starts_with(&blake3_hex(&data)));
}

#[test]
fn a_big_file_truncated_while_mapped_is_reported_and_the_run_goes_on() {
    let d = Dir::new();
    // 40 MiB, with BLAKE3: mapped by the default `--io auto`.
    let big = d.create(b"t/big", b"");
    let set_len = move |n: u64| std::fs::File::options().write(true).open(&big)?.set_len(n);
    set_len(40 << 20).unwrap();
    d.create(b"t/small", b"hello\n");
    // The rate limit holds the reader ~4 s after the first window; the file shrinks once that
    // window is mapped (it shows in /proc/PID/maps), so the pages of a mapped window lie past
    // its end when they are touched (SIGBUS).
    let child = d
        .cmd()
        .cmd
        .args([
            "scan",
            "t",
            "-d",
            "blake3",
            "-m",
            "sha256sum:-",
            "--limit-rate",
            "8M",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let maps = format!("/proc/{}/maps", child.id());
    let big = d.join("t/big");
    wait_until("a window of t/big mapped", || {
        std::fs::read_to_string(&maps).is_ok_and(|m| m.contains(&*big.to_string_lossy()))
    });
    set_len(1 << 20).unwrap();
    let r = crate::util::Run::from(child.wait_with_output().unwrap());
    r.code(2).stderr_has(
        "trawl: t/big: changed while being read (it shrank while mapped: pages past its new end read as zeros); no digest recorded\n",
    );
    assert!(
        !r.stdout.contains(" big\n"),
        "no digest for the shrunken file: {}",
        r.stdout
    );
    assert!(
        r.stdout.contains(&format!(
            "{}  small\n",
            coreutils("sha256sum", &d.join("t/small"))
        )),
        "{}",
        r.stdout
    );
}

/// Ties the two I/O methods to a value; b3sum checks BLAKE3 independently in the interop tests.
fn blake3_hex(data: &[u8]) -> String {
    blake3::hash(data).to_hex().to_string()
}

#[test]
fn fifo_socket_and_symlink_are_skipped_without_blocking() {
    let d = Dir::new();
    d.create(b"t/a", b"a");
    let fifo = d.join("t/fifo");
    mkfifo(&fifo);
    let _sock = std::os::unix::net::UnixListener::bind(d.join("t/sock")).unwrap();
    std::os::unix::fs::symlink("a", d.join("t/link")).unwrap();
    let start = Instant::now();
    let r = d.cmd().args(["scan", "t", "--jsonl", "out.jsonl"]).run();
    assert!(start.elapsed() < Duration::from_secs(20));
    r.code(0);
    r.stderr_has("t/fifo: skipped: FIFO");
    r.stderr_has("t/sock: skipped: socket");
    r.stdout_has("1 file, ");
    let jsonl = std::fs::read_to_string(d.join("out.jsonl")).unwrap();
    assert!(jsonl.contains(r#""skipped":"symlink""#), "{jsonl}");
}

#[test]
fn device_given_directly_is_skipped() {
    let d = Dir::new();
    let r = d.cmd().args(["scan", "/dev/null", "/dev/zero"]).run();
    r.code(0);
    r.stderr_has("/dev/zero: skipped: character device");
}

#[test]
fn unreadable_file_is_named_and_the_run_goes_on_with_exit_2() {
    let d = Dir::new();
    d.create(b"t/ok", b"ok");
    let bad = d.create(b"t/secret", b"s");
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o000)).unwrap();
    let r = d
        .cmd_unprivileged()
        .args(["scan", "t", "-m", "sha256sum:sums"])
        .run();
    r.code(2);
    assert!(
        r.stderr
            .contains("trawl: t/secret: cannot open: Permission denied"),
        "{}",
        r.stderr
    );
    r.stdout_has("FAILED: 1 file could not be read");
    assert!(
        r.stdout.contains("t/secret"),
        "summary names the file: {}",
        r.stdout
    );
    let sums = std::fs::read_to_string(d.join("sums")).unwrap();
    assert!(
        sums.contains("  ok\n") && !sums.contains("secret"),
        "{sums}"
    );
    if !is_root() {
        eprintln!("note: ran as an ordinary user");
    }
}

#[test]
fn symlink_loops_under_follow_are_skipped_entries_not_failures() {
    let d = Dir::new();
    d.create(b"t/a/f", b"f");
    d.create(b"t/b/g", b"g");
    std::os::unix::fs::symlink("..", d.join("t/a/up")).unwrap();
    std::os::unix::fs::symlink("..", d.join("t/b/top")).unwrap();
    let r = d.cmd().args(["scan", "t", "--follow", "--json", "-"]).run();
    r.code(0).stderr_has("symbolic link loop");
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["totals"]["failed"], 0, "{v}");
    assert_eq!(v["totals"]["skipped"], 2, "{v}");
    assert_eq!(v["skipped"][0]["skipped"], "symlink-loop");
    // Without --follow the link is not followed, so there is no loop.
    d.cmd().args(["scan", "t"]).run().code(0);
}

#[test]
fn empty_file_and_empty_tree() {
    let d = Dir::new();
    std::fs::create_dir(d.join("none")).unwrap();
    let r = d.cmd().args(["scan", "none", "-m", "sha256sum:sums"]).run();
    r.code(0);
    assert!(r.stdout.starts_with("0 files"), "{}", r.stdout);
    assert_eq!(std::fs::read(d.join("sums")).unwrap(), b"");
    d.create(b"e/empty", b"");
    let r = d.cmd().args(["scan", "e", "-m", "sha256sum:-", "-q"]).run();
    r.code(0);
    assert_eq!(
        r.stdout,
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  empty\n"
    );
}

#[test]
fn jsonl_keeps_invalid_utf8_bytes() {
    let d = Dir::new();
    d.create(b"t/a\xffb", b"x");
    let r = d.cmd().args(["scan", "t", "--jsonl", "-", "-q"]).run();
    r.code(0);
    let rec: serde_json::Value = serde_json::from_str(r.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(rec["path"], "t/a\u{fffd}b");
    assert_eq!(rec["path_hex"], "742f61ff62");
    assert_eq!(rec["size"], 1);
}

#[test]
fn scanning_never_changes_the_tree() {
    let d = Dir::new();
    d.create(b"t/a", b"abc");
    let before = std::fs::metadata(d.join("t/a")).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    d.cmd().args(["scan", "t", "-q"]).run().code(0);
    let after = std::fs::metadata(d.join("t/a")).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        (before.mtime(), before.mtime_nsec()),
        (after.mtime(), after.mtime_nsec())
    );
    assert_eq!(
        (before.atime(), before.atime_nsec()),
        (after.atime(), after.atime_nsec()),
        "atime changed"
    );
    assert_eq!(std::fs::read_dir(d.join("t")).unwrap().count(), 1);
}

#[test]
fn outputs_written_inside_the_scanned_tree_are_not_scanned() {
    let d = Dir::new();
    d.create(b"a", b"a");
    let r = d
        .cmd()
        .args([
            "scan",
            ".",
            "-m",
            "sha256sum:sums",
            "--json",
            "r.json",
            "--jsonl",
            "j.jsonl",
            "-q",
        ])
        .run();
    r.code(0);
    let sums = std::fs::read_to_string(d.join("sums")).unwrap();
    assert_eq!(
        sums,
        "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  a\n"
    );
    let j = std::fs::read_to_string(d.join("j.jsonl")).unwrap();
    assert_eq!(j.lines().count(), 1, "{j}");
}

#[test]
// The child is reaped by wait4 below, which also gives its peak memory.
#[allow(clippy::zombie_processes)]
fn the_reported_peak_memory_is_the_process_peak_with_the_json_written() {
    let d = Dir::new();
    for i in 0..20_000 {
        d.create(format!("t/{}/f{i}", i % 100).as_bytes(), b"x");
    }
    // The kernel's figure, from a small process that starts trawl: getrusage folds the peak of
    // the image an exec replaced into the process's, so trawl started straight from this test
    // process (large, and sharing its memory until the exec) would be charged with the test's
    // own memory. Python forks from its own small image and reads its child's peak.
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True); \
             print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
            env!("CARGO_BIN_EXE_trawl"),
            "scan",
            "t",
            "-q",
            "--json",
            "r.json",
            "-m",
            "sha256sum:m.txt",
        ])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let measured = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse::<u64>()
        .unwrap()
        * 1024;
    let v: Value = serde_json::from_slice(&std::fs::read(d.join("r.json")).unwrap()).unwrap();
    let reported = v["totals"]["peak_rss_bytes"].as_u64().unwrap();
    assert!(
        reported * 100 >= measured * 95 && reported <= measured,
        "reported {reported}, measured by wait4 {measured}"
    );
}

#[test]
fn a_tiny_file_starting_with_f_is_not_called_a_truncated_flv() {
    let d = Dir::new();
    d.create(b"t/one", b"F");
    d.create(b"t/two", b"FL");
    d.create(b"t/cut.flv", b"FLV\x01");
    let r = d.cmd().args(["scan", "t", "-q"]).run();
    r.code(0);
    assert!(!r.stderr.contains("t/one"), "{}", r.stderr);
    assert!(!r.stderr.contains("t/two"), "{}", r.stderr);
    r.stderr_has("t/cut.flv");
}

#[test]
fn a_manifest_alone_is_a_fixity_scan_and_any_reduction_flag_brings_the_reduction_back() {
    let d = Dir::new();
    d.create(b"t/a.bin", &[7u8; 20_000]);
    d.create(b"t/b.bin", &[7u8; 20_000]);
    let has = |args: &[&str]| {
        let r = d.cmd().args(args).run();
        r.code(0);
        r.stdout.contains("data reduction:")
    };
    // What a newcomer types for fixity: digests and a manifest, at fixity cost.
    assert!(!has(&["scan", "t", "-m", "sha256sum:S1"]));
    assert!(!has(&["scan", "t", "-m", "b3sum:S2", "--jsonl", "r.jsonl"]));
    // Asked for, one way or another: measured.
    assert!(has(&["scan", "t"]));
    assert!(has(&["scan", "t", "-m", "sha256sum:S3", "--reduce"]));
    assert!(has(&["scan", "t", "-m", "sha256sum:S4", "--cdc", "16k"]));
    assert!(has(&[
        "scan",
        "t",
        "-m",
        "sha256sum:S5",
        "--compress",
        "zstd"
    ]));
    assert!(has(&[
        "scan",
        "t",
        "-m",
        "sha256sum:S6",
        "--html",
        "r.html"
    ]));
    d.cmd()
        .args(["scan", "t", "-q", "-m", "sha256sum:S7", "--json", "r.json"])
        .run()
        .code(0);
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("r.json")).unwrap()).unwrap();
    assert!(
        r["reduction"].is_object(),
        "a JSON report holds the reduction"
    );
    // The manifests are the same either way.
    assert_eq!(
        std::fs::read(d.join("t/S1")).ok(),
        None,
        "outputs are written where named, not under the tree"
    );
    assert_eq!(
        std::fs::read(d.join("S1")).unwrap(),
        std::fs::read(d.join("S3")).unwrap()
    );
    d.cmd()
        .args(["scan", "t", "--reduce", "--no-reduce"])
        .run()
        .code(2)
        .stderr_has("cannot be used with");
}

#[test]
fn the_same_tree_gives_the_same_report_every_run() {
    // Blocks shared by two to five files across directories (each file's share of the saving a
    // fraction), links, a FIFO, unreadable files and a directory: read in another order each
    // run, reported the same, times and memory aside.
    let d = Dir::new();
    let pool: Vec<Vec<u8>> = (0..24).map(|i| crate::util::noise(4096, 100 + i)).collect();
    for i in 0..120u64 {
        let mut body = Vec::new();
        for k in 0..(3 + i % 5) {
            body.extend_from_slice(&pool[((i * 7 + k * 5) % 24) as usize]);
        }
        body.extend_from_slice(&crate::util::noise(1000 + i as usize * 37, i));
        d.create(format!("t/d{}/f{i}", i % 6).as_bytes(), &body);
    }
    for i in 0..8 {
        std::os::unix::fs::symlink(format!("d{i}/x"), d.join(format!("t/link{i}"))).unwrap();
        let bad = d.create(format!("t/d{i}/secret{i}").as_bytes(), b"s");
        std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o000)).unwrap();
    }
    mkfifo(&d.join("t/fifo"));
    std::fs::create_dir(d.join("t/closed")).unwrap();
    d.create(b"t/closed/inside", b"i");
    std::fs::set_permissions(d.join("t/closed"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let masked = |out: &str| {
        let mut v: Value = serde_json::from_str(out).unwrap();
        let t = v["totals"].as_object_mut().unwrap();
        for k in [
            "seconds",
            "bytes_per_second",
            "peak_rss_bytes",
            "peak_anon_bytes",
        ] {
            assert!(t.remove(k).is_some(), "no totals.{k}");
        }
        serde_json::to_string_pretty(&v).unwrap()
    };
    let mut first: Option<String> = None;
    for _ in 0..5 {
        let r = d
            .cmd_unprivileged()
            .args([
                "scan",
                "-q",
                "-j",
                "2",
                "--io-depth",
                "8",
                "--json",
                "-",
                "t",
            ])
            .run();
        r.code(2);
        let got = masked(&r.stdout);
        match &first {
            None => first = Some(got),
            Some(want) => assert_eq!(&got, want, "another report from the same tree"),
        }
    }
}

/// The progress line on a terminal (`script` gives the scan one) while a slow walk goes on: what
/// the walk found and its pace, and no bar and no time left (a bar of what was found so far
/// moved backwards as more was found, and an `ETA >0s` said nothing); the bar and its time left
/// once the total is known.
#[test]
fn while_the_walk_goes_on_the_line_says_what_it_found_and_no_time_left() {
    let Some(script) = crate::util::tool("script") else {
        return;
    };
    let d = Dir::new();
    for i in 0..24 {
        for j in 0..4 {
            d.create(
                format!("t/d{i:02}/f{j}").as_bytes(),
                &vec![i as u8; 200_000],
            );
        }
    }
    // Each directory waits 120 ms before it is listed (a debug build's test hook): a walk of
    // about three seconds, read as it goes.
    let cmd = format!(
        "TRAWL_TEST_WALK_DELAY_MS=120 {} scan t -j1 --io-depth 1 --limit-rate 4M",
        env!("CARGO_BIN_EXE_trawl")
    );
    let out = Command::new(script)
        .args(["-qec", &cmd, "/dev/null"])
        .current_dir(d.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("walking: ") && text.contains(" files/s"),
        "no walking pace on the line: {text}"
    );
    for line in text.split(['\r', '\n']).filter(|l| l.contains("walking: ")) {
        assert!(
            !line.contains('░') && !line.contains('█') && !line.contains("ETA"),
            "a bar or a time left while the walk goes on: {line}"
        );
    }
    assert!(
        text.contains("ETA "),
        "no time left once the walk was over: {text}"
    );
}
