//! `trawl audit s3://BUCKET/PREFIX --catalog FILE`: a prefix registered, then audited later
//! with the catalog's verdicts (ok, corrupt, modified, missing, new), its objects read
//! through the store; a listing that fails fails the audit rather than call everything missing.

use crate::s3_support::{Checksum, FaultProxy, s3s_with_bucket, trawl_with};
use crate::util::{Dir, noise};

#[test]
fn a_prefix_audited_over_time_has_the_catalogs_verdicts() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    for (i, k) in ["keep", "rot", "edit", "gone"].iter().enumerate() {
        up.put(
            "bkt",
            &format!("p/{k}"),
            &noise(50_000 + i, i as u64),
            Checksum::None,
        );
    }
    let env = server.env();
    trawl_with(
        &d,
        &env,
        &["audit", "s3://bkt/p", "-c", "cat.db", "--init", "-q"],
    )
    .code(0);
    // Bit rot: the stored bytes change under the store, its size and time kept.
    let rot = d.join("s3/bkt/p/rot");
    let mtime = std::fs::metadata(&rot).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(&rot).unwrap();
    bytes[100] ^= 1;
    std::fs::write(&rot, &bytes).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&rot)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    // An edit: a new upload (a new time).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    up.put("bkt", "p/edit", b"edited", Checksum::None);
    up.delete("bkt", "p/gone");
    up.put("bkt", "p/new", b"new", Checksum::None);
    let r = trawl_with(&d, &env, &["audit", "s3://bkt/p", "-c", "cat.db"]);
    r.code(1).counted(&[
        ("ok", 1),
        ("corrupt", 1),
        ("modified", 1),
        ("missing", 1),
        ("new", 1),
    ]);
    r.stdout_has("s3://bkt/p/rot");
}

#[test]
fn a_metadata_only_audit_reads_no_object() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    up.put("bkt", "p/a", b"aaa", Checksum::None);
    up.put("bkt", "p/b", b"bbb", Checksum::None);
    trawl_with(
        &d,
        &server.env(),
        &["audit", "s3://bkt/p", "-c", "cat.db", "--init", "-q"],
    )
    .code(0);
    let proxy = FaultProxy::start(server.endpoint());
    trawl_with(
        &d,
        &proxy.env(),
        &["audit", "s3://bkt/p", "-c", "cat.db", "--metadata-only"],
    )
    .code(0);
    let gets: Vec<_> = proxy
        .requests()
        .into_iter()
        .filter(|l| l.method == "GET" && l.path.starts_with("/bkt/p/"))
        .collect();
    assert!(gets.is_empty(), "{gets:#?}");
}

#[test]
fn a_listing_that_fails_fails_the_audit_and_calls_nothing_missing() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    up.put("bkt", "p/a", b"aaa", Checksum::None);
    trawl_with(
        &d,
        &server.env(),
        &["audit", "s3://bkt/p", "-c", "cat.db", "--init", "-q"],
    )
    .code(0);
    let proxy = FaultProxy::start(server.endpoint());
    proxy.deny_list();
    let r = trawl_with(&d, &proxy.env(), &["audit", "s3://bkt/p", "-c", "cat.db"]);
    r.code(2).stderr_has("AccessDenied");
    assert!(!r.stdout.contains("missing: "), "{}", r.stdout);
    // The catalog still holds the object as it was: a later audit finds it as registered.
    trawl_with(&d, &server.env(), &["audit", "s3://bkt/p", "-c", "cat.db"])
        .code(0)
        .counted(&[("ok", 1), ("missing", 0)]);
}
