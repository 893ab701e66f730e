//! The reduction of one file larger than a buffer, whose blocks and units are worked out over
//! the pool of all cores: its figures equal the Python reference's, as a small file's do.

use serde_json::Value;

use crate::util::{Dir, noise, python_with};

#[test]
fn a_large_file_spread_over_the_pool_counts_as_the_python_reference() {
    if !python_with(&["zstandard", "lz4"]) {
        return;
    }
    let d = Dir::new();
    // 3.3 MB: random, a zero run across units, text, random again at a unit's boundary and off
    // it, an odd tail; and a small file holding some of its blocks.
    let r = noise(1 << 20, 7);
    let mut big = r.clone();
    big.extend(std::iter::repeat_n(0u8, 300_000));
    big.extend(b"a block of the archive\n".repeat(20_000));
    big.resize(big.len().next_multiple_of(32_768), b'x');
    big.extend_from_slice(&r[..400_000]);
    big.extend_from_slice(&r[4096..400_000]);
    big.extend_from_slice(&noise(300_001, 8));
    d.create(b"t/big.bin", &big);
    d.create(b"t/small.bin", &r[65_536..196_608]);
    let sizes = "4096,8192,16384,32768,65536,131072";
    let mut scan = d.cmd();
    // A pool of four whatever the machine, and two compute threads: the rule lets it spread.
    scan.cmd.env("RAYON_NUM_THREADS", "4");
    let args = ["scan", "t", "-q", "-j2", "--json", "out.json", "--compress"];
    scan.args(args)
        .args(["lz4,zstd:3", "--dedup", "4k,8k,16k,32k,64k,128k"])
        .run()
        .code(0);
    let ours: Value = serde_json::from_slice(&std::fs::read(d.join("out.json")).unwrap()).unwrap();
    let ours = &ours["reduction"];
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/reduce.py");
    let t = d.join("t");
    let out = std::process::Command::new("python3")
        .args([script, t.to_str().unwrap(), sizes, "32768", "4096", "0.125"])
        .arg("lz4,zstd:3")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys = ["logical_bytes", "blocks", "unique_blocks", "unique_bytes"];
    for (o, t) in ours["dedup"]
        .as_array()
        .unwrap()
        .iter()
        .zip(theirs["dedup"].as_array().unwrap())
    {
        for k in keys.iter().chain(&["zero_blocks", "zero_bytes", "ratio"]) {
            assert_eq!(o[k], t[k], "{k} at block size {}", t["block_size"]);
        }
    }
    assert!(ours["dedup"][5]["ratio"].as_f64().unwrap() > 1.1, "{ours}");
    let oc = ours["compression"].as_array().unwrap();
    for (o, t) in oc.iter().zip(theirs["compression"].as_array().unwrap()) {
        assert_eq!(o["units"], t["units"]);
        let (a, b) = (
            o["compressed_bytes"].as_f64().unwrap(),
            t["compressed_bytes"].as_f64().unwrap(),
        );
        assert!(
            (a - b).abs() <= 0.02 * b,
            "{}: trawl {a} vs reference {b}",
            o["codec"]
        );
    }
    assert_eq!(oc.len(), 2);
}
