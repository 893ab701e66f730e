//! `trawl bag create`, `validate` and `update`: bags made in place and apart, corruptions found
//! precisely, links, BagIt Profiles, and bags from elsewhere read safely: nothing outside the
//! bag is read, no tag file waited on or read past its cap, a hostile fetch.txt in bounded time,
//! memory and output.

use std::path::Path;

use crate::util::{Dir, Run, bytes_read_by, mkfifo, peak_rss_apart, sha256_hex, wait_until};

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

fn validate(d: &Dir, bag: &str) -> Run {
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

/// A tree with links as real trees have them: to a file, to a directory, dangling.
fn tree_with_links(d: &Dir) {
    d.create(b"src/a.txt", b"alpha\n");
    d.create(b"src/sub/b.txt", b"beta\n");
    std::os::unix::fs::symlink("a.txt", d.join("src/to-a")).unwrap();
    std::os::unix::fs::symlink("sub", d.join("src/to-sub")).unwrap();
    std::os::unix::fs::symlink("../gone.txt", d.join("src/sub/dangling")).unwrap();
}

#[test]
fn links_are_refused_by_default_each_named_with_the_choices() {
    let d = Dir::new();
    tree_with_links(&d);
    let r = d.cmd().args(["bag", "create", "src", "-q"]).run();
    r.code(2);
    for l in ["src/to-a", "src/to-sub", "src/sub/dangling"] {
        r.stderr_has(&format!(
            "{l}: symbolic link; a bag holds none: --links skip"
        ));
    }
    assert!(!d.join("src/data").exists() && d.join("src/a.txt").exists());
}

#[test]
fn links_skip_leaves_them_out_of_the_bag_and_lists_them() {
    let d = Dir::new();
    tree_with_links(&d);
    // In place the links would stay inside data/: refused, nothing changed.
    let r = d
        .cmd()
        .args(["bag", "create", "src", "--links", "skip"])
        .run();
    r.code(2);
    r.stderr_has("--links skip needs --out DEST");
    assert!(!d.join("src/data").exists());
    let r = d
        .cmd()
        .args(["bag", "create", "src", "--out", "bag", "--links", "skip"])
        .run();
    r.code(0);
    r.stdout_has("3 symbolic links left out (--links skip), listed in bag/links-left-out.txt");
    let listed = std::fs::read_to_string(d.join("bag/links-left-out.txt")).unwrap();
    assert_eq!(
        listed,
        "data/sub/dangling -> ../gone.txt\ndata/to-a -> a.txt\ndata/to-sub -> sub\n"
    );
    assert!(!d.join("bag/data/to-a").exists() && !d.join("bag/data/to-sub").exists());
    // The list is a tag file, under the tag manifests; the source keeps its links.
    let tags = std::fs::read_to_string(d.join("bag/tagmanifest-sha256.txt")).unwrap();
    assert!(tags.contains(&format!(
        "{}  links-left-out.txt",
        sha256_hex(listed.as_bytes())
    )));
    assert!(
        std::fs::symlink_metadata(d.join("src/to-a"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    validate(&d, "bag").code(0);
    if let Some(bagit) = crate::util::tool("bagit.py") {
        crate::util::run_tool(
            d.path(),
            &bagit,
            &[
                std::ffi::OsStr::new("--validate"),
                std::ffi::OsStr::new("bag"),
            ],
        )
        .code(0);
    }
}

#[test]
fn links_follow_bags_their_targets_and_names_a_dangling_one_as_dangling() {
    let d = Dir::new();
    tree_with_links(&d);
    let r = d
        .cmd()
        .args(["bag", "create", "src", "--out", "bag", "--links", "follow"])
        .run();
    r.code(2);
    r.stderr_has("src/sub/dangling: dangling symbolic link to ../gone.txt: nothing there");
    assert!(!d.join("bag").exists());
    std::fs::remove_file(d.join("src/sub/dangling")).unwrap();
    d.cmd()
        .args([
            "bag", "create", "src", "--out", "bag", "--links", "follow", "-q",
        ])
        .run()
        .code(0);
    assert_eq!(std::fs::read(d.join("bag/data/to-a")).unwrap(), b"alpha\n");
    assert_eq!(
        std::fs::read(d.join("bag/data/to-sub/b.txt")).unwrap(),
        b"beta\n"
    );
    assert!(
        !std::fs::symlink_metadata(d.join("bag/data/to-a"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    validate(&d, "bag").code(0);
    // --follow says the same; with --links skip it contradicts, and is refused.
    let r = d
        .cmd()
        .args([
            "bag", "create", "src", "--out", "bag2", "--links", "skip", "--follow",
        ])
        .run();
    r.code(2);
    r.stderr_has("--links skip says otherwise");
}

/// `bag validate --profile`: a bag held to a BagIt Profile. One it meets is valid (exit 0); a
/// departure is an error naming the field and the profile (exit 1); a profile that cannot be
/// read or is not one is named, and nothing is validated (exit 2).
#[test]
fn a_bag_is_held_to_a_bagit_profile() {
    let d = Dir::new();
    d.create(b"b/a.txt", b"abc");
    d.cmd()
        .args(["bag", "create", "b", "--info", "Source-Organization: Test"])
        .args([
            "--info",
            "BagIt-Profile-Identifier: https://example.org/p.json",
        ])
        .run()
        .code(0);
    let profile = |extra: &str| {
        format!(
            r#"{{"BagIt-Profile-Info": {{"BagIt-Profile-Identifier": "https://example.org/p.json"}},
                 "Accept-BagIt-Version": ["1.0"], "Manifests-Required": ["sha256"]{extra}}}"#
        )
    };
    d.create(b"meets.json", profile("").as_bytes());
    d.create(
        b"strict.json",
        profile(r#", "Bag-Info": {"Contact-Email": {"required": true}}, "Data-Empty": true"#)
            .as_bytes(),
    );
    d.create(b"broken.json", b"{\"BagIt-Profile-Info\": {}}");
    let r = d
        .cmd()
        .args(["bag", "validate", "b", "--profile", "meets.json"])
        .run();
    r.code(0);
    let r = d
        .cmd()
        .args(["bag", "validate", "b", "--profile", "strict.json"])
        .run();
    r.code(1);
    r.stderr_has("Bag-Info: 'Contact-Email' is required and absent (https://example.org/p.json)");
    r.stderr_has("Data-Empty: data/ must hold no file or one empty file");
    let r = d
        .cmd()
        .args(["bag", "validate", "b", "--profile", "broken.json"])
        .run();
    r.code(2);
    r.stderr_has("broken.json: not a BagIt Profile");
    let r = d
        .cmd()
        .args(["bag", "validate", "b", "--profile", "absent.json"])
        .run();
    r.code(2);
    r.stderr_has("absent.json: cannot read the profile");

    // A serialized bag: its type against Accept-Serialization, its content not read.
    let zip = std::process::Command::new("python3")
        .args([
            "-c",
            "import shutil; shutil.make_archive('b', 'zip', '.', 'b')",
        ])
        .current_dir(d.path())
        .status()
        .unwrap();
    assert!(zip.success());
    d.create(
        b"zips.json",
        br#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "https://example.org/p.json"},
             "Accept-BagIt-Version": ["1.0"], "Accept-Serialization": ["application/zip"]}"#,
    );
    d.create(
        b"tars.json",
        br#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "https://example.org/p.json"},
             "Accept-BagIt-Version": ["1.0"], "Serialization": "optional",
             "Accept-Serialization": ["application/x-tar"]}"#,
    );
    let r = d
        .cmd()
        .args(["bag", "validate", "b.zip", "--profile", "zips.json"])
        .run();
    r.code(3);
    r.stdout_has("b.zip is a serialized bag (application/zip): the profile accepts its serialization; its content was NOT CHECKED");
    let r = d
        .cmd()
        .args(["bag", "validate", "b.zip", "--profile", "tars.json"])
        .run();
    r.code(1);
    r.stderr_has(
        "Accept-Serialization: the bag is application/zip, the profile accepts application/x-tar",
    );
}

/// `--profile` names a FIFO, a device or an oversized file: refused at once, naming the file
/// and why (exit 2, as for a profile that does not exist), never waited on or read whole.
#[test]
fn a_profile_that_is_not_a_small_regular_file_is_refused_at_once() {
    let d = Dir::new();
    d.create(b"b/a.txt", b"abc");
    d.cmd().args(["bag", "create", "b", "-q"]).run().code(0);
    crate::util::mkfifo(&d.join("p.fifo"));
    let r = d
        .cmd()
        .args(["bag", "validate", "b", "--profile", "p.fifo"])
        .run_within(5);
    r.code(2);
    r.stderr_has("p.fifo: cannot read the profile: FIFO (named pipe), not read");
    let r = d
        .cmd()
        .args(["bag", "validate", "b", "--profile", "/dev/zero"])
        .run_within(5);
    r.code(2);
    r.stderr_has("/dev/zero: cannot read the profile: character device, not read");
    d.create(b"big.json", &vec![b' '; (1 << 20) + 1]);
    let r = d
        .cmd()
        .args(["bag", "validate", "b", "--profile", "big.json"])
        .run_within(5);
    r.code(2);
    r.stderr_has("big.json: cannot read the profile: larger than the 1 MiB");
}

/// A FIFO among a bag's tag files is named (a warning, as special files in the payload are),
/// never passed over in silence; a profile that requires a tag file of that name is not met.
#[test]
fn a_fifo_among_the_tag_files_is_named() {
    let d = Dir::new();
    d.create(b"b/a.txt", b"abc");
    d.cmd()
        .args(["bag", "create", "b", "-q"])
        .args([
            "--info",
            "BagIt-Profile-Identifier: https://example.org/p.json",
        ])
        .run()
        .code(0);
    crate::util::mkfifo(&d.join("b/extra.txt"));
    let r = d.cmd().args(["bag", "validate", "b"]).run_within(5);
    r.code(0);
    r.stderr_has("b: extra.txt: a tag file that is a FIFO (named pipe), not read");
    d.create(
        b"p.json",
        br#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "https://example.org/p.json"},
             "Accept-BagIt-Version": ["1.0"], "Tag-Files-Required": ["extra.txt"]}"#,
    );
    let r = d
        .cmd()
        .args(["bag", "validate", "b", "--profile", "p.json"])
        .run_within(5);
    r.code(1);
    r.stderr_has("Tag-Files-Required: extra.txt is a FIFO (named pipe), not a regular file");
}

/// `--links skip` with a link whose name and target are not UTF-8: links-left-out.txt, a tag
/// file of a UTF-8 bag, holds them percent-encoded (each byte outside UTF-8 as `%XX`), valid
/// UTF-8 that decodes back to the exact bytes.
#[test]
fn links_left_out_that_are_not_utf8_are_percent_encoded() {
    use std::os::unix::ffi::OsStrExt;
    let d = Dir::new();
    d.create(b"src/a.txt", b"alpha\n");
    let name = d.join(std::ffi::OsStr::from_bytes(b"src/l\xffnk"));
    std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(b"t\xff 50%"), &name).unwrap();
    d.cmd()
        .args([
            "bag", "create", "src", "--out", "bag", "--links", "skip", "-q",
        ])
        .run()
        .code(0);
    let raw = std::fs::read(d.join("bag/links-left-out.txt")).unwrap();
    let text = String::from_utf8(raw).expect("links-left-out.txt is UTF-8");
    assert_eq!(text, "data/l%FFnk -> t%FF 50%25\n");
    let (path, target) = text.trim_end().split_once(" -> ").unwrap();
    assert_eq!(
        trawl_bag::decode_path_bytes(path.as_bytes()),
        b"data/l\xffnk"
    );
    assert_eq!(
        trawl_bag::decode_path_bytes(target.as_bytes()),
        b"t\xff 50%"
    );
    validate(&d, "bag").code(0);
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

fn inode(p: &Path) -> u64 {
    std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap())
}

/// `bag create --out` copies the payload by default: the bag shares no inode with its source,
/// so an edit of the source leaves the bag as it was (valid to bagit-python and to trawl);
/// `--link` hard-links, and then an edit of the source is an edit of the bag.
#[test]
fn out_copies_the_payload_and_links_it_only_when_asked() {
    let d = Dir::new();
    d.create(b"src/a.txt", b"first version\n");
    d.create(b"src/d/b.txt", b"second file\n");
    let r = d
        .cmd()
        .args(["bag", "create", "src", "--out", "copied"])
        .run();
    r.code(0);
    for f in ["a.txt", "d/b.txt"] {
        assert_ne!(
            inode(&d.join("src").join(f)),
            inode(&d.join("copied/data").join(f)),
            "{f}: the bag's file is the source's"
        );
    }
    r.stdout_has("2 copied and read back");
    let r = d
        .cmd()
        .args(["bag", "create", "src", "--out", "linked", "--link"])
        .run();
    r.code(0);
    r.stdout_has("2 hard-linked (--link)");
    assert_eq!(
        inode(&d.join("src/a.txt")),
        inode(&d.join("linked/data/a.txt"))
    );
    // The source edited in place (the same inode, as an editor that rewrites a file keeps it).
    std::fs::write(d.join("src/a.txt"), b"edited afterwards\n").unwrap();
    validate(&d, "copied").code(0);
    validate(&d, "linked").code(1);
    if let Some(verdict) = bagit_python(&d, "copied") {
        assert_eq!(verdict, Ok(()), "bagit-python on the copied bag");
        assert!(
            bagit_python(&d, "linked").unwrap().is_err(),
            "bagit-python finds the linked bag changed with its source"
        );
    }
}

/// bagit-python's `info` of a bag, as JSON (a label with several values gives a list).
fn bagit_python_info(d: &Dir, bag: &str) -> serde_json::Value {
    crate::util::python_json(
        d,
        "import bagit, json, sys; print(json.dumps(bagit.Bag(sys.argv[1]).info))",
        bag,
    )
}

const PROFILE: &str = r#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "https://example.org/p.json"},
    "Accept-BagIt-Version": ["1.0"], "Manifests-Required": ["sha256"],
    "Bag-Info": {"Source-Organization": {"required": true, "values": ["Archive"]},
                 "Contact-Email": {"required": true},
                 "Contact-Name": {"recommended": true},
                 "External-Identifier": {"required": true}}}"#;

/// `bag create --profile`: what the profile requires and the command line lacks is refused at
/// once, each field named, nothing written (in place or at --out); what it fixes (a label of
/// one allowed value, its identifier) is filled in, and what it recommends and the bag lacks
/// is said. The bag validates against the profile, the ok line naming it, and bagit-python
/// accepts it with the fields in its `info`.
#[test]
fn create_with_a_profile_fills_in_what_it_fixes_and_refuses_what_is_missing() {
    let d = Dir::new();
    d.create(b"src/a.txt", b"alpha\n");
    d.create(b"p.json", PROFILE.as_bytes());
    let untouched = |d: &Dir| {
        assert!(d.join("src/a.txt").is_file() && !d.join("src/data").exists());
        assert!(!d.join("src/bagit.txt").exists() && !d.join("bag").exists());
    };
    let r = d
        .cmd()
        .args([
            "bag",
            "create",
            "src",
            "--profile",
            "p.json",
            "-d",
            "sha512",
        ])
        .run();
    r.code(2);
    r.stderr_has("not bagged, nothing written: the bag would not meet the BagIt Profile https://example.org/p.json (3 departures)");
    r.stderr_has("Bag-Info: 'Contact-Email' is required and absent");
    r.stderr_has("Bag-Info: 'External-Identifier' is required and absent");
    r.stderr_has("Manifests-Required: no manifest-sha256.txt");
    untouched(&d);
    let r = d
        .cmd()
        .args([
            "bag",
            "create",
            "src",
            "--out",
            "bag",
            "--profile",
            "p.json",
        ])
        .args(["--info", "Contact-Email: a@example.org"])
        .args(["--info", "External-Identifier: x1"])
        .args(["--info", "Source-Organization: Elsewhere"])
        .run();
    r.code(2);
    r.stderr_has("Bag-Info: 'Source-Organization' is 'Elsewhere', not one of Archive");
    untouched(&d);
    // What the profile asks of the payload, once it is read: still nothing written.
    d.create(
        b"p2.json",
        PROFILE
            .replace(
                r#""Manifests-Required""#,
                r#""Payload-Files-Required": ["data/must.txt"], "Manifests-Required""#,
            )
            .as_bytes(),
    );
    let r = d
        .cmd()
        .args(["bag", "create", "src", "--profile", "p2.json"])
        .args(["--info", "Contact-Email: a@example.org"])
        .args(["--info", "External-Identifier: x1"])
        .run();
    r.code(2);
    r.stderr_has("Payload-Files-Required: no data/must.txt");
    untouched(&d);

    let r = d
        .cmd()
        .args([
            "bag",
            "create",
            "src",
            "--out",
            "bag",
            "--profile",
            "p.json",
        ])
        .args(["--info", "Contact-Email: a@example.org"])
        .args(["--info", "External-Identifier: x1"])
        .run();
    r.code(0);
    r.stderr_has("Bag-Info: 'Contact-Name' is recommended and absent");
    let info = std::fs::read_to_string(d.join("bag/bag-info.txt")).unwrap();
    for line in [
        "Source-Organization: Archive\n",
        "BagIt-Profile-Identifier: https://example.org/p.json\n",
        "Contact-Email: a@example.org\n",
    ] {
        assert!(info.contains(line), "{line:?} in\n{info}");
    }
    let r = d
        .cmd()
        .args(["bag", "validate", "bag", "--profile", "p.json"])
        .run();
    r.code(0);
    r.stdout_has("bag is valid (BagIt 1.0, 1 file, 6 bytes checked); it meets the BagIt Profile https://example.org/p.json");
    r.stderr_has("warning: bag: profile: Bag-Info: 'Contact-Name' is recommended and absent (https://example.org/p.json)");
    if let Some(verdict) = bagit_python(&d, "bag") {
        assert_eq!(verdict, Ok(()));
        let info = bagit_python_info(&d, "bag");
        assert_eq!(info["Source-Organization"], "Archive");
        assert_eq!(
            info["BagIt-Profile-Identifier"],
            "https://example.org/p.json"
        );
        assert_eq!(info["External-Identifier"], "x1");
    }
}

/// `bag create --profile`: what the profile would write into bag-info.txt (a label of one
/// allowed value, its identifier) is held to `--info`'s rule: a line break (which would plant
/// labels of its own) or white space around a value (which bag-info.txt does not keep, so the
/// bag would not meet its own profile) is refused at once, naming the profile file and the
/// label: exit 2, nothing written, the source untouched.
#[test]
fn create_refuses_a_profile_value_bag_info_txt_cannot_hold() {
    let d = Dir::new();
    d.create(b"src/a.txt", b"alpha\n");
    let head = r#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "https://example.org/p.json"},
        "Accept-BagIt-Version": ["1.0"], "Bag-Info": {"Source-Organization": {"values": ["#;
    for (value, why) in [
        (
            r#""Org\nPayload-Oxum: 999.9\nExternal-Identifier: injected""#,
            "line break",
        ),
        (r#"" padded ""#, "white space"),
    ] {
        d.create(b"p.json", format!("{head}{value}]}}}}}}").as_bytes());
        for out in [&["--out", "bag"][..], &[]] {
            let r = d
                .cmd()
                .args(["bag", "create", "src", "--profile", "p.json"])
                .args(out)
                .run();
            r.code(2);
            r.stderr_has("p.json: ");
            r.stderr_has("'Source-Organization'");
            r.stderr_has(why);
            assert!(!d.join("bag").exists(), "{value}");
            assert!(d.join("src/a.txt").is_file() && !d.join("src/data").exists());
            assert!(!d.join("src/bag-info.txt").exists());
        }
    }
    // The same rule as --info's.
    let r = d
        .cmd()
        .args(["bag", "create", "src", "--out", "bag"])
        .args(["--info", "Source-Organization: Org\nPayload-Oxum: 999.9"])
        .run();
    r.code(2);
    r.stderr_has("line break");
    assert!(!d.join("bag").exists());
}

/// `bag validate --profile`: a tag file whose name is not UTF-8 is compared on its bytes: a
/// profile requiring (or allowing only) the text its lossy conversion gives is not met.
#[test]
fn a_name_that_is_not_utf8_does_not_meet_the_profile_s_lossy_text() {
    use std::os::unix::ffi::OsStrExt;
    let d = Dir::new();
    d.create(b"b/a.txt", b"abc");
    d.cmd()
        .args(["bag", "create", "b", "-q"])
        .args([
            "--info",
            "BagIt-Profile-Identifier: https://example.org/p.json",
        ])
        .run()
        .code(0);
    std::fs::write(
        d.join(std::ffi::OsStr::from_bytes(b"b/extra\xff.txt")),
        b"x",
    )
    .unwrap();
    for field in ["Tag-Files-Required", "Tag-Files-Allowed"] {
        d.create(
            b"p.json",
            format!(
                r#"{{"BagIt-Profile-Info": {{"BagIt-Profile-Identifier": "https://example.org/p.json"}},
                     "Accept-BagIt-Version": ["1.0"], "{field}": ["extra\ufffd.txt"]}}"#
            )
            .as_bytes(),
        );
        let r = d
            .cmd()
            .args(["bag", "validate", "b", "--profile", "p.json"])
            .run();
        r.code(1);
        r.stderr_has(&format!("{field}: "));
    }
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

/// `bag validate -L` and `bag update -L` are refused, not ignored: neither follows links.
#[test]
fn bag_validate_and_update_refuse_follow() {
    let d = Dir::new();
    d.create(b"t/plain", b"p");
    d.cmd()
        .args(["bag", "create", "t", "--out", "b", "-q"])
        .run()
        .code(0);
    for cmd in ["validate", "update"] {
        let mut args = vec!["bag", cmd, "b", "-L"];
        if cmd == "update" {
            args.extend(["-d", "md5"]);
        }
        let r = d.cmd().args(&args).run();
        assert_eq!(r.code, 2, "{cmd}: {}", r.stderr);
        r.stderr_has("-L/--follow");
    }
}

/// A valid bag `b` made by trawl, with two payload files.
fn small_bag(d: &Dir) {
    d.create(b"b/one.txt", b"one\n");
    d.create(b"b/sub/two.txt", b"two\n");
    d.cmd().args(["bag", "create", "b", "-q"]).run().code(0);
    d.cmd().args(["bag", "validate", "b", "-q"]).run().code(0);
}

#[test]
fn bag_validate_never_waits_on_a_fifo_tag_file() {
    for name in [
        "bag-info.txt",
        "fetch.txt",
        "manifest-sha256.txt",
        "bagit.txt",
    ] {
        let d = Dir::new();
        small_bag(&d);
        let p = d.join("b").join(name);
        let _ = std::fs::remove_file(&p);
        mkfifo(&p);
        let r = d.cmd().args(["bag", "validate", "b"]).run_within(20);
        r.code(2)
            .stderr_has(&format!("b/{name}: not a regular file"));
    }
}

#[test]
fn bag_validate_reads_nothing_outside_the_bag() {
    // A manifest linked to an endless device is refused, not read.
    let d = Dir::new();
    small_bag(&d);
    std::fs::remove_file(d.join("b/manifest-sha256.txt")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", d.join("b/manifest-sha256.txt")).unwrap();
    d.cmd()
        .args(["bag", "validate", "b"])
        .run_within(20)
        .code(2)
        .stderr_has("b/manifest-sha256.txt: a symbolic link that leaves the bag");
    // A manifest linked to a copy outside, and data/ linked to a copy outside: never valid.
    let d = Dir::new();
    small_bag(&d);
    std::fs::rename(d.join("b/manifest-sha256.txt"), d.join("outside-manifest")).unwrap();
    std::os::unix::fs::symlink("../outside-manifest", d.join("b/manifest-sha256.txt")).unwrap();
    let r = d.cmd().args(["bag", "validate", "b"]).run_within(20);
    assert_ne!(r.code, 0, "{}", r.stdout);
    r.stderr_has("leaves the bag");
    let d = Dir::new();
    small_bag(&d);
    std::fs::rename(d.join("b/data"), d.join("outside-data")).unwrap();
    std::os::unix::fs::symlink("../outside-data", d.join("b/data")).unwrap();
    let r = d.cmd().args(["bag", "validate", "b"]).run_within(20);
    assert_ne!(
        r.code, 0,
        "a bag whose data/ leaves it was called valid: {}",
        r.stdout
    );
    assert!(
        (r.stdout.clone() + &r.stderr).contains("data/: a symbolic link"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    // A tag manifest entry reaching out through a link is not read either.
    let d = Dir::new();
    small_bag(&d);
    d.create(b"secret", b"outside\n");
    std::os::unix::fs::symlink("../secret", d.join("b/extra.txt")).unwrap();
    let tm = std::fs::read_to_string(d.join("b/tagmanifest-sha256.txt")).unwrap();
    std::fs::write(
        d.join("b/tagmanifest-sha256.txt"),
        format!("{tm}{}  extra.txt\n", sha256_hex(b"outside\n")),
    )
    .unwrap();
    let r = d.cmd().args(["bag", "validate", "b"]).run_within(20);
    assert_ne!(r.code, 0);
    assert!(
        (r.stdout.clone() + &r.stderr)
            .contains("extra.txt: listed in tagmanifest-sha256.txt but cannot be read"),
        "{}{}",
        r.stdout,
        r.stderr
    );
}

#[test]
fn bag_tag_files_are_read_with_a_size_cap() {
    let d = Dir::new();
    small_bag(&d);
    // One 2 MiB line in bag-info.txt: refused with the limit named, not read into memory whole.
    let mut info = std::fs::read(d.join("b/bag-info.txt")).unwrap();
    info.extend_from_slice(b"Note: ");
    info.extend(std::iter::repeat_n(b'x', 2 << 20));
    info.push(b'\n');
    std::fs::write(d.join("b/bag-info.txt"), info).unwrap();
    d.cmd()
        .args(["bag", "validate", "b"])
        .run_within(60)
        .code(2)
        .stderr_has("b/bag-info.txt: larger than the 1 MiB trawl reads");
}

#[test]
fn a_large_fetch_txt_is_checked_in_linear_time() {
    // 160,000 entries, none present: quadratic matching took 26 s in a release build; linear
    // matching takes a small fraction of the limit even unoptimized.
    let d = Dir::new();
    small_bag(&d);
    let n = 160_000;
    let mut fetch = String::new();
    for i in 0..n {
        fetch.push_str(&format!("https://example.invalid/f{i} 1 data/f{i:06}\n"));
    }
    std::fs::write(d.join("b/fetch.txt"), fetch).unwrap();
    for (alg, len) in [("sha256", 64), ("sha512", 128)] {
        let p = d.join(format!("b/manifest-{alg}.txt"));
        let mut manifest = std::fs::read_to_string(&p).unwrap();
        let zero = "0".repeat(len);
        for i in 0..n {
            manifest.push_str(&format!("{zero}  data/f{i:06}\n"));
        }
        std::fs::write(p, manifest).unwrap();
    }
    std::fs::remove_file(d.join("b/tagmanifest-sha256.txt")).unwrap();
    let r = d.cmd().args(["bag", "validate", "b", "-q"]).run_within(120);
    assert_ne!(r.code, -1, "still running after 120 s: {}", r.stderr);
    r.code(1);
}

/// A fetch.txt of a million bad lines and 100,000 items no manifest lists: validated in
/// bounded memory, with a hundred problem lines shown and the rest counted.
#[test]
fn a_hostile_fetch_txt_costs_bounded_memory_and_output() {
    let d = Dir::new();
    d.create(b"b/one.txt", b"one\n");
    d.cmd().args(["bag", "create", "b", "-q"]).run().code(0);
    let mut fetch = String::new();
    for i in 0..1_000_000u32 {
        fetch.push_str("not a fetch line\n");
        if i % 10 == 0 {
            fetch.push_str(&format!("https://example.invalid/{i} 1 data/f{i:07}\n"));
        }
    }
    std::fs::write(d.join("b/fetch.txt"), &fetch).unwrap();
    let r = d.cmd().args(["bag", "validate", "b"]).run_within(120);
    assert_eq!(r.code, 1, "{}", &r.stderr[..r.stderr.len().min(2000)]);
    let lines = r.stderr.lines().count();
    assert!(lines < 300, "{lines} lines of output");
    r.stderr_has("999900 more problem lines like those above")
        .stderr_has("99900 more problem lines like those above");
    let (code, rss) = peak_rss_apart(&d, &["bag", "validate", "b"]);
    assert_eq!(code, 1);
    assert!(
        rss < 80 << 20,
        "peak RSS {} MiB for a {} MiB fetch.txt",
        rss >> 20,
        fetch.len() >> 20
    );
}
