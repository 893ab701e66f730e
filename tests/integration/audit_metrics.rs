//! `trawl audit --metrics FILE` and `trawl catalog report --metrics FILE`: the Prometheus text
//! format, checked by promtool and read with the Prometheus Python client's own parser, its
//! figures against the audit's `--json` and the files themselves.

use std::ffi::OsStr;

use serde_json::Value;

use crate::audit::{flip_byte, tree};
use crate::util::{Dir, python_json, python_with, run_tool, tool};

/// A catalog name the label must escape (a double quote and a backslash).
const CATALOG: &str = "c\"a\\t.db";

/// Every sample of the file, read by prometheus_client: `NAME{verdict}` (or `NAME`) to its
/// value, and every sample's `catalog` label.
const PARSE: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out, catalogs, types = {}, set(), {}
for fam in text_string_to_metric_families(open(sys.argv[1], encoding="utf-8").read()):
    types[fam.name] = fam.type
    for s in fam.samples:
        key = s.name + ("{" + s.labels["verdict"] + "}" if "verdict" in s.labels else "")
        out[key] = s.value
        catalogs.add(s.labels["catalog"])
print(json.dumps({"samples": out, "catalogs": sorted(catalogs), "types": sorted(set(types.values()))}))
"#;

fn parse(d: &Dir, file: &str) -> Value {
    python_json(d, PARSE, file)
}

/// promtool's lint and parse of the file.
fn promtool_accepts(d: &Dir, promtool: &std::path::Path, file: &str) {
    let script = format!("{} check metrics < '{file}'", promtool.display());
    let r = run_tool(
        d.path(),
        std::path::Path::new("sh"),
        &[OsStr::new("-c"), OsStr::new(&script)],
    );
    r.code(0);
}

/// After an audit that finds a corrupt file, the file promtool accepts holds, per verdict, the
/// counts `--json` gives and the bytes of the files given them; the bytes read; success 1 and
/// the end time as the last success; the catalog's name escaped and read back whole.
/// `catalog report --metrics` gives the same run's figures.
#[test]
fn audit_metrics_parse_with_promtool_and_the_client_and_match_the_json() {
    let Some(promtool) = tool("promtool") else {
        return;
    };
    if !python_with(&["prometheus_client"]) {
        return;
    }
    let d = Dir::new();
    tree(&d);
    let audit = |want: i32| {
        let args = [
            "audit",
            "t",
            "-c",
            CATALOG,
            "-q",
            "--json",
            "out.json",
            "--metrics",
            "m.prom",
        ];
        d.cmd().args(args).run().code(want);
        serde_json::from_slice::<Value>(&std::fs::read(d.join("out.json")).unwrap()).unwrap()
    };
    audit(0);
    flip_byte(&d.join("t/sub/deep.bin"), 10);
    let json = audit(1);
    promtool_accepts(&d, &promtool, "m.prom");
    let m = parse(&d, "m.prom");
    assert_eq!(m["catalogs"], serde_json::json!([CATALOG]));
    assert_eq!(m["types"], serde_json::json!(["gauge"]));
    let s = &m["samples"];
    for (verdict, n) in json["counts"].as_object().unwrap() {
        assert_eq!(
            s[format!("trawl_audit_files{{{verdict}}}")],
            n.as_f64().unwrap(),
            "{verdict}"
        );
    }
    let size = |p: &str| std::fs::metadata(d.join(p)).unwrap().len() as f64;
    let all: f64 = (0..8).map(|i| size(&format!("t/f{i}.txt"))).sum();
    assert_eq!(s["trawl_audit_bytes{corrupt}"], size("t/sub/deep.bin"));
    assert_eq!(s["trawl_audit_bytes{ok}"], all);
    assert_eq!(s["trawl_audit_bytes{missing}"], 0.0);
    assert_eq!(
        s["trawl_audit_read_bytes"],
        json["bytes_read"].as_f64().unwrap()
    );
    assert_eq!(s["trawl_audit_read_files"], 9.0);
    assert_eq!(s["trawl_audit_success"], 1.0);
    assert_eq!(s["trawl_audit_run"], json["run"].as_f64().unwrap());
    assert_eq!(
        s["trawl_audit_last_success_time_seconds"],
        s["trawl_audit_end_time_seconds"]
    );
    assert!(
        s["trawl_audit_start_time_seconds"].as_f64() <= s["trawl_audit_end_time_seconds"].as_f64()
    );
    assert!(
        s["trawl_audit_oldest_verification_age_seconds"]
            .as_f64()
            .unwrap()
            >= 0.0
    );
    assert!(
        s.get("trawl_audit_files_due").is_none(),
        "no policy: no files due"
    );

    let args = ["catalog", "report", "-c", CATALOG, "--metrics", "r.prom"];
    d.cmd().args(args).run().code(0);
    promtool_accepts(&d, &promtool, "r.prom");
    let r = parse(&d, "r.prom");
    for (k, v) in s.as_object().unwrap() {
        if !k.starts_with("trawl_audit_oldest_verification_age") {
            assert_eq!(&r["samples"][k], v, "{k}");
        }
    }
}

/// An audit that fails (its catalog is not one) still writes the file: success 0, its times,
/// no run and no verdicts.
#[test]
fn a_failed_audit_writes_success_0() {
    let Some(promtool) = tool("promtool") else {
        return;
    };
    if !python_with(&["prometheus_client"]) {
        return;
    }
    let d = Dir::new();
    tree(&d);
    d.create(b"bad.db", b"not a catalog");
    let args = ["audit", "t", "-c", "bad.db", "-q", "--metrics", "m.prom"];
    let r = d.cmd().args(args).run();
    r.code(2);
    r.stderr_has("bad.db");
    promtool_accepts(&d, &promtool, "m.prom");
    let s = &parse(&d, "m.prom")["samples"];
    assert_eq!(s["trawl_audit_success"], 0.0);
    assert!(s["trawl_audit_end_time_seconds"].as_f64().unwrap() > 1.0e9);
    assert!(s.get("trawl_audit_run").is_none());
    assert!(s.get("trawl_audit_files{ok}").is_none());
    assert!(s.get("trawl_audit_last_success_time_seconds").is_none());
}

/// A metrics file inside a root is refused from the first run (exit 2, nothing written, no run
/// recorded), through whatever name reaches the root: written, it would be among the files
/// the next run reads, which would then refuse to replace it, a nightly audit failing from
/// its second night.
#[test]
fn a_metrics_file_inside_a_root_is_refused_from_the_first_run() {
    let d = Dir::new();
    d.create(b"t/x", b"x");
    std::os::unix::fs::symlink("t", d.join("link")).unwrap();
    for name in ["t/m.prom", "link/m.prom"] {
        d.cmd()
            .args(["audit", "t", "-c", "cat.db", "-q", "--metrics", name])
            .run()
            .code(2)
            .stderr_has("--metrics")
            .stderr_has("which is audited: the next audit would find the file");
        assert!(!d.join("t/m.prom").exists());
    }
    assert!(!d.join("cat.db").exists());
    for _ in 0..2 {
        d.cmd()
            .args(["audit", "t", "-c", "cat.db", "-q", "--metrics", "m.prom"])
            .run()
            .code(0);
    }
}
