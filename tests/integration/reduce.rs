//! Data reduction in `trawl scan`: every dedup figure (fixed blocks and CDC) must equal an
//! independent Python reference exactly; compressed sizes (other codec implementations) within 2%.

use serde_json::Value;

use crate::util::{Dir, noise as rnd, python_with};

fn text(n: usize, seed: u64) -> Vec<u8> {
    let words = [
        "storage ", "block ", "the ", "archive ", "fixity ", "data ", "of ", "and\n",
    ];
    let r = rnd(n, seed);
    let mut out = Vec::new();
    let mut i = 0;
    while out.len() < n {
        out.extend_from_slice(words[r[i % r.len()] as usize % words.len()].as_bytes());
        i += 1;
    }
    out.truncate(n);
    out
}

/// Random, text, duplicated files, duplicated blocks aligned and shifted, zero runs, sizes that
/// are not block multiples, empty files.
fn corpus(d: &Dir) {
    let r1 = rnd(700_000, 1);
    d.create(b"t/random.bin", &r1);
    d.create(b"t/copy/random-copy.bin", &r1);
    let t = text(500_000, 2);
    d.create(b"t/text.txt", &t);
    // The last 288 bytes of text.txt: a block of every size here, and text.txt's last block at
    // 4K and 8K (500,000 = 61 x 8,192 + 288), twice.
    d.create(b"t/tail-twin", &t[t.len() - 288..]);
    d.create(b"t/sub/tail-twin", &t[t.len() - 288..]);
    let mut shifted = b"xyz".to_vec();
    shifted.extend_from_slice(&r1[..300_000]);
    d.create(b"t/shifted.bin", &shifted);
    let mut aligned = rnd(131_072, 3);
    aligned.extend_from_slice(&r1[..262_144]);
    d.create(b"t/aligned.bin", &aligned);
    let mut zeros = text(10_000, 4);
    zeros.extend(std::iter::repeat_n(0u8, 200_000));
    zeros.extend_from_slice(&rnd(5_000, 5));
    d.create(b"t/zero-run.bin", &zeros);
    d.create(b"t/all-zero.bin", &vec![0u8; 65_536 + 100]);
    d.create(b"t/odd.bin", &rnd(4097, 6));
    d.create(b"t/tiny", b"x");
    d.create(b"t/empty", b"");
    d.create(b"t/sub/empty2", b"");
}

#[test]
fn dedup_equals_the_python_reference_and_compression_is_within_two_percent() {
    if !python_with(&["zstandard", "lz4"]) {
        return;
    }
    let d = Dir::new();
    corpus(&d);
    let codecs = "lz4,zstd:1,zstd:3,gzip:6";
    d.cmd()
        .args([
            "scan",
            "t",
            "-q",
            "--json",
            "out.json",
            "--dedup",
            "4k,8k,16k,32k,64k,128k",
            "--compress",
            codecs,
            "--unit",
            "32k",
            "--sector",
            "4k",
            "--cdc",
            "8k",
        ])
        .run()
        .code(0);
    let ours: Value = serde_json::from_slice(&std::fs::read(d.join("out.json")).unwrap()).unwrap();
    let ours = &ours["reduction"];
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/reduce.py");
    let out = std::process::Command::new("python3")
        .args([
            script,
            d.join("t").to_str().unwrap(),
            "4096,8192,16384,32768,65536,131072",
            "32768",
            "4096",
            "0.125",
            codecs,
            "8192",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The files contributing most duplicate bytes: the reference's top ten by saved share, each
    // with the same duplicate bytes and share (rounded).
    let tops = ours["top_files"].as_array().unwrap();
    let mut ref_saved: Vec<f64> = theirs["top_files"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v[1].as_f64().unwrap())
        .collect();
    ref_saved.sort_by(|a, b| b.total_cmp(a));
    assert!(!tops.is_empty());
    assert_eq!(tops.len(), ref_saved.len().min(10), "{tops:?}");
    for (t, want) in tops.iter().zip(&ref_saved) {
        let rel = t["path"].as_str().unwrap().strip_prefix("t/").unwrap();
        let r = &theirs["top_files"][rel];
        assert_eq!(t["duplicate_bytes"].as_u64(), r[0].as_u64(), "{rel}");
        let saved = t["saved_bytes"].as_f64().unwrap();
        assert!(
            (saved - r[1].as_f64().unwrap()).abs() <= 0.5,
            "{rel}: {saved} vs {r}"
        );
        assert!(
            (saved - want).abs() <= 0.5,
            "{rel}: not in the reference's order"
        );
    }
    let od = ours["dedup"].as_array().unwrap();
    let td = theirs["dedup"].as_array().unwrap();
    assert_eq!(od.len(), 6);
    for (o, t) in od.iter().zip(td) {
        for k in [
            "block_size",
            "logical_bytes",
            "blocks",
            "unique_blocks",
            "unique_bytes",
            "zero_blocks",
            "zero_bytes",
            "ratio",
        ] {
            assert_eq!(o[k], t[k], "{k} at block size {}", t["block_size"]);
        }
    }
    // Content-defined chunks, cut independently by the reference's own FastCDC 2020.
    for k in [
        "avg_size",
        "logical_bytes",
        "blocks",
        "unique_blocks",
        "unique_bytes",
        "zero_blocks",
        "zero_bytes",
        "ratio",
    ] {
        assert_eq!(ours["cdc"][k], theirs["cdc"][k], "cdc {k}");
    }
    // The corpus has duplicates the figures must show.
    assert!(od[0]["ratio"].as_f64().unwrap() > 1.5);
    assert!(od[0]["zero_blocks"].as_u64().unwrap() > 40);
    let oc = ours["compression"].as_array().unwrap();
    let tc = theirs["compression"].as_array().unwrap();
    assert_eq!(oc.len(), 4);
    for (o, t) in oc.iter().zip(tc) {
        assert_eq!(o["codec"], t["codec"]);
        assert_eq!(o["level"], t["level"]);
        assert_eq!(o["units"], t["units"]);
        assert_eq!(o["logical_bytes"], t["logical_bytes"]);
        assert!(o["implementation"].as_str().unwrap().len() > 3);
        for k in [
            "compressed_bytes",
            "allocated_bytes",
            "combined_allocated_bytes",
        ] {
            let (a, b) = (o[k].as_f64().unwrap(), t[k].as_f64().unwrap());
            assert!(
                (a - b).abs() <= 0.02 * b,
                "{} {}: trawl {a} vs reference {b}",
                o["codec"],
                k
            );
        }
    }
}

#[test]
fn no_reduce_leaves_the_figures_out_and_bad_settings_are_refused() {
    let d = Dir::new();
    d.create(b"t/a", b"abc");
    let r = d.cmd().args(["scan", "t", "--no-reduce"]).run();
    r.code(0);
    assert!(!r.stdout.contains("data reduction"), "{}", r.stdout);
    let r = d.cmd().args(["scan", "t", "--dedup", "3000"]).run();
    r.code(2);
    r.stderr_has("multiple of 4K");
    let r = d.cmd().args(["scan", "t", "--compress", "brotli"]).run();
    r.code(2);
    r.stderr_has("unknown codec 'brotli'");
    let r = d
        .cmd()
        .args(["scan", "t", "--unit", "32k", "--sector", "64k"])
        .run();
    r.code(2);
    r.stderr_has("sector 65536 is larger than the unit 32768");
    let r = d
        .cmd()
        .args(["scan", "t", "--unit", "32k", "--sector", "32k"])
        .run();
    r.code(0);
}

#[test]
fn digest_none_measures_the_reduction_alone() {
    let d = Dir::new();
    // Three copies of one 4 KiB block and a block of another byte: 2 unique 4 KiB blocks.
    let mut data = vec![b'a'; 3 * 4096];
    data.extend(vec![b'b'; 4096]);
    d.create(b"t/f", &data);
    let r = d
        .cmd()
        .args([
            "scan", "t", "--digest", "none", "--jsonl", "-", "--json", "out.json",
        ])
        .run();
    r.code(0);
    let rec: Value = serde_json::from_str(r.stdout.lines().next().unwrap()).unwrap();
    let keys: Vec<&String> = rec.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["mtime", "path", "size"], "{rec}");
    let j: Value = serde_json::from_slice(&std::fs::read(d.join("out.json")).unwrap()).unwrap();
    let d4 = &j["reduction"]["dedup"][0];
    assert_eq!(d4["block_size"], 4096);
    assert_eq!(d4["blocks"], 4);
    assert_eq!(d4["unique_blocks"], 2);
    let r = d.cmd().args(["scan", "t", "--digest", "none"]).run();
    r.code(0)
        .stdout_has("; no digests\n")
        .stdout_has("data reduction");
    // A manifest still gets its digest; a BSD manifest must be told which.
    let r = d
        .cmd()
        .args(["scan", "t", "-q", "--digest", "none", "-m", "sha1sum:-"])
        .run();
    r.code(0);
    let theirs = std::process::Command::new("sha1sum")
        .arg("f")
        .current_dir(d.join("t"))
        .output()
        .unwrap();
    assert_eq!(r.stdout, String::from_utf8(theirs.stdout).unwrap());
    let r = d
        .cmd()
        .args(["scan", "t", "--digest", "none", "-m", "bsd:x"])
        .run();
    r.code(2)
        .stderr_has("--manifest bsd: name the digest with --digest");
    assert!(!d.join("x").exists());
}

#[test]
fn a_sampled_estimate_pays_for_no_digest_unless_asked_and_its_ratio_is_at_least_one() {
    let d = Dir::new();
    // Data that does not repeat: the estimate's interval would reach past the data itself.
    for i in 0..4 {
        d.create(format!("t/rnd{i}").as_bytes(), &rnd(300_000, 40 + i));
    }
    let json = |extra: &[&str]| -> Value {
        let mut args = vec!["scan", "t", "-q", "--json", "out.json", "--sample", "0.05"];
        args.extend_from_slice(extra);
        d.cmd().args(&args).run().code(0);
        serde_json::from_slice(&std::fs::read(d.join("out.json")).unwrap()).unwrap()
    };
    let v = json(&[]);
    assert_eq!(
        v["algorithms"],
        serde_json::json!([]),
        "no digest by default when sampling"
    );
    for w in v["reduction"]["dedup"].as_array().unwrap() {
        let nonzero = w["logical_bytes"].as_u64().unwrap() - w["zero_bytes"].as_u64().unwrap();
        let s = &w["sample"];
        assert!(s["high"].as_u64().unwrap() <= nonzero, "{w}");
        assert!(w["unique_bytes"].as_u64().unwrap() <= nonzero, "{w}");
    }
    // Asked for, a digest is computed as ever.
    let v = json(&["-d", "sha256"]);
    assert_eq!(v["algorithms"], serde_json::json!(["sha256"]));
    assert!(
        v["files"][0]["digests"]["sha256"].is_string(),
        "{}",
        v["files"][0]
    );
}

#[test]
fn a_sampled_run_brackets_the_exact_figures() {
    let d = Dir::new();
    corpus(&d);
    // More distinct data, so that a sample has something to estimate from.
    for i in 0..6 {
        d.create(format!("t/more{i}").as_bytes(), &text(400_000, 10 + i));
        d.create(format!("t/rnd{i}").as_bytes(), &rnd(400_000, 20 + i));
    }
    let run = |extra: &[&str]| -> Value {
        let mut args = vec!["scan", "t", "-q", "--json", "out.json", "--compress", "lz4"];
        args.extend_from_slice(extra);
        d.cmd().args(&args).run().code(0);
        let v: Value = serde_json::from_slice(&std::fs::read(d.join("out.json")).unwrap()).unwrap();
        v["reduction"].clone()
    };
    let exact = run(&[]);
    assert!(exact["dedup"][0].get("sample").is_none());
    let est = run(&["--sample", "0.5"]);
    let s = &est["dedup"][0]["sample"];
    assert_eq!(s["rate"], 0.5);
    let truth = exact["dedup"][0]["unique_bytes"].as_u64().unwrap();
    assert!(
        s["low"].as_u64().unwrap() <= truth && truth <= s["high"].as_u64().unwrap(),
        "dedup: {truth} not in {s}"
    );
    let c = &est["compression"][0];
    let truth = exact["compression"][0]["allocated_bytes"].as_u64().unwrap();
    assert!(
        c["sample"]["low"].as_u64().unwrap() <= truth
            && truth <= c["sample"]["high"].as_u64().unwrap(),
        "compression: {truth} not in {}",
        c["sample"]
    );
    // Logical figures are exact whatever the sample.
    assert_eq!(
        est["dedup"][0]["logical_bytes"],
        exact["dedup"][0]["logical_bytes"]
    );
    let r = d.cmd().args(["scan", "t", "--sample", "0"]).run();
    r.code(2);
    r.stderr_has("sample rate");
}

#[test]
fn a_spilled_run_equals_the_in_ram_run_and_leaves_no_spill_files() {
    let d = Dir::new();
    corpus(&d);
    for i in 0..4 {
        d.create(format!("t/rnd{i}").as_bytes(), &rnd(2_000_000, 30 + i));
    }
    std::fs::create_dir(d.join("spill")).unwrap();
    let run = |extra: &[&str]| -> (Value, String) {
        let mut args = vec![
            "scan",
            "t",
            "--json",
            "out.json",
            "--compress",
            "lz4,zstd:1",
            "--cdc",
            "8k",
        ];
        args.extend_from_slice(extra);
        let r = d.cmd().args(&args).run();
        r.code(0);
        let v: Value = serde_json::from_slice(&std::fs::read(d.join("out.json")).unwrap()).unwrap();
        (v["reduction"].clone(), r.stdout)
    };
    let (ram, _) = run(&[]);
    // A budget far below what the indexes need (their empty tables alone are ~300 KiB).
    let (spilled, out) = run(&["--memory", "64K", "--temp-dir", "spill"]);
    assert_eq!(ram, spilled);
    assert!(out.contains("spilled"), "{out}");
    // Full 128-bit keys give the same figures here (no 64-bit collisions in so few blocks), in
    // RAM and spilled.
    let strip = |mut v: Value| {
        v["fingerprint"] = Value::Null;
        v
    };
    let (exact, _) = run(&["--exact-keys"]);
    assert!(
        exact["fingerprint"]
            .as_str()
            .unwrap()
            .contains("all 128 bits")
    );
    assert_eq!(strip(exact.clone()), strip(ram.clone()));
    let (exact_spilled, out) = run(&["--exact-keys", "--memory", "16K", "--temp-dir", "spill"]);
    assert!(out.contains("spilled"), "{out}");
    assert_eq!(exact_spilled, exact);
    // Sampled, the spill keeps exactly the sampled blocks and units (and their carried sizes).
    let (sampled, _) = run(&["--sample", "0.5"]);
    assert!(sampled["dedup"][0]["sample"].is_object(), "{sampled}");
    let (sampled_spilled, out) =
        run(&["--sample", "0.5", "--memory", "16K", "--temp-dir", "spill"]);
    assert!(out.contains("spilled"), "{out}");
    assert_eq!(sampled_spilled, sampled);
    assert_eq!(
        std::fs::read_dir(d.join("spill")).unwrap().count(),
        0,
        "spill files left behind"
    );
    let r = d
        .cmd()
        .args(["scan", "t", "--memory", "1M", "--temp-dir", "no/such/dir"])
        .run();
    r.code(2);
    r.stderr_has("no/such/dir");
}

#[test]
fn a_hard_linked_file_is_counted_once_as_du_counts_it() {
    let Some(du) = crate::util::tool("du") else {
        return;
    };
    let d = Dir::new();
    let mut x: u64 = 88172645463325252;
    let data: Vec<u8> = (0..65_536)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    d.create(b"t/a.bin", &data);
    std::fs::hard_link(d.join("t/a.bin"), d.join("t/also-a.bin")).unwrap();
    let du_bytes: u64 = {
        let r = crate::util::run_tool(
            d.path(),
            &du,
            &[std::ffi::OsStr::new("-sb"), std::ffi::OsStr::new("t")],
        );
        r.stdout.split_whitespace().next().unwrap().parse().unwrap()
    };
    let scan = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["scan", "t", "-q", "--dedup", "4k", "--json", "-"];
        args.extend_from_slice(extra);
        let r = d.cmd().args(args).run();
        r.code(0);
        serde_json::from_str(&r.stdout).unwrap()
    };
    let v = scan(&[]);
    let red = &v["reduction"];
    let logical = red["dedup"][0]["logical_bytes"].as_u64().unwrap();
    // du counts the directory's own size too: the data is what is below it.
    assert!(
        du_bytes >= logical && du_bytes < logical + 65_536,
        "du {du_bytes}, trawl {logical}"
    );
    assert_eq!(logical, 65_536);
    assert_eq!(red["dedup"][0]["ratio"], 1.0);
    assert_eq!(red["hardlinks"]["names"], 1);
    assert_eq!(red["hardlinks"]["bytes"], 65_536);
    // Fixity still lists every name.
    assert_eq!(v["files"].as_array().unwrap().len(), 2);
    let v = scan(&["--count-links"]);
    assert_eq!(v["reduction"]["dedup"][0]["logical_bytes"], 131_072);
    assert_eq!(v["reduction"]["dedup"][0]["ratio"], 2.0);
    assert_eq!(v["reduction"]["hardlinks"]["names"], 0);
}

/// A hard-linked file's figures stand under its first name in byte order, whichever name the
/// walk met first: the same report every run, at any `-j`, with its spool on disk or in RAM.
#[test]
fn a_hard_linked_file_is_counted_under_its_first_name_in_byte_order() {
    let d = Dir::new();
    // Inodes whose first name in byte order is the link made after (`a*/`), and inodes whose
    // first is the file itself (`c*/` before `z*/`), in directories listed by different threads.
    for k in 0..8u64 {
        let data = rnd(20_000 + 4096 * k as usize, k + 1);
        d.create(format!("t/m{k}/data").as_bytes(), &data);
        d.create(format!("t/dup{k}/copy").as_bytes(), &data);
        std::fs::create_dir_all(d.join(format!("t/a{k}"))).unwrap();
        std::fs::hard_link(
            d.join(format!("t/m{k}/data")),
            d.join(format!("t/a{k}/link")),
        )
        .unwrap();
        std::fs::create_dir_all(d.join(format!("t/z{k}"))).unwrap();
        d.create(format!("t/c{k}/orig").as_bytes(), &rnd(9_000, 100 + k));
        std::fs::hard_link(
            d.join(format!("t/c{k}/orig")),
            d.join(format!("t/z{k}/link")),
        )
        .unwrap();
    }
    for (i, j) in ["1", "2", "4", "2", "4", "1"].iter().enumerate() {
        let out = format!("r{i}.json");
        d.cmd()
            .args([
                "scan",
                "t",
                "-q",
                "--top-files",
                "20",
                "--depth",
                "1",
                "--json",
                &out,
                "-j",
                j,
            ])
            .run()
            .code(0);
        let v = figures(&d, &out);
        let dirs: Vec<&str> = v["breakdown"]["directories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["path"].as_str().unwrap())
            .collect();
        for k in 0..8 {
            assert!(
                dirs.contains(&format!("t/a{k}/").as_str()),
                "-j{j}: {dirs:?}"
            );
            assert!(
                !dirs.contains(&format!("t/m{k}/").as_str()),
                "-j{j}: {dirs:?}"
            );
            assert!(
                dirs.contains(&format!("t/c{k}/").as_str()),
                "-j{j}: {dirs:?}"
            );
            assert!(
                !dirs.contains(&format!("t/z{k}/").as_str()),
                "-j{j}: {dirs:?}"
            );
        }
        let top: Vec<&str> = v["reduction"]["top_files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        assert!(top.iter().all(|p| !p.ends_with("/data")), "-j{j}: {top:?}");
        assert_eq!(v, figures(&d, "r0.json"), "-j{j}");
    }
}

#[test]
fn a_path_given_twice_is_scanned_once_with_a_warning() {
    let d = Dir::new();
    d.create(b"t/a.txt", b"alpha\n");
    d.create(b"t/sub/b.txt", b"beta\n");
    let r = d
        .cmd()
        .args(["scan", "t", "t", "t/sub", "-q", "--json", "-"])
        .run();
    r.code(0)
        .stderr_has("t: given twice (as t); scanned once")
        .stderr_has("t/sub: inside t, which is scanned too");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["totals"]["files"], 2);
    assert_eq!(v["reduction"]["dedup"][0]["logical_bytes"], 11);
}

/// The report without what the clock, the machine or the thread count decides.
fn figures(d: &Dir, out: &str) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for k in [
                    "seconds",
                    "bytes_per_second",
                    "peak_rss_bytes",
                    "peak_anon_bytes",
                    "threads",
                ] {
                    m.remove(k);
                }
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v: Value = serde_json::from_slice(&std::fs::read(d.join(out)).unwrap()).unwrap();
    strip(&mut v);
    v
}

#[test]
fn the_same_report_whatever_the_threads_partitions_and_memory() {
    let d = Dir::new();
    corpus(&d);
    // Many small files, some the same, some sharing a last block with a larger file; a file
    // larger than a read buffer (read by one thread, counted by others); copies of it.
    let big = rnd(3_300_001, 9);
    d.create(b"t/big/a.bin", &big);
    d.create(b"t/big/b.bin", &big);
    for i in 0..600u32 {
        let body = match i % 4 {
            0 => rnd(1 + (i as usize * 37) % 4000, 100 + i as u64),
            1 => b"the same small file\n".to_vec(),
            // Some are big's last block at 4K (3,300,001 = 805 x 4,096 + 2,721).
            2 if i % 8 == 2 => big[big.len() - 2721..].to_vec(),
            2 => big[big.len() - 1 - (i as usize % 2000)..].to_vec(),
            _ => text(5000 + i as usize, 7),
        };
        d.create(format!("t/many/{}/{i}", i % 7).as_bytes(), &body);
    }
    let scan = |out: &str, extra: &[&str]| {
        let mut args = vec![
            "scan",
            "t",
            "-q",
            "--json",
            out,
            "--cdc",
            "8k",
            "--compress",
            "lz4,zstd:1",
            "--top-files",
            "50",
        ];
        args.extend_from_slice(extra);
        d.cmd().args(&args).run().code(0);
        figures(&d, out)
    };
    let one = scan("one.json", &["-j", "1", "--partitions", "1"]);
    let reduction = &one["reduction"];
    assert!(
        reduction["top_files"].as_array().unwrap().len() >= 10
            && reduction["dedup"][0]["unique_blocks"].as_u64().unwrap()
                < reduction["dedup"][0]["blocks"].as_u64().unwrap(),
        "the corpus has duplicates to rank: {reduction}"
    );
    for (name, extra) in [
        // Every fingerprint kept whole, each way's blocks in its own table: no key is stored
        // once for all sizes, so this compares that with the tables (the description of the
        // fingerprint is the only other difference).
        ("exact", &["-j", "2", "--exact-keys"][..]),
        ("j16", &["-j", "16"][..]),
        ("j16-p2", &["-j", "16", "--partitions", "2"]),
        ("j3-p64", &["-j", "3", "--partitions", "64"]),
        ("j1-p64", &["-j", "1", "--partitions", "64"]),
        // Past the budget at once: every partition spills and is counted from its files.
        (
            "spilled-p8",
            &["-j", "8", "--partitions", "8", "--memory", "1M"],
        ),
        (
            "spilled-p1",
            &["-j", "2", "--partitions", "1", "--memory", "1M"],
        ),
    ] {
        let out = format!("{name}.json");
        let mut got = scan(&out, extra);
        if name == "exact" {
            got["reduction"]["fingerprint"] = one["reduction"]["fingerprint"].clone();
        }
        if got != one {
            let show = |v: &Value| serde_json::to_string_pretty(v).unwrap();
            std::fs::write("/tmp/got.json", show(&got)).unwrap();
            std::fs::write("/tmp/one.json", show(&one)).unwrap();
        }
        assert!(
            got == one,
            "{name}: the report differs from -j1 with one partition"
        );
    }
}
