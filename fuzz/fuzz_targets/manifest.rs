//! The manifest reader (GNU, BSD tag and hashdeep formats, escaped names, NUL-terminated records)
//! on arbitrary bytes: never a panic, and every entry it reads is written back by the manifest
//! writer in its own format and read again to the same name and digest.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl_manifest::{Format, Style, detect_and_parse, write_manifest};

fuzz_target!(|data: &[u8]| {
    // The first byte picks the name hint, as a manifest's file name would.
    let (hint, body) = match data.split_first() {
        Some((h, rest)) => (
            ["SUMS", "x.b3", "x.xxh", "hashdeep.txt"][*h as usize % 4],
            rest,
        ),
        None => ("SUMS", data),
    };
    let Ok(parsed) = detect_and_parse(body, &[], hint) else {
        return;
    };
    for e in &parsed.entries {
        let Some(&(alg, ref digest)) = e.digests.first() else {
            continue;
        };
        // A NUL cannot be in a file name, and an empty name names no file.
        if e.path.is_empty() || e.path.contains(&0) {
            continue;
        }
        for zero in [false, true] {
            let one = trawl_manifest::Entry {
                path: e.path.clone(),
                size: None,
                digests: vec![(alg, digest.clone())],
                line: 0,
            };
            let mut out = Vec::new();
            let left = write_manifest(&mut out, &Format::Gnu(alg), &[one], Style { zero }, &[])
                .expect("writing to memory");
            assert!(left.is_empty());
            let again = detect_and_parse(&out, &[alg], hint).expect("our own output reads");
            assert!(again.errors.is_empty(), "{:?} from {:?}", again.errors, out);
            assert_eq!(again.entries.len(), 1, "{out:?}");
            assert_eq!(again.entries[0].path, e.path, "{out:?}");
            assert_eq!(again.entries[0].digests, vec![(alg, digest.clone())]);
        }
    }
});
