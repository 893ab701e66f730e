//! `trawl catalog schedule`: the systemd service and timer it writes (checked by
//! `systemd-analyze verify`, their command read back by systemd's quoting rules), and the
//! crontab line (its command read back by the shell's rules, and run).

use std::path::Path;

use crate::util::{Dir, Run, python_json, python_with, tool};

/// A tree and catalog under a directory whose name holds what both systemd and the shell read
/// as syntax: a space, `%`, `$`, both quotes and a backslash; a policy set.
fn awkward(d: &Dir) -> (std::path::PathBuf, std::path::PathBuf) {
    let name = r#"a b%c$d'e"f\g"#;
    d.create(format!("{name}/t/x.txt").as_bytes(), b"x");
    let base = d.join(name);
    let root = base.join("t");
    let cat = base.join("c%t.db");
    let run = |args: &[&std::ffi::OsStr]| d.cmd().args(args).run();
    run(&[
        "audit".as_ref(),
        root.as_os_str(),
        "-c".as_ref(),
        cat.as_os_str(),
        "-q".as_ref(),
    ])
    .code(0);
    run(&[
        "catalog".as_ref(),
        "policy".as_ref(),
        "-c".as_ref(),
        cat.as_os_str(),
        "--every".as_ref(),
        "1d".as_ref(),
    ])
    .code(0);
    (root, cat)
}

/// An ExecStart= line's words as systemd reads them: specifiers (`%%`) first, then words
/// split on blanks outside double quotes, `\\` and `\"` unescaped inside them, then `$$`.
fn systemd_words(line: &str) -> Vec<String> {
    let line = line.replace("%%", "%");
    let (mut words, mut cur, mut quoted, mut chars) =
        (Vec::new(), None::<String>, false, line.chars());
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                cur.get_or_insert_with(String::new);
            }
            '\\' if quoted => cur
                .get_or_insert_with(String::new)
                .push(chars.next().unwrap()),
            ' ' if !quoted => words.extend(cur.take()),
            c => cur.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(cur);
    words.into_iter().map(|w| w.replace("$$", "$")).collect()
}

fn setting<'a>(unit: &'a str, key: &str) -> &'a str {
    unit.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in\n{unit}"))
}

fn schedule(d: &Dir, cat: &Path, root: &Path, extra: &[&str]) -> Run {
    let mut c = d
        .cmd()
        .args(["catalog", "schedule", "-c"])
        .arg(cat)
        .arg(root);
    c = c.args(extra);
    c.run()
}

/// The units hold the policy audit of the tree with this trawl's absolute path, at the lowest
/// priorities, once a day at --at; systemd accepts them; read back by systemd's rules, the
/// command is the one expected word for word, and it runs.
#[test]
fn the_units_run_the_policy_audit_and_systemd_accepts_them() {
    let d = Dir::new();
    let (root, cat) = awkward(&d);
    let r = schedule(
        &d,
        &cat,
        &root,
        &["-o", "units", "--at", "03:30", "--name", "arch"],
    );
    r.code(0).stdout_has("enable: systemctl --user daemon-reload && systemctl --user enable --now trawl-audit-arch.timer");
    let service = std::fs::read_to_string(d.join("units/trawl-audit-arch.service")).unwrap();
    let timer = std::fs::read_to_string(d.join("units/trawl-audit-arch.timer")).unwrap();
    let argv = systemd_words(setting(&service, "ExecStart"));
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_trawl")).unwrap();
    let want: Vec<String> = [
        exe.to_str().unwrap(),
        "audit",
        std::fs::canonicalize(&root).unwrap().to_str().unwrap(),
        "-c",
        std::fs::canonicalize(&cat).unwrap().to_str().unwrap(),
        "--policy",
        "-q",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(argv, want, "{service}");
    assert_eq!(setting(&service, "Type"), "oneshot");
    assert_eq!(setting(&service, "Nice"), "19");
    assert_eq!(setting(&service, "IOSchedulingClass"), "idle");
    assert_eq!(setting(&timer, "OnCalendar"), "*-*-* 03:30:00");
    assert_eq!(setting(&timer, "WantedBy"), "timers.target");
    let status = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    // systemd's own reading (system mode: a user manager needs a session this test lacks).
    if let Some(sa) = tool("systemd-analyze") {
        let units = d.join("units");
        let o = std::process::Command::new(sa)
            .arg("verify")
            .arg(units.join("trawl-audit-arch.service"))
            .arg(units.join("trawl-audit-arch.timer"))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// The crontab line starts at --at every day; its command, as cron hands it to the shell (a
/// `\%` made `%`) and as the shell splits it, is nice and ionice before the units' command,
/// and it runs.
#[test]
fn the_cron_line_runs_the_same_command() {
    let d = Dir::new();
    let (root, cat) = awkward(&d);
    let r = schedule(&d, &cat, &root, &["--cron", "--at", "03:30"]);
    r.code(0);
    let line = r.stdout.trim_end();
    let fields: Vec<&str> = line.splitn(6, ' ').collect();
    assert_eq!(fields[..5], ["30", "3", "*", "*", "*"], "{line}");
    let command = fields[5].replace("\\%", "%");
    schedule(&d, &cat, &root, &["-o", "units"]).code(0);
    let service = std::fs::read_to_string(d.join("units/trawl-audit-c_t.service")).unwrap();
    let mut want: Vec<String> = ["nice", "-n", "19", "ionice", "-c", "3"]
        .map(String::from)
        .to_vec();
    want.extend(systemd_words(setting(&service, "ExecStart")));
    if python_with(&["shlex"]) {
        let words: Vec<String> = python_json(
            &d,
            "import json, shlex, sys; print(json.dumps(shlex.split(sys.argv[1])))",
            &command,
        );
        assert_eq!(words, want, "{line}");
    }
    if tool("ionice").is_some() {
        let s = std::process::Command::new("sh")
            .arg("-c")
            .arg(&command)
            .status()
            .unwrap();
        assert_eq!(s.code(), Some(0), "{command}");
    }
}

/// `--cron` prints a user's crontab line and writes nothing: the units' directory, name and
/// system mode are refused with it (exit 2, nothing printed, nothing written), not ignored.
#[test]
fn cron_refuses_what_only_the_units_take() {
    let d = Dir::new();
    let (root, cat) = awkward(&d);
    for (extra, named) in [
        (&["-o", "units"][..], "'--output <DIR>'"),
        (&["--name", "arch"], "'--name <NAME>'"),
        (&["--system"], "'--system'"),
    ] {
        let r = schedule(&d, &cat, &root, &[&["--cron"], extra].concat());
        r.code(2).stderr_has("'--cron'").stderr_has(named);
        assert!(r.stdout.is_empty(), "{extra:?}: {}", r.stdout);
    }
    assert!(!d.join("units").exists());
}

/// Refused, exit 2, nothing written: a catalog without a policy, a name systemd cannot hold
/// (not UTF-8), a bad time of day.
#[test]
fn what_a_unit_cannot_hold_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    let d = Dir::new();
    d.create(b"t/x", b"x");
    d.cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .run()
        .code(0);
    schedule(&d, Path::new("cat.db"), Path::new("t"), &["-o", "u"])
        .code(2)
        .stderr_has("this catalog has no policy");
    d.cmd()
        .args(["catalog", "policy", "-c", "cat.db", "--every", "1d"])
        .run()
        .code(0);
    d.create(b"bad\xff/x", b"x");
    schedule(
        &d,
        Path::new("cat.db"),
        Path::new(std::ffi::OsStr::from_bytes(b"bad\xff")),
        &["-o", "u"],
    )
    .code(2)
    .stderr_has("not UTF-8, which a systemd unit cannot hold");
    schedule(
        &d,
        Path::new("cat.db"),
        Path::new("t"),
        &["-o", "u", "--at", "25:00"],
    )
    .code(2)
    .stderr_has("--at '25:00': expected a time of day HH:MM");
    assert!(!d.join("u").exists());
}

/// A line ending in `\` goes on into the next for systemd: a catalog whose name ends in one
/// leaves every setting in place (systemd's own reading, its dump of the service, keeps
/// `After=local-fs.target`), and an `--on-calendar` with one is refused, nothing written.
#[test]
fn a_trailing_backslash_carries_no_setting_away() {
    let d = Dir::new();
    d.create(b"t/x", b"x");
    let cat = Path::new(r"cat.db\");
    d.cmd()
        .args(["audit", "t", "-q", "-c"])
        .arg(cat)
        .run()
        .code(0);
    d.cmd()
        .args(["catalog", "policy", "--every", "1d", "-c"])
        .arg(cat)
        .run()
        .code(0);
    schedule(
        &d,
        cat,
        Path::new("t"),
        &["-o", "v", "--on-calendar", r"daily\"],
    )
    .code(2)
    .stderr_has("not a calendar event");
    assert!(!d.join("v").exists());
    schedule(&d, cat, Path::new("t"), &["-o", "u", "--name", "bs"]).code(0);
    let service = std::fs::read_to_string(d.join("u/trawl-audit-bs.service")).unwrap();
    assert!(service.lines().all(|l| !l.ends_with('\\')), "{service}");
    let Some(sa) = tool("systemd-analyze") else {
        return;
    };
    let o = std::process::Command::new(sa)
        .arg("verify")
        .arg(d.join("u/trawl-audit-bs.service"))
        .env("SYSTEMD_LOG_LEVEL", "debug")
        .output()
        .unwrap();
    let dump = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{dump}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(dump.contains("After: local-fs.target"), "{dump}");
}
