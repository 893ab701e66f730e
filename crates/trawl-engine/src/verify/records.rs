//! How an entry and a result are kept in a spool: a few varint-free fields in a byte record.

use trawl_manifest::Entry;
use trawl_report::{VerifyEntry, VerifyState};

/// An entry as a spool keeps it (the name is the key): line, size, digests, whether the
/// digest's algorithm was guessed, why it cannot be verified.
pub(crate) fn encode_entry(e: &Entry, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&(e.line as u64).to_le_bytes());
    match e.size {
        Some(s) => {
            out.push(1);
            out.extend_from_slice(&s.to_le_bytes());
        }
        None => out.push(0),
    }
    out.push(e.digests.len() as u8);
    for (a, d) in &e.digests {
        out.push(crate::records::algorithm_code(*a));
        out.push(d.len() as u8);
        out.extend_from_slice(d);
    }
    out.push(u8::from(e.guessed));
    if let Some(why) = &e.unverifiable {
        out.extend_from_slice(&(why.len() as u32).to_le_bytes());
        out.extend_from_slice(why.as_bytes());
    }
}

pub(crate) fn damaged() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "a spooled entry is damaged",
    )
}

pub(crate) fn decode_entry(name: &[u8], v: &[u8]) -> std::io::Result<Entry> {
    let mut r = Cursor(v);
    let line = u64::from_le_bytes(r.take(8)?.try_into().expect("8 bytes")) as usize;
    let size = match r.take(1)?[0] {
        1 => Some(u64::from_le_bytes(r.take(8)?.try_into().expect("8 bytes"))),
        _ => None,
    };
    let n = r.take(1)?[0];
    let mut digests = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let h = r.take(2)?;
        let a = crate::records::algorithm_of(h[0]).ok_or_else(damaged)?;
        let len = h[1] as usize;
        digests.push((a, r.take(len)?.to_vec()));
    }
    let guessed = r.take(1)?[0] == 1;
    let unverifiable = match r.0.len() {
        0 => None,
        _ => {
            let n = u32::from_le_bytes(r.take(4)?.try_into().expect("4 bytes")) as usize;
            Some(String::from_utf8_lossy(r.take(n)?).into_owned())
        }
    };
    Ok(Entry {
        path: name.to_vec(),
        size,
        digests,
        line,
        guessed,
        unverifiable,
    })
}

/// A result as the results spool keeps it (the line is the key): name, state, detail.
pub(crate) fn encode_result(name: &[u8], state: &VerifyState, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&(name.len() as u32).to_le_bytes());
    out.extend_from_slice(name);
    let (code, detail) = match state {
        VerifyState::Ok => (0u8, ""),
        VerifyState::Failed(d) => (1, d.as_str()),
        VerifyState::Missing => (2, ""),
        VerifyState::Unreadable(d) => (3, d.as_str()),
        VerifyState::Unverified(d) => (4, d.as_str()),
    };
    out.push(code);
    out.extend_from_slice(detail.as_bytes());
}

pub(crate) fn decode_result(v: &[u8]) -> std::io::Result<VerifyEntry> {
    let mut r = Cursor(v);
    let n = u32::from_le_bytes(r.take(4)?.try_into().expect("4 bytes")) as usize;
    let name = r.take(n)?.to_vec();
    let code = r.take(1)?[0];
    let detail = String::from_utf8_lossy(r.0).into_owned();
    let state = match code {
        0 => VerifyState::Ok,
        1 => VerifyState::Failed(detail),
        2 => VerifyState::Missing,
        4 => VerifyState::Unverified(detail),
        _ => VerifyState::Unreadable(detail),
    };
    Ok(VerifyEntry {
        name,
        line: 0,
        state,
    })
}

/// Reads a spooled value from the front.
pub(crate) struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    pub(crate) fn take(&mut self, n: usize) -> std::io::Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(damaged());
        }
        let (h, t) = self.0.split_at(n);
        self.0 = t;
        Ok(h)
    }
}
