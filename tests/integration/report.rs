//! Reports for people and for other tools: the HTML page (`--html`, `trawl report`), and the
//! duplicate groups in fclones' format (`--duplicates`), checked against a few lines of Python
//! and against fclones itself.

use std::collections::BTreeSet;
use std::process::Command;

use crate::util::{Dir, mkfifo, python_json, python_with, tool};

/// A tree with copies in other directories, a hard link, an empty file and a file of its own.
fn tree(d: &Dir) {
    let big: Vec<u8> = (0..100_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    d.create(b"t/a/x.txt", b"hello world\n");
    d.create(b"t/b/x copy.txt", b"hello world\n");
    d.create(b"t/a/sub/x3.txt", b"hello world\n");
    std::fs::hard_link(d.join("t/a/x.txt"), d.join("t/a/x-link.txt")).unwrap();
    d.create(b"t/b/big.bin", &big);
    d.create(b"t/a/big2.bin", &big);
    d.create(b"t/a/empty", b"");
    d.create(b"t/b/empty too", b"");
    d.create(b"t/b/alone", b"nobody else");
}

/// A JSON file the test made.
fn read_json(d: &Dir, name: &str) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(d.join(name)).unwrap()).unwrap()
}

/// One field of every element of a JSON array, as JSON writes it.
fn column(rows: &serde_json::Value, key: &str) -> Vec<String> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|x| x[key].to_string())
        .collect()
}

/// Groups as sets of names, from fclones' text format (group headers, then indented names).
fn groups_of_text(text: &str) -> BTreeSet<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    let mut cur: Option<BTreeSet<String>> = None;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        if let Some(name) = line.strip_prefix("    ") {
            cur.as_mut().unwrap().insert(name.to_string());
        } else {
            out.extend(cur.take());
            cur = Some(BTreeSet::new());
        }
    }
    out.extend(cur);
    out
}

#[test]
fn duplicates_are_groups_of_equal_content_one_name_per_inode_without_empty_files() {
    if !python_with(&["hashlib"]) {
        return;
    }
    let d = Dir::new();
    tree(&d);
    d.cmd()
        .args([
            "scan",
            "t",
            "-q",
            "--duplicates",
            "dups.txt",
            "--json",
            "r.json",
        ])
        .run()
        .code(0);
    let text = std::fs::read_to_string(d.join("dups.txt")).unwrap();
    assert!(text.starts_with("# Report by fclones "), "{text}");
    // The groups as a few lines of Python find them: by size and SHA-256, one name per inode
    // (the first by name), empty files left out.
    let py = r#"
import hashlib, os, sys, json
root = os.path.abspath(sys.argv[1]); seen = {}; groups = {}
for dp, dn, fn in os.walk(root):
    for f in fn:
        p = os.path.join(dp, f); st = os.stat(p)
        if st.st_size == 0: continue
        k = (st.st_size, hashlib.sha256(open(p, 'rb').read()).hexdigest())
        groups.setdefault(k, {}).setdefault((st.st_dev, st.st_ino), []).append(p)
out = [sorted(min(v) for v in g.values()) for g in groups.values() if len(g) > 1]
print(json.dumps(out))
"#;
    let want: Vec<Vec<String>> = python_json(&d, py, "t");
    let want: BTreeSet<BTreeSet<String>> =
        want.into_iter().map(|g| g.into_iter().collect()).collect();
    assert_eq!(groups_of_text(&text), want, "{text}");
    assert_eq!(want.len(), 2);
    // The report's summary counts the same.
    let r: serde_json::Value = read_json(&d, "r.json");
    let s = &r["duplicates"];
    assert_eq!(s["groups"], 2);
    assert_eq!(s["files"], 5);
    assert_eq!(s["redundant_files"], 3);
    assert_eq!(s["redundant_bytes"], 100_000 + 2 * 12);
    assert_eq!(s["algorithm"], "sha256");
    assert_eq!(s["top"][0]["size"], 100_000);
}

#[test]
fn the_terminal_summary_says_what_duplicates_were_found() {
    let d = Dir::new();
    tree(&d);
    // The same figures as the report's (2 groups, 5 files, 3 redundant), said on the terminal.
    let r = d
        .cmd()
        .args(["scan", "t", "--duplicates", "dups.txt", "--json", "r.json"])
        .run();
    r.code(0);
    r.stdout_has("duplicates: 2 groups of identical files (5 files), ");
    r.stdout_has(" redundant in 3 files (by sha256)");
    // Two directories of the same files: a group of duplicate directories.
    for dir in ["u/c1", "u/c2"] {
        d.create(format!("{dir}/p").as_bytes(), b"pp");
        d.create(format!("{dir}/q").as_bytes(), b"qqq");
    }
    let r = d.cmd().args(["scan", "u", "--json", "u.json"]).run();
    r.code(0);
    r.stdout_has("duplicate directories: 1 group (in the JSON and HTML reports)");
    // Without --duplicates, nothing is said of duplicate files.
    let r = d.cmd().args(["scan", "t"]).run();
    r.code(0);
    assert!(!r.stdout.contains("duplicates:"), "{}", r.stdout);
}

#[test]
fn duplicates_need_a_digest_that_can_tell_files_apart() {
    let d = Dir::new();
    tree(&d);
    d.cmd()
        .args(["scan", "t", "-d", "crc32c", "--duplicates", "dups.txt"])
        .run()
        .code(2)
        .stderr_has("--duplicates compares files by a digest of 128 bits or more");
    assert!(!d.join("dups.txt").exists());
}

#[test]
fn fclones_reads_the_duplicates_report_in_both_formats() {
    let Some(fclones) = tool("fclones") else {
        return;
    };
    let d = Dir::new();
    tree(&d);
    d.cmd()
        .args(["scan", "t", "-q", "--duplicates", "dups.txt"])
        .run()
        .code(0);
    d.cmd()
        .args([
            "scan",
            "t",
            "-q",
            "--duplicates",
            "dups.json",
            "-d",
            "blake3",
        ])
        .run()
        .code(0);
    for report in ["dups.txt", "dups.json"] {
        let input = std::fs::File::open(d.join(report)).unwrap();
        let o = Command::new(&fclones)
            .args(["link", "--dry-run"])
            .current_dir(d.path())
            .stdin(input)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{report}: {stdout}\n{stderr}");
        // Each redundant copy would be replaced by a link to the group's first file.
        let abs = d.path().canonicalize().unwrap();
        for copy in ["t/a/big2.bin", "t/b/x copy.txt", "t/a/sub/x3.txt"] {
            let p = abs.join(copy).display().to_string();
            assert!(
                stdout.contains(&p),
                "{report}: {p} not in\n{stdout}\n{stderr}"
            );
        }
        assert!(
            !stdout.contains("alone") && !stdout.contains("empty"),
            "{stdout}"
        );
    }
    // Nothing was changed.
    assert_eq!(
        std::fs::read(d.join("t/b/x copy.txt")).unwrap(),
        b"hello world\n"
    );
}

/// The `data-{attr}` values of the marks (elements of class `mark`) in the SVG with this id, in
/// order, of the marks that have it.
fn marks(html: &str, id: &str, attr: &str) -> Vec<String> {
    let start = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no chart {id}"));
    let svg = &html[start..start + html[start..].find("</svg>").unwrap()];
    let key = format!("data-{attr}=\"");
    svg.split("class=\"mark")
        .skip(1)
        .filter_map(|m| {
            let mark = &m[..m.find('>').unwrap()];
            let at = mark.find(&key)? + key.len();
            Some(mark[at..at + mark[at..].find('"').unwrap()].to_string())
        })
        .collect()
}

#[test]
fn the_html_report_is_one_offline_file_whose_charts_carry_the_json_figures() {
    let d = Dir::new();
    tree(&d);
    d.cmd()
        .args([
            "scan",
            "t",
            "-q",
            "--json",
            "r.json",
            "--html",
            "r.html",
            "--duplicates",
            "d.txt",
            "--cdc",
            "8k",
            "--compress",
            "lz4,zstd:3",
        ])
        .run()
        .code(0);
    let html = std::fs::read_to_string(d.join("r.html")).unwrap();
    let r: serde_json::Value = read_json(&d, "r.json");
    assert!(html.starts_with("<!DOCTYPE html>"));
    for fetch in ["http:", "https:", "src=", "@import", "url("] {
        assert!(
            !html.contains(fetch),
            "the page would fetch something: {fetch}"
        );
    }
    let red = &r["reduction"];
    let dedup = red["dedup"].as_array().unwrap();
    let sizes: Vec<String> = dedup.iter().map(|x| x["block_size"].to_string()).collect();
    assert_eq!(marks(&html, "r0-dedup", "block-size"), sizes);
    assert_eq!(marks(&html, "r0-dedup", "avg-size"), ["8192"]);
    let ratios: Vec<f64> = dedup.iter().map(|x| x["ratio"].as_f64().unwrap()).collect();
    let drawn: Vec<f64> = marks(&html, "r0-dedup", "ratio")
        .iter()
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(drawn[..ratios.len()], ratios[..]);
    assert_eq!(
        drawn[ratios.len()],
        red["cdc"]["ratio"].as_f64().unwrap(),
        "the CDC point follows the fixed sizes"
    );
    let refs: Vec<String> = column(&dedup[0]["references"], "blocks");
    assert_eq!(marks(&html, "r0-refs", "blocks"), refs);
    let comp: Vec<String> = red["compression"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| {
            ["logical_bytes", "compressed_bytes", "allocated_bytes"].map(|k| c[k].to_string())
        })
        .collect();
    assert_eq!(marks(&html, "r0-compression", "bytes"), comp);
    let files: Vec<String> = column(&r["file_sizes"], "files");
    assert_eq!(marks(&html, "r0-file-sizes", "files"), files);
    let total: u64 = files.iter().map(|f| f.parse::<u64>().unwrap()).sum();
    assert_eq!(total, r["totals"]["files"].as_u64().unwrap());
    let chunks: Vec<String> = column(&red["cdc"]["chunk_sizes"], "chunks");
    assert_eq!(marks(&html, "r0-chunks", "chunks"), chunks);
    let b = &r["breakdown"];
    let dir_bytes: Vec<String> = column(&b["directories"], "bytes");
    assert_eq!(marks(&html, "r0-dirs-map", "bytes"), dir_bytes);
    let type_bytes: Vec<String> = column(&b["types"], "bytes");
    assert_eq!(marks(&html, "r0-types-chart", "bytes"), type_bytes);
    assert!(html.contains(r#"id="r0-dirs""#) && html.contains(r#"id="r0-types""#));
    assert!(html.contains(r#"data-redundant-bytes="100024""#));
    assert!(
        html.contains("t/a/big2.bin"),
        "top files and duplicate groups are named"
    );
}

#[test]
fn trawl_report_draws_saved_reports_side_by_side_and_names_a_file_it_cannot_read() {
    let d = Dir::new();
    tree(&d);
    d.cmd()
        .args(["scan", "t", "-q", "--json", "a.json"])
        .run()
        .code(0);
    d.create(b"t/b/new.bin", &[7u8; 50_000]);
    d.cmd()
        .args(["scan", "t", "-q", "--json", "b.json", "--no-reduce"])
        .run()
        .code(0);
    d.cmd()
        .args(["report", "a.json", "b.json", "--html", "ab.html"])
        .run()
        .code(0);
    let html = std::fs::read_to_string(d.join("ab.html")).unwrap();
    assert!(html.contains(r#"id="compare""#) && html.contains(r#"id="r1""#));
    assert!(html.contains("a.json") && html.contains("b.json"));
    assert!(html.contains("No data reduction was measured"));
    // Reports made with other codecs are compared in columns named for them, not under one
    // word.
    d.cmd()
        .args([
            "scan",
            "t",
            "-q",
            "--json",
            "c.json",
            "--compress",
            "zstd:3",
        ])
        .run()
        .code(0);
    d.cmd()
        .args(["report", "a.json", "c.json", "--html", "ac.html"])
        .run()
        .code(0);
    let html = std::fs::read_to_string(d.join("ac.html")).unwrap();
    let compare = &html[html.find(r#"id="compare""#).unwrap()..];
    let compare = &compare[..compare.find("</table>").unwrap()];
    for head in [
        "<th>dedup at 4K</th>",
        "<th>dedup + lz4</th>",
        "<th>dedup + zstd-3</th>",
    ] {
        assert!(compare.contains(head), "{head} in {compare}");
    }
    assert!(!compare.contains("<th>combined</th>"), "{compare}");
    // The same page as the scan's own, for one report.
    d.cmd()
        .args(["report", "a.json", "--html", "a.html"])
        .run()
        .code(0);
    let one = std::fs::read_to_string(d.join("a.html")).unwrap();
    assert_eq!(
        marks(&one, "r0-dedup", "ratio"),
        marks(&html, "r0-dedup", "ratio")
    );
    d.create(b"not.json", b"{\"schema_version\": 2, \"run\": 1}");
    d.cmd()
        .args(["report", "a.json", "not.json", "--html", "x.html"])
        .run()
        .code(2)
        .stderr_has("not.json: not a scan report");
    assert!(!d.join("x.html").exists(), "no half-made page is left");
}

#[test]
fn the_pages_load_in_chromium_with_no_error_or_request_and_their_tables_sort() {
    let (Some(chromium), true) = (tool("chromium"), python_with(&["playwright"])) else {
        return;
    };
    let d = Dir::new();
    audited(&d);
    // Types a page has to fit: a library with its version after the extension, scripts with
    // a `#!` line and without (one type, two formats), long format names.
    let mut elf = b"\x7fELF\x02\x01\x01".to_vec();
    elf.resize(5000, 3);
    d.create(b"t/lib/libfoo.so.1.0.199", &elf);
    d.create(b"t/lib/run.py", b"#!/usr/bin/env python3\nprint(1)\n");
    d.create(b"t/lib/mod.py", b"x = 1\n");
    let mut cab = b"MSCF\0\0\0\0".to_vec();
    cab.resize(3000, 9);
    d.create(b"t/lib/setup.cab", &cab);
    d.create(b"t/lib/movie.swf", b"FWS\x0a aaaaaaaaaaaaaaaaaaaaaaaaa");
    d.cmd()
        .args([
            "scan",
            "t",
            "-q",
            "--json",
            "r.json",
            "--html",
            "r.html",
            "--duplicates",
            "d.txt",
            "--compress",
            "lz4,zstd:3",
        ])
        .run()
        .code(0);
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/check_report.py");
    for (html, json, shot) in [
        ("r.html", "r.json", "scan.png"),
        ("audit.html", "-", "catalog.png"),
    ] {
        let shot = shots.join(shot);
        let json = if json == "-" {
            json.into()
        } else {
            d.join(json)
        };
        let o = Command::new("python3")
            .arg(&script)
            .arg(&chromium)
            .arg(d.join(html))
            .arg(json)
            .arg(&shot)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{html}: {stdout}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(stdout.contains("ok"));
        assert!(
            std::fs::metadata(&shot).unwrap().len() > 10_000,
            "a screenshot was taken"
        );
        eprintln!("screenshot: {}", shot.display());
    }
}

/// Files of an ncdu export: path below the root -> (asize, dsize, hard-link flag).
fn ncdu_files(v: &serde_json::Value) -> std::collections::BTreeMap<String, (u64, u64, bool)> {
    fn walk(
        dir: &[serde_json::Value],
        at: &str,
        out: &mut std::collections::BTreeMap<String, (u64, u64, bool)>,
    ) {
        for item in &dir[1..] {
            match item {
                serde_json::Value::Array(sub) => {
                    let name = sub[0]["name"].as_str().unwrap();
                    walk(sub, &format!("{at}{name}/"), out);
                }
                f => {
                    let n = |k: &str| f[k].as_u64().unwrap_or(0);
                    out.insert(
                        format!("{at}{}", f["name"].as_str().unwrap()),
                        (n("asize"), n("dsize"), f["hlnkc"] == true),
                    );
                }
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(v[3].as_array().unwrap(), "", &mut out);
    out
}

#[test]
fn ncdu_reads_the_export_and_finds_the_tree_its_own_scan_finds() {
    let Some(ncdu) = tool("ncdu") else {
        return;
    };
    let d = Dir::new();
    tree(&d);
    d.create(b"t/deep/er/still/f \"q\".txt", &[1u8; 9000]);
    d.cmd()
        .args(["scan", "t", "-q", "--ncdu", "t.ncdu"])
        .run()
        .code(0);
    // ncdu imports trawl's export and writes it out again (it would refuse a malformed one);
    // its own scan of the same tree is the reference.
    let run = |args: &[&str]| {
        let o = Command::new(&ncdu)
            .args(args)
            .current_dir(d.path())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "ncdu {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    run(&["-f", "t.ncdu", "-o", "again.json"]);
    run(&["-o", "ref.json", "t"]);
    let (again, reference) = (read_json(&d, "again.json"), read_json(&d, "ref.json"));
    assert_eq!(
        again[3][0]["name"].as_str().unwrap(),
        d.path().canonicalize().unwrap().join("t").to_str().unwrap()
    );
    assert_eq!(ncdu_files(&again), ncdu_files(&reference));
    assert_eq!(ncdu_files(&again).len(), 10);
    d.cmd()
        .args(["scan", "t/a", "t/b", "--ncdu", "x.ncdu"])
        .run()
        .code(2)
        .stderr_has("--ncdu exports one directory");
}

#[test]
fn breakdowns_add_up_name_formats_and_find_the_equal_directories_python_finds() {
    if !python_with(&["hashlib"]) {
        return;
    }
    let d = Dir::new();
    tree(&d);
    // Copies of whole directories, and files whose first bytes name their format.
    for f in ["x.txt", "big2.bin", "sub/x3.txt", "empty"] {
        let from = std::fs::read(d.join(format!("t/a/{f}"))).unwrap();
        d.create(format!("t/c/a-copy/{f}").as_bytes(), &from);
    }
    d.create(b"t/c/a-copy/x-link.txt", b"hello world\n");
    d.create(b"t/b/sub2/x3.txt", b"hello world\n");
    d.create(
        b"t/photo.JPG",
        &[
            0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, b'J', b'F', b'I', b'F', 0, 1,
        ],
    );
    d.create(
        b"t/b/log.gz",
        &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3],
    );
    d.cmd()
        .args(["scan", "t", "-q", "--json", "r.json", "--depth", "1"])
        .run()
        .code(0);
    let r: serde_json::Value = read_json(&d, "r.json");
    let b = &r["breakdown"];
    assert_eq!(b["depth"], 1);
    let dirs: Vec<&str> = b["directories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["path"].as_str().unwrap())
        .collect();
    let mut sorted_dirs = dirs.clone();
    sorted_dirs.sort();
    assert_eq!(sorted_dirs, ["t/", "t/a/", "t/b/", "t/c/"]);
    // Every file is in one directory row and one type row; a hard link's second name in none.
    let sum = |rows: &serde_json::Value, k: &str| -> u64 {
        rows.as_array()
            .unwrap()
            .iter()
            .map(|x| x[k].as_u64().unwrap())
            .sum()
    };
    let links = r["reduction"]["hardlinks"]["names"].as_u64().unwrap();
    assert_eq!(links, 1);
    let files = r["totals"]["files"].as_u64().unwrap() - links;
    assert_eq!(sum(&b["directories"], "files"), files);
    assert_eq!(sum(&b["types"], "files"), files);
    let bytes = r["totals"]["bytes"].as_u64().unwrap()
        - r["reduction"]["hardlinks"]["bytes"].as_u64().unwrap();
    assert_eq!(sum(&b["directories"], "bytes"), bytes);
    // The shares of the saving add up to what dedup saves at 4 KiB (each row rounded once).
    let d4 = &r["reduction"]["dedup"][0];
    let saved = d4["logical_bytes"].as_u64().unwrap()
        - d4["zero_bytes"].as_u64().unwrap()
        - d4["unique_bytes"].as_u64().unwrap();
    let shares = sum(&b["directories"], "saved_bytes");
    assert!(shares.abs_diff(saved) <= 4, "{shares} vs {saved}");
    let ty = |ext: &str| {
        b["types"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["extension"] == ext)
            .unwrap_or_else(|| panic!("no type {ext}"))
            .clone()
    };
    assert_eq!(ty("jpg")["format"], "image/jpeg");
    assert_eq!(ty("jpg")["compressed_format"], true);
    assert_eq!(ty("gz")["format"], "application/gzip");
    assert_eq!(ty("gz")["compressed_format"], true);
    assert_eq!(ty("txt")["compressed_format"], false);
    // Equal directories as a few lines of Python find them: a directory's signature is its
    // entries' names with their file digests or subdirectory signatures; a group whose
    // directories all sit in directories of a larger group is not listed.
    let py = r#"
import hashlib, os, sys, json
sig = {}; size = {}
for dp, dn, fn in os.walk(sys.argv[1], topdown=False):
    ents = []; n = 0
    for f in fn:
        p = os.path.join(dp, f)
        ents.append(('f', f, hashlib.sha256(open(p, 'rb').read()).hexdigest())); n += 1
    for s in dn:
        q = os.path.join(dp, s)
        if q in sig: ents.append(('d', s, sig[q])); n += size[q]
    if n: sig[dp] = hashlib.sha256(repr(sorted(ents)).encode()).hexdigest(); size[dp] = n
groups = {}
for p, s in sig.items(): groups.setdefault(s, []).append(p)
gs = sorted((sorted(g) for g in groups.values() if len(g) > 1), key=len)
out = [g for g in gs if not any(all(os.path.dirname(x) in h for x in g) for h in gs if h is not g)]
print(json.dumps(out))
"#;
    let want: BTreeSet<BTreeSet<String>> = python_json::<Vec<Vec<String>>>(&d, py, "t")
        .into_iter()
        .map(|g| g.into_iter().collect())
        .collect();
    let got: BTreeSet<BTreeSet<String>> = b["duplicate_directories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            g["directories"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap().to_string())
                .collect()
        })
        .collect();
    assert_eq!(got, want);
    assert!(
        got.iter()
            .any(|g| g.contains("t/a") && g.contains("t/c/a-copy")),
        "{got:?}"
    );
}

/// A collection audited three times: registered; one file corrupted and one deleted; again.
fn audited(d: &Dir) {
    tree(d);
    d.cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .run()
        .code(0);
    crate::audit::flip_byte(&d.join("t/b/big.bin"), 500);
    std::fs::remove_file(d.join("t/b/alone")).unwrap();
    d.create(b"t/new.txt", b"new");
    d.cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .run()
        .code(1);
    d.cmd()
        .args(["audit", "t", "-c", "cat.db", "-q", "--html", "audit.html"])
        .run()
        .code(1);
}

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

#[test]
fn sampled_figures_are_drawn_with_their_intervals() {
    let d = Dir::new();
    tree(&d);
    for i in 0..40u32 {
        let data: Vec<u8> = (0..20_000u32)
            .map(|j| (j.wrapping_mul(i + 7) >> 3) as u8)
            .collect();
        d.create(format!("t/s/{i}.bin").as_bytes(), &data);
    }
    d.cmd()
        .args([
            "scan", "t", "-q", "--json", "r.json", "--html", "r.html", "--sample", "0.5",
        ])
        .run()
        .code(0);
    let html = std::fs::read_to_string(d.join("r.html")).unwrap();
    let r: serde_json::Value = read_json(&d, "r.json");
    let dedup = r["reduction"]["dedup"].as_array().unwrap();
    assert!(dedup.iter().all(|x| x["sample"]["low"].is_u64()), "sampled");
    // One error bar per fixed size on the dedup curve, and one on each codec's allocated bar.
    let chart = |id: &str| {
        let start = html.find(&format!("id=\"{id}\"")).unwrap();
        html[start..start + html[start..].find("</svg>").unwrap()].to_string()
    };
    assert_eq!(
        chart("r0-dedup").matches("class=\"err\"").count(),
        dedup.len()
    );
    assert_eq!(chart("r0-compression").matches("class=\"err\"").count(), 1);
    assert!(html.contains("Estimated from a sample"));
}

#[test]
fn reference_buckets_hold_the_bytes_python_counts_and_problems_are_named_on_the_page() {
    if !python_with(&["hashlib"]) {
        return;
    }
    let d = Dir::new();
    tree(&d);
    for i in 0..6u32 {
        // Blocks shared by 1, 2 and 3+ files, with short tails.
        let data: Vec<u8> = (0..(9000 + 1000 * (i % 3)))
            .map(|j| (j * (i % 2 + 3)) as u8)
            .collect();
        d.create(format!("t/r/{i}.bin").as_bytes(), &data);
    }
    let fifo = d.join("t/a fifo");
    mkfifo(&fifo);
    d.cmd()
        .args(["scan", "t", "-q", "--json", "r.json", "--html", "r.html"])
        .run()
        .code(0);
    let r: serde_json::Value = read_json(&d, "r.json");
    // Fixed 4 KiB blocks of every file (tails as they are), one name per inode, zero blocks
    // apart; per bucket of reference counts: the bytes of every occurrence, and of each block
    // once.
    let py = r#"
import hashlib, os, sys, json
count = {}; size = {}; seen = set()
for dp, dn, fn in os.walk(sys.argv[1]):
    for f in sorted(fn):
        p = os.path.join(dp, f); st = os.lstat(p)
        if not os.path.isfile(p) or os.path.islink(p) or (st.st_dev, st.st_ino) in seen: continue
        seen.add((st.st_dev, st.st_ino)); data = open(p, 'rb').read()
        for i in range(0, len(data), 4096):
            b = data[i:i + 4096]
            if b.count(0) == len(b): continue
            k = hashlib.sha256(b).digest(); count[k] = count.get(k, 0) + 1; size[k] = len(b)
out = {}
for k, c in count.items():
    lo = 1 if c == 1 else 2 ** (c - 1).bit_length() // 2 + 1
    o = out.setdefault(str(lo), [0, 0, 0, 0]); o[0] += 1; o[1] += c; o[2] += size[k] * c; o[3] += size[k]
print(json.dumps(out))
"#;
    let want: std::collections::BTreeMap<String, [u64; 4]> = python_json(&d, py, "t");
    let got: std::collections::BTreeMap<String, [u64; 4]> =
        r["reduction"]["dedup"][0]["references"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                let n = |k: &str| b[k].as_u64().unwrap_or_else(|| panic!("{k} in {b}"));
                (
                    b["from"].to_string(),
                    [
                        n("blocks"),
                        n("referenced_blocks"),
                        n("logical_bytes"),
                        n("stored_bytes"),
                    ],
                )
            })
            .collect();
    assert_eq!(got, want);
    assert!(want.len() >= 2);
    // The page draws them, and names what was skipped.
    let html = std::fs::read_to_string(d.join("r.html")).unwrap();
    for v in want.values() {
        assert!(html.contains(&format!(r#"data-stored-bytes="{}""#, v[3])));
    }
    let skipped = &html[html.find("id=\"r0-skipped\"").expect("a skipped table")..];
    assert!(skipped.contains("t/a fifo") && skipped.contains("fifo"));
}

/// A tree with duplicates and compressible text, big enough for a sample to keep thousands of
/// blocks: every file its own (a deterministic generator), a third of them copies.
fn sampled_tree(d: &Dir) {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..60 {
        let mut body = Vec::with_capacity(256 * 1024);
        while body.len() < 256 * 1024 {
            // Half words from a small vocabulary (compressible), half noise.
            let w = next();
            if w % 2 == 0 {
                body.extend_from_slice(
                    ["alpha ", "bravo ", "charlie ", "delta "][(w >> 8) as usize % 4].as_bytes(),
                );
            } else {
                body.extend_from_slice(&w.to_le_bytes());
            }
        }
        d.create(format!("s/f{i:02}").as_bytes(), &body);
        if i % 3 == 0 {
            d.create(format!("s/copy{i:02}").as_bytes(), &body);
        }
    }
}

#[test]
fn a_sampled_estimate_is_never_shown_without_its_interval_and_the_interval_holds_the_truth() {
    let d = Dir::new();
    sampled_tree(&d);
    let args = [
        "scan",
        "s",
        "--compress",
        "lz4",
        "--json",
        "x.json",
        "--html",
        "x.html",
    ];
    let r = d.cmd().args(args).args(["--sample", "0.25"]).run();
    r.code(0)
        .stdout_has("(estimated from a 25% sample: the ranges are 99% intervals)");
    // Every ratio in the text tables carries its range.
    for line in r.stdout.lines().filter(|l| l.contains(":1")) {
        assert_eq!(
            line.matches(":1").count(),
            line.matches(", 99%)").count(),
            "a bare estimate: {line}\n{}",
            r.stdout
        );
    }
    let html = std::fs::read_to_string(d.join("x.html")).unwrap();
    assert!(html.matches(", 99%)").count() >= 6 + 2 + 2, "{html}");
    let sampled = read_json(&d, "x.json");
    d.cmd().args(args).args(["-q"]).run().code(0);
    let exact = read_json(&d, "x.json");
    let within = |what: &str, est: &serde_json::Value, truth: &serde_json::Value, bytes: &str| {
        let s = &est[what];
        let (lo, hi) = (s["low"].as_u64().unwrap(), s["high"].as_u64().unwrap());
        let t = truth[bytes].as_u64().unwrap();
        assert!(lo <= t && t <= hi, "{what}: {t} outside {lo}-{hi}");
    };
    let (sd, ed) = (
        &sampled["reduction"]["dedup"][0],
        &exact["reduction"]["dedup"][0],
    );
    within("sample", sd, ed, "unique_bytes");
    let (sc, ec) = (
        &sampled["reduction"]["compression"][0],
        &exact["reduction"]["compression"][0],
    );
    within("sample", sc, ec, "allocated_bytes");
    within("combined_sample", sc, ec, "combined_allocated_bytes");
    // An exact run shows no range.
    assert!(!r.stdout.is_empty());
    let exact_text = d.cmd().args(["scan", "s", "--compress", "lz4"]).run();
    assert!(!exact_text.stdout.contains("99%"), "{}", exact_text.stdout);
}

#[test]
fn a_hostile_name_is_text_in_every_page_never_markup() {
    let d = Dir::new();
    let evil = "<img src=x onerror=alert(1)>\"'&.txt";
    d.create(format!("t/{evil}").as_bytes(), b"same bytes");
    d.create(b"t/copy.txt", b"same bytes");
    d.create(b"t/sub <b>bold</b>/x", b"x");
    d.cmd()
        .args([
            "scan",
            "t",
            "-q",
            "--html",
            "scan.html",
            "--duplicates",
            "dups.txt",
        ])
        .args(["--json", "scan.json"])
        .run()
        .code(0);
    d.cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .run()
        .code(0);
    // Silent corruption (same size and mtime, other bytes): the page names the file.
    let p = d.join(format!("t/{evil}"));
    let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
    std::fs::write(&p, b"changed!!!").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    d.cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .run()
        .code(1);
    d.cmd()
        .args(["catalog", "report", "-c", "cat.db", "--html", "cat.html"])
        .run()
        .code(0);
    for page in ["scan.html", "cat.html"] {
        let html = std::fs::read_to_string(d.join(page)).unwrap();
        assert!(
            !html.contains("<img") && !html.contains("<b>bold"),
            "{page}: markup from a name"
        );
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{page}: the name is shown"
        );
    }
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

/// Small files: the stored data takes more than it holds (each file rounded up to a sector).
/// The page says why a ratio is under 1x; with one large file it has nothing to explain.
#[test]
fn the_page_says_why_a_compression_ratio_is_under_one() {
    let d = Dir::new();
    for i in 0..50 {
        d.create(format!("t/f{i}").as_bytes(), format!("{i}").as_bytes());
    }
    d.cmd()
        .args(["scan", "t", "-q", "--json", "r.json", "--html", "r.html"])
        .run()
        .code(0);
    let r = read_json(&d, "r.json");
    assert!(r["reduction"]["compression"][0]["ratio"].as_f64().unwrap() < 1.0);
    let html = std::fs::read_to_string(d.join("r.html")).unwrap();
    assert!(
        html.contains("A ratio under 1x means"),
        "no word on sector rounding"
    );
    let big: Vec<u8> = (0..400_000u32).map(|i| (i % 7) as u8).collect();
    d.create(b"u/big", &big);
    d.cmd()
        .args(["scan", "u", "-q", "--html", "u.html"])
        .run()
        .code(0);
    let html = std::fs::read_to_string(d.join("u.html")).unwrap();
    assert!(!html.contains("A ratio under 1x means"));
}

/// A tree of many directories: the page draws and lists the largest 100, says how many more
/// the JSON holds, and stays small.
#[test]
fn the_page_lists_the_largest_directories_and_stays_small() {
    let d = Dir::new();
    for i in 0..300u32 {
        d.create(
            format!("t/d{i:03}/f").as_bytes(),
            &vec![b'x'; 100 + i as usize * 10],
        );
    }
    d.cmd()
        .args(["scan", "t", "-q", "--json", "r.json", "--html", "r.html"])
        .run()
        .code(0);
    let r = read_json(&d, "r.json");
    let in_json = r["breakdown"]["directories"].as_array().unwrap().len();
    assert!(in_json > 100, "{in_json}");
    let html = std::fs::read_to_string(d.join("r.html")).unwrap();
    let table = html.split(r#"id="r0-dirs""#).nth(1).unwrap();
    let table = table.split("</table>").next().unwrap();
    assert_eq!(
        table.matches("<tr").count(),
        101,
        "a header and the 100 largest"
    );
    assert!(
        table.contains("d299") && !table.contains("d000"),
        "largest first"
    );
    assert!(
        html.contains("The 100 largest directories; "),
        "the rest is counted"
    );
    assert!(html.len() < 120_000, "{} bytes", html.len());
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
