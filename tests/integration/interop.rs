//! Interop with independent tools: each test skips with a printed reason when its tool is absent,
//! and fails instead when TRAWL_REQUIRE_INTEROP=1 (as in CI, which installs them).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use crate::util::{Dir, awkward_names, make_awkward, run_tool, tool};

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

#[test]
fn coreutils_check_trawl_manifests_and_trawl_checks_theirs() {
    let d = Dir::new();
    make_awkward(&d, "t");
    for (prog, fmt, alg) in [
        ("md5sum", "md5sum", "md5"),
        ("sha1sum", "sha1sum", "sha1"),
        ("sha256sum", "sha256sum", "sha256"),
        ("sha512sum", "sha512sum", "sha512"),
    ] {
        let Some(p) = tool(prog) else { continue };
        let m = format!("{fmt}:../ours-{alg}");
        d.cmd()
            .args(["scan", ".", "-d", alg, "-m", &m, "-q"])
            .run_in("t")
            .code(0);
        // Theirs accepts ours, awkward names included.
        let r = run_tool(&d.join("t"), &p, &[os("-c"), os(&format!("../ours-{alg}"))]);
        r.code(0);
        assert_eq!(
            r.stdout.lines().filter(|l| l.ends_with(": OK")).count(),
            awkward_names().len(),
            "{prog}: {}",
            r.stdout
        );
        // Ours accepts theirs: generated over the same names.
        let mut args: Vec<&OsStr> = Vec::new();
        for n in awkward_names() {
            args.push(OsStr::from_bytes(n));
        }
        let theirs = run_tool(&d.join("t"), &p, &args);
        theirs.code(0);
        std::fs::write(d.join(format!("theirs-{alg}")), &theirs.stdout_bytes).unwrap();
        let r = d
            .cmd()
            .args([
                "verify",
                &format!("theirs-{alg}"),
                "--root",
                "t",
                "--strict",
            ])
            .run();
        r.code(0);
        // And both reject a changed byte.
        std::fs::write(d.join("t/plain.txt"), b"changed").unwrap();
        assert_eq!(
            run_tool(&d.join("t"), &p, &[os("-c"), os(&format!("../ours-{alg}"))]).code,
            1
        );
        d.cmd()
            .args(["verify", &format!("theirs-{alg}"), "--root", "t"])
            .run()
            .code(1);
        std::fs::write(d.join("t/plain.txt"), b"content of plain.txt").unwrap();
    }
}

#[test]
fn b3sum_checks_trawl_manifest_and_trawl_checks_b3sum() {
    let Some(b3) = tool("b3sum") else { return };
    let d = Dir::new();
    for n in ["plain", "with space", "new\nline", "back\\slash"] {
        d.create(format!("t/{n}").as_bytes(), n.as_bytes());
    }
    d.cmd()
        .args(["scan", ".", "-d", "blake3", "-m", "b3sum:../ours.b3", "-q"])
        .run_in("t")
        .code(0);
    let r = run_tool(&d.join("t"), &b3, &[os("--check"), os("../ours.b3")]);
    r.code(0);
    let theirs = run_tool(
        &d.join("t"),
        &b3,
        &[
            os("plain"),
            os("with space"),
            os("new\nline"),
            os("back\\slash"),
        ],
    );
    theirs.code(0);
    std::fs::write(d.join("theirs.b3"), &theirs.stdout_bytes).unwrap();
    d.cmd()
        .args(["verify", "theirs.b3", "--root", "t", "--strict"])
        .run()
        .code(0);
    // Without the name hint, --digest resolves the 64-hex ambiguity.
    std::fs::write(d.join("sums"), &theirs.stdout_bytes).unwrap();
    d.cmd()
        .args(["verify", "sums", "--root", "t", "-d", "blake3"])
        .run()
        .code(0);
}

#[test]
fn xxhsum_checks_trawl_xxh128_manifest() {
    let Some(x) = tool("xxhsum") else { return };
    let d = Dir::new();
    d.create(b"t/a", b"alpha");
    d.create(b"t/sub/b", &vec![9u8; 3_000_000]);
    d.cmd()
        .args([
            "scan",
            ".",
            "-d",
            "xxh3",
            "-m",
            "xxh128sum:../ours.xxh",
            "-q",
        ])
        .run_in("t")
        .code(0);
    let r = run_tool(&d.join("t"), &x, &[os("-c"), os("../ours.xxh")]);
    r.code(0);
    let theirs = run_tool(&d.join("t"), &x, &[os("-H2"), os("a"), os("sub/b")]);
    std::fs::write(d.join("theirs.xxh"), &theirs.stdout_bytes).unwrap();
    d.cmd()
        .args(["verify", "theirs.xxh", "--root", "t"])
        .run()
        .code(0);
}

#[test]
fn hashdeep_audits_trawl_manifest_and_trawl_verifies_hashdeep() {
    let Some(hd) = tool("hashdeep") else { return };
    let d = Dir::new();
    d.create(b"t/a", b"alpha");
    d.create(b"t/sub dir/b,comma", b"beta");
    d.create(b"t/e", b"");
    d.cmd()
        .args([
            "scan",
            ".",
            "-d",
            "md5,sha256",
            "-m",
            "hashdeep:../ours.hd",
            "-q",
        ])
        .run_in("t")
        .code(0);
    // hashdeep's audit run as hashdeep itself would have been (`-r -l .` from the same place):
    // the names are the ones hashdeep writes (`./a`).
    let audit = |dir: &std::path::Path| {
        run_tool(
            dir,
            &hd,
            &[
                os("-c"),
                os("md5,sha256"),
                os("-a"),
                os("-k"),
                os("../ours.hd"),
                os("-r"),
                os("-l"),
                os("."),
            ],
        )
    };
    let r = audit(&d.join("t"));
    assert_eq!(r.code, 0, "hashdeep audit of trawl's manifest: {r:?}");
    let theirs = run_tool(
        &d.join("t"),
        &hd,
        &[
            os("-c"),
            os("md5,sha256"),
            os("-l"),
            os("-r"),
            os("a"),
            os("sub dir"),
            os("e"),
        ],
    );
    theirs.code(0);
    std::fs::write(d.join("theirs.hd"), &theirs.stdout_bytes).unwrap();
    d.cmd()
        .args(["verify", "theirs.hd", "--root", "t", "--strict"])
        .run()
        .code(0);
    // Both catch a changed byte.
    std::fs::write(d.join("t/a"), b"alphA").unwrap();
    assert_ne!(audit(&d.join("t")).code, 0);
    d.cmd()
        .args(["verify", "theirs.hd", "--root", "t"])
        .run()
        .code(1);
}

#[test]
fn bagit_python_and_trawl_accept_each_others_bags_and_reject_the_same_corruptions() {
    let Some(bagit) = tool("bagit.py") else {
        return;
    };
    let build = |d: &Dir, name: &str, by_trawl: bool| {
        d.create(format!("{name}/a.txt").as_bytes(), b"alpha");
        d.create(format!("{name}/sub dir/b").as_bytes(), b"beta");
        d.create(format!("{name}/new\nline").as_bytes(), b"gamma");
        if by_trawl {
            d.cmd().args(["bag", "create", name, "-q"]).run().code(0);
        } else {
            let r = run_tool(
                d.path(),
                &bagit,
                &[os("--sha256"), os("--sha512"), os(name)],
            );
            r.code(0);
        }
    };
    let python_ok =
        |d: &Dir, name: &str| run_tool(d.path(), &bagit, &[os("--validate"), os(name)]).code == 0;
    let trawl_ok = |d: &Dir, name: &str| d.cmd().args(["bag", "validate", name]).run().code == 0;
    let corruptions: Vec<(&str, crate::bag::Corrupt)> = vec![
        ("none", Box::new(|_| {})),
        (
            "changed byte",
            Box::new(|b| std::fs::write(b.join("data/a.txt"), b"alphA").unwrap()),
        ),
        (
            "missing file",
            Box::new(|b| std::fs::remove_file(b.join("data/sub dir/b")).unwrap()),
        ),
        (
            "extra file",
            Box::new(|b| std::fs::write(b.join("data/extra"), b"x").unwrap()),
        ),
        (
            "wrong oxum",
            Box::new(|b| {
                let t = std::fs::read_to_string(b.join("bag-info.txt")).unwrap();
                let t: String = t
                    .lines()
                    .map(|l| {
                        if l.starts_with("Payload-Oxum") {
                            "Payload-Oxum: 1.1".to_string()
                        } else {
                            l.to_string()
                        }
                    })
                    .map(|l| l + "\n")
                    .collect();
                std::fs::write(b.join("bag-info.txt"), t).unwrap();
            }),
        ),
    ];
    for (what, corrupt) in &corruptions {
        for by_trawl in [true, false] {
            let d = Dir::new();
            build(&d, "bag", by_trawl);
            corrupt(&d.join("bag"));
            let (p, t) = (python_ok(&d, "bag"), trawl_ok(&d, "bag"));
            let expected = *what == "none";
            assert_eq!(
                (p, t),
                (expected, expected),
                "{what}, bag made by {}: bagit-python valid={p}, trawl valid={t}",
                if by_trawl { "trawl" } else { "bagit-python" }
            );
        }
    }
}

/// Every hashdeep file trawl writes names a root's files one way, `./REL` (as `cd ROOT &&
/// hashdeep -r -l .` does), so that `trawl verify X --root ROOT` and hashdeep's audit from
/// inside ROOT both accept each of them.
#[test]
fn every_hashdeep_file_trawl_writes_follows_one_rule_that_verify_and_hashdeep_accept() {
    let d = Dir::new();
    d.create(b"t/a", b"alpha");
    d.create(b"t/sub/b", b"beta");
    // From outside the root, from inside it, and exported from a catalog.
    d.cmd()
        .args([
            "scan",
            "t",
            "-d",
            "sha256",
            "-m",
            "hashdeep:outside.hd",
            "-q",
        ])
        .run()
        .code(0);
    d.cmd()
        .args([
            "scan",
            ".",
            "-d",
            "sha256",
            "-m",
            "hashdeep:../inside.hd",
            "-q",
        ])
        .run_in("t")
        .code(0);
    d.cmd()
        .args(["audit", "t", "-c", "cat.db", "-q"])
        .run()
        .code(0);
    d.cmd()
        .args([
            "catalog",
            "export",
            "-c",
            "cat.db",
            "--format",
            "hashdeep",
            "-o",
            "export.hd",
        ])
        .run()
        .code(0);
    let names = |f: &str| -> Vec<String> {
        std::fs::read_to_string(d.join(f))
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('%') && !l.starts_with('#'))
            .map(|l| l.rsplit(',').next().unwrap().to_string())
            .collect()
    };
    for f in ["outside.hd", "inside.hd", "export.hd"] {
        assert_eq!(names(f), ["./a", "./sub/b"], "{f}");
        d.cmd()
            .args(["verify", f, "--root", "t", "--strict"])
            .run()
            .code(0);
    }
    let Some(hd) = tool("hashdeep") else { return };
    for f in ["outside.hd", "inside.hd", "export.hd"] {
        let k = format!("../{f}");
        let r = run_tool(
            &d.join("t"),
            &hd,
            &[
                os("-c"),
                os("sha256"),
                os("-a"),
                os("-k"),
                os(&k),
                os("-r"),
                os("-l"),
                os("."),
            ],
        );
        assert_eq!(r.code, 0, "hashdeep audit of {f}: {r:?}");
    }
}
