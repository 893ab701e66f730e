//! `trawl serve` and clients that are slow, stalled, hold connections open or come by the
//! hundred: memory held per client, the cap, the grace period.

use crate::serve::{body_of, head_of};
use crate::util::*;

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
