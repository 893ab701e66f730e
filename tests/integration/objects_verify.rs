//! `trawl verify MANIFEST --root s3://BUCKET/PREFIX`: a manifest made of files on disk checked
//! against their uploaded copies, with verify's verdicts and exit codes.

use crate::s3_support::{Checksum, FaultProxy, s3s_with_bucket, trawl_with};
use crate::util::{Dir, noise};

/// Three files on disk under `local/`, uploaded under `bkt/p/`, and their sha256sum manifest
/// `m.sha256` (made by trawl from the files on disk).
fn setup(d: &Dir) -> (crate::s3_support::S3Server, crate::s3_support::Uploader) {
    let (server, up) = s3s_with_bucket(d);
    for (i, name) in ["a.txt", "sub/b.bin", "sub/c"].iter().enumerate() {
        let data = noise(1000 + i * 5_000_000, i as u64);
        d.create(format!("local/{name}").as_bytes(), &data);
        up.put("bkt", &format!("p/{name}"), &data, Checksum::None);
    }
    d.cmd()
        .args(["scan", "-q", "local", "-m", "sha256sum:m.sha256"])
        .run()
        .code(0);
    (server, up)
}

#[test]
fn a_manifest_made_on_disk_verifies_against_the_uploaded_prefix() {
    let d = Dir::new();
    let (server, _up) = setup(&d);
    let r = trawl_with(
        &d,
        &server.env(),
        &["verify", "m.sha256", "--root", "s3://bkt/p"],
    );
    r.code(0)
        .stdout_has("a.txt: OK")
        .stdout_has("sub/b.bin: OK");
}

#[test]
fn a_changed_a_missing_and_an_unlisted_object_have_verify_verdicts() {
    let d = Dir::new();
    let (server, up) = setup(&d);
    up.put("bkt", "p/sub/c", b"not what it was", Checksum::None);
    up.delete("bkt", "p/a.txt");
    up.put("bkt", "p/extra", b"new", Checksum::None);
    let r = trawl_with(
        &d,
        &server.env(),
        &["verify", "m.sha256", "--root", "s3://bkt/p", "--strict"],
    );
    r.code(1)
        .stdout_has("sub/c: FAILED")
        .stdout_has("a.txt: MISSING")
        .stdout_has("sub/b.bin: OK")
        .stdout_has("extra: NOT IN MANIFEST");
}

#[test]
fn names_that_leave_the_prefix_are_refused_not_read() {
    let d = Dir::new();
    let (server, up) = setup(&d);
    up.put("bkt", "secret", b"outside the prefix", Checksum::None);
    let sum = crate::util::sha256_hex(b"outside the prefix");
    std::fs::write(
        d.join("evil.sha256"),
        format!("{sum}  ../secret\n{sum}  /secret\n"),
    )
    .unwrap();
    let proxy = FaultProxy::start(server.endpoint());
    let r = trawl_with(
        &d,
        &proxy.env(),
        &["verify", "evil.sha256", "--root", "s3://bkt/p"],
    );
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains(": OK"), "{}", r.stdout);
    // Without confinement the names reach the store's source, which refuses them as names.
    let r = trawl_with(
        &d,
        &proxy.env(),
        &[
            "verify",
            "evil.sha256",
            "--root",
            "s3://bkt/p",
            "--no-confine",
        ],
    );
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains(": OK"), "{}", r.stdout);
    assert!(
        r.stdout.contains("not one plain name below the root")
            || r.stderr.contains("not one plain name below the root"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    assert!(
        !proxy.requests().iter().any(|l| l.path.contains("secret")),
        "asked the store for what is outside the prefix: {:#?}",
        proxy.requests()
    );
}

#[test]
fn a_store_that_cannot_be_listed_fails_strict_rather_than_find_nothing_unlisted() {
    let d = Dir::new();
    let (server, _up) = setup(&d);
    let proxy = FaultProxy::start(server.endpoint());
    proxy.deny_list();
    let r = trawl_with(
        &d,
        &proxy.env(),
        &["verify", "m.sha256", "--root", "s3://bkt/p", "--strict"],
    );
    r.code(2).stderr_has("AccessDenied");
}
