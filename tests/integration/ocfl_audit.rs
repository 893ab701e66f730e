//! `trawl audit --ocfl`: a storage root audited by logical paths against its inventories, its
//! objects found by the walk, and nothing changed, added or linked unseen.

use serde_json::{Value, json};

use crate::ocfl::{edit_inventory, hex, os, write_object};
use crate::util::{Dir, digest_by};

/// `trawl audit --ocfl`: each version's files registered under their logical paths with the
/// inventory's digests (coreutils' sha512 of the content), a content file changed in place
/// corrupt for every logical path that names it, whatever its mtime, and a file already wrong
/// when first registered reported corrupt at once.
#[test]
fn an_ocfl_storage_root_is_audited_by_logical_paths_against_its_inventories() {
    let d = Dir::new();
    let root = d.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("0=ocfl_1.1"), "ocfl_1.1\n").unwrap();
    write_object(
        &root.join("ab/obj"),
        "info:obj",
        &[
            &[("a.txt", b"alpha"), ("b.txt", b"bravo")],
            &[("a.txt", b"alpha"), ("c.txt", b"charlie")],
        ],
    );
    let r = d
        .cmd()
        .args(["audit", "--ocfl", "root", "-c", "cat.db"])
        .run();
    r.code(0);
    r.stdout_has("registered 4 files");
    let r = d
        .cmd()
        .args(["catalog", "export", "-c", "cat.db", "--format", "sha512sum"])
        .run();
    r.code(0);
    let mut lines: Vec<String> = r.stdout.lines().map(String::from).collect();
    lines.sort();
    let want = |content: &[u8], p: &str| format!("{}  ab/obj/{p}", digest_by("sha512sum", content));
    let mut expect = vec![
        want(b"alpha", "v1/a.txt"),
        want(b"bravo", "v1/b.txt"),
        want(b"alpha", "v2/a.txt"),
        want(b"charlie", "v2/c.txt"),
    ];
    expect.sort();
    assert_eq!(lines, expect);

    // Changed in place, its mtime changed too: corrupt (OCFL content never changes), for
    // both logical paths that name it.
    std::fs::write(root.join("ab/obj/v1/content/a.txt"), b"alphX").unwrap();
    let r = d
        .cmd()
        .args(["audit", "--ocfl", "root", "-c", "cat.db"])
        .run();
    r.code(1);
    r.stdout_has(
        "corrupt     root/ab/obj/v1/a.txt: content differs from the OCFL inventory (sha512)",
    )
    .stdout_has("corrupt     root/ab/obj/v2/a.txt")
    .counted(&[("ok", 2), ("corrupt", 2), ("modified", 0)]);

    // A new catalog: wrong from the start, and said so.
    let r = d
        .cmd()
        .args(["audit", "--ocfl", "root", "-c", "fresh.db"])
        .run();
    r.code(1);
    r.counted(&[
        ("ok", 0),
        ("corrupt", 2),
        ("modified", 0),
        ("missing", 0),
        ("new", 2),
    ]);
    r.stdout_has("registered 4 files in fresh.db (the first audit of these roots): 2 as read, 2 with the digest its inventory gives");

    // A content file three versions name is read once for the three logical paths (the
    // bytes the process read, from /proc/PID/io as it exits).
    let big = crate::util::noise(4 << 20, 7);
    write_object(
        &root.join("cd/big"),
        "info:big",
        &[
            &[("x.bin", &big)],
            &[("x.bin", &big), ("y", b"1")],
            &[("x.bin", &big)],
        ],
    );
    let script = "import os, subprocess, sys\n\
                  p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n\
                  os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)\n\
                  io = dict(l.split(':') for l in open(f'/proc/{p.pid}/io'))\n\
                  print(p.wait(), int(io['rchar']))";
    let o = std::process::Command::new("python3")
        .args([
            "-c",
            script,
            env!("CARGO_BIN_EXE_trawl"),
            "audit",
            "--ocfl",
            "root/cd",
            "-c",
            "big.db",
        ])
        .current_dir(d.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let v: Vec<u64> = text
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(v[0], 0, "{text}");
    assert!(
        v[1] < (6 << 20),
        "read {} bytes for one 4 MiB content file",
        v[1]
    );
}

/// A storage root with `0=ocfl_1.1` at `d/name`.
fn storage_root(d: &Dir, name: &str) -> std::path::PathBuf {
    let root = d.join(name);
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("0=ocfl_1.1"), "ocfl_1.1\n").unwrap();
    root
}

/// `audit --ocfl` audits every object the hierarchy holds, whatever its name's bytes, and takes
/// a logical path back to its object through the objects the walk found: an object named
/// `v1` beside a decoy with the same content, and a planted `inventory.json` at the top that
/// points `v1/doc.txt` at the decoy's file, do not hide `v1`'s corruption.
#[test]
fn an_ocfl_audit_finds_its_objects_by_the_walk_not_by_path_shape() {
    let d = Dir::new();
    let root = storage_root(&d, "q");
    write_object(
        &root.join(os(b"q\xff")),
        "info:q",
        &[&[("doc.txt", b"same")]],
    );
    std::fs::write(root.join(os(b"q\xff/v1/content/doc.txt")), b"bad!").unwrap();
    for db in ["q1.db", "q2.db"] {
        let r = d.cmd().args(["audit", "--ocfl", "q", "-c", db]).run();
        r.code(1);
        r.counted(&[("corrupt", 1)]);
    }

    let root = storage_root(&d, "r");
    write_object(&root.join("v1"), "info:v1", &[&[("doc.txt", b"same")]]);
    write_object(
        &root.join("decoy"),
        "info:decoy",
        &[&[("doc.txt", b"same")]],
    );
    let mut planted: Value =
        serde_json::from_slice(&std::fs::read(root.join("decoy/inventory.json")).unwrap()).unwrap();
    for paths in planted["manifest"].as_object_mut().unwrap().values_mut() {
        *paths = json!(["decoy/v1/content/doc.txt"]);
    }
    std::fs::write(root.join("inventory.json"), planted.to_string()).unwrap();
    let r = d.cmd().args(["audit", "--ocfl", "r", "-c", "r.db"]).run();
    r.code(0);
    r.counted(&[("new", 2)]);
    std::fs::write(root.join("v1/v1/content/doc.txt"), b"SAME").unwrap();
    let r = d.cmd().args(["audit", "--ocfl", "r", "-c", "r.db"]).run();
    r.code(1);
    r.stdout_has("corrupt     r/v1/v1/doc.txt: content differs from the OCFL inventory")
        .counted(&[("ok", 1), ("corrupt", 1)]);
    // Names alike as text are told apart on the terminal by their bytes.
    let r = d.cmd().args(["audit", "--ocfl", "q", "-c", "q1.db"]).run();
    r.stdout_has(&format!(
        "corrupt     q/q\u{fffd}/v1/doc.txt [bytes {}]",
        hex(b"q/q\xff/v1/doc.txt")
    ));
}

/// OCFL versions never change: an object deleted and written again under its id, its v1
/// holding other bytes, is corrupt where it differs from what was registered (not modified),
/// and stays so; a version that disappears is missing.
#[test]
fn an_ocfl_version_rewritten_in_place_is_corrupt() {
    let d = Dir::new();
    let root = storage_root(&d, "root");
    let o = root.join("o");
    write_object(
        &o,
        "info:o",
        &[&[("doc.txt", b"original")], &[("doc.txt", b"two")]],
    );
    let r = d
        .cmd()
        .args(["audit", "--ocfl", "root", "-c", "c.db"])
        .run();
    r.code(0);
    std::fs::remove_dir_all(&o).unwrap();
    write_object(&o, "info:o", &[&[("doc.txt", b"rewritten!")]]);
    for _ in 0..2 {
        let r = d
            .cmd()
            .args(["audit", "--ocfl", "root", "-c", "c.db"])
            .run();
        r.code(1);
        r.stdout_has("corrupt     root/o/v1/doc.txt: content differs from what was registered")
            .counted(&[("ok", 0), ("corrupt", 1), ("modified", 0), ("missing", 1)]);
    }
}

/// Inside an object no link is followed: a content directory that is a link to another
/// object's is named and not read through (the file is unreadable, exit 2), as `ocfl
/// validate` names it; a content path that leaves the object is refused before anything is
/// looked for, the same way whether or not what it names exists.
#[test]
fn an_ocfl_audit_follows_no_link_and_looks_nowhere_outside_an_object() {
    let d = Dir::new();
    let root = storage_root(&d, "root");
    write_object(&root.join("A"), "info:a", &[&[("d/x", b"same")]]);
    write_object(&root.join("B"), "info:b", &[&[("d/x", b"same")]]);
    std::fs::remove_dir_all(root.join("A/v1/content/d")).unwrap();
    std::os::unix::fs::symlink("../../../B/v1/content/d", root.join("A/v1/content/d")).unwrap();
    let r = d
        .cmd()
        .args(["audit", "--ocfl", "root", "-c", "c.db"])
        .run();
    r.code(2);
    r.stdout_has("unreadable  root/A/v1/d/x")
        .stderr_has("reached through a symbolic link inside the object: not followed")
        .counted(&[("new", 1)]);
    let r = d.cmd().args(["ocfl", "validate", "root"]).run();
    r.code(1);
    r.stderr_has("root/A: [E023] v1/content/d");

    let root = storage_root(&d, "out");
    write_object(&root.join("o"), "info:o", &[&[("p", b"1"), ("q", b"2")]]);
    std::fs::write(d.join("exists"), b"x").unwrap();
    edit_inventory(&root.join("o"), |inv| {
        let m = inv["manifest"].as_object_mut().unwrap();
        let keys: Vec<String> = m.keys().cloned().collect();
        m[&keys[0]] = json!([d.join("exists").to_str().unwrap()]);
        m[&keys[1]] = json!(["v1/content/../../../../nowhere"]);
    });
    let r = d.cmd().args(["audit", "--ocfl", "out", "-c", "o.db"]).run();
    r.code(2);
    r.counted(&[("unreadable", 2)]);
    let lines: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| {
            l.contains("not a file in one of the object's version directories: not looked for")
        })
        .collect();
    assert_eq!(lines.len(), 2, "{}", r.stderr);
}

/// What `audit --ocfl` cannot audit it names, and the run exits 2: a link at the storage root's
/// top, a declaration that is a FIFO, a directory holding an inventory without a declaration,
/// an inventory that lists no version, a state digest its manifest lacks, a content file the
/// inventory lists and the object lacks, logical paths that are not plain (counted, not one).
#[test]
fn an_ocfl_audit_names_what_it_cannot_audit() {
    let d = Dir::new();
    let root = storage_root(&d, "root");
    write_object(&d.join("outside/o"), "info:out", &[&[("a", b"1")]]);
    std::os::unix::fs::symlink("../outside/o", root.join("linked")).unwrap();
    write_object(&root.join("fifo"), "info:f", &[&[("a", b"1")]]);
    std::fs::remove_file(root.join("fifo/0=ocfl_object_1.1")).unwrap();
    crate::util::mkfifo(&root.join("fifo/0=ocfl_object_1.1"));
    write_object(&root.join("nodecl"), "info:n", &[&[("a", b"1")]]);
    std::fs::remove_file(root.join("nodecl/0=ocfl_object_1.1")).unwrap();
    write_object(&root.join("empty"), "info:e", &[&[("a", b"1")]]);
    edit_inventory(&root.join("empty"), |inv| {
        *inv = json!({"id": "info:e", "head": "v1"});
    });
    write_object(
        &root.join("lacks"),
        "info:l",
        &[&[("a", b"1"), ("b", b"2")]],
    );
    std::fs::remove_file(root.join("lacks/v1/content/b")).unwrap();
    edit_inventory(&root.join("lacks"), |inv| {
        let st = inv["versions"]["v1"]["state"].as_object_mut().unwrap();
        st.insert("f".repeat(128), json!(["ghost"]));
        for (i, bad) in ["/abs", "../up", "a//b", "./x"].into_iter().enumerate() {
            st.insert(format!("{i:0128}"), json!([bad]));
        }
    });
    let r = d
        .cmd()
        .args(["audit", "--ocfl", "root", "-c", "c.db"])
        .run_within(60);
    r.code(2);
    for want in [
        "root/linked: a symbolic link or special file in the storage hierarchy: not followed",
        "root/fifo/0=ocfl_object_1.1: a symbolic link or special file in the storage hierarchy",
        "the inventory names 4 logical paths that are not a plain relative path ('../up', './x', '/abs' and 1 more)",
        "root/nodecl: holds inventory.json but no object declaration",
        "root/empty: inventory.json lists no version",
        "root/lacks/v1/ghost: the inventory's state gives it digest",
        "root/lacks/v1/b: the inventory lists it, but its content file v1/content/b is not there",
    ] {
        r.stderr_has(want);
    }
    r.counted(&[("new", 1)]);
}

/// `audit --ocfl` holds each file to every inventory and trusts no inventory its sidecar
/// contradicts: a sha256 object's corrupt file is corrupt in a sha512 catalog; content swapped
/// and the root inventory rewritten to match, v1's own inventory left, is corrupt from the first
/// audit (as `ocfl validate` says); an inventory changed without its sidecar is named.
#[test]
fn an_ocfl_audit_holds_every_inventory_and_the_sidecar() {
    let d = Dir::new();
    let root = storage_root(&d, "a");
    write_object(&root.join("s"), "info:s", &[&[("x", b"ORIGINAL")]]);
    let x = digest_by("sha256sum", b"ORIGINAL");
    edit_inventory(&root.join("s"), |inv| {
        inv["digestAlgorithm"] = json!("sha256");
        let d512 = inv["manifest"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        inv["manifest"] = json!({ x.clone(): inv["manifest"][&d512].clone() });
        inv["versions"]["v1"]["state"] = json!({ x.clone(): ["x"] });
        inv.as_object_mut().unwrap().remove("fixity");
    });
    let text = std::fs::read(root.join("s/inventory.json")).unwrap();
    let side = format!("{}  inventory.json\n", digest_by("sha256sum", &text));
    for at in ["s", "s/v1"] {
        std::fs::remove_file(root.join(at).join("inventory.json.sha512")).unwrap();
        std::fs::write(root.join(at).join("inventory.json.sha256"), &side).unwrap();
    }
    d.cmd().args(["ocfl", "validate", "a"]).run().code(0);
    std::fs::write(root.join("s/v1/content/x"), b"CORRUPTED").unwrap();
    let r = d.cmd().args(["audit", "--ocfl", "a", "-c", "a.db"]).run();
    r.code(1);
    r.stdout_has("corrupt     a/s/v1/x: content differs from the OCFL inventory (sha256)");

    let root = storage_root(&d, "b");
    write_object(
        &root.join("o"),
        "info:o",
        &[&[("x", b"original")], &[("x", b"original"), ("y", b"2")]],
    );
    std::fs::write(root.join("o/v1/content/x"), b"swapped!").unwrap();
    let swapped = digest_by("sha512sum", b"swapped!");
    let original = digest_by("sha512sum", b"original");
    edit_inventory(&root.join("o"), |inv| {
        let text = inv.to_string().replace(&original, &swapped);
        let md5 = (
            digest_by("md5sum", b"original"),
            digest_by("md5sum", b"swapped!"),
        );
        *inv = serde_json::from_str(&text.replace(&md5.0, &md5.1)).unwrap();
    });
    d.cmd().args(["ocfl", "validate", "b"]).run().code(1);
    let r = d.cmd().args(["audit", "--ocfl", "b", "-c", "b.db"]).run();
    r.code(1);
    r.stdout_has("corrupt     b/o/v1/x");

    let root = storage_root(&d, "c");
    write_object(&root.join("o"), "info:o", &[&[("x", b"1")]]);
    let inv = std::fs::read_to_string(root.join("o/inventory.json")).unwrap();
    std::fs::write(root.join("o/inventory.json"), inv.replace("\"m\"", "\"M\"")).unwrap();
    let r = d.cmd().args(["audit", "--ocfl", "c", "-c", "c.db"]).run();
    r.code(2);
    r.stderr_has("the inventory is not trusted: the object is not audited");
}

/// A version registered is never added to: a file injected into v1 and a logical path renamed
/// there (every inventory and sidecar rewritten to match) are corrupt, the old name missing; a
/// metadata-only audit calls a changed size corrupt, never modified.
#[test]
fn an_ocfl_version_is_never_added_to_or_changed_unseen() {
    let d = Dir::new();
    let root = storage_root(&d, "root");
    let o = root.join("o");
    write_object(&o, "info:o", &[&[("x", b"1"), ("y", b"2")]]);
    d.cmd()
        .args(["audit", "--ocfl", "root", "-c", "c.db"])
        .run()
        .code(0);
    std::fs::remove_dir_all(&o).unwrap();
    write_object(
        &o,
        "info:o",
        &[&[("renamed", b"1"), ("y", b"2"), ("injected", b"3")]],
    );
    let r = d
        .cmd()
        .args(["audit", "--ocfl", "root", "-c", "c.db"])
        .run();
    r.code(1);
    r.stdout_has("corrupt     root/o/v1/injected: new in ")
        .stdout_has("corrupt     root/o/v1/renamed")
        .stdout_has("missing     root/o/v1/x")
        .counted(&[("ok", 1), ("corrupt", 2), ("modified", 0), ("missing", 1)]);

    let root = storage_root(&d, "m");
    write_object(&root.join("o"), "info:o", &[&[("x", b"1")]]);
    d.cmd()
        .args(["audit", "--ocfl", "m", "-c", "m.db"])
        .run()
        .code(0);
    std::fs::write(root.join("o/v1/content/x"), b"longer").unwrap();
    let r = d
        .cmd()
        .args(["audit", "--ocfl", "m", "-c", "m.db", "--metadata-only"])
        .run();
    r.code(1);
    r.stdout_has("corrupt     m/o/v1/x: size or mtime changed, and its content never changes")
        .counted(&[("modified", 0), ("corrupt", 1)]);
}
