//! The catalog's HTML page: every run, the files that want attention, the chain head, and the
//! chart of what changed.

use std::process::Command;

use crate::report::audited;
use crate::util::{Dir, python_with, tool};

#[test]
fn the_catalog_page_shows_every_run_the_files_that_want_attention_and_the_chain_head() {
    let Some(sqlite3) = tool("sqlite3") else {
        return;
    };
    let d = Dir::new();
    audited(&d);
    d.cmd()
        .args(["catalog", "report", "-c", "cat.db", "--html", "cat.html"])
        .run()
        .code(0);
    let html = std::fs::read_to_string(d.join("cat.html")).unwrap();
    // The pages differ only in their "as of" time; only that one is replaced (the runs'
    // start times may be the same second as either).
    let audit_html = std::fs::read_to_string(d.join("audit.html")).unwrap();
    assert_eq!(
        html,
        audit_html.replacen(
            &format!("as of {} UTC", between(&audit_html, "as of ", " UTC")),
            &format!("as of {} UTC", between(&html, "as of ", " UTC")),
            1
        ),
        "audit --html writes the catalog's page"
    );
    for fetch in ["http:", "https:", "src=", "url("] {
        assert!(
            !html.contains(fetch),
            "the page would fetch something: {fetch}"
        );
    }
    // The verdicts of each run, as the catalog's own tables hold them (read with sqlite3).
    let q = |sql: &str| {
        let o = Command::new(&sqlite3)
            .arg(d.join("cat.db"))
            .arg(sql)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let rows = q(
        "SELECT id, n_ok, n_corrupt, n_modified, n_missing, n_new, n_moved, n_unreadable FROM runs ORDER BY id",
    );
    let start = html.find("id=\"runs\"").unwrap();
    let svg = &html[start..start + html[start..].find("</svg>").unwrap()];
    for line in rows.lines() {
        let f: Vec<&str> = line.split('|').collect();
        for (state, n) in [
            "ok",
            "corrupt",
            "modified",
            "missing",
            "new",
            "moved",
            "unreadable",
        ]
        .iter()
        .zip(&f[1..])
        {
            let mark = format!(
                r##"data-bar="#{}" data-series="{state}" data-value="{n}""##,
                f[0]
            );
            assert_eq!(
                svg.contains(&mark),
                *n != "0",
                "run {} {state} {n}:\n{svg}",
                f[0]
            );
        }
    }
    assert!(
        rows.lines().nth(1).unwrap().ends_with("|1|0|1|1|0|0"),
        "{rows}"
    );
    // The files that want attention are named.
    let problems = &html[html.find("id=\"problems\"").unwrap()..];
    assert!(problems.contains("t/b/big.bin") && problems.contains("corrupt"));
    assert!(problems.contains("t/b/alone") && problems.contains("missing"));
    // The chain head is the last sealed run's digest.
    let head = q(
        "SELECT lower(hex(chain_digest)) FROM runs WHERE chain_digest IS NOT NULL ORDER BY id DESC LIMIT 1",
    );
    assert!(html.contains(&format!(r#"<code id="chain-head">{}</code>"#, head.trim())));
    // Every present file was verified today.
    let present = q("SELECT count(*) FROM files WHERE present = 1");
    assert!(
        html.contains(&format!(
            r#"data-age="&lt; 1 day" data-files="{}""#,
            present.trim()
        )),
        "{present}"
    );
}

/// The text between two markers.
fn between(s: &str, a: &str, b: &str) -> String {
    let i = s.find(a).unwrap() + a.len();
    s[i..i + s[i..].find(b).unwrap()].to_string()
}

/// A catalog registered with thousands of files, then a run with a few events: in chromium at
/// 1280 px, the chart of what changed shows that run's bar at a readable height, and the runs
/// table fits the page.
#[test]
fn the_catalog_chart_of_what_changed_is_not_scaled_by_the_registration() {
    let (Some(chromium), true) = (tool("chromium"), python_with(&["playwright"])) else {
        return;
    };
    let d = Dir::new();
    for i in 0..3000 {
        d.create(format!("t/d{}/f{i}", i % 30).as_bytes(), b"x");
    }
    d.cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .run()
        .code(0);
    std::fs::remove_file(d.join("t/d0/f0")).unwrap();
    d.create(b"t/new.txt", b"new");
    d.cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .run()
        .code(1);
    d.cmd()
        .args(["catalog", "report", "-c", "cat.db", "--html", "cat.html"])
        .run()
        .code(0);
    let html = std::fs::read_to_string(d.join("cat.html")).unwrap();
    assert!(
        html.contains("#1 (3000 new paths)"),
        "the left-out run is named"
    );
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/check_catalog.py");
    let o = Command::new("python3")
        .arg(&script)
        .arg(&chromium)
        .arg(d.join("cat.html"))
        .arg("2")
        .arg("60")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && stdout.contains("ok"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The page shows the collection's policy and the files due under it: a note before one is
/// set; then its period, budget and window, and the files not verified within the period at
/// the clock's time (`TRAWL_NOW`), named, counted here from when each was registered.
#[test]
fn the_catalog_page_shows_the_policy_and_the_files_due_under_it() {
    use crate::audit_policy::{DAY, T0};
    let d = Dir::new();
    let at = |now: i64, args: &[&str]| crate::audit_policy::at(&d, now, args);
    let page = |now: i64| {
        at(
            now,
            &["catalog", "report", "-c", "cat.db", "--html", "p.html"],
        )
        .code(0);
        std::fs::read_to_string(d.join("p.html")).unwrap()
    };
    // Three files registered at T0, a fourth at T0 + 20 days (by an audit that reads only
    // what is new or not verified within 30 days: the first three stay verified at T0).
    let mut registered = Vec::new();
    for (i, when) in [T0, T0, T0, T0 + 20 * DAY].into_iter().enumerate() {
        d.create(format!("t/f{i}").as_bytes(), b"some bytes\n");
        at(
            when,
            &["audit", "t", "-c", "cat.db", "-q", "--older-than", "30d"],
        )
        .code(0);
        registered.push((format!("t/f{i}"), when));
    }
    assert!(page(T0 + 31 * DAY).contains("None: no audit period is set."));
    at(
        T0 + 31 * DAY,
        &[
            "catalog",
            "policy",
            "-c",
            "cat.db",
            "--every",
            "30d",
            "--max-bytes",
            "1M",
            "--window",
            "01:00-05:00",
        ],
    )
    .code(0);
    let html = page(T0 + 31 * DAY);
    assert!(
        html.contains(
            "Every file read at least every 30 days; at most 1.0 MiB a run; runs start 01:00-05:00 (local time)."
        ),
        "{html}"
    );
    let due: Vec<&str> = registered
        .iter()
        .filter(|(_, when)| *when < T0 + DAY)
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(due.len(), 3);
    assert!(
        html.contains(&format!("<p id=\"due\"><strong>{}</strong>", due.len())),
        "{html}"
    );
    let table = &html[html.find("id=\"due\"").unwrap()..];
    for name in &due {
        assert!(table.contains(&format!("{name}<")), "{name} listed");
    }
    assert!(!table.contains("t/f3<"), "verified 11 days ago: not due");
}

/// Names that are not UTF-8, and one equal to them after lossy decoding, are told apart on the
/// catalog's page (in the files due and in the files that want attention) and on a scan's page
/// (its entries skipped), as the bytes they are.
#[test]
fn names_equal_after_lossy_decoding_are_told_apart_on_the_pages() {
    use crate::audit_policy::{DAY, T0};
    let d = Dir::new();
    let at = |now: i64, args: &[&str]| crate::audit_policy::at(&d, now, args);
    let names: [&[u8]; 3] = [b"t/a\xff", b"t/a\xfe", "t/a\u{fffd}".as_bytes()];
    for n in names {
        d.create(n, b"some bytes\n");
    }
    // Each name as the page should show it (after the catalog's absolute directory): the bytes
    // that are not UTF-8 as \xNN.
    let shown = [
        r"t/a\xff (not UTF-8)".to_string(),
        r"t/a\xfe (not UTF-8)".to_string(),
        "t/a\u{fffd}".to_string(),
    ];
    // The catalog's page at `now`, from its table `id` on.
    let table = |now: i64, id: &str| {
        at(
            now,
            &["catalog", "report", "-c", "cat.db", "--html", "p.html"],
        )
        .code(0);
        let html = std::fs::read_to_string(d.join("p.html")).unwrap();
        html[html.find(&format!("id=\"{id}\"")).unwrap()..].to_string()
    };
    at(T0, &["audit", "t", "-c", "cat.db", "-q"]).code(0);
    at(T0, &["catalog", "policy", "-c", "cat.db", "--every", "30d"]).code(0);
    let due = table(T0 + 31 * DAY, "due");
    for s in &shown {
        assert!(
            due.contains(&format!("/{s}<")),
            "{s} among the files due: {due}"
        );
    }
    // All three gone: each named apart among the files that want attention.
    std::fs::remove_dir_all(d.join("t")).unwrap();
    std::fs::create_dir(d.join("t")).unwrap();
    at(T0 + 32 * DAY, &["audit", "t", "-c", "cat.db", "-q"]).code(1);
    let problems = table(T0 + 32 * DAY, "problems");
    for s in &shown {
        assert!(
            problems.contains(&format!("/{s}<")),
            "{s} missing: {problems}"
        );
    }
    // A scan's page: the same names as FIFOs, each skipped and named apart.
    std::fs::create_dir(d.join("u")).unwrap();
    for n in names {
        use std::os::unix::ffi::OsStrExt;
        let ok = Command::new("mkfifo")
            .arg(d.join("u").join(std::ffi::OsStr::from_bytes(&n[2..])))
            .status()
            .unwrap();
        assert!(ok.success());
    }
    d.cmd()
        .args(["scan", "u", "-q", "--html", "s.html"])
        .run()
        .code(0);
    let html = std::fs::read_to_string(d.join("s.html")).unwrap();
    let skipped = &html[html.find("-skipped\"").unwrap()..];
    for s in &shown {
        let s = s.replacen("t/", "u/", 1);
        assert!(
            skipped.contains(&format!(">{s}<")),
            "{s} skipped: {skipped}"
        );
    }
}
