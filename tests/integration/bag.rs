//! `trawl bag create`, `validate` and `update`: bags made in place and apart, corruptions found
//! precisely, links, BagIt Profiles, and bags from elsewhere read safely: nothing outside the
//! bag is read, no tag file waited on or read past its cap, a hostile fetch.txt in bounded time,
//! memory and output.

use std::path::Path;

use crate::util::{Dir, Run, bytes_read_by, sha256_hex, wait_until};

/// A way to damage a bag in place.
pub type Corrupt = Box<dyn Fn(&Path)>;

/// A hand-written bag (independent of trawl's writer) with the given tag-file bytes.
fn handmade(
    d: &Dir,
    name: &str,
    version: &str,
    enc: &str,
    payload: &[(&str, &[u8])],
    encode: impl Fn(&str) -> Vec<u8>,
) {
    let root = d.join(name);
    std::fs::create_dir_all(root.join("data")).unwrap();
    let mut manifest = String::new();
    let mut bytes = 0;
    for (p, c) in payload {
        let path = root.join("data").join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, c).unwrap();
        bytes += c.len();
        let enc_name = p
            .replace('%', "%25")
            .replace('\n', "%0A")
            .replace('\r', "%0D");
        manifest.push_str(&format!("{}  data/{enc_name}\n", sha256_hex(c)));
    }
    std::fs::write(
        root.join("bagit.txt"),
        format!("BagIt-Version: {version}\nTag-File-Character-Encoding: {enc}\n"),
    )
    .unwrap();
    std::fs::write(root.join("manifest-sha256.txt"), encode(&manifest)).unwrap();
    std::fs::write(
        root.join("bag-info.txt"),
        encode(&format!("Payload-Oxum: {bytes}.{}\n", payload.len())),
    )
    .unwrap();
}

fn utf8(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

pub(crate) fn validate(d: &Dir, bag: &str) -> Run {
    d.cmd().args(["bag", "validate", bag]).run()
}

#[test]
fn create_in_place_then_validate() {
    let d = Dir::new();
    crate::util::make_awkward(&d, "b");
    // Invalid UTF-8 cannot go in a UTF-8 manifest: refused, nothing moved.
    let r = d.cmd().args(["bag", "create", "b"]).run();
    r.code(2);
    r.stderr_has("not valid UTF-8");
    assert!(d.join("b/plain.txt").exists() && !d.join("b/data").exists());
    for e in std::fs::read_dir(d.join("b")).unwrap() {
        let e = e.unwrap();
        if e.file_name().to_str().is_none() {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    d.create(b"b/100% done", b"pct");
    d.cmd()
        .args(["bag", "create", "b", "--info", "Source-Organization: Test"])
        .run()
        .code(0);
    assert!(d.join("b/data/new\nline.txt").exists());
    let m = std::fs::read_to_string(d.join("b/manifest-sha256.txt")).unwrap();
    assert!(
        m.contains("data/new%0Aline.txt") && m.contains("data/100%25 done"),
        "{m}"
    );
    let info = std::fs::read_to_string(d.join("b/bag-info.txt")).unwrap();
    assert!(
        info.contains("Payload-Oxum: ")
            && info.contains("Bagging-Date: ")
            && info.contains("Source-Organization: Test")
    );
    let r = validate(&d, "b");
    r.code(0);
    r.stdout_has("is valid");
    d.cmd()
        .args(["bag", "validate", "b", "--fast"])
        .run()
        .code(0);
    let r = d.cmd().args(["bag", "create", "b"]).run();
    r.code(2);
    r.stderr_has("already a bag");
}

#[test]
fn corruptions_are_rejected_precisely() {
    let cases: Vec<(&str, Corrupt, &str)> = vec![
        (
            "changed byte",
            Box::new(|b| std::fs::write(b.join("data/a"), b"x").unwrap()),
            "data/a: sha256 mismatch",
        ),
        (
            "missing file",
            Box::new(|b| std::fs::remove_file(b.join("data/a")).unwrap()),
            "data/a: listed in the manifests but missing",
        ),
        (
            "extra file",
            Box::new(|b| std::fs::write(b.join("data/extra"), b"e").unwrap()),
            "data/extra: present in the payload but in no manifest",
        ),
        (
            "wrong oxum",
            Box::new(|b| std::fs::write(b.join("bag-info.txt"), "Payload-Oxum: 99.2\n").unwrap()),
            "Payload-Oxum is 99.2",
        ),
        (
            "manifests disagree",
            Box::new(|b| {
                let m = std::fs::read_to_string(b.join("manifest-sha256.txt")).unwrap();
                let kept: String = m
                    .lines()
                    .filter(|l| !l.ends_with("data/a"))
                    .map(|l| format!("{l}\n"))
                    .collect();
                std::fs::write(b.join("manifest-sha256.txt"), kept).unwrap();
            }),
            "data/a: listed in some payload manifests but not in manifest-sha256.txt",
        ),
        (
            "escape",
            Box::new(|b| {
                append(
                    b,
                    "manifest-sha256.txt",
                    &format!("{}  data/../../etc/passwd\n", "0".repeat(64)),
                )
            }),
            "contains '..'",
        ),
        (
            "absolute",
            Box::new(|b| {
                append(
                    b,
                    "manifest-sha256.txt",
                    &format!("{}  /etc/passwd\n", "0".repeat(64)),
                )
            }),
            "absolute path",
        ),
        (
            "tilde",
            Box::new(|b| {
                append(
                    b,
                    "manifest-sha256.txt",
                    &format!("{}  ~/x\n", "0".repeat(64)),
                )
            }),
            "starts with '~'",
        ),
        (
            "listed twice",
            Box::new(|b| {
                append(
                    b,
                    "manifest-sha256.txt",
                    &format!("{}  data/a\n", "0".repeat(64)),
                )
            }),
            "'data/a' is listed twice with different digests",
        ),
        (
            "bom",
            Box::new(|b| {
                let t = std::fs::read(b.join("bagit.txt")).unwrap();
                std::fs::write(
                    b.join("bagit.txt"),
                    [b"\xef\xbb\xbf".as_slice(), &t].concat(),
                )
                .unwrap();
            }),
            "byte-order mark",
        ),
    ];
    for (what, corrupt, expect) in cases {
        let d = Dir::new();
        d.create(b"b/a", b"alpha");
        d.create(b"b/sub/b", b"beta");
        d.cmd()
            .args(["bag", "create", "b", "-d", "sha256,md5", "-q"])
            .run()
            .code(0);
        corrupt(&d.join("b"));
        let r = validate(&d, "b");
        assert_eq!(r.code, 1, "{what}: {r:?}");
        assert!(
            r.stderr.contains(expect),
            "{what}: expected '{expect}' in:\n{}",
            r.stderr
        );
        assert!(r.stdout.contains("is NOT valid"), "{what}: {}", r.stdout);
    }
}

fn append(root: &Path, file: &str, text: &str) {
    let mut t = std::fs::read_to_string(root.join(file)).unwrap();
    t.push_str(text);
    std::fs::write(root.join(file), t).unwrap();
}

#[test]
fn accepts_valid_bags_of_every_version_and_encoding() {
    let d = Dir::new();
    let payload: &[(&str, &[u8])] = &[
        ("a.txt", b"one"),
        ("new\nline", b"two"),
        ("pct%", b"3"),
        ("inner/bagit.txt", b"BagIt-Version: 1.0\n"),
    ];
    handmade(&d, "v097", "0.97", "UTF-8", payload, utf8);
    handmade(&d, "v093", "0.93", "UTF-8", payload, utf8);
    handmade(&d, "u16", "1.0", "UTF-16", payload, |s| {
        let mut v = vec![0xfe, 0xff];
        v.extend(s.encode_utf16().flat_map(|u| u.to_be_bytes()));
        v
    });
    handmade(
        &d,
        "latin1",
        "1.0",
        "ISO-8859-1",
        &[("caf\u{e9}", b"c")],
        |s| s.chars().map(|c| c as u32 as u8).collect(),
    );
    // `./` prefixes and CRLF line endings.
    handmade(&d, "dots", "1.0", "UTF-8", &[("a", b"a")], |s| {
        s.replace("  data/", "  ./data/")
            .replace('\n', "\r\n")
            .into_bytes()
    });
    for b in ["v097", "v093", "u16", "latin1", "dots"] {
        let r = validate(&d, b);
        assert_eq!(r.code, 0, "{b}: {r:?}");
    }
}

#[test]
fn holey_bag_reports_what_to_fetch_and_never_fetches() {
    let d = Dir::new();
    handmade(
        &d,
        "h",
        "1.0",
        "UTF-8",
        &[("here", b"h"), ("there", b"t")],
        utf8,
    );
    std::fs::remove_file(d.join("h/data/there")).unwrap();
    std::fs::write(
        d.join("h/fetch.txt"),
        "http://127.0.0.1:9/there 1 data/there\n",
    )
    .unwrap();
    let r = validate(&d, "h");
    r.code(1);
    assert!(r.stderr.contains("data/there: not present; fetch.txt says to fetch it from http://127.0.0.1:9/there (1 bytes); trawl never fetches"), "{}", r.stderr);
    r.stdout_has("1 file to fetch");
}

#[test]
fn out_builds_a_separate_bag_and_leaves_the_source_alone() {
    let d = Dir::new();
    d.create(b"src/a", b"a");
    d.create(b"src/d/b", b"b");
    d.cmd()
        .args(["bag", "create", "src", "--out", "dest", "-q"])
        .run()
        .code(0);
    assert!(
        d.join("src/a").exists()
            && !d.join("src/data").exists()
            && !d.join("src/bagit.txt").exists()
    );
    validate(&d, "dest").code(0);
    let r = d
        .cmd()
        .args(["bag", "create", "src", "--out", "dest"])
        .run();
    r.code(2);
    r.stderr_has("already exists");
}

#[test]
fn update_adds_algorithms_after_verifying() {
    let d = Dir::new();
    d.create(b"b/a", b"a");
    d.cmd()
        .args(["bag", "create", "b", "-d", "sha256", "-q"])
        .run()
        .code(0);
    d.cmd()
        .args(["bag", "update", "b", "-d", "sha512,md5", "-q"])
        .run()
        .code(0);
    assert!(d.join("b/manifest-sha512.txt").exists() && d.join("b/manifest-md5.txt").exists());
    assert!(d.join("b/tagmanifest-md5.txt").exists());
    validate(&d, "b").code(0);
    std::fs::write(d.join("b/data/a"), b"changed").unwrap();
    let r = d.cmd().args(["bag", "update", "b", "-d", "blake3"]).run();
    r.code(2);
    r.stderr_has("not updated");
    assert!(!d.join("b/manifest-blake3.txt").exists());
}

/// bagit-python's verdict on a bag (`bagit.Bag(path).validate()`), with the error it gives;
/// None (and the test skipped, or failed under TRAWL_REQUIRE_INTEROP=1) without bagit-python.
pub(crate) fn bagit_python(d: &Dir, bag: &str) -> Option<Result<(), String>> {
    if !crate::util::python_with(&["bagit"]) {
        return None;
    }
    let o = std::process::Command::new("python3")
        .args([
            "-c",
            "import bagit, sys\n\
             try:\n    bagit.Bag(sys.argv[1]).validate()\n\
             except bagit.BagError as e:\n    print(e); sys.exit(1)",
            bag,
        ])
        .current_dir(d.path())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    Some(if o.status.success() {
        Ok(())
    } else {
        Err(text)
    })
}

pub(crate) fn inode(p: &Path) -> u64 {
    std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap())
}

/// bagit-python's `info` of a bag, as JSON (a label with several values gives a list).
pub(crate) fn bagit_python_info(d: &Dir, bag: &str) -> serde_json::Value {
    crate::util::python_json(
        d,
        "import bagit, json, sys; print(json.dumps(bagit.Bag(sys.argv[1]).info))",
        bag,
    )
}

/// `bag update --info` / `--remove-info` edit bag-info.txt as bagit-python's `bag.info` and
/// `save()` do: labels set or removed, the tag manifests written again (a tag file below the
/// top kept in them), Payload-Oxum kept right. bagit-python accepts the result and reads the
/// fields; an edit that cannot be made, or a bag that does not validate, changes nothing.
#[test]
fn update_edits_bag_info_and_keeps_the_bag_valid() {
    let d = Dir::new();
    d.create(b"b/a.txt", b"alpha\n");
    d.create(b"b/sub/b.txt", b"beta\n");
    d.cmd()
        .args(["bag", "create", "b", "-d", "sha256", "-q"])
        .args(["--info", "Source-Organization: Archive"])
        .args(["--info", "Contact-Name: A"])
        .run()
        .code(0);
    // A tag file below the bag's top, listed in its tag manifest (as bagit-python lists them).
    d.create(b"b/extra/notes.txt", b"notes\n");
    let mut tm = std::fs::OpenOptions::new()
        .append(true)
        .open(d.join("b/tagmanifest-sha256.txt"))
        .unwrap();
    use std::io::Write;
    writeln!(tm, "{}  extra/notes.txt", sha256_hex(b"notes\n")).unwrap();
    drop(tm);
    validate(&d, "b").code(0);
    let before = std::fs::read(d.join("b/bag-info.txt")).unwrap();
    for (args, why) in [
        (vec!["--remove-info", "Nope"], "no 'Nope' label to remove"),
        (
            vec!["--info", "Payload-Oxum: 9.9"],
            "'Payload-Oxum' is kept right by trawl",
        ),
    ] {
        let r = d.cmd().args(["bag", "update", "b"]).args(&args).run();
        r.code(2);
        r.stderr_has(why);
        assert_eq!(std::fs::read(d.join("b/bag-info.txt")).unwrap(), before);
    }
    let r = d
        .cmd()
        .args(["bag", "update", "b"])
        .args(["--info", "Contact-Name: B", "--info", "Contact-Name: C"])
        .args(["--info", "External-Description: edited by trawl"])
        .args(["--remove-info", "source-organization"])
        .run();
    r.code(0);
    r.stdout_has("b: bag-info.txt edited, the tag manifests written again to match");
    let info = std::fs::read_to_string(d.join("b/bag-info.txt")).unwrap();
    assert!(!info.contains("Source-Organization"), "{info}");
    assert!(info.contains("Payload-Oxum: 11.2\n"), "{info}");
    let tm = std::fs::read_to_string(d.join("b/tagmanifest-sha256.txt")).unwrap();
    assert!(tm.contains("  extra/notes.txt\n"), "{tm}");
    let r = validate(&d, "b");
    r.code(0);
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
    if let Some(verdict) = bagit_python(&d, "b") {
        assert_eq!(verdict, Ok(()));
        let info = bagit_python_info(&d, "b");
        assert_eq!(info["Contact-Name"], serde_json::json!(["B", "C"]));
        assert_eq!(info["External-Description"], "edited by trawl");
        assert_eq!(info["Payload-Oxum"], "11.2");
        assert!(info.get("Source-Organization").is_none(), "{info}");
    }
    // A bag that does not validate is not edited.
    std::fs::write(d.join("b/data/a.txt"), b"alphA\n").unwrap();
    let before = std::fs::read(d.join("b/bag-info.txt")).unwrap();
    let r = d
        .cmd()
        .args(["bag", "update", "b", "--info", "Contact-Name: D"])
        .run();
    r.code(2);
    r.stderr_has("not updated: the bag does not validate");
    assert_eq!(std::fs::read(d.join("b/bag-info.txt")).unwrap(), before);
}

/// On a file system that shares blocks (XFS with reflinks), `bag create --out` copies each
/// file as a reflink: counted as such, a file of its own (another inode), and the source
/// edited afterwards leaves the bag valid.
#[test]
fn out_copies_by_reflink_where_the_file_system_can() {
    let d = Dir::new();
    let Some(_xfs) = crate::flv::xfs_mount(&d) else {
        return;
    };
    d.create(b"xfs/src/a.bin", &crate::util::noise(256 << 10, 7));
    let r = d
        .cmd()
        .args(["bag", "create", "xfs/src", "--out", "xfs/bag"])
        .run();
    r.code(0);
    r.stdout_has("1 copied and read back, 1 of them sharing blocks with the source (reflink)");
    assert_ne!(
        inode(&d.join("xfs/src/a.bin")),
        inode(&d.join("xfs/bag/data/a.bin"))
    );
    std::fs::write(d.join("xfs/src/a.bin"), b"edited").unwrap();
    validate(&d, "xfs/bag").code(0);
}

/// A signal while `bag create` (in place or `--out`) or `bag update` reads the payload stops it
/// as it stops a scan: exit 130, the one "interrupted" message and no error of the bag's own,
/// nothing created or changed.
#[test]
fn sigint_during_bag_create_or_update_is_an_interruption_like_scan() {
    use std::process::{Command, Stdio};
    let d = Dir::new();
    let chunk: Vec<u8> = (0..1u32 << 20)
        .map(|i| i.wrapping_mul(2654435761) as u8)
        .collect();
    std::fs::create_dir_all(d.join("src")).unwrap();
    let mut f = std::fs::File::create(d.join("src/big")).unwrap();
    for _ in 0..300 {
        std::io::Write::write_all(&mut f, &chunk).unwrap();
    }
    drop(f);
    // A bag of the same bytes (a hard link, no second copy on disk) for `bag update`.
    std::fs::create_dir(d.join("bag")).unwrap();
    std::fs::hard_link(d.join("src/big"), d.join("bag/big")).unwrap();
    d.cmd().args(["bag", "create", "bag", "-q"]).run().code(0);
    let listing = |p: &str| {
        let mut v: Vec<_> = std::fs::read_dir(d.join(p))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };
    let bag_before = listing("bag");
    for args in [
        &[
            "bag",
            "create",
            "src",
            "-q",
            "-d",
            "md5,sha512",
            "-j1",
            "--io",
            "read",
        ][..],
        &[
            "bag",
            "create",
            "src",
            "--out",
            "copy",
            "-q",
            "-d",
            "md5,sha512",
            "-j1",
            "--io",
            "read",
        ][..],
        &[
            "bag",
            "update",
            "bag",
            "-q",
            "-d",
            "md5,sha512",
            "-j1",
            "--io",
            "read",
        ][..],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_trawl"))
            .args(args)
            .current_dir(d.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        wait_until(&format!("{args:?} began to read"), || {
            assert!(child.try_wait().unwrap().is_none(), "{args:?} ended");
            bytes_read_by(pid) > 1 << 20
        });
        // SAFETY: kill has no memory effects in this process.
        unsafe { libc::kill(pid as i32, libc::SIGINT) };
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{args:?}: {stderr}");
        assert_eq!(
            stderr.lines().collect::<Vec<_>>(),
            ["trawl: interrupted; no manifest or report was left half-written"],
            "{args:?}"
        );
        assert_eq!(listing("src"), ["big"], "{args:?}: the source changed");
        assert_eq!(listing("bag"), bag_before, "{args:?}: the bag changed");
        assert_eq!(listing("."), ["bag", "src"], "{args:?}: left behind");
    }
}
