//! A device that fails to deliver a file's bytes (EIO, from a device-mapper target switched to
//! failing): the scan, the audit, `flv index` and `serve` each name the I/O error as one, count
//! nothing from the failed file, and go on with the rest.

use crate::util::*;

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
