//! hashdeep manifests: the column line, then CSV rows whose last column is the name.

use trawl_digest::Algorithm;

use super::{ParsedManifest, decode_hex, finish_name};
use crate::{Entry, Format, ManifestError};

/// A whole hashdeep manifest.
pub(super) fn parse_hashdeep(data: &[u8]) -> Result<ParsedManifest, ManifestError> {
    let mut h = Hashdeep::default();
    h.lines(data, 0)?;
    h.finish()
}

/// Rows of a hashdeep manifest, parsed a piece at a time (the column line comes first).
#[derive(Default)]
pub(super) struct Hashdeep {
    cols: Option<Vec<Option<Algorithm>>>,
    entries: Vec<Entry>,
    errors: Vec<ManifestError>,
}

impl Hashdeep {
    /// The entries and line errors made so far, taken.
    pub(super) fn take(&mut self) -> (Vec<Entry>, Vec<ManifestError>) {
        (
            std::mem::take(&mut self.entries),
            std::mem::take(&mut self.errors),
        )
    }

    /// Parses whole lines, the first being line `before + 1`: the column line, then rows
    /// (each an entry or a line error). Data before the column line ends the reading.
    pub(super) fn lines(&mut self, data: &[u8], before: usize) -> Result<(), ManifestError> {
        for (i, raw) in data.split(|&b| b == b'\n').enumerate() {
            let line_no = before + i + 1;
            let line = raw.strip_suffix(b"\r").unwrap_or(raw);
            if line.is_empty() || line.starts_with(b"##") || line == b"%%%% HASHDEEP-1.0" {
                continue;
            }
            if let Some(spec) = line.strip_prefix(b"%%%% ") {
                self.cols = Some(columns(spec, line_no)?);
                continue;
            }
            let Some(cols) = self.cols.as_ref() else {
                return Err(ManifestError::Line {
                    line: line_no,
                    reason: "hashdeep data before the column line".into(),
                });
            };
            match row(cols, line) {
                Ok(mut e) => {
                    e.line = line_no;
                    self.entries.push(e);
                }
                Err(reason) => self.errors.push(ManifestError::Line {
                    line: line_no,
                    reason,
                }),
            }
        }
        Ok(())
    }

    /// The manifest's format, once every row is read.
    pub(super) fn finish(self) -> Result<ParsedManifest, ManifestError> {
        let (entries, errors) = (self.entries, self.errors);
        let algs: Vec<Algorithm> = self
            .cols
            .unwrap_or_default()
            .into_iter()
            .flatten()
            .collect();
        if algs.is_empty() {
            return Err(ManifestError::Whole(
                "hashdeep manifest has no algorithm trawl can compute".into(),
            ));
        }
        Ok(ParsedManifest {
            format: Format::Hashdeep(algs),
            entries,
            errors,
            guessed: Vec::new(),
        })
    }
}

/// The algorithm of each digest column of a column line `size,ALG...,filename` (after its
/// `%%%% `); None for a column of an algorithm trawl does not compute (tiger, whirlpool).
fn columns(spec: &[u8], line_no: usize) -> Result<Vec<Option<Algorithm>>, ManifestError> {
    let spec = String::from_utf8_lossy(spec);
    let names: Vec<&str> = spec.split(',').map(str::trim).collect();
    if names.first() != Some(&"size") || names.last() != Some(&"filename") || names.len() < 3 {
        return Err(ManifestError::Line {
            line: line_no,
            reason: format!("hashdeep column line must be 'size,ALG...,filename', found '{spec}'"),
        });
    }
    Ok(names[1..names.len() - 1]
        .iter()
        .map(|n| n.parse().ok())
        .collect())
}

/// One row under the columns `cols`: its entry (line number 0: the caller knows it), or why
/// it cannot be read.
fn row(cols: &[Option<Algorithm>], line: &[u8]) -> Result<Entry, String> {
    let mut parts = line.splitn(cols.len() + 2, |&b| b == b',');
    let size = parts
        .next()
        .and_then(|s| std::str::from_utf8(s).ok())
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or("hashdeep row: bad size column")?;
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
    let path = match (bad, parts.next()) {
        (Some(b), _) => Err(b),
        (None, None) => Err("hashdeep row: no filename column".into()),
        (None, Some(n)) => finish_name(n, false),
    }?;
    Ok(Entry {
        path,
        size: Some(size),
        digests,
        ..Entry::default()
    })
}
