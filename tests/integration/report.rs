//! Reports for people and for other tools: the HTML page (`--html`, `trawl report`), and the
//! duplicate groups in fclones' format (`--duplicates`), checked against a few lines of Python
//! and against fclones itself.

use std::collections::BTreeSet;
use std::process::Command;

use crate::util::{Dir, mkfifo, python_json, python_with, tool};

/// A tree with copies in other directories, a hard link, an empty file and a file of its own.
pub(crate) fn tree(d: &Dir) {
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
pub(crate) fn read_json(d: &Dir, name: &str) -> serde_json::Value {
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
pub(crate) fn audited(d: &Dir) {
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
