//! Hostile and careless input: outputs never replace devices, FIFOs or links; nothing outside
//! what the user named is read, served or written; nothing hangs.

use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use crate::util::{Dir, Serve, is_root, mkfifo, sha256_hex};

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
pub fn open_fifo_reader(p: &Path) -> std::fs::File {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(p)
        .unwrap()
}

/// What is waiting in a FIFO (small outputs fit its buffer), without blocking.
pub fn read_waiting(f: &mut std::fs::File) -> Vec<u8> {
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
fn outputs_write_through_devices_and_fifos_and_never_replace_them() {
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

#[test]
fn a_symlinked_output_replaces_its_destination_and_keeps_the_link() {
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

/// The names under `dir`, sorted (what a refused run must leave as it was: no file replaced,
/// no temporary file left).
fn listing(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// An output that would replace a file inside a scanned root is refused by name before
/// anything is read (exit 2), whatever name reaches the file: a link to the root, `..`, a
/// link to the file itself. A new file inside the root is written and left out of the scan;
/// a --media-index directory inside a root must be new or empty.
#[test]
fn no_scan_output_replaces_a_file_inside_a_root() {
    let d = Dir::new();
    d.create(b"t3/a", b"a\n");
    d.create(b"t3/sub/b", b"b\n");
    d.create(b"t3/idx/old.keyframes.json", b"{}");
    std::os::unix::fs::symlink("t3", d.join("alias")).unwrap();
    std::os::unix::fs::symlink("t3/sub/b", d.join("to-b")).unwrap();
    let before = |p: &str| std::fs::read(d.join(p)).unwrap();
    let (a, b) = (before("t3/a"), before("t3/sub/b"));
    let (top, sub) = (listing(&d.join("t3")), listing(&d.join("t3/sub")));
    for (flag, value, named) in [
        ("-m", "sha256sum:t3/sub/b", "t3/sub/b"),
        ("--json", "t3/a", "t3/a"),
        ("--jsonl", "alias/a", "alias/a"),
        ("--html", "t3/sub/../a", "t3/sub/../a"),
        ("--ncdu", "to-b", "to-b"),
        ("--duplicates", "./t3/sub/b", "./t3/sub/b"),
    ] {
        let r = d.cmd().args(["scan", "t3", "-q", flag, value]).run();
        assert_eq!(r.code, 2, "{flag} {value}: {}", r.stderr);
        r.stderr_has(&format!("{named}: is a file inside t3, which is read"));
        assert_eq!((before("t3/a"), before("t3/sub/b")), (a.clone(), b.clone()));
        assert_eq!(listing(&d.join("t3")), top, "{flag} {value}");
        assert_eq!(listing(&d.join("t3/sub")), sub, "{flag} {value}");
    }
    // A root given through a link is the same root.
    d.cmd()
        .args(["scan", "alias", "-q", "--json", "t3/a"])
        .run()
        .code(2)
        .stderr_has("t3/a: is a file inside alias, which is read");
    d.cmd()
        .args(["scan", "t3", "-q", "--media-index", "t3/idx"])
        .run()
        .code(2)
        .stderr_has("--media-index t3/idx: a directory inside t3, which is read, and not empty");
    // New files inside the root: written, and not part of what they describe.
    d.cmd()
        .args([
            "scan",
            "t3",
            "-q",
            "-m",
            "sha256sum:t3/SUMS",
            "--json",
            "t3/r.json",
        ])
        .args(["--media-index", "t3/new-idx"])
        .run()
        .code(0);
    let sums = String::from_utf8(before("t3/SUMS")).unwrap();
    assert_eq!(sums.lines().count(), 3, "{sums}");
    assert!(!sums.contains("SUMS") && !sums.contains("r.json"), "{sums}");
    assert_eq!(before("t3/a"), a);
}

/// An audit's outputs keep the same rule: one that would replace a file inside an audited
/// root is refused by name before the catalog is opened or anything is read.
#[test]
fn no_audit_output_replaces_a_file_inside_a_root() {
    let d = Dir::new();
    d.create(b"t3/a", b"a\n");
    std::os::unix::fs::symlink("t3", d.join("alias")).unwrap();
    for (flag, out) in [("--json", "t3/a"), ("--html", "alias/a")] {
        let r = d
            .cmd()
            .args(["audit", "t3", "-c", "cat.db", "-q", flag, out])
            .run();
        assert_eq!(r.code, 2, "{flag} {out}: {}", r.stderr);
        r.stderr_has(&format!("{out}: is a file inside "));
        r.stderr_has("which is read; writing it would replace it");
        assert_eq!(std::fs::read(d.join("t3/a")).unwrap(), b"a\n");
        assert!(!d.join("cat.db").exists(), "the catalog was made");
        assert_eq!(listing(&d.join("t3")), ["a"]);
    }
}

#[test]
fn serve_never_leaks_an_outside_file_through_a_swapped_symlink() {
    let d = Dir::new();
    std::fs::create_dir(d.join("www")).unwrap();
    let outside = b"OUTSIDE-SECRET-CONTENT";
    d.create(b"secret.txt", outside);
    d.create(b"www/inside.bin", b"inside content, served freely");
    let srv = Serve::start(&d, "www", &["--quiet", "--all"]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Swaps www/v between a regular file and a link to ../secret.txt, each by an atomic rename.
    let swapper = {
        let stop = stop.clone();
        let www = d.join("www");
        let secret = d.join("secret.txt");
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::remove_file(www.join(".l"));
                std::os::unix::fs::symlink(&secret, www.join(".l")).unwrap();
                std::fs::rename(www.join(".l"), www.join("v")).unwrap();
                std::fs::write(www.join(".f"), b"regular").unwrap();
                std::fs::rename(www.join(".f"), www.join("v")).unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let t0 = std::time::Instant::now();
    let (mut served, mut leaked, mut requests) = (0, 0, 0);
    while t0.elapsed() < std::time::Duration::from_secs(3) {
        let r = self::Serve::get(&srv, "/v", "");
        requests += 1;
        if r.windows(outside.len()).any(|w| w == outside) {
            leaked += 1;
        }
        if r.starts_with(b"HTTP/1.1 200") {
            served += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    eprintln!("{requests} requests, {served} served, {swaps} swaps, {leaked} leaked");
    assert!(
        swaps > 100 && served > 10,
        "the race did not run: {swaps} swaps, {served} served"
    );
    assert_eq!(
        leaked, 0,
        "outside bytes served in {leaked} of {requests} requests"
    );
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

#[test]
fn media_indexes_land_under_their_directory_whatever_the_roots() {
    let d = Dir::new();
    let flv = crate::flv::flv_with_keyframes();
    d.create(b"x/a.flv", &flv);
    d.create(b"y/a.flv", &flv);
    d.create(b"z/b.flv", &flv);
    std::fs::create_dir(d.join("work")).unwrap();
    d.cmd()
        .args(["scan", "../x", "../y", "../z/b.flv", "--no-reduce", "-q"])
        .args(["--media-index", "../idx"])
        .run_in("work")
        .code(0);
    let mut found: Vec<String> = Vec::new();
    fn walk(p: &Path, base: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(p).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), base, out);
            } else {
                out.push(e.path().strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    walk(d.path(), d.path(), &mut found);
    found.sort();
    assert_eq!(
        found,
        [
            "idx/1-x/a.flv.keyframes.json",
            "idx/2-y/a.flv.keyframes.json",
            "idx/3-b.flv.keyframes.json",
            "x/a.flv",
            "y/a.flv",
            "z/b.flv",
        ]
    );
}

#[test]
fn a_line_break_in_an_argument_cannot_forge_a_hashdeep_record() {
    let d = Dir::new();
    let evil = "evil\n3,00000000000000000000000000000000,0000000000000000000000000000000000000000000000000000000000000000,/etc/hostname\n## x";
    d.create(format!("{evil}/a.txt").as_bytes(), b"abc");
    // hashdeep names are relative to the root (`./a.txt`): a root with a line break never
    // reaches a record, and the command line in the header comment is escaped.
    let r = d
        .cmd()
        .args([
            "scan",
            evil,
            "-q",
            "-d",
            "md5,sha256",
            "-m",
            "hashdeep:hd.txt",
            "-m",
            "sha256sum:sums.txt",
        ])
        .run();
    r.code(0);
    let text = std::fs::read_to_string(d.join("hd.txt")).unwrap();
    let records: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('%') && !l.starts_with('#'))
        .collect();
    assert_eq!(records.len(), 1, "{text}");
    assert!(records[0].ends_with(",./a.txt"), "{text}");
    assert!(text.contains("evil\\x0a3,"), "{text}");
    // The other manifest has the file, relative to its root.
    let sums = std::fs::read_to_string(d.join("sums.txt")).unwrap();
    assert!(sums.ends_with("  a.txt\n"), "{sums}");
    // verify sees no record, not the forged one.
    let r = d.cmd().args(["verify", "hd.txt"]).run();
    assert!(
        !r.stdout.contains("hostname") && !r.stderr.contains("hostname"),
        "{}{}",
        r.stdout,
        r.stderr
    );
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

/// A valid bag `b` made by trawl, with two payload files.
fn small_bag(d: &Dir) {
    d.create(b"b/one.txt", b"one\n");
    d.create(b"b/sub/two.txt", b"two\n");
    d.cmd().args(["bag", "create", "b", "-q"]).run().code(0);
    d.cmd().args(["bag", "validate", "b", "-q"]).run().code(0);
}

#[test]
fn bag_validate_never_waits_on_a_fifo_tag_file() {
    for name in [
        "bag-info.txt",
        "fetch.txt",
        "manifest-sha256.txt",
        "bagit.txt",
    ] {
        let d = Dir::new();
        small_bag(&d);
        let p = d.join("b").join(name);
        let _ = std::fs::remove_file(&p);
        mkfifo(&p);
        let r = d.cmd().args(["bag", "validate", "b"]).run_within(20);
        r.code(2)
            .stderr_has(&format!("b/{name}: not a regular file"));
    }
}

#[test]
fn bag_validate_reads_nothing_outside_the_bag() {
    // A manifest linked to an endless device is refused, not read.
    let d = Dir::new();
    small_bag(&d);
    std::fs::remove_file(d.join("b/manifest-sha256.txt")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", d.join("b/manifest-sha256.txt")).unwrap();
    d.cmd()
        .args(["bag", "validate", "b"])
        .run_within(20)
        .code(2)
        .stderr_has("b/manifest-sha256.txt: a symbolic link that leaves the bag");
    // A manifest linked to a copy outside, and data/ linked to a copy outside: never valid.
    let d = Dir::new();
    small_bag(&d);
    std::fs::rename(d.join("b/manifest-sha256.txt"), d.join("outside-manifest")).unwrap();
    std::os::unix::fs::symlink("../outside-manifest", d.join("b/manifest-sha256.txt")).unwrap();
    let r = d.cmd().args(["bag", "validate", "b"]).run_within(20);
    assert_ne!(r.code, 0, "{}", r.stdout);
    r.stderr_has("leaves the bag");
    let d = Dir::new();
    small_bag(&d);
    std::fs::rename(d.join("b/data"), d.join("outside-data")).unwrap();
    std::os::unix::fs::symlink("../outside-data", d.join("b/data")).unwrap();
    let r = d.cmd().args(["bag", "validate", "b"]).run_within(20);
    assert_ne!(
        r.code, 0,
        "a bag whose data/ leaves it was called valid: {}",
        r.stdout
    );
    assert!(
        (r.stdout.clone() + &r.stderr).contains("data/: a symbolic link"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    // A tag manifest entry reaching out through a link is not read either.
    let d = Dir::new();
    small_bag(&d);
    d.create(b"secret", b"outside\n");
    std::os::unix::fs::symlink("../secret", d.join("b/extra.txt")).unwrap();
    let tm = std::fs::read_to_string(d.join("b/tagmanifest-sha256.txt")).unwrap();
    std::fs::write(
        d.join("b/tagmanifest-sha256.txt"),
        format!("{tm}{}  extra.txt\n", sha256_hex(b"outside\n")),
    )
    .unwrap();
    let r = d.cmd().args(["bag", "validate", "b"]).run_within(20);
    assert_ne!(r.code, 0);
    assert!(
        (r.stdout.clone() + &r.stderr)
            .contains("extra.txt: listed in tagmanifest-sha256.txt but cannot be read"),
        "{}{}",
        r.stdout,
        r.stderr
    );
}

#[test]
fn bag_tag_files_are_read_with_a_size_cap() {
    let d = Dir::new();
    small_bag(&d);
    // One 2 MiB line in bag-info.txt: refused with the limit named, not read into memory whole.
    let mut info = std::fs::read(d.join("b/bag-info.txt")).unwrap();
    info.extend_from_slice(b"Note: ");
    info.extend(std::iter::repeat_n(b'x', 2 << 20));
    info.push(b'\n');
    std::fs::write(d.join("b/bag-info.txt"), info).unwrap();
    d.cmd()
        .args(["bag", "validate", "b"])
        .run_within(60)
        .code(2)
        .stderr_has("b/bag-info.txt: larger than the 1 MiB trawl reads");
}

#[test]
fn a_large_fetch_txt_is_checked_in_linear_time() {
    // 160,000 entries, none present: quadratic matching took 26 s in a release build; linear
    // matching takes a small fraction of the limit even unoptimized.
    let d = Dir::new();
    small_bag(&d);
    let n = 160_000;
    let mut fetch = String::new();
    for i in 0..n {
        fetch.push_str(&format!("https://example.invalid/f{i} 1 data/f{i:06}\n"));
    }
    std::fs::write(d.join("b/fetch.txt"), fetch).unwrap();
    for (alg, len) in [("sha256", 64), ("sha512", 128)] {
        let p = d.join(format!("b/manifest-{alg}.txt"));
        let mut manifest = std::fs::read_to_string(&p).unwrap();
        let zero = "0".repeat(len);
        for i in 0..n {
            manifest.push_str(&format!("{zero}  data/f{i:06}\n"));
        }
        std::fs::write(p, manifest).unwrap();
    }
    std::fs::remove_file(d.join("b/tagmanifest-sha256.txt")).unwrap();
    let r = d.cmd().args(["bag", "validate", "b", "-q"]).run_within(120);
    assert_ne!(r.code, -1, "still running after 120 s: {}", r.stderr);
    r.code(1);
}

#[test]
fn bag_recover_removes_exactly_what_creation_wrote() {
    let d = Dir::new();
    d.create(b"b/x", b"x");
    d.create(
        b"b/manifest-sha256.txt",
        b"the user's own file of this name",
    );
    // The state an interruption while writing tag files leaves: every entry moved into data/,
    // the payload manifests written, bag-info.txt half-written as a temporary file.
    std::fs::write(
        d.join("b/.trawl-bag-journal"),
        "trawl bag create journal v2: these entries were moved into data/; tag files written: \
         manifest-sha256.txt bag-info.txt bagit.txt tagmanifest-sha256.txt\nmanifest-sha256.txt\nx\n",
    )
    .unwrap();
    std::fs::create_dir(d.join("b/data")).unwrap();
    std::fs::rename(d.join("b/x"), d.join("b/data/x")).unwrap();
    std::fs::rename(
        d.join("b/manifest-sha256.txt"),
        d.join("b/data/manifest-sha256.txt"),
    )
    .unwrap();
    d.create(b"b/manifest-sha256.txt", b"0000  data/x\n");
    d.create(b"b/.bag-info.txt.Ab12Cd.trawl-tmp", b"Payload-Ox");
    // Written by someone else after the interruption: not trawl's to remove.
    d.create(b"b/manifest-md5.txt", b"another tool's manifest");
    let r = d.cmd().args(["bag", "recover", "b"]).run();
    r.code(0)
        .stdout_has("moved 2 entries back")
        .stdout_has(".bag-info.txt.Ab12Cd.trawl-tmp");
    let mut names: Vec<_> = std::fs::read_dir(d.join("b"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["manifest-md5.txt", "manifest-sha256.txt", "x"]);
    assert_eq!(
        std::fs::read(d.join("b/manifest-sha256.txt")).unwrap(),
        b"the user's own file of this name"
    );
    // The next creation bags exactly the user's files.
    d.cmd().args(["bag", "create", "b", "-q"]).run().code(0);
    let mut payload: Vec<_> = std::fs::read_dir(d.join("b/data"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    payload.sort();
    assert_eq!(payload, ["manifest-md5.txt", "manifest-sha256.txt", "x"]);
}

fn head_of(resp: &[u8]) -> String {
    let end = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(resp.len());
    String::from_utf8_lossy(&resp[..end]).into_owned()
}

fn body_of(resp: &[u8]) -> &[u8] {
    let end = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(resp.len(), |p| p + 4);
    &resp[end..]
}

#[test]
fn serve_ranges_follow_rfc_9110_and_each_request_is_logged() {
    let d = Dir::new();
    let body: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
    d.create(b"www/f.bin", &body);
    let srv = Serve::start(&d, "www", &["--all"]);
    let whole = srv.get("/f.bin", "");
    let h = head_of(&whole);
    assert!(h.starts_with("HTTP/1.1 200"), "{h}");
    let etag = h
        .lines()
        .find_map(|l| l.strip_prefix("etag: "))
        .expect("an ETag")
        .to_string();
    let modified = h
        .lines()
        .find_map(|l| l.strip_prefix("last-modified: "))
        .expect("a Last-Modified")
        .to_string();
    // An end past the file is clamped.
    let r = srv.get("/f.bin", "Range: bytes=990-5000\r\n");
    assert!(head_of(&r).starts_with("HTTP/1.1 206"), "{}", head_of(&r));
    assert!(head_of(&r).contains("content-range: bytes 990-999/1000"));
    assert_eq!(body_of(&r), &body[990..]);
    // If-Range with our validators: the range; with anything else: the whole file.
    for (if_range, partial) in [
        (etag.clone(), true),
        (modified.clone(), true),
        ("\"something-else\"".to_string(), false),
        ("W/".to_string() + &etag, false),
        ("Tue, 01 Jan 2002 00:00:00 GMT".to_string(), false),
    ] {
        let r = srv.get(
            "/f.bin",
            &format!("Range: bytes=0-9\r\nIf-Range: {if_range}\r\n"),
        );
        let status = if partial {
            "HTTP/1.1 206"
        } else {
            "HTTP/1.1 200"
        };
        assert!(
            head_of(&r).starts_with(status),
            "If-Range {if_range}: {}",
            head_of(&r)
        );
        assert_eq!(body_of(&r).len(), if partial { 10 } else { 1000 });
    }
    // Not a valid range: ignored.
    let r = srv.get("/f.bin", "Range: bytes=+1-2\r\n");
    assert!(head_of(&r).starts_with("HTTP/1.1 200"), "{}", head_of(&r));
    // Error bodies name no server path.
    let root = d.join("www").canonicalize().unwrap();
    for p in ["/nope", "/../x", "/f.bin/x"] {
        let r = srv.get(p, "");
        let text = String::from_utf8_lossy(&r);
        assert!(!text.contains(&*root.to_string_lossy()), "{text}");
        assert!(!text.contains(&*d.path().to_string_lossy()), "{text}");
    }
    let log = srv.stop();
    let line = log
        .lines()
        .find(|l| l.contains("\"GET /f.bin HTTP/1.1\" 206 10"))
        .unwrap_or_else(|| panic!("no access log line for the range request:\n{log}"));
    // 127.0.0.1 - - [23/Nov/2026:21:15:00 +0000] "GET /f.bin HTTP/1.1" 206 10
    assert!(line.starts_with("127.0.0.1 - - ["), "{line}");
    assert!(line.contains(" +0000] "), "{line}");
    assert!(log.contains("\"GET /nope HTTP/1.1\" 404 "), "{log}");
    // --quiet: no access log.
    let srv = Serve::start(&d, "www", &["--quiet", "--all"]);
    srv.get("/f.bin", "");
    assert!(!srv.stop().contains("GET /f.bin"));
}

#[test]
fn serve_outlasts_clients_that_hold_connections_open() {
    use std::io::Write;
    let d = Dir::new();
    d.create(b"www/f.bin", b"served");
    // Few descriptors, as a busy machine's limit would leave: without a cap and timeouts, held
    // connections use them all and new clients wait forever.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_trawl"));
    cmd.args(["serve", "www", "--listen", "127.0.0.1:0", "-q", "--all"])
        .args(["--header-timeout", "1", "--idle-timeout", "2"])
        .current_dir(d.path());
    // SAFETY: the closure runs in the forked child before exec and calls only async-signal-safe functions.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 64,
                rlim_max: 64,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let srv = Serve::spawn(cmd);
    // 120 clients that send half a request and then nothing.
    let mut held = Vec::new();
    for _ in 0..120 {
        let mut s = std::net::TcpStream::connect(&srv.addr).unwrap();
        let _ = s.write_all(b"GET /f.bin HTTP/1.1\r\nHost: x\r\n");
        held.push(s);
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    // Past the cap a client is told 503 at once; once the held connections time out, served.
    let t0 = std::time::Instant::now();
    let mut r = srv.get("/f.bin", "");
    let mut refusals = 0;
    while (r.is_empty() || head_of(&r).starts_with("HTTP/1.1 503"))
        && t0.elapsed() < std::time::Duration::from_secs(8)
    {
        assert!(
            r.is_empty() || head_of(&r).contains("Retry-After: 1"),
            "{}",
            head_of(&r)
        );
        refusals += 1;
        std::thread::sleep(std::time::Duration::from_millis(200));
        r = srv.get("/f.bin", "");
    }
    eprintln!("{refusals} refusals before being served");
    assert!(
        head_of(&r).starts_with("HTTP/1.1 200") && body_of(&r) == b"served",
        "a new client was not served while {} connections were held: {:?}",
        held.len(),
        String::from_utf8_lossy(&r)
    );
    assert!(t0.elapsed() < std::time::Duration::from_secs(8));
    drop(held);
    let log = srv.stop();
    assert!(log.contains("the limit (--max-connections)"), "{log}");
}

#[test]
fn serve_stops_within_its_grace_period_while_a_client_stalls() {
    use std::io::Write;
    let d = Dir::new();
    let big = vec![0x42u8; 64 << 20];
    d.create(b"www/big.bin", &big);
    let srv = Serve::start(&d, "www", &["-q", "--all", "--grace", "1"]);
    // A client that asks for 64 MiB and reads none of it.
    let mut s = std::net::TcpStream::connect(&srv.addr).unwrap();
    s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let mut srv = srv;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(srv.child.id() as i32, libc::SIGINT) };
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(st) = srv.child.try_wait().unwrap() {
            break Some(st);
        }
        if t0.elapsed() > std::time::Duration::from_secs(10) {
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    drop(s);
    let status = status.expect("the server was still running 10 s after Ctrl-C");
    assert_eq!(status.code(), Some(0));
}
