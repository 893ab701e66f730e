//! A payload manifest read into the bag's listing: its entries checked, a UTF-8 manifest read
//! in pieces cut at line ends (so its size is not bounded by memory), problem lines capped.

use std::io::Read;

use trawl_digest::Algorithm;
use trawl_report::BagFinding;
use trawl_spool::Spool;

use crate::payload::Spools;
use crate::tagfile::{self, ManifestLine};
use crate::{BagError, io_err};

use super::*;

/// A manifest entry as the bag may hold it: a safe path, a digest of the algorithm's form, a
/// payload manifest's path under `data/`; otherwise an error in `report` and None.
pub(crate) fn check_entry(
    name: &str,
    algorithm: Option<Algorithm>,
    is_tag: bool,
    mut e: ManifestLine,
    report: &mut Report,
) -> Option<ManifestLine> {
    match tagfile::safe_path(&e.path) {
        Ok(p) => {
            if let Some(a) = algorithm
                && (e.digest.len() != a.hex_len()
                    || !e.digest.bytes().all(|b| b.is_ascii_hexdigit()))
            {
                report.errors.push(BagFinding::at_line(
                    name,
                    e.line,
                    format!("'{}' is not a {a} digest", e.digest),
                ));
                return None;
            }
            if !is_tag && !p.starts_with("data/") {
                report.errors.push(BagFinding::at_line(
                    name,
                    e.line,
                    format!("'{p}' is outside the payload directory data/"),
                ));
                return None;
            }
            e.path = p;
            Some(e)
        }
        Err(m) => {
            report.errors.push(BagFinding::at_line(
                name,
                e.line,
                format!("unsafe path: {m}"),
            ));
            None
        }
    }
}

/// Where a payload manifest's entries go.
pub(crate) struct ListedSink<'a> {
    pub(crate) spool: &'a mut Spool,
    pub(crate) spools: &'a Spools,
    pub(crate) count: u64,
}

impl ListedSink<'_> {
    pub(crate) fn push(&mut self, slot: u32, e: &ManifestLine) -> Result<(), BagError> {
        self.spool
            .push(e.path.as_bytes(), &listed_value(slot, e.line, &e.digest))
            .map_err(self.spools.err())?;
        self.count += 1;
        Ok(())
    }
}

/// How much of a UTF-8 manifest is decoded and parsed at a time.
pub(crate) const PIECE: usize = 1 << 20;

/// Where a piece of manifest text may end: after its last line break (a CR only where the byte
/// after it is known, so that a CRLF is never cut in two).
pub(crate) fn piece_end(buf: &[u8]) -> Option<usize> {
    if let Some(i) = buf.iter().rposition(|&b| b == b'\n') {
        return Some(i + 1);
    }
    buf[..buf.len().saturating_sub(1)]
        .iter()
        .rposition(|&b| b == b'\r')
        .map(|i| i + 1)
}

/// Parses a payload manifest into `sink`, with its entries checked. A UTF-8 manifest (what RFC
/// 8493 bags declare) is read in pieces of [`PIECE`] bytes at line ends, so its size is not
/// bounded by memory; one in another encoding is read whole, within the tag-file cap. False: the
/// manifest is not valid in its encoding and is not part of the bag (said in `report`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn read_payload_manifest(
    tree: &dyn BagTree,
    name: &str,
    enc: &str,
    algorithm: Option<Algorithm>,
    slot: u32,
    sink: &mut ListedSink<'_>,
    report: &mut Report,
) -> Result<bool, BagError> {
    let bad = |e: String, report: &mut Report| {
        report.errors.push(BagFinding::about(
            name,
            format!("{e} (declared encoding {enc})"),
        ));
        Ok(false)
    };
    let mut problems = LineProblems::new(name);
    let mut take = |text: &str, base: usize, report: &mut Report| -> Result<(), BagError> {
        let (entries, errors) = tagfile::parse_manifest(text);
        for (line, e) in errors {
            problems.push(report, base + line, e);
        }
        for mut e in entries {
            e.line += base;
            if let Some(e) = check_entry(name, algorithm, false, e, report) {
                sink.push(slot, &e)?;
            }
        }
        Ok(())
    };
    let read = if !is_utf8(enc) {
        let raw = read_tag(tree, name)?.unwrap_or_default();
        match tagfile::decode(&raw, enc) {
            Ok(text) => {
                take(&text, 0, report)?;
                Ok(())
            }
            Err(e) => Err(e),
        }
    } else {
        read_utf8_pieces(tree, name, &mut |t, base| take(t, base, report))?
    };
    problems.finish(report);
    match read {
        Ok(()) => Ok(true),
        Err(e) => bad(e, report),
    }
}

pub(crate) fn is_utf8(enc: &str) -> bool {
    matches!(enc.trim().to_ascii_lowercase().as_str(), "utf-8" | "utf8")
}

/// Problem lines shown per tag file; the rest are counted in one finding.
pub(crate) const LINE_PROBLEMS_SHOWN: usize = 100;

/// The problem lines of one tag file: the first [`LINE_PROBLEMS_SHOWN`] go into the report, the
/// rest are counted, so that a file of millions of bad lines costs one line of output each
/// for a hundred of them and a count.
pub(crate) struct LineProblems {
    pub(crate) name: String,
    pub(crate) shown: usize,
    pub(crate) more: u64,
}

impl LineProblems {
    pub(crate) fn new(name: &str) -> LineProblems {
        LineProblems {
            name: name.to_string(),
            shown: 0,
            more: 0,
        }
    }

    pub(crate) fn push(&mut self, report: &mut Report, line: usize, msg: String) {
        let name = self.name.clone();
        self.add(&mut report.errors, || BagFinding::at_line(name, line, msg));
    }

    /// A fetch.txt item whose path no payload manifest lists.
    pub(crate) fn not_listed(&mut self, errors: &mut Vec<BagFinding>, path: &[u8]) {
        let name = self.name.clone();
        self.add(errors, || {
            BagFinding::about(
                name,
                format!(
                    "'{}' is in no payload manifest",
                    String::from_utf8_lossy(path)
                ),
            )
        });
    }

    pub(crate) fn add(
        &mut self,
        errors: &mut Vec<BagFinding>,
        finding: impl FnOnce() -> BagFinding,
    ) {
        if self.shown < LINE_PROBLEMS_SHOWN {
            self.shown += 1;
            errors.push(finding());
        } else {
            self.more += 1;
        }
    }

    pub(crate) fn finish(self, report: &mut Report) {
        self.finish_into(&mut report.errors);
    }

    pub(crate) fn finish_into(self, errors: &mut Vec<BagFinding>) {
        if self.more > 0 {
            errors.push(BagFinding::about(
                &self.name,
                format!(
                    "{} more problem lines like those above (the first {LINE_PROBLEMS_SHOWN} are shown)",
                    self.more
                ),
            ));
        }
    }
}

/// Reads up to [`PIECE`] more bytes of `file` onto `buf`; whether the file has ended.
fn read_piece(file: &mut dyn Read, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    let old = buf.len();
    buf.resize(old + PIECE, 0);
    let mut got = 0;
    let mut eof = false;
    while old + got < buf.len() {
        match file.read(&mut buf[old + got..]) {
            Ok(0) => {
                eof = true;
                break;
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(old + got);
    Ok(eof)
}

/// Reads the UTF-8 tag file `name` in pieces of [`PIECE`] bytes cut at line ends, handing each
/// piece's text to `take` with the number of lines before it. `Ok(Err(why))`: the file is not
/// valid UTF-8, or holds a line over 4 pieces. No file: nothing is read.
pub(crate) fn read_utf8_pieces(
    tree: &dyn BagTree,
    name: &str,
    take: &mut dyn FnMut(&str, usize) -> Result<(), BagError>,
) -> Result<Result<(), String>, BagError> {
    let p = tree.root().join(name);
    let Some(mut file) = tree.open_tag(name)? else {
        return Ok(Ok(()));
    };
    let mut buf: Vec<u8> = Vec::with_capacity(PIECE);
    let mut base = 0usize;
    let mut first = true;
    let mut eof = false;
    loop {
        if !eof {
            eof = read_piece(&mut *file, &mut buf).map_err(io_err(&p))?;
        }
        let cut = if eof {
            buf.len()
        } else {
            match piece_end(&buf) {
                Some(c) => c,
                None if buf.len() > 4 * PIECE => {
                    return Ok(Err(format!("a line longer than {} MiB", (4 * PIECE) >> 20)));
                }
                None => continue,
            }
        };
        let piece = &buf[..cut];
        let text = if first {
            tagfile::decode(piece, "UTF-8")
        } else {
            std::str::from_utf8(piece)
                .map(str::to_string)
                .map_err(|e| format!("not valid UTF-8 ({e})"))
        };
        match text {
            Ok(text) => {
                take(&text, base)?;
                base += tagfile::lines(&text).len();
            }
            Err(e) => return Ok(Err(e)),
        }
        first = false;
        buf.drain(..cut);
        if eof && buf.is_empty() {
            return Ok(Ok(()));
        }
    }
}

#[cfg(test)]
mod piece_tests {
    use super::piece_end;

    #[test]
    fn a_piece_ends_after_its_last_line_break_and_never_inside_a_crlf() {
        assert_eq!(piece_end(b"a\nb\nc"), Some(4));
        assert_eq!(piece_end(b"a\r\nb\r\n"), Some(6));
        // A CR at the very end may be the first half of a CRLF: not cut there.
        assert_eq!(piece_end(b"a\rb\r"), Some(2));
        assert_eq!(piece_end(b"abc\r"), None);
        assert_eq!(piece_end(b"abc"), None);
    }
}
