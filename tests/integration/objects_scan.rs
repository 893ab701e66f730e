//! `trawl scan s3://BUCKET/PREFIX` against real S3 servers started here (s3s-fs in this
//! process, moto as a child), directly and through the fault proxy: the digests and manifests
//! of a prefix equal those of the same files on disk, and every fault of a store ends in the
//! right digest or a named failure, never in a digest of bytes that were not the object's.

use std::path::Path;

use crate::s3_support::{
    Checksum, FaultProxy, S3Server, Uploader, s3s_with_bucket as s3s, trawl_with as trawl,
};
use crate::util::{Dir, Run, noise, run_tool, tool};

/// Files of awkward sizes (empty, one byte, over one request's range) under `d/local`, and the
/// same uploaded under `bkt/p/`.
const FILES: [(&str, usize); 6] = [
    ("empty", 0),
    ("one", 1),
    ("a/b/small.txt", 1000),
    ("a/name with spaces", 70_000),
    ("big.bin", 9 * 1024 * 1024 + 17),
    ("z/é.dat", 4 * 1024 * 1024),
];

/// Writes [`FILES`] under `d/local` and uploads them under `bkt/p/`.
fn plant(d: &Dir, up: &Uploader) {
    for (i, (name, size)) in FILES.iter().enumerate() {
        let data = noise(*size, i as u64 + 1);
        d.create(format!("local/{name}").as_bytes(), &data);
        up.put("bkt", &format!("p/{name}"), &data, Checksum::None);
    }
}

fn sorted(text: &str) -> Vec<String> {
    let mut l: Vec<String> = text.lines().map(str::to_string).collect();
    l.sort();
    l
}

/// sha256sum's lines for [`FILES`] on disk, sorted.
fn sha256sum_of_local(d: &Dir) -> Option<Vec<String>> {
    let prog = tool("sha256sum")?;
    let names: Vec<&std::ffi::OsStr> = FILES
        .iter()
        .map(|(n, _)| std::ffi::OsStr::new(*n))
        .collect();
    let r = run_tool(&d.join("local"), &prog, &names);
    assert_eq!(r.code, 0, "{}", r.stderr);
    Some(sorted(&r.stdout))
}

#[test]
fn a_prefix_has_the_manifest_of_its_files_on_disk() {
    let d = Dir::new();
    let (server, up) = s3s(&d);
    plant(&d, &up);
    let r = trawl(
        &d,
        &server.env(),
        &["scan", "-q", "s3://bkt/p", "-m", "sha256sum:-"],
    );
    r.code(0);
    if let Some(want) = sha256sum_of_local(&d) {
        assert_eq!(sorted(&r.stdout), want);
    }
    // And byte for byte what a scan of the files on disk writes, every manifest format.
    for fmt in ["md5sum", "hashdeep", "bsd", "crc64nvmesum"] {
        let m = format!("{fmt}:-");
        let objects = trawl(&d, &server.env(), &["scan", "-q", "s3://bkt/p/", "-m", &m]);
        let local = d.cmd().args(["scan", "-q", "local", "-m", &m]).run();
        objects.code(0);
        local.code(0);
        let strip = |s: &str| -> Vec<String> {
            sorted(s)
                .into_iter()
                .filter(|l| !l.starts_with('#') && !l.starts_with("%%%%"))
                .collect()
        };
        assert_eq!(strip(&objects.stdout), strip(&local.stdout), "{fmt}");
    }
}

#[test]
fn a_second_server_moto_gives_the_same_digests() {
    let d = Dir::new();
    let Some(server) = S3Server::moto() else {
        return;
    };
    let up = Uploader::new(server.endpoint());
    up.create_bucket("bkt");
    plant(&d, &up);
    let r = trawl(
        &d,
        &server.env(),
        &["scan", "-q", "s3://bkt/p", "-m", "sha256sum:-"],
    );
    r.code(0);
    if let Some(want) = sha256sum_of_local(&d) {
        assert_eq!(sorted(&r.stdout), want);
    }
}

#[test]
fn every_ranged_read_is_pinned_to_one_version_and_at_least_a_mebibyte() {
    let d = Dir::new();
    let (server, up) = s3s(&d);
    plant(&d, &up);
    let proxy = FaultProxy::start(server.endpoint());
    trawl(&d, &proxy.env(), &["scan", "-q", "s3://bkt/p", "-d", "md5"]).code(0);
    let gets: Vec<_> = proxy
        .requests()
        .into_iter()
        .filter(|l| l.method == "GET" && l.path.starts_with("/bkt/p/"))
        .collect();
    // big.bin takes three requests, the rest one each.
    assert_eq!(gets.len(), FILES.len() + 2, "{gets:#?}");
    let big: Vec<_> = gets
        .iter()
        .filter(|l| l.path.starts_with("/bkt/p/big.bin"))
        .collect();
    // s3s-fs lists no ETags: the first answer's pins every later range of the object.
    let first = big
        .iter()
        .find(|l| l.range.as_deref() == Some("bytes=0-4194303"))
        .unwrap();
    assert_eq!(first.if_match, None);
    for g in big.iter().filter(|l| !std::ptr::eq(**l, *first)) {
        assert!(g.if_match.is_some(), "unpinned: {g:?}");
    }
    for g in &gets {
        if let Some(r) = &g.range {
            let (a, b) = r.trim_start_matches("bytes=").split_once('-').unwrap();
            let (a, b): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
            let last_of_object = b + 1 == 9 * 1024 * 1024 + 17 || a == 0;
            assert!(
                b - a + 1 >= 1 << 20 || last_of_object,
                "a short range: {g:?}"
            );
        }
    }
}

#[test]
fn where_the_listing_gives_etags_every_read_is_pinned_to_them() {
    let d = Dir::new();
    let Some(server) = S3Server::moto() else {
        return;
    };
    let up = Uploader::new(server.endpoint());
    up.create_bucket("bkt");
    plant(&d, &up);
    let proxy = FaultProxy::start(server.endpoint());
    trawl(&d, &proxy.env(), &["scan", "-q", "s3://bkt/p", "-d", "md5"]).code(0);
    let gets: Vec<_> = proxy
        .requests()
        .into_iter()
        .filter(|l| l.method == "GET" && l.path.starts_with("/bkt/p/"))
        .collect();
    assert_eq!(gets.len(), FILES.len() + 2, "{gets:#?}");
    for g in &gets {
        assert!(g.if_match.is_some(), "unpinned: {g:?}");
    }
}

/// Scans `bkt/p` through `proxy` for sha256, expecting `code`; the manifest's lines.
fn through(d: &Dir, proxy: &FaultProxy, code: i32) -> Run {
    let r = trawl(
        d,
        &proxy.env(),
        &["scan", "-q", "s3://bkt/p", "-m", "sha256sum:-"],
    );
    r.code(code);
    r
}

#[test]
fn a_body_cut_mid_read_is_resumed_from_where_it_stopped() {
    let d = Dir::new();
    let (server, up) = s3s(&d);
    plant(&d, &up);
    let proxy = FaultProxy::start(server.endpoint());
    proxy.cut_body_after(100_000, 3);
    let r = through(&d, &proxy, 0);
    assert_eq!(proxy.fired(crate::s3_support::Fault::CutBody), 3);
    if let Some(want) = sha256sum_of_local(&d) {
        assert_eq!(sorted(&r.stdout), want);
    }
    // The resumptions asked for the rest only: a range starting past 0 that is no range of
    // the plan (which starts at multiples of 4 MiB).
    assert!(
        proxy.requests().iter().any(|l| l
            .range
            .as_deref()
            .is_some_and(|r| !r.starts_with("bytes=0-")
                && !r.contains("4194304-")
                && !r.contains("8388608-"))),
        "{:#?}",
        proxy.requests()
    );
}

/// Scans `bkt/p` through `proxy` for sha256 with a store timeout of one second, killed past
/// a minute (a stall that is waited on for ever fails the test rather than hanging it).
fn impatient(d: &Dir, proxy: &FaultProxy) -> Run {
    let mut c = d.cmd();
    proxy.env().apply(&mut c.cmd);
    c.args(["scan", "-q", "s3://bkt/p", "-m", "sha256sum:-"])
        .args(["--store-timeout", "1s"])
        .run_within(60)
}

#[test]
fn a_body_that_stalls_is_cut_and_resumed_from_where_it_stopped() {
    let d = Dir::new();
    let (server, up) = s3s(&d);
    plant(&d, &up);
    let proxy = FaultProxy::start(server.endpoint());
    proxy.stall_body_after(100_000, 2);
    // Without the cut it would wait for ever (killed at a minute: not exit 0).
    let r = impatient(&d, &proxy);
    r.code(0);
    assert_eq!(proxy.fired(crate::s3_support::Fault::StallBody), 2);
    if let Some(want) = sha256sum_of_local(&d) {
        assert_eq!(sorted(&r.stdout), want);
    }
    assert!(
        proxy.requests().iter().any(|l| l
            .range
            .as_deref()
            .is_some_and(|r| r.starts_with("bytes=100000-"))),
        "{:#?}",
        proxy.requests()
    );
}

#[test]
fn a_store_that_stops_answering_is_a_named_failure_with_exit_2() {
    let d = Dir::new();
    let (server, up) = s3s(&d);
    up.put("bkt", "p/x", &noise(300_000, 5), Checksum::None);
    let proxy = FaultProxy::start(server.endpoint());
    // Every body stalls after its first bytes: the object fails by name, nothing digested.
    proxy.stall_body_after(1000, 1000);
    let r = impatient(&d, &proxy);
    r.code(2)
        .stderr_has("s3://bkt/p/x")
        .stderr_has("no byte for 1 s");
    assert_eq!(r.stdout, "", "no digest of an object not read");
    // No answer at all, to the listing: one line naming the prefix.
    proxy.clear();
    proxy.stall_answer(1000);
    let r = impatient(&d, &proxy);
    r.code(2).stderr_has("s3://bkt/p/: cannot list");
}

#[test]
fn a_short_body_and_slow_downs_still_give_the_right_digests() {
    let d = Dir::new();
    let (server, up) = s3s(&d);
    plant(&d, &up);
    let proxy = FaultProxy::start(server.endpoint());
    proxy.short_body(2);
    proxy.slow_down(3);
    proxy.internal_error(2);
    let r = through(&d, &proxy, 0);
    assert!(proxy.fired(crate::s3_support::Fault::ShortBody) >= 1);
    assert_eq!(proxy.fired(crate::s3_support::Fault::SlowDown), 3);
    if let Some(want) = sha256sum_of_local(&d) {
        assert_eq!(sorted(&r.stdout), want);
    }
}

#[test]
fn a_store_that_keeps_failing_is_a_named_failure_with_exit_2() {
    let d = Dir::new();
    let (server, up) = s3s(&d);
    up.put("bkt", "p/x", b"hello", Checksum::None);
    let proxy = FaultProxy::start(server.endpoint());
    proxy.slow_down(1000);
    let r = through(&d, &proxy, 2);
    assert_eq!(r.stdout, "", "no digest of an object not read");
    r.stderr_has("s3://bkt/p/x").stderr_has("SlowDown");
}

#[test]
fn an_object_replaced_during_its_read_is_said_never_mixed() {
    let d = Dir::new();
    let (server, up) = s3s(&d);
    plant(&d, &up);
    let proxy = FaultProxy::start(server.endpoint());
    // After the first range of big.bin has gone out, the object is replaced.
    let other = noise(9 * 1024 * 1024 + 17, 99);
    proxy.replace_during_get("bkt/p/big.bin", 1 << 20, &other, &up);
    let r = through(&d, &proxy, 2);
    r.stderr_has("s3://bkt/p/big.bin")
        .stderr_has("changed while being read");
    assert!(!r.stdout.contains("big.bin"), "{}", r.stdout);
    assert_eq!(r.stdout.lines().count(), FILES.len() - 1, "{}", r.stdout);
}

#[test]
fn credentials_that_expire_mid_run_fail_the_rest_by_name() {
    let d = Dir::new();
    let (server, up) = s3s(&d);
    plant(&d, &up);
    let proxy = FaultProxy::start(server.endpoint());
    // The listing passes, then every request is refused.
    proxy.expire_after(3);
    let r = through(&d, &proxy, 2);
    r.stderr_has("ExpiredToken");
    assert!(r.stdout.lines().count() < FILES.len(), "{}", r.stdout);
}

#[test]
fn a_missing_bucket_or_a_denied_listing_is_one_line_and_exit_2() {
    let d = Dir::new();
    let (server, _up) = s3s(&d);
    let r = trawl(&d, &server.env(), &["scan", "-q", "s3://no-such-bucket/p"]);
    r.code(2).stderr_has("s3://no-such-bucket/p/: cannot list");
    r.stderr_has("NoSuchBucket");
    let proxy = FaultProxy::start(server.endpoint());
    proxy.deny_list();
    let r = trawl(&d, &proxy.env(), &["scan", "-q", "s3://bkt/p"]);
    r.code(2).stderr_has("AccessDenied");
}

#[test]
fn keys_that_are_not_one_plain_name_are_named_not_read() {
    let d = Dir::new();
    let (server, up) = s3s(&d);
    up.put("bkt", "p/ok", b"fine", Checksum::None);
    up.put("bkt", "p/dir/", b"", Checksum::None);
    let r = trawl(
        &d,
        &server.env(),
        &["scan", "-q", "s3://bkt/p", "-m", "sha256sum:-"],
    );
    r.code(0);
    assert_eq!(r.stdout.lines().count(), 1, "{}", r.stdout);
    assert!(r.stdout.ends_with("  ok\n"), "{}", r.stdout);
}

#[test]
fn roots_and_flags_that_cannot_be_objects_are_refused() {
    let d = Dir::new();
    let env = crate::s3_support::Env::for_endpoint("http://127.0.0.1:9");
    for (args, says) in [
        (vec!["scan", "s3://Bad_Bucket/p"], "not a bucket name"),
        (vec!["scan", "s3://bkt/a/../b"], "plain names"),
        (
            vec!["scan", "s3://bkt/p", "."],
            "all local paths or all s3:// URLs",
        ),
        (
            vec!["scan", "s3://bkt/p", "--exclude-if-present", ".nobackup"],
            "--exclude-if-present",
        ),
        (
            vec!["scan", "s3://bkt/p", "--limit-rate", "1M"],
            "--limit-rate",
        ),
        (
            vec!["scan", "s3://bkt/p", "--endpoint", "ftp://x"],
            "--endpoint",
        ),
        (
            vec!["scan", "s3://bkt/p", "--store-timeout", "0s"],
            "--store-timeout",
        ),
        (
            vec!["scan", "s3://bkt/p", "--store-timeout=-1s"],
            "--store-timeout",
        ),
        (
            vec!["scan", "s3://bkt/p", "--store-timeout", "nan"],
            "--store-timeout",
        ),
        (
            vec!["scan", "s3://bkt/p", "--store-timeout", "inf"],
            "--store-timeout",
        ),
        (
            vec!["scan", "s3://bkt/p", "--store-timeout", "2h"],
            "--store-timeout",
        ),
        (
            vec!["scan", "s3://bkt/p", "--store-timeout", "5"],
            "--store-timeout",
        ),
    ] {
        trawl(&d, &env, &args).code(2).stderr_has(says);
    }
    // Nothing listens on port 9: one line naming the prefix, exit 2.
    let r = trawl(&d, &env, &["scan", "-q", "s3://bkt/p"]);
    r.code(2).stderr_has("s3://bkt/p/: cannot list");
    assert!(!Path::new(&d.join("s3")).exists());
}

/// An endpoint that is no S3 store: every answer is an endless body. trawl must fail within a
/// bounded memory, whichever request met it (the listing here), never hold what it is sent.
#[test]
fn an_endless_answer_fails_within_bounded_memory() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { return };
            std::thread::spawn(move || {
                let mut req = [0u8; 4096];
                let _ = c.read(&mut req);
                let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\n\r\n<a>");
                let chunk = vec![b'x'; 1 << 16];
                while c.write_all(&chunk).is_ok() {}
            });
        }
    });
    let d = Dir::new();
    let (code, rss) = crate::util::peak_rss_apart(
        &d,
        &[
            "scan",
            "-q",
            "s3://bkt/p",
            "--endpoint",
            &endpoint,
            "--no-sign-request",
        ],
    );
    assert_eq!(code, 2);
    assert!(rss < 400 << 20, "peak RSS {} MiB", rss >> 20);
}
