//! The manifest reader (GNU, BSD tag and hashdeep formats, escaped names, NUL-terminated records)
//! on arbitrary bytes: never a panic, and every entry it reads is written back by the manifest
//! writer in its own format and read again to the same name and digest. The piecewise reader
//! (`verify`'s) reads the same bytes in small pieces, with one line made longer than its limit
//! when the input asks (the generator: a line of 1 MiB or more once made it spin), and must end
//! with what the whole-file reader found, that line refused by its number.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Write;
use trawl_manifest::{Format, MAX_LINE, Style, detect_and_parse, parse_pieces, write_manifest};

/// Reads `body` with `parse_pieces` in pieces of `piece` bytes; `long`: a line (by number) made
/// longer than MAX_LINE, which must be refused and left out.
fn pieces_agree(body: &[u8], hint: &str, piece: usize, long: Option<usize>) {
    let whole = detect_and_parse(body, &[], hint);
    let mut f = tempfile::tempfile().expect("a temporary file");
    f.write_all(body).expect("written");
    let (mut entries, mut errors) = (Vec::new(), Vec::new());
    let got = parse_pieces(&mut f, &[], hint, piece, &mut |e, r| {
        entries.extend(e);
        errors.extend(r);
        std::ops::ControlFlow::Continue(())
    });
    let (Ok(whole), Ok(_)) = (whole, got) else {
        return;
    };
    let refused: Vec<_> = errors
        .iter()
        .filter(|e| e.to_string().contains("longer than"))
        .cloned()
        .collect();
    match long {
        None => assert!(refused.is_empty(), "{refused:?}"),
        Some(n) => {
            assert_eq!(refused.len(), 1, "{refused:?}");
            assert!(refused[0].to_string().starts_with(&format!("line {n}:")), "{refused:?}");
        }
    }
    let keep = |line: usize| Some(line) != long;
    let want: Vec<_> = whole.entries.iter().filter(|e| keep(e.line)).collect();
    let got: Vec<_> = entries.iter().collect();
    assert_eq!(got, want, "piece {piece}");
}

fuzz_target!(|data: &[u8]| {
    // The piecewise reader: the second byte picks the piece size and whether a line is made
    // longer than the limit (its low bits then pick which).
    if let Some((&k, rest)) = data.split_first().and_then(|(_, r)| r.split_first()) {
        let hint = ["SUMS", "x.b3", "x.xxh", "hashdeep.txt"][data[0] as usize % 4];
        let piece = 1 + (k as usize & 0x3f) * 37;
        if k & 0xc0 != 0xc0 {
            pieces_agree(rest, hint, piece, None);
        } else {
            // The line that holds byte (k & 0x3f) of the input, padded past the limit.
            let at = (k as usize & 0x3f).min(rest.len());
            let mut long = rest[..at].to_vec();
            long.extend(std::iter::repeat_n(b'n', MAX_LINE + 1 + (k as usize & 0x0f)));
            long.extend_from_slice(&rest[at..]);
            let zero = long.last() == Some(&0) || (long.contains(&0) && !long.contains(&b'\n'));
            let sep = if zero { 0 } else { b'\n' };
            let line = rest[..at].iter().filter(|&&b| b == sep).count() + 1;
            let head = rest.strip_prefix(b"\xef\xbb\xbf").unwrap_or(rest);
            if !head.starts_with(b"%%%% HASHDEEP") {
                pieces_agree(&long, hint, piece.max(4096), Some(line));
            }
        }
    }

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
                ..trawl_manifest::Entry::default()
            };
            let mut out = Vec::new();
            let left = write_manifest(&mut out, &Format::Gnu(alg), &[one], Style { zero, ..Style::default() }, &[])
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
