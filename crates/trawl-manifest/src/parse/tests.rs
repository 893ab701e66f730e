//! The unit tests of `parse`.

use super::*;
use crate::{Style, write_manifest};

fn entry(path: &[u8]) -> Entry {
    let digests = [Algorithm::Md5, Algorithm::Sha256]
        .into_iter()
        .map(|a| (a, trawl_digest::digest(a, path)))
        .collect();
    Entry {
        path: path.to_vec(),
        size: Some(path.len() as u64),
        digests,
        ..Entry::default()
    }
}

#[test]
fn every_format_round_trips_awkward_names() {
    let names: Vec<&[u8]> = vec![
        b"a",
        b"sp ace",
        b"back\\slash",
        b"new\nline",
        b"cr\r",
        b"\xff\xfe",
        b"x) = y",
    ];
    let entries: Vec<Entry> = names.iter().map(|n| entry(n)).collect();
    for fmt in [Format::Gnu(Algorithm::Sha256), Format::Bsd(Algorithm::Md5)] {
        for zero in [false, true] {
            let mut out = Vec::new();
            write_manifest(
                &mut out,
                &fmt,
                &entries,
                Style {
                    zero,
                    ..Style::default()
                },
                &[],
            )
            .unwrap();
            let p = detect_and_parse(&out, &[], "").unwrap();
            assert!(p.errors.is_empty(), "{:?}", p.errors);
            assert_eq!(p.format, fmt);
            let got: Vec<&[u8]> = p.entries.iter().map(|e| &e.path[..]).collect();
            assert_eq!(got, names, "{fmt:?} zero={zero}");
        }
    }
    let hd: Vec<Entry> = entries
        .into_iter()
        .filter(|e| !e.path.contains(&b'\n') && !e.path.contains(&b'\r'))
        .collect();
    let mut out = Vec::new();
    let fmt = Format::Hashdeep(vec![Algorithm::Md5, Algorithm::Sha256]);
    write_manifest(&mut out, &fmt, &hd, Style::default(), &["comment".into()]).unwrap();
    let p = detect_and_parse(&out, &[], "").unwrap();
    assert_eq!(p.format, fmt);
    assert_eq!(p.entries.len(), hd.len());
    assert_eq!(p.entries[2].digests, hd[2].digests);
    assert_eq!(p.entries[2].size, hd[2].size);
}

#[test]
fn hashdeep_refuses_line_breaks() {
    let mut out = Vec::new();
    let fmt = Format::Hashdeep(vec![Algorithm::Md5]);
    let left = write_manifest(
        &mut out,
        &fmt,
        &[entry(b"a\nb"), entry(b"c")],
        Style::default(),
        &[],
    )
    .unwrap();
    assert_eq!(left, vec![b"a\nb".to_vec()]);
    assert_eq!(detect_and_parse(&out, &[], "").unwrap().entries.len(), 1);
}

#[test]
fn malformed_lines_are_named() {
    let good = format!("{}  ok\n", "a".repeat(64));
    let text = format!(
        "{good}garbage\n{}  short\n\\{}  bad\\q\n",
        "b".repeat(63),
        "c".repeat(64)
    );
    let p = detect_and_parse(text.as_bytes(), &[], "").unwrap();
    assert_eq!(p.entries.len(), 1);
    let lines: Vec<usize> = p
        .errors
        .iter()
        .map(|e| match e {
            ManifestError::Line { line, .. } => *line,
            _ => 0,
        })
        .collect();
    assert_eq!(lines, vec![2, 3, 4]);
}

#[test]
fn length_ambiguity_uses_preference_then_hint() {
    let text = format!("{}  f\n", "a".repeat(64));
    assert_eq!(
        detect_and_parse(text.as_bytes(), &[], "").unwrap().format,
        Format::Gnu(Algorithm::Sha256)
    );
    assert_eq!(
        detect_and_parse(text.as_bytes(), &[], "x.b3")
            .unwrap()
            .format,
        Format::Gnu(Algorithm::Blake3)
    );
    assert_eq!(
        detect_and_parse(text.as_bytes(), &[Algorithm::Blake3], "")
            .unwrap()
            .format,
        Format::Gnu(Algorithm::Blake3)
    );
}

#[test]
fn pieces_read_what_the_whole_reads_with_the_same_line_numbers() {
    use std::io::Write;
    let mut text = Vec::new();
    for i in 0..500u32 {
        let name = format!("dir/file {i}");
        match i % 5 {
            0 => text.extend_from_slice(b"# a comment\n"),
            1 => text.extend_from_slice(b"not a line\r\n"),
            _ => {}
        }
        let d = trawl_digest::digest(Algorithm::Sha256, name.as_bytes());
        writeln!(text, "{}  {name}", hex::encode(d)).unwrap();
    }
    let mut hd = b"%%%% HASHDEEP-1.0\n%%%% size,md5,filename\n## x\n".to_vec();
    for i in 0..300u32 {
        let d = trawl_digest::digest(Algorithm::Md5, &i.to_le_bytes());
        writeln!(hd, "{i},{},f{i}", hex::encode(d)).unwrap();
    }
    for data in [text, hd] {
        let whole = detect_and_parse(&data, &[], "").unwrap();
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&data).unwrap();
        for piece in [100, 4096, 1 << 20] {
            let (mut entries, mut errors) = (Vec::new(), Vec::new());
            let sum = parse_pieces(&mut f, &[], "", piece, &mut |e, r| {
                entries.extend(e);
                errors.extend(r);
                std::ops::ControlFlow::Continue(())
            })
            .unwrap()
            .continue_value()
            .unwrap();
            assert_eq!(entries, whole.entries, "piece {piece}");
            assert_eq!(errors, whole.errors, "piece {piece}");
            assert_eq!(sum.format, whole.format);
        }
    }
}

/// Lines at, under and over MAX_LINE, NUL- and newline-separated, in pieces smaller and
/// larger than a line: each ends, the over-long one is refused by number, and the line
/// after it still parses at its own number.
#[test]
fn a_line_over_the_limit_is_refused_and_reading_goes_on() {
    use std::io::Write;
    let good = hex::encode(trawl_digest::digest(Algorithm::Sha256, b"x"));
    for zero in [false, true] {
        let sep = if zero { 0u8 } else { b'\n' };
        for len in [MAX_LINE - 1, MAX_LINE, MAX_LINE + 1, 3 * MAX_LINE + 17] {
            // `HASH  NAME`: the name fills the line to `len` bytes.
            let mut data = format!("{good}  a").into_bytes();
            data.push(sep);
            data.extend_from_slice(format!("{good}  ").as_bytes());
            data.resize(data.len() + len - 66, b'n');
            data.push(sep);
            data.extend_from_slice(format!("{good}  b").as_bytes());
            data.push(sep);
            let mut f = tempfile::tempfile().unwrap();
            f.write_all(&data).unwrap();
            for piece in [100, 64 << 10, 1 << 20, 8 << 20] {
                let (mut entries, mut errors) = (Vec::new(), Vec::new());
                parse_pieces(&mut f, &[], "", piece, &mut |e, r| {
                    entries.extend(e);
                    errors.extend(r);
                    std::ops::ControlFlow::Continue(())
                })
                .unwrap()
                .continue_value()
                .unwrap();
                let names: Vec<(usize, usize)> =
                    entries.iter().map(|e| (e.line, e.path.len())).collect();
                let why = format!("zero={zero} len={len} piece={piece}");
                if len <= MAX_LINE {
                    assert_eq!(names, [(1, 1), (2, len - 66), (3, 1)], "{why}");
                    assert!(errors.is_empty(), "{why}: {errors:?}");
                } else {
                    assert_eq!(names, [(1, 1), (3, 1)], "{why}");
                    assert_eq!(errors.len(), 1, "{why}");
                    assert_eq!(errors[0], ManifestError::TooLong { line: 2 }, "{why}");
                    assert!(
                        errors[0].to_string().contains("longer than 1048576 bytes"),
                        "{why}"
                    );
                }
            }
        }
    }
}

/// BLAKE2b, by -d or by the manifest's name, takes its length from the digest as `b2sum -c`
/// does: a length trawl computes is that algorithm, another one (72 bits) an entry that says
/// why it cannot be checked, by an untagged line or a `BLAKE2b-72` tag alike.
#[test]
fn blake2b_takes_its_length_from_the_digest() {
    let a128 = hex::encode(trawl_digest::digest(Algorithm::Blake2b128, b"a"));
    let text = format!(
        "{a128}  a\n{}  b\nBLAKE2b-72 (c) = {}\nBLAKE2b-128 (d) = {a128}\n",
        "ab".repeat(9),
        "cd".repeat(9)
    );
    for (prefer, hint) in [(&[Algorithm::Blake2b][..], "sums"), (&[], "B2SUMS")] {
        let p = detect_and_parse(text.as_bytes(), prefer, hint).unwrap();
        assert!(p.errors.is_empty(), "{:?}", p.errors);
        let got: Vec<_> = p
            .entries
            .iter()
            .map(|e| (e.digests.first().map(|d| d.0), e.unverifiable.is_some()))
            .collect();
        assert_eq!(
            got,
            [
                (Some(Algorithm::Blake2b128), false),
                (None, true),
                (None, true),
                (Some(Algorithm::Blake2b128), false),
            ]
        );
        assert!(
            p.entries[1]
                .unverifiable
                .as_deref()
                .unwrap()
                .starts_with("a BLAKE2b digest of 72 bits")
        );
        assert!(p.guessed.is_empty());
    }
    // Without either, 18 hex digits are no algorithm's: refused, saying what would read them.
    let p = detect_and_parse(text.as_bytes(), &[], "sums").unwrap();
    let ManifestError::Line { line: 2, reason } = &p.errors[0] else {
        panic!("{:?}", p.errors);
    };
    assert!(reason.contains("-d blake2b"), "{reason}");
    // An odd length is no BLAKE2b's either.
    let p = detect_and_parse(
        format!("{}  x\n", "a".repeat(17)).as_bytes(),
        &[Algorithm::Blake2b],
        "",
    )
    .unwrap();
    assert_eq!(p.entries.len(), 0);
    assert_eq!(p.errors.len(), 1);
}

/// `HEX (x) = ab` is read as `sha256sum -c` reads it: one space, so BSD `md5 -r`'s form, and the
/// name `(x) = ab`; a tag that is not hex and names no algorithm is still refused as a tag.
#[test]
fn a_hex_tag_is_the_digest_of_an_untagged_line() {
    let hex = hex::encode(trawl_digest::digest(Algorithm::Sha256, b"x"));
    for line in [format!("{hex} (x) = ab\n"), format!("{hex}  (x) = ab\n")] {
        let p = detect_and_parse(line.as_bytes(), &[], "").unwrap();
        assert!(p.errors.is_empty(), "{line}: {:?}", p.errors);
        assert_eq!(p.entries[0].path, b"(x) = ab");
        assert_eq!(p.entries[0].digests[0].0, Algorithm::Sha256);
        assert!(p.entries[0].guessed);
    }
    let p = detect_and_parse(format!("MD4 (x) = {hex}\n").as_bytes(), &[], "").unwrap();
    assert!(
        p.errors[0]
            .to_string()
            .contains("unknown algorithm tag 'MD4'"),
        "{:?}",
        p.errors
    );
}

/// A tagged line's digest in base64 (`cksum --base64`), where its length is that of the
/// algorithm's digest in padded base64.
#[test]
fn a_tagged_digest_may_be_base64() {
    let p = detect_and_parse(
        b"SHA256 (f) = 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n\
          SHA256 (g) = 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU\n",
        &[],
        "",
    )
    .unwrap();
    assert_eq!(
        p.entries[0].digests,
        [(
            Algorithm::Sha256,
            trawl_digest::digest(Algorithm::Sha256, b"")
        )]
    );
    assert_eq!(p.entries.len(), 1);
    assert!(
        p.errors[0].to_string().starts_with(
            "line 2: sha256 digest must have 64 hex digits (or 44 in base64), found 43"
        ),
        "{:?}",
        p.errors
    );
}

/// A caller's `Break` ends the reading at once and comes back as the `Break` it was, not as an
/// error: `on` is not called again.
#[test]
fn a_break_from_the_caller_ends_the_reading_as_a_break() {
    use std::io::Write;
    let good = hex::encode(trawl_digest::digest(Algorithm::Sha256, b"x"));
    let mut f = tempfile::tempfile().unwrap();
    for i in 0..1000 {
        writeln!(f, "{good}  f{i}").unwrap();
    }
    let mut calls = 0;
    let r = parse_pieces(&mut f, &[], "", 100, &mut |_, _| {
        calls += 1;
        std::ops::ControlFlow::Break(())
    })
    .unwrap();
    assert!(r.is_break());
    assert_eq!(calls, 1);
}

/// The CRCs S3 stores are named by a manifest's file name; `crc32c` is not read as `crc32`.
#[test]
fn the_s3_crcs_are_named_by_a_file_name() {
    assert_eq!(
        algorithms_named_in("files.crc64nvme"),
        [Algorithm::Crc64Nvme]
    );
    assert_eq!(algorithms_named_in("files.crc32"), [Algorithm::Crc32]);
    assert_eq!(algorithms_named_in("files.crc32c"), [Algorithm::Crc32c]);
}
