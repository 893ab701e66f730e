//! Reading manifests, detecting their format.

use trawl_digest::Algorithm;

use crate::{Entry, Format, ManifestError};

mod digits;
mod hashdeep;
mod pieces;

use digits::{decode_digest, decode_hex};
use hashdeep::{Hashdeep, parse_hashdeep};
pub use pieces::{MAX_LINE, PiecesError, PiecesSummary, parse_pieces};

/// A manifest as read: its entries, its format, and the lines that could not be read.
#[derive(Debug, Clone)]
pub struct ParsedManifest {
    /// The format it is written in.
    pub format: Format,
    /// The entries read, in order.
    pub entries: Vec<Entry>,
    /// The lines that could not be read.
    pub errors: Vec<ManifestError>,
    /// Algorithms assumed from a digest's length alone (neither `-d` nor the manifest's name
    /// said which, and several algorithms have that length): a caller can check them against
    /// the files before trusting them (see [`same_length`]).
    pub guessed: Vec<Algorithm>,
}

/// The algorithms whose digests have this many hex digits, the usual one first.
pub fn same_length(hex_len: usize) -> Vec<Algorithm> {
    let mut v: Vec<Algorithm> = Algorithm::ALL
        .into_iter()
        .filter(|a| a.hex_len() == hex_len)
        .collect();
    if let Some(d) = default_for_length(hex_len) {
        v.retain(|a| *a != d);
        v.insert(0, d);
    }
    v
}

/// The algorithm a GNU line of this length is taken for when nothing says otherwise: what
/// coreutils' `*sum` tools write.
fn default_for_length(hex_len: usize) -> Option<Algorithm> {
    Some(match hex_len {
        8 => Algorithm::Crc32c,
        32 => Algorithm::Md5,
        40 => Algorithm::Sha1,
        56 => Algorithm::Sha224,
        64 => Algorithm::Sha256,
        96 => Algorithm::Sha384,
        128 => Algorithm::Sha512,
        _ => return None,
    })
}

/// The algorithm names looked for in a manifest's file name.
// Longer names first, so that `sha3-256` is not also read as `sha256`... and each match is
// blanked out before the shorter names are looked for.
const NAMES: [(&str, Algorithm); 24] = [
    ("sha3-224", Algorithm::Sha3_224),
    ("sha3_224", Algorithm::Sha3_224),
    ("sha3-256", Algorithm::Sha3_256),
    ("sha3_256", Algorithm::Sha3_256),
    ("sha3-384", Algorithm::Sha3_384),
    ("sha3_384", Algorithm::Sha3_384),
    ("sha3-512", Algorithm::Sha3_512),
    ("sha3_512", Algorithm::Sha3_512),
    ("blake2s", Algorithm::Blake2s),
    ("blake2b", Algorithm::Blake2b),
    ("blake3", Algorithm::Blake3),
    ("b2", Algorithm::Blake2b),
    ("b3", Algorithm::Blake3),
    ("xxh", Algorithm::Xxh3),
    ("sha224", Algorithm::Sha224),
    ("sha256", Algorithm::Sha256),
    ("sha384", Algorithm::Sha384),
    ("sha512", Algorithm::Sha512),
    ("sha1", Algorithm::Sha1),
    ("md5", Algorithm::Md5),
    ("crc32c", Algorithm::Crc32c),
    ("crc32", Algorithm::Crc32),
    ("crc64nvme", Algorithm::Crc64Nvme),
    ("sha3", Algorithm::Sha3_256),
];

/// The algorithms a manifest's file name names (`SHA256SUMS`, `B2SUMS`, `files.sha3-256`,
/// `checksums.b3`), in no particular order; empty when it names none. BLAKE2b stands for
/// every length of it (see [`detect_and_parse`]).
pub fn algorithms_named_in(name: &str) -> Vec<Algorithm> {
    let n = name.to_ascii_lowercase();
    let mut rest = n.clone();
    let mut out = Vec::new();
    for (token, alg) in NAMES {
        while let Some(i) = rest.find(token) {
            if !out.contains(&alg) {
                out.push(alg);
            }
            rest.replace_range(i..i + token.len(), &" ".repeat(token.len()));
        }
    }
    // `sm3` and SHA-512/256, as `cksum -a` and OpenSSL name them.
    for (token, alg) in [
        ("sm3", Algorithm::Sm3),
        ("512_256", Algorithm::Sha512_256),
        ("512-256", Algorithm::Sha512_256),
    ] {
        if n.contains(token) && !out.contains(&alg) {
            out.push(alg);
        }
    }
    // A bare `sha3` names the family: any of its lengths.
    if out.contains(&Algorithm::Sha3_256) && !n.contains("256") {
        for a in [
            Algorithm::Sha3_224,
            Algorithm::Sha3_384,
            Algorithm::Sha3_512,
        ] {
            if !out.contains(&a) {
                out.push(a);
            }
        }
    }
    out
}

/// Reads a manifest of any supported format. A GNU line's digest length is resolved by `prefer`
/// (`-d`) when given: a length none of those algorithms has is an error on that line. Else by
/// the algorithms the manifest's name names ([`algorithms_named_in`]): a length none of them has
/// is an error too. Else by what coreutils writes for that length ([`same_length`] lists the
/// others), and the algorithm goes into [`ParsedManifest::guessed`] (and the entry is marked
/// [`Entry::guessed`]) when another shares it. BLAKE2b, given or named, stands for every length
/// `b2sum -l N` writes (any multiple of 8 bits up to 512), taken from the digest as `b2sum -c`
/// takes it; a length trawl does not compute makes an entry with [`Entry::unverifiable`] set.
pub fn detect_and_parse(
    data: &[u8],
    prefer: &[Algorithm],
    name_hint: &str,
) -> Result<ParsedManifest, ManifestError> {
    let data = data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(data);
    if data.starts_with(b"%%%% HASHDEEP-1.0") {
        return parse_hashdeep(data);
    }
    // `sha256sum -z` ends every record, the last included, with NUL (names may hold line
    // breaks); a text manifest with a stray NUL stays a text manifest, and the line holding it
    // is refused by its number.
    let zero = data.last() == Some(&0) || (data.contains(&0) && !data.contains(&b'\n'));
    let named = algorithms_named_in(name_hint);
    let mut p = Text::default();
    p.lines(data, zero, prefer, &named, 0);
    p.finish()
}

/// Lines of a GNU or BSD manifest, parsed a piece at a time.
#[derive(Default)]
struct Text {
    entries: Vec<Entry>,
    errors: Vec<ManifestError>,
    format: Option<Format>,
    guessed: Vec<Algorithm>,
    /// Whether the untagged lines are in the form of BSD `md5 -r` (`HEX NAME`, one space), as
    /// the first untagged line decided; GNU refuses to mix the two forms.
    reversed: Option<bool>,
}

impl Text {
    /// The entries and line errors made so far, taken.
    fn take(&mut self) -> (Vec<Entry>, Vec<ManifestError>) {
        (
            std::mem::take(&mut self.entries),
            std::mem::take(&mut self.errors),
        )
    }

    /// Parses whole records (`data` split by the separator), the first being line `before + 1`.
    fn lines(
        &mut self,
        data: &[u8],
        zero: bool,
        prefer: &[Algorithm],
        named: &[Algorithm],
        before: usize,
    ) {
        let sep = if zero { 0u8 } else { b'\n' };
        for (i, raw) in data.split(|&b| b == sep).enumerate() {
            let line_no = before + i + 1;
            let line = if zero {
                raw
            } else {
                raw.strip_suffix(b"\r").unwrap_or(raw)
            };
            if line.is_empty() || (!zero && line.starts_with(b"#")) {
                continue;
            }
            match parse_line(line, zero, prefer, named, &mut self.reversed) {
                Ok((fmt, mut entry)) => {
                    if entry.guessed {
                        for (alg, _) in &entry.digests {
                            if !self.guessed.contains(alg) {
                                self.guessed.push(*alg);
                            }
                        }
                    }
                    if self.format.is_none() {
                        self.format = Some(fmt);
                    }
                    entry.line = line_no;
                    self.entries.push(entry);
                }
                Err(reason) => self.errors.push(ManifestError::Line {
                    line: line_no,
                    reason,
                }),
            }
        }
    }

    fn finish(self) -> Result<ParsedManifest, ManifestError> {
        let format = match self.format {
            Some(f) => f,
            None if self.errors.is_empty() => {
                return Err(ManifestError::Whole("no checksum lines found".into()));
            }
            None => Format::Gnu(Algorithm::Sha256),
        };
        Ok(ParsedManifest {
            format,
            entries: self.entries,
            errors: self.errors,
            guessed: self.guessed,
        })
    }
}

/// A line's format, and its entry (line number 0: the caller knows it).
type Parsed = (Format, Entry);

/// An entry of one digest.
fn entry(path: Vec<u8>, alg: Algorithm, digest: Vec<u8>, guessed: bool) -> Entry {
    Entry {
        path,
        digests: vec![(alg, digest)],
        guessed,
        ..Entry::default()
    }
}

/// An entry whose digest cannot be checked, and why.
fn unverifiable(path: Vec<u8>, why: String) -> Entry {
    Entry {
        path,
        unverifiable: Some(why),
        ..Entry::default()
    }
}

/// One line, in any form `sha256sum -c` (GNU coreutils) reads: `HEX  NAME` and `HEX *NAME`;
/// BSD `md5 -r`'s `HEX NAME` (one space; then a name's leading space or `*` is its own); tagged
/// `ALG (NAME) = HEX`, and OpenSSL's `ALG(NAME)= HEX`; each after any leading white space and a
/// `\` that says the name is escaped. `reversed`: the untagged form so far (see [`Text`]).
fn parse_line(
    line: &[u8],
    zero: bool,
    prefer: &[Algorithm],
    named: &[Algorithm],
    reversed: &mut Option<bool>,
) -> Result<Parsed, String> {
    let line = if zero {
        line
    } else {
        let ws = line
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
        &line[ws..]
    };
    let (escaped, body) = match line.strip_prefix(b"\\") {
        Some(rest) if !zero => (true, rest),
        _ => (false, line),
    };
    if let Some((tag, name, text)) = try_bsd(body)
        && let Some(parsed) = tagged(tag, name, text, escaped)?
    {
        return Ok(parsed);
    }
    let hex_end = body
        .iter()
        .position(|b| !b.is_ascii_hexdigit())
        .unwrap_or(body.len());
    if hex_end == 0 {
        return Err("not a checksum line (expected 'HEX  NAME' or 'ALG (NAME) = HEX')".into());
    }
    let rest = &body[hex_end..];
    let Some((b' ' | b'\t', after)) = rest.split_first() else {
        return Err(
            "malformed: the digest must be followed by two spaces (or ' *') and a name".into(),
        );
    };
    let name = untagged_name(after, reversed)?;
    let hex = std::str::from_utf8(&body[..hex_end]).expect("hex digits are ASCII");
    let name = finish_name(name, escaped)?;
    match resolve_algorithm(hex.len(), prefer, named)? {
        Resolved::Known(alg, guessed) => {
            let digest = decode_hex(hex, alg)?;
            Ok((Format::Gnu(alg), entry(name, alg, digest, guessed)))
        }
        Resolved::Unverifiable(why) => {
            Ok((Format::Gnu(Algorithm::Blake2b), unverifiable(name, why)))
        }
    }
}

/// A tagged line's entry; None when its tag is hex digits (GNU reads such a line as untagged).
fn tagged(tag: &str, name: &[u8], text: &str, escaped: bool) -> Result<Option<Parsed>, String> {
    if let Some(alg) = Algorithm::from_bsd_tag(tag) {
        let digest = decode_digest(text, alg)?;
        let name = finish_name(name, escaped)?;
        return Ok(Some((Format::Bsd(alg), entry(name, alg, digest, false))));
    }
    if let Some(bits) = blake2b_tag_bits(tag) {
        if !digits::fits(text, bits / 8) {
            return Err(format!(
                "a BLAKE2b-{bits} digest must have {} hex digits (or {} in base64), found {}",
                bits / 4,
                digits::base64_len(bits / 8),
                text.len()
            ));
        }
        let name = finish_name(name, escaped)?;
        let why = blake2b_unverifiable(bits);
        return Ok(Some((
            Format::Bsd(Algorithm::Blake2b),
            unverifiable(name, why),
        )));
    }
    // GNU takes a line for a tagged one only where it starts with an algorithm's name: a
    // "tag" of hex digits is the digest of an untagged line whose name holds `(` and `) =`
    // (`HEX (x) = ab`, BSD `md5 -r`'s one space), read as such.
    if !tag.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("unknown algorithm tag '{tag}'"));
    }
    Ok(None)
}

/// The name of an untagged line from what follows its digest's first blank. GNU's form has a
/// second space or a `*`; without one, the line is `md5 -r`'s form, and the first untagged
/// line decides which form the manifest is in (`reversed`).
fn untagged_name<'a>(after: &'a [u8], reversed: &mut Option<bool>) -> Result<&'a [u8], String> {
    let gnu = after.len() > 1 && matches!(after[0], b' ' | b'*');
    Ok(match (gnu, *reversed) {
        (true, Some(true)) => after,
        (true, _) => {
            *reversed = Some(false);
            &after[1..]
        }
        (false, Some(false)) => {
            return Err(
                "malformed: the digest must be followed by two spaces (or ' *') and a name, as on the lines before"
                    .into(),
            );
        }
        (false, _) => {
            *reversed = Some(true);
            after
        }
    })
}

fn names(algs: &[Algorithm]) -> String {
    algs.iter()
        .map(|a| format!("{a} ({} hex digits)", a.hex_len()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a GNU line's digest is.
enum Resolved {
    /// This algorithm's; whether it was guessed from the length among several.
    Known(Algorithm, bool),
    /// A BLAKE2b length trawl does not compute: why it cannot be checked.
    Unverifiable(String),
}

/// The BLAKE2b lengths trawl computes, longest first.
const BLAKE2B: [Algorithm; 6] = [
    Algorithm::Blake2b,
    Algorithm::Blake2b384,
    Algorithm::Blake2b256,
    Algorithm::Blake2b224,
    Algorithm::Blake2b160,
    Algorithm::Blake2b128,
];

/// Whether `b2sum -l N` writes digests of `len` hex digits: N a multiple of 8 up to 512.
fn is_blake2b_hex_len(len: usize) -> bool {
    len >= 2 && len.is_multiple_of(2) && len <= 128
}

/// The bits of a tag `BLAKE2b-N` (as `b2sum -l N --tag` writes it) that names no algorithm trawl
/// has: N a multiple of 8 up to 512, as `b2sum -c` accepts.
fn blake2b_tag_bits(tag: &str) -> Option<usize> {
    let bits: usize = tag
        .get(..8)
        .filter(|p| p.eq_ignore_ascii_case("blake2b-"))
        .and_then(|_| tag[8..].parse().ok())?;
    (bits > 0 && bits.is_multiple_of(8) && is_blake2b_hex_len(bits / 4)).then_some(bits)
}

/// Why a BLAKE2b digest of `bits` bits is not checked.
fn blake2b_unverifiable(bits: usize) -> String {
    let have: Vec<String> = BLAKE2B
        .iter()
        .rev()
        .map(|a| (a.output_len() * 8).to_string())
        .collect();
    let (last, rest) = have.split_last().expect("BLAKE2B is not empty");
    format!(
        "a BLAKE2b digest of {bits} bits: trawl computes BLAKE2b of {} and {last} bits only",
        rest.join(", ")
    )
}

/// The algorithm of `algs` whose digests have `len` hex digits. BLAKE2b among them stands for
/// each of its lengths, as `b2sum -c` takes the length from the digest: one trawl computes, or
/// else an unverifiable one; None when no algorithm of `algs` has that length.
fn pick(algs: &[Algorithm], len: usize) -> Option<Resolved> {
    let fits = |a: &&Algorithm| a.hex_len() == len;
    if let Some(a) = algs.iter().find(fits) {
        return Some(Resolved::Known(*a, false));
    }
    if !algs.contains(&Algorithm::Blake2b) {
        return None;
    }
    if let Some(a) = BLAKE2B.iter().find(fits) {
        return Some(Resolved::Known(*a, false));
    }
    is_blake2b_hex_len(len).then(|| Resolved::Unverifiable(blake2b_unverifiable(len * 4)))
}

/// Which algorithm a GNU line's digest of `len` hex digits is (see [`detect_and_parse`]).
fn resolve_algorithm(
    len: usize,
    prefer: &[Algorithm],
    named: &[Algorithm],
) -> Result<Resolved, String> {
    if !prefer.is_empty() {
        return pick(prefer, len).ok_or_else(|| {
            format!(
                "a digest of {len} hex digits cannot be {} as -d says",
                names(prefer)
            )
        });
    }
    if !named.is_empty() {
        return pick(named, len).ok_or_else(|| {
            format!(
                "a digest of {len} hex digits cannot be {} as the manifest's name says (-d names the algorithm)",
                names(named)
            )
        });
    }
    match default_for_length(len) {
        Some(a) => Ok(Resolved::Known(a, same_length(len).len() > 1)),
        None if is_blake2b_hex_len(len) => Err(format!(
            "a digest of {len} hex digits matches no known algorithm (b2sum -l {} writes such digests: -d blake2b reads them)",
            len * 4
        )),
        None => Err(format!(
            "a digest of {len} hex digits matches no known algorithm"
        )),
    }
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

/// A tagged line: `ALG (NAME) = DIGEST`, or OpenSSL's `ALG(NAME)= DIGEST`: the tag, an optional
/// space, `(`, the name up to the last `)`, white space around `=`, the digest in hex or base64
/// digits. (The name may itself hold `) = `: GNU splits at the last `)` too.)
fn try_bsd(body: &[u8]) -> Option<(&str, &[u8], &str)> {
    let open = body.iter().position(|&b| b == b'(')?;
    let tag = body[..open].strip_suffix(b" ").unwrap_or(&body[..open]);
    let tag = std::str::from_utf8(tag).ok()?;
    if tag.is_empty()
        || !tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'/')
    {
        return None;
    }
    let rest = &body[open + 1..];
    let close = rest.iter().rposition(|&b| b == b')')?;
    let ws = |s: &[u8]| s.iter().take_while(|b| matches!(b, b' ' | b'\t')).count();
    let after = &rest[close + 1..];
    let after = after[ws(after)..].strip_prefix(b"=")?;
    let text = std::str::from_utf8(&after[ws(after)..]).ok()?;
    let digit = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=');
    if text.is_empty() || !text.bytes().all(digit) {
        return None;
    }
    Some((tag, &rest[..close], text))
}

#[cfg(test)]
mod tests;
