//! Tag files: decoding by the declared encoding, `bagit.txt`, `bag-info.txt` and manifests.

/// Decodes tag-file bytes in `encoding` (UTF-8, UTF-16 with or without BOM, ISO-8859-1; other
/// labels through encoding_rs). A UTF-8 BOM is tolerated here (bagit.txt is checked separately).
pub fn decode(bytes: &[u8], encoding: &str) -> Result<String, String> {
    let label = encoding.trim().to_ascii_lowercase();
    match label.as_str() {
        "utf-8" | "utf8" => {
            let b = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
            String::from_utf8(b.to_vec()).map_err(|e| format!("not valid UTF-8 ({e})"))
        }
        "iso-8859-1" | "iso8859-1" | "latin1" | "latin-1" | "iso_8859-1" => {
            Ok(bytes.iter().map(|&b| b as char).collect())
        }
        "utf-16" | "utf16" | "utf-16le" | "utf-16be" => {
            let (be, body) = if let Some(b) = bytes.strip_prefix(b"\xfe\xff") {
                (true, b)
            } else if let Some(b) = bytes.strip_prefix(b"\xff\xfe") {
                (false, b)
            } else {
                // No BOM: RFC 2781 says big-endian unless the label says otherwise.
                (label != "utf-16le", bytes)
            };
            if body.len() % 2 != 0 {
                return Err("odd number of bytes for UTF-16".into());
            }
            let units: Vec<u16> = body
                .chunks_exact(2)
                .map(|c| {
                    if be {
                        u16::from_be_bytes([c[0], c[1]])
                    } else {
                        u16::from_le_bytes([c[0], c[1]])
                    }
                })
                .collect();
            String::from_utf16(&units).map_err(|e| format!("not valid UTF-16 ({e})"))
        }
        _ => match encoding_rs::Encoding::for_label(label.as_bytes()) {
            Some(enc) => {
                let (s, _, bad) = enc.decode(bytes);
                if bad {
                    Err(format!("not valid {encoding}"))
                } else {
                    Ok(s.into_owned())
                }
            }
            None => Err(format!("unknown Tag-File-Character-Encoding '{encoding}'")),
        },
    }
}

/// Splits on LF, CRLF or CR (all allowed by RFC 8493).
pub fn lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\n' || b[i] == b'\r' {
            out.push(&text[start..i]);
            if b[i] == b'\r' && b.get(i + 1) == Some(&b'\n') {
                i += 1;
            }
            start = i + 1;
        }
        i += 1;
    }
    if start < b.len() {
        out.push(&text[start..]);
    }
    out
}

/// `Label: value` records with continuation lines (leading whitespace), in order.
pub fn parse_labels(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (i, line) in lines(text).into_iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            match out.last_mut() {
                Some((_, v)) => {
                    v.push(' ');
                    v.push_str(line.trim());
                }
                None => {
                    return Err(format!(
                        "line {}: continuation line before any label",
                        i + 1
                    ));
                }
            }
            continue;
        }
        let Some((k, v)) = line.split_once(':') else {
            return Err(format!("line {}: expected 'Label: value'", i + 1));
        };
        out.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok(out)
}

/// Why `label: value` cannot be written as a line of bag-info.txt and read back as given
/// ([`parse_labels`] splits lines at CR and LF, ends a label at its first `:`, and trims
/// both parts), or None when it can. The one rule for every label trawl writes: `--info`'s
/// (after trimming the blanks around each part) and a BagIt Profile's fixed values.
pub fn info_line_fault(label: &str, value: &str) -> Option<&'static str> {
    if label.trim().is_empty() {
        Some("the label is empty")
    } else if label.contains(['\n', '\r']) || value.contains(['\n', '\r']) {
        Some("it holds a line break, which would start another line of bag-info.txt")
    } else if label.contains(':') {
        Some("the label holds a ':', which would end it there")
    } else if label != label.trim() || value != value.trim() {
        Some("it begins or ends with white space, which bag-info.txt does not keep")
    } else {
        None
    }
}

/// One manifest line: digest and decoded path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestLine {
    /// Its number, from 1.
    pub line: usize,
    /// The digest as written.
    pub digest: String,
    /// The file's path as written (percent-encoded where RFC 8493 says).
    pub path: String,
}

/// Parses `checksum<whitespace>filepath` lines, percent-decoding paths. `HEX *name` (one space,
/// then `*`) is GNU's binary-mode marker, written by `md5sum -b` and tools that follow it: the
/// `*` is not part of the name (a name that starts with `*` is written after two spaces).
pub fn parse_manifest(text: &str) -> (Vec<ManifestLine>, Vec<(usize, String)>) {
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in lines(text).into_iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let t = line.trim_start();
        match t.find([' ', '\t']) {
            Some(sp) => {
                let digest = t[..sp].to_ascii_lowercase();
                let path = match t[sp..].strip_prefix(" *") {
                    Some(binary) => binary,
                    None => t[sp..].trim_start_matches([' ', '\t']),
                };
                // Trailing whitespace is part of no real path written by any BagIt tool, but a
                // CR left by a mixed line ending would be: strip only CR.
                if path.is_empty() {
                    errors.push((i + 1, "no file path after the digest".to_string()));
                } else {
                    entries.push(ManifestLine {
                        line: i + 1,
                        digest,
                        path: crate::decode_path(path),
                    });
                }
            }
            None => errors.push((i + 1, "expected 'CHECKSUM FILEPATH'".to_string())),
        }
    }
    (entries, errors)
}

/// Normalizes a manifest path: strips `./` prefixes; refuses absolute paths, `..`, `~` and
/// empty components (paths that would escape the bag). Whether a name stays beneath the bag is
/// trawl-read's one rule ([`trawl_read::plain_segments`]); the roots and `~` a BagIt tool on
/// another system would follow are refused here besides.
pub fn safe_path(p: &str) -> Result<String, String> {
    let mut s = p;
    while let Some(r) = s.strip_prefix("./") {
        s = r;
    }
    // A Windows root (a backslash, a drive letter) is absolute to a tool on Windows.
    if s.starts_with('\\') || (s.len() > 1 && s.as_bytes()[1] == b':') {
        return Err(format!("'{p}' is an absolute path"));
    }
    if s.starts_with('~') {
        return Err(format!("'{p}' starts with '~'"));
    }
    let Some(parts) = trawl_read::plain_segments(s.as_bytes()) else {
        // Absolute or holding `..`: which one, for the message.
        return Err(if s.starts_with('/') {
            format!("'{p}' is an absolute path")
        } else {
            format!("'{p}' contains '..'")
        });
    };
    if parts.is_empty() {
        return Err(format!("'{p}' names no file"));
    }
    // Cut from a `str` at `/`: each part is UTF-8 still.
    Ok(String::from_utf8_lossy(&parts.join(&b'/')).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings() {
        assert_eq!(decode(b"\xff\xfea\x00b\x00", "UTF-16").unwrap(), "ab");
        assert_eq!(decode(b"\x00a\x00b", "UTF-16").unwrap(), "ab");
        assert_eq!(decode(b"caf\xe9", "ISO-8859-1").unwrap(), "café");
        assert!(decode(b"caf\xe9", "UTF-8").is_err());
    }

    #[test]
    fn gnu_binary_marker_is_not_part_of_the_name() {
        let (e, errors) = parse_manifest("ab12 *data/a.txt\ncd34  *data/star\nef56\tdata/t\n");
        assert!(errors.is_empty(), "{errors:?}");
        let paths: Vec<&str> = e.iter().map(|l| l.path.as_str()).collect();
        assert_eq!(paths, ["data/a.txt", "*data/star", "data/t"]);
    }

    #[test]
    fn label_lines_and_continuations() {
        let l = parse_labels("A: 1\r\nB: two\n  lines\rC:3").unwrap();
        assert_eq!(
            l,
            vec![
                ("A".into(), "1".into()),
                ("B".into(), "two lines".into()),
                ("C".into(), "3".into())
            ]
        );
    }

    #[test]
    fn unsafe_paths() {
        assert_eq!(safe_path("./data/x").unwrap(), "data/x");
        assert_eq!(safe_path("data//./x/").unwrap(), "data/x");
        for (bad, why) in [
            ("/etc/passwd", "is an absolute path"),
            ("./\\\\x", "is an absolute path"),
            ("C:x", "is an absolute path"),
            ("data/../../x", "contains '..'"),
            ("~/x", "starts with '~'"),
            ("../x", "contains '..'"),
            ("./.", "names no file"),
        ] {
            assert!(safe_path(bad).unwrap_err().ends_with(why), "{bad}");
        }
    }

    #[test]
    fn fetch_lines_give_items_under_data_and_name_every_line_refused() {
        let text = "http://a/x 12 data/x\n\
                    http://a/y - data/sub/y%0Az\n\
                    \n\
                    http://a/t 3 bagit.txt\n\
                    http://a/u 3 data/../../etc/passwd\n\
                    http://a/v lots data/v\n\
                    just-a-url\n";
        let (items, errors) = parse_fetch(text);
        assert_eq!(
            items,
            vec![
                FetchItem {
                    url: "http://a/x".into(),
                    length: Some(12),
                    path: "data/x".into()
                },
                FetchItem {
                    url: "http://a/y".into(),
                    length: None,
                    path: "data/sub/y\nz".into()
                },
            ]
        );
        let lines: Vec<usize> = errors.iter().map(|e| e.0).collect();
        assert_eq!(lines, [4, 5, 6, 7], "{errors:?}");
        assert!(errors[0].1.contains("outside data/"), "{errors:?}");
        assert!(errors[1].1.contains("'..'"), "{errors:?}");
        assert!(errors[2].1.contains("LENGTH 'lots'"), "{errors:?}");
        assert!(
            errors[3].1.contains("expected 'URL LENGTH FILENAME'"),
            "{errors:?}"
        );
    }

    #[test]
    fn manifest_lines_are_lowercased_decoded_and_numbered() {
        let (entries, errors) =
            parse_manifest("ABC  data/a%25b\r\n\r\n0f\tdata/t\r\nlonely\r\nff \r\n");
        assert_eq!(
            entries,
            vec![
                ManifestLine {
                    line: 1,
                    digest: "abc".into(),
                    path: "data/a%b".into()
                },
                ManifestLine {
                    line: 3,
                    digest: "0f".into(),
                    path: "data/t".into()
                },
            ]
        );
        assert_eq!(
            errors,
            vec![
                (4, "expected 'CHECKSUM FILEPATH'".to_string()),
                (5, "no file path after the digest".to_string())
            ]
        );
    }
}

/// One line of fetch.txt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchItem {
    /// Where the file is fetched from.
    pub url: String,
    /// Its length, when given (`-` is none).
    pub length: Option<u64>,
    /// Where it goes in the bag.
    pub path: String,
}

/// Parses fetch.txt (`URL LENGTH FILENAME` lines, LENGTH a number or `-`), in one pass over the
/// text: items whose path is safe and under `data/`, and a message per rejected line.
pub fn parse_fetch(text: &str) -> (Vec<FetchItem>, Vec<(usize, String)>) {
    let mut items = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in lines(text).into_iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut it = line.splitn(3, [' ', '\t']);
        match (it.next(), it.next(), it.next()) {
            (Some(_), Some(len), Some(_)) if len != "-" && len.parse::<u64>().is_err() => {
                errors.push((i + 1, format!("LENGTH '{len}' is neither a number nor '-'")))
            }
            (Some(url), Some(len), Some(path)) => {
                match safe_path(&crate::decode_path(path.trim_start())) {
                    Ok(p) if p.starts_with("data/") => items.push(FetchItem {
                        url: url.into(),
                        length: len.parse().ok(),
                        path: p,
                    }),
                    Ok(p) => errors.push((i + 1, format!("'{p}' is outside data/"))),
                    Err(m) => errors.push((i + 1, format!("unsafe path: {m}"))),
                }
            }
            _ => errors.push((i + 1, "expected 'URL LENGTH FILENAME'".to_string())),
        }
    }
    (items, errors)
}
