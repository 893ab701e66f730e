//! A digest as a line writes it: hex digits, or padded base64 as `cksum --base64` writes it.

use trawl_digest::Algorithm;

/// The hex digits of a digest of `alg`, decoded; another length is refused.
pub(super) fn decode_hex(hex: &str, alg: Algorithm) -> Result<Vec<u8>, String> {
    if hex.len() != alg.hex_len() {
        return Err(format!(
            "{alg} digest must have {} hex digits, found {}",
            alg.hex_len(),
            hex.len()
        ));
    }
    hex::decode(hex).map_err(|e| format!("bad hex digest: {e}"))
}

/// The length of `bytes` bytes in padded base64.
pub(super) fn base64_len(bytes: usize) -> usize {
    bytes.div_ceil(3) * 4
}

/// A tagged line's digest of `alg`: its hex digits, or its base64 where the length is that of
/// `alg`'s digest in padded base64 (as `cksum -c` tells them apart: by the length).
pub(super) fn decode_digest(text: &str, alg: Algorithm) -> Result<Vec<u8>, String> {
    let n = alg.output_len();
    if text.len() == alg.hex_len() && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return decode_hex(text, alg);
    }
    if text.len() == base64_len(n) {
        return decode_base64(text, n);
    }
    Err(format!(
        "{alg} digest must have {} hex digits (or {} in base64), found {}",
        alg.hex_len(),
        base64_len(n),
        text.len()
    ))
}

/// Whether `text` has the length and the digits of a digest of `bytes` bytes, in hex or in
/// padded base64 (for a digest that is not computed, and so never decoded).
pub(super) fn fits(text: &str, bytes: usize) -> bool {
    (text.len() == bytes * 2 && text.bytes().all(|b| b.is_ascii_hexdigit()))
        || (text.len() == base64_len(bytes) && decode_base64(text, bytes).is_ok())
}

/// Padded base64 of `bytes` bytes (standard alphabet): the padding exactly as long as the
/// length needs, as `cksum -c` wants it, and the bits past the last byte zero, as every
/// encoder writes them (another text of the same bytes is refused, not read as them).
fn decode_base64(text: &str, bytes: usize) -> Result<Vec<u8>, String> {
    let pad = (3 - bytes % 3) % 3;
    let (body, tail) = text.as_bytes().split_at(text.len() - pad);
    if tail.iter().any(|&b| b != b'=') || body.contains(&b'=') {
        return Err(format!(
            "base64 digest of {bytes} bytes must end in {pad} '=' of padding"
        ));
    }
    let mut out = Vec::with_capacity(bytes);
    let (mut acc, mut held) = (0u32, 0u32);
    for &c in body {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return Err(format!("bad base64 digest: '{}'", c as char)),
        };
        acc = (acc << 6) | u32::from(v);
        held += 6;
        if held >= 8 {
            held -= 8;
            out.push((acc >> held) as u8);
            acc &= (1 << held) - 1;
        }
    }
    if acc != 0 {
        return Err("base64 digest has bits set past its last byte".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The empty input's digests, as Python's `base64.b64encode(hashlib.new(alg, b"").digest())`
    /// writes them: every padding length.
    #[test]
    fn base64_is_read_with_its_padding_and_nothing_else() {
        for (alg, b64) in [
            (Algorithm::Md5, "1B2M2Y8AsgTpgAmY7PhCfg=="),
            (Algorithm::Sha1, "2jmj7l5rSw0yVb/vlWAYkK/YBwk="),
            (
                Algorithm::Sha384,
                "OLBgp1GsljhM2TJ+sbHjaiH9txEUvgdDTAzHv2P24donTt6/529l+9Ua0vFImLlb",
            ),
        ] {
            let want = trawl_digest::digest(alg, b"");
            assert_eq!(decode_digest(b64, alg).unwrap(), want, "{alg}");
            assert_eq!(decode_digest(&hex::encode(&want), alg).unwrap(), want);
            assert!(fits(b64, alg.output_len()));
            if let Some(short) = b64.strip_suffix('=') {
                assert!(decode_digest(short, alg).is_err(), "{alg}: {short}");
                assert!(decode_digest(&format!("{short}A"), alg).is_err(), "{alg}");
            }
        }
        // `Bg==` is the canonical text of the byte 6; `Bh==` has a bit set past it.
        assert!(decode_base64("Bg==", 1).is_ok());
        assert!(decode_base64("Bh==", 1).is_err());
        assert!(decode_base64("B*==", 1).is_err());
    }
}
