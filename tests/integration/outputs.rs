//! Where an output may go: never over an input (by any name), another output, a catalog or its
//! own files, or a file inside a scanned root; a media index never written through a link and
//! always under its directory. Each refusal comes before anything is read, and leaves what was
//! there as it was.

use std::path::Path;

use crate::util::*;

/// `--json X --html X`, two manifests to one file, and the same file by two names: refused
/// before anything is read, and what was there is kept.
#[test]
fn two_outputs_to_one_file_are_refused() {
    let d = Dir::new();
    d.create(b"t/a", b"alpha\n");
    d.create(b"keep", b"kept\n");
    for args in [
        &["--json", "keep", "--html", "keep"][..],
        &["-m", "sha256sum:keep", "-m", "b3sum:keep"],
        &["--json", "keep", "-m", "sha256sum:./keep"],
        &["--jsonl", "keep", "--duplicates", "t/../keep"],
    ] {
        let r = d.cmd().arg("scan").arg("t").args(args).run();
        r.code(2).stderr_has("each output needs a file of its own");
        assert_eq!(
            std::fs::read(d.join("keep")).unwrap(),
            b"kept\n",
            "{args:?}"
        );
    }
    d.cmd()
        .args([
            "audit", "t", "-c", "cat.db", "--json", "keep", "--html", "keep",
        ])
        .run()
        .code(2)
        .stderr_has("named by --json and by --html");
    // Two different files are fine.
    d.cmd()
        .args(["scan", "t", "-q", "--json", "a.json", "--html", "a.html"])
        .run()
        .code(0);
}

/// An output named after a catalog's write-ahead log, shared-memory index or rollback journal
/// is refused as the catalog itself is: replacing one loses runs.
#[test]
fn outputs_named_after_a_catalogs_own_files_are_refused() {
    let d = Dir::new();
    d.create(b"t/a", b"alpha\n");
    d.cmd()
        .args(["audit", "t", "-q", "-c", "cat.db"])
        .run()
        .code(0);
    let catalog = std::fs::read(d.join("cat.db")).unwrap();
    for (name, said) in [
        ("cat.db", "is the catalog"),
        ("cat.db-wal", "write-ahead log"),
        ("cat.db-shm", "shared-memory index"),
        ("cat.db-journal", "rollback journal"),
    ] {
        d.cmd()
            .args(["audit", "t", "-q", "-c", "cat.db", "--json", name])
            .run()
            .code(2)
            .stderr_has(said);
        d.cmd()
            .args(["catalog", "export", "-c", "cat.db", "-o", name])
            .run()
            .code(2)
            .stderr_has(said);
        d.cmd()
            .args(["catalog", "report", "-c", "cat.db", "--html", name])
            .run()
            .code(2)
            .stderr_has(said);
    }
    assert_eq!(std::fs::read(d.join("cat.db")).unwrap(), catalog);
    d.cmd()
        .args(["catalog", "verify", "-c", "cat.db"])
        .run()
        .code(0);
}

/// `catalog export` and `catalog report` read the catalog alone, but their outputs inside one
/// of its roots (by any name) are refused as `audit --metrics` is (exit 2, nothing written):
/// the next audit would find the file there, a new file of the collection; the tree holds
/// what it held, and an audit finds nothing new.
#[test]
fn a_catalogs_outputs_stay_out_of_its_roots() {
    let d = Dir::new();
    d.create(b"t/a", b"alpha");
    std::os::unix::fs::symlink("t", d.join("link")).unwrap();
    d.cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .run()
        .code(0);
    for (args, flag) in [
        (&["export", "-o", "t/SUMS"][..], "--output t/SUMS"),
        (
            &["export", "--format", "premis", "-o", "link/p.xml"],
            "--output link/p.xml",
        ),
        (&["report", "--html", "t/r.html"], "--html t/r.html"),
        (
            &["report", "--metrics", "link/m.prom"],
            "--metrics link/m.prom",
        ),
    ] {
        d.cmd()
            .args([&["catalog", args[0], "-c", "cat.db"], &args[1..]].concat())
            .run()
            .code(2)
            .stderr_has(&format!("{flag}: inside "))
            .stderr_has("/t, which is audited");
    }
    let held: Vec<_> = std::fs::read_dir(d.join("t")).unwrap().collect();
    assert_eq!(held.len(), 1, "{held:?}");
    let r = d
        .cmd()
        .args(["audit", "t", "-c", "cat.db", "--json", "-"])
        .run();
    r.code(0);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["counts"]["new"], 0, "{}", r.stdout);
    assert_eq!(v["counts"]["ok"], 1, "{}", r.stdout);
}

/// An output that names an input (by any name) is refused before anything is written, and the
/// input is left as it was; a temporary directory trawl did not make is never removed.
#[test]
fn no_output_replaces_an_input_or_a_directory_trawl_did_not_make() {
    let d = Dir::new();
    let video = crate::flv::flv_with_keyframes();
    d.create(b"v.flv", &video);
    std::os::unix::fs::symlink("v.flv", d.join("alias.flv")).unwrap();
    for out in ["v.flv", "alias.flv"] {
        let r = d.cmd().args(["flv", "index", "v.flv", "--json", out]).run();
        assert_eq!(r.code, 2, "{}", r.stderr);
        r.stderr_has("is the input v.flv");
        assert_eq!(std::fs::read(d.join("v.flv")).unwrap(), video);
    }
    d.create(b"t/a", b"a");
    let sums = d
        .cmd()
        .args(["scan", "t", "-q", "-m", "sha256sum:SUMS"])
        .run();
    sums.code(0);
    let before = std::fs::read(d.join("SUMS")).unwrap();
    let r = d
        .cmd()
        .args(["verify", "SUMS", "--root", ".", "--json", "SUMS"])
        .run();
    assert_eq!(r.code, 2, "{}", r.stderr);
    r.stderr_has("is the input SUMS");
    assert_eq!(std::fs::read(d.join("SUMS")).unwrap(), before);
    // A file given as a scan root is not an output either.
    let r = d.cmd().args(["scan", "t/a", "--json", "t/a"]).run();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(std::fs::read(d.join("t/a")).unwrap(), b"a");
    // A directory of the name an older trawl used for its temporary bag stays untouched.
    d.create(b"bo/.dest.trawl-tmp/keep", b"someone's");
    d.cmd()
        .args(["bag", "create", "t", "--out", "bo/dest", "-q"])
        .run()
        .code(0);
    assert_eq!(
        std::fs::read(d.join("bo/.dest.trawl-tmp/keep")).unwrap(),
        b"someone's"
    );
    assert!(d.join("bo/dest/bagit.txt").exists());
    let left: Vec<_> = std::fs::read_dir(d.join("bo"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left.len(), 2, "no temporary directory left: {left:?}");
}

/// The names under `dir`, sorted (what a refused run must leave as it was: no file replaced,
/// no temporary file left).
fn listing(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// An output that would replace a file inside a scanned root is refused by name before
/// anything is read (exit 2), whatever name reaches the file: a link to the root, `..`, a
/// link to the file itself. A new file inside the root is written and left out of the scan;
/// a --media-index directory inside a root must be new or empty.
#[test]
fn no_scan_output_replaces_a_file_inside_a_root() {
    let d = Dir::new();
    d.create(b"t3/a", b"a\n");
    d.create(b"t3/sub/b", b"b\n");
    d.create(b"t3/idx/old.keyframes.json", b"{}");
    std::os::unix::fs::symlink("t3", d.join("alias")).unwrap();
    std::os::unix::fs::symlink("t3/sub/b", d.join("to-b")).unwrap();
    let before = |p: &str| std::fs::read(d.join(p)).unwrap();
    let (a, b) = (before("t3/a"), before("t3/sub/b"));
    let (top, sub) = (listing(&d.join("t3")), listing(&d.join("t3/sub")));
    for (flag, value, named) in [
        ("-m", "sha256sum:t3/sub/b", "t3/sub/b"),
        ("--json", "t3/a", "t3/a"),
        ("--jsonl", "alias/a", "alias/a"),
        ("--html", "t3/sub/../a", "t3/sub/../a"),
        ("--ncdu", "to-b", "to-b"),
        ("--duplicates", "./t3/sub/b", "./t3/sub/b"),
    ] {
        let r = d.cmd().args(["scan", "t3", "-q", flag, value]).run();
        assert_eq!(r.code, 2, "{flag} {value}: {}", r.stderr);
        r.stderr_has(&format!("{named}: is a file inside t3, which is read"));
        assert_eq!((before("t3/a"), before("t3/sub/b")), (a.clone(), b.clone()));
        assert_eq!(listing(&d.join("t3")), top, "{flag} {value}");
        assert_eq!(listing(&d.join("t3/sub")), sub, "{flag} {value}");
    }
    // A root given through a link is the same root.
    d.cmd()
        .args(["scan", "alias", "-q", "--json", "t3/a"])
        .run()
        .code(2)
        .stderr_has("t3/a: is a file inside alias, which is read");
    d.cmd()
        .args(["scan", "t3", "-q", "--media-index", "t3/idx"])
        .run()
        .code(2)
        .stderr_has("--media-index t3/idx: a directory inside t3, which is read, and not empty");
    // New files inside the root: written, and not part of what they describe.
    d.cmd()
        .args([
            "scan",
            "t3",
            "-q",
            "-m",
            "sha256sum:t3/SUMS",
            "--json",
            "t3/r.json",
        ])
        .args(["--media-index", "t3/new-idx"])
        .run()
        .code(0);
    let sums = String::from_utf8(before("t3/SUMS")).unwrap();
    assert_eq!(sums.lines().count(), 3, "{sums}");
    assert!(!sums.contains("SUMS") && !sums.contains("r.json"), "{sums}");
    assert_eq!(before("t3/a"), a);
}

/// An audit's outputs keep the same rule: one that would replace a file inside an audited
/// root is refused by name before the catalog is opened or anything is read.
#[test]
fn no_audit_output_replaces_a_file_inside_a_root() {
    let d = Dir::new();
    d.create(b"t3/a", b"a\n");
    std::os::unix::fs::symlink("t3", d.join("alias")).unwrap();
    for (flag, out) in [("--json", "t3/a"), ("--html", "alias/a")] {
        let r = d
            .cmd()
            .args(["audit", "t3", "-c", "cat.db", "-q", flag, out])
            .run();
        assert_eq!(r.code, 2, "{flag} {out}: {}", r.stderr);
        r.stderr_has(&format!("{out}: is a file inside "));
        r.stderr_has("which is read; writing it would replace it");
        assert_eq!(std::fs::read(d.join("t3/a")).unwrap(), b"a\n");
        assert!(!d.join("cat.db").exists(), "the catalog was made");
        assert_eq!(listing(&d.join("t3")), ["a"]);
    }
}

/// `--media-index DIR` writes under DIR only: a subdirectory of DIR that is a link to
/// elsewhere is refused, not written through.
#[test]
fn media_indexes_are_never_written_through_a_link() {
    let d = Dir::new();
    d.create(b"t/sub/v.flv", &crate::flv::flv_with_keyframes());
    std::fs::create_dir_all(d.join("idx")).unwrap();
    std::fs::create_dir_all(d.join("outside")).unwrap();
    std::os::unix::fs::symlink(d.join("outside"), d.join("idx/sub")).unwrap();
    let r = d
        .cmd()
        .args(["scan", "t", "-q", "--media-index", "idx"])
        .run();
    assert_eq!(r.code, 2, "{}", r.stderr);
    r.stderr_has("symbolic link inside --media-index");
    assert_eq!(std::fs::read_dir(d.join("outside")).unwrap().count(), 0);
    // Without the link the index lands where it belongs.
    std::fs::remove_file(d.join("idx/sub")).unwrap();
    d.cmd()
        .args(["scan", "t", "-q", "--media-index", "idx"])
        .run()
        .code(0);
    assert!(d.join("idx/sub/v.flv.keyframes.json").exists());
}

#[test]
fn media_indexes_land_under_their_directory_whatever_the_roots() {
    let d = Dir::new();
    let flv = crate::flv::flv_with_keyframes();
    d.create(b"x/a.flv", &flv);
    d.create(b"y/a.flv", &flv);
    d.create(b"z/b.flv", &flv);
    std::fs::create_dir(d.join("work")).unwrap();
    d.cmd()
        .args(["scan", "../x", "../y", "../z/b.flv", "--no-reduce", "-q"])
        .args(["--media-index", "../idx"])
        .run_in("work")
        .code(0);
    let mut found: Vec<String> = Vec::new();
    fn walk(p: &Path, base: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(p).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), base, out);
            } else {
                out.push(e.path().strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    walk(d.path(), d.path(), &mut found);
    found.sort();
    assert_eq!(
        found,
        [
            "idx/1-x/a.flv.keyframes.json",
            "idx/2-y/a.flv.keyframes.json",
            "idx/3-b.flv.keyframes.json",
            "x/a.flv",
            "y/a.flv",
            "z/b.flv",
        ]
    );
}
