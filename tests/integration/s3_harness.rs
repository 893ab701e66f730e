//! The S3 test harness's own tests: each server, the uploader, and each of the fault proxy's
//! faults as the SDK sees them. Also pins what s3s-fs and moto do with checksums, If-Match and
//! GetObjectAttributes, which the S3 feature's tests rely on.

use crate::s3_support::{Checksum, Fault, FaultProxy, S3Server, Uploader};
use crate::util::{Dir, noise};
use base64::Engine;

/// S3's CRC64NVME of `b`: the big-endian bytes in base64.
fn crc64nvme(b: &[u8]) -> String {
    let v = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc64Nvme, b);
    base64::engine::general_purpose::STANDARD.encode(v.to_be_bytes())
}

/// S3's CRC32 of `b`, as [`crc64nvme`].
fn crc32(b: &[u8]) -> String {
    let v = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32IsoHdlc, b) as u32;
    base64::engine::general_purpose::STANDARD.encode(v.to_be_bytes())
}

/// s3s-fs in `d`, a bucket `bkt` and an uploader talking to it directly.
fn s3s(d: &Dir) -> (S3Server, Uploader) {
    let root = d.join("s3");
    std::fs::create_dir(&root).unwrap();
    let server = S3Server::s3s(&root);
    let up = Uploader::new(server.endpoint());
    up.create_bucket("bkt");
    (server, up)
}

#[test]
fn s3s_stores_and_answers_each_checksum() {
    let d = Dir::new();
    let (server, up) = s3s(&d);
    assert!(d.join("s3/bkt").is_dir(), "a bucket is a directory");
    let data = noise(100_000, 1);
    for c in [
        Checksum::None,
        Checksum::Crc64Nvme,
        Checksum::Crc32,
        Checksum::Crc32c,
        Checksum::Sha1,
        Checksum::Sha256,
    ] {
        let key = format!("dir/{c:?}");
        let put = up.put("bkt", &key, &data, c);
        let head = up.head("bkt", &key).unwrap();
        assert_eq!(head.size, Some(data.len() as i64));
        assert_eq!(head.e_tag, put.e_tag);
        match c.header_name() {
            None => assert!(head.checksums.is_empty(), "{:?}", head.checksums),
            Some(name) => assert!(head.checksum(name).is_some(), "{c:?}: {head:?}"),
        }
        assert_eq!(up.get("bkt", &key).unwrap(), data);
    }
    let head = up.head("bkt", "dir/Crc64Nvme").unwrap();
    assert_eq!(head.checksum("crc64nvme"), Some(crc64nvme(&data).as_str()));
    assert_eq!(head.checksum("crc32"), None);
    let head = up.head("bkt", "dir/Crc32").unwrap();
    assert_eq!(head.checksum("crc32"), Some(crc32(&data).as_str()));
    let keys: Vec<String> = up
        .list("bkt", "dir/")
        .unwrap()
        .into_iter()
        .map(|k| k.0)
        .collect();
    assert_eq!(keys.len(), 6, "{keys:?}");
    up.delete("bkt", "dir/None");
    assert_eq!(up.list("bkt", "dir/").unwrap().len(), 5);
    let env = server.env();
    assert_eq!(env.get("AWS_ENDPOINT_URL"), Some(server.endpoint()));
    assert_eq!(env.get("AWS_EC2_METADATA_DISABLED"), Some("true"));
}

#[test]
fn s3s_planted_checksum_is_answered_and_fails_the_sdk_check() {
    let d = Dir::new();
    let (server, up) = s3s(&d);
    let data = noise(10_000, 2);
    up.put("bkt", "k", &data, Checksum::Crc64Nvme);
    let wrong = crc64nvme(b"other bytes");
    server.plant_checksum("bkt", "k", "crc64nvme", &wrong);
    assert_eq!(
        up.head("bkt", "k").unwrap().checksum("crc64nvme"),
        Some(wrong.as_str())
    );
    let err = up.get("bkt", "k").unwrap_err();
    assert!(err.to_lowercase().contains("checksum"), "{err}");
    server.plant_e_tag("bkt", "k", "0123");
    assert_eq!(
        up.head("bkt", "k").unwrap().e_tag.as_deref(),
        Some("\"0123\"")
    );
}

/// What s3s-fs 0.14.1 does, pinned: GetObject ignores If-Match; GetObjectAttributes is not
/// implemented; a multipart upload stores no checksum (of either type) and a multipart ETag.
#[test]
fn s3s_if_match_attributes_and_multipart_as_they_are() {
    let d = Dir::new();
    let (_server, up) = s3s(&d);
    let data = noise(100_000, 3);
    let put = up.put("bkt", "k", &data, Checksum::Crc64Nvme);
    let etag = put.e_tag.unwrap();
    assert_eq!(
        up.get_with("bkt", "k", Some("bytes=0-9"), Some(&etag))
            .unwrap(),
        data[..10]
    );
    let stale = up.get_with("bkt", "k", None, Some("\"not-the-etag\""));
    assert_eq!(stale.unwrap(), data, "s3s-fs ignores If-Match on GET");
    let attrs = up.attributes("bkt", "k").unwrap_err();
    assert!(attrs.contains("NotImplemented"), "{attrs}");
    let big = noise((5 << 20) + 1000, 4);
    // One of each checksum type.
    for (c, full) in [(Checksum::Crc64Nvme, true), (Checksum::Crc32, false)] {
        let key = format!("mp-{c:?}");
        let put = up.put_multipart("bkt", &key, &big, 5 << 20, c, full);
        assert!(put.checksums.is_empty(), "{put:?}");
        let head = up.head("bkt", &key).unwrap();
        assert!(head.checksums.is_empty(), "{head:?}");
        assert!(head.e_tag.unwrap().ends_with("-2\""));
        assert_eq!(up.get("bkt", &key).unwrap(), big);
    }
}

/// A proxy in front of s3s-fs with one object `bkt/k` of `n` bytes; the uploader that wrote it
/// (direct) and one through the proxy.
fn proxied(d: &Dir, n: usize) -> (S3Server, FaultProxy, Uploader, Uploader, Vec<u8>) {
    let (server, up) = s3s(d);
    let data = noise(n, 5);
    up.put("bkt", "k", &data, Checksum::Crc64Nvme);
    let proxy = FaultProxy::start(server.endpoint());
    let via = Uploader::new(proxy.endpoint());
    (server, proxy, up, via, data)
}

#[test]
fn proxy_forwards_unchanged_and_logs_range_and_if_match() {
    let d = Dir::new();
    let (_server, proxy, _up, via, data) = proxied(&d, 50_000);
    assert_eq!(via.get("bkt", "k").unwrap(), data);
    let etag = via.head("bkt", "k").unwrap().e_tag.unwrap();
    let part = via
        .get_with("bkt", "k", Some("bytes=100-199"), Some(&etag))
        .unwrap();
    assert_eq!(part, data[100..200]);
    let log = proxy.requests();
    let ranged: Vec<_> = log.iter().filter(|l| l.range.is_some()).collect();
    assert_eq!(ranged.len(), 1, "{log:?}");
    assert_eq!(ranged[0].method, "GET");
    assert_eq!(ranged[0].path.split('?').next(), Some("/bkt/k"));
    assert_eq!(ranged[0].range.as_deref(), Some("bytes=100-199"));
    assert_eq!(ranged[0].if_match.as_deref(), Some(etag.as_str()));
    assert_eq!(ranged[0].status, 206);
    assert!(
        log.iter().any(|l| l.method == "HEAD" && l.status == 200),
        "{log:?}"
    );
    assert_eq!(proxy.env().get("AWS_ENDPOINT_URL"), Some(proxy.endpoint()));
}

#[test]
fn proxy_slow_down_and_internal_error_are_seen_then_pass() {
    let d = Dir::new();
    let (_server, proxy, _up, via, data) = proxied(&d, 1000);
    proxy.slow_down(1);
    let err = via.get("bkt", "k").unwrap_err();
    assert!(err.contains("SlowDown"), "{err}");
    assert_eq!(via.get("bkt", "k").unwrap(), data);
    proxy.internal_error(2);
    for _ in 0..2 {
        let err = via.get("bkt", "k").unwrap_err();
        assert!(err.contains("InternalError"), "{err}");
    }
    // HEAD is no object read: untouched.
    proxy.slow_down(1);
    via.head("bkt", "k").unwrap();
    assert_eq!(proxy.fired(Fault::SlowDown), 1, "the HEAD used none");
    let statuses: Vec<u16> = proxy.requests().iter().map(|l| l.status).collect();
    assert_eq!(statuses, [503, 200, 500, 500, 200], "{statuses:?}");
    assert_eq!(proxy.fired(Fault::InternalError), 2);
}

#[test]
fn proxy_cut_and_short_bodies_end_early() {
    let d = Dir::new();
    let (_server, proxy, _up, via, data) = proxied(&d, 200_000);
    proxy.cut_body_after(1000, 1);
    let (got, err) = via.get_partial("bkt", "k");
    assert_eq!(got.len(), 1000, "{err:?}");
    assert_eq!(got, data[..1000]);
    assert!(err.is_some());
    proxy.short_body(1);
    let (got, err) = via.get_partial("bkt", "k");
    assert_eq!(got.len(), data.len() / 2, "{err:?}");
    assert_eq!(got, data[..data.len() / 2]);
    assert!(err.is_some());
    assert_eq!(via.get("bkt", "k").unwrap(), data, "one of each only");
    assert_eq!(
        (proxy.fired(Fault::CutBody), proxy.fired(Fault::ShortBody)),
        (1, 1)
    );
}

#[test]
fn proxy_override_header_is_seen() {
    let d = Dir::new();
    let (_server, proxy, _up, via, data) = proxied(&d, 20_000);
    let wrong = crc64nvme(b"not these bytes");
    proxy.override_header("bkt/k", "x-amz-checksum-crc64nvme", &wrong);
    proxy.override_header("bkt/k", "ETag", "\"feed\"");
    let head = via.head("bkt", "k").unwrap();
    assert_eq!(head.checksum("crc64nvme"), Some(wrong.as_str()));
    assert_eq!(head.e_tag.as_deref(), Some("\"feed\""));
    let err = via.get("bkt", "k").unwrap_err();
    assert!(err.to_lowercase().contains("checksum"), "{err}");
    assert_eq!(proxy.fired(Fault::Override), 4);
    proxy.clear();
    assert_eq!(via.get("bkt", "k").unwrap(), data);
}

#[test]
fn proxy_expiry_list_denial_and_latency() {
    let d = Dir::new();
    let (_server, proxy, _up, via, _data) = proxied(&d, 100);
    proxy.deny_list();
    let err = via.list("bkt", "").unwrap_err();
    assert!(err.contains("AccessDenied"), "{err}");
    via.head("bkt", "k").unwrap();
    proxy.latency(300);
    let t0 = std::time::Instant::now();
    via.head("bkt", "k").unwrap();
    assert!(t0.elapsed() >= std::time::Duration::from_millis(300));
    proxy.latency(0);
    proxy.expire_after(1);
    via.head("bkt", "k").unwrap();
    let err = via.get("bkt", "k").unwrap_err();
    assert!(err.contains("ExpiredToken"), "{err}");
    assert!(via.head("bkt", "k").is_err());
    assert_eq!(proxy.fired(Fault::DenyList), 1);
    assert_eq!(proxy.fired(Fault::Expired), 2);
    assert_eq!(proxy.fired(Fault::Latency), 1);
}

#[test]
fn proxy_replaces_an_object_during_a_get() {
    let d = Dir::new();
    let (_server, proxy, up, via, data) = proxied(&d, 300_000);
    let new = noise(1234, 6);
    proxy.replace_during_get("bkt/k", 4096, &new, &up);
    let during = via.get("bkt", "k").unwrap();
    assert_eq!(proxy.fired(Fault::OnGet), 1);
    // s3s-fs streams from the file it opened, which the upload replaced by a rename.
    assert_eq!(during, data, "s3s-fs sends the old object to the end");
    assert_eq!(via.get("bkt", "k").unwrap(), new);
}

/// moto answers the checksum each upload sent (CRC64NVME included) and honours If-Match.
#[test]
fn moto_put_head_checksums() {
    let Some(server) = S3Server::moto() else {
        return;
    };
    let up = Uploader::new(server.endpoint());
    up.create_bucket("bucket");
    let data = noise(100_000, 7);
    for c in [Checksum::Crc64Nvme, Checksum::Crc32, Checksum::Sha256] {
        let key = format!("{c:?}");
        up.put("bucket", &key, &data, c);
        let head = up.head("bucket", &key).unwrap();
        assert_eq!(
            head.checksum(c.header_name().unwrap()),
            c.value(&data).as_deref()
        );
        assert_eq!(up.get("bucket", &key).unwrap(), data);
    }
    let head = up.head("bucket", "Crc64Nvme").unwrap();
    assert_eq!(head.checksum("crc64nvme"), Some(crc64nvme(&data).as_str()));
    let etag = head.e_tag.clone().unwrap();
    let err = up
        .get_with("bucket", "Crc32", None, Some("\"x\""))
        .unwrap_err();
    assert!(err.contains("PreconditionFailed"), "{err}");
    let part = up.get_with("bucket", "Crc64Nvme", Some("bytes=0-9"), Some(&etag));
    assert_eq!(part.unwrap(), data[..10]);
}
