//! `trawl catalog export --format premis|premis-jsonl`: the catalog's files and checks as
//! PREMIS 3.0, validated against the Library of Congress's schema with xmllint, and read back
//! with Python's own XML and JSON parsers.

use std::ffi::OsStr;
use std::path::PathBuf;

use serde_json::Value;

use crate::audit::flip_byte;
use crate::util::{Dir, make_awkward, python_json, python_with, run_tool, sha256_hex, skip, tool};

/// The PREMIS 3.0 schema beside the repository (`../shared/premis`: a clone of the project
/// alone has none, and the test is skipped, saying so).
fn schema() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/premis/premis-v3-0.xsd");
    if !p.is_file() {
        skip(&format!(
            "the PREMIS 3.0 schema is not at {} (see the README there)",
            p.display()
        ));
        return None;
    }
    Some(p)
}

/// Reads both exports with Python's parsers: every XML event and every JSON line as the same
/// flat record, each object's identifier decoded back to bytes (hex) with its digests and size,
/// and the files under `t` with the digests hashlib computes.
const READ_BACK: &str = r#"
import hashlib, json, os, sys, xml.etree.ElementTree as ET
P = "{http://www.loc.gov/premis/v3}"
def decode(s):
    out, i, b = bytearray(), 0, s.encode()
    while i < len(b):
        if b[i:i+1] == b"%":
            out.append(int(b[i+1:i+3], 16)); i += 3
        else:
            out.append(b[i]); i += 1
    return bytes(out).hex()
root = ET.parse("out.xml").getroot()
def text(e, path): return e.find("/".join(P + p for p in path.split("/"))).text
events = []
for e in root.findall(P + "event"):
    t, o = e.find(P + "eventType"), e.find(P + "eventOutcomeInformation/" + P + "eventOutcome")
    events.append({
        "eventIdentifierType": text(e, "eventIdentifier/eventIdentifierType"),
        "eventIdentifierValue": text(e, "eventIdentifier/eventIdentifierValue"),
        "eventType": t.text, "eventTypeURI": t.get("valueURI"),
        "eventDateTime": text(e, "eventDateTime"),
        "eventDetail": text(e, "eventDetailInformation/eventDetail"),
        "eventOutcome": o.text, "eventOutcomeURI": o.get("valueURI"),
        "eventOutcomeDetailNote": [n.text for n in e.iter(P + "eventOutcomeDetailNote")],
        "linkingAgentIdentifierType": text(e, "linkingAgentIdentifier/linkingAgentIdentifierType"),
        "linkingAgentIdentifierValue": text(e, "linkingAgentIdentifier/linkingAgentIdentifierValue"),
        "linkingAgentRole": text(e, "linkingAgentIdentifier/linkingAgentRole"),
        "linkingObjectIdentifierType": text(e, "linkingObjectIdentifier/linkingObjectIdentifierType"),
        "linkingObjectIdentifierValue": text(e, "linkingObjectIdentifier/linkingObjectIdentifierValue"),
    })
objects = {}
for o in root.findall(P + "object"):
    ch = o.find(P + "objectCharacteristics")
    fix = {f.find(P + "messageDigestAlgorithm").text: f.find(P + "messageDigest").text for f in ch.findall(P + "fixity")}
    uris = sorted(f.find(P + "messageDigestAlgorithm").get("valueURI") for f in ch.findall(P + "fixity"))
    objects[decode(text(o, "objectIdentifier/objectIdentifierValue"))] = {"fixity": fix, "uris": uris, "size": int(ch.find(P + "size").text)}
for e in events:
    e["object_hex"] = decode(e["linkingObjectIdentifierValue"])
lines = [json.loads(l) for l in open("out.jsonl", encoding="utf-8")]
for e in lines:
    e["object_hex"] = decode(e["linkingObjectIdentifierValue"])
files = {}
top = os.path.realpath("t").encode()
for d, _, names in os.walk(top):
    for n in names:
        p = os.path.join(d, n)
        data = open(p, "rb").read()
        files[p.hex()] = {"SHA-256": hashlib.sha256(data).hexdigest(), "MD5": hashlib.md5(data).hexdigest(), "size": len(data)}
agent = root.find(P + "agent")
print(json.dumps({"events": events, "lines": lines, "objects": objects, "files": files,
                  "agent": [text(agent, "agentName"), agent.find(P + "agentType").text, text(agent, "agentVersion")]}))
"#;

/// A collection of awkward names (a line feed, a byte that is not UTF-8) and a file corrupted
/// in its third audit: the XML validates against the PREMIS 3.0 schema; each file is one
/// object whose identifier decodes to its path and whose fixity is the registered digests
/// (what hashlib computes, the corrupt file's from before); the events are the registrations,
/// the corruption, and each file's latest ok read, and the JSON Lines hold the same events.
#[test]
fn premis_export_validates_and_its_json_lines_hold_the_same_events() {
    let (Some(xsd), Some(xmllint)) = (schema(), tool("xmllint")) else {
        return;
    };
    if !python_with(&["xml.etree.ElementTree"]) {
        return;
    }
    let d = Dir::new();
    make_awkward(&d, "t");
    let victim = b"the victim's content, before".as_slice();
    d.create(b"t/victim.bin", victim);
    let audit = |want: i32| {
        d.cmd()
            .args(["audit", "t", "-c", "cat.db", "-d", "sha256,md5", "-q"])
            .run()
            .code(want);
    };
    audit(0);
    audit(0);
    flip_byte(&d.join("t/victim.bin"), 4);
    audit(1);
    for (format, out) in [("premis", "out.xml"), ("premis-jsonl", "out.jsonl")] {
        let args = [
            "catalog", "export", "-c", "cat.db", "--format", format, "-o", out,
        ];
        d.cmd().args(args).run().code(0);
    }
    let v = run_tool(
        d.path(),
        &xmllint,
        &[
            OsStr::new("--noout"),
            OsStr::new("--schema"),
            xsd.as_os_str(),
            OsStr::new("out.xml"),
        ],
    );
    v.code(0);
    v.stderr_has("out.xml validates");

    let back: Value = python_json(&d, READ_BACK, "");
    let events = back["events"].as_array().unwrap();
    assert_eq!(
        back["lines"].as_array().unwrap(),
        events,
        "JSON Lines = XML events"
    );
    assert_eq!(
        back["agent"],
        serde_json::json!(["trawl", "software", env!("CARGO_PKG_VERSION")])
    );
    check_objects(&back, victim);
    check_events(&back, events);
}

/// One object per file under `t`, its identifier decoding to the file's path, its fixity the
/// digests hashlib computes (the corrupt file's: of its content before), with the Library of
/// Congress's terms for SHA-256 and MD5.
fn check_objects(back: &Value, victim: &[u8]) {
    let files = back["files"].as_object().unwrap();
    let objects = back["objects"].as_object().unwrap();
    assert_eq!(objects.len(), 9);
    assert_eq!(
        objects.keys().collect::<Vec<_>>(),
        files.keys().collect::<Vec<_>>()
    );
    let loc = "http://id.loc.gov/vocabulary/preservation/cryptographicHashFunctions/";
    for (path, o) in objects {
        let f = &files[path];
        let is_victim = path.ends_with(&hex_of(b"/victim.bin"));
        let sha = if is_victim {
            sha256_hex(victim)
        } else {
            f["SHA-256"].as_str().unwrap().to_string()
        };
        assert_eq!(o["fixity"]["SHA-256"], sha.as_str(), "{path}");
        if !is_victim {
            assert_eq!(o["fixity"]["MD5"], f["MD5"], "{path}");
        }
        assert_eq!(o["size"], f["size"]);
        assert_eq!(
            o["uris"],
            serde_json::json!([format!("{loc}md5"), format!("{loc}sha256")])
        );
    }
}

/// The registrations (digests calculated), the corruption (a failed fixity check, the verdict
/// its first note), and each file's latest ok read: run 3's, a success.
fn check_events(back: &Value, events: &[Value]) {
    let objects = back["objects"].as_object().unwrap();
    let of = |kind: &str, run: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| {
                e["eventType"] == kind
                    && e["eventIdentifierValue"]
                        .as_str()
                        .unwrap()
                        .starts_with(&format!("trawl run {run}: "))
            })
            .collect()
    };
    let registered = of("message digest calculation", "1");
    assert_eq!(registered.len(), 9);
    assert!(registered.iter().all(|e| e["eventOutcome"] == "success"));
    assert!(
        of("fixity check", "2").is_empty(),
        "run 2's ok reads are kept only as run 3's"
    );
    let checks = of("fixity check", "3");
    assert_eq!(checks.len(), 9);
    let failed: Vec<&&Value> = checks
        .iter()
        .filter(|e| e["eventOutcome"] == "failure")
        .collect();
    assert_eq!(failed.len(), 1);
    assert!(
        failed[0]["object_hex"]
            .as_str()
            .unwrap()
            .ends_with(&hex_of(b"/victim.bin"))
    );
    assert_eq!(failed[0]["eventOutcomeDetailNote"][0], "corrupt");
    assert_eq!(
        failed[0]["eventTypeURI"],
        "http://id.loc.gov/vocabulary/preservation/eventType/fix"
    );
    assert_eq!(
        failed[0]["eventOutcomeURI"],
        "http://id.loc.gov/vocabulary/preservation/eventOutcome/fai"
    );
    for e in events {
        assert!(
            objects.contains_key(e["object_hex"].as_str().unwrap()),
            "{e}"
        );
        assert_eq!(e["linkingObjectIdentifierType"], "local path");
        assert_eq!(
            e["linkingAgentIdentifierValue"],
            format!("trawl {}", env!("CARGO_PKG_VERSION"))
        );
    }
}

fn hex_of(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A catalog that registers no file (an empty tree) has no PREMIS document: the schema wants
/// at least one object, so `--format premis` is refused (exit 2) and writes nothing, rather
/// than a document the schema rejects; its JSON Lines (events alone) are empty.
#[test]
fn a_catalog_of_no_file_is_refused_as_premis_xml() {
    let d = Dir::new();
    std::fs::create_dir(d.join("t")).unwrap();
    d.cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .run()
        .code(0);
    d.cmd()
        .args(["catalog", "export", "-c", "cat.db", "--format", "premis"])
        .args(["-o", "out.xml"])
        .run()
        .code(2)
        .stderr_has("registers no file, and a PREMIS document holds at least one object");
    assert!(!d.join("out.xml").exists());
    let r = d
        .cmd()
        .args([
            "catalog",
            "export",
            "-c",
            "cat.db",
            "--format",
            "premis-jsonl",
        ])
        .run();
    r.code(0);
    assert_eq!(r.stdout, "");
}
