//! Round four of the adversary's and the unlucky operator's tests: I/O errors from a failing
//! device, full disks, slow clients by the hundred, outputs that would replace one another or a
//! catalog's own files, numbers at the edge of what JSON holds.

use crate::util::*;
use std::os::unix::ffi::OsStrExt;

/// `--json X --html X`, two manifests to one file, and the same file by two names: refused
/// before anything is read, and what was there is kept.
#[test]
fn two_outputs_to_one_file_are_refused() {
    let d = Dir::new();
    d.create(b"t/a", b"alpha\n");
    d.create(b"keep", b"kept\n");
    for args in [
        &["--json", "keep", "--html", "keep"][..],
        &["-m", "sha256sum:keep", "-m", "b3sum:keep"],
        &["--json", "keep", "-m", "sha256sum:./keep"],
        &["--jsonl", "keep", "--duplicates", "t/../keep"],
    ] {
        let r = d.cmd().arg("scan").arg("t").args(args).run();
        r.code(2).stderr_has("each output needs a file of its own");
        assert_eq!(
            std::fs::read(d.join("keep")).unwrap(),
            b"kept\n",
            "{args:?}"
        );
    }
    d.cmd()
        .args([
            "audit", "t", "-c", "cat.db", "--json", "keep", "--html", "keep",
        ])
        .run()
        .code(2)
        .stderr_has("named by --json and by --html");
    // Two different files are fine.
    d.cmd()
        .args(["scan", "t", "-q", "--json", "a.json", "--html", "a.html"])
        .run()
        .code(0);
}

/// An output named after a catalog's write-ahead log, shared-memory index or rollback journal
/// is refused as the catalog itself is: replacing one loses runs.
#[test]
fn outputs_named_after_a_catalogs_own_files_are_refused() {
    let d = Dir::new();
    d.create(b"t/a", b"alpha\n");
    d.cmd()
        .args(["audit", "t", "-q", "-c", "cat.db"])
        .run()
        .code(0);
    let catalog = std::fs::read(d.join("cat.db")).unwrap();
    for (name, said) in [
        ("cat.db", "is the catalog"),
        ("cat.db-wal", "write-ahead log"),
        ("cat.db-shm", "shared-memory index"),
        ("cat.db-journal", "rollback journal"),
    ] {
        d.cmd()
            .args(["audit", "t", "-q", "-c", "cat.db", "--json", name])
            .run()
            .code(2)
            .stderr_has(said);
        d.cmd()
            .args(["catalog", "export", "-c", "cat.db", "-o", name])
            .run()
            .code(2)
            .stderr_has(said);
        d.cmd()
            .args(["catalog", "report", "-c", "cat.db", "--html", name])
            .run()
            .code(2)
            .stderr_has(said);
    }
    assert_eq!(std::fs::read(d.join("cat.db")).unwrap(), catalog);
    d.cmd()
        .args(["catalog", "verify", "-c", "cat.db"])
        .run()
        .code(0);
}

/// A file the device fails to deliver (EIO) is reported failed and contributes nothing to the
/// reduction: the figures are those of the other files alone.
#[test]
fn a_file_that_fails_part_way_counts_for_nothing_in_the_reduction() {
    let d = Dir::new();
    let Some(m) = EioMount::new(&d, &[("good", b"hello\n")], "bad") else {
        return;
    };
    m.fail(true);
    let r = d
        .cmd()
        .arg("scan")
        .arg(m.at())
        .args(["-q", "--json", "r.json"])
        .run();
    r.code(2).stderr_has("Input/output error");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("r.json")).unwrap()).unwrap();
    assert_eq!(v["totals"]["failed"], 1);
    assert_eq!(v["totals"]["bytes"], 6);
    for way in v["reduction"]["dedup"].as_array().unwrap() {
        assert_eq!(way["logical_bytes"], 6, "{way}");
    }
    for c in v["reduction"]["compression"].as_array().unwrap() {
        assert_eq!(c["logical_bytes"], 6, "{c}");
    }
}

/// An audit that meets an I/O error: the catalog keeps the file under attention, in the text
/// report's counts and in the page, until it reads whole again.
#[test]
fn a_file_unreadable_through_an_io_error_stays_under_attention() {
    let d = Dir::new();
    let Some(m) = EioMount::new(&d, &[("good", b"hello\n"), ("sub/b", b"x\n")], "bad") else {
        return;
    };
    let audit = || {
        d.cmd()
            .arg("audit")
            .arg(m.at())
            .args(["-q", "-c", "cat.db"])
            .run()
    };
    audit().code(0);
    m.fail(true);
    audit().code(2).stderr_has("Input/output error");
    let r = d
        .cmd()
        .args(["catalog", "report", "-c", "cat.db", "--html", "c.html"])
        .run();
    r.code(0);
    // The registered files by state, below "registered files: 3".
    let states: Vec<Vec<&str>> = r
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("registered files:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().take(2).collect())
        .collect();
    assert_eq!(
        states,
        vec![vec!["ok", "2"], vec!["unreadable", "1"]],
        "{}",
        r.stdout
    );
    let page = std::fs::read_to_string(d.join("c.html")).unwrap();
    assert!(
        page.contains(r#"<div class="v">1</div><div class="k">want attention</div>"#),
        "the page does not count the file under attention"
    );
    d.cmd()
        .args(["catalog", "report", "-c", "cat.db", "--list", "unreadable"])
        .run()
        .code(0)
        .stdout_has("bad");
}

/// `flv index` on a file the device fails to deliver says so, not that the file shrank.
#[test]
fn flv_index_names_an_io_error_as_one() {
    let d = Dir::new();
    let Some(m) = EioMount::new(&d, &[], "bad.flv") else {
        return;
    };
    // An FLV header and a first tag header, so that the index reads on into the failing part.
    let mut head = b"FLV\x01\x05\x00\x00\x00\x09\x00\x00\x00\x00".to_vec();
    head.extend_from_slice(&[9, 0x60, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(m.join("bad.flv"))
        .unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &head, 0).unwrap();
    drop(f);
    m.fail(true);
    for io in ["mmap", "auto", "read"] {
        let r = d
            .cmd()
            .args(["flv", "index", "--io", io])
            .arg(m.join("bad.flv"))
            .run();
        r.code(2);
        assert!(!r.stderr.contains("shrank"), "--io {io}: {}", r.stderr);
        assert!(
            r.stderr.contains("I/O error") || r.stderr.contains("Input/output error"),
            "--io {io}: {}",
            r.stderr
        );
    }
}

/// `serve`: a file whose first bytes cannot be read is a 500 and a log line; one that fails
/// part way is cut short and logged, never a 200 that looks whole.
#[test]
fn serve_answers_an_io_error_with_an_error_and_a_log_line() {
    let d = Dir::new();
    let Some(m) = EioMount::new(&d, &[("good", b"hello\n")], "bad") else {
        return;
    };
    m.fail(false);
    let s = Serve::start(&d, m.at().to_str().unwrap(), &["--all"]);
    let got = s.get("/bad", "");
    let head = String::from_utf8_lossy(&got[..got.len().min(200)]).to_string();
    assert!(head.starts_with("HTTP/1.1 500"), "{head}");
    let good = s.get("/good", "");
    assert!(good.ends_with(b"hello\n"));
    let log = s.stop();
    assert!(log.contains("serve: /bad: Input/output error"), "{log}");

    let d = Dir::new();
    let Some(m) = EioMount::new(&d, &[], "bad") else {
        return;
    };
    m.fail(true);
    let s = Serve::start(&d, m.at().to_str().unwrap(), &["--all"]);
    let got = s.get("/bad", "");
    assert!(got.starts_with(b"HTTP/1.1 200"));
    assert!(
        got.len() < 24 << 20,
        "the whole body arrived from a failing file"
    );
    let log = s.stop();
    assert!(
        log.contains("serve: /bad: read failed after") && log.contains("cut short"),
        "{log}"
    );
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// 300 clients that ask for a large file and never read: each holds a bounded few chunks in the
/// server, and the memory goes back once they leave.
#[test]
fn serve_holds_little_per_slow_client_and_gives_it_back() {
    use std::io::{Read, Write};
    let d = Dir::new();
    let big: Vec<u8> = (0..32u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    d.create(b"srv/big.bin", &big);
    drop(big);
    let s = Serve::start(&d, "srv", &["--all", "-q", "--max-connections", "400"]);
    let pid = s.child.id();
    // One whole download first: the server's own buffers and threads are there.
    let got = s.get("/big.bin", "");
    assert!(got.len() > 32 << 20);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let base = rss_kib(pid);
    let n = 300;
    let mut clients = Vec::new();
    for _ in 0..n {
        let mut c = std::net::TcpStream::connect(&s.addr).unwrap();
        write!(c, "GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        clients.push(c);
    }
    // Until the server has filled every socket and holds what it holds.
    let mut held = 0;
    for _ in 0..30 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let now = rss_kib(pid);
        if now <= held + 256 && held > 0 {
            break;
        }
        held = held.max(now);
    }
    let held = held.max(rss_kib(pid));
    let each = held.saturating_sub(base) / n;
    // Two 128 KiB chunks and the connection's own state.
    assert!(
        each < 450,
        "{each} KiB per slow client (base {base} KiB, held {held} KiB)"
    );
    // Each one still gets its answer, if it reads.
    let mut first = [0u8; 12];
    clients[0].read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    drop(clients);
    let mut after = u64::MAX;
    for _ in 0..30 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        after = rss_kib(pid);
        if after < base + 16 * 1024 {
            break;
        }
    }
    assert!(
        after < base + 16 * 1024,
        "after the clients left: {after} KiB (base {base} KiB, held {held} KiB)"
    );
}

/// Past `--max-connections`, every new client gets 503 with Retry-After, none a bare close.
#[test]
fn serve_answers_every_client_past_the_cap() {
    use std::io::{Read, Write};
    let d = Dir::new();
    d.create(b"srv/big.bin", &vec![7u8; 8 << 20]);
    let s = Serve::start(&d, "srv", &["--all", "-q", "--max-connections", "10"]);
    let mut held = Vec::new();
    for _ in 0..10 {
        let mut c = std::net::TcpStream::connect(&s.addr).unwrap();
        write!(c, "GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        held.push(c);
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let answers: Vec<String> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..200)
            .map(|_| {
                sc.spawn(|| {
                    let mut c = std::net::TcpStream::connect(&s.addr).unwrap();
                    c.set_read_timeout(Some(std::time::Duration::from_secs(30)))
                        .unwrap();
                    let _ = write!(c, "GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
                    let mut out = Vec::new();
                    let _ = c.read_to_end(&mut out);
                    String::from_utf8_lossy(&out).to_string()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let refused = answers
        .iter()
        .filter(|a| a.starts_with("HTTP/1.1 503") && a.contains("Retry-After"))
        .count();
    assert_eq!(
        refused,
        200,
        "{:?}",
        answers.iter().find(|a| !a.starts_with("HTTP/1.1 503"))
    );
    drop(held);
}

/// Any number a JSON report can hold renders: a ratio of 1.7e308 once aborted the page.
#[test]
fn a_report_with_numbers_at_the_edge_of_json_renders() {
    let d = Dir::new();
    d.create(b"t/a", &[1u8; 100_000]);
    d.create(b"t/b", &[1u8; 100_000]);
    d.cmd()
        .args(["scan", "t", "-q", "--json", "r.json"])
        .run()
        .code(0);
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("r.json")).unwrap()).unwrap();
    fn huge(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    if k.ends_with("ratio") && x.is_f64() {
                        *x = serde_json::json!(1.7e308);
                    } else {
                        huge(x);
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(huge),
            _ => {}
        }
    }
    huge(&mut v);
    std::fs::write(d.join("huge.json"), serde_json::to_vec(&v).unwrap()).unwrap();
    let r = d
        .cmd()
        .args(["report", "huge.json", "--html", "h.html"])
        .run();
    r.code(0);
    assert!(
        std::fs::read_to_string(d.join("h.html"))
            .unwrap()
            .contains("</html>")
    );
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

/// A tmpfs of `kib` KiB mounted at `DIR/NAME`; `None` (skipped) where it cannot be.
struct SmallFs(Mounted);

impl SmallFs {
    fn new(d: &Dir, name: &str, kib: u64) -> Option<SmallFs> {
        let size = format!("size={kib}k");
        let args = ["-t", "tmpfs", "-o", &size, "tmpfs"].map(std::ffi::OsStr::new);
        Mounted::new(&args, d.join(name), "a tmpfs").map(SmallFs)
    }

    /// Fills the filesystem but for about `free` KiB.
    fn fill(&self, free: u64) {
        use std::io::Write;
        let spare = self.0.at.join(".spare");
        std::fs::write(&spare, vec![0u8; (free as usize) << 10]).unwrap();
        let mut f = std::fs::File::create(self.0.at.join(".filler")).unwrap();
        while f.write_all(&[0u8; 4096]).is_ok() {}
        std::fs::remove_file(spare).unwrap();
    }
}

/// A disk that fills up while `bag create` writes the tag files in place: the directory is put
/// back as it was (from the journal), and the message says so.
#[test]
fn bag_create_in_place_on_a_full_disk_puts_the_directory_back() {
    let d = Dir::new();
    let Some(fs) = SmallFs::new(&d, "small", 1024) else {
        return;
    };
    let bag = fs.0.at.join("bag");
    let mut names = Vec::new();
    for i in 0..60 {
        let name = format!("{i:03}-{}", "n".repeat(200));
        std::fs::create_dir_all(bag.join("sub")).unwrap();
        std::fs::write(bag.join("sub").join(&name), format!("{i}\n")).unwrap();
        names.push(name);
    }
    std::fs::write(bag.join("top.txt"), b"top\n").unwrap();
    let listing = |p: &std::path::Path| {
        let mut v: Vec<String> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let before = (listing(&bag), listing(&bag.join("sub")));
    fs.fill(8);
    let r = d
        .cmd()
        .arg("bag")
        .arg("create")
        .arg(&bag)
        .args(["--digest", "sha512,sha256"])
        .run();
    r.code(2)
        .stderr_has("No space left on device")
        .stderr_has("the directory was put back as it was");
    assert_eq!((listing(&bag), listing(&bag.join("sub"))), before);
    assert_eq!(std::fs::read(bag.join("top.txt")).unwrap(), b"top\n");
}

/// `bag validate` on a directory whose `bag create` was cut short names the way back.
#[test]
fn bag_validate_of_an_interrupted_creation_names_bag_recover() {
    let d = Dir::new();
    d.create(b"p/a", b"alpha\n");
    d.create(
        b"p/.trawl-bag-journal",
        b"trawl bag create journal v2: these entries were moved into data/; tag files written: bagit.txt\n",
    );
    d.cmd()
        .args(["bag", "validate", "p"])
        .run()
        .code(2)
        .stderr_has("run `trawl bag recover");
}

/// A bag whose manifests name `café.txt` composed (NFC) while the disk has it decomposed (NFD,
/// as a copy through macOS leaves it): one file, read and checked under its name on disk, with
/// a warning naming both forms; bagit-python gives the same verdict. Changed content is still a
/// mismatch.
#[test]
fn a_name_in_another_unicode_normalization_is_the_same_file() {
    let d = Dir::new();
    let nfc = "caf\u{e9}.txt";
    let nfd = "cafe\u{301}.txt";
    d.create(format!("p/{nfc}").as_bytes(), b"coffee\n");
    d.create(b"p/plain.txt", b"plain\n");
    d.cmd()
        .args(["bag", "create", "p", "--out", "bag", "-q"])
        .run()
        .code(0);
    std::fs::rename(
        d.join(format!("bag/data/{nfc}")),
        d.join(format!("bag/data/{nfd}")),
    )
    .unwrap();
    let r = d.cmd().args(["bag", "validate", "bag"]).run();
    r.code(0)
        .stderr_has("another Unicode normalization form")
        .stdout_has("valid");
    if let Some(bagit) = tool("bagit.py") {
        let b = run_tool(
            d.path(),
            &bagit,
            &[
                std::ffi::OsStr::new("--validate"),
                std::ffi::OsStr::new("bag"),
            ],
        );
        assert_eq!(b.code, 0, "bagit.py: {}", b.stderr);
    }
    std::fs::write(d.join(format!("bag/data/{nfd}")), b"tea\n").unwrap();
    let r = d.cmd().args(["bag", "validate", "bag"]).run();
    r.code(1).stdout_has("NOT valid").stderr_has("mismatch");
    assert!(r.stderr.contains(nfd), "{}", r.stderr);
}

/// Every manifest form GNU coreutils' `-c` reads (from its own tests), run side by side with
/// the GNU tool on the same files: the same exit code and the same OK and FAILED counts.
#[test]
fn verify_reads_every_form_gnu_reads_and_judges_as_gnu_does() {
    let d = Dir::new();
    d.create(b"a", b"alpha\n");
    d.create(b" b", b" bee\n");
    d.create(b"*c", b"star\n");
    d.create(b"x\\y", b"x");
    let md5 = |name: &[u8]| {
        let data = std::fs::read(d.join(std::ffi::OsStr::from_bytes(name))).unwrap();
        let out = std::process::Command::new("md5sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(&data)?;
                c.wait_with_output()
            })
            .unwrap();
        String::from_utf8(out.stdout).unwrap()[..32].to_string()
    };
    let (a, b, c, xy) = (md5(b"a"), md5(b" b"), md5(b"*c"), md5(b"x\\y"));
    let zeros = "0".repeat(32);
    let cases: Vec<(&str, &str, String)> = vec![
        // OpenSSL's `md5 -r`-less form: ALG(NAME)= HEX.
        ("md5sum", "openssl.md5", format!("MD5(a)= {a}\n")),
        // BSD `md5 -r`: one space; names that begin with a space or `*` kept as written.
        ("md5sum", "reversed.md5", format!("{a} a\n{b}  b\n{c} *c\n")),
        // A tagged line after white space, its name escaped.
        ("md5sum", "tagged.md5", format!(" \\MD5 (x\\\\y) = {xy}\n")),
        // One path, two digests: each line judged.
        ("md5sum", "twice.md5", format!("{a}  a\n{zeros}  a\n")),
    ];
    let mut all = cases;
    // What b2sum -l 256 and cksum -a (blake2b -l 256, sm3) write, made by the tools themselves.
    for (tool_name, args, file) in [
        ("b2sum", &["-l", "256", "a"][..], "B2SUMS"),
        ("b2sum", &["--tag", "-l", "256", "a"][..], "tagged.b2"),
        ("cksum", &["-a", "blake2b", "-l", "384", "a"][..], "ck.b2"),
        ("cksum", &["-a", "sm3", "a"][..], "ck.sm3"),
    ] {
        let Some(t) = tool(tool_name) else {
            return;
        };
        let out = std::process::Command::new(&t)
            .args(args)
            .current_dir(d.path())
            .output()
            .unwrap();
        if !out.status.success() {
            skip(&format!(
                "{tool_name} {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
            continue;
        }
        all.push((tool_name, file, String::from_utf8(out.stdout).unwrap()));
    }
    let counts = |text: &str| {
        let ok = text.lines().filter(|l| l.ends_with(": OK")).count();
        let failed = text.lines().filter(|l| l.contains(": FAILED")).count();
        (ok, failed)
    };
    for (gnu, file, text) in all {
        d.create(file.as_bytes(), text.as_bytes());
        let Some(g) = tool(gnu) else {
            return;
        };
        let theirs = run_tool(
            d.path(),
            &g,
            &[std::ffi::OsStr::new("-c"), std::ffi::OsStr::new(file)],
        );
        let ours = d.cmd().args(["verify", file]).run();
        assert_eq!(
            ours.code, theirs.code,
            "{file}: trawl {ours:?}, {gnu} {theirs:?}"
        );
        assert_eq!(
            counts(&ours.stdout),
            counts(&theirs.stdout),
            "{file}: trawl {ours:?}, {gnu} {theirs:?}"
        );
        assert!(counts(&ours.stdout).0 >= 1, "{file}: {ours:?}");
    }
}

/// `scan` computes the algorithms GNU `cksum -a` writes beyond the classic ones, and `cksum -c`
/// checks trawl's tagged manifest of them.
#[test]
fn scan_writes_sm3_and_blake2b_lengths_that_gnu_cksum_checks() {
    let d = Dir::new();
    d.create(b"t/a", b"alpha\n");
    d.create(b"t/b", &[7u8; 100_000]);
    d.cmd()
        .args([
            "scan",
            "t",
            "-q",
            "-d",
            "sm3,blake2b-256,blake2b-384",
            "-m",
            "bsd:SUMS",
        ])
        .run()
        .code(0);
    let Some(cksum) = tool("cksum") else {
        return;
    };
    // Names in a manifest are relative to the root scanned.
    let r = run_tool(
        &d.join("t"),
        &cksum,
        &[std::ffi::OsStr::new("-c"), std::ffi::OsStr::new("../SUMS")],
    );
    assert_eq!(r.code, 0, "cksum -c: {r:?}");
    assert_eq!(
        r.stdout.lines().filter(|l| l.ends_with(": OK")).count(),
        6,
        "{r:?}"
    );
}
