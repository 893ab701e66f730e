//! Sampled figures on the HTML page: never drawn without their intervals, and the intervals hold
//! the truth.

use crate::report::{read_json, tree};
use crate::util::Dir;

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
