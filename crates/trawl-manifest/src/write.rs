//! Writing manifests.

use std::io::{self, Write};

use trawl_digest::Algorithm;

use crate::{Entry, Format};

/// Why a manifest is not written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// Writing failed (the I/O error is also its source, so a caller walking the causes
    /// finds it: a broken pipe is told by its kind).
    #[error("{0}")]
    Io(#[from] io::Error),
    /// An entry lacks a digest the format writes (its caller sent an entry without it).
    #[error("no {algorithm} digest for {}", String::from_utf8_lossy(path))]
    NoDigest {
        /// The algorithm whose digest is missing.
        algorithm: Algorithm,
        /// The entry's path, as it would be written.
        path: Vec<u8>,
    },
}

/// Options for writing.
#[derive(Debug, Clone, Default)]
pub struct Style {
    /// NUL-terminated records, no escaping (like `sha256sum -z`).
    pub zero: bool,
    /// hashdeep names start with this directory and a `/`, as `hashdeep -r -l DIR` writes them
    /// (the entries' names are relative to it), so that hashdeep's audit of the manifest, run
    /// as hashdeep itself was, finds every file.
    pub hashdeep_base: Option<Vec<u8>>,
}

/// Writes `entries` (already sorted by the caller) in `format`. For hashdeep, `header_comment`
/// lines are written as `## ` comments. Returns the names left out because the format cannot
/// hold them (a line break in a hashdeep name), for the caller to report.
pub fn write_manifest(
    w: &mut dyn Write,
    format: &Format,
    entries: &[Entry],
    style: Style,
    header_comment: &[String],
) -> Result<Vec<Vec<u8>>, WriteError> {
    let mut m = ManifestWriter::begin(w, format, style, header_comment)?;
    for e in entries {
        m.entry(e)?;
    }
    Ok(m.finish())
}

/// A manifest written one entry at a time (entries come sorted from the caller), so that a
/// manifest of any length is written without holding its entries.
pub struct ManifestWriter<'a> {
    w: &'a mut dyn Write,
    format: &'a Format,
    style: Style,
    left_out: Vec<Vec<u8>>,
    /// A line is made here and written whole (one write and no allocation per entry).
    line: Vec<u8>,
}

impl<'a> ManifestWriter<'a> {
    /// Writes the header the format has (hashdeep's, with `header_comment` as `## ` lines).
    pub fn begin(
        w: &'a mut dyn Write,
        format: &'a Format,
        style: Style,
        header_comment: &[String],
    ) -> io::Result<ManifestWriter<'a>> {
        if let Format::Hashdeep(algs) = format {
            writeln!(w, "%%%% HASHDEEP-1.0")?;
            let cols: Vec<&str> = algs.iter().map(|a| a.name()).collect();
            writeln!(w, "%%%% size,{},filename", cols.join(","))?;
            for c in header_comment {
                writeln!(w, "## {}", escape_controls(c))?;
            }
            writeln!(w, "## ")?;
        }
        Ok(ManifestWriter {
            w,
            format,
            style,
            left_out: Vec::new(),
            line: Vec::new(),
        })
    }

    /// Writes one entry, or notes it as left out when the format cannot hold its name.
    pub fn entry(&mut self, e: &Entry) -> Result<(), WriteError> {
        let line = &mut self.line;
        line.clear();
        let end: &[u8] = if self.style.zero { b"\0" } else { b"\n" };
        match self.format {
            Format::Gnu(alg) | Format::Bsd(alg) => {
                let escape = !self.style.zero && crate::needs_escape(&e.path);
                let name = if escape {
                    std::borrow::Cow::Owned(crate::escape_name(&e.path))
                } else {
                    std::borrow::Cow::Borrowed(e.path.as_slice())
                };
                if escape {
                    line.push(b'\\');
                }
                if matches!(self.format, Format::Gnu(_)) {
                    push_hex(line, e, *alg)?;
                    line.extend_from_slice(b"  ");
                    line.extend_from_slice(&name);
                } else {
                    line.extend_from_slice(alg.bsd_tag().as_bytes());
                    line.extend_from_slice(b" (");
                    line.extend_from_slice(&name);
                    line.extend_from_slice(b") = ");
                    push_hex(line, e, *alg)?;
                }
                line.extend_from_slice(end);
            }
            Format::Hashdeep(algs) => {
                let base = self.style.hashdeep_base.as_deref().unwrap_or_default();
                if e.path.iter().chain(base).any(|&b| b == b'\n' || b == b'\r') {
                    self.left_out.push(e.path.clone());
                    return Ok(());
                }
                line.extend_from_slice(e.size.unwrap_or(0).to_string().as_bytes());
                for a in algs {
                    line.push(b',');
                    push_hex(line, e, *a)?;
                }
                line.push(b',');
                if let Some(base) = &self.style.hashdeep_base {
                    line.extend_from_slice(base);
                    line.push(b'/');
                }
                line.extend_from_slice(&e.path);
                line.push(b'\n');
            }
        }
        Ok(self.w.write_all(line)?)
    }

    /// The names left out, for the caller to report.
    pub fn finish(self) -> Vec<Vec<u8>> {
        self.left_out
    }
}

/// `s` with every control character (a line break above all) written as `\xNN`, and a
/// backslash as `\\`, so that a user's string in a header or comment line stays on that line
/// and cannot forge a record.
pub fn escape_controls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let mut b = [0u8; 4];
                for byte in c.encode_utf8(&mut b).bytes() {
                    out.push_str(&format!("\\x{byte:02x}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// Appends the entry's `alg` digest in lowercase hex to `line`.
fn push_hex(line: &mut Vec<u8>, e: &Entry, alg: Algorithm) -> Result<(), WriteError> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let (_, d) = e
        .digests
        .iter()
        .find(|(a, _)| *a == alg)
        .ok_or_else(|| WriteError::NoDigest {
            algorithm: alg,
            path: e.path.clone(),
        })?;
    line.extend(
        d.iter()
            .flat_map(|b| [HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_without_the_digest_is_a_typed_error_naming_its_path() {
        let e = Entry {
            path: b"dir/a".to_vec(),
            digests: vec![(Algorithm::Md5, vec![0; 16])],
            ..Entry::default()
        };
        let mut out = Vec::new();
        let err = write_manifest(
            &mut out,
            &Format::Gnu(Algorithm::Sha256),
            &[e],
            Style::default(),
            &[],
        )
        .unwrap_err();
        assert!(
            matches!(&err, WriteError::NoDigest { algorithm: Algorithm::Sha256, path } if path == b"dir/a"),
            "{err:?}"
        );
    }
}
