//! Names as bytes from outside: control characters and line breaks reach no terminal raw and
//! forge no line or record; a name in another Unicode normalization form is the same file.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use crate::util::*;

/// Control characters in names reach no terminal raw: not in messages on stderr (a FIFO
/// skipped, a root that does not exist), not in verify's lines on stdout.
#[test]
fn names_cannot_send_escape_sequences_or_forge_lines() {
    let d = Dir::new();
    let evil: &[u8] = b"t/a\x1b]0;pwned\x07\x1b[2Jb";
    d.create(evil, b"x");
    mkfifo(&d.join(std::ffi::OsStr::from_bytes(b"t/fifo\x1b[31m")));
    let r = d.cmd().args(["scan", "t"]).run();
    assert!(
        !r.stderr.contains('\x1b') && !r.stdout.contains('\x1b'),
        "{:?}",
        r.stderr
    );
    r.stderr_has("fifo\\033[31m");
    let sums = format!("{}  a\x1b]0;pwned\x07\x1b[2Jb\n", sha256_hex(b"x"));
    d.create(b"SUMS", sums.as_bytes());
    let r = d.cmd().args(["verify", "SUMS", "--root", "t"]).run();
    r.code(0);
    assert!(!r.stdout_bytes.contains(&0x1b), "{:?}", r.stdout);
    r.stdout_has("\\a\\033]0;pwned\\007\\033[2Jb: OK");
    let r = d
        .cmd()
        .args([
            OsStr::new("scan"),
            OsStr::from_bytes(b"nothere\nforged: line"),
        ])
        .run();
    assert_eq!(r.code, 2);
    assert_eq!(r.stderr.trim_end().lines().count(), 1, "{:?}", r.stderr);
    r.stderr_has("nothere\\nforged: line");
}

#[test]
fn a_line_break_in_an_argument_cannot_forge_a_hashdeep_record() {
    let d = Dir::new();
    let evil = "evil\n3,00000000000000000000000000000000,0000000000000000000000000000000000000000000000000000000000000000,/etc/hostname\n## x";
    d.create(format!("{evil}/a.txt").as_bytes(), b"abc");
    // hashdeep names are relative to the root (`./a.txt`): a root with a line break never
    // reaches a record, and the command line in the header comment is escaped.
    let r = d
        .cmd()
        .args([
            "scan",
            evil,
            "-q",
            "-d",
            "md5,sha256",
            "-m",
            "hashdeep:hd.txt",
            "-m",
            "sha256sum:sums.txt",
        ])
        .run();
    r.code(0);
    let text = std::fs::read_to_string(d.join("hd.txt")).unwrap();
    let records: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('%') && !l.starts_with('#'))
        .collect();
    assert_eq!(records.len(), 1, "{text}");
    assert!(records[0].ends_with(",./a.txt"), "{text}");
    assert!(text.contains("evil\\x0a3,"), "{text}");
    // The other manifest has the file, relative to its root.
    let sums = std::fs::read_to_string(d.join("sums.txt")).unwrap();
    assert!(sums.ends_with("  a.txt\n"), "{sums}");
    // verify sees no record, not the forged one.
    let r = d.cmd().args(["verify", "hd.txt"]).run();
    assert!(
        !r.stdout.contains("hostname") && !r.stderr.contains("hostname"),
        "{}{}",
        r.stdout,
        r.stderr
    );
}

/// A bag whose manifests name `café.txt` composed (NFC) while the disk has it decomposed (NFD,
/// as a copy through macOS leaves it): one file, read and checked under its name on disk, with
/// a warning naming both forms; bagit-python gives the same verdict. Changed content is still a
/// mismatch.
#[test]
fn a_name_in_another_unicode_normalization_is_the_same_file() {
    let d = Dir::new();
    let nfc = "caf\u{e9}.txt";
    let nfd = "cafe\u{301}.txt";
    d.create(format!("p/{nfc}").as_bytes(), b"coffee\n");
    d.create(b"p/plain.txt", b"plain\n");
    d.cmd()
        .args(["bag", "create", "p", "--out", "bag", "-q"])
        .run()
        .code(0);
    std::fs::rename(
        d.join(format!("bag/data/{nfc}")),
        d.join(format!("bag/data/{nfd}")),
    )
    .unwrap();
    let r = d.cmd().args(["bag", "validate", "bag"]).run();
    r.code(0)
        .stderr_has("another Unicode normalization form")
        .stdout_has("valid");
    if let Some(bagit) = tool("bagit.py") {
        let b = run_tool(
            d.path(),
            &bagit,
            &[
                std::ffi::OsStr::new("--validate"),
                std::ffi::OsStr::new("bag"),
            ],
        );
        assert_eq!(b.code, 0, "bagit.py: {}", b.stderr);
    }
    std::fs::write(d.join(format!("bag/data/{nfd}")), b"tea\n").unwrap();
    let r = d.cmd().args(["bag", "validate", "bag"]).run();
    r.code(1).stdout_has("NOT valid").stderr_has("mismatch");
    assert!(r.stderr.contains(nfd), "{}", r.stderr);
}
