//! `--exclude` on `s3://` roots: a prefix's keys left out as the same files on disk are, by
//! `scan` (nothing matched is read) and by `audit` (a registered object left out is neither
//! missing nor read).

use crate::s3_support::{Checksum, FaultProxy, s3s_with_bucket as s3s, trawl_with as trawl};
use crate::util::{Dir, noise};

fn sorted(text: &str) -> Vec<String> {
    let mut l: Vec<String> = text.lines().map(str::to_string).collect();
    l.sort();
    l
}

/// `--exclude` on a prefix leaves out what it leaves out of the same files on disk: the same
/// manifest, the same excluded counts, a matched "directory" said once, whole, and nothing
/// below it read (no GET for its keys).
#[test]
fn exclude_leaves_out_of_a_prefix_what_it_leaves_out_on_disk() {
    let d = Dir::new();
    let (server, up) = s3s(&d);
    let proxy = FaultProxy::start(server.endpoint());
    let files = [
        ("keep.txt", 10),
        ("drop.tmp", 20),
        ("a/keep.bin", 30),
        ("a/b/drop.tmp", 40),
        ("cache/x", 50),
        ("cache/deep/y", 60),
        ("a/cache/z", 70),
        ("a/cache/w.tmp", 80),
    ];
    for (i, (name, size)) in files.iter().enumerate() {
        let data = noise(*size, i as u64 + 9);
        d.create(format!("local/{name}").as_bytes(), &data);
        up.put("bkt", &format!("p/{name}"), &data, Checksum::None);
    }
    let flags = [
        "--exclude",
        "*.tmp",
        "--exclude",
        "cache/",
        "-m",
        "sha256sum:-",
        "--no-reduce",
    ];
    let mut args = vec!["scan", "-q", "s3://bkt/p", "--json", "objects.json"];
    args.extend(flags);
    let objects = trawl(&d, &proxy.env(), &args);
    objects.code(0);
    let mut args = vec!["scan", "-q", "local", "--json", "local.json"];
    args.extend(flags);
    let local = d.cmd().args(&args).run();
    local.code(0);
    assert_eq!(sorted(&objects.stdout), sorted(&local.stdout));
    // What is left: the two files no pattern matches (sha256sum's names, independently).
    let mut names: Vec<String> = sorted(&objects.stdout)
        .iter()
        .map(|l| l.split_once("  ").unwrap().1.to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["a/keep.bin", "keep.txt"]);
    let x = |f: &str| {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(d.join(f)).unwrap()).unwrap();
        let x = &v["excluded"];
        (
            x["files"].clone(),
            x["bytes"].clone(),
            x["directories"].clone(),
        )
    };
    // Files: drop.tmp and a/b/drop.tmp (20 + 40 bytes); directories: cache and a/cache.
    assert_eq!(x("objects.json"), (2.into(), 60.into(), 2.into()));
    assert_eq!(x("objects.json"), x("local.json"));
    let got: Vec<String> = proxy
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && !r.path.contains("list-type"))
        .map(|r| r.path.clone())
        .collect();
    for (name, _) in files
        .iter()
        .filter(|(n, _)| n.ends_with(".tmp") || n.contains("cache/"))
    {
        assert!(
            !got.iter().any(|t| t.contains(&format!("/p/{name}"))),
            "{name} was read: {got:?}"
        );
    }
}

/// An audit with `--exclude` of a prefix registered whole: what the patterns match is left
/// out (not missing, not read), the rest audited as before.
#[test]
fn an_audit_leaves_out_what_exclude_matches_and_calls_none_of_it_missing() {
    let d = Dir::new();
    let (server, up) = s3s(&d);
    for (i, k) in ["keep", "cache/a", "cache/b/c", "x.tmp"].iter().enumerate() {
        up.put(
            "bkt",
            &format!("p/{k}"),
            &noise(1000 + i, i as u64),
            Checksum::None,
        );
    }
    let env = server.env();
    trawl(
        &d,
        &env,
        &["audit", "s3://bkt/p", "-c", "cat.db", "--init", "-q"],
    )
    .code(0);
    let proxy = FaultProxy::start(server.endpoint());
    let r = trawl(
        &d,
        &proxy.env(),
        &[
            "audit",
            "s3://bkt/p",
            "-c",
            "cat.db",
            "--exclude",
            "cache/",
            "--exclude",
            "*.tmp",
        ],
    );
    r.code(0).counted(&[("ok", 1), ("missing", 0)]);
    let read: Vec<String> = proxy
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && !r.path.contains("list-type"))
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(read.len(), 1, "only p/keep is read: {read:?}");
    assert!(read[0].contains("/p/keep"), "{read:?}");
    // Without the patterns, the same catalog finds everything as registered.
    trawl(&d, &env, &["audit", "s3://bkt/p", "-c", "cat.db"])
        .code(0)
        .counted(&[("ok", 4)]);
}
