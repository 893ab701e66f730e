//! One `Range: bytes=...` request header (RFC 9110 14.1.2), for whole-file requests.

/// What to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranged {
    /// No usable Range: the whole file (several ranges are answered this way too, as RFC 9110
    /// allows).
    Whole,
    /// Bytes `start..=end`.
    Part(u64, u64),
    /// 416: nothing of the file is in the range.
    Unsatisfiable,
}

/// The answer to a `Range` header (absent: the whole file) for a file of `size` bytes.
pub fn parse(header: Option<&str>, size: u64) -> Ranged {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else {
        return Ranged::Whole;
    };
    if spec.contains(',') {
        return Ranged::Whole;
    }
    let Some((a, b)) = spec.trim().split_once('-') else {
        return Ranged::Whole;
    };
    // Digits only: Rust's parser would also take `+1`, which RFC 9110 does not allow.
    let num = |s: &str| {
        let s = s.trim();
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u64>().ok())
            .flatten()
    };
    match (a.trim().is_empty(), num(a), num(b)) {
        // bytes=-N: the last N bytes.
        (true, _, Some(n)) if n > 0 && size > 0 => Ranged::Part(size.saturating_sub(n), size - 1),
        (true, _, Some(_)) => Ranged::Unsatisfiable,
        (true, _, None) => Ranged::Whole,
        (false, Some(s), _) if s >= size => Ranged::Unsatisfiable,
        (false, Some(s), None) if b.trim().is_empty() => Ranged::Part(s, size - 1),
        (false, Some(s), Some(e)) if e >= s => Ranged::Part(s, e.min(size - 1)),
        _ => Ranged::Whole,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_as_rfc_9110_reads_them() {
        assert_eq!(parse(None, 100), Ranged::Whole);
        assert_eq!(parse(Some("bytes=0-9"), 100), Ranged::Part(0, 9));
        assert_eq!(parse(Some("bytes=90-"), 100), Ranged::Part(90, 99));
        assert_eq!(parse(Some("bytes=90-500"), 100), Ranged::Part(90, 99));
        assert_eq!(parse(Some("bytes=-10"), 100), Ranged::Part(90, 99));
        assert_eq!(parse(Some("bytes=-500"), 100), Ranged::Part(0, 99));
        assert_eq!(parse(Some("bytes=100-"), 100), Ranged::Unsatisfiable);
        assert_eq!(parse(Some("bytes=-0"), 100), Ranged::Unsatisfiable);
        assert_eq!(parse(Some("bytes=5-2"), 100), Ranged::Whole);
        assert_eq!(parse(Some("bytes=0-1,5-6"), 100), Ranged::Whole);
        assert_eq!(parse(Some("items=0-1"), 100), Ranged::Whole);
        // Not valid byte ranges: ignored, the whole file is sent.
        assert_eq!(parse(Some("bytes=+1-2"), 100), Ranged::Whole);
        assert_eq!(parse(Some("bytes=1-+2"), 100), Ranged::Whole);
        assert_eq!(parse(Some("bytes=-+5"), 100), Ranged::Whole);
        assert_eq!(
            parse(Some("bytes=99999999999999999999-"), 100),
            Ranged::Whole
        );
        // An end past the file is clamped to its last byte.
        assert_eq!(parse(Some("bytes=50-100000"), 100), Ranged::Part(50, 99));
    }
}
