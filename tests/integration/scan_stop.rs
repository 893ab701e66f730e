//! How a scan stops: signals, a write error mid-scan, a reader that closes the pipe, a full disk.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{Dir, bytes_read_by, wait_until};

#[test]
fn full_disk_while_writing_a_manifest_leaves_no_partial_file() {
    let d = Dir::new();
    for i in 0..200 {
        d.create(format!("t/file-{i:04}").as_bytes(), b"x");
    }
    let r = d
        .cmd()
        .args(["scan", "t", "-m", "sha256sum:sums"])
        .file_size_limit(4096)
        .run();
    r.code(2);
    r.stderr_has("trawl: sums: cannot write");
    r.stderr_has("File too large");
    assert!(!d.join("sums").exists());
    let leftovers: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        leftovers,
        vec![std::ffi::OsString::from("t")],
        "temporary files left: {leftovers:?}"
    );
}

#[test]
fn ctrl_c_sigterm_and_sighup_stop_promptly_and_leave_no_output() {
    let d = Dir::new();
    let chunk: Vec<u8> = (0..1u32 << 20)
        .map(|i| i.wrapping_mul(2654435761) as u8)
        .collect();
    let mut f = std::fs::File::create(d.join("big")).unwrap();
    for _ in 0..400 {
        std::io::Write::write_all(&mut f, &chunk).unwrap();
    }
    drop(f);
    std::fs::create_dir(d.join("spill")).unwrap();
    for (sig, code) in [
        (libc::SIGINT, 130),
        (libc::SIGTERM, 143),
        (libc::SIGHUP, 129),
    ] {
        let child = Command::new(env!("CARGO_BIN_EXE_trawl"))
            .args([
                "scan",
                "big",
                "-d",
                "md5,sha512",
                "-j1",
                // Read, not mapped: the readiness below counts read(2)'s bytes, which a
                // mapping (what --io auto picks where the lanes fill the cores) never adds to.
                "--io",
                "read",
                "-m",
                "md5sum:sums",
                "--json",
                "r.json",
                "--memory",
                "1M",
                "--temp-dir",
                "spill",
            ])
            .current_dir(d.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Ready once its outputs are open (before any read; the handlers are in place by then)
        // and it has read a first megabyte.
        let pid = child.id();
        wait_until("the scan opened its outputs and began to read", || {
            std::fs::read_dir(d.path()).is_ok_and(|r| {
                r.flatten()
                    .any(|e| e.file_name().to_string_lossy().ends_with(".trawl-tmp"))
            }) && bytes_read_by(pid) > 1 << 20
        });
        // SAFETY: kill has no memory effects in this process.
        unsafe { libc::kill(child.id() as i32, sig) };
        let start = Instant::now();
        let out = child.wait_with_output().unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "took {:?} to stop",
            start.elapsed()
        );
        assert_eq!(
            out.status.code(),
            Some(code),
            "signal {sig}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted"));
        let mut names: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["big", "spill"], "left behind: {names:?}");
        assert_eq!(
            std::fs::read_dir(d.join("spill")).unwrap().count(),
            0,
            "spill files left behind after signal {sig}"
        );
    }
}

#[test]
fn a_jsonl_write_error_mid_scan_is_exit_2_not_interrupted() {
    let d = Dir::new();
    for i in 0..3000 {
        d.create(
            format!("t/file-with-a-long-name-{i:05}.txt").as_bytes(),
            b"x",
        );
    }
    let r = d
        .cmd()
        .args(["scan", "t", "-q", "--no-reduce", "--jsonl", "out.jsonl"])
        .file_size_limit(100_000)
        .run();
    r.code(2).stderr_has("out.jsonl: cannot write");
    assert!(!r.stderr.contains("interrupted"), "{}", r.stderr);
    assert!(!d.join("out.jsonl").exists());
}

#[test]
fn a_reader_that_closes_the_pipe_early_is_not_an_error() {
    use std::io::Read;
    let d = Dir::new();
    for i in 0..3000 {
        d.create(
            format!("t/file-with-a-long-name-{i:05}.txt").as_bytes(),
            b"x",
        );
    }
    // `trawl scan t -m sha256sum:- | head -c 100`: the reader goes away after 100 bytes of
    // about 300 KB; the manifest's writer meets EPIPE.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args(["scan", "t", "-q", "--no-reduce", "-m", "sha256sum:-"])
        .current_dir(d.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 100];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    assert!(head.starts_with(b"# Invoked from") || head[0].is_ascii_hexdigit());
}

/// A run killed outright (SIGKILL) cannot remove its temporary file: the one it leaves has the
/// documented name (`.NAME.XXXXXX.trawl-tmp`, beside NAME), the next run writes NAME whole
/// and exits 0, and leaves the stray file alone (trawl removes only what it made in that run).
/// The run is held before its reads by a FIFO output no reader opens.
#[test]
fn a_killed_runs_temporary_file_is_recognisable_and_trips_no_later_run() {
    let d = Dir::new();
    d.create(b"t/a", b"alpha\n");
    crate::util::mkfifo(&d.join("held"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args(["scan", "t", "-q", "-m", "sha256sum:SUMS", "--json", "held"])
        .current_dir(d.path())
        .spawn()
        .unwrap();
    let stray = || {
        std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .find(|n| n.ends_with(".trawl-tmp"))
    };
    wait_until("the manifest's temporary file", || stray().is_some());
    child.kill().unwrap();
    child.wait().unwrap();
    let left = stray().unwrap();
    let random = left
        .strip_prefix(".SUMS.")
        .and_then(|r| r.strip_suffix(".trawl-tmp"));
    assert!(random.is_some_and(|r| r.len() == 6), "{left}");
    d.cmd()
        .args(["scan", "t", "-q", "-m", "sha256sum:SUMS"])
        .run()
        .code(0);
    let sums = std::fs::read_to_string(d.join("SUMS")).unwrap();
    assert!(sums.ends_with("  a\n"), "{sums}");
    assert_eq!(stray().as_deref(), Some(left.as_str()));
}
