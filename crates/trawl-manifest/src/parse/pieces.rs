//! A manifest file of any length read in pieces of whole lines, parsed as the whole would be.

use trawl_digest::Algorithm;

use super::{Hashdeep, Text, algorithms_named_in};
use std::ops::ControlFlow;

use crate::{Entry, Format, ManifestError};

/// What [`parse_pieces`] learned of the whole manifest.
#[derive(Debug, Clone)]
pub struct PiecesSummary {
    /// The format it is written in.
    pub format: Format,
    /// As [`ParsedManifest::guessed`](super::ParsedManifest::guessed).
    pub guessed: Vec<Algorithm>,
}

/// Why [`parse_pieces`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum PiecesError {
    /// The manifest could not be read.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The manifest as a whole cannot be read.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
}

/// The longest manifest line [`parse_pieces`] reads, without its separator: far beyond any name
/// a file system opens (4096 bytes on Linux, four times that escaped), and a bound on what one
/// line can make it hold. A longer line is refused by its number and reading goes on after it.
pub const MAX_LINE: usize = 1 << 20;

/// A manifest's byte-order mark, left out where the first line starts.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// The first pass of [`parse_pieces`]: whether the file is a hashdeep manifest, and whether its
/// records end with NUL (as `detect_and_parse` decides it from the whole: the last byte, or NULs
/// and no line break).
fn kind_and_separator(f: &mut std::fs::File) -> std::io::Result<(bool, bool)> {
    use std::io::{Read, Seek};
    f.rewind()?;
    let (mut has_nl, mut has_nul, mut last) = (false, false, None);
    let mut head = Vec::new();
    let mut block = vec![0u8; 1 << 20];
    loop {
        let n = match f.read(&mut block) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let b = &block[..n];
        has_nl |= b.contains(&b'\n');
        has_nul |= b.contains(&0);
        last = b.last().copied();
        if head.len() < 32 {
            head.extend_from_slice(&b[..n.min(32 - head.len())]);
        }
    }
    let head = head.strip_prefix(BOM).unwrap_or(&head);
    let hashdeep = head.starts_with(b"%%%% HASHDEEP-1.0");
    let zero = !hashdeep && (last == Some(0) || (has_nul && !has_nl));
    Ok((hashdeep, zero))
}

/// Drops `buf` up to and with the line end at `end`, counting the line; or all of it when the
/// line goes on past it. Whether the line ended.
fn drop_line(buf: &mut Vec<u8>, end: Option<usize>, before: &mut usize) -> bool {
    match end {
        Some(p) => {
            buf.drain(..=p);
            *before += 1;
            true
        }
        None => {
            buf.clear();
            false
        }
    }
}

/// Reads from `f` until `buf` holds `want` bytes; false once the file has ended.
fn fill(f: &mut std::fs::File, buf: &mut Vec<u8>, want: usize) -> std::io::Result<bool> {
    use std::io::Read;
    while buf.len() < want {
        let start = buf.len();
        buf.resize(start + (want - start).max(64 << 10), 0);
        let n = loop {
            match f.read(&mut buf[start..]) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                r => break r?,
            }
        };
        buf.truncate(start + n);
        if n == 0 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Reads a manifest file of any length in pieces of about `piece` bytes (whole lines each),
/// parsed as [`detect_and_parse`](super::detect_and_parse) parses the whole, with the whole file's line numbers: `on`
/// gets each piece's entries and line errors in turn, so that a manifest of 10^8 lines is never
/// held. The file is read twice (first for the record separator, which the last byte decides).
/// `on` breaking ends the reading at once: `Ok(ControlFlow::Break(()))`.
pub fn parse_pieces(
    f: &mut std::fs::File,
    prefer: &[Algorithm],
    name_hint: &str,
    piece: usize,
    on: &mut dyn FnMut(Vec<Entry>, Vec<ManifestError>) -> ControlFlow<()>,
) -> Result<ControlFlow<(), PiecesSummary>, PiecesError> {
    use std::io::Seek;
    let (hashdeep, zero) = kind_and_separator(f)?;
    f.rewind()?;
    let piece = piece.clamp(1, MAX_LINE);
    let mut p = Pieces {
        sep: if zero { 0u8 } else { b'\n' },
        piece,
        buf: Vec::new(),
        before: 0,
        first: true,
        eof: false,
        want: piece,
        skipping: false,
        hashdeep,
        zero,
        prefer,
        named: algorithms_named_in(name_hint),
        text: Text::default(),
        hd: Hashdeep::default(),
        entries_seen: 0,
        errors_seen: 0,
    };
    // Until the end of the file, and every byte read before it taken.
    while !(p.eof && p.buf.is_empty()) {
        if p.step(f, on)?.is_break() {
            return Ok(ControlFlow::Break(()));
        }
    }
    p.finish().map(ControlFlow::Continue)
}

/// What [`parse_pieces`] holds between pieces: the bytes read and not yet parsed, where the
/// reading is, and the parser of the manifest's kind.
struct Pieces<'a> {
    /// The record separator: LF, or NUL (`sha256sum -z`).
    sep: u8,
    /// About how much is parsed at once.
    piece: usize,
    buf: Vec<u8>,
    /// The lines before `buf`'s first.
    before: usize,
    /// Whether `buf` starts at the file's start (where a BOM is left out).
    first: bool,
    eof: bool,
    /// How much to hold before parsing: a piece, or more while one line is longer than a piece.
    want: usize,
    /// Inside a line over MAX_LINE, refused already: its bytes are dropped up to its separator.
    skipping: bool,
    hashdeep: bool,
    zero: bool,
    prefer: &'a [Algorithm],
    named: Vec<Algorithm>,
    text: Text,
    hd: Hashdeep,
    entries_seen: usize,
    errors_seen: usize,
}

impl Pieces<'_> {
    /// Reads on, and hands `on` what is whole: a line refused for its length, or a piece's
    /// entries and line errors.
    fn step(
        &mut self,
        f: &mut std::fs::File,
        on: &mut dyn FnMut(Vec<Entry>, Vec<ManifestError>) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>, PiecesError> {
        self.eof |= !fill(f, &mut self.buf, self.want)?;
        let first_end = self.buf.iter().position(|&b| b == self.sep);
        if self.skipping {
            self.skipping = !drop_line(&mut self.buf, first_end, &mut self.before);
            self.want = self.piece;
            return Ok(ControlFlow::Continue(()));
        }
        // A line over the limit is refused by number, and reading goes on after it.
        if first_end.unwrap_or(self.buf.len()) > MAX_LINE {
            self.first = false;
            self.errors_seen += 1;
            let line = self.before + 1;
            if on(Vec::new(), vec![ManifestError::TooLong { line }]).is_break() {
                return Ok(ControlFlow::Break(()));
            }
            self.skipping = !drop_line(&mut self.buf, first_end, &mut self.before);
            self.want = self.piece;
            return Ok(ControlFlow::Continue(()));
        }
        // Whole lines only, unless this is the end.
        let upto = if self.eof {
            self.buf.len()
        } else {
            match self.buf.iter().rposition(|&b| b == self.sep) {
                Some(p) => p + 1,
                // One line longer than a piece: read on (up to MAX_LINE, checked above).
                None => {
                    self.want = self.buf.len() + self.piece;
                    return Ok(ControlFlow::Continue(()));
                }
            }
        };
        self.want = self.piece;
        self.parse(upto, on)
    }

    /// Parses `buf` up to `upto` (whole lines) and hands `on` the entries and line errors.
    fn parse(
        &mut self,
        upto: usize,
        on: &mut dyn FnMut(Vec<Entry>, Vec<ManifestError>) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>, PiecesError> {
        let mut data = &self.buf[..upto];
        if self.first {
            data = data.strip_prefix(BOM).unwrap_or(data);
            self.first = false;
        }
        if self.hashdeep {
            self.hd.lines(data, self.before)?;
        } else {
            self.text
                .lines(data, self.zero, self.prefer, &self.named, self.before);
        }
        let sep = self.sep;
        self.before += data.iter().filter(|&&b| b == sep).count();
        let (entries, errors) = if self.hashdeep {
            self.hd.take()
        } else {
            self.text.take()
        };
        self.entries_seen += entries.len();
        self.errors_seen += errors.len();
        if on(entries, errors).is_break() {
            return Ok(ControlFlow::Break(()));
        }
        self.buf.drain(..upto);
        Ok(ControlFlow::Continue(()))
    }

    /// What the whole manifest was, once every piece is parsed.
    fn finish(mut self) -> Result<PiecesSummary, PiecesError> {
        if self.hashdeep {
            let p = self.hd.finish()?;
            return Ok(PiecesSummary {
                format: p.format,
                guessed: Vec::new(),
            });
        }
        let format = match self.text.format.take() {
            Some(f) => f,
            None if self.errors_seen == 0 && self.entries_seen == 0 => {
                return Err(ManifestError::Whole("no checksum lines found".into()).into());
            }
            None => Format::Gnu(Algorithm::Sha256),
        };
        Ok(PiecesSummary {
            format,
            guessed: self.text.guessed,
        })
    }
}
