//! `trawl audit --notify-mail/--notify-webhook`: one notice a run, received by sinks in Python
//! (aiosmtpd for mail, http.server for the webhook), started on free loopback ports.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::audit::flip_byte;
use crate::util::{Dir, Run, python_with, wait_until};

/// A password that must never be printed.
const SECRET: &str = "pw-Zq81-never-shown";

/// A loopback port nothing listens on (bound, then released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A Python sink on `port`, killed on drop; what it received lies under `dir`.
struct Sink {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Sink {
    fn start(d: &Dir, name: &str, args: &[&str]) -> Sink {
        let port = free_port();
        let dir = d.join(name);
        let mut c = Command::new("python3");
        c.args(args).arg(port.to_string()).arg(&dir);
        c.stdout(Stdio::null()).stderr(Stdio::null());
        let child = c.spawn().unwrap();
        let s = Sink { child, port, dir };
        wait_until(name, || TcpStream::connect(("127.0.0.1", port)).is_ok());
        s
    }

    /// An SMTP server (aiosmtpd) that keeps each message as a file in a Maildir.
    fn smtp(d: &Dir) -> Option<Sink> {
        let script = "import sys, aiosmtpd.handlers as h, aiosmtpd.controller as c, time\n\
            k = c.Controller(h.Mailbox(sys.argv[2]), hostname='127.0.0.1', port=int(sys.argv[1]))\n\
            k.start()\nwhile True: time.sleep(60)\n";
        python_with(&["aiosmtpd"]).then(|| Sink::start(d, "mail", &["-c", script]))
    }

    /// An HTTP server that keeps each POST's body as a file and answers `status`.
    fn http(d: &Dir, status: u16) -> Sink {
        let script = format!(
            "import http.server, sys, os\n\
            out = sys.argv[2]; os.makedirs(out)\n\
            class H(http.server.BaseHTTPRequestHandler):\n\
            \x20   def do_POST(self):\n\
            \x20       body = self.rfile.read(int(self.headers['Content-Length']))\n\
            \x20       n = len(os.listdir(out))\n\
            \x20       open(os.path.join(out, f'{{n}}.json'), 'wb').write(body)\n\
            \x20       self.send_response({status}); self.end_headers()\n\
            http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()\n"
        );
        Sink::start(d, "hooks", &["-c", &script])
    }

    /// The messages or bodies received, oldest first.
    fn received(&self) -> Vec<Vec<u8>> {
        let dir = if self.dir.join("new").is_dir() {
            self.dir.join("new")
        } else {
            self.dir.clone()
        };
        let mut names: Vec<_> = match std::fs::read_dir(&dir) {
            Ok(r) => r.map(|e| e.unwrap().path()).collect(),
            Err(_) => Vec::new(),
        };
        names.sort();
        names.iter().map(|p| std::fs::read(p).unwrap()).collect()
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A tree of `n` small files under `t/`, registered in `cat.db`.
fn registered_tree(d: &Dir, n: usize) {
    for i in 0..n {
        d.create(
            format!("t/d{:02}/f{i:05}", i % 50).as_bytes(),
            format!("file {i}\n").as_bytes(),
        );
    }
    audit(d, &[], &[]).code(0);
}

/// `trawl audit t -c cat.db -q ARGS`, the mail settings `env` set and no others inherited
/// (nor a proxy: the sinks are on loopback).
fn audit(d: &Dir, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut c = d
        .cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .args(args);
    for v in [
        "TRAWL_SMTP_URL",
        "TRAWL_SMTP_USER",
        "TRAWL_SMTP_PASSWORD",
        "TRAWL_MAIL_FROM",
    ] {
        c.cmd.env_remove(v);
    }
    c.cmd.envs(env.iter().copied());
    c.run()
}

fn mail_env(url: &str) -> [(&str, &str); 2] {
    [
        ("TRAWL_SMTP_URL", url),
        ("TRAWL_MAIL_FROM", "trawl@example.org"),
    ]
}

/// An audit of 2,000 files with one corrupt sends exactly one mail, to every recipient,
/// naming the corrupt file; the audit's exit code is its own (1).
#[test]
fn one_mail_for_a_run_with_a_corrupt_file() {
    let d = Dir::new();
    registered_tree(&d, 2000);
    let Some(smtp) = Sink::smtp(&d) else { return };
    flip_byte(&d.join("t/d17/f01717"), 0);
    let url = format!("smtp://127.0.0.1:{}?tls=none", smtp.port);
    let to = [
        "--notify-mail",
        "ops@example.org",
        "--notify-mail",
        "b@example.org",
    ];
    let r = audit(&d, &to, &mail_env(&url));
    r.code(1);
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
    let got = smtp.received();
    assert_eq!(got.len(), 1, "one mail a run");
    let m = String::from_utf8_lossy(&got[0]);
    assert!(
        m.contains("X-RcptTo: ops@example.org, b@example.org"),
        "{m}"
    );
    assert!(m.contains("Subject: trawl audit run 2: 1 corrupt"), "{m}");
    assert!(m.contains("corrupt: ") && m.contains("t/d17/f01717"), "{m}");
    assert!(m.contains("exit code: 1"), "{m}");
}

/// The webhook gets one POST whose JSON counts what was made: 1 corrupt, 1 missing, 1
/// modified, 47 ok out of 50, the problems named, the exit code 1.
#[test]
fn one_webhook_with_the_run_counts() {
    let d = Dir::new();
    registered_tree(&d, 50);
    if !python_with(&["http.server"]) {
        return;
    }
    let hook = Sink::http(&d, 204);
    flip_byte(&d.join("t/d03/f00003"), 1);
    std::fs::remove_file(d.join("t/d04/f00004")).unwrap();
    std::fs::write(d.join("t/d05/f00005"), "longer than it was\n").unwrap();
    let url = format!("http://127.0.0.1:{}/hooks/T0KEN", hook.port);
    audit(&d, &["--notify-webhook", &url], &[]).code(1);
    let got = hook.received();
    assert_eq!(got.len(), 1, "one webhook a run");
    let v: Value = serde_json::from_slice(&got[0]).unwrap();
    for (state, n) in [("ok", 47), ("corrupt", 1), ("missing", 1), ("modified", 1)] {
        assert_eq!(v["counts"][state], n, "{state}: {v:#}");
    }
    assert_eq!(v["exit_code"], 1);
    assert_eq!(v["run"], 2);
    assert_eq!(v["problem"], true);
    assert_eq!(v["problems"]["total"], 3);
    let paths: Vec<&str> = v["problems"]["first"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    for f in ["t/d03/f00003", "t/d04/f00004", "t/d05/f00005"] {
        assert!(paths.iter().any(|p| p.ends_with(f)), "{f} in {paths:?}");
    }
    assert!(Path::new(v["catalog"]["path"].as_str().unwrap()).is_absolute());
    assert_eq!(v["trawl_version"], env!("CARGO_PKG_VERSION"));
}

/// `--notify on-problem` (the default) sends nothing for a clean run; `always` sends one.
#[test]
fn on_problem_sends_nothing_for_a_clean_run_always_sends_one() {
    let d = Dir::new();
    registered_tree(&d, 20);
    if !python_with(&["http.server"]) {
        return;
    }
    let hook = Sink::http(&d, 200);
    let url = format!("http://127.0.0.1:{}/", hook.port);
    audit(&d, &["--notify-webhook", &url], &[]).code(0);
    let on_problem = ["--notify-webhook", &url, "--notify", "on-problem"];
    audit(&d, &on_problem, &[]).code(0);
    assert_eq!(
        hook.received().len(),
        0,
        "a clean run sends nothing on-problem"
    );
    audit(&d, &["--notify-webhook", &url, "--notify", "always"], &[]).code(0);
    let got = hook.received();
    assert_eq!(got.len(), 1);
    let v: Value = serde_json::from_slice(&got[0]).unwrap();
    assert_eq!(
        (v["problem"].clone(), v["exit_code"].clone()),
        (false.into(), 0.into())
    );
    assert_eq!(v["counts"]["ok"], 20);
}

/// A mail server that is not there and a webhook that answers 500 cost a warning naming each,
/// never the audit's exit code or its JSON; the login from the environment is never printed.
#[test]
fn a_notice_not_sent_is_a_warning_and_keeps_the_exit_code() {
    let d = Dir::new();
    registered_tree(&d, 20);
    if !python_with(&["http.server"]) {
        return;
    }
    let hook = Sink::http(&d, 500);
    let dead = free_port();
    let smtp = format!("smtp://127.0.0.1:{dead}");
    let env = [
        ("TRAWL_SMTP_URL", smtp.as_str()),
        ("TRAWL_MAIL_FROM", "trawl@example.org"),
        ("TRAWL_SMTP_USER", "user-Kx7"),
        ("TRAWL_SMTP_PASSWORD", SECRET),
    ];
    let url = format!("http://127.0.0.1:{}/hooks/T0KEN", hook.port);
    let notify = ["--notify-mail", "ops@example.org", "--notify-webhook", &url];
    let always = [&notify[..], &["--notify", "always", "--json", "run.json"]].concat();
    let r = audit(&d, &always, &env);
    r.code(0)
        .stderr_has(&format!("mail server 127.0.0.1:{dead}: notice not sent"))
        .stderr_has(&format!(
            "webhook http://127.0.0.1:{}: notice not sent",
            hook.port
        ));
    let json: Value = serde_json::from_slice(&std::fs::read(d.join("run.json")).unwrap()).unwrap();
    assert_eq!(json["counts"]["ok"], 20);
    flip_byte(&d.join("t/d01/f00001"), 0);
    let r = audit(&d, &notify, &env);
    r.code(1).stderr_has("notice not sent");
    assert_eq!(hook.received().len(), 2, "one POST a run, answered 500");
    for out in [&r.stdout, &r.stderr] {
        assert!(!out.contains(SECRET) && !out.contains("user-Kx7") && !out.contains("T0KEN"));
    }
}

/// Settings that cannot work are refused (exit 2) before the audit reads anything.
#[test]
fn bad_notice_settings_are_refused_before_the_audit() {
    let d = Dir::new();
    d.create(b"t/a", b"a\n");
    let to = ["--notify-mail", "ops@example.org"];
    audit(&d, &to, &[])
        .code(2)
        .stderr_has("TRAWL_SMTP_URL is not set");
    let plain_login = [
        ("TRAWL_SMTP_URL", "smtp://127.0.0.1:25?tls=none"),
        ("TRAWL_MAIL_FROM", "trawl@example.org"),
        ("TRAWL_SMTP_USER", "u"),
        ("TRAWL_SMTP_PASSWORD", SECRET),
    ];
    let r = audit(&d, &to, &plain_login);
    r.code(2).stderr_has("no password in clear");
    assert!(!r.stderr.contains(SECRET));
    let env = mail_env("smtp://127.0.0.1:25");
    audit(&d, &["--notify-mail", "nobody"], &env)
        .code(2)
        .stderr_has("not a mail address");
    let ftp = ["--notify-webhook", "ftp://example.org/x"];
    audit(&d, &ftp, &[]).code(2).stderr_has("--notify-webhook");
    // A port that is none (a URL parser takes it as no port, and the scheme's was used).
    for port in ["0", "70000", "-1", "abc", ""] {
        let server = format!("smtp://127.0.0.1:{port}");
        audit(&d, &to, &mail_env(&server))
            .code(2)
            .stderr_has(&format!(
                "TRAWL_SMTP_URL: port '{port}': expected 1 to 65535"
            ));
        let hook = format!("http://127.0.0.1:{port}/x");
        audit(&d, &["--notify-webhook", &hook], &[])
            .code(2)
            .stderr_has(&format!("--notify-webhook: port '{port}'"));
    }
    audit(&d, &["--notify", "always"], &[])
        .code(2)
        .stderr_has("names no target");
    assert!(!d.join("cat.db").exists(), "no audit ran");
}

/// A webhook that answers with a redirect (which a client follows with a GET that carries no
/// summary) and a mail server that never finishes its greeting (a line at a time, so that no
/// read times out) cost a warning each, and the audit ends with its own exit code.
#[test]
fn a_redirect_or_a_server_that_never_finishes_is_a_warning_not_a_hang() {
    let d = Dir::new();
    registered_tree(&d, 3);
    if !python_with(&["http.server"]) {
        return;
    }
    let redirect = "import http.server, sys\n\
        class H(http.server.BaseHTTPRequestHandler):\n\
        \x20   def do_POST(self):\n\
        \x20       self.send_response(302); self.send_header('Location', '/moved'); self.end_headers()\n\
        \x20   def do_GET(self):\n\
        \x20       self.send_response(200); self.end_headers()\n\
        http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()\n";
    let hook = Sink::start(&d, "hooks", &["-c", redirect]);
    let trickle = "import socket, sys, time, threading\n\
        s = socket.create_server(('127.0.0.1', int(sys.argv[1])))\n\
        def talk(c):\n\
        \x20   while True: c.sendall(b'220-still here\\r\\n'); time.sleep(0.1)\n\
        while True: threading.Thread(target=talk, args=(s.accept()[0],), daemon=True).start()\n";
    let smtp = Sink::start(&d, "mail", &["-c", trickle]);
    let url = format!("http://127.0.0.1:{}/hooks", hook.port);
    let mut c = d
        .cmd()
        .args(["audit", "t", "-c", "cat.db", "-q", "--notify", "always"]);
    c = c.args(["--notify-webhook", &url, "--notify-mail", "ops@example.org"]);
    let server = format!("smtp://127.0.0.1:{}?tls=none", smtp.port);
    c.cmd
        .env_remove("TRAWL_SMTP_USER")
        .env_remove("TRAWL_SMTP_PASSWORD")
        .envs(mail_env(&server))
        .env("TRAWL_TEST_NOTICE_TIMEOUT_MS", "500");
    let r = c.run_within(20);
    r.code(0)
        .stderr_has(&format!(
            "webhook http://127.0.0.1:{}: notice not sent: http status: 302",
            hook.port
        ))
        .stderr_has(&format!(
            "mail server 127.0.0.1:{}: notice not sent: not done within 0.5 s",
            smtp.port
        ));
}

/// A file name with a line break is escaped in the mail as in the audit's lines, so that it
/// cannot forge a line of the mail (here a corrupt file that is not).
#[test]
fn a_name_with_a_line_break_cannot_forge_a_line_of_the_mail() {
    let d = Dir::new();
    d.create(b"t/x\n  corrupt: forged", b"one\n");
    audit(&d, &[], &[]).code(0);
    let Some(smtp) = Sink::smtp(&d) else { return };
    std::fs::write(d.join("t/x\n  corrupt: forged"), "longer one\n").unwrap();
    let url = format!("smtp://127.0.0.1:{}?tls=none", smtp.port);
    audit(&d, &["--notify-mail", "ops@example.org"], &mail_env(&url)).code(0);
    let got = smtp.received();
    assert_eq!(got.len(), 1);
    let m = String::from_utf8_lossy(&got[0]);
    let escaped = "/t/x\\n  corrupt: forged";
    assert!(
        m.lines()
            .any(|l| l.starts_with("  modified: ") && l.ends_with(escaped)),
        "{m}"
    );
    assert!(!m.lines().any(|l| l.starts_with("  corrupt:")), "{m}");
}
