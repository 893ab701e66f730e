//! `trawl serve` as an HTTP server meets its clients: what it serves and what it never does
//! (a link swapped in mid-request included), ranges and their validators by RFC 9110, the access
//! log, and clients that are slow, stalled, hold connections open or come by the hundred.

use crate::util::*;

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
