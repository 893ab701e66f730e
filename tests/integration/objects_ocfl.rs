//! `trawl ocfl validate s3://BUCKET/PREFIX`: OCFL objects and storage roots uploaded under a
//! prefix have the verdicts, the codes, the findings and the exit code of the same trees on
//! disk; content changed after upload is a fixity error; a key that is no plain name is named
//! and never read; a prefix that cannot be listed is one line, exit 2.

use std::path::Path;

use crate::objects_bag::upload;
use crate::ocfl::{records, write_object};
use crate::s3_support::{Checksum, Env, FaultProxy, s3s_with_bucket, trawl_with};
use crate::util::{Dir, Run};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/ocfl-fixtures");

/// `--json`'s records with the tree's name (`root`) said as `ROOT`, each object's findings
/// sorted (content findings come in the order the reads end, on disk too).
fn records_of(text: &str, root: &str) -> Vec<serde_json::Value> {
    let mut all = Vec::new();
    for line in text.lines() {
        let mut v: serde_json::Value = serde_json::from_str(&line.replace(root, "ROOT"))
            .unwrap_or_else(|e| panic!("{e}: {line}"));
        for key in ["errors", "warnings"] {
            if let Some(a) = v.get_mut(key).and_then(|a| a.as_array_mut()) {
                a.sort_by_key(|f| f.to_string());
            }
        }
        all.push(v);
    }
    all
}

/// A run's lines with the tree's name (`root`) said as `ROOT`, sorted.
fn lines(text: &str, root: &str) -> Vec<String> {
    let mut l: Vec<String> = text.lines().map(|l| l.replace(root, "ROOT")).collect();
    l.sort();
    l
}

/// `ocfl validate` of `dir` (below `d`) and of `url`, with `extra`: the same exit code and the
/// same lines on stdout and stderr, each tree named for the other. Returns the objects' run.
fn same_verdicts(d: &Dir, env: &Env, dir: &str, url: &str, extra: &[&str]) -> Run {
    let local = d.cmd().args(["ocfl", "validate", dir]).args(extra).run();
    let mut args = vec!["ocfl", "validate", url];
    args.extend(extra);
    let objects = trawl_with(d, env, &args);
    let both = format!(
        "{dir}:\n--- disk ---\n{}{}\n--- objects ---\n{}{}",
        local.stdout, local.stderr, objects.stdout, objects.stderr
    );
    assert_eq!(objects.code, local.code, "{both}");
    assert_eq!(
        lines(&objects.stdout, url),
        lines(&local.stdout, dir),
        "{both}"
    );
    assert_eq!(
        lines(&objects.stderr, url),
        lines(&local.stderr, dir),
        "{both}"
    );
    objects
}

/// Whether `dir` holds an empty directory anywhere (a store cannot hold one: such a fixture
/// is another tree once uploaded).
fn has_empty_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
        || std::fs::read_dir(dir).unwrap().any(|e| {
            let p = e.unwrap().path();
            p.is_dir() && has_empty_dir(&p)
        })
}

/// Every fixture of OCFL 1.0 and 1.1 (good, bad and warn objects) that a store can hold (no
/// empty directory), uploaded under its own prefix: the same JSON records (codes, messages,
/// counts) and exit code as on disk, and most of them not valid or warned about.
#[test]
fn the_ocfl_fixtures_under_a_prefix_have_the_verdicts_of_the_same_objects_on_disk() {
    if !Path::new(FIXTURES).is_dir() {
        return crate::util::skip(&format!("{FIXTURES} is not present"));
    }
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    let mut cases = Vec::new();
    for spec in ["1.0", "1.1"] {
        for kind in ["good", "bad", "warn"] {
            let dir = Path::new(FIXTURES).join(format!("{spec}/{kind}-objects"));
            let mut names: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            for name in names {
                if has_empty_dir(&dir.join(&name)) {
                    continue;
                }
                let prefix = format!("{spec}/{kind}/{name}");
                upload(&up, &dir.join(&name), &prefix);
                cases.push((dir.join(&name), prefix));
            }
        }
    }
    assert!(cases.len() > 120, "{}", cases.len());
    let (mut invalid, mut failures) = (0, Vec::new());
    for (path, prefix) in &cases {
        let local = d.cmd().args(["ocfl", "validate", "--json"]).arg(path).run();
        let url = format!("s3://bkt/{prefix}");
        let objects = trawl_with(&d, &server.env(), &["ocfl", "validate", "--json", &url]);
        let shown = path.to_str().unwrap();
        if objects.code != local.code
            || records_of(&objects.stdout, &url) != records_of(&local.stdout, shown)
        {
            failures.push(format!(
                "{prefix}: exit {} on disk, {} under a prefix\n--- disk ---\n{}{}\n--- objects ---\n{}{}",
                local.code, objects.code, local.stdout, local.stderr, objects.stdout, objects.stderr
            ));
        }
        invalid += usize::from(local.code == 1);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(invalid > 80, "{invalid} of {} invalid", cases.len());
}

/// The storage root of `tests/integration/ocfl.rs`' walk: a declaration, a layout, a file of
/// its own, objects under nested directories, one of several versions.
fn storage_root(root: &Path) {
    std::fs::create_dir_all(root).unwrap();
    std::fs::write(root.join("0=ocfl_1.1"), "ocfl_1.1\n").unwrap();
    std::fs::write(
        root.join("ocfl_layout.json"),
        r#"{"extension": "0004-hashed-n-tuple-storage-layout", "description": "d"}"#,
    )
    .unwrap();
    write_object(
        &root.join("ab/cd/one"),
        "info:one",
        &[&[("a.txt", b"alpha")]],
    );
    write_object(
        &root.join("ab/ef/two"),
        "info:two",
        &[
            &[("a.txt", b"alpha"), ("b/c.txt", b"charlie")],
            &[("a.txt", b"alpha2"), ("b/c.txt", b"charlie")],
            &[("b/c.txt", b"charlie"), ("moved.txt", b"alpha2")],
        ],
    );
    write_object(&root.join("zz/three"), "info:three", &[&[("x", b"")]]);
}

/// A storage root of several objects: valid, with every object read, as on disk; a directory
/// of its hierarchy is held to the root's version as on disk; one with faults of the root and
/// of its hierarchy (a file outside any object, an object of an unknown version, a stray file
/// in an object) has the same findings and codes.
#[test]
fn a_storage_root_under_a_prefix_has_the_verdicts_of_the_same_root_on_disk() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    storage_root(&d.join("ocflroot"));
    upload(&up, &d.join("ocflroot"), "ocflroot");
    let env = server.env();
    let r = same_verdicts(&d, &env, "ocflroot", "s3://bkt/ocflroot", &[]);
    r.code(0);
    let json = same_verdicts(&d, &env, "ocflroot", "s3://bkt/ocflroot", &["--json"]);
    let (objects, s) = records(&json);
    let paths: Vec<&str> = objects
        .iter()
        .map(|o| o["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "s3://bkt/ocflroot/ab/cd/one",
            "s3://bkt/ocflroot/ab/ef/two",
            "s3://bkt/ocflroot/zz/three"
        ]
    );
    assert_eq!(
        (s["kind"].as_str(), s["valid"].as_u64()),
        (Some("storage_root"), Some(3))
    );
    assert_eq!(s["files_checked"], 5, "{s}");
    // A directory of the hierarchy, and an object alone.
    let sub = same_verdicts(&d, &env, "ocflroot/ab", "s3://bkt/ocflroot/ab", &["--json"]);
    assert_eq!(
        records(&sub).1["kind"],
        "storage_hierarchy",
        "{}",
        sub.stdout
    );
    same_verdicts(
        &d,
        &env,
        "ocflroot/ab/ef/two",
        "s3://bkt/ocflroot/ab/ef/two",
        &[],
    )
    .code(0);
    // One level at a time (the delimiter's listing), never the prefix whole.
    let proxy = FaultProxy::start(server.endpoint());
    trawl_with(&d, &proxy.env(), &["ocfl", "validate", "s3://bkt/ocflroot"]).code(0);
    let mut listed: std::collections::BTreeMap<String, usize> = Default::default();
    for l in proxy
        .requests()
        .iter()
        .filter(|l| l.path.contains("list-type=2"))
    {
        assert!(l.path.contains("delimiter=%2F"), "{}", l.path);
        let prefix = l
            .path
            .split("prefix=")
            .nth(1)
            .unwrap_or("")
            .split('&')
            .next();
        *listed.entry(prefix.unwrap_or("").to_string()).or_default() += 1;
    }
    // The root, 4 directories of the hierarchy, 3 objects and their 10 version and content
    // directories: each listed once.
    assert!(
        listed.len() == 18 && listed.values().all(|n| *n == 1),
        "{listed:#?}"
    );

    storage_root(&d.join("ocflbad"));
    std::fs::write(d.join("ocflbad/ab/stray.txt"), "outside any object").unwrap();
    std::fs::write(d.join("ocflbad/zz/three/extra.txt"), "not in the object").unwrap();
    std::fs::create_dir_all(d.join("ocflbad/new/obj")).unwrap();
    std::fs::write(
        d.join("ocflbad/new/obj/0=ocfl_object_9.9"),
        "ocfl_object_9.9\n",
    )
    .unwrap();
    std::fs::write(d.join("ocflbad/0=ocfl_1.1"), "ocfl_1.0\n").unwrap();
    upload(&up, &d.join("ocflbad"), "ocflbad");
    let r = same_verdicts(&d, &env, "ocflbad", "s3://bkt/ocflbad", &[]);
    r.code(1);
    for code in ["E069", "E072", "E004", "E001"] {
        r.stderr_has(&format!("[{code}]"));
    }
}

/// A content object replaced after upload (a byte changed, another size): its object is
/// invalid with the manifest's fixity code (E092, and the fixity block's E093) naming the content path, exit 1, as the
/// same change on disk gives; the objects beside it stay valid.
#[test]
fn content_changed_after_upload_is_a_fixity_error() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    storage_root(&d.join("ocflroot"));
    upload(&up, &d.join("ocflroot"), "ocflroot");
    let env = server.env();
    same_verdicts(&d, &env, "ocflroot", "s3://bkt/ocflroot", &[]).code(0);
    for (key, bytes) in [
        ("ocflroot/ab/ef/two/v1/content/b/c.txt", &b"charliE"[..]),
        ("ocflroot/zz/three/v1/content/x", b"now something"),
    ] {
        up.put("bkt", key, bytes, Checksum::None);
        std::fs::write(d.join(key), bytes).unwrap();
    }
    let r = same_verdicts(&d, &env, "ocflroot", "s3://bkt/ocflroot", &[]);
    r.code(1)
        .stdout_has("s3://bkt/ocflroot/ab/ef/two is NOT a valid OCFL 1.1 object")
        .stderr_has("v1/content/b/c.txt")
        .stderr_has("[E092]");
    let json = trawl_with(
        &d,
        &env,
        &["ocfl", "validate", "--json", "s3://bkt/ocflroot"],
    );
    let (objects, s) = records(&json);
    assert_eq!(
        (s["valid"].as_u64(), s["invalid"].as_u64()),
        (Some(1), Some(2))
    );
    let codes: Vec<&str> = objects[1]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    // The manifest's sha512 and the fixity block's md5, each a fixity code.
    assert!(
        codes.contains(&"E092") && codes.iter().all(|c| ["E092", "E093"].contains(c)),
        "{codes:?}"
    );
}

/// Keys that are no plain name in their "directory" (`..`, an empty segment), stored beside
/// an object's content and at the storage root: each named with the code a link there gets,
/// never valid, and never asked for (on moto, which stores such keys; skipped, saying so,
/// where it is not installed).
#[test]
fn keys_that_are_no_plain_name_are_named_and_never_read() {
    let Some(server) = crate::s3_support::S3Server::moto() else {
        return;
    };
    let d = Dir::new();
    let up = crate::s3_support::Uploader::new(server.endpoint());
    up.create_bucket("bkt");
    storage_root(&d.join("ocflroot"));
    upload(&up, &d.join("ocflroot"), "ocflroot");
    for key in [
        "ocflroot/zz/three/v1/content/../../../secret-a",
        "ocflroot/ab/cd/one//secret-b",
        "ocflroot/./secret-c",
    ] {
        up.put("bkt", key, b"never read", Checksum::None);
    }
    let proxy = FaultProxy::start(server.endpoint());
    let r = trawl_with(&d, &proxy.env(), &["ocfl", "validate", "s3://bkt/ocflroot"]);
    r.code(1)
        .stderr_has("s3://bkt/ocflroot/zz/three: [E023] v1/content/../: ")
        .stderr_has("s3://bkt/ocflroot/ab/cd/one: [E001] /: ")
        .stderr_has("s3://bkt/ocflroot: [E072] ./: ");
    assert!(!r.stdout.contains("storage root is valid"), "{}", r.stdout);
    let asked: Vec<String> = proxy
        .requests()
        .into_iter()
        .map(|l| l.path)
        .filter(|p| p.contains("secret"))
        .collect();
    assert!(
        asked.is_empty(),
        "asked for keys that are no plain name: {asked:?}"
    );
}

/// A bucket that does not exist, a prefix with nothing under it and an inventory alone are
/// each one line, exit 2; the flags that mean nothing for objects are refused.
#[test]
fn a_prefix_that_cannot_be_listed_or_holds_nothing_is_one_line_and_exit_2() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    let env = server.env();
    let one_line = |args: &[&str], has: &str| {
        let r = trawl_with(&d, &env, args);
        r.code(2).stderr_has(has);
        assert_eq!(r.stderr.trim().lines().count(), 1, "{args:?}: {}", r.stderr);
    };
    one_line(
        &["ocfl", "validate", "s3://no-such-bucket/root"],
        "s3://no-such-bucket/root/: cannot list: the store answered NoSuchBucket",
    );
    one_line(
        &["ocfl", "validate", "s3://bkt/nothing"],
        "s3://bkt/nothing: no key under this prefix",
    );
    storage_root(&d.join("ocflroot"));
    upload(&up, &d.join("ocflroot"), "ocflroot");
    one_line(
        &[
            "ocfl",
            "validate",
            "s3://bkt/ocflroot/zz/three/inventory.json",
        ],
        "an inventory alone is validated on disk only",
    );
    for (flag, args) in [
        ("--limit-rate", &["--limit-rate", "1M"][..]),
        ("--one-file-system", &["-x"]),
    ] {
        let mut all = vec!["ocfl", "validate", "s3://bkt/ocflroot"];
        all.extend(args);
        trawl_with(&d, &env, &all).code(2).stderr_has(flag);
    }
    // Local paths and prefixes are not mixed in one run.
    std::fs::create_dir_all(d.join("here")).unwrap();
    trawl_with(&d, &env, &["ocfl", "validate", "here", "s3://bkt/ocflroot"])
        .code(2)
        .stderr_has("all local paths or all s3:// URLs");
}
