//! JSON goldens: every JSON output on a fixed tree, byte for byte, against files checked in under
//! `tests/golden/`. Only what a clock, the machine or a library version decides is masked
//! (timings, peak memory, implementation names, the chain digest, which hashes a time).
//!
//! `TRAWL_BLESS=1` rewrites the goldens; `TRAWL_GOLDEN_BIN=PATH` checks another build of trawl
//! against them (how the redesign was shown to keep its output).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, UNIX_EPOCH};

use crate::flv::flv_with_keyframes;
use crate::util::Dir;

/// Keys whose values depend on the clock, the machine or a library's version.
const VOLATILE: &[&str] = &[
    "seconds",
    "bytes_per_second",
    "peak_rss_bytes",
    "peak_anon_bytes",
    "implementation",
    "chain_digest",
    "trawl_version",
];

fn bin() -> PathBuf {
    std::env::var_os("TRAWL_GOLDEN_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_trawl")))
}

fn trawl(d: &Dir, args: &[&str]) -> std::process::Output {
    let out = Command::new(bin())
        .args(args)
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "trawl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Masks the value of every volatile key, line by line (pretty JSON puts one key on a line;
/// the compact lines of JSON Lines and of the audit's events hold none of them but
/// `implementation`, masked the same way inside a line).
fn mask(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let mut l = line.to_string();
        for k in VOLATILE {
            let key = format!("\"{k}\":");
            let mut from = 0;
            while let Some(i) = l[from..].find(&key) {
                let start = from + i + key.len();
                let rest = &l[start..];
                let lead = rest.len() - rest.trim_start().len();
                let v = &rest[lead..];
                // The value ends at the first comma, brace or line end outside a string.
                let mut end = 0;
                let mut in_str = false;
                let mut esc = false;
                for (j, c) in v.char_indices() {
                    if in_str {
                        if esc {
                            esc = false;
                        } else if c == '\\' {
                            esc = true;
                        } else if c == '"' {
                            in_str = false;
                        }
                    } else if c == '"' {
                        in_str = true;
                    } else if c == ',' || c == '}' || c == ']' || c == '\n' {
                        break;
                    }
                    end = j + c.len_utf8();
                }
                let masked = format!("{}\"*\"", &rest[..lead]);
                l.replace_range(start..start + lead + end, &masked);
                from = start + masked.len();
            }
        }
        out.push_str(&l);
    }
    out
}

fn golden_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// `actual` with its volatile values masked and the test directory written `$TMP`.
fn check(d: &Dir, name: &str, actual: &[u8]) {
    let actual = mask(std::str::from_utf8(actual).expect("JSON is UTF-8"))
        .replace(d.path().to_str().expect("a UTF-8 temporary path"), "$TMP");
    let path = golden_path(name);
    if std::env::var_os("TRAWL_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (TRAWL_BLESS=1 writes it)", path.display()));
    if want != actual {
        let (w, a): (Vec<&str>, Vec<&str>) = (want.lines().collect(), actual.lines().collect());
        let at = w
            .iter()
            .zip(&a)
            .position(|(x, y)| x != y)
            .unwrap_or(w.len().min(a.len()));
        panic!(
            "{name} differs from its golden at line {}:\n  golden: {:?}\n  actual: {:?}",
            at + 1,
            w.get(at),
            a.get(at)
        );
    }
}

/// A tree whose every byte and mtime is fixed: duplicates across files, zero blocks, text that
/// compresses, noise that does not, an FLV file, a name that is not UTF-8.
fn fixed_tree(d: &Dir) {
    let mut noise = Vec::with_capacity(96 * 1024);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    while noise.len() < 96 * 1024 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        noise.extend_from_slice(&x.to_le_bytes());
    }
    let text: Vec<u8> = b"the quick brown fox jumps over the lazy dog\n"
        .iter()
        .copied()
        .cycle()
        .take(40_000)
        .collect();
    let mut mixed = noise[..32 * 1024].to_vec();
    mixed.extend_from_slice(&[0u8; 16 * 1024]);
    mixed.extend_from_slice(&text[..10_000]);
    let files: Vec<(&[u8], Vec<u8>)> = vec![
        (b"tree/noise.bin", noise.clone()),
        (b"tree/copy/noise.bin", noise.clone()),
        (b"tree/text.txt", text.clone()),
        (b"tree/mixed.dat", mixed),
        (b"tree/zeros", vec![0u8; 20_000]),
        (b"tree/empty", Vec::new()),
        (b"tree/clip.flv", flv_with_keyframes()),
        (b"tree/odd-\xff-name", b"bytes\n".to_vec()),
    ];
    for (name, body) in files {
        let p = d.create(name, &body);
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(UNIX_EPOCH + Duration::from_millis(1_600_000_000_250))
            .unwrap();
    }
}

#[test]
fn scan_json_jsonl_and_media_index_match_their_goldens() {
    let d = Dir::new();
    fixed_tree(&d);
    trawl(
        &d,
        &[
            "scan",
            "tree",
            "-q",
            "-j",
            "2",
            "-d",
            "sha256,blake3,xxh3",
            "--media-index",
            "idx",
            "--json",
            "scan.json",
            "--jsonl",
            "scan.jsonl",
            "--dedup",
            "4k,16k",
            "--cdc",
            "8k",
            "--compress",
            "zstd:3,lz4,gzip:6",
        ],
    );
    check(
        &d,
        "scan.json",
        &std::fs::read(d.join("scan.json")).unwrap(),
    );
    // JSON Lines come in completion order: compare them sorted.
    let mut lines: Vec<String> = std::fs::read_to_string(d.join("scan.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    check(&d, "scan.jsonl", (lines.join("\n") + "\n").as_bytes());
    check(
        &d,
        "clip.flv.keyframes.json",
        &std::fs::read(d.join("idx/clip.flv.keyframes.json")).unwrap(),
    );
    let out = trawl(&d, &["flv", "index", "tree/clip.flv", "--json", "-"]);
    check(&d, "flv-index.json", &out.stdout);
}

#[test]
fn audit_json_matches_its_golden() {
    let d = Dir::new();
    fixed_tree(&d);
    trawl(&d, &["audit", "tree", "-q", "--catalog", "cat.db"]);
    // One corrupt file (same size and mtime), one missing, one new, one moved.
    let p = d.join("tree/text.txt");
    let mut body = std::fs::read(&p).unwrap();
    body[7] ^= 1;
    std::fs::write(&p, &body).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(UNIX_EPOCH + Duration::from_millis(1_600_000_000_250))
        .unwrap();
    std::fs::remove_file(d.join("tree/zeros")).unwrap();
    std::fs::rename(d.join("tree/clip.flv"), d.join("tree/copy/clip.flv")).unwrap();
    d.create(b"tree/new.txt", b"new\n");
    trawl(
        &d,
        &[
            "audit",
            "tree",
            "-q",
            "--catalog",
            "cat.db",
            "--json",
            "audit.json",
        ],
    );
    check(
        &d,
        "audit.json",
        &std::fs::read(d.join("audit.json")).unwrap(),
    );
}

#[test]
fn masking_keeps_everything_but_the_volatile_values() {
    let m = mask(
        "{\n  \"seconds\": 1.5,\n  \"files\": 3,\n  \"x\": {\"implementation\": \"a,\\\"b\", \"n\": 1}\n}\n",
    );
    assert_eq!(
        m,
        "{\n  \"seconds\": \"*\",\n  \"files\": 3,\n  \"x\": {\"implementation\": \"*\", \"n\": 1}\n}\n"
    );
}
