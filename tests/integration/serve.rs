//! `trawl serve`: directory pages, the access log and how fast a seek's answer comes.

use std::io::{Read, Write};
use std::time::Duration;

use crate::flv::flv_with_keyframes;
use crate::util::{Dir, Serve, python_with};

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

/// One request with any method (`Connection: close`); the whole answer.
fn request(srv: &Serve, method: &str, path: &str) -> Vec<u8> {
    let mut s = std::net::TcpStream::connect(&srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

/// `GET /` lists the served FLV files as relative links: Python's HTML parser reads back every
/// name as it is (markup in a name is escaped) and each link, percent-decoded, is the name;
/// nothing outside the root, no dotfile, no file that is not served, and a subdirectory's page
/// links back up. A link leaving the root is neither listed nor followed.
#[test]
fn a_directory_path_lists_what_is_served_there() {
    if !python_with(&["html.parser", "urllib.parse"]) {
        return;
    }
    let d = Dir::new();
    let video = flv_with_keyframes();
    let names = ["a b.flv", "<i>&\"q\"'.flv", "caf\u{e9}.flv"];
    for n in names {
        d.create(format!("www/{n}").as_bytes(), &video);
    }
    d.create(b"www/notes.txt", b"notes");
    d.create(b"www/.hidden.flv", &video);
    d.create(b"www/sub/inner.flv", &video);
    d.create(b"outside.flv", &video);
    std::os::unix::fs::symlink(d.join("outside.flv"), d.join("www/leak.flv")).unwrap();
    std::os::unix::fs::symlink(d.path(), d.join("www/up")).unwrap();
    let srv = Serve::start(&d, "www", &[]);
    let r = srv.get("/", "");
    let h = head_of(&r);
    assert!(h.starts_with("HTTP/1.1 200"), "{h}");
    assert!(h.contains("content-type: text/html; charset=utf-8"), "{h}");
    let page = String::from_utf8(body_of(&r).to_vec()).unwrap();
    let links = |page: &str| -> Vec<(String, String)> {
        let script = r#"
import html.parser, json, sys, urllib.parse
class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(); self.links = []; self.href = None
    def handle_starttag(self, tag, attrs):
        if tag == "a": self.href = dict(attrs)["href"]; self.links.append([self.href, ""])
    def handle_endtag(self, tag):
        if tag == "a": self.href = None
    def handle_data(self, data):
        if self.href is not None: self.links[-1][1] += data
p = P(); p.feed(sys.stdin.read())
print(json.dumps([[urllib.parse.unquote(h), t] for h, t in p.links]))
"#;
        let mut c = std::process::Command::new("python3")
            .args(["-c", script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(page.as_bytes()).unwrap();
        let out = c.wait_with_output().unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let mut want: Vec<(String, String)> = names
        .iter()
        .map(|n| (n.to_string(), n.to_string()))
        .collect();
    want.push(("sub/".into(), "sub/".into()));
    want.sort();
    let mut got = links(&page);
    got.sort();
    assert_eq!(got, want, "{page}");
    // Each link is served (relative to the page).
    for (href, _) in &got {
        if href.ends_with(".flv") {
            let path: String = format!(
                "/{}",
                href.bytes()
                    .map(|b| format!("%{b:02X}"))
                    .collect::<String>()
            );
            let r = srv.get(&path, "");
            assert!(head_of(&r).starts_with("HTTP/1.1 200"), "{href}");
            assert_eq!(body_of(&r), &video[..]);
        }
    }
    let sub = String::from_utf8(body_of(&srv.get("/sub/", "")).to_vec()).unwrap();
    let mut got = links(&sub);
    got.sort();
    assert_eq!(
        got,
        [
            ("../".to_string(), "../".to_string()),
            ("inner.flv".to_string(), "inner.flv".to_string())
        ]
    );
    // A link out of the root is not a directory to list; nor are dotted or missing ones.
    assert!(head_of(&srv.get("/up/", "")).starts_with("HTTP/1.1 403"));
    assert!(head_of(&srv.get("/../", "")).starts_with("HTTP/1.1 403"));
    assert!(head_of(&srv.get("/nope/", "")).starts_with("HTTP/1.1 404"));
    assert!(head_of(&srv.get("/a%20b.flv/", "")).starts_with("HTTP/1.1 404"));
    // HEAD: the page's length, no page.
    let r = request(&srv, "HEAD", "/");
    assert!(head_of(&r).contains(&format!("content-length: {}", page.len())));
    assert!(body_of(&r).is_empty());
    // A directory with nothing to serve says so.
    d.create(b"www/empty/readme.txt", b"x");
    let e = String::from_utf8(body_of(&srv.get("/empty/", "")).to_vec()).unwrap();
    assert!(e.contains("No FLV files here."), "{e}");
}

/// The access log counts the bytes each answer's body had, error pages included (a 416 sent
/// a body and was logged `-`), and `-` for none.
#[test]
fn the_access_log_counts_every_body_sent() {
    let d = Dir::new();
    d.create(b"www/a.flv", &flv_with_keyframes());
    let srv = Serve::start(&d, "www", &[]);
    let mut want = Vec::new();
    for (method, path, status) in [
        ("GET", "/a.flv?start=9999", "416"),
        ("GET", "/nope.flv", "404"),
        ("GET", "/", "200"),
        ("HEAD", "/a.flv", "200"),
        ("GET", "/a.flv", "200"),
    ] {
        let r = request(&srv, method, path);
        assert!(head_of(&r).starts_with(&format!("HTTP/1.1 {status}")));
        let n = body_of(&r).len();
        let bytes = if n == 0 { "-".into() } else { n.to_string() };
        want.push(format!("\"{method} {path} HTTP/1.1\" {status} {bytes}"));
    }
    let log = srv.stop();
    for w in want {
        assert!(
            log.lines().any(|l| l.ends_with(&w)),
            "no line ending {w}:\n{log}"
        );
    }
}

/// `--access-log FILE` appends one common-log-format line per request to FILE (what was there
/// stays), nothing to stderr; a symbolic link or a FIFO at the name is refused, at once.
#[test]
fn the_access_log_goes_to_a_file_appended() {
    let d = Dir::new();
    let video = flv_with_keyframes();
    d.create(b"www/a.flv", &video);
    d.create(b"logs/access.log", b"an earlier line\n");
    let srv = Serve::start(&d, "www", &["--access-log", "logs/access.log"]);
    for _ in 0..3 {
        srv.get("/a.flv", "");
    }
    srv.get("/a.flv", "Range: bytes=0-9\r\n");
    let stderr = srv.stop();
    assert!(!stderr.contains("GET"), "{stderr}");
    let log = std::fs::read_to_string(d.join("logs/access.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 5, "{log}");
    assert_eq!(lines[0], "an earlier line");
    // host ident authuser [date] "request" status bytes
    for (i, l) in lines[1..].iter().enumerate() {
        let (host, rest) = l.split_once(" - - [").unwrap();
        assert_eq!(host, "127.0.0.1");
        let (date, rest) = rest.split_once("] \"").unwrap();
        assert!(time_ok(date), "{date}: not dd/Mon/yyyy:hh:mm:ss +0000");
        let (req, rest) = rest.split_once("\" ").unwrap();
        assert_eq!(req, "GET /a.flv HTTP/1.1");
        let want = if i < 3 {
            format!("200 {}", video.len())
        } else {
            "206 10".to_string()
        };
        assert_eq!(rest, want);
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(d.join("logs/other"), b"").unwrap();
    std::os::unix::fs::symlink(d.join("logs/other"), d.join("logs/link.log")).unwrap();
    let r = d
        .cmd()
        .args(["serve", "www", "--listen", "127.0.0.1:0"])
        .args(["--access-log", "logs/link.log"])
        .run();
    r.code(2);
    r.stderr_has("logs/link.log: cannot open the access log: a symbolic link");
    let fifo = d.join("logs/fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let r = d
        .cmd()
        .args(["serve", "www", "--listen", "127.0.0.1:0"])
        .args(["--access-log", "logs/fifo"])
        .run();
    r.code(2);
    r.stderr_has("logs/fifo: cannot open the access log");
    // A new log: readable by its owner and group only (it holds the clients' addresses).
    let srv = Serve::start(&d, "www", &["-q", "--access-log", "logs/new.log"]);
    srv.get("/a.flv", "");
    srv.stop();
    let m = std::fs::metadata(d.join("logs/new.log")).unwrap();
    assert_eq!(m.permissions().mode() & 0o777, 0o640);
    assert_eq!(
        std::fs::read_to_string(d.join("logs/new.log"))
            .unwrap()
            .lines()
            .count(),
        1
    );
}

/// `23/Nov/2026:21:15:00 +0000`.
fn time_ok(t: &str) -> bool {
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let b = t.as_bytes();
    t.len() == 26
        && b[..2].iter().all(u8::is_ascii_digit)
        && months.contains(&&t[3..6])
        && b[7..11].iter().all(u8::is_ascii_digit)
        && t[11..].starts_with(':')
        && t.ends_with(" +0000")
}
