//! `trawl ocfl validate s3://BUCKET/PREFIX` against stores that hold what no directory can, or
//! list what they do not hold: names that decode to one, "directory" markers that hold data,
//! trees deeper than a thread's stack, declarations planted above the prefix. Each test names
//! a way a store could make an object valid that its copy on disk is not, or make trawl ask
//! for what the user did not name.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::objects_bag::upload;
use crate::ocfl::{edit_inventory, write_object};
use crate::s3_support::scripted::{
    Body, Req, Resp, Scripted, is_list, listing_for, param, partial,
};
use crate::s3_support::{Checksum, FaultProxy, s3s_with_bucket, trawl_with};
use crate::util::{Dir, digest_by};

/// Every file under `dir` as `PREFIX/NAME` with its bytes.
fn keys_of(dir: &Path, prefix: &str) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(at) = todo.pop() {
        for e in std::fs::read_dir(&at).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
                continue;
            }
            let rel = p.strip_prefix(dir).unwrap().to_str().unwrap();
            out.insert(format!("{prefix}/{rel}"), std::fs::read(&p).unwrap());
        }
    }
    out
}

/// A store holding `keys` (as given: no key encoded), answering listings a page each, and
/// HeadObject and GET (ranges too) of each key.
fn store_of(keys: BTreeMap<String, Vec<u8>>) -> Scripted {
    store_but(keys, |_| None)
}

/// As [`store_of`], answering what `first` says where it says something.
fn store_but(
    keys: BTreeMap<String, Vec<u8>>,
    first: impl Fn(&Req) -> Option<Resp> + Send + Sync + 'static,
) -> Scripted {
    let keys = Arc::new(keys);
    Scripted::start(move |r| {
        if let Some(answer) = first(r) {
            return answer;
        }
        if is_list(r) {
            let listed: Vec<(&str, i64)> = keys
                .iter()
                .map(|(k, v)| (k.as_str(), v.len() as i64))
                .collect();
            return listing_for(r, &listed);
        }
        let Some(v) = r.path.strip_prefix("/bkt/").and_then(|k| keys.get(k)) else {
            return Resp {
                status: 404,
                headers: Vec::new(),
                body: Body::Bytes(Vec::new()),
            };
        };
        // The ETag `listing_for` gives every key.
        let etag = "e";
        if v.is_empty() {
            return Resp::ok(&[("etag", format!("\"{etag}\""))], Vec::new());
        }
        let (a, b) = r.range.unwrap_or((0, v.len() as u64 - 1));
        partial(v, a, b.min(v.len() as u64 - 1), Some(etag))
    })
}

/// A store that writes keys as they are though asked to URL-encode them (s3s-fs does) lists
/// `dA/` and `d%41/` as two common prefixes that decode to one name: the second was taken
/// for the first given again, and what lies below it was never listed. A file the manifest
/// does not list (E023 on disk) passed unseen: the object was valid, exit 0. The second
/// prefix is now named, and the object is not valid.
#[test]
fn two_common_prefixes_that_decode_to_one_name_hide_nothing() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    write_object(&d.join("obj"), "info:o", &[&[("dA/y", b"why")]]);
    upload(&up, &d.join("obj"), "obj");
    d.create(b"obj/v1/content/d%41/x", b"not in the manifest");
    up.put(
        "bkt",
        "obj/v1/content/d%41/x",
        b"not in the manifest",
        Checksum::None,
    );
    let local = d.cmd().args(["ocfl", "validate", "obj"]).run();
    local.code(1).stderr_has("[E023] v1/content/d%41/x");
    let r = trawl_with(&d, &server.env(), &["ocfl", "validate", "s3://bkt/obj"]);
    r.code(1).stderr_has("[E023]");
    assert!(!r.stdout.contains("is a valid"), "{}", r.stdout);
    // A storage root's object below such a prefix is never left unchecked.
    up.put("bkt", "root/0=ocfl_1.1", b"ocfl_1.1\n", Checksum::None);
    upload(&up, &d.join("obj"), "root/dA/one");
    upload(&up, &d.join("obj"), "root/d%41/two");
    up.put(
        "bkt",
        "root/d%41/two/inventory.json",
        b"{\"corrupt\": true}",
        Checksum::None,
    );
    let r = trawl_with(&d, &server.env(), &["ocfl", "validate", "s3://bkt/root"]);
    r.code(1).stderr_has("s3://bkt/root: [E072] dA/: ");
}

/// A key ending in `/` that holds bytes (a "directory" marker with data in it) is data no
/// copy on disk could hold: it was passed over as an empty marker, and the object valid. It
/// is now an entry that is no file, named (E023 in a content directory, E001 at the object's
/// top), never read; an empty marker is still no entry.
#[test]
fn a_directory_marker_that_holds_data_is_named_never_passed_over() {
    let d = Dir::new();
    write_object(&d.join("obj"), "info:o", &[&[("a/x", b"ex")]]);
    let mut keys = keys_of(&d.join("obj"), "obj");
    keys.insert("obj/v1/content/a/".into(), Vec::new());
    let store = store_of(keys.clone());
    trawl_with(&d, &store.env(), &["ocfl", "validate", "s3://bkt/obj"]).code(0);
    drop(store);
    for (marker, says) in [
        ("obj/v1/content/a/", "[E023] v1/content/a/"),
        ("obj/", "[E001]"),
    ] {
        let mut planted = keys.clone();
        planted.insert(marker.into(), b"hidden data".to_vec());
        let store = store_of(planted);
        let r = trawl_with(&d, &store.env(), &["ocfl", "validate", "s3://bkt/obj"]);
        r.code(1).stderr_has(says);
        let gets: Vec<String> = store
            .requests()
            .into_iter()
            .filter(|q| !is_list(q) && q.path.ends_with('/'))
            .map(|q| q.path)
            .collect();
        assert!(gets.is_empty(), "{marker}: asked for {gets:?}");
    }
}

/// An object whose content lies `depth` "directories" deep, as keys of `store_of`.
fn deep_object(d: &Dir, depth: usize) -> BTreeMap<String, Vec<u8>> {
    let dir = d.join(format!("deep{depth}"));
    write_object(&dir, "info:deep", &[&[("f", b"deep")]]);
    let logical = format!("{}f", "a/".repeat(depth));
    let cp = format!("v1/content/{logical}");
    let md5 = digest_by("md5sum", b"deep");
    let (path, name) = (cp.clone(), logical.clone());
    edit_inventory(&dir, move |inv| {
        let digest = inv["manifest"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        inv["manifest"] = serde_json::json!({ digest.clone(): [path.clone()] });
        inv["fixity"] = serde_json::json!({"md5": { md5: [path] }});
        inv["versions"]["v1"]["state"] = serde_json::json!({ digest: [name] });
    });
    let mut keys = keys_of(&dir, "o");
    let content = keys.remove("o/v1/content/f").unwrap();
    keys.insert(format!("o/{cp}"), content);
    keys
}

/// Content 3,000 "directories" deep (a store's keys may be longer than a disk's paths), as
/// an object and as one of a storage root's (whose objects are checked on a thread of their
/// own): valid, each level listed once, no stack overflow.
#[test]
fn content_thousands_of_directories_deep_is_validated_without_overflow() {
    let d = Dir::new();
    let mut keys = deep_object(&d, 3000);
    let store = store_of(keys.clone());
    let r = trawl_with(&d, &store.env(), &["ocfl", "validate", "s3://bkt/o"]);
    r.code(0)
        .stdout_has("s3://bkt/o is a valid OCFL 1.1 object");
    drop(store);
    keys = keys
        .into_iter()
        .map(|(k, v)| (format!("root/{k}"), v))
        .collect();
    keys.insert("root/0=ocfl_1.1".into(), b"ocfl_1.1\n".to_vec());
    let store = store_of(keys);
    let r = trawl_with(&d, &store.env(), &["ocfl", "validate", "s3://bkt/root"]);
    r.code(0).stdout_has("1 object, 1 valid, 0 invalid");
}

/// A directory of a storage hierarchy named below its root: the root is found by a HeadObject
/// of each declaration's key above the prefix, nothing else above it asked for; a
/// declaration planted above an invalid object's prefix leaves it invalid, and the verdicts
/// are those of the same tree on disk.
#[test]
fn declarations_above_the_prefix_are_only_looked_up_and_validate_nothing() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    std::fs::create_dir_all(d.join("top/root/h")).unwrap();
    std::fs::write(d.join("top/root/0=ocfl_1.0"), "ocfl_1.0\n").unwrap();
    write_object(&d.join("top/root/h/obj"), "info:o", &[&[("x", b"x")]]);
    write_object(&d.join("top/root/bad"), "info:b", &[&[("x", b"x")]]);
    std::fs::write(d.join("top/root/bad/v1/content/x"), "changed").unwrap();
    upload(&up, &d.join("top"), "top");
    let proxy = FaultProxy::start(server.endpoint());
    let r = trawl_with(
        &d,
        &proxy.env(),
        &["ocfl", "validate", "s3://bkt/top/root/h"],
    );
    // The object follows 1.1, the root above 1.0: E081, as on disk.
    let local = d.cmd().args(["ocfl", "validate", "top/root/h"]).run();
    assert_eq!(
        r.code, local.code,
        "{}{}\n{}{}",
        r.stdout, r.stderr, local.stdout, local.stderr
    );
    r.code(1).stderr_has("[E081]");
    let outside: Vec<String> = proxy
        .requests()
        .into_iter()
        .filter(|q| {
            !q.path.contains("prefix=top%2Froot%2Fh%2F") && !q.path.starts_with("/bkt/top/root/h/")
        })
        .map(|q| {
            let path = percent_encoding::percent_decode_str(&q.path).decode_utf8_lossy();
            format!("{} {path}", q.method)
        })
        .collect();
    assert_eq!(
        outside,
        ["HEAD /bkt/top/root/0=ocfl_1.0"],
        "asked for outside the prefix"
    );
    let r = trawl_with(
        &d,
        &proxy.env(),
        &["ocfl", "validate", "s3://bkt/top/root/bad"],
    );
    r.code(1).stderr_has("[E092]");
}

/// An object's inventory replaced after it was listed (a byte changed, the same size) and a
/// content object deleted after its listing: neither object is valid, the one whose content
/// is gone is unreadable (exit 2), and the object beside them stays valid.
#[test]
fn objects_replaced_or_deleted_after_the_listing_are_never_valid() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    up.put("bkt", "root/0=ocfl_1.1", b"ocfl_1.1\n", Checksum::None);
    for name in ["a", "b", "c"] {
        write_object(&d.join(name), name, &[&[("x", name.as_bytes())]]);
        upload(&up, &d.join(name), &format!("root/{name}"));
    }
    let proxy = FaultProxy::start(server.endpoint());
    let mut inv = std::fs::read(d.join("a/inventory.json")).unwrap();
    let at = inv.len() - 3;
    inv[at] = b' ';
    // Its declaration is read before it, after the listing.
    let replacer = up.clone();
    proxy.on_get("bkt/root/a/0=ocfl_object_1.1", 0, move || {
        replacer.put("bkt", "root/a/inventory.json", &inv, Checksum::None);
    });
    let deleter = up.clone();
    // The next object's structure is checked before the content of either is read.
    proxy.on_get("bkt/root/c/inventory.json", 0, move || {
        deleter.delete("bkt", "root/b/v1/content/x");
    });
    let r = trawl_with(
        &d,
        &proxy.env(),
        &["ocfl", "validate", "--json", "s3://bkt/root"],
    );
    let (objects, s) = crate::ocfl::records(&r);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    let valid: Vec<&str> = objects
        .iter()
        .filter(|o| o["errors"].as_array().unwrap().is_empty())
        .map(|o| o["path"].as_str().unwrap())
        .collect();
    assert_eq!(valid, ["s3://bkt/root/c"], "{}", r.stdout);
    assert_eq!(s["unreadable"], 1, "{s}");
}

/// A version directory whose listing the store refuses (403 AccessDenied) is said to be one
/// that cannot be listed, with the store's words (it was said to be missing, as if the
/// object had lost it).
#[test]
fn a_version_directory_that_cannot_be_listed_is_not_called_missing() {
    let d = Dir::new();
    write_object(&d.join("obj"), "info:o", &[&[("x", b"x")]]);
    let store = store_but(keys_of(&d.join("obj"), "o"), |r| {
        (is_list(r) && param(r, "prefix").as_deref() == Some("o/v1/")).then(|| {
            let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AccessDenied\
                        </Code><Message>Access Denied</Message></Error>";
            let mut r = Resp::ok(
                &[("content-type", "application/xml".to_string())],
                body.as_bytes().to_vec(),
            );
            r.status = 403;
            r
        })
    });
    let r = trawl_with(&d, &store.env(), &["ocfl", "validate", "s3://bkt/o"]);
    r.code(1)
        .stderr_has(
            "[E046] v1: the inventory lists this version, but its directory cannot be listed",
        )
        .stderr_has("AccessDenied");
    assert!(!r.stderr.contains("is missing"), "{}", r.stderr);
}
