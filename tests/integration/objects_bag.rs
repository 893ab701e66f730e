//! `trawl bag validate s3://BUCKET/PREFIX`: a bag uploaded under a prefix has the verdict, the
//! findings and the exit code of the same bag on disk (and bagit-python's verdict on that
//! copy); `--fast` reads no payload object; hostile names are findings and nothing outside the
//! prefix is asked for; the commands that write refuse a store.

use std::path::Path;

use crate::s3_support::{Checksum, Env, FaultProxy, Uploader, s3s_with_bucket, trawl_with};
use crate::util::{Dir, Run, noise};

/// Uploads every file under `dir` as `bkt/PREFIX/NAME`.
pub(crate) fn upload(up: &Uploader, dir: &Path, prefix: &str) {
    let mut todo = vec![dir.to_path_buf()];
    while let Some(at) = todo.pop() {
        for e in std::fs::read_dir(&at).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
                continue;
            }
            let rel = p.strip_prefix(dir).unwrap().to_str().unwrap();
            let bytes = std::fs::read(&p).unwrap();
            up.put("bkt", &format!("{prefix}/{rel}"), &bytes, Checksum::None);
        }
    }
}

/// A bag made by trawl at `c/base`: small files, one in a directory, one over a ranged GET's
/// 4 MiB, and a name that is not ASCII.
fn base_bag(d: &Dir) {
    d.create(b"c/base/one.txt", b"one\n");
    d.create(b"c/base/sub/two.txt", b"two\n");
    d.create("c/base/café.txt".as_bytes(), b"caf\n");
    d.create(b"c/base/big.bin", &noise(5_000_000, 7));
    d.cmd()
        .args(["bag", "create", "c/base", "-q"])
        .run()
        .code(0);
}

/// A copy of `c/base` at `c/NAME`, changed by `change`, and uploaded under `bkt/NAME/`.
fn variant(d: &Dir, up: &Uploader, name: &str, change: impl Fn(&Path)) {
    let at = d.join("c").join(name);
    let ok = std::process::Command::new("cp")
        .arg("-a")
        .arg(d.join("c/base"))
        .arg(&at)
        .status()
        .unwrap();
    assert!(ok.success());
    change(&at);
    upload(up, &at, name);
}

/// A run's lines with the bag's name (`root`) said as `BAG`, sorted (findings of the payload's
/// digests come in the order the reads end).
fn lines(text: &str, root: &str) -> Vec<String> {
    let mut l: Vec<String> = text.lines().map(|l| l.replace(root, "BAG")).collect();
    l.sort();
    l
}

/// `bag validate` of `c/NAME` and of `s3://bkt/NAME` with `extra`: the same exit code and
/// the same lines, each root named for the other; and bagit-python's verdict on the copy on
/// disk, where it is installed (not with `--fast`, which it has no equal of here). Returns the
/// run of the objects.
fn same_verdicts(d: &Dir, env: &Env, name: &str, extra: &[&str]) -> Run {
    let (dir, url) = (format!("c/{name}"), format!("s3://bkt/{name}"));
    let local = d.cmd().args(["bag", "validate", &dir]).args(extra).run();
    let mut args = vec!["bag", "validate", url.as_str()];
    args.extend(extra);
    let objects = trawl_with(d, env, &args);
    let both = format!(
        "{name}:\n--- disk ---\n{}{}\n--- objects ---\n{}{}",
        local.stdout, local.stderr, objects.stdout, objects.stderr
    );
    assert_eq!(objects.code, local.code, "{both}");
    assert_eq!(
        lines(&objects.stdout, &url),
        lines(&local.stdout, &dir),
        "{both}"
    );
    assert_eq!(
        lines(&objects.stderr, &url),
        lines(&local.stderr, &dir),
        "{both}"
    );
    if extra.is_empty()
        && let Some(verdict) = crate::bag::bagit_python(d, &dir)
    {
        assert_eq!(
            verdict.is_ok(),
            objects.code == 0,
            "{both}\nbagit: {verdict:?}"
        );
    }
    objects
}

/// Replaces the line of bag-info.txt that begins with `label` by `line`.
fn set_info(bag: &Path, label: &str, line: &str) {
    let p = bag.join("bag-info.txt");
    let text = std::fs::read_to_string(&p).unwrap();
    let mut out: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with(label))
        .map(str::to_string)
        .collect();
    out.push(line.to_string());
    std::fs::write(&p, out.join("\n") + "\n").unwrap();
}

#[test]
fn a_bag_under_a_prefix_has_the_verdicts_of_the_same_bag_on_disk() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    base_bag(&d);
    let cases: Vec<(&str, crate::bag::Corrupt)> = vec![
        ("valid", Box::new(|_| {})),
        (
            "flipped",
            Box::new(|b| std::fs::write(b.join("data/one.txt"), b"onE\n").unwrap()),
        ),
        (
            "missing",
            Box::new(|b| std::fs::remove_file(b.join("data/sub/two.txt")).unwrap()),
        ),
        (
            "unlisted",
            Box::new(|b| std::fs::write(b.join("data/sub/extra.txt"), b"x").unwrap()),
        ),
        (
            "oxum",
            Box::new(|b| set_info(b, "Payload-Oxum", "Payload-Oxum: 1.1")),
        ),
        (
            "tagged",
            Box::new(|b| set_info(b, "Contact-Name", "Contact-Name: someone else")),
        ),
        (
            "big-changed",
            Box::new(|b| {
                let mut v = std::fs::read(b.join("data/big.bin")).unwrap();
                v[4_500_000] ^= 1;
                std::fs::write(b.join("data/big.bin"), v).unwrap();
            }),
        ),
    ];
    for (name, change) in &cases {
        variant(&d, &up, name, change);
    }
    for (name, _) in &cases {
        let r = same_verdicts(&d, &server.env(), name, &[]);
        if *name == "valid" {
            r.code(0).stdout_has("is valid (BagIt 1.0, 4 files");
        } else {
            r.code(1).stdout_has("is NOT valid");
        }
    }
    same_verdicts(&d, &server.env(), "valid", &["--fast"]).code(0);
    same_verdicts(&d, &server.env(), "oxum", &["--fast"]).code(1);
    same_verdicts(&d, &server.env(), "missing", &["--fast"]).code(1);
}

/// The same against moto's server (skipped, saying so, where it is not installed): a valid bag
/// and one with a byte changed in its object over 4 MiB.
#[test]
fn a_bag_on_moto_has_the_verdicts_of_the_same_bag_on_disk() {
    let Some(server) = crate::s3_support::S3Server::moto() else {
        return;
    };
    let d = Dir::new();
    let up = Uploader::new(server.endpoint());
    up.create_bucket("bkt");
    base_bag(&d);
    variant(&d, &up, "valid", |_| {});
    variant(&d, &up, "big-changed", |b| {
        let mut v = std::fs::read(b.join("data/big.bin")).unwrap();
        v[4_500_000] ^= 1;
        std::fs::write(b.join("data/big.bin"), v).unwrap();
    });
    same_verdicts(&d, &server.env(), "valid", &[]).code(0);
    same_verdicts(&d, &server.env(), "big-changed", &[]).code(1);
}

/// A payload name listed composed (NFC) and stored decomposed (NFD): taken as one file, with
/// a warning naming both forms, on disk and under a prefix alike; with both forms stored, the
/// other is a file in no manifest.
#[test]
fn names_equal_after_unicode_normalization_are_taken_as_on_disk() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    base_bag(&d);
    variant(&d, &up, "nfd", |b| {
        std::fs::rename(b.join("data/café.txt"), b.join("data/cafe\u{301}.txt")).unwrap()
    });
    same_verdicts(&d, &server.env(), "nfd", &[])
        .code(0)
        .stderr_has("another Unicode normalization form");
    // Both forms there: the one listed is read, the other is in no manifest.
    variant(&d, &up, "both", |b| {
        std::fs::copy(b.join("data/café.txt"), b.join("data/cafe\u{301}.txt")).unwrap();
    });
    same_verdicts(&d, &server.env(), "both", &[])
        .code(1)
        .stderr_has("present in the payload but in no manifest");
    // Two forms of one name listed (`Å` composed, and A with a ring), a third stored (the
    // Angstrom sign), Payload-Oxum counting what is stored: one file pairs with one listing,
    // the other is missing (never folded into it: a valid verdict for a file not there).
    variant(&d, &up, "forms", |b| {
        let body = b"ring\n";
        std::fs::write(b.join("data/\u{212b}.txt"), body).unwrap();
        for alg in ["sha256", "sha512"] {
            let _ = std::fs::remove_file(b.join(format!("tagmanifest-{alg}.txt")));
            let hex = match alg {
                "sha256" => hex::encode(<sha2::Sha256 as sha2::Digest>::digest(body)),
                _ => hex::encode(<sha2::Sha512 as sha2::Digest>::digest(body)),
            };
            let m = b.join(format!("manifest-{alg}.txt"));
            let mut text = std::fs::read_to_string(&m).unwrap();
            for name in ["\u{c5}", "A\u{30a}"] {
                text.push_str(&format!("{hex}  data/{name}.txt\n"));
            }
            std::fs::write(&m, text).unwrap();
        }
        let info = std::fs::read_to_string(b.join("bag-info.txt")).unwrap();
        let oxum = info.lines().find_map(|l| l.strip_prefix("Payload-Oxum: "));
        let (bytes, files) = oxum.unwrap().split_once('.').unwrap();
        let (bytes, files): (u64, u64) = (bytes.parse().unwrap(), files.parse().unwrap());
        let line = format!("Payload-Oxum: {}.{}", bytes + 5, files + 1);
        set_info(b, "Payload-Oxum", &line);
    });
    same_verdicts(&d, &server.env(), "forms", &[])
        .code(1)
        .stderr_has("listed in the manifests but missing");
}

/// `--fast` checks the listing against the manifests and Payload-Oxum and asks for no payload
/// object (no GET, no HEAD under data/); without it, each is read as the listing gave it (GETs,
/// no HeadObject).
#[test]
fn fast_validation_reads_no_payload_object() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    base_bag(&d);
    upload(&up, &d.join("c/base"), "b");
    let proxy = FaultProxy::start(server.endpoint());
    trawl_with(
        &d,
        &proxy.env(),
        &["bag", "validate", "--fast", "s3://bkt/b"],
    )
    .code(0)
    .stdout_has("is valid according to Payload-Oxum and file list");
    let payload = |p: &FaultProxy| {
        p.requests()
            .into_iter()
            .filter(|l| l.path.starts_with("/bkt/b/data/"))
            .count()
    };
    assert_eq!(payload(&proxy), 0, "{:#?}", proxy.requests());
    trawl_with(&d, &proxy.env(), &["bag", "validate", "s3://bkt/b"]).code(0);
    assert!(payload(&proxy) >= 4, "{:#?}", proxy.requests());
    let heads = proxy
        .requests()
        .into_iter()
        .filter(|l| l.method == "HEAD" && l.path.starts_with("/bkt/b/data/"))
        .count();
    assert_eq!(heads, 0, "{:#?}", proxy.requests());
}

/// Manifest lines naming `../secret`, `/secret`, `data/a//b`, a NUL and a percent-encoding of
/// no UTF-8: each a finding, as on disk, never a valid bag, and nothing outside the prefix
/// asked for.
#[test]
fn hostile_manifest_names_are_findings_and_nothing_outside_the_prefix_is_read() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    up.put("bkt", "secret", b"outside the prefix", Checksum::None);
    base_bag(&d);
    let sum = crate::util::sha256_hex(b"outside the prefix");
    let two = crate::util::sha256_hex(b"two\n");
    variant(&d, &up, "evil", |b| {
        let mut m = std::fs::read(b.join("manifest-sha256.txt")).unwrap();
        for name in [
            "../secret".as_bytes(),
            b"/secret",
            b"data/../../secret",
            b"data/sub//two.txt",
            b"data/a\0b",
            b"data/%FF%FE",
        ] {
            let digest = if name.ends_with(b"two.txt") {
                &two
            } else {
                &sum
            };
            m.extend_from_slice(format!("{digest}  ").as_bytes());
            m.extend_from_slice(name);
            m.push(b'\n');
        }
        std::fs::write(b.join("manifest-sha256.txt"), m).unwrap();
        let mut t = std::fs::read_to_string(b.join("tagmanifest-sha256.txt")).unwrap();
        t.push_str(&format!("{sum}  ../secret\n{sum}  /secret\n"));
        std::fs::write(b.join("tagmanifest-sha256.txt"), t).unwrap();
    });
    let proxy = FaultProxy::start(server.endpoint());
    let r = same_verdicts(&d, &proxy.env(), "evil", &[]);
    r.code(1).stderr_has("unsafe path");
    assert!(!r.stdout.contains("is valid"), "{}", r.stdout);
    assert!(
        !proxy.requests().iter().any(|l| l.path.contains("secret")),
        "asked the store for what is outside the prefix: {:#?}",
        proxy.requests()
    );
}

/// A tag file over its cap is an error naming it and the limit (exit 2), read no further than
/// the cap, as on disk; a prefix without bagit.txt is no bag, and one that cannot be listed
/// fails.
#[test]
fn a_tag_file_over_its_cap_and_a_prefix_that_is_no_bag_are_refused() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    base_bag(&d);
    variant(&d, &up, "huge", |b| {
        let mut t = std::fs::read(b.join("bag-info.txt")).unwrap();
        t.extend(std::iter::repeat_n(b'x', 3 << 20));
        std::fs::write(b.join("bag-info.txt"), t).unwrap();
    });
    same_verdicts(&d, &server.env(), "huge", &[])
        .code(2)
        .stderr_has("s3://bkt/huge/bag-info.txt: larger than the 1 MiB");
    up.put("bkt", "nobag/data/x", b"x", Checksum::None);
    trawl_with(&d, &server.env(), &["bag", "validate", "s3://bkt/nobag"])
        .code(2)
        .stderr_has("s3://bkt/nobag/bagit.txt: missing: not a bag");
    // A prefix that cannot be listed is no bag found empty.
    trawl_with(
        &d,
        &server.env(),
        &["bag", "validate", "s3://no-such-bucket/b"],
    )
    .code(2)
    .stderr_has("s3://no-such-bucket/b/: cannot list: the store answered NoSuchBucket");
}

/// What writes (`bag create`, `update`, `recover`) refuses a store in one line, exit 2; the
/// flags that mean nothing for objects are refused as a scan of them refuses them.
#[test]
fn writing_commands_and_flags_that_do_not_apply_refuse_a_store() {
    let d = Dir::new();
    let (server, _up) = s3s_with_bucket(&d);
    d.create(b"local/a.txt", b"a");
    let env = server.env();
    for args in [
        &["bag", "create", "s3://bkt/x"][..],
        &["bag", "create", "local", "--out", "s3://bkt/x"],
        &["bag", "update", "s3://bkt/x", "-d", "md5"],
        &["bag", "recover", "s3://bkt/x"],
    ] {
        let r = trawl_with(&d, &env, args);
        r.code(2).stderr_has("trawl never writes to a store");
        assert_eq!(r.stderr.trim().lines().count(), 1, "{args:?}: {}", r.stderr);
    }
    assert!(d.join("local/a.txt").exists() && !d.join("local/bagit.txt").exists());
    for (flag, args) in [
        ("--limit-rate", &["--limit-rate", "1M"][..]),
        ("--one-file-system", &["-x"]),
        ("--follow", &["-L"]),
        ("--profile", &["--profile", "p.json"]),
    ] {
        let mut all = vec!["bag", "validate", "s3://bkt/x"];
        all.extend(args);
        trawl_with(&d, &env, &all).code(2).stderr_has(flag);
    }
}
