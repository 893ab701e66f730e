//! Exclusions on `trawl audit` and `trawl bag create`: registered files excluded stay as they
//! were, excluded entries stay out of the bag.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::exclude::{json, output};
use crate::util::{Dir, tool};

fn audit(d: &Dir, extra: &[&str]) -> (i32, Value) {
    let r = d
        .cmd()
        .args(["audit", "t", "-c", "cat.db", "-q", "--json", "a.json"])
        .args(extra)
        .run();
    let v = json(d, "a.json");
    std::fs::remove_file(d.join("a.json")).unwrap();
    (r.code, v)
}

/// Paths (below `t`) of an audit's events in `state`.
fn events(v: &Value, state: &str) -> BTreeSet<String> {
    let root = v["roots"][0]["path"].as_str().unwrap().to_string() + "/";
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["state"] == state)
        .map(|e| {
            e["path"]
                .as_str()
                .unwrap()
                .strip_prefix(&root)
                .unwrap()
                .to_string()
        })
        .collect()
}

/// An audit that excludes registered files leaves them as they were: deleted, edited, corrupt
/// or under a directory now excluded, none is read, none is called missing or forgotten (even
/// with --forget-missing), new files there are not registered; the JSON counts them. The next
/// audit without the exclusion finds every one of them as it is, with its registration intact.
#[test]
fn an_audit_leaves_excluded_registered_files_as_they_were() {
    let d = Dir::new();
    for (f, body) in [
        ("t/keep/a", &b"alpha"[..]),
        ("t/logs/l1", b"one"),
        ("t/logs/l2", b"two"),
        ("t/x.tmp", b"ex"),
        ("t/y.tmp", b"why"),
        ("t/box/f", b"boxed"),
    ] {
        d.create(f.as_bytes(), body);
    }
    let (code, v) = audit(&d, &[]);
    assert_eq!(code, 0);
    assert_eq!(v["counts"]["new"], 6);
    // Changes where the exclusion will fall.
    std::fs::remove_file(d.join("t/logs/l1")).unwrap();
    std::fs::write(d.join("t/logs/l2"), b"two, edited").unwrap();
    std::fs::remove_file(d.join("t/x.tmp")).unwrap();
    crate::audit::flip_byte(&d.join("t/y.tmp"), 0);
    d.create(b"t/logs/new", b"new");
    std::fs::remove_file(d.join("t/box/f")).unwrap();
    d.create(b"t/box/.nobackup", b"");
    let rules = [
        "--exclude",
        "logs/",
        "--exclude",
        "*.tmp",
        "--exclude-if-present",
        ".nobackup",
    ];
    for forget in [false, true] {
        let mut args = rules.to_vec();
        if forget {
            args.push("--forget-missing");
        }
        let (code, v) = audit(&d, &args);
        assert_eq!(code, 0, "{v}");
        for state in [
            "missing",
            "modified",
            "corrupt",
            "new",
            "moved",
            "unreadable",
        ] {
            assert_eq!(v["counts"][state], 0, "{state}: {v}");
        }
        assert_eq!(v["counts"]["ok"], 1);
        assert_eq!(v["files_read"], 1);
        let x = &v["excluded"];
        assert_eq!(x["registered"], 5, "{x}");
        assert_eq!(
            (x["directories"].as_u64(), x["files"].as_u64()),
            (Some(2), Some(1))
        );
    }
    // Without the exclusion: every change is found, against registrations kept as they were.
    let (code, v) = audit(&d, &[]);
    assert_eq!(code, 1);
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(events(&v, "missing"), set(&["box/f", "logs/l1", "x.tmp"]));
    assert_eq!(events(&v, "modified"), set(&["logs/l2"]));
    assert_eq!(events(&v, "corrupt"), set(&["y.tmp"]));
    assert_eq!(events(&v, "new"), set(&["box/.nobackup", "logs/new"]));
    assert!(v.get("excluded").is_none());
}

/// `bag create --out` leaves excluded entries out of the bag (an excluded link needs no
/// `--links`), and the bag is valid with the digests coreutils computes of what it holds; in
/// place an exclusion is refused, the directory untouched.
#[test]
fn bag_create_leaves_excluded_entries_out_of_the_bag() {
    let Some(sha256sum) = tool("sha256sum") else {
        return;
    };
    let d = Dir::new();
    d.create(b"src/a", b"alpha");
    d.create(b"src/sub/b", b"beta");
    d.create(b"src/sub/c.tmp", b"scratch");
    d.create(b"src/cache/d", b"cached");
    std::os::unix::fs::symlink("a", d.join("src/link")).unwrap();
    d.cmd()
        .args(["bag", "create", "src", "--out", "bag", "-d", "sha256"])
        .args(["--exclude", "*.tmp", "--exclude", "cache/", "--exclude", "/link"])
        .run()
        .code(0)
        .stdout_has("left out by --exclude, not in the bag: 1 directories, 1 files (7 bytes), 1 other entries");
    d.cmd().args(["bag", "validate", "bag"]).run().code(0);
    let manifest = std::fs::read_to_string(d.join("bag/manifest-sha256.txt")).unwrap();
    let mut lines: Vec<&str> = manifest.lines().collect();
    lines.sort();
    let want = output(
        &d.join("src"),
        &sha256sum,
        &["a".as_ref(), "sub/b".as_ref()],
    );
    let want = String::from_utf8(want).unwrap().replace("  ", "  data/");
    assert_eq!(lines, want.lines().collect::<Vec<_>>());
    assert!(!d.join("bag/data/sub/c.tmp").exists() && !d.join("bag/data/cache").exists());
    let info = std::fs::read_to_string(d.join("bag/bag-info.txt")).unwrap();
    assert!(info.contains("Payload-Oxum: 9.2"), "{info}");
    // In place: refused, nothing moved.
    d.cmd()
        .args(["bag", "create", "src", "--exclude", "*.tmp"])
        .run()
        .code(2)
        .stderr_has("--exclude needs --out DEST");
    assert!(d.join("src/sub/c.tmp").exists() && !d.join("src/data").exists());
}
