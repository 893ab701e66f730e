//! `trawl check DIR s3://BUCKET/PREFIX`: each file against what the store holds of its object,
//! for every kind of stored value (full-object CRC64NVME, CRC32C and SHA-256, a composite
//! `-N` checksum, a single-part ETag, a multipart ETag), clean and with a planted mismatch;
//! no object read where the store's values decide, and a guess never called FAILED.

use crate::s3_support::{Checksum, FaultProxy, S3Server, Uploader, s3s_with_bucket, trawl_with};
use crate::util::{Dir, Run, noise};

const MIB: usize = 1 << 20;

/// `local/NAME` written and uploaded as `bkt/p/NAME` the way `put` says.
fn both(d: &Dir, name: &str, data: &[u8], put: impl FnOnce(&str)) {
    d.create(format!("local/{name}").as_bytes(), data);
    put(&format!("p/{name}"));
}

/// Whether any GET of the object `p/NAME` went through the proxy (a download).
fn downloaded(proxy: &FaultProxy, name: &str) -> bool {
    proxy.requests().iter().any(|l| {
        // A GetObjectAttributes (`?attributes`) reads no byte of the object.
        l.method == "GET"
            && l.path.starts_with(&format!("/bkt/p/{name}?"))
            && !l.path.ends_with("?attributes")
    })
}

fn line<'a>(r: &'a Run, name: &str) -> &'a str {
    r.stdout
        .lines()
        .find(|l| l.starts_with(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no line for {name}:\n{}\n{}", r.stdout, r.stderr))
}

/// One object of each kind on s3s-fs, clean; the same again planted with a wrong value.
fn each_kind(d: &Dir, server: &S3Server, up: &Uploader) {
    for (i, (name, c)) in [
        ("crc64", Checksum::Crc64Nvme),
        ("crc32c", Checksum::Crc32c),
        ("sha256", Checksum::Sha256),
        ("etag", Checksum::None),
    ]
    .into_iter()
    .enumerate()
    {
        let data = noise(100_000 + i, i as u64);
        both(d, name, &data, |k| {
            up.put("bkt", k, &data, c);
        });
        let bad = format!("{name}-planted");
        both(d, &bad, &data, |k| {
            up.put("bkt", k, &data, c);
        });
        let key = format!("p/{bad}");
        match c {
            Checksum::None => server.plant_e_tag("bkt", &key, "0123456789abcdef0123456789abcdef"),
            _ => {
                let alg = c
                    .header_name()
                    .unwrap()
                    .trim_start_matches("x-amz-checksum-");
                let wrong = c.value(b"other bytes").unwrap();
                server.plant_checksum("bkt", &key, alg, &wrong);
            }
        }
    }
    // Multipart: 3 parts of 5 MiB and a bit; the ETag is the MD5 of the parts' MD5s, `-3`.
    let data = noise(10 * MIB + 100, 7);
    both(d, "multi", &data, |k| {
        up.put_multipart("bkt", k, &data, 5 * MIB, Checksum::None, false);
    });
    both(d, "multi-planted", &data, |k| {
        up.put_multipart("bkt", k, &data, 5 * MIB, Checksum::None, false);
    });
    server.plant_e_tag(
        "bkt",
        "p/multi-planted",
        "0123456789abcdef0123456789abcdef-3",
    );
}

#[test]
fn each_kind_of_stored_value_decides_without_a_download() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    each_kind(&d, &server, &up);
    let proxy = FaultProxy::start(server.endpoint());
    let r = trawl_with(
        &d,
        &proxy.env(),
        &["check", "local", "s3://bkt/p", "--part-size", "5M"],
    );
    r.code(1);
    for (name, proof) in [
        ("crc64", "crc64nvme checksum"),
        ("crc32c", "crc32c checksum"),
        ("sha256", "sha256 checksum"),
        ("etag", "ETag (the MD5 of a single-part upload)"),
        ("multi", "multipart ETag (3 parts of 5242880 bytes)"),
    ] {
        let l = line(&r, name);
        assert!(l.contains(": OK (") && l.contains(proof), "{l}");
        assert!(!downloaded(&proxy, name), "{name} was read");
        let l = line(&r, &format!("{name}-planted"));
        assert!(l.contains(": FAILED ("), "{l}");
        assert!(
            !downloaded(&proxy, &format!("{name}-planted")),
            "{name}-planted was read"
        );
    }
    r.stderr_has("5 OK (5 by the store's checksums or ETag, 0 read from the store), 5 FAILED");
}

#[test]
fn a_disagreement_at_a_guessed_part_size_reads_the_object_instead() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    each_kind(&d, &server, &up);
    let proxy = FaultProxy::start(server.endpoint());
    // No --part-size: 5 MiB parts are not what whole-MiB sizes giving 3 parts of 10 MiB start
    // at (4 MiB), so the clean multipart ETag may not be matched by the guesses; whatever the
    // guesses find, the planted one is never FAILED on a guess: it is read, and its bytes are
    // the file's.
    let r = trawl_with(&d, &proxy.env(), &["check", "local", "s3://bkt/p"]);
    let l = line(&r, "multi-planted");
    assert!(l.contains(": OK (read from the store"), "{l}");
    assert!(downloaded(&proxy, "multi-planted"));
    r.code(1);
}

#[test]
fn missing_objects_objects_without_a_file_and_changed_bytes() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    both(&d, "same", b"same bytes", |k| {
        up.put("bkt", k, b"same bytes", Checksum::Crc64Nvme);
    });
    d.create(b"local/only-here", b"x");
    up.put("bkt", "p/only-there", b"y", Checksum::None);
    both(&d, "changed", b"local bytes", |k| {
        up.put("bkt", k, b"store bytes", Checksum::Sha256);
    });
    let r = trawl_with(&d, &server.env(), &["check", "local", "s3://bkt/p"]);
    r.code(1);
    assert!(line(&r, "same").contains(": OK"));
    assert_eq!(line(&r, "only-here"), "only-here: MISSING");
    assert_eq!(line(&r, "only-there"), "only-there: NOT IN LOCAL");
    assert!(line(&r, "changed").contains(": FAILED (the store's sha256 checksum"));
}

#[test]
fn where_the_store_holds_nothing_comparable_the_object_is_read_or_not_checked() {
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    both(&d, "good", b"good bytes", |k| {
        up.put("bkt", k, b"good bytes", Checksum::None);
    });
    both(&d, "bad", b"local", |k| {
        up.put("bkt", k, b"store", Checksum::None);
    });
    // ETags that are no MD5 of the bytes (as under SSE-KMS): nothing to compare.
    server.plant_e_tag("bkt", "p/good", "not-an-md5");
    server.plant_e_tag("bkt", "p/bad", "not-an-md5");
    let r = trawl_with(&d, &server.env(), &["check", "local", "s3://bkt/p"]);
    r.code(1);
    assert!(line(&r, "good").contains(": OK (read from the store: SHA-256 equal)"));
    assert!(line(&r, "bad").contains(": FAILED (read from the store"));
    let r = trawl_with(
        &d,
        &server.env(),
        &["check", "local", "s3://bkt/p", "--no-download"],
    );
    r.code(3);
    assert!(line(&r, "good").contains(": NOT CHECKED"));
}

#[test]
fn a_composite_checksum_is_checked_from_the_parts_on_moto() {
    let d = Dir::new();
    // moto computes CRC-32C with the `crc32c` package, and a CRC32 under its name without it.
    if !crate::util::python_with(&["crc32c"]) {
        return;
    }
    let Some(server) = S3Server::moto() else {
        return;
    };
    let up = Uploader::new(server.endpoint());
    up.create_bucket("bkt");
    let data = noise(10 * MIB + 5, 3);
    d.create(b"local/comp", &data);
    // moto answers CompleteMultipartUpload in a shape the SDK refuses although the upload is
    // complete: the error is not this test's.
    let _ = up.try_put_multipart("bkt", "p/comp", &data, 5 * MIB, Checksum::Crc32c, false);
    let head = up.head("bkt", "p/comp").unwrap();
    // moto answers the type, COMPOSITE, and leaves the `-3` off the value: the part count is
    // the ETag's.
    assert_eq!(head.checksum_type.as_deref(), Some("COMPOSITE"), "{head:?}");
    let r = trawl_with(
        &d,
        &server.env(),
        &["check", "local", "s3://bkt/p", "--part-size", "5M"],
    );
    r.code(0);
    assert!(
        line(&r, "comp").contains("composite crc32c checksum (3 parts"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_fifo_a_link_out_and_a_name_no_key_can_have_are_not_checked_never_ok() {
    use std::os::unix::ffi::OsStrExt;
    let d = Dir::new();
    let (server, up) = s3s_with_bucket(&d);
    both(&d, "good", b"good bytes", |k| {
        up.put("bkt", k, b"good bytes", Checksum::Crc64Nvme);
    });
    crate::util::mkfifo(&d.join("local/fifo"));
    std::os::unix::fs::symlink("/etc/hostname", d.join("local/link-out")).unwrap();
    d.create(b"local/bad-\xff-name", b"x");
    let r = trawl_with(&d, &server.env(), &["check", "local", "s3://bkt/p"]);
    r.code(3);
    assert!(line(&r, "good").contains(": OK"));
    for name in ["fifo", "link-out"] {
        assert!(line(&r, name).contains(": NOT CHECKED"), "{}", r.stdout);
    }
    let bad = String::from_utf8_lossy(std::ffi::OsStr::from_bytes(b"bad-\xff-name").as_bytes())
        .into_owned();
    assert!(line(&r, &bad).contains(": NOT CHECKED"), "{}", r.stdout);
}
