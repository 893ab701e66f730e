//! `trawl audit s3://BUCKET/PREFIX -c FILE --no-download`: the store's own checksums of each
//! registered object (HeadObject with checksum mode) compared with the digests registered from
//! a read, on s3s-fs and on moto: ok as "store checksum unchanged" with no GetObject, a planted
//! stored value corrupt naming its algorithm, a composite-only object not compared (exit 3),
//! nothing counted as verified by reading, and the flags it cannot go with refused.

use crate::s3_support::{
    Checksum, Env, FaultProxy, S3Server, Uploader, s3s_with_bucket, trawl_with,
};
use crate::util::{Dir, Run, noise, run_tool, tool};
use base64::Engine;
use serde_json::Value;
use std::ffi::OsStr;

/// The full-object checksums each object of `p/` is uploaded with; a catalog of `p/` records
/// the three.
const KINDS: [(&str, Checksum); 3] = [
    ("crc64", Checksum::Crc64Nvme),
    ("crc32c", Checksum::Crc32c),
    ("sha256", Checksum::Sha256),
];

fn bytes_of(i: usize) -> Vec<u8> {
    noise(20_000 + i, i as u64)
}

/// `p/` with an object of each kind, `q/etag` with none (its ETag its only value).
fn upload(up: &Uploader) {
    for (i, (name, c)) in KINDS.into_iter().enumerate() {
        up.put("bkt", &format!("p/{name}"), &bytes_of(i), c);
    }
    up.put("bkt", "q/etag", &bytes_of(9), Checksum::None);
}

/// Registers `p/` in `a.db` (sha256, crc64nvme, crc32c) and `q/` in `b.db` (md5 only) by a
/// full audit.
fn register(d: &Dir, env: &Env) {
    for (prefix, cat, algs) in [
        ("s3://bkt/p", "a.db", "sha256,crc64nvme,crc32c"),
        ("s3://bkt/q", "b.db", "md5"),
    ] {
        let args = ["audit", prefix, "-c", cat, "--init", "-q", "-d", algs];
        trawl_with(d, env, &args).code(0);
    }
}

/// `audit PREFIX -c CAT --no-download`, its JSON.
fn no_download(d: &Dir, env: &Env, prefix: &str, cat: &str) -> (Run, Value) {
    let _ = std::fs::remove_file(d.join("r.json"));
    let args = [
        "audit",
        prefix,
        "-c",
        cat,
        "--no-download",
        "--json",
        "r.json",
    ];
    let r = trawl_with(d, env, &args);
    let text = std::fs::read_to_string(d.join("r.json"))
        .unwrap_or_else(|e| panic!("r.json: {e}\n{}\n{}", r.stdout, r.stderr));
    (r, serde_json::from_str(&text).unwrap())
}

/// The event of `s3://bkt/KEY`.
fn event<'a>(v: &'a Value, key: &str) -> &'a Value {
    let path = format!("s3://bkt/{key}");
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == path.as_str())
        .unwrap_or_else(|| panic!("no event for {path}: {v:#}"))
}

fn detail<'a>(v: &'a Value, key: &str) -> &'a str {
    event(v, key)["detail"].as_str().unwrap_or_default()
}

/// A checksum's base64 value (as S3 sends it) in hex.
fn hex_of(b64: &str) -> String {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    raw.iter().map(|b| format!("{b:02x}")).collect()
}

/// The whole check on one server: every object ok by the store's own value, each naming the
/// algorithm that agreed, and nothing asked of the store but the listing and one HeadObject
/// per object.
fn every_kind_is_ok_without_a_download(server: &S3Server, d: &Dir) {
    let up = Uploader::new(server.endpoint());
    upload(&up);
    register(d, &server.env());
    let proxy = FaultProxy::start(server.endpoint());
    let (r, v) = no_download(d, &proxy.env(), "s3://bkt/p", "a.db");
    r.code(0)
        .counted(&[("ok", 3), ("uncompared", 0), ("modified", 0)]);
    r.stdout_has("store checksum unchanged");
    r.stdout_has("no object read");
    for (name, alg) in [
        ("crc64", "CRC64NVME"),
        ("crc32c", "CRC32C"),
        ("sha256", "SHA256"),
    ] {
        let e = event(&v, &format!("p/{name}"));
        assert_eq!(e["state"], "ok", "{e}");
        let said = detail(&v, &format!("p/{name}"));
        assert!(
            said.starts_with("store checksum unchanged (") && said.contains(alg),
            "{e}"
        );
    }
    assert_eq!(
        (&v["mode"], &v["files_read"], &v["bytes_read"]),
        (&"stored".into(), &0.into(), &0.into())
    );
    assert!(
        v["proves"]
            .as_str()
            .unwrap()
            .contains("store's own checksum"),
        "{v:#}"
    );
    let (r, v) = no_download(d, &proxy.env(), "s3://bkt/q", "b.db");
    r.code(0).counted(&[("ok", 1)]);
    assert_eq!(detail(&v, "q/etag"), "store checksum unchanged (MD5)");
    let log = proxy.requests();
    let objects_read: Vec<_> = log
        .iter()
        .filter(|l| l.method != "HEAD" && !l.path.contains("list-type=2"))
        .collect();
    assert!(
        objects_read.is_empty(),
        "only listings and HeadObject: {objects_read:#?}"
    );
    assert_eq!(
        log.iter().filter(|l| l.method == "HEAD").count(),
        4,
        "{log:#?}"
    );
}

#[test]
fn no_download_finds_every_kind_of_stored_checksum_unchanged_and_reads_no_object() {
    let d = Dir::new();
    let (server, _up) = s3s_with_bucket(&d);
    every_kind_is_ok_without_a_download(&server, &d);
}

#[test]
fn no_download_finds_every_kind_of_stored_checksum_unchanged_on_moto() {
    let Some(server) = S3Server::moto() else {
        return;
    };
    let d = Dir::new();
    Uploader::new(server.endpoint()).create_bucket("bkt");
    every_kind_is_ok_without_a_download(&server, &d);
}

/// A stored value that differs from the registered digest, at the registered size and time:
/// corrupt, naming the algorithm and both values, exit 1; planted in the store (s3s-fs's own
/// record) or in its answers (the proxy).
#[test]
fn a_stored_checksum_that_differs_is_corrupt_naming_the_algorithm() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    upload(&up);
    register(&d, &server.env());
    let wrong64 = Checksum::Crc64Nvme.value(b"other bytes").unwrap();
    server.plant_checksum("bkt", "p/crc64", "crc64nvme", &wrong64);
    server.plant_e_tag("bkt", "q/etag", "0123456789abcdef0123456789abcdef");
    let proxy = FaultProxy::start(server.endpoint());
    let wrong32c = Checksum::Crc32c.value(b"other bytes").unwrap();
    proxy.override_header("bkt/p/crc32c", "x-amz-checksum-crc32c", &wrong32c);
    let (r, v) = no_download(&d, &proxy.env(), "s3://bkt/p", "a.db");
    r.code(1).counted(&[("ok", 1), ("corrupt", 2)]);
    for (name, c, wrong) in [
        ("crc64", Checksum::Crc64Nvme, &wrong64),
        ("crc32c", Checksum::Crc32c, &wrong32c),
    ] {
        let i = KINDS.iter().position(|(n, _)| *n == name).unwrap();
        let registered = hex_of(&c.value(&bytes_of(i)).unwrap());
        let want = format!(
            "the store's {} checksum is {}, the digest registered from a read {registered}",
            c.header_name().unwrap().to_uppercase(),
            hex_of(wrong)
        );
        assert_eq!(event(&v, &format!("p/{name}"))["state"], "corrupt");
        assert!(detail(&v, &format!("p/{name}")).starts_with(&want), "{v:#}");
    }
    r.stderr_has("s3://bkt/p/crc64: CORRUPT");
    let (r, v) = no_download(&d, &proxy.env(), "s3://bkt/q", "b.db");
    r.code(1);
    assert!(
        detail(&v, "q/etag").contains("MD5 checksum is 0123456789abcdef"),
        "{v:#}"
    );
    // A full read finds the bytes as registered: restored.
    trawl_with(&d, &server.env(), &["audit", "s3://bkt/p", "-c", "a.db"])
        .code(0)
        .counted(&[("restored", 2), ("ok", 1)]);
}

/// An object whose store holds only a composite checksum and a multipart ETag: not compared,
/// saying what it holds, never ok, and the run exits 3 (not checked).
#[test]
fn a_composite_only_object_is_not_compared() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    up.put("bkt", "u/comp", &bytes_of(3), Checksum::None);
    let args = [
        "audit",
        "s3://bkt/u",
        "-c",
        "c.db",
        "--init",
        "-q",
        "-d",
        "sha256,crc32c,md5",
    ];
    trawl_with(&d, &server.env(), &args).code(0);
    let proxy = FaultProxy::start(server.endpoint());
    for (h, value) in [
        ("etag", "\"0123456789abcdef0123456789abcdef-3\""),
        ("x-amz-checksum-crc32c", "AAAAAA==-3"),
        ("x-amz-checksum-type", "COMPOSITE"),
    ] {
        proxy.override_header("bkt/u/comp", h, value);
    }
    let (r, v) = no_download(&d, &proxy.env(), "s3://bkt/u", "c.db");
    r.code(3).counted(&[("ok", 0), ("uncompared", 1)]);
    assert_eq!(event(&v, "u/comp")["state"], "uncompared");
    let said = detail(&v, "u/comp");
    assert!(
        said.starts_with("not compared: the store holds ")
            && said.contains("a composite CRC32C checksum of 3 parts")
            && said.contains("a multipart ETag"),
        "{said}"
    );
    assert_eq!(v["counts"]["ok"], 0);
}

/// A no-download run verifies nothing by reading: the registration's last verification stays
/// (the catalog's oldest verification with it), and a full audit's `--older-than` still picks
/// the object.
#[test]
fn an_object_only_looked_up_is_still_due_for_a_read() {
    let Some(sqlite) = tool("sqlite3") else {
        return;
    };
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    upload(&up);
    register(&d, &server.env());
    let sql = |q: &str| run_tool(d.path(), &sqlite, &[OsStr::new("a.db"), OsStr::new(q)]);
    // Verified two hours ago.
    sql("UPDATE files SET last_verified = last_verified - 7200").code(0);
    let oldest = |d: &Dir| {
        let r = d.cmd().args(["catalog", "report", "-c", "a.db"]).run();
        r.code(0);
        let line = r
            .stdout
            .lines()
            .find(|l| l.starts_with("oldest verification"));
        (line.unwrap().to_string(), r.stdout.clone())
    };
    let before = oldest(&d).0;
    no_download(&d, &server.env(), "s3://bkt/p", "a.db")
        .0
        .code(0);
    let (after, report) = oldest(&d);
    assert_eq!(after, before);
    assert!(
        report.contains("a stored (no-download) audit proves: the store's own checksum"),
        "{report}"
    );
    let _ = std::fs::remove_file(d.join("r.json"));
    let args = [
        "audit",
        "s3://bkt/p",
        "-c",
        "a.db",
        "--older-than",
        "1h",
        "--json",
        "r.json",
    ];
    trawl_with(&d, &server.env(), &args).code(0);
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    assert_eq!(v["files_read"], 3, "{v:#}");
}

/// A new catalog of a prefix records sha256 and crc64nvme unless told otherwise, so that
/// objects S3 keeps a CRC64NVME of compare without a download.
#[test]
fn a_new_catalog_of_a_prefix_records_crc64nvme_too() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    up.put("bkt", "p/a", b"aaa", Checksum::Crc64Nvme);
    let args = [
        "audit",
        "s3://bkt/p",
        "-c",
        "cat.db",
        "--init",
        "--json",
        "r.json",
    ];
    trawl_with(&d, &server.env(), &args).code(0);
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    assert_eq!(v["algorithms"], serde_json::json!(["sha256", "crc64nvme"]));
    let (r, v) = no_download(&d, &server.env(), "s3://bkt/p", "cat.db");
    r.code(0);
    assert!(detail(&v, "p/a").contains("CRC64NVME"), "{v:#}");
}

/// Lookups that fail (here: credentials that expire after the listing) make each object
/// unreadable and the run goes on to its end (exit 2); the registrations stay as they were.
#[test]
fn a_lookup_that_fails_is_unreadable_and_the_audit_goes_on() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    upload(&up);
    register(&d, &server.env());
    let proxy = FaultProxy::start(server.endpoint());
    proxy.expire_after(1);
    let (r, v) = no_download(&d, &proxy.env(), "s3://bkt/p", "a.db");
    r.code(2)
        .counted(&[("unreadable", 3), ("ok", 0), ("missing", 0)]);
    assert_eq!(v["status"], "complete");
    let (r, _) = no_download(&d, &server.env(), "s3://bkt/p", "a.db");
    r.code(0).counted(&[("ok", 3)]);
}

/// `--no-download` where it cannot apply: refused in one line, exit 2, before anything runs.
#[test]
fn no_download_is_refused_where_it_cannot_apply() {
    let d = Dir::new();
    let (server, _up) = s3s_with_bucket(&d);
    d.create(b"local/f", b"x");
    let r = d
        .cmd()
        .args(["audit", "local", "-c", "l.db", "--no-download"])
        .run();
    r.code(2).stderr_has("--no-download").stderr_has("s3://");
    for extra in [
        &["--metadata-only"][..],
        &["--ocfl"],
        &["--forget-missing"],
        &["--max-bytes", "1G"],
        &["--max-time", "1h"],
        &["--older-than", "1d"],
    ] {
        let mut args = vec!["audit", "s3://bkt/p", "-c", "x.db", "--no-download"];
        args.extend_from_slice(extra);
        let r = trawl_with(&d, &server.env(), &args);
        r.code(2).stderr_has(extra[0]);
        assert_eq!(
            r.stderr.trim().lines().count(),
            1,
            "{extra:?}: {}",
            r.stderr
        );
    }
    assert!(!d.join("x.db").exists() && !d.join("l.db").exists());
}
