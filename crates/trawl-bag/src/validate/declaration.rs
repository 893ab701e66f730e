//! `bagit.txt` against RFC 8493's form.

/// How `bagit.txt` departs from RFC 8493's form: exactly `BagIt-Version: M.N` then
/// `Tag-File-Character-Encoding: ENCODING`, one space after each colon and none before it, no
/// other line (line ends LF, CRLF or CR; a final line end is optional).
pub fn declaration_deviations(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text
        .split_inclusive(['\n', '\r'])
        .map(|l| l.trim_end_matches(['\n', '\r']))
        .filter(|l| !l.is_empty())
        .collect();
    let want = ["BagIt-Version", "Tag-File-Character-Encoding"];
    for (i, l) in lines.iter().enumerate() {
        let n = i + 1;
        let Some(expected) = want.get(i) else {
            out.push((n, format!("'{l}': bagit.txt must hold exactly two lines")));
            continue;
        };
        match l.split_once(':') {
            None => out.push((n, format!("'{l}': expected '{expected}: VALUE'"))),
            Some((label, value)) => {
                if label != *expected {
                    let found = label.trim();
                    if found == *expected {
                        out.push((n, format!("'{l}': no space may come before the colon")));
                    } else {
                        out.push((n, format!("'{found}' where '{expected}' must be")));
                    }
                }
                if !value.starts_with(' ') || value.starts_with("  ") || value.trim().is_empty() {
                    out.push((
                        n,
                        format!("'{l}': exactly one space must follow the colon, then the value"),
                    ));
                } else if i == 0 && !is_version(value.trim()) {
                    out.push((n, format!("'{}': the version must be M.N", value.trim())));
                }
            }
        }
    }
    if lines.len() < 2 {
        out.push((
            lines.len() + 1,
            "bagit.txt must hold BagIt-Version then Tag-File-Character-Encoding".into(),
        ));
    }
    out
}

pub(crate) fn is_version(v: &str) -> bool {
    v.split_once('.').is_some_and(|(m, n)| {
        !m.is_empty()
            && !n.is_empty()
            && m.bytes().all(|b| b.is_ascii_digit())
            && n.bytes().all(|b| b.is_ascii_digit())
    })
}
