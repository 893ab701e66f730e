//! Duplicate groups in fclones' report formats (its default text and its JSON), so that
//! `fclones remove`, `fclones link` or `fclones dedupe` can act on trawl's one read pass. Names
//! are written as fclones writes them: STFU8, which keeps names that are not UTF-8 exact.

use std::io::{self, Write};

use trawl_report::{DuplicateSummary, FileGroup};

/// The fclones version whose report layout these follow; fclones reads a text report only if
/// its first line names a version.
pub const FCLONES_FORMAT_VERSION: &str = "0.35.0";

/// What a report's header says besides the totals.
pub struct FclonesHeader<'a> {
    /// `2026-11-25 06:40:00.123 +0000` (text) form.
    pub timestamp_text: &'a str,
    /// RFC 3339 form (JSON).
    pub timestamp_rfc3339: &'a str,
    /// The fclones command that groups files as trawl did, one argument each: fclones reads
    /// its options back from a report (`fclones group ROOT... --hash-fn ...`).
    pub command: &'a [String],
    /// The working directory.
    pub base_dir: &'a [u8],
    /// The groups' counts.
    pub summary: &'a DuplicateSummary,
    /// trawl and how it was run, written as a comment line (text) that fclones skips.
    pub made_by: &'a str,
}

/// The groups, each handed to the callback in turn.
pub type FclonesGroups<'a> =
    dyn FnMut(&mut dyn FnMut(&FileGroup) -> io::Result<()>) -> io::Result<()> + 'a;

/// fclones' byte size (`ByteSize`'s decimal units: `6.3 KB`).
fn decimal(n: u64) -> String {
    const UNITS: [&str; 6] = ["KB", "MB", "GB", "TB", "PB", "EB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1000.0;
    let mut u = 0;
    while v >= 1000.0 && u < UNITS.len() - 1 {
        v /= 1000.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// Quotes an argument for a POSIX shell where it needs it (fclones splits the command line
/// back into words).
fn shell_word(a: &str) -> String {
    let plain = !a.is_empty()
        && a.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,+@%".contains(&b));
    if plain {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}

/// The default text report.
pub fn write_fclones_text(
    out: &mut dyn Write,
    h: &FclonesHeader<'_>,
    groups: &mut FclonesGroups<'_>,
) -> io::Result<()> {
    let s = h.summary;
    let command: Vec<String> = h.command.iter().map(|a| shell_word(a)).collect();
    writeln!(out, "# Report by fclones {FCLONES_FORMAT_VERSION}")?;
    writeln!(out, "# Timestamp: {}", h.timestamp_text)?;
    writeln!(out, "# Command: {}", command.join(" "))?;
    writeln!(out, "# Base dir: {}", stfu8::encode_u8(h.base_dir))?;
    writeln!(
        out,
        "# Total: {} B ({}) in {} files in {} groups",
        s.bytes,
        decimal(s.bytes),
        s.files,
        s.groups
    )?;
    writeln!(
        out,
        "# Redundant: {} B ({}) in {} files",
        s.redundant_bytes,
        decimal(s.redundant_bytes),
        s.redundant_files
    )?;
    writeln!(out, "# Missing: 0 B (0 B) in 0 files")?;
    writeln!(
        out,
        "# Made by {}, files compared by {}",
        h.made_by, s.algorithm
    )?;
    groups(&mut |g| {
        writeln!(
            out,
            "{}, {} B ({}) * {}:",
            hex_of(&g.digest),
            g.size,
            decimal(g.size),
            g.names.len()
        )?;
        for n in &g.names {
            writeln!(out, "    {}", stfu8::encode_u8(n))?;
        }
        Ok(())
    })
}

/// The JSON report (`fclones group --format json`), written group by group.
pub fn write_fclones_json(
    out: &mut dyn Write,
    h: &FclonesHeader<'_>,
    groups: &mut FclonesGroups<'_>,
) -> io::Result<()> {
    let s = h.summary;
    let header = serde_json::json!({
        "version": FCLONES_FORMAT_VERSION,
        "timestamp": h.timestamp_rfc3339,
        "command": h.command,
        "base_dir": stfu8::encode_u8(h.base_dir),
        "stats": {
            "group_count": s.groups,
            "total_file_count": s.files,
            "total_file_size": s.bytes,
            "redundant_file_count": s.redundant_files,
            "redundant_file_size": s.redundant_bytes,
            "missing_file_count": 0,
            "missing_file_size": 0,
        },
    });
    out.write_all(b"{\n  \"header\": ")?;
    serde_json::to_writer(&mut *out, &header)?;
    out.write_all(b",\n  \"groups\": [")?;
    let mut first = true;
    groups(&mut |g| {
        out.write_all(if first { b"\n    " } else { b",\n    " })?;
        first = false;
        let names: Vec<String> = g.names.iter().map(|n| stfu8::encode_u8(n)).collect();
        let v = serde_json::json!({
            "file_len": g.size,
            "file_hash": hex_of(&g.digest),
            "files": names,
        });
        serde_json::to_writer(&mut *out, &v)?;
        Ok(())
    })?;
    out.write_all(b"\n  ]\n}\n")
}

fn hex_of(d: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(d.len() * 2);
    for b in d {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_fclones_writes_them() {
        assert_eq!(decimal(999), "999 B");
        assert_eq!(decimal(16000), "16.0 KB");
        assert_eq!(decimal(6274), "6.3 KB");
        assert_eq!(decimal(2_500_000_000), "2.5 GB");
    }

    #[test]
    fn words_are_quoted_only_when_a_shell_would_split_them() {
        assert_eq!(shell_word("--duplicates"), "--duplicates");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn a_text_report_has_fclones_header_and_group_lines() {
        let summary = DuplicateSummary {
            algorithm: "sha256".into(),
            groups: 1,
            files: 2,
            bytes: 8,
            redundant_files: 1,
            redundant_bytes: 4,
            top: vec![],
        };
        let h = FclonesHeader {
            timestamp_text: "2026-11-25 06:40:00.123 +0000",
            timestamp_rfc3339: "2026-11-25T06:40:00.123Z",
            command: &["trawl".into(), "scan".into(), "a b".into()],
            base_dir: b"/base",
            summary: &summary,
            made_by: "trawl 0.1.0",
        };
        let g = FileGroup {
            size: 4,
            digest: vec![0xab, 0x01],
            names: vec![b"/x/a".to_vec(), b"/x/b\xff\n".to_vec()],
        };
        let mut out = Vec::new();
        write_fclones_text(&mut out, &h, &mut |f| f(&g)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "# Report by fclones 0.35.0\n# Timestamp: 2026-11-25 06:40:00.123 +0000\n\
             # Command: trawl scan 'a b'\n# Base dir: /base\n\
             # Total: 8 B (8 B) in 2 files in 1 groups\n# Redundant: 4 B (4 B) in 1 files\n\
             # Missing: 0 B (0 B) in 0 files\n# Made by trawl 0.1.0, files compared by sha256\n\
             ab01, 4 B (4 B) * 2:\n    /x/a\n    /x/b\\xFF\\n\n"
        );
        let mut out = Vec::new();
        write_fclones_json(&mut out, &h, &mut |f| f(&g)).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["header"]["stats"]["redundant_file_size"], 4);
        assert_eq!(v["groups"][0]["file_hash"], "ab01");
        assert_eq!(v["groups"][0]["files"][1], "/x/b\\xFF\\n");
    }
}
