//! The BagIt tag-file reader (declared encodings, LF/CRLF/CR line ends, continuation lines,
//! percent-encoded manifest paths) on arbitrary bytes: never a panic, labels never hold a line
//! break, and every manifest path it accepts is one `safe_path` accepts unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl_bag::tagfile;

fuzz_target!(|data: &[u8]| {
    let (enc, body) = match data.split_first() {
        Some((e, rest)) => (
            [
                "UTF-8",
                "UTF-16",
                "UTF-16LE",
                "ISO-8859-1",
                "windows-1252",
                "bogus",
            ][*e as usize % 6],
            rest,
        ),
        None => ("UTF-8", data),
    };
    let Ok(text) = tagfile::decode(body, enc) else {
        return;
    };
    if let Ok(labels) = tagfile::parse_labels(&text) {
        for (k, v) in &labels {
            assert!(!k.contains(['\n', '\r']) && !v.contains(['\n', '\r']));
        }
    }
    let (entries, _) = tagfile::parse_manifest(&text);
    for e in entries {
        if let Ok(p) = tagfile::safe_path(&e.path) {
            assert!(
                !p.starts_with('/') && !p.split('/').any(|c| c == ".."),
                "{p}"
            );
            assert_eq!(tagfile::safe_path(&p).as_deref(), Ok(p.as_str()));
        }
    }
});
