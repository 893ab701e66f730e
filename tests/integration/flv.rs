//! `trawl flv index`: table, JSON and errors through the binary.

use serde_json::Value;

use crate::util::Dir;

fn flv_with_keyframes() -> Vec<u8> {
    let mut v = b"FLV\x01\x01\x00\x00\x00\x09\x00\x00\x00\x00".to_vec();
    for (ts, key) in [(0u32, true), (40, false), (1000, true)] {
        let payload = [if key { 0x17 } else { 0x27 }, 1, 0, 0, 0, 7, 7];
        v.push(9);
        v.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
        v.extend_from_slice(&ts.to_be_bytes()[1..]);
        v.extend_from_slice(&[0, 0, 0, 0]);
        v.extend_from_slice(&payload);
        v.extend_from_slice(&(payload.len() as u32 + 11).to_be_bytes());
    }
    v
}

#[test]
fn index_prints_keyframes_and_json_and_refuses_non_flv() {
    let d = Dir::new();
    d.create(b"a.flv", &flv_with_keyframes());
    d.create(b"not.flv", b"<html>not a video</html>");
    let r = d.cmd().args(["flv", "index", "a.flv", "--stats"]).run();
    r.code(0);
    assert!(r.stdout.contains("2 keyframes, video avc"), "{}", r.stdout);
    assert!(r.stdout.contains("1.000 s  offset 57"), "{}", r.stdout);
    let r = d
        .cmd()
        .args(["flv", "index", "a.flv", "not.flv", "--json", "-"])
        .run();
    r.code(2);
    assert!(
        r.stderr.contains("not.flv: not an FLV file"),
        "{}",
        r.stderr
    );
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let f = &v["files"][0];
    assert_eq!(f["path"], "a.flv");
    assert_eq!(f["duration"], 1.0);
    assert_eq!(f["keyframes"][1]["time"], 1.0);
    assert_eq!(f["keyframes"][1]["offset"], 57);
}
