//! `trawl verify` judging as GNU's `-c` judges: guessed algorithms, BLAKE2b lengths, base64
//! digests, improperly formatted lines, lines of any length, every form GNU reads.

use std::os::unix::ffi::OsStrExt;

use crate::util::{Dir, Run, run_tool, skip, tool};
use crate::verify::gnu;

/// Each `NAME: VERDICT` line of a `-c` run, the verdict without its parenthesized detail
/// (`FAILED (sha256 differs)` is `FAILED`, as GNU writes it).
fn verdicts(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .filter_map(|l| l.rsplit_once(": "))
        .map(|(name, v)| {
            let v = v.split(" (").next().unwrap_or(v);
            (name.to_string(), v.to_string())
        })
        .collect()
}

/// `b2sum -l 256` writes 64 hex digits, as sha256 does: with the first three files corrupt, the
/// probe reads on until a file matches, and then the corrupt ones are FAILED and the intact
/// ones OK, as `b2sum -c` says; never FAILED by sha256 on a guess.
#[test]
fn a_guessed_algorithm_is_settled_by_a_file_that_matches_not_by_the_first_three() {
    let d = Dir::new();
    let names = ["a", "b", "c", "d", "e"];
    for n in names {
        d.create(n.as_bytes(), n.as_bytes());
    }
    let Some(r) = gnu(&d, "b2sum", &["-l", "256", "a", "b", "c", "d", "e"]) else {
        return;
    };
    std::fs::write(d.join("checksums.txt"), &r.stdout).unwrap();
    for n in &names[..3] {
        d.create(n.as_bytes(), b"corrupt");
    }
    let v = d.cmd().args(["verify", "checksums.txt"]).run();
    let g = gnu(&d, "b2sum", &["-c", "checksums.txt"]).unwrap();
    assert_eq!(verdicts(&v.stdout), verdicts(&g.stdout), "{}", v.stderr);
    assert_eq!(
        verdicts(&v.stdout)
            .iter()
            .map(|(_, x)| &x[..])
            .collect::<Vec<_>>(),
        ["FAILED", "FAILED", "FAILED", "OK", "OK"]
    );
    v.code(g.code)
        .stdout_has("a: FAILED (blake2b-256 differs)")
        .stderr_has("are blake2b-256, not sha256");
}

/// When no file read matches any algorithm of the digests' length, none is FAILED on a guess:
/// they are NOT VERIFIED, said once on stderr, and the exit code is 3 (not checked). Named
/// with -d, the algorithm is known and the corrupt files are FAILED, as `b2sum -c` says.
#[test]
fn files_no_algorithm_of_the_length_matches_are_not_verified_not_failed() {
    let d = Dir::new();
    for n in ["a", "b", "c"] {
        d.create(n.as_bytes(), n.as_bytes());
    }
    let Some(r) = gnu(&d, "b2sum", &["-l", "256", "a", "b", "c"]) else {
        return;
    };
    std::fs::write(d.join("checksums.txt"), &r.stdout).unwrap();
    for n in ["a", "b", "c"] {
        d.create(n.as_bytes(), b"corrupt");
    }
    let v = d.cmd().args(["verify", "checksums.txt"]).run();
    v.code(3)
        .stderr_has("checksums.txt: digests of 64 hex digits")
        .stderr_has("-d names the algorithm")
        .stderr_has("3 not verified");
    assert!(!v.stdout.contains("FAILED"), "{}", v.stdout);
    assert_eq!(
        v.stdout.matches(": NOT VERIFIED (").count(),
        3,
        "{}",
        v.stdout
    );
    let g = gnu(&d, "b2sum", &["-c", "checksums.txt"]).unwrap();
    let v = d
        .cmd()
        .args(["verify", "-d", "blake2b", "checksums.txt"])
        .run();
    assert_eq!(verdicts(&v.stdout), verdicts(&g.stdout), "{}", v.stderr);
    v.code(g.code).stdout_has("a: FAILED (blake2b-256 differs)");
}

/// `b2sum -c` takes the length from the digest (`-l 128`: 32 hex digits, `-l 72`: 18) and from
/// a tag (`BLAKE2b-72`); so does `verify` of a b2sum manifest (by -d blake2b or its name). A
/// length trawl has no BLAKE2b for is NOT VERIFIED, never FAILED, and the exit code is 3.
#[test]
fn blake2b_lengths_are_taken_from_the_digest_as_b2sum_does() {
    let d = Dir::new();
    d.create(b"a", b"alpha\n");
    d.create(b"b", b"beta\n");
    d.create(b"c", b"gamma\n");
    let mut sums = Vec::new();
    for args in [
        &["-l", "128", "a"][..],
        &["-l", "256", "b"],
        &["-l", "72", "a"],
        &["--tag", "-l", "72", "b"],
        &["--tag", "-l", "128", "c"],
    ] {
        let Some(r) = gnu(&d, "b2sum", args) else {
            return;
        };
        r.code(0);
        sums.extend_from_slice(&r.stdout_bytes);
    }
    std::fs::write(d.join("sums"), &sums).unwrap();
    std::fs::write(d.join("check.b2sum"), &sums).unwrap();
    let g = gnu(&d, "b2sum", &["--strict", "-c", "sums"]).unwrap();
    g.code(0);
    assert_eq!(g.stdout, "a: OK\nb: OK\na: OK\nb: OK\nc: OK\n");
    for args in [
        &["verify", "-d", "blake2b", "sums"][..],
        &["verify", "check.b2sum"],
    ] {
        let v = d.cmd().args(args).run();
        v.code(3);
        assert_eq!(
            v.stdout,
            "a: OK\nb: OK\n\
             a: NOT VERIFIED (a BLAKE2b digest of 72 bits: trawl computes BLAKE2b of 128, 160, 224, 256, 384 and 512 bits only)\n\
             b: NOT VERIFIED (a BLAKE2b digest of 72 bits: trawl computes BLAKE2b of 128, 160, 224, 256, 384 and 512 bits only)\n\
             c: OK\n",
            "{args:?}: {}",
            v.stderr
        );
    }
    // A corrupt file is FAILED where the length is one trawl computes, as b2sum says.
    d.create(b"a", b"ALPHA\n");
    let g = gnu(&d, "b2sum", &["-c", "sums"]).unwrap();
    let v = d.cmd().args(["verify", "-d", "blake2b", "sums"]).run();
    assert_eq!(g.stdout.lines().next(), Some("a: FAILED"));
    v.code(g.code).stdout_has("a: FAILED (blake2b-128 differs)");
    assert!(!v.stdout.contains("a: FAILED (blake2b-72"), "{}", v.stdout);
}

/// `cksum --base64` writes `SHA256 (f) = BASE64`, padded; `cksum -c` reads it where its length
/// fits the algorithm and refuses it with a `=` of its padding gone. The digests are of the
/// empty file (Python: `base64.b64encode(hashlib.new(alg, b"").digest())`), written out here:
/// the installed coreutils may predate `--base64`, and then GNU is not asked.
#[test]
fn base64_digests_in_tagged_lines_are_read_as_cksum_reads_them() {
    const EMPTY: [(&str, &str); 8] = [
        ("MD5", "1B2M2Y8AsgTpgAmY7PhCfg=="),
        ("SHA1", "2jmj7l5rSw0yVb/vlWAYkK/YBwk="),
        ("SHA224", "0UoCjCo6K8lHYQK7KII0xBWisB+CjqYqxbPkLw=="),
        ("SHA256", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="),
        (
            "SHA384",
            "OLBgp1GsljhM2TJ+sbHjaiH9txEUvgdDTAzHv2P24donTt6/529l+9Ua0vFImLlb",
        ),
        (
            "SHA512",
            "z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==",
        ),
        (
            "BLAKE2b",
            "eGoC90IBWQPGxv2FJVLScpEvR0DhWEdhiobiF/cfVBnSXhAxr+5YUxOJZESTTrBLkDpoWxRIt1XVb3Aa/pvizg==",
        ),
        ("SM3", "GrIdg1XPoX+OYRlIMegajyK+yMco/vt0ftA161CCqis="),
    ];
    let d = Dir::new();
    d.create(b"f", b"");
    let gnu_base64 = std::process::Command::new("cksum")
        .arg("--help")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("--base64"));
    for (tag, b64) in EMPTY {
        std::fs::write(d.join("CHECKSUMS"), format!("{tag} (f) = {b64}\n")).unwrap();
        let v = d.cmd().args(["verify", "CHECKSUMS"]).run();
        assert_eq!(v.stdout, "f: OK\n", "{tag}: {}", v.stderr);
        assert!(!v.stderr.contains("CHECKSUMS:1"), "{tag}: {}", v.stderr);
        v.code(0);
        if gnu_base64 {
            let g = gnu(&d, "cksum", &["--check", "--strict", "CHECKSUMS"]).unwrap();
            assert_eq!((g.code, &g.stdout[..]), (0, "f: OK\n"), "{tag}");
        }
        // One `=` of the padding gone: not a checksum line (GNU: "no properly formatted
        // checksum lines found").
        if let Some(short) = b64.strip_suffix('=') {
            std::fs::write(d.join("SHORT"), format!("{tag} (f) = {short}\n")).unwrap();
            let v = d.cmd().args(["verify", "SHORT"]).run();
            v.code(2)
                .stderr_has("no properly formatted checksum lines found");
            assert_eq!(v.stdout, "", "{tag}");
        }
    }
    // A file that changed is FAILED by its base64 digest.
    d.create(b"f", b"x");
    std::fs::write(
        d.join("CHECKSUMS"),
        format!("SHA256 (f) = {}\n", EMPTY[3].1),
    )
    .unwrap();
    d.cmd()
        .args(["verify", "CHECKSUMS"])
        .run()
        .code(1)
        .stdout_has("f: FAILED (sha256 differs)");
}

/// A signed manifest (PGP armour around `cksum` lines) has lines that are no checksum lines:
/// as `cksum -c`, they are warned about and the files' verdicts decide the exit code (0 here);
/// with --strict they make it non-zero; a digest that differs makes it 1 either way.
#[test]
fn improperly_formatted_lines_are_warnings_unless_strict_as_gnu_checks() {
    let d = Dir::new();
    // One file per line: lines of one name with different algorithms are one entry to trawl.
    let mut sums = Vec::new();
    for (name, args) in [
        ("in1", &["-a", "sha384"][..]),
        ("in2", &["-a", "blake2b"]),
        ("in3", &["-a", "blake2b", "-l", "384"]),
        ("in4", &["-a", "sm3"]),
    ] {
        d.create(name.as_bytes(), b"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");
        let Some(r) = gnu(&d, "cksum", &[args, &[name]].concat()) else {
            return;
        };
        r.code(0);
        sums.extend_from_slice(&r.stdout_bytes);
    }
    let mut signed =
        b"-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA384\n\n# ignored comment\n".to_vec();
    signed.extend_from_slice(&sums);
    signed.extend_from_slice(
        b"-----BEGIN PGP SIGNATURE-----\n\n\
          SHA384+BCAAdFiEEjFummQvbJuGfKhqAEWGuaUVxmjkFAmCDId0ACgkQEWGuaUVx\n\
          BLAKE2b/00001EuON62pTEnqrJ5lav61QxRByiuDp/6VODrRL2JWM6Stxu1Myws=\n\
          =AWU7\n-----END PGP SIGNATURE-----\n",
    );
    std::fs::write(d.join("signed_CHECKSUMS"), &signed).unwrap();
    let g = gnu(&d, "cksum", &["--check", "signed_CHECKSUMS"]).unwrap();
    let v = d.cmd().args(["verify", "signed_CHECKSUMS"]).run();
    assert_eq!(verdicts(&v.stdout), verdicts(&g.stdout), "{}", v.stderr);
    assert_eq!(v.stdout.matches(": OK").count(), 4, "{}", v.stdout);
    v.code(g.code)
        .stderr_has("trawl: warning: signed_CHECKSUMS:1: not a checksum line");
    assert_eq!(g.code, 0);
    // --strict: the same lines make the exit code non-zero, as GNU's --strict does.
    let g = gnu(&d, "cksum", &["--check", "--strict", "signed_CHECKSUMS"]).unwrap();
    assert_ne!(g.code, 0);
    d.cmd()
        .args(["verify", "--strict", "signed_CHECKSUMS"])
        .run()
        .code(2)
        .stderr_has("trawl: signed_CHECKSUMS:1: not a checksum line");
    // A digest that differs: 1, with or without the malformed lines.
    signed.extend_from_slice(
        b"SM3 (in4) = aaaaaaaaaaaaaaaaaaaaaaaaaaaaafdb57c725157cb40b5aee8d937b8351477e\n",
    );
    std::fs::write(d.join("signed_CHECKSUMS"), &signed).unwrap();
    let g = gnu(&d, "cksum", &["--check", "signed_CHECKSUMS"]).unwrap();
    let v = d.cmd().args(["verify", "signed_CHECKSUMS"]).run();
    assert_eq!(verdicts(&v.stdout), verdicts(&g.stdout), "{}", v.stderr);
    v.code(g.code).stdout_has("in4: FAILED (sm3 differs)");
}

/// An untagged line whose name looks like a tag's rest (`HEX (x) = ab`, one space: BSD `md5
/// -r`'s form) is read as `sha256sum -c` reads it: the digest, then the name `(x) = ab`.
#[test]
fn an_untagged_line_whose_name_looks_tagged_is_read_as_gnu_reads_it() {
    let d = Dir::new();
    d.create(b"(x) = ab", b"x");
    let hex = crate::util::sha256_hex(b"x");
    for (manifest, sep) in [("one", " "), ("two", "  ")] {
        std::fs::write(d.join(manifest), format!("{hex}{sep}(x) = ab\n")).unwrap();
        let Some(g) = gnu(&d, "sha256sum", &["-c", manifest]) else {
            return;
        };
        let v = d.cmd().args(["verify", manifest]).run();
        assert_eq!(v.stdout, g.stdout, "{manifest}: {}", v.stderr);
        assert_eq!(v.stdout, "(x) = ab: OK\n");
        v.code(g.code);
    }
}

/// `verify` on stdin, NUL-separated (GNU `-z`), with one line of `len` bytes between two good
/// ones: it ends, the long line is refused by number when over 1 MiB, and the good lines are
/// checked either way.
fn verify_long_line(len: usize) -> Run {
    let d = Dir::new();
    d.create(b"root/a", b"x");
    d.create(b"root/b", b"x");
    let good = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881";
    let mut data = format!("{good}  a\0{good}  ").into_bytes();
    data.resize(data.len() + len - 66, b'n');
    data.extend_from_slice(format!("\0{good}  b\0").as_bytes());
    let m = d.create(b"manifest", &data);
    drop(data);
    // Bounded: the old parser spun on such a line forever.
    d.cmd()
        .args(["verify", "-", "--root", "root"])
        .run_within_stdin(60, std::fs::File::open(m).unwrap().into())
}

#[test]
fn verify_reads_past_a_manifest_line_of_any_length() {
    const MIB: usize = 1 << 20;
    for len in [MIB - 1, MIB] {
        let r = verify_long_line(len);
        // The long name is not a file: it is listed, then missing.
        assert_ne!(r.code, -1, "killed: {}", r.stderr);
        r.stdout_has("a: OK").stdout_has("b: OK");
        assert!(!r.stderr.contains("longer than"), "{}", r.stderr);
    }
    for len in [MIB + 1, 100 * MIB] {
        let r = verify_long_line(len);
        assert_ne!(r.code, -1, "killed: {}", r.stderr);
        r.stdout_has("a: OK")
            .stdout_has("b: OK")
            .stderr_has("-:2: longer than 1048576 bytes: not read");
        assert_ne!(r.code, 0, "a refused line is a problem: {}", r.stderr);
    }
}

/// Every manifest form GNU coreutils' `-c` reads (from its own tests), run side by side with
/// the GNU tool on the same files: the same exit code and the same OK and FAILED counts.
#[test]
fn verify_reads_every_form_gnu_reads_and_judges_as_gnu_does() {
    let d = Dir::new();
    d.create(b"a", b"alpha\n");
    d.create(b" b", b" bee\n");
    d.create(b"*c", b"star\n");
    d.create(b"x\\y", b"x");
    let md5 = |name: &[u8]| {
        let data = std::fs::read(d.join(std::ffi::OsStr::from_bytes(name))).unwrap();
        let out = std::process::Command::new("md5sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(&data)?;
                c.wait_with_output()
            })
            .unwrap();
        String::from_utf8(out.stdout).unwrap()[..32].to_string()
    };
    let (a, b, c, xy) = (md5(b"a"), md5(b" b"), md5(b"*c"), md5(b"x\\y"));
    let zeros = "0".repeat(32);
    let cases: Vec<(&str, &str, String)> = vec![
        // OpenSSL's `md5 -r`-less form: ALG(NAME)= HEX.
        ("md5sum", "openssl.md5", format!("MD5(a)= {a}\n")),
        // BSD `md5 -r`: one space; names that begin with a space or `*` kept as written.
        ("md5sum", "reversed.md5", format!("{a} a\n{b}  b\n{c} *c\n")),
        // A tagged line after white space, its name escaped.
        ("md5sum", "tagged.md5", format!(" \\MD5 (x\\\\y) = {xy}\n")),
        // One path, two digests: each line judged.
        ("md5sum", "twice.md5", format!("{a}  a\n{zeros}  a\n")),
    ];
    let mut all = cases;
    // What b2sum -l 256 and cksum -a (blake2b -l 256, sm3) write, made by the tools themselves.
    for (tool_name, args, file) in [
        ("b2sum", &["-l", "256", "a"][..], "B2SUMS"),
        ("b2sum", &["--tag", "-l", "256", "a"][..], "tagged.b2"),
        ("cksum", &["-a", "blake2b", "-l", "384", "a"][..], "ck.b2"),
        ("cksum", &["-a", "sm3", "a"][..], "ck.sm3"),
    ] {
        let Some(t) = tool(tool_name) else {
            return;
        };
        let out = std::process::Command::new(&t)
            .args(args)
            .current_dir(d.path())
            .output()
            .unwrap();
        if !out.status.success() {
            skip(&format!(
                "{tool_name} {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
            continue;
        }
        all.push((tool_name, file, String::from_utf8(out.stdout).unwrap()));
    }
    let counts = |text: &str| {
        let ok = text.lines().filter(|l| l.ends_with(": OK")).count();
        let failed = text.lines().filter(|l| l.contains(": FAILED")).count();
        (ok, failed)
    };
    for (gnu, file, text) in all {
        d.create(file.as_bytes(), text.as_bytes());
        let Some(g) = tool(gnu) else {
            return;
        };
        let theirs = run_tool(
            d.path(),
            &g,
            &[std::ffi::OsStr::new("-c"), std::ffi::OsStr::new(file)],
        );
        let ours = d.cmd().args(["verify", file]).run();
        assert_eq!(
            ours.code, theirs.code,
            "{file}: trawl {ours:?}, {gnu} {theirs:?}"
        );
        assert_eq!(
            counts(&ours.stdout),
            counts(&theirs.stdout),
            "{file}: trawl {ours:?}, {gnu} {theirs:?}"
        );
        assert!(counts(&ours.stdout).0 >= 1, "{file}: {ours:?}");
    }
}
