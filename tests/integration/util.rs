//! Test harness: a temporary directory, the trawl binary, and captured stdout/stderr/exit code
//! (after ripgrep's tests/util.rs).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Dir {
    pub tmp: tempfile::TempDir,
}

impl Dir {
    pub fn new() -> Dir {
        let tmp = tempfile::Builder::new()
            .prefix("trawl-test-")
            .tempdir()
            .unwrap();
        // Readable by the unprivileged user some tests drop to.
        std::fs::set_permissions(
            tmp.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o777),
        )
        .unwrap();
        Dir { tmp }
    }

    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    pub fn join(&self, p: impl AsRef<Path>) -> PathBuf {
        self.tmp.path().join(p)
    }

    /// Creates a file (and its parents) with `contents`; `name` is raw bytes.
    pub fn create(&self, name: &[u8], contents: &[u8]) -> PathBuf {
        let p = self.tmp.path().join(OsStr::from_bytes(name));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, contents).unwrap();
        p
    }

    /// The trawl binary run as an unprivileged user when the tests run as root (so that permission
    /// bits matter); the binary is copied into the test directory so that user can execute it
    /// wherever the checkout lives.
    pub fn cmd_unprivileged(&self) -> TrawlCmd {
        if !is_root() {
            return self.cmd();
        }
        let bin = self.join(".trawl-bin");
        // A hard link where it can be (no copy is ever open for writing); a copy else.
        if !bin.exists() && std::fs::hard_link(env!("CARGO_BIN_EXE_trawl"), &bin).is_err() {
            std::fs::copy(env!("CARGO_BIN_EXE_trawl"), &bin).unwrap();
        }
        let mut c = Command::new(&bin);
        c.current_dir(self.path());
        // SAFETY: the closure runs in the forked child before exec and calls only async-signal-safe functions.
        unsafe {
            c.pre_exec(|| {
                if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        TrawlCmd { cmd: c }
    }

    pub fn cmd(&self) -> TrawlCmd {
        let mut c = Command::new(env!("CARGO_BIN_EXE_trawl"));
        c.current_dir(self.path());
        TrawlCmd { cmd: c }
    }
}

pub struct TrawlCmd {
    pub cmd: Command,
}

impl TrawlCmd {
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.cmd.arg(arg);
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd.args(args);
        self
    }

    /// Limits the size of any file the process writes (writes past it fail like a full disk).
    pub fn file_size_limit(mut self, bytes: u64) -> Self {
        // SAFETY: the closure runs in the forked child before exec and calls only async-signal-safe functions.
        unsafe {
            self.cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: bytes,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        self
    }

    /// Runs with the working directory `sub` of the test directory.
    pub fn run_in(mut self, sub: &str) -> Run {
        let cwd = self.cmd.get_current_dir().unwrap().join(sub);
        self.cmd.current_dir(cwd);
        self.run()
    }

    /// Runs, killing the process if it has not ended within `secs` (then the exit code is -1
    /// and stderr says so): for tests of what must never hang.
    pub fn run_within(self, secs: u64) -> Run {
        self.run_within_stdin(secs, std::process::Stdio::null())
    }

    /// As [`TrawlCmd::run_within`], with `stdin` as standard input.
    pub fn run_within_stdin(mut self, secs: u64, stdin: std::process::Stdio) -> Run {
        use std::io::Read;
        use std::process::Stdio;
        let mut child = self
            .cmd
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Drained on threads of their own, so that a full pipe cannot stall the child.
        let drain = |mut r: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut v = Vec::new();
                let _ = r.read_to_end(&mut v);
                v
            })
        };
        let out = drain(Box::new(child.stdout.take().unwrap()));
        let err = drain(Box::new(child.stderr.take().unwrap()));
        let t0 = std::time::Instant::now();
        let mut killed = false;
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if t0.elapsed() > std::time::Duration::from_secs(secs) {
                let _ = child.kill();
                killed = true;
                break child.wait().unwrap();
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let mut r = Run::from(Output {
            status,
            stdout: out.join().unwrap(),
            stderr: err.join().unwrap(),
        });
        if killed {
            r.code = -1;
            r.stderr.push_str(&format!(
                "\n[test harness: still running after {secs} s, killed]"
            ));
        }
        r
    }

    pub fn run(mut self) -> Run {
        Run::from(output(&mut self.cmd))
    }

    /// Runs with stderr (and stdout too, with `both`: `2>&1 | head -0`) a pipe whose reader has
    /// already gone: every write to it fails with EPIPE. The exit code is -1 and stderr (here:
    /// the harness's words) names the signal if one ended the process.
    pub fn run_with_stderr_closed(mut self, both: bool) -> Run {
        use std::os::unix::process::ExitStatusExt;
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        if both {
            self.cmd.stdout(writer.try_clone().unwrap());
        } else {
            self.cmd.stdout(std::process::Stdio::piped());
        }
        let out = output(self.cmd.stderr(writer));
        let signal = out.status.signal();
        let mut r = Run::from(out);
        if let Some(sig) = signal {
            r.stderr = format!("[test harness: ended by signal {sig}]");
        }
        r
    }
}

/// Waits (at most 30 s, then fails naming `what`) until `ready` holds: a readiness signal in
/// place of a fixed sleep that races the code under test.
#[track_caller]
pub fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let t0 = std::time::Instant::now();
    while !ready() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(30),
            "not ready after 30 s: {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Bytes process `pid` has read so far (`rchar` of /proc/PID/io).
pub fn bytes_read_by(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stdout_bytes: Vec<u8>,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stdout_bytes: o.stdout,
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Run {
    #[track_caller]
    pub fn code(&self, want: i32) -> &Self {
        assert_eq!(
            self.code, want,
            "exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// Asserts that stdout contains `want`; the message shows all of stdout.
    #[track_caller]
    pub fn stdout_has(&self, want: &str) -> &Self {
        has("stdout", &self.stdout, want);
        self
    }

    /// Asserts an audit summary's counts: each `(verdict, n)` is the number on its line
    /// (`  N verdict: what it counts`); a verdict without a line counts 0.
    #[track_caller]
    pub fn counted(&self, want: &[(&str, u64)]) -> &Self {
        for (state, n) in want {
            let found = self
                .stdout
                .lines()
                .filter(|l| l.starts_with(' '))
                .filter_map(|l| {
                    let (num, rest) = l.trim_start().split_once(' ')?;
                    let verdict = rest.split_once(':')?.0;
                    (verdict == *state).then(|| num.parse::<u64>().ok())?
                })
                .next()
                .unwrap_or(0);
            assert_eq!(found, *n, "{state} in the summary:\n{}", self.stdout);
        }
        self
    }

    /// Asserts that stderr contains `want`; the message shows all of stderr.
    #[track_caller]
    pub fn stderr_has(&self, want: &str) -> &Self {
        has("stderr", &self.stderr, want);
        self
    }
}

#[track_caller]
fn has(stream: &str, text: &str, want: &str) {
    assert!(text.contains(want), "{stream} lacks {want:?}:\n{text}");
}

/// Skips (all or part of) the calling test: one line `SKIPPED: TEST: REASON` on the terminal,
/// written past the test harness's capture so that a green run still says what it did not
/// check (CI totals these lines); under TRAWL_REQUIRE_INTEROP=1 the test fails instead.
#[track_caller]
pub fn skip(reason: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    if std::env::var("TRAWL_REQUIRE_INTEROP").as_deref() == Ok("1") {
        panic!("{test}: required (TRAWL_REQUIRE_INTEROP=1), but {reason}");
    }
    use std::io::Write;
    // Straight to the file descriptor: `eprintln!` inside a test is captured.
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED: {test}: {reason}");
}

/// An outside tool: `Some(path)` if installed. When absent the test is skipped ([`skip`]).
pub fn tool(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        skip(&format!("{name} is not installed"));
    }
    found
}

/// Runs an outside tool in `dir`.
pub fn run_tool(dir: &Path, prog: &Path, args: &[&OsStr]) -> Run {
    Command::new(prog)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
        .into()
}

/// Awkward names that every manifest format must round-trip (where the format can hold them).
pub fn awkward_names() -> Vec<&'static [u8]> {
    vec![
        b"plain.txt",
        b"with space.txt",
        b"new\nline.txt",
        b"back\\slash.txt",
        b"sub dir/nested.bin",
        b"bad\xffutf8.bin",
        b"caf\xc3\xa9.txt",
        b"empty",
    ]
}

pub fn make_awkward(d: &Dir, under: &str) {
    for n in awkward_names() {
        let mut p = under.as_bytes().to_vec();
        p.push(b'/');
        p.extend_from_slice(n);
        let content = if n == b"empty" {
            Vec::new()
        } else {
            [b"content of ".as_slice(), n].concat()
        };
        d.create(&p, &content);
    }
}

/// Makes a FIFO at `path`.
pub fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo on a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

/// Runs a Python script (`python3 -c`) in `d` with `arg`, and reads what it prints as JSON.
pub fn python_json<T: serde::de::DeserializeOwned>(d: &Dir, script: &str, arg: &str) -> T {
    let o = Command::new("python3")
        .args(["-c", script, arg])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Whether python3 with these modules is available; skips (printing why) or, under
/// TRAWL_REQUIRE_INTEROP=1, fails when not.
pub fn python_with(modules: &[&str]) -> bool {
    let ok = Command::new("python3")
        .arg("-c")
        .arg(format!("import {}", modules.join(", ")))
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip(&format!("python3 with {modules:?} is not installed"));
    }
    ok
}

/// `trawl serve DIR` on a loopback port, killed on drop; its stderr goes to a file (a pipe
/// nobody reads could fill up and stall the server's access log).
pub struct Serve {
    pub child: std::process::Child,
    pub addr: String,
    log: tempfile::NamedTempFile,
}

impl Serve {
    pub fn start(d: &Dir, dir: &str, extra: &[&str]) -> Serve {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_trawl"));
        cmd.args(["serve", dir, "--listen", "127.0.0.1:0"])
            .args(extra)
            .current_dir(d.path());
        Serve::spawn(cmd)
    }

    /// Starts a prepared `trawl serve` command (which must listen on a loopback port).
    pub fn spawn(mut cmd: Command) -> Serve {
        use std::io::BufRead;
        let log = tempfile::NamedTempFile::new().unwrap();
        let mut child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .split("http://")
            .nth(1)
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .trim()
            .trim_end_matches('/')
            .to_string();
        Serve { child, addr, log }
    }

    /// `http://ADDR`, for clients that take a URL.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops the server; what it wrote to stderr.
    pub fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::fs::read_to_string(self.log.path()).unwrap()
    }

    /// One request (HTTP/1.1, `Connection: close`); the whole answer, head and body.
    pub fn get(&self, path: &str, headers: &str) -> Vec<u8> {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        // A server that turns the connection away may close it before reading the request.
        let _ = write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: x\r\n{headers}Connection: close\r\n\r\n"
        );
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        out
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// SHA-256 of `b` in hex, as coreutils' sha256sum computes it.
pub fn sha256_hex(b: &[u8]) -> String {
    digest_by("sha256sum", b)
}

/// The digest of `b` in hex as a coreutils tool (`sha512sum`, `md5sum`, ...) computes it.
pub fn digest_by(tool: &str, b: &[u8]) -> String {
    let out = std::process::Command::new(tool)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b)?;
            c.wait_with_output()
        })
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.split_whitespace().next().unwrap().to_string()
}

/// Exit code and peak RSS of trawl run with `args` in `d`, measured by a small python3 process
/// that starts it: a child started by this (large, multi-threaded) test process is charged this
/// process's own peak at exec, which would hide the figure.
pub fn peak_rss_apart(d: &Dir, args: &[&str]) -> (i32, u64) {
    peak_rss_set(d, args, |_| {})
}

/// As [`peak_rss_apart`], the measuring process's command set up by `setup` first (an
/// environment its child inherits).
pub fn peak_rss_set(d: &Dir, args: &[&str], setup: impl FnOnce(&mut Command)) -> (i32, u64) {
    let script = "import os, subprocess, sys\n\
                  p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n\
                  _, st, ru = os.wait4(p.pid, 0)\n\
                  print(os.waitstatus_to_exitcode(st), ru.ru_maxrss * 1024)";
    let mut c = Command::new("python3");
    setup(&mut c);
    let o = c
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_trawl"))
        .args(args)
        .current_dir(d.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let mut it = text.split_whitespace().map(|v| v.parse::<i64>().unwrap());
    (it.next().unwrap() as i32, it.next().unwrap() as u64)
}

/// Incompressible bytes, the same for a seed (xorshift).
pub fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as u8
        })
        .collect()
}

/// A filesystem mounted for a test, unmounted on drop (lazily: a file a test still holds open
/// is no reason to leave it mounted).
pub struct Mounted {
    pub at: PathBuf,
}

impl Mounted {
    /// `mount ARGS... AT`, AT made here; `None` (skipped, with the reason printed) where it
    /// cannot be: not root, or mounting refused (a container without the right). `what` names
    /// the filesystem in the reason.
    pub fn new(args: &[&OsStr], at: PathBuf, what: &str) -> Option<Mounted> {
        if !is_root() {
            skip(&format!("mounting {what} needs root"));
            return None;
        }
        std::fs::create_dir(&at).unwrap();
        let r = Command::new("mount").args(args).arg(&at).output().unwrap();
        if !r.status.success() {
            skip(&format!(
                "cannot mount {what} here: {}",
                String::from_utf8_lossy(&r.stderr).trim()
            ));
            return None;
        }
        Some(Mounted { at })
    }

    /// A new image of `size` bytes (sparse) at `DIR/NAME.img`, made by `MKFS ARGS... IMAGE`
    /// and loop-mounted at `DIR/NAME`; the mount and the image's path. `None` (skipped) without
    /// root, the mkfs tool, or the right to mount.
    pub fn image(
        d: &Dir,
        mkfs: &str,
        args: &[&str],
        size: u64,
        name: &str,
    ) -> Option<(Mounted, PathBuf)> {
        if !is_root() {
            skip(&format!("mounting a {mkfs} image needs root"));
            return None;
        }
        let mkfs = tool(mkfs)?;
        let img = d.join(format!("{name}.img"));
        std::fs::File::create(&img).unwrap().set_len(size).unwrap();
        let mut a: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        a.push(img.as_os_str());
        run_tool(d.path(), &mkfs, &a).code(0);
        let what = format!("a loop image made by {}", mkfs.display());
        let m = Mounted::new(
            &[OsStr::new("-o"), OsStr::new("loop"), img.as_os_str()],
            d.join(name),
            &what,
        )?;
        Some((m, img))
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.at).status();
    }
}

/// A file that fails with EIO part way: an ext4 image loop-mounted at `DIR/eio`, whose backing
/// file is cut short under it once the file is written, so that the file's first few MiB read
/// and the rest fail with "Input/output error", as a failing disk's do. Unmounted on drop;
/// `None` (skipped, with the reason printed) where the tests cannot mount one: not root, no
/// `mkfs.ext4` (e2fsprogs), or mounting refused.
pub struct EioMount {
    mount: Mounted,
    img: PathBuf,
}

impl EioMount {
    /// Mounts a new image and writes `files` into it (name, contents), and `bad`, 24 MiB of
    /// incompressible bytes, last: the one [`EioMount::fail`] makes fail. The others are small
    /// and read whole.
    pub fn new(d: &Dir, files: &[(&str, &[u8])], bad: &str) -> Option<EioMount> {
        let (mount, img) = Mounted::image(d, "mkfs.ext4", &["-q", "-F"], 64 << 20, "eio")?;
        let m = EioMount { mount, img };
        for (name, contents) in files {
            let p = m.join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, contents).unwrap();
        }
        std::fs::write(m.join(bad), noise(24 << 20, 0x9e37_79b9_7f4a_7c15)).unwrap();
        assert!(Command::new("sync").status().unwrap().success());
        Some(m)
    }
    /// From now on the large file fails with EIO: after its first ~6 MiB with
    /// `readable_start`, else from its first byte. The image is cut short under the mount
    /// (the small files lie near 8.5 MiB into it, the large one from 10 MiB on) and the clean
    /// page cache dropped, so that what lies past the cut is read from the device again.
    pub fn fail(&self, readable_start: bool) {
        let len: u64 = if readable_start { 16 << 20 } else { 9 << 20 };
        assert!(Command::new("sync").status().unwrap().success());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&self.img)
            .unwrap()
            .set_len(len)
            .unwrap();
        std::fs::write("/proc/sys/vm/drop_caches", "1").unwrap();
    }

    /// Where the image is mounted.
    pub fn at(&self) -> &Path {
        &self.mount.at
    }

    pub fn join(&self, p: &str) -> PathBuf {
        self.mount.at.join(p)
    }
}

/// `cmd`'s output. A copy of the binary just written may be busy for a moment ("Text file
/// busy"): a child forked by another test's thread holds the copy's descriptor open until it
/// execs. That is tried again, a few times.
pub fn output(cmd: &mut Command) -> Output {
    for _ in 0..50 {
        match cmd.output() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            r => return r.unwrap(),
        }
    }
    cmd.output().unwrap()
}
