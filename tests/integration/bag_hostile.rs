//! Bags from elsewhere read safely: nothing outside the bag is read, no tag file waited on or
//! read past its cap, a hostile fetch.txt in bounded time, memory and output.

use crate::util::{Dir, mkfifo, peak_rss_apart, sha256_hex};

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
