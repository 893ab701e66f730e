//! Fixity correctness where other tools disagree: every standard algorithm against an
//! independent implementation, digest lengths shared by several algorithms, GNU's binary-mode
//! marker, bags whose algorithms trawl lacks, and the bag commands' promises.

use std::ffi::OsStr;
use std::process::Command;

use serde_json::Value;

use crate::util::{Dir, python_with, run_tool, tool};

/// Every algorithm trawl has that Python's hashlib also has, with hashlib's name.
const HASHLIB: [(&str, &str); 12] = [
    ("md5", "md5"),
    ("sha1", "sha1"),
    ("sha224", "sha224"),
    ("sha256", "sha256"),
    ("sha384", "sha384"),
    ("sha512", "sha512"),
    ("sha3-224", "sha3_224"),
    ("sha3-256", "sha3_256"),
    ("sha3-384", "sha3_384"),
    ("sha3-512", "sha3_512"),
    ("blake2b", "blake2b"),
    ("blake2s", "blake2s"),
];

fn hashlib(alg: &str, path: &std::path::Path) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import hashlib,sys; print(hashlib.{alg}(open(sys.argv[1],'rb').read()).hexdigest())"
        ))
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn every_standard_algorithm_equals_pythons_hashlib() {
    if !python_with(&["hashlib"]) {
        return;
    }
    let d = Dir::new();
    d.create(b"t/empty", b"");
    d.create(b"t/small", b"abc");
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    d.create(b"t/big", &big);
    let list = HASHLIB.map(|(n, _)| n).join(",");
    let r = d
        .cmd()
        .args(["scan", "t", "-q", "--no-reduce", "-d", &list, "--json", "-"])
        .run();
    r.code(0);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    for f in v["files"].as_array().unwrap() {
        let path = d.join(f["path"].as_str().unwrap());
        for (ours, theirs) in HASHLIB {
            assert_eq!(
                f["digests"][ours].as_str().unwrap(),
                hashlib(theirs, &path),
                "{ours} of {}",
                path.display()
            );
        }
    }
}

#[test]
fn manifests_for_the_new_algorithms_are_read_by_coreutils() {
    let (Some(b2sum), Some(sha224sum), Some(sha384sum)) =
        (tool("b2sum"), tool("sha224sum"), tool("sha384sum"))
    else {
        return;
    };
    let d = Dir::new();
    d.create(b"t/a.txt", b"alpha\n");
    d.create(b"t/sub/b.bin", &[7u8; 100_000]);
    d.cmd()
        .args([
            "scan",
            "t",
            "-q",
            "-m",
            "b2sum:B2SUMS",
            "-m",
            "sha224sum:S224",
            "-m",
            "sha384sum:S384",
        ])
        .run()
        .code(0);
    for (prog, file) in [
        (&b2sum, "B2SUMS"),
        (&sha224sum, "S224"),
        (&sha384sum, "S384"),
    ] {
        let r = run_tool(
            &d.join("t"),
            prog,
            &[OsStr::new("-c"), d.join(file).as_os_str()],
        );
        r.code(0);
        assert!(r.stdout.contains("a.txt: OK"), "{}", r.stdout);
    }
}

#[test]
fn a_b2sum_manifest_is_no_false_alarm_whatever_its_name() {
    let Some(b2sum) = tool("b2sum") else {
        return;
    };
    let d = Dir::new();
    d.create(b"a.txt", b"alpha\n");
    d.create(b"b.txt", b"beta\n");
    d.create(b"c.txt", b"gamma\n");
    let r = run_tool(
        d.path(),
        &b2sum,
        &[
            OsStr::new("a.txt"),
            OsStr::new("b.txt"),
            OsStr::new("c.txt"),
        ],
    );
    r.code(0);
    std::fs::write(d.join("B2SUMS"), &r.stdout).unwrap();
    // The name says blake2b.
    let v = d.cmd().args(["verify", "B2SUMS"]).run();
    v.code(0);
    assert_eq!(v.stdout.matches(": OK").count(), 3, "{}", v.stdout);
    // A name that says nothing: 128 hex digits are sha512 by default, but the files say
    // blake2b.
    std::fs::write(d.join("checksums.txt"), &r.stdout).unwrap();
    let v = d.cmd().args(["verify", "checksums.txt"]).run();
    v.code(0).stderr_has("are blake2b, not sha512");
    assert_eq!(v.stdout.matches(": OK").count(), 3, "{}", v.stdout);
    // Real corruption is still FAILED, and only where it is.
    std::fs::write(d.join("b.txt"), b"BETA\n").unwrap();
    let v = d.cmd().args(["verify", "checksums.txt"]).run();
    v.code(1);
    assert!(
        v.stdout.contains("b.txt: FAILED (blake2b differs)"),
        "{}",
        v.stdout
    );
    assert_eq!(v.stdout.matches(": OK").count(), 2, "{}", v.stdout);
}

#[test]
fn a_digest_length_the_named_algorithm_lacks_is_an_error_not_a_failure() {
    let d = Dir::new();
    d.create(b"a.txt", b"alpha\n");
    let sha256 = "a6e4b4df7b1b2a6e1d2e1e0a3c2a2f8b1e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b";
    std::fs::write(d.join("SHA256SUMS"), format!("{sha256}  a.txt\n")).unwrap();
    // -d says sha512 (128 hex digits); the line has 64.
    let r = d.cmd().args(["verify", "-d", "sha512", "SHA256SUMS"]).run();
    r.code(2)
        .stderr_has("SHA256SUMS:1: a digest of 64 hex digits cannot be sha512 (128 hex digits)");
    assert!(!r.stdout.contains("FAILED"), "{}", r.stdout);
    // The name says sha512; the line has 64 digits.
    std::fs::write(d.join("SHA512SUMS"), format!("{sha256}  a.txt\n")).unwrap();
    let r = d.cmd().args(["verify", "SHA512SUMS"]).run();
    r.code(2)
        .stderr_has("SHA512SUMS:1: a digest of 64 hex digits cannot be sha512");
    assert!(!r.stdout.contains("FAILED"), "{}", r.stdout);
}

/// A bag written by hand: `lines` of manifest-`alg`.txt, Payload-Oxum for `data/a`.
fn hand_bag(d: &Dir, alg: &str, line: &str) {
    d.create(b"bag/data/a", b"hello\n");
    d.create(
        b"bag/bagit.txt",
        b"BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n",
    );
    d.create(b"bag/bag-info.txt", b"Payload-Oxum: 6.1\n");
    d.create(
        format!("bag/manifest-{alg}.txt").as_bytes(),
        line.as_bytes(),
    );
}

#[test]
fn the_gnu_binary_marker_is_accepted_in_bag_manifests() {
    let d = Dir::new();
    // md5("hello\n"), written as `md5sum -b` writes it.
    hand_bag(&d, "md5", "b1946ac92492d2347c6235b4d2611184 *data/a\n");
    let r = d.cmd().args(["bag", "validate", "bag"]).run();
    r.code(0).stdout_has("bag is valid");
}

#[test]
fn a_bag_with_only_algorithms_trawl_lacks_is_not_called_invalid() {
    let d = Dir::new();
    // shake_128 is in hashlib (bagit-python can check it); trawl cannot.
    hand_bag(
        &d,
        "shake_128",
        "0123456789abcdef0123456789abcdef  data/a\n",
    );
    let r = d.cmd().args(["bag", "validate", "bag"]).run();
    r.code(3)
        .stdout_has("bag was NOT CHECKED: its payload manifests use shake_128");
    assert!(!r.stdout.contains("NOT valid"), "{}", r.stdout);
}

#[test]
fn bags_with_every_hashlib_algorithm_pass_between_bagit_python_and_trawl() {
    let Some(bagit) = tool("bagit.py") else {
        return;
    };
    let d = Dir::new();
    d.create(b"py/a.txt", b"alpha\n");
    d.create(b"py/sub/b.bin", &[3u8; 70_000]);
    let mut args: Vec<String> = HASHLIB.iter().map(|(_, h)| format!("--{h}")).collect();
    args.push("py".into());
    let argv: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    run_tool(d.path(), &bagit, &argv).code(0);
    d.cmd().args(["bag", "validate", "py"]).run().code(0);

    d.create(b"tr/a.txt", b"alpha\n");
    d.create(b"tr/sub/b.bin", &[3u8; 70_000]);
    let list = HASHLIB.map(|(n, _)| n).join(",");
    d.cmd()
        .args(["bag", "create", "tr", "-q", "-d", &list])
        .run()
        .code(0);
    for (_, h) in HASHLIB {
        assert!(d.join(format!("tr/manifest-{h}.txt")).exists(), "{h}");
    }
    run_tool(
        d.path(),
        &bagit,
        &[OsStr::new("--validate"), OsStr::new("tr")],
    )
    .code(0);
}

#[test]
fn bag_create_out_refuses_a_destination_inside_the_source_and_copies_share_nothing() {
    use std::os::unix::fs::MetadataExt;
    let d = Dir::new();
    d.create(b"src/a.txt", b"alpha\n");
    let r = d
        .cmd()
        .args(["bag", "create", "src", "--out", "src/inside"])
        .run();
    r.code(2).stderr_has("inside the source");
    assert!(!d.join("src/inside").exists());
    assert!(!d.join("src/bagit.txt").exists());
    let r = d.cmd().args(["bag", "create", "src", "--out", "bag"]).run();
    r.code(0).stdout_has("1 copied and read back");
    let (a, b) = (
        std::fs::metadata(d.join("src/a.txt")).unwrap(),
        std::fs::metadata(d.join("bag/data/a.txt")).unwrap(),
    );
    assert_ne!((a.dev(), a.ino()), (b.dev(), b.ino()));
    let r = d
        .cmd()
        .args(["bag", "create", "src", "--out", "bag2", "--link"])
        .run();
    r.code(0).stdout_has("1 hard-linked (--link)");
}

#[test]
fn bag_update_says_what_it_added_and_warns_of_trawls_own_algorithms() {
    let d = Dir::new();
    d.create(b"b/a.txt", b"alpha\n");
    d.cmd()
        .args(["bag", "create", "b", "-q", "-d", "sha256"])
        .run()
        .code(0);
    let r = d.cmd().args(["bag", "update", "b", "-d", "sha256"]).run();
    r.code(0).stdout_has("nothing to add: sha256 already there");
    assert!(!r.stdout.contains("added"), "{}", r.stdout);
    let r = d
        .cmd()
        .args(["bag", "update", "b", "-d", "sha256,xxh3"])
        .run();
    r.code(0)
        .stdout_has("added xxh3; sha256 already there")
        .stderr_has("xxh3 is trawl's own");
}

#[test]
fn bag_validate_fast_checks_the_file_list_and_fetch_txt() {
    let d = Dir::new();
    d.create(b"b/a.txt", b"alpha\n");
    d.create(b"b/c.txt", b"gamma\n");
    d.cmd().args(["bag", "create", "b", "-q"]).run().code(0);
    d.cmd()
        .args(["bag", "validate", "b", "--fast"])
        .run()
        .code(0)
        .stdout_has("valid according to Payload-Oxum and file list");
    // A renamed payload file: same bytes and count, so Payload-Oxum still agrees.
    std::fs::rename(d.join("b/data/a.txt"), d.join("b/data/z.txt")).unwrap();
    let r = d.cmd().args(["bag", "validate", "b", "--fast"]).run();
    r.code(1)
        .stderr_has("data/a.txt: listed in the manifests but missing")
        .stderr_has("data/z.txt: present in the payload but in no manifest");
    std::fs::rename(d.join("b/data/z.txt"), d.join("b/data/a.txt")).unwrap();
    // A holey bag: c.txt is to be fetched.
    std::fs::remove_file(d.join("b/data/c.txt")).unwrap();
    std::fs::write(
        d.join("b/fetch.txt"),
        "https://example.org/c.txt 6 data/c.txt\n",
    )
    .unwrap();
    let r = d.cmd().args(["bag", "validate", "b", "--fast"]).run();
    r.code(1).stdout_has("1 file to fetch");
}

/// `a.txt` and `b.txt` with their sha256sum lines, `b.txt` listed but absent.
fn manifest_with_a_missing_file(d: &Dir) {
    d.create(b"a.txt", b"alpha\n");
    std::fs::write(
        d.join("SHA256SUMS"),
        "6ab2e0f1d9e8b02d0b2ad2e86ba6e4bf44eb1d5b2adbd1e8e34bf0a9e8b2a1f0  b.txt\n",
    )
    .unwrap();
    let r = d
        .cmd()
        .args(["scan", "a.txt", "-q", "-m", "sha256sum:-"])
        .run();
    let mut m = r.stdout.clone();
    m.push_str(&std::fs::read_to_string(d.join("SHA256SUMS")).unwrap());
    std::fs::write(d.join("SHA256SUMS"), m).unwrap();
}

#[test]
fn verify_quiet_prints_only_problems_and_ignore_missing_leaves_them_out() {
    let d = Dir::new();
    manifest_with_a_missing_file(&d);
    let r = d.cmd().args(["verify", "SHA256SUMS", "-q"]).run();
    r.code(1).stdout_has("b.txt: MISSING");
    assert!(!r.stdout.contains("a.txt: OK"), "{}", r.stdout);
    // As sha256sum --ignore-missing: a missing file is neither reported nor a failure.
    let r = d
        .cmd()
        .args(["verify", "SHA256SUMS", "--ignore-missing"])
        .run();
    r.code(0)
        .stdout_has("a.txt: OK")
        .stderr_has("(1 missing ignored)");
    assert!(!r.stdout.contains("b.txt"), "{}", r.stdout);
    // ... unless nothing at all was verified.
    std::fs::remove_file(d.join("a.txt")).unwrap();
    let r = d
        .cmd()
        .args(["verify", "SHA256SUMS", "--ignore-missing"])
        .run();
    r.code(1).stderr_has("no file was verified");
}

#[test]
fn verify_reads_a_manifest_from_stdin_and_writes_json() {
    use std::io::Write;
    let d = Dir::new();
    manifest_with_a_missing_file(&d);
    let mut child = Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args(["verify", "-", "--json", "v.json"])
        .current_dir(d.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&std::fs::read(d.join("SHA256SUMS")).unwrap())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("a.txt: OK"));
    let v: Value = serde_json::from_slice(&std::fs::read(d.join("v.json")).unwrap()).unwrap();
    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["totals"]["ok"], 1);
    assert_eq!(v["totals"]["missing"], 1);
    assert_eq!(v["entries"][0]["path"], "a.txt");
    assert_eq!(v["entries"][0]["state"], "ok");
    assert_eq!(v["entries"][1]["state"], "missing");
}

#[test]
fn verify_with_a_root_that_does_not_exist_is_one_error() {
    let d = Dir::new();
    manifest_with_a_missing_file(&d);
    let r = d
        .cmd()
        .args(["verify", "SHA256SUMS", "--root", "nowhere"])
        .run();
    r.code(2)
        .stderr_has("nowhere: the root (--root) is not a directory");
    assert!(!r.stdout.contains("MISSING"), "{}", r.stdout);
}

#[test]
fn verify_keeps_a_file_and_a_directory_name_apart_and_a_stray_nul_on_its_line() {
    let d = Dir::new();
    manifest_with_a_missing_file(&d);
    let text = std::fs::read_to_string(d.join("SHA256SUMS")).unwrap();
    let a_line = text.lines().next().unwrap().to_string();
    // `a.txt/` after `a.txt`: the valid a.txt stays OK; the directory name is refused.
    std::fs::write(d.join("M1"), format!("{a_line}\n{a_line}/\n")).unwrap();
    let r = d.cmd().args(["verify", "M1"]).run();
    r.code(2)
        .stdout_has("a.txt: OK")
        .stderr_has("M1:2: 'a.txt/' names a directory, not a file");
    // A NUL in line 3 of a text manifest: lines 1 and 2 are read as lines, line 3 is no
    // checksum line: warned about, and the files' verdicts decide (as sha256sum -c: 0).
    let mut m = format!("{a_line}\n{a_line}\n").into_bytes();
    m.extend_from_slice(&a_line.as_bytes()[..70]);
    m.extend_from_slice(b"\0x\n");
    std::fs::write(d.join("M2"), m).unwrap();
    let r = d.cmd().args(["verify", "M2"]).run();
    r.code(0)
        .stdout_has("a.txt: OK")
        .stderr_has("trawl: warning: M2:3:");
    assert!(!r.stderr.contains("M2:1:"), "{}", r.stderr);
}

#[test]
fn bagit_txt_must_be_exactly_its_two_lines_in_a_1_0_bag_and_should_be_in_older_ones() {
    let d = Dir::new();
    hand_bag(&d, "md5", "b1946ac92492d2347c6235b4d2611184  data/a\n");
    d.cmd().args(["bag", "validate", "bag"]).run().code(0);
    let cases: [(&[u8], &str); 4] = [
        (
            b"BagIt-Version : 1.0\nTag-File-Character-Encoding: UTF-8\n",
            "no space may come before the colon",
        ),
        (
            b"BagIt-Version:1.0\nTag-File-Character-Encoding: UTF-8\n",
            "exactly one space must follow the colon",
        ),
        (
            b"Tag-File-Character-Encoding: UTF-8\nBagIt-Version: 1.0\n",
            "'Tag-File-Character-Encoding' where 'BagIt-Version' must be",
        ),
        (
            b"BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\nExtra: x\n",
            "must hold exactly two lines",
        ),
    ];
    for (decl, why) in cases {
        std::fs::write(d.join("bag/bagit.txt"), decl).unwrap();
        let r = d.cmd().args(["bag", "validate", "bag"]).run();
        r.code(1).stderr_has(why).stdout_has("NOT valid");
        // The same deviation in a 0.97 bag is a warning.
        let old = String::from_utf8_lossy(decl).replace("1.0", "0.97");
        std::fs::write(d.join("bag/bagit.txt"), old).unwrap();
        let r = d.cmd().args(["bag", "validate", "bag"]).run();
        r.code(0).stderr_has(why).stdout_has("is valid");
    }
    // bag-info.txt stays tolerant: no space after the colon, continuation lines.
    std::fs::write(
        d.join("bag/bagit.txt"),
        "BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n",
    )
    .unwrap();
    std::fs::write(
        d.join("bag/bag-info.txt"),
        "Payload-Oxum:6.1\nExternal-Description: one\n  two\n",
    )
    .unwrap();
    d.cmd().args(["bag", "validate", "bag"]).run().code(0);
}

#[test]
fn bag_create_follow_never_writes_a_link_into_a_bag() {
    let d = Dir::new();
    d.create(b"elsewhere/real.txt", b"real\n");
    d.create(b"src/plain.txt", b"plain\n");
    std::os::unix::fs::symlink("../elsewhere/real.txt", d.join("src/link.txt")).unwrap();
    // In place the link would be moved as a link: refused, nothing changed.
    let r = d.cmd().args(["bag", "create", "src", "-L"]).run();
    r.code(2).stderr_has("reached through a symbolic link (-L)");
    assert!(!d.join("src/data").exists());
    assert!(
        std::fs::symlink_metadata(d.join("src/link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // With --out, what the link points to goes in as a regular file.
    d.cmd()
        .args(["bag", "create", "src", "-L", "--out", "bag"])
        .run()
        .code(0);
    let m = std::fs::symlink_metadata(d.join("bag/data/link.txt")).unwrap();
    assert!(m.file_type().is_file());
    assert_eq!(
        std::fs::read(d.join("bag/data/link.txt")).unwrap(),
        b"real\n"
    );
    d.cmd().args(["bag", "validate", "bag"]).run().code(0);
    if let Some(bagit) = tool("bagit.py") {
        run_tool(
            d.path(),
            &bagit,
            &[OsStr::new("--validate"), OsStr::new("bag")],
        )
        .code(0);
    }
}

/// `scan` computes the algorithms GNU `cksum -a` writes beyond the classic ones, and `cksum -c`
/// checks trawl's tagged manifest of them.
#[test]
fn scan_writes_sm3_and_blake2b_lengths_that_gnu_cksum_checks() {
    let d = Dir::new();
    d.create(b"t/a", b"alpha\n");
    d.create(b"t/b", &[7u8; 100_000]);
    d.cmd()
        .args([
            "scan",
            "t",
            "-q",
            "-d",
            "sm3,blake2b-256,blake2b-384",
            "-m",
            "bsd:SUMS",
        ])
        .run()
        .code(0);
    let Some(cksum) = tool("cksum") else {
        return;
    };
    // Names in a manifest are relative to the root scanned.
    let r = run_tool(
        &d.join("t"),
        &cksum,
        &[std::ffi::OsStr::new("-c"), std::ffi::OsStr::new("../SUMS")],
    );
    assert_eq!(r.code, 0, "cksum -c: {r:?}");
    assert_eq!(
        r.stdout.lines().filter(|l| l.ends_with(": OK")).count(),
        6,
        "{r:?}"
    );
}

/// CRC-32 (zlib's) and CRC-64/NVME, the catalogue's parameters: polynomial 0xad93d23594c93659
/// (0x9a6c9329ac4bc9b5 reflected), init and xorout all ones, reflected in and out. Prints, per
/// file, the two CRCs in hex and CRC-64/NVME as S3 shows `x-amz-checksum-crc64nvme`: base64 of
/// its 8 bytes big-endian.
const S3_CRCS_PY: &str = r#"
import base64, sys, zlib
t = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x9a6c9329ac4bc9b5 if c & 1 else c >> 1
    t.append(c)
for p in sys.argv[1:]:
    c = 0xffffffffffffffff
    for b in open(p, 'rb').read():
        c = t[(c ^ b) & 0xff] ^ (c >> 8)
    c ^= 0xffffffffffffffff
    crc32 = zlib.crc32(open(p, 'rb').read())
    print('%08x %016x %s' % (crc32, c, base64.b64encode(c.to_bytes(8, 'big')).decode()))
"#;

#[test]
fn s3_crcs_equal_zlib_and_a_table_crc64_nvme_over_reads_buffers_and_maps() {
    if !python_with(&["zlib", "base64"]) {
        return;
    }
    let d = Dir::new();
    let data: Vec<u8> = (0..5u32 << 20).map(|i| (i * 7 + i / 251) as u8).collect();
    let sizes = [0, 1, 4095, 4096, (1 << 20) + 7, 5 << 20];
    for n in sizes {
        d.create(format!("t/f{n}").as_bytes(), &data[..n]);
    }
    d.create(b"t/check", b"123456789");
    let files: Vec<_> = sizes
        .iter()
        .map(|n| format!("t/f{n}"))
        .chain(["t/check".to_string()])
        .collect();
    let out = Command::new("python3")
        .arg("-c")
        .arg(S3_CRCS_PY)
        .args(files.iter().map(|f| d.join(f)))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: Vec<Vec<String>> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split(' ').map(str::to_string).collect())
        .collect();
    // The catalogue's check value, and the form S3 returns it in.
    assert_eq!(
        want[sizes.len()],
        ["cbf43926", "ae8b14860a799888", "rosUhgp5mIg="]
    );
    for io in ["read", "mmap"] {
        let r = d
            .cmd()
            .args(["scan", "t", "-q", "--no-reduce", "-d", "crc64nvme,crc32"])
            .args(["--io", io, "--json", "-"])
            .run();
        r.code(0);
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(v["files"].as_array().unwrap().len(), files.len());
        for f in v["files"].as_array().unwrap() {
            let path = f["path"].as_str().unwrap();
            let i = files.iter().position(|p| p == path).expect(path);
            let got = [&f["digests"]["crc32"], &f["digests"]["crc64nvme"]];
            assert_eq!(got, [&want[i][0], &want[i][1]], "{path} --io {io}");
        }
    }
}
