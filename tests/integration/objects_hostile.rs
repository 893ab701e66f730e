//! S3 roots against stores that lie or misbehave: a scripted store of this file's own (which
//! answers ranges, listings and headers as a test says, wrong ones included), moto with keys
//! no XML 1.0 text can hold, and flags that carry secrets. Each test names a way a store or
//! an argument could make trawl report bytes it did not read, or print what it must not.

use std::sync::Arc;

use crate::s3_support::scripted::{
    Body, Resp, Scripted, encoded_listing, is_list, listing, listing_for, partial,
};
use crate::s3_support::{Env, trawl_with};
use crate::util::{Dir, noise};

const MIB: usize = 1 << 20;

/// The sha256sum lines of a scan of `s3://bkt/p` from `store`.
fn scan(d: &Dir, env: &Env) -> crate::util::Run {
    trawl_with(d, env, &["scan", "-q", "s3://bkt/p", "-m", "sha256sum:-"])
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    hex_of(&sha2::Sha256::digest(data))
}

fn hex_of(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn a_range_answered_from_another_offset_is_never_digested() {
    // A store (or a cache before it) that answers every range with the object's first bytes,
    // and says so in Content-Range: right total, right length, wrong bytes.
    let data = Arc::new(noise(9 * MIB + 5, 7));
    let d2 = data.clone();
    let store = Scripted::start(move |r| {
        if is_list(r) {
            return listing(&[("p/big", d2.len() as i64, Some("e1"))]);
        }
        let (a, b) = r.range.unwrap_or((0, d2.len() as u64 - 1));
        partial(&d2, 0, b - a, Some("e1"))
    });
    let d = Dir::new();
    let r = scan(&d, &store.env());
    assert!(
        !r.stdout.contains("big"),
        "a digest of bytes that are not the object's:\n{}\n{}",
        r.stdout,
        r.stderr
    );
    r.code(2);
    assert!(r.stderr.contains("s3://bkt/p/big"), "{}", r.stderr);
    assert!(
        store.requests().iter().all(|q| q.path.starts_with("/bkt")),
        "{:?}",
        store.requests()
    );
    let wrong: Vec<u8> = (0..3).flat_map(|_| data[..4 * MIB].to_vec()).collect();
    assert!(!r.stdout.contains(&sha256_hex(&wrong[..data.len()])));
}

#[test]
fn ranges_without_an_etag_are_never_joined_across_versions() {
    // No ETag in the listing nor in any answer, and the object replaced (same size) after its
    // first range: nothing shows the ranges to be of one version, so none is digested.
    let old = Arc::new(noise(9 * MIB, 1));
    let new = Arc::new(noise(9 * MIB, 2));
    let gets = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (o, n, g) = (old.clone(), new.clone(), gets.clone());
    let store = Scripted::start(move |r| {
        if is_list(r) {
            return listing(&[("p/obj", o.len() as i64, None)]);
        }
        let (a, b) = r.range.unwrap_or((0, o.len() as u64 - 1));
        let first = g.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
        partial(if first { &o } else { &n }, a, b, None)
    });
    let d = Dir::new();
    let r = scan(&d, &store.env());
    let mut mixed = old[..4 * MIB].to_vec();
    mixed.extend_from_slice(&new[4 * MIB..]);
    assert!(
        !r.stdout.contains(&sha256_hex(&mixed)),
        "a digest of two versions' bytes joined:\n{}\n{}",
        r.stdout,
        r.stderr
    );
    r.code(2);
    assert!(r.stderr.contains("s3://bkt/p/obj"), "{}", r.stderr);
    assert!(gets.load(std::sync::atomic::Ordering::SeqCst) >= 1);
}

#[test]
fn a_password_in_the_endpoint_is_never_printed() {
    let d = Dir::new();
    let env = Env::for_endpoint("http://127.0.0.1:9");
    for e in [
        "ftp://user:hunter2pw@127.0.0.1:9",
        "http://user:hunter2pw@[::1",
        "http://user:hunter2pw@127.0.0.1:9",
        "https://hunter2pw@127.0.0.1:9/path",
    ] {
        let r = trawl_with(&d, &env, &["scan", "-q", "s3://bkt/p", "--endpoint", e]);
        r.code(2);
        let all = format!("{}{}", r.stdout, r.stderr);
        assert!(!all.contains("hunter2pw"), "{e}: {all}");
        assert!(all.contains("--endpoint"), "{e}: {all}");
    }
    // Nor are the keys, in any store's error.
    let r = trawl_with(&d, &env, &["scan", "-q", "s3://bkt/p"]);
    r.code(2);
    let all = format!("{}{}", r.stdout, r.stderr);
    for secret in [crate::s3_support::SECRET_KEY, crate::s3_support::ACCESS_KEY] {
        assert!(!all.contains(secret), "{all}");
    }
}

#[test]
fn a_key_with_a_control_character_does_not_hide_the_prefix() {
    // Without URL-encoded keys, a key holding U+0001 makes the whole listing unreadable XML.
    let Some(server) = crate::s3_support::S3Server::moto() else {
        return;
    };
    let up = crate::s3_support::Uploader::new(server.endpoint());
    up.create_bucket("bkt");
    let none = crate::s3_support::Checksum::None;
    for (k, v) in [
        ("p/ctl\u{1}x", &b"one"[..]),
        ("p/ok", b"two"),
        ("p/a b+c%41", b"three"),
        ("p/sub dir/x", b"four"),
    ] {
        up.put("bkt", k, v, none);
    }
    let d = Dir::new();
    let r = trawl_with(
        &d,
        &server.env(),
        &["scan", "-q", "s3://bkt/p", "-m", "hashdeep:-"],
    );
    r.code(0);
    for (name, v) in [
        ("./ok", &b"two"[..]),
        ("./a b+c%41", b"three"),
        ("./sub dir/x", b"four"),
    ] {
        let want = format!("{},{},{name}", v.len(), sha256_hex(v));
        assert!(r.stdout.lines().any(|l| l == want), "{want}\n{}", r.stdout);
    }
    assert!(r.stdout.contains(&sha256_hex(b"one")), "{}", r.stdout);
}

/// Keys that are not UTF-8 once decoded (`%FF`, `%FE`) would both become `x\u{FFFD}` in a
/// lossy copy, the name of another object (planted here): each is named and read under no
/// name, and the planted object is never read. A key listed twice is read once, a negative
/// size is refused; the run says each and exits 2.
#[test]
fn keys_not_utf8_listed_twice_or_negative_are_named_never_read_as_another() {
    let store = Scripted::start(move |r| {
        if is_list(r) {
            return encoded_listing(&[
                ("p%2Fok", 4),
                ("p%2Fok", 4),
                ("p%2Fx%FE", 7),
                ("p%2Fx%FF", 7),
                ("p%2Fy", -5),
            ]);
        }
        let body: &[u8] = if r.path == "/bkt/p/ok" {
            b"fine"
        } else {
            b"planted"
        };
        let mut resp = Resp::ok(&[("etag", "\"e\"".to_string())], body.to_vec());
        if let Some((a, b)) = r.range {
            let b = b.min(body.len() as u64 - 1);
            resp = partial(body, a, b, Some("e"));
        }
        resp
    });
    let d = Dir::new();
    let r = scan(&d, &store.env());
    r.code(2);
    assert_eq!(
        r.stdout,
        format!("{}  ok\n", sha256_hex(b"fine")),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.contains(&sha256_hex(b"planted")), "{}", r.stdout);
    for says in [
        "s3://bkt/p%2Fx%FE: a key that is not UTF-8 once decoded",
        "s3://bkt/p%2Fx%FF: a key that is not UTF-8 once decoded",
        "s3://bkt/p/ok: listed twice, or out of order, by the store",
        "s3://bkt/p/y: listed with a negative size",
    ] {
        r.stderr_has(says);
    }
    let gets: Vec<String> = store
        .requests()
        .iter()
        .filter(|q| !is_list(q))
        .map(|q| q.path.clone())
        .collect();
    assert_eq!(gets, ["/bkt/p/ok"], "objects asked for");
}

/// A store that holds `data` as `p/big`, uploaded in parts of `part` bytes: a composite
/// SHA-256 (`stored`, base64 with its `-N`), an opaque ETag, and its parts' sizes through
/// GetObjectAttributes; `attributes` false: that request is not implemented (501).
fn multipart_store(data: Arc<Vec<u8>>, part: usize, stored: String, attributes: bool) -> Scripted {
    let n = data.len().div_ceil(part);
    Scripted::start(move |r| {
        if is_list(r) {
            return listing(&[("p/big", data.len() as i64, Some("opaque"))]);
        }
        if r.query.starts_with("attributes") {
            if !attributes {
                let mut no = Resp::ok(&[], b"<Error><Code>NotImplemented</Code></Error>".to_vec());
                no.status = 501;
                return no;
            }
            let mut x = format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><GetObjectAttributesResponse><ObjectParts>\
                 <PartsCount>{n}</PartsCount><PartNumberMarker>0</PartNumberMarker>\
                 <NextPartNumberMarker>{n}</NextPartNumberMarker><MaxParts>1000</MaxParts>\
                 <IsTruncated>false</IsTruncated>"
            );
            for (i, c) in data.chunks(part).enumerate() {
                x.push_str(&format!(
                    "<Part><PartNumber>{}</PartNumber><Size>{}</Size></Part>",
                    i + 1,
                    c.len()
                ));
            }
            x.push_str("</ObjectParts></GetObjectAttributesResponse>");
            return Resp::ok(
                &[("content-type", "application/xml".into())],
                x.into_bytes(),
            );
        }
        let head = [
            ("etag", "\"opaque\"".to_string()),
            ("x-amz-checksum-sha256", stored.clone()),
            ("x-amz-checksum-type", "COMPOSITE".to_string()),
            ("last-modified", "Mon, 01 Jan 2024 00:00:00 GMT".to_string()),
        ];
        if r.method == "HEAD" {
            let mut h = head.to_vec();
            h.push(("content-length", data.len().to_string()));
            let mut resp = Resp::ok(&h, Vec::new());
            resp.headers.retain(|(k, _)| k != "content-length");
            resp.headers
                .push(("content-length".into(), data.len().to_string()));
            return resp;
        }
        let (a, b) = r.range.unwrap_or((0, data.len() as u64 - 1));
        partial(&data, a, b.min(data.len() as u64 - 1), Some("opaque"))
    })
}

/// The composite SHA-256 of `data` in parts of `part` bytes, as S3 writes it (`BASE64-N`).
fn composite_sha256(data: &[u8], part: usize) -> String {
    use base64::Engine;
    use sha2::Digest;
    let mut all = sha2::Sha256::new();
    for c in data.chunks(part) {
        all.update(sha2::Sha256::digest(c));
    }
    let v = base64::engine::general_purpose::STANDARD.encode(all.finalize());
    format!("{v}-{}", data.len().div_ceil(part))
}

/// A composite checksum made at a part size no guess finds (5 MiB and 3 bytes: uploaders'
/// sizes are whole mebibytes) is compared at the size the store reports through
/// GetObjectAttributes: OK without a download where it agrees, FAILED where it does not (the
/// size is the store's, not a guess). A store that does not answer that request leaves the
/// guesses, and a download.
#[test]
fn a_composite_checksum_is_compared_at_the_part_size_the_store_reports() {
    let part = 5 * MIB + 3;
    let data = Arc::new(noise(2 * part + 100, 11));
    let d = Dir::new();
    d.create(b"local/big", &data);
    let gets = |s: &Scripted| {
        s.requests()
            .iter()
            .filter(|q| q.method == "GET" && !is_list(q) && !q.query.starts_with("attributes"))
            .count()
    };

    let right = composite_sha256(&data, part);
    let store = multipart_store(data.clone(), part, right.clone(), true);
    let r = trawl_with(&d, &store.env(), &["check", "local", "s3://bkt/p"]);
    r.code(0);
    r.stdout_has("big: OK (the store's composite sha256 checksum (3 parts of 5242883 bytes))");
    assert_eq!(gets(&store), 0, "read although the store's parts prove it");

    // The store's checksum disagrees with the bytes (which are right): FAILED, not a download.
    let mut wrong_data = data.to_vec();
    wrong_data[7] ^= 1;
    let wrong = composite_sha256(&wrong_data, part);
    let store = multipart_store(data.clone(), part, wrong, true);
    let r = trawl_with(&d, &store.env(), &["check", "local", "s3://bkt/p"]);
    r.code(1);
    r.stdout_has("big: FAILED (the store's composite sha256 checksum (3 parts of 5242883 bytes)");

    // No GetObjectAttributes: the guessed sizes prove nothing; the object is read.
    let store = multipart_store(data.clone(), part, right, false);
    let r = trawl_with(&d, &store.env(), &["check", "local", "s3://bkt/p"]);
    r.code(0);
    assert!(gets(&store) > 0, "{:?}", store.requests());
}

/// A part count no upload has (S3 allows 10,000), planted in a composite checksum's `-N`: no
/// part size is guessed from it (one byte a part would hold a digest per byte of the file, a
/// few hundred MiB for this 4 MiB one); the object is read instead, in bounded memory.
#[test]
fn a_planted_part_count_is_not_believed() {
    let data = Arc::new(noise(4 * MIB, 5));
    let d = Dir::new();
    d.create(b"local/big", &data);
    let planted = format!("{}-{}", "A".repeat(43) + "=", data.len());
    let store = multipart_store(data.clone(), 1, planted, false);
    let (code, rss) =
        crate::s3_support::peak_rss_with(&d, &store.env(), &["check", "-q", "local", "s3://bkt/p"]);
    assert_eq!(code, 0);
    assert!(rss < 150 << 20, "peak RSS {} MiB", rss >> 20);
    assert!(
        store
            .requests()
            .iter()
            .any(|q| q.method == "GET" && q.range.is_some()),
        "the object is read"
    );
}

/// A bag's `bagit.txt` that a store lists as a terabyte and answers without end: read to its
/// cap (64 KiB and a byte), then refused naming it, in a bounded number of requests.
#[test]
fn a_bag_tag_file_without_end_is_read_to_its_cap() {
    const HUGE: u64 = 1 << 40;
    let store = Scripted::start(|r| {
        if is_list(r) {
            return listing(&[
                ("p/bagit.txt", HUGE as i64, Some("e1")),
                ("p/data/a", 1, Some("e2")),
            ]);
        }
        let (a, b) = r.range.unwrap_or((0, HUGE - 1));
        let h = [
            ("content-range", format!("bytes {a}-{b}/{HUGE}")),
            ("etag", "\"e1\"".to_string()),
        ];
        let mut resp = Resp::ok(&h, vec![b'x'; (b - a + 1) as usize]);
        resp.status = 206;
        resp
    });
    let d = Dir::new();
    let r = trawl_with(&d, &store.env(), &["bag", "validate", "s3://bkt/p"]);
    r.code(2)
        .stderr_has("s3://bkt/p/bagit.txt: larger than the 64 KiB");
    let gets = store
        .requests()
        .iter()
        .filter(|q| q.path == "/bkt/p/bagit.txt")
        .count();
    assert!((1..=8).contains(&gets), "{:?}", store.requests());
    assert!(!store.requests().iter().any(|q| q.path.contains("data/")));
}

/// Keys a store lists that are no plain name below the prefix, or not below it at all, are
/// each an error naming the key (never a valid bag), and never asked for.
#[test]
fn bag_keys_outside_the_prefix_or_no_plain_name_are_named_and_never_read() {
    let a = b"a\n".to_vec();
    let files: Vec<(String, Vec<u8>)> = vec![
        (
            "p/bagit.txt".into(),
            b"BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n".to_vec(),
        ),
        ("p/bag-info.txt".into(), b"Payload-Oxum: 2.1\n".to_vec()),
        (
            "p/manifest-sha256.txt".into(),
            format!("{}  data/a\n", sha256_hex(&a)).into_bytes(),
        ),
        ("p/data/a".into(), a),
    ];
    let odd = ["p/data/../../q/secret", "p/data//a", "p/./bagit.txt"];
    let served = files.clone();
    let store = Scripted::start(move |r| {
        if is_list(r) {
            let mut keys: Vec<(&str, i64)> = served
                .iter()
                .map(|(k, v)| (k.as_str(), v.len() as i64))
                .collect();
            keys.extend(odd.iter().map(|k| (*k, 3)));
            // In key order, as a listing is (a key out of order is refused for that alone).
            keys.sort();
            let mut answer = listing_for(r, &keys);
            // A key not below the prefix at all, in the first level's answer.
            if let Body::Bytes(b) = &mut answer.body
                && r.query.contains("delimiter")
            {
                let x = String::from_utf8(b.clone()).unwrap().replacen(
                    "<Contents>",
                    "<Contents><Key>q/secret</Key><Size>3</Size></Contents><Contents>",
                    1,
                );
                *b = x.into_bytes();
            }
            return answer;
        }
        match served.iter().find(|(k, _)| r.path == format!("/bkt/{k}")) {
            Some((_, v)) => {
                let (a, b) = r.range.unwrap_or((0, v.len() as u64 - 1));
                partial(v, a, b, Some("e"))
            }
            None => Resp {
                status: 404,
                headers: Vec::new(),
                body: Body::Bytes(Vec::new()),
            },
        }
    });
    let d = Dir::new();
    let r = trawl_with(&d, &store.env(), &["bag", "validate", "s3://bkt/p"]);
    r.code(1).stdout_has("s3://bkt/p is NOT valid: 4 problems");
    for key in odd {
        r.stderr_has(&format!("s3://bkt/{key}: a key that is not one plain name"));
    }
    r.stderr_has("s3://bkt/q/secret: listed where it is not");
    let asked: Vec<String> = store.requests().iter().map(|q| q.path.clone()).collect();
    assert!(
        !asked
            .iter()
            .any(|p| p.contains("secret") || p.contains("//a")),
        "{asked:?}"
    );
    assert!(asked.iter().any(|p| p == "/bkt/p/data/a"), "{asked:?}");
}

/// Each key is one listing's to give, once: a store whose first level names common prefixes
/// outside the prefix (`other/`), the prefix itself, two levels down, or one twice, and whose
/// listing of a "directory" gives a key of another, has none of those listed or read, and no
/// object read twice; each is named, and the run exits 2.
#[test]
fn common_prefixes_outside_the_level_or_twice_are_never_listed_or_read_twice() {
    use crate::s3_support::scripted::{listing_page, param};
    let store = Scripted::start(|r| {
        if !is_list(r) {
            let body = b"obj".to_vec();
            let (a, b) = r.range.unwrap_or((0, 2));
            return partial(&body, a, b.min(2), Some("e"));
        }
        let delim = param(r, "delimiter").is_some();
        let token = param(r, "continuation-token");
        match (param(r, "prefix").as_deref(), delim, token.as_deref()) {
            (Some("p/"), true, None) => listing_page(
                &[("p/a", 3)],
                &["other/", "p/", "p/d/", "p/x/y/"],
                Some("t2"),
            ),
            (Some("p/"), true, Some("t2")) => listing_page(&[], &["p/d/", "p/c/"], None),
            (Some("p/c/"), false, None) => listing_page(&[("p/c/1", 3)], &[], None),
            (Some("p/d/"), false, None) => listing_page(&[("p/a", 3), ("p/d/1", 3)], &[], None),
            _ => listing_page(&[("p/planted", 3)], &[], None),
        }
    });
    let d = Dir::new();
    let r = scan(&d, &store.env());
    let sum = sha256_hex(b"obj");
    let mut lines: Vec<&str> = r.stdout.lines().collect();
    lines.sort();
    let want = [format!("{sum}  a"), format!("{sum}  d/1")];
    assert_eq!(lines, want, "{}", r.stderr);
    r.code(2);
    for (path, why) in [
        (
            "other/",
            "a common prefix not one level below the prefix listed",
        ),
        (
            "p/",
            "a common prefix not one level below the prefix listed",
        ),
        (
            "p/x/y/",
            "a common prefix not one level below the prefix listed",
        ),
        ("p/c/", "a common prefix listed out of order"),
        ("p/a", "listed where it is not"),
    ] {
        r.stderr_has(&format!("s3://bkt/{path}: {why}"));
    }
    let lists: Vec<String> = store
        .requests()
        .iter()
        .filter(|q| is_list(q))
        .filter_map(|q| param(q, "prefix"))
        .collect();
    assert!(
        lists.iter().all(|p| p == "p/" || p == "p/d/"),
        "listed outside: {lists:?}"
    );
}

/// Listings that never end (the same page asked for again, pages of keys listed already under
/// new tokens, empty pages without end) fail the run, naming the prefix, instead of running
/// on: a bag's validation and a scan each exit 2 in seconds. So does one that says it goes on
/// and gives no token to go on from (it ended there, the rest unlisted without a word).
#[test]
fn a_listing_that_never_ends_fails_naming_the_prefix() {
    use crate::s3_support::scripted::{listing_page, param};
    for way in ["same token", "same keys", "empty pages", "no token"] {
        let n = std::sync::atomic::AtomicU64::new(0);
        let store = Scripted::start(move |r| {
            if !is_list(r) {
                return partial(b"x", 0, 0, Some("e"));
            }
            let i = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let next = match way {
                "same token" => "t".to_string(),
                _ => format!("t{i}"),
            };
            let keys: &[(&str, i64)] = match way {
                "empty pages" if param(r, "continuation-token").is_some() => &[],
                _ => &[("p/bagit.txt", 1), ("p/data/a", 1)],
            };
            if way == "no token" {
                // Truncated, with nothing to go on from: the rest would be missing unsaid.
                let mut page = listing_page(keys, &[], None);
                let Body::Bytes(b) = &mut page.body;
                let x = String::from_utf8(b.clone()).unwrap();
                *b = x
                    .replace("<IsTruncated>false", "<IsTruncated>true")
                    .into_bytes();
                return page;
            }
            listing_page(keys, &[], Some(&next))
        });
        let d = Dir::new();
        for args in [
            &["bag", "validate", "s3://bkt/p"][..],
            &["scan", "-q", "s3://bkt/p", "-m", "sha256sum:-"],
        ] {
            let mut c = d.cmd();
            store.env().apply(&mut c.cmd);
            let r = c.args(args).run_within(60);
            let says = match way {
                "no token" => "s3://bkt/p/: cannot list: the store says its listing goes on",
                _ => "s3://bkt/p/: cannot list: the store's listing does not advance",
            };
            r.code(2).stderr_has(says);
            let lists = store.requests().iter().filter(|q| is_list(q)).count();
            assert!(lists < 1000, "{way}: {lists} listings");
        }
    }
}

/// A store holds `data/a` and `data/a/b` at once, as no directory can: a bag whose manifests
/// list both, every digest right, is not valid (no copy of it on disk could hold what they
/// list), naming the object the other lies below.
#[test]
fn an_object_and_objects_below_it_are_no_valid_bag() {
    let (a, b) = (b"A\n".to_vec(), b"B\n".to_vec());
    let manifest = format!("{}  data/a\n{}  data/a/b\n", sha256_hex(&a), sha256_hex(&b));
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("p/bag-info.txt", b"Payload-Oxum: 4.2\n".to_vec()),
        (
            "p/bagit.txt",
            b"BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n".to_vec(),
        ),
        ("p/data/a", a),
        ("p/data/a/b", b),
        ("p/manifest-sha256.txt", manifest.into_bytes()),
    ];
    let store = Scripted::start(move |r| {
        if is_list(r) {
            let keys: Vec<(&str, i64)> = files.iter().map(|(k, v)| (*k, v.len() as i64)).collect();
            return listing_for(r, &keys);
        }
        let (_, v) = files
            .iter()
            .find(|(k, _)| r.path == format!("/bkt/{k}"))
            .unwrap();
        let (a, b) = r.range.unwrap_or((0, v.len() as u64 - 1));
        partial(v, a, b, Some("e"))
    });
    let d = Dir::new();
    let r = trawl_with(&d, &store.env(), &["bag", "validate", "s3://bkt/p"]);
    r.code(1)
        .stdout_has("s3://bkt/p is NOT valid: 1 problem")
        .stderr_has("s3://bkt/p: data/a: an object, and objects below it as a directory");
}

/// `check`: an object whose key no local file can be named by (`x//y`) is NOT IN LOCAL,
/// named as listed: the tree and the prefix differ (exit 1), never all OK with exit 0.
#[test]
fn check_names_an_object_no_file_can_be() {
    // MD5 of "ok", the single-part ETag the store holds.
    let e = "444bcb3a3fcf8389296c49467f27e1d6".to_string();
    let store = Scripted::start(move |r| {
        if is_list(r) {
            return listing(&[("p/a", 2, Some(&e)), ("p/x//y", 1, Some("e2"))]);
        }
        let h = [
            ("etag", format!("\"{e}\"")),
            ("content-length", "2".to_string()),
            ("last-modified", "Mon, 01 Jan 2024 00:00:00 GMT".to_string()),
        ];
        if r.path == "/bkt/p/a" && r.method == "HEAD" {
            return Resp::ok(&h, Vec::new());
        }
        if r.path == "/bkt/p/a" {
            return Resp::ok(&h, b"ok".to_vec());
        }
        let mut no = Resp::ok(&[], b"<Error><Code>NoSuchKey</Code></Error>".to_vec());
        no.status = 404;
        no
    });
    let d = Dir::new();
    d.create(b"local/a", b"ok");
    let r = trawl_with(&d, &store.env(), &["check", "local", "s3://bkt/p"]);
    r.code(1).stdout_has("x//y: NOT IN LOCAL");
    assert!(r.stdout.contains("a: OK"), "{}", r.stdout);
    assert!(!store.requests().iter().any(|q| q.path.contains("x/")));
}
