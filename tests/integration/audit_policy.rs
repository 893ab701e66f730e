//! A collection's policy: `trawl catalog policy` (set, shown, cleared), `trawl audit --policy`
//! (its window, its budget, the files due first), `trawl catalog due`, and thirty simulated
//! nights under a fixed clock (`TRAWL_NOW`) held to a model of the documented reading order.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::audit::{count, flip_byte, paths};
use crate::util::{Dir, Run};

/// 2027-01-15T08:00:00Z: the registration's time in these tests.
pub(crate) const T0: i64 = 1_800_000_000;
pub(crate) const DAY: i64 = 86_400;

/// `trawl ARGS` with the clock at `now` and the local time zone UTC.
pub(crate) fn at(d: &Dir, now: i64, args: &[&str]) -> Run {
    let mut c = d.cmd().args(args);
    c.cmd.env("TRAWL_NOW", now.to_string()).env("TZ", "UTC");
    c.run()
}

/// The audit `--policy` at `now`, with its JSON.
fn night(d: &Dir, now: i64) -> (Run, Value) {
    let r = at(
        d,
        now,
        &[
            "audit", "t", "-c", "cat.db", "--policy", "--json", "n.json", "-q",
        ],
    );
    let v = std::fs::read(d.join("n.json"))
        .map(|b| serde_json::from_slice(&b).unwrap())
        .unwrap_or(Value::Null);
    let _ = std::fs::remove_file(d.join("n.json"));
    (r, v)
}

/// `n` files in ten directories, of sizes 100 to 499 bytes: each name with its size.
fn collection(d: &Dir, n: usize) -> BTreeMap<String, u64> {
    (0..n)
        .map(|i| {
            let name = format!("d{}/f{i:04}", i % 10);
            let size = 100 + (i * 37 % 400) as u64;
            d.create(
                format!("t/{name}").as_bytes(),
                &vec![b'a' + (i % 26) as u8; size as usize],
            );
            (name, size)
        })
        .collect()
}

/// The documented order, as a model: registered files by their last verification, then their
/// last run, then their path; a run starts files while it has started fewer bytes than its
/// budget. A corrupt file keeps its last verification. Returns each night's files read.
fn model(
    files: &BTreeMap<String, u64>,
    budget: u64,
    nights: i64,
    corrupt: (&str, i64),
) -> Vec<Vec<String>> {
    // (last verified, last run) of each file; run 1 registered them all at T0.
    let mut state: BTreeMap<&str, (i64, i64)> =
        files.keys().map(|k| (k.as_str(), (T0, 1))).collect();
    let mut out = Vec::new();
    for k in 1..=nights {
        let run = k + 1;
        let mut order: Vec<&str> = state.keys().copied().collect();
        order.sort_by_key(|p| (state[p], *p));
        let mut sent = 0;
        let mut read = Vec::new();
        for p in order {
            if sent >= budget {
                break;
            }
            sent += files[p];
            read.push(p.to_string());
            let bad = p == corrupt.0 && k >= corrupt.1;
            let s = state.get_mut(p).unwrap();
            *s = if bad { (s.0, run) } else { (T0 + k * DAY, run) };
        }
        out.push(read);
    }
    out
}

/// Thirty nights of a 30-day policy whose byte budget is a thirtieth of the collection: each
/// night reads what the model says (so about a thirtieth of the bytes: at least the budget,
/// less than the budget and one file more), every file is read, nothing is due after the
/// thirtieth night, and a file corrupted on night 12 is reported on the night its turn comes
/// and by every audit after.
#[test]
fn thirty_nights_of_a_policy_read_everything_a_thirtieth_at_a_time() {
    let d = Dir::new();
    let files = collection(&d, 150);
    let total: u64 = files.values().sum();
    let biggest = *files.values().max().unwrap();
    let budget = total.div_ceil(30);
    at(&d, T0, &["audit", "t", "-c", "cat.db", "-q"]).code(0);
    at(
        &d,
        T0,
        &[
            "catalog",
            "policy",
            "-c",
            "cat.db",
            "--every",
            "30d",
            "--max-bytes",
            &budget.to_string(),
        ],
    )
    .code(0);
    let victim = files.keys().nth(100).unwrap().clone();
    let want = model(&files, budget, 30, (&victim, 12));
    let turn = (12..=30)
        .find(|k| want[*k as usize - 1].contains(&victim))
        .unwrap();
    assert!(turn > 12, "the model reads the file again on night {turn}");
    for k in 1..=30 {
        if k == 12 {
            flip_byte(&d.join("t").join(&victim), 10);
        }
        let (r, v) = night(&d, T0 + k * DAY);
        let expect_bytes: u64 = want[k as usize - 1].iter().map(|p| files[p]).sum();
        assert_eq!(v["bytes_read"].as_u64(), Some(expect_bytes), "night {k}");
        assert_eq!(
            v["files_read"].as_u64(),
            Some(want[k as usize - 1].len() as u64),
            "night {k}"
        );
        assert!(
            budget <= expect_bytes && expect_bytes < budget + biggest,
            "night {k}"
        );
        let corrupt = k >= turn;
        r.code(if corrupt { 1 } else { 0 });
        assert_eq!(count(&v, "corrupt"), u64::from(corrupt), "night {k}");
        if corrupt {
            assert!(paths(&v, "corrupt").contains(&victim), "night {k}: {v}");
        }
    }
    let due = at(
        &d,
        T0 + 30 * DAY,
        &["catalog", "due", "-c", "cat.db", "--json"],
    );
    due.code(0);
    let v: Value = serde_json::from_str(&due.stdout).unwrap();
    assert_eq!(v["files"], serde_json::json!([]), "{}", due.stdout);
    assert_eq!(v["totals"], serde_json::json!({"files": 0, "bytes": 0}));
    // Every file was read in the thirty nights: its last verification is past the
    // registration's, the corrupt one's aside (it keeps the one it had), read from the
    // catalog by Python's own SQLite.
    if crate::util::python_with(&["sqlite3"]) {
        let rows: Vec<(String, i64, String)> = crate::util::python_json(
            &d,
            "import sqlite3, json, sys\n\
             c = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True)\n\
             print(json.dumps(c.execute(\"SELECT CAST(d.path || f.name AS TEXT), f.last_verified, f.state \
             FROM files f JOIN dirs d ON d.id = f.dir\").fetchall()))",
            "cat.db",
        );
        assert_eq!(rows.len(), 150);
        for (p, lv, state) in rows {
            match p == victim {
                true => assert_eq!((lv, state.as_str()), (T0, "corrupt")),
                false => assert!(lv > T0 && state == "ok", "{p}: {lv} {state}"),
            }
        }
    }
}

/// `catalog due` lists the files not verified within the age, oldest first, with size and
/// time, and a summary; the same as JSON; exit 0 either way.
#[test]
fn catalog_due_lists_what_is_stale_as_text_and_json() {
    let d = Dir::new();
    let files = collection(&d, 4);
    at(&d, T0, &["audit", "t", "-c", "cat.db", "-q"]).code(0);
    at(
        &d,
        T0 + DAY,
        &["audit", "t", "-c", "cat.db", "-q", "--max-bytes", "1"],
    )
    .code(0);
    let r = at(
        &d,
        T0 + 3 * DAY,
        &["catalog", "due", "-c", "cat.db", "--older-than", "2d"],
    );
    r.code(0);
    let root = std::fs::canonicalize(d.join("t")).unwrap();
    // The run of day 1 read d0/f0000 (the first in path order) and stopped: its budget was spent.
    let stale: Vec<&String> = files.keys().filter(|k| *k != "d0/f0000").collect();
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", r.stdout);
    for (line, name) in lines.iter().zip(&stale) {
        let want = format!(
            "2027-01-15T08:00:00Z  {:>14}  {}",
            files[*name],
            root.join(name).display()
        );
        assert_eq!(*line, want);
    }
    let bytes: u64 = stale.iter().map(|n| files[*n]).sum();
    assert!(
        lines[3].starts_with(&format!("3 files ({bytes} B) due: not verified within 2d")),
        "{}",
        lines[3]
    );
    let j = at(
        &d,
        T0 + 3 * DAY,
        &[
            "catalog",
            "due",
            "-c",
            "cat.db",
            "--older-than",
            "2d",
            "--json",
        ],
    );
    j.code(0);
    let v: Value = serde_json::from_str(&j.stdout).unwrap();
    assert_eq!(v["totals"], serde_json::json!({"files": 3, "bytes": bytes}));
    assert_eq!(v["files"][0]["last_verified"], "2027-01-15T08:00:00Z");
    assert_eq!(v["files"][2]["path"], root.join(stale[2]).to_str().unwrap());
    // Without --older-than it is the policy's period, and without a policy it says so.
    at(&d, T0, &["catalog", "due", "-c", "cat.db"])
        .code(2)
        .stderr_has(
            "this catalog has no policy; set one with `trawl catalog policy -c cat.db --every 90d`",
        );
}

/// A policy is set, shown (text and JSON), changed one value at a time and cleared; values
/// no policy can hold are refused (exit 2) and change nothing.
#[test]
fn a_policy_is_set_shown_changed_and_cleared() {
    let d = Dir::new();
    collection(&d, 3);
    at(&d, T0, &["audit", "t", "-c", "cat.db", "-q"]).code(0);
    let p = |args: &[&str]| {
        let mut a = vec!["catalog", "policy", "-c", "cat.db"];
        a.extend_from_slice(args);
        at(&d, T0, &a)
    };
    p(&[]).code(0).stdout_has("cat.db: no policy (set one:");
    p(&["--max-bytes", "1G"])
        .code(2)
        .stderr_has("a policy needs --every");
    for (bad, why) in [
        (["--every", "0s"], "--every '0s': must be at least a second"),
        (["--every", "soon"], "--every 'soon': expected a duration"),
        (
            ["--max-bytes", "0"],
            "--max-bytes '0': must be at least a byte",
        ),
        (
            ["--max-time", "0s"],
            "--max-time '0s': must be at least a second",
        ),
        (
            ["--window", "1-6"],
            "--window: window '1-6': expected HH:MM-HH:MM",
        ),
        (["--window", "03:00-03:00"], "holds no time"),
    ] {
        p(&bad).code(2).stderr_has(why);
    }
    p(&[]).code(0).stdout_has("no policy");
    let r = p(&[
        "--every",
        "90d",
        "--max-bytes",
        "1G",
        "--window",
        "01:00-06:00",
    ]);
    r.code(0)
        .stdout_has("  every:      90d")
        .stdout_has("  max-bytes:  1.0 GiB (1073741824 bytes) per run")
        .stdout_has("  max-time:   no limit per run")
        .stdout_has("  window:     01:00-06:00 local time")
        .stdout_has("  due now:    0 files (0 B)");
    p(&["--max-time", "2h"]).code(0);
    let v: Value = serde_json::from_str(&p(&["--json"]).stdout).unwrap();
    assert_eq!(
        v["policy"],
        serde_json::json!({"every_seconds": 90 * DAY, "max_bytes": 1u64 << 30,
            "max_time_seconds": 7200, "window": "01:00-06:00", "window_zone": "local"})
    );
    assert_eq!(v["collection"]["files"], 3);
    p(&["--clear", "--every", "1d"]).code(0);
    let v: Value = serde_json::from_str(&p(&["--json"]).stdout).unwrap();
    assert_eq!(v["policy"]["max_bytes"], Value::Null);
    p(&["--clear"]).code(0).stdout_has("cat.db: policy cleared");
    p(&["--json"]).code(0).stdout_has("\"policy\": null");
    at(
        &d,
        T0,
        &["catalog", "policy", "-c", "none.db", "--every", "1d"],
    )
    .code(2)
    .stderr_has("none.db: no such catalog");
    assert!(!d.join("none.db").exists());
}

/// A policy row edited by hand into what no command writes (a negative period or budget, a
/// window that does not parse): `catalog due` and `audit --policy` refuse it (exit
/// 2) naming the catalog and how to set a new one; `catalog policy --every` replaces it whole
/// (before, it refused to, and only `--clear` could).
#[test]
fn a_policy_row_edited_into_nonsense_is_named_and_replaced() {
    let d = Dir::new();
    collection(&d, 1);
    let p = |args: &[&str]| {
        at(
            &d,
            T0,
            &[&["catalog", "policy", "-c", "cat.db"], args].concat(),
        )
    };
    at(&d, T0, &["audit", "t", "-c", "cat.db", "-q"]).code(0);
    if !crate::util::python_with(&["sqlite3"]) {
        return;
    }
    for edit in ["every = -5", "max_bytes = -1", "window = '9-9'"] {
        p(&["--every", "1d", "--window", "01:00-06:00"]).code(0);
        let _: Value = crate::util::python_json(
            &d,
            &format!(
                "import sqlite3, sys\n\
                 c = sqlite3.connect(sys.argv[1]); c.execute(\"UPDATE policy SET {edit}\"); c.commit()\n\
                 print('null')"
            ),
            "cat.db",
        );
        for cmd in [
            &["catalog", "due", "-c", "cat.db"][..],
            &["audit", "t", "-c", "cat.db", "--policy"],
        ] {
            at(&d, T0, cmd)
                .code(2)
                .stderr_has("cat.db: the catalog's policy is not valid")
                .stderr_has("`trawl catalog policy -c cat.db --every 90d`");
        }
        p(&["--max-time", "1h"]).code(2).stderr_has("not valid");
        p(&["--every", "30d"])
            .code(0)
            .stderr_has("replaced by the values given");
        let v: Value = serde_json::from_str(&p(&["--json"]).stdout).unwrap();
        assert_eq!(
            v["policy"],
            serde_json::json!({"every_seconds": 30 * DAY, "max_bytes": null,
                "max_time_seconds": null, "window": null, "window_zone": "local"}),
            "{edit}"
        );
    }
}

/// `audit --policy`: refused without a policy (exit 2) and with a mode that reads nothing;
/// outside its window it reads nothing, says so and exits 0 (no run is recorded); inside it
/// runs, the flags given winning over the policy's budget; the run's record names the policy.
#[test]
fn a_policy_audit_keeps_to_its_window_and_flags_win_over_its_budget() {
    let d = Dir::new();
    collection(&d, 20);
    at(&d, T0, &["audit", "t", "-c", "cat.db", "-q"]).code(0);
    let (r, _) = night(&d, T0 + DAY);
    r.code(2).stderr_has("cat.db: this catalog has no policy");
    at(
        &d,
        T0,
        &[
            "catalog",
            "policy",
            "-c",
            "cat.db",
            "--every",
            "1d",
            "--max-bytes",
            "1K",
            "--window",
            "22:00-06:00",
        ],
    )
    .code(0);
    at(
        &d,
        T0,
        &["audit", "t", "-c", "cat.db", "--policy", "--metadata-only"],
    )
    .code(2)
    .stderr_has("--policy reads the files that are due");
    // 2027-01-16 12:00 UTC: outside 22:00-06:00.
    let noon = T0 + DAY + 4 * 3600;
    let r = at(&d, noon, &["audit", "t", "-c", "cat.db", "--policy"]);
    r.code(0).stdout_has(
        "cat.db: outside the policy's window 22:00-06:00 (local time; it is 12:00): nothing read",
    );
    let report = at(&d, noon, &["catalog", "report", "-c", "cat.db"]);
    report.stdout_has("last audit: run 1 ");
    // 2027-01-17 02:00 UTC: inside; every file is due (a day old), the budget reads 1 KiB of them.
    let two = T0 + 2 * DAY - 6 * 3600;
    let r = at(&d, two, &["audit", "t", "-c", "cat.db", "--policy"]);
    r.code(0)
        .stdout_has("policy (every 1d): left for the next run: ");
    r.stderr_has("still due after this run (its budget ran out first)");
    // --max-bytes given wins: everything is read, nothing is left.
    let r = at(
        &d,
        two,
        &[
            "audit",
            "t",
            "-c",
            "cat.db",
            "--policy",
            "--max-bytes",
            "1G",
        ],
    );
    r.code(0).stdout_has("policy (every 1d): nothing left due");
    let h = at(&d, two, &["catalog", "report", "-c", "cat.db"]);
    h.stdout_has("last audit: run 3 ");
}

/// A verification later than now (one run under a clock gone wrong, a century ahead) vouches
/// for nothing: the file is due, listed first and read first, as one never verified, so a
/// file corrupted since is found by the next policy run within its budget (before, it was not
/// due for a century, and every policy run said nothing was left, exit 0).
#[test]
fn a_verification_from_the_future_leaves_the_file_due() {
    let d = Dir::new();
    let files = collection(&d, 4);
    let victim = files.keys().next().unwrap().clone();
    at(&d, T0, &["audit", "t", "-c", "cat.db", "-q"]).code(0);
    at(
        &d,
        T0,
        &["catalog", "policy", "-c", "cat.db", "--every", "30d"],
    )
    .code(0);
    // One file read (the first by path) under a clock a century ahead.
    let ahead = T0 + 36_500 * DAY;
    at(
        &d,
        ahead,
        &["audit", "t", "-c", "cat.db", "-q", "--max-bytes", "1"],
    )
    .code(0);
    flip_byte(&d.join("t").join(&victim), 10);
    let now = T0 + 40 * DAY;
    let due = at(&d, now, &["catalog", "due", "-c", "cat.db", "--json"]);
    let v: Value = serde_json::from_str(&due.code(0).stdout).unwrap();
    assert_eq!(v["totals"]["files"], 4, "{v}");
    let first = v["files"][0]["path"].as_str().unwrap();
    assert!(first.ends_with(&format!("t/{victim}")), "{v}");
    at(
        &d,
        now,
        &["audit", "t", "-c", "cat.db", "--policy", "--max-bytes", "1"],
    )
    .code(1)
    .stdout_has(&format!("corrupt     t/{victim}"));
}

/// A policy run not given one of the catalog's roots leaves that root's files due for ever:
/// it says so on stderr even with `-q` (as a scheduled run is), naming the root, while the
/// files stay due (`catalog due`); given every root, it reads them and says nothing.
#[test]
fn a_policy_run_not_given_every_root_says_so_even_quiet() {
    let d = Dir::new();
    d.create(b"t/a", b"a");
    d.create(b"u/b", b"b");
    at(&d, T0, &["audit", "t", "u", "-c", "cat.db", "-q"]).code(0);
    at(
        &d,
        T0,
        &["catalog", "policy", "-c", "cat.db", "--every", "30d"],
    )
    .code(0);
    let r = at(
        &d,
        T0 + 40 * DAY,
        &["audit", "t", "-c", "cat.db", "--policy", "-q"],
    );
    let u = std::fs::canonicalize(d.join("u")).unwrap();
    r.code(0)
        .stderr_has("1 files (1 B) due, and this run was not given the catalog's root ")
        .stderr_has(&format!("root {}:", u.display()));
    let due = at(
        &d,
        T0 + 40 * DAY,
        &["catalog", "due", "-c", "cat.db", "--json"],
    );
    let v: Value = serde_json::from_str(&due.code(0).stdout).unwrap();
    assert_eq!(v["files"][0]["path"], u.join("b").to_str().unwrap(), "{v}");
    let r = at(
        &d,
        T0 + 41 * DAY,
        &["audit", "t", "u", "-c", "cat.db", "--policy", "-q"],
    );
    r.code(0);
    assert_eq!(r.stderr, "");
}

/// TRAWL_NOW is a plain integer or refused (exit 2), before anything is opened.
#[test]
fn trawl_now_must_be_a_plain_integer() {
    let d = Dir::new();
    let mut c = d.cmd().args(["catalog", "report", "-c", "cat.db"]);
    c.cmd.env("TRAWL_NOW", "12abc");
    c.run()
        .code(2)
        .stderr_has("TRAWL_NOW='12abc': not a plain integer");
}

/// TRAWL_NOW past the last second RFC 3339 writes (9999-12-31T23:59:59Z, as `date -u -d
/// @253402300799` prints it) is refused (exit 2), not recorded to make every later command
/// that prints it panic; that last second itself is taken.
#[test]
fn trawl_now_stops_where_rfc_3339_does() {
    let d = Dir::new();
    collection(&d, 1);
    at(&d, T0, &["audit", "t", "-c", "cat.db", "-q"]).code(0);
    at(
        &d,
        T0,
        &["catalog", "policy", "-c", "cat.db", "--every", "1d"],
    )
    .code(0);
    for late in [253_402_300_800, i64::MAX] {
        at(&d, late, &["audit", "t", "-c", "cat.db", "-q"])
            .code(2)
            .stderr_has("not a plain integer up to 253402300799");
        at(&d, late, &["catalog", "due", "-c", "cat.db"]).code(2);
    }
    at(&d, 253_402_300_799, &["catalog", "due", "-c", "cat.db"])
        .code(0)
        .stdout_has("1 files (");
    at(&d, 253_402_300_799, &["catalog", "due", "-c", "cat.db"])
        .stdout_has("(as of 9999-12-31T23:59:59Z)");
}

/// A policy audit that finds the catalog held by another audit reads nothing and exits 0,
/// saying so; a plain audit is refused (exit 2) as before.
#[test]
fn a_policy_audit_leaves_a_busy_catalog_to_the_audit_at_work() {
    use std::os::fd::AsRawFd;
    let d = Dir::new();
    collection(&d, 3);
    at(&d, T0, &["audit", "t", "-c", "cat.db", "-q"]).code(0);
    at(
        &d,
        T0,
        &["catalog", "policy", "-c", "cat.db", "--every", "1d"],
    )
    .code(0);
    let held = std::fs::File::open(d.join("cat.db")).unwrap();
    // SAFETY: flock on a descriptor this test owns; released when `held` closes.
    let locked = unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    assert_eq!(locked, 0);
    at(
        &d,
        T0 + 2 * DAY,
        &["audit", "t", "-c", "cat.db", "--policy"],
    )
    .code(0)
    .stderr_has("catalog is in use by pid");
    at(&d, T0 + 2 * DAY, &["audit", "t", "-c", "cat.db"])
        .code(2)
        .stderr_has("catalog is in use by pid");
    drop(held);
    at(
        &d,
        T0 + 2 * DAY,
        &["audit", "t", "-c", "cat.db", "--policy"],
    )
    .code(0)
    .stdout_has("nothing left due");
}

/// A policy audit's `--metrics` carries the files still due after it (what `catalog due`
/// lists), and a policy run that reads nothing (outside its window) leaves the last run's
/// metrics as they were.
#[test]
fn a_policy_audits_metrics_count_the_files_left_due() {
    let d = Dir::new();
    let files = collection(&d, 10);
    at(&d, T0, &["audit", "t", "-c", "cat.db", "-q"]).code(0);
    let smallest = *files.values().min().unwrap();
    at(
        &d,
        T0,
        &[
            "catalog",
            "policy",
            "-c",
            "cat.db",
            "--every",
            "1d",
            "--max-bytes",
            &smallest.to_string(),
        ],
    )
    .code(0);
    let now = T0 + 2 * DAY;
    at(
        &d,
        now,
        &[
            "audit",
            "t",
            "-c",
            "cat.db",
            "--policy",
            "-q",
            "--metrics",
            "m.prom",
        ],
    )
    .code(0);
    let due = at(&d, now, &["catalog", "due", "-c", "cat.db", "--json"]);
    let v: Value = serde_json::from_str(&due.stdout).unwrap();
    let left = v["totals"]["files"].as_u64().unwrap();
    assert!(left > 0 && left < files.len() as u64, "{left}");
    let m = std::fs::read_to_string(d.join("m.prom")).unwrap();
    let line = m
        .lines()
        .find(|l| l.starts_with("trawl_audit_files_due{"))
        .unwrap_or_else(|| panic!("no files_due gauge:\n{m}"));
    assert!(line.ends_with(&format!(" {left}")), "{line}");
    // Outside its window the run reads nothing: the metrics file is the last run's.
    at(
        &d,
        now,
        &[
            "catalog",
            "policy",
            "-c",
            "cat.db",
            "--window",
            "01:00-02:00",
        ],
    )
    .code(0);
    at(
        &d,
        now,
        &[
            "audit",
            "t",
            "-c",
            "cat.db",
            "--policy",
            "-q",
            "--metrics",
            "m.prom",
        ],
    )
    .code(0);
    assert_eq!(std::fs::read_to_string(d.join("m.prom")).unwrap(), m);
}
