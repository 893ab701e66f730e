//! The HTTP `Range` header and `?start=` parsers on arbitrary strings: never a panic, a range
//! always lies inside the file, and a start always resolves to a keyframe of the index or none.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl_serve::{Ranged, parse_range as parse};
use trawl_serve::{Start, keyframe_for, parse_start};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    for size in [0u64, 1, 100, u64::MAX] {
        match parse(Some(s), size) {
            Ranged::Part(a, b) => assert!(a <= b && b < size, "{s:?} {size}: {a}-{b}"),
            Ranged::Whole | Ranged::Unsatisfiable => {}
        }
    }
    let idx = index();
    if let Some(start) = parse_start(s, &idx) {
        if let Start::Seconds(t) = start {
            assert!(t.is_finite() && t >= 0.0);
        }
        if let Some(k) = keyframe_for(start, &idx) {
            assert!(idx.keyframes.contains(&k));
        }
    }
});

/// A small real index: three keyframes at 0, 1 and 2 seconds.
fn index() -> trawl_media::FlvIndex {
    let mut v = b"FLV\x01\x01\x00\x00\x00\x09\x00\x00\x00\x00".to_vec();
    for (ts, key) in [(0u32, true), (500, false), (1000, true), (2000, true)] {
        let payload = [if key { 0x17 } else { 0x27 }, 1, 0, 0, 0, 7, 7];
        v.push(9);
        v.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
        v.extend_from_slice(&ts.to_be_bytes()[1..]);
        v.extend_from_slice(&[0, 0, 0, 0]);
        v.extend_from_slice(&payload);
        v.extend_from_slice(&(payload.len() as u32 + 11).to_be_bytes());
    }
    trawl_media::index_bytes(std::path::Path::new("f.flv"), &v).expect("a valid FLV")
}
