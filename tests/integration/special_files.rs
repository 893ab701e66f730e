//! Devices, FIFOs and links named as outputs or inputs: an output is written through a device
//! or a FIFO and never replaces it, through a link to its destination (the link kept); a FIFO
//! given as an input is refused at once, never waited on.

use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use crate::util::{Dir, is_root, mkfifo};

fn mknod_char(path: &Path, major: u32, minor: u32) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mknod on a valid C string; the test runs as root.
    let r = unsafe {
        libc::mknod(
            c.as_ptr(),
            libc::S_IFCHR | 0o666,
            libc::makedev(major, minor),
        )
    };
    assert_eq!(r, 0, "mknod {}", path.display());
}

fn is_char_device(p: &Path) -> bool {
    std::fs::symlink_metadata(p)
        .unwrap()
        .file_type()
        .is_char_device()
}

/// Opens a FIFO's read end without waiting for a writer, so that a test cannot hang when the
/// FIFO was (wrongly) replaced and nobody ever writes to it.
fn open_fifo_reader(p: &Path) -> std::fs::File {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(p)
        .unwrap()
}

/// What is waiting in a FIFO (small outputs fit its buffer), without blocking.
fn read_waiting(f: &mut std::fs::File) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match f.read(&mut buf) {
            Ok(0) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return out,
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn outputs_write_through_devices_and_never_replace_them() {
    if !is_root() {
        crate::util::skip("making device nodes needs root");
        return;
    }
    let d = Dir::new();
    d.create(b"data/a.txt", b"alpha\n");
    std::fs::create_dir(d.join("dev")).unwrap();
    // Nodes like /dev/full (1,7) and /dev/null (1,3), made here so a failing run cannot
    // replace the machine's own.
    mknod_char(&d.join("dev/full"), 1, 7);
    mknod_char(&d.join("dev/null"), 1, 3);
    for args in [
        vec!["scan", "data", "-q", "-m", "sha256sum:dev/full"],
        vec!["scan", "data", "-q", "--json", "dev/full"],
        vec!["scan", "data", "-q", "--jsonl", "dev/full"],
    ] {
        let r = d.cmd().args(&args).run();
        r.code(2).stderr_has("dev/full").stderr_has("No space left");
        assert!(is_char_device(&d.join("dev/full")), "{args:?} replaced it");
    }
    let r = d
        .cmd()
        .args(["scan", "data", "-q", "-m", "sha256sum:dev/null"])
        .args(["--json", "dev/null"])
        .run();
    r.code(0);
    assert!(is_char_device(&d.join("dev/null")));
    d.cmd()
        .args(["audit", "data", "-q", "-c", "cat.db"])
        .run()
        .code(0);
    for (args, target) in [
        (
            vec!["catalog", "export", "-c", "cat.db", "-o", "dev/full"],
            2,
        ),
        (
            vec!["catalog", "export", "-c", "cat.db", "-o", "dev/null"],
            0,
        ),
    ] {
        d.cmd().args(&args).run().code(target);
    }
    d.create(b"a.flv", &crate::flv::flv_with_keyframes());
    for (args, code) in [
        (vec!["flv", "index", "a.flv", "--json", "dev/full"], 2),
        (vec!["flv", "index", "a.flv", "--csv", "dev/null"], 0),
        (vec!["flv", "inject", "a.flv", "dev/full"], 2),
        (vec!["flv", "inject", "a.flv", "dev/null"], 0),
    ] {
        d.cmd().args(&args).run().code(code);
    }
    assert!(is_char_device(&d.join("dev/full")) && is_char_device(&d.join("dev/null")));
    // Nothing was left beside the nodes.
    let left: Vec<_> = std::fs::read_dir(d.join("dev"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

#[test]
fn a_fifo_output_is_streamed_into_and_kept() {
    let d = Dir::new();
    d.create(b"data/a.txt", b"alpha\n");
    let fifo = d.join("sums.fifo");
    mkfifo(&fifo);
    let mut reader = open_fifo_reader(&fifo);
    d.cmd()
        .args(["scan", "data", "-q", "-m", "sha256sum:sums.fifo"])
        .run()
        .code(0);
    let got = String::from_utf8(read_waiting(&mut reader)).unwrap();
    assert!(got.ends_with("  a.txt\n"), "{got}");
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

/// Whether process `pid` catches signal `sig` (its handlers are in place).
fn catches(pid: u32, sig: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & (1 << (sig - 1)) != 0)
}

/// Runs trawl with `args` in `d`, sends it SIGTERM once its handlers are in place and `ready`
/// holds, and returns its stderr once it ended with 143 within 5 s (fails otherwise).
fn terminated(d: &Dir, args: &[&str], ready: &dyn Fn() -> bool) -> String {
    use std::time::{Duration, Instant};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args(args)
        .current_dir(d.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    crate::util::wait_until("the handlers are in place", || {
        catches(pid, libc::SIGTERM) && ready()
    });
    // SAFETY: kill has no memory effects in this process.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    if child.try_wait().unwrap().is_none() {
        child.kill().unwrap();
        child.wait().unwrap();
        panic!("{args:?}: still running 5 s after SIGTERM");
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(143), "{args:?}: {err}");
    err
}

/// A FIFO output no reader opens is waited for (as a shell's `>` waits), and SIGTERM ends the
/// wait at once: exit 143, the output named, nothing left beside it, the FIFO kept (before, the
/// open blocked beyond the signal's reach and only SIGKILL ended the process). Through a
/// scan's manifest, `catalog export -o` and `audit --metrics`.
#[test]
fn sigterm_ends_the_wait_for_a_fifo_outputs_reader() {
    let d = Dir::new();
    d.create(b"data/a.txt", b"alpha\n");
    d.cmd()
        .args(["audit", "data", "-c", "cat.db", "-q"])
        .run()
        .code(0);
    mkfifo(&d.join("f"));
    for args in [
        &[
            "scan",
            "data",
            "-q",
            "--json",
            "r.json",
            "-m",
            "sha256sum:f",
        ][..],
        &["catalog", "export", "-c", "cat.db", "-o", "f"],
        &["audit", "data", "-c", "cat.db", "-q", "--metrics", "f"],
    ] {
        let err = terminated(&d, args, &|| true);
        assert!(
            err.contains("f: cannot create: no reader opened the FIFO"),
            "{args:?}: {err}"
        );
        let mut left: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| !n.starts_with("cat.db"))
            .collect();
        left.sort();
        assert_eq!(left, ["data", "f"], "{args:?}");
        let ft = std::fs::symlink_metadata(d.join("f")).unwrap().file_type();
        assert!(ft.is_fifo());
    }
}

/// A FIFO output whose reader holds it open and reads nothing: once the pipe is full (a page,
/// as the reader sets it), SIGTERM ends the write at once, exit 143 (before, the write blocked
/// beyond the signal's reach; a second signal was needed).
#[test]
fn sigterm_ends_a_write_to_a_fifo_nobody_reads() {
    use std::os::fd::AsRawFd;
    let d = Dir::new();
    for i in 0..4 {
        d.create(format!("data/{i}.txt").as_bytes(), b"alpha\n");
    }
    mkfifo(&d.join("f"));
    let reader = open_fifo_reader(&d.join("f"));
    let fd = reader.as_raw_fd();
    // SAFETY: fcntl on a descriptor `reader` owns; F_SETPIPE_SZ touches no memory of ours.
    assert_eq!(unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, 4096) }, 4096);
    let full = || {
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD writes one c_int, to `n`, which lives for the call.
        unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) == 0 && n >= 4096 }
    };
    let err = terminated(&d, &["scan", "data", "-q", "--json", "f"], &full);
    assert!(err.contains("interrupted"), "{err}");
}

#[test]
fn a_symlinked_output_replaces_its_destination_and_a_block_device_is_refused() {
    let d = Dir::new();
    d.create(b"data/a.txt", b"alpha\n");
    d.create(b"keep/report.json", b"old");
    std::os::unix::fs::symlink("keep/report.json", d.join("report.json")).unwrap();
    d.cmd()
        .args(["scan", "data", "-q", "--json", "report.json"])
        .run()
        .code(0);
    assert!(
        std::fs::symlink_metadata(d.join("report.json"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("keep/report.json")).unwrap()).unwrap();
    assert_eq!(v["files"].as_array().map(Vec::len), Some(1), "{v}");
    // A block device is refused, with its name.
    if is_root() {
        let c = std::ffi::CString::new(d.join("blk").as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mknod on a valid C string, as root; the node (loop device 7,0) is never opened.
        let r = unsafe { libc::mknod(c.as_ptr(), libc::S_IFBLK | 0o600, libc::makedev(7, 0)) };
        assert_eq!(r, 0);
        d.cmd()
            .args(["scan", "data", "-q", "--json", "blk"])
            .run()
            .code(2)
            .stderr_has("blk: cannot create: is a block device");
        assert!(
            std::fs::symlink_metadata(d.join("blk"))
                .unwrap()
                .file_type()
                .is_block_device()
        );
    }
}

#[test]
fn flv_index_and_inject_refuse_a_fifo_instead_of_waiting_on_it() {
    let d = Dir::new();
    mkfifo(&d.join("f.flv"));
    d.cmd()
        .args(["flv", "index", "f.flv"])
        .run_within(10)
        .code(2)
        .stderr_has("f.flv: a FIFO (named pipe), not a regular file");
    d.cmd()
        .args(["flv", "inject", "f.flv", "out.flv"])
        .run_within(10)
        .code(2)
        .stderr_has("f.flv: cannot open: a FIFO (named pipe), not a regular file");
    assert!(!d.join("out.flv").exists());
}
