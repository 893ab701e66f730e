//! Reading manifests, detecting their format.

use trawl_digest::Algorithm;

use crate::{Entry, Format, ManifestError};

/// A manifest as read: its entries, its format, and the lines that could not be read.
#[derive(Debug, Clone)]
pub struct ParsedManifest {
    pub format: Format,
    pub entries: Vec<Entry>,
    pub errors: Vec<ManifestError>,
}

/// Reads a manifest of any supported format. `prefer` resolves digest lengths shared by two
/// algorithms in GNU lines (32 hex: md5 or xxh3; 64 hex: sha256 or blake3); without it, the name
/// hint (`b3`/`blake3`/`xxh` in the manifest's file name) then md5 and sha256 are assumed.
pub fn detect_and_parse(
    data: &[u8],
    prefer: &[Algorithm],
    name_hint: &str,
) -> Result<ParsedManifest, ManifestError> {
    let data = data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(data);
    if data.starts_with(b"%%%% HASHDEEP-1.0") {
        return parse_hashdeep(data);
    }
    let zero = data.contains(&0);
    let sep = if zero { 0u8 } else { b'\n' };
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    let mut format: Option<Format> = None;
    for (i, raw) in data.split(|&b| b == sep).enumerate() {
        let line_no = i + 1;
        let line = if zero {
            raw
        } else {
            raw.strip_suffix(b"\r").unwrap_or(raw)
        };
        if line.is_empty() || (!zero && line.starts_with(b"#")) {
            continue;
        }
        match parse_line(line, zero, prefer, name_hint) {
            Ok((fmt, path, alg, digest)) => {
                if format.is_none() {
                    format = Some(fmt);
                }
                entries.push(Entry {
                    path,
                    size: None,
                    digests: vec![(alg, digest)],
                    line: line_no,
                });
            }
            Err(reason) => errors.push(ManifestError::Line {
                line: line_no,
                reason,
            }),
        }
    }
    let format = match format {
        Some(f) => f,
        None if errors.is_empty() => {
            return Err(ManifestError::Whole("no checksum lines found".into()));
        }
        None => Format::Gnu(Algorithm::Sha256),
    };
    Ok(ParsedManifest {
        format,
        entries,
        errors,
    })
}

type Parsed = (Format, Vec<u8>, Algorithm, Vec<u8>);

fn parse_line(line: &[u8], zero: bool, prefer: &[Algorithm], hint: &str) -> Result<Parsed, String> {
    let (escaped, body) = match line.strip_prefix(b"\\") {
        Some(rest) if !zero => (true, rest),
        _ => (false, line),
    };
    if let Some(p) = try_bsd(body) {
        let (tag, name, hex) = p;
        let alg =
            Algorithm::from_bsd_tag(tag).ok_or_else(|| format!("unknown algorithm tag '{tag}'"))?;
        let digest = decode_hex(hex, alg)?;
        let name = finish_name(name, escaped)?;
        return Ok((Format::Bsd(alg), name, alg, digest));
    }
    let hex_end = body
        .iter()
        .position(|b| !b.is_ascii_hexdigit())
        .unwrap_or(body.len());
    if hex_end == 0 {
        return Err("not a checksum line (expected 'HEX  NAME' or 'ALG (NAME) = HEX')".into());
    }
    let rest = &body[hex_end..];
    let name = match rest {
        [b' ', b' ' | b'*', name @ ..] => name,
        _ => {
            return Err(
                "malformed: the digest must be followed by two spaces (or ' *') and a name".into(),
            );
        }
    };
    let hex = std::str::from_utf8(&body[..hex_end]).expect("hex digits are ASCII");
    let alg = guess_algorithm(hex.len(), prefer, hint).ok_or_else(|| {
        format!(
            "a digest of {} hex digits matches no known algorithm",
            hex.len()
        )
    })?;
    let digest = decode_hex(hex, alg)?;
    Ok((Format::Gnu(alg), finish_name(name, escaped)?, alg, digest))
}

fn finish_name(name: &[u8], escaped: bool) -> Result<Vec<u8>, String> {
    let name = if escaped {
        crate::unescape_name(name)?
    } else {
        name.to_vec()
    };
    if name.is_empty() {
        return Err("empty file name".into());
    }
    if name.contains(&0) {
        return Err("NUL byte in file name".into());
    }
    Ok(name)
}

fn try_bsd(body: &[u8]) -> Option<(&str, &[u8], &str)> {
    // ALG (NAME) = HEX ; the name may itself contain ") = ", so split at the last one.
    let open = body.iter().position(|&b| b == b' ')?;
    let tag = std::str::from_utf8(&body[..open]).ok()?;
    if tag.is_empty() || !tag.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return None;
    }
    let rest = body[open..].strip_prefix(b" (")?;
    let close = rest.windows(4).rposition(|w| w == b") = ")?;
    let hex = std::str::from_utf8(&rest[close + 4..]).ok()?;
    if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some((tag, &rest[..close], hex))
}

fn guess_algorithm(hex_len: usize, prefer: &[Algorithm], hint: &str) -> Option<Algorithm> {
    if let Some(a) = prefer.iter().find(|a| a.hex_len() == hex_len) {
        return Some(*a);
    }
    let hint = hint.to_ascii_lowercase();
    Some(match hex_len {
        8 => Algorithm::Crc32c,
        32 if hint.contains("xxh") => Algorithm::Xxh3,
        32 => Algorithm::Md5,
        40 => Algorithm::Sha1,
        64 if hint.contains("b3") || hint.contains("blake3") => Algorithm::Blake3,
        64 => Algorithm::Sha256,
        128 => Algorithm::Sha512,
        _ => return None,
    })
}

fn decode_hex(hex: &str, alg: Algorithm) -> Result<Vec<u8>, String> {
    if hex.len() != alg.hex_len() {
        return Err(format!(
            "{alg} digest must have {} hex digits, found {}",
            alg.hex_len(),
            hex.len()
        ));
    }
    hex::decode(hex).map_err(|e| format!("bad hex digest: {e}"))
}

fn parse_hashdeep(data: &[u8]) -> Result<ParsedManifest, ManifestError> {
    let mut cols: Option<Vec<Option<Algorithm>>> = None;
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in data.split(|&b| b == b'\n').enumerate() {
        let line_no = i + 1;
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.is_empty() || line.starts_with(b"##") || line == b"%%%% HASHDEEP-1.0" {
            continue;
        }
        if let Some(spec) = line.strip_prefix(b"%%%% ") {
            let spec = String::from_utf8_lossy(spec);
            let names: Vec<&str> = spec.split(',').map(str::trim).collect();
            if names.first() != Some(&"size")
                || names.last() != Some(&"filename")
                || names.len() < 3
            {
                return Err(ManifestError::Line {
                    line: line_no,
                    reason: format!(
                        "hashdeep column line must be 'size,ALG...,filename', found '{spec}'"
                    ),
                });
            }
            // Columns of algorithms trawl does not compute (tiger, whirlpool) are kept as None.
            cols = Some(
                names[1..names.len() - 1]
                    .iter()
                    .map(|n| n.parse().ok())
                    .collect(),
            );
            continue;
        }
        let Some(cols) = cols.as_ref() else {
            return Err(ManifestError::Line {
                line: line_no,
                reason: "hashdeep data before the column line".into(),
            });
        };
        let mut parts = line.splitn(cols.len() + 2, |&b| b == b',');
        let size = parts
            .next()
            .and_then(|s| std::str::from_utf8(s).ok())
            .and_then(|s| s.parse::<u64>().ok());
        let Some(size) = size else {
            errors.push(ManifestError::Line {
                line: line_no,
                reason: "hashdeep row: bad size column".into(),
            });
            continue;
        };
        let mut digests = Vec::new();
        let mut bad = None;
        for col in cols {
            let Some(field) = parts.next() else {
                bad = Some("hashdeep row: too few columns".to_string());
                break;
            };
            if let Some(alg) = col {
                match std::str::from_utf8(field)
                    .map_err(|e| e.to_string())
                    .and_then(|h| decode_hex(h, *alg))
                {
                    Ok(d) => digests.push((*alg, d)),
                    Err(e) => bad = Some(format!("hashdeep row: {e}")),
                }
            }
        }
        let name = match (bad, parts.next()) {
            (Some(b), _) => Err(b),
            (None, None) => Err("hashdeep row: no filename column".into()),
            (None, Some(n)) => finish_name(n, false),
        };
        match name {
            Ok(path) => entries.push(Entry {
                path,
                size: Some(size),
                digests,
                line: line_no,
            }),
            Err(reason) => errors.push(ManifestError::Line {
                line: line_no,
                reason,
            }),
        }
    }
    let algs: Vec<Algorithm> = cols.unwrap_or_default().into_iter().flatten().collect();
    if algs.is_empty() {
        return Err(ManifestError::Whole(
            "hashdeep manifest has no algorithm trawl can compute".into(),
        ));
    }
    Ok(ParsedManifest {
        format: Format::Hashdeep(algs),
        entries,
        errors,
    })
}

#[cfg(test)]
mod tests {
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
            line: 0,
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
                write_manifest(&mut out, &fmt, &entries, Style { zero }, &[]).unwrap();
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
}
