//! Which algorithm a digest length means when it fits several (read the first files and see),
//! and how an entry compares with what was read.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use trawl_digest::Algorithm;
use trawl_manifest::Entry;
use trawl_report::verify::VerifyState;
use trawl_stop::Stop;

use super::*;

/// How many listed files a probe reads at most.
pub(crate) const PROBE_FILES: usize = 3;

/// Which algorithm of `assumed`'s length the digests taken for it really are: the candidates
/// ([`trawl_manifest::same_length`]) are computed over the first few listed files that can be
/// read (at most [`PROBE_FILES`]), and the one matching most of them wins, `assumed` on a tie.
/// `None` when no file could be read. A real mismatch (corruption) matches no candidate and
/// leaves `assumed` in place, so that it is reported as FAILED.
pub(crate) fn probe(
    entries: &[Entry],
    assumed: Algorithm,
    root: &Path,
    confine: bool,
    stop: &Stop,
) -> Option<Algorithm> {
    use std::io::Read;
    let candidates = trawl_manifest::same_length(assumed.hex_len());
    let mut score = vec![0usize; candidates.len()];
    let mut read = 0;
    // Confined: opened as the read itself opens them, beneath the root.
    let mut beneath = confine
        .then(|| trawl_scan::RelativeEntries::open(root).ok())
        .flatten();
    for e in entries {
        if read == PROBE_FILES || stop.is_stopping() {
            break;
        }
        let Some((_, want)) = e.digests.iter().find(|(a, _)| *a == assumed) else {
            continue;
        };
        let name = strip_dot_slash(&e.path);
        if confine && leaves_root(name) {
            continue;
        }
        let path = root.join(OsStr::from_bytes(name));
        let mut hash_with = |algs: &[Algorithm]| -> Option<Vec<Vec<u8>>> {
            let opened = match beneath.as_mut() {
                None => trawl_read::open_for_read(&path),
                Some(b) => match b.entry_following_inside(name, &path, 0) {
                    Ok(f) => trawl_read::open_for_read_with((f.open.as_ref()?.0)(), &path),
                    Err(_) => return None,
                },
            };
            let mut f = opened.ok()?.file;
            let mut hashers: Vec<_> = algs.iter().map(|a| a.hasher()).collect();
            let mut buf = vec![0u8; 1 << 16];
            loop {
                match f.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => hashers.iter_mut().for_each(|h| h.update(&buf[..n])),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => return None,
                }
            }
            Some(hashers.into_iter().map(|h| h.finish()).collect())
        };
        // The usual algorithm alone first: a file it matches needs no other (a manifest of
        // that algorithm, the common case, costs one digest of the first files, not one per
        // algorithm of that length).
        let Some(first) = hash_with(&candidates[..1]) else {
            continue;
        };
        read += 1;
        if first[0] == *want {
            score[0] += 1;
            continue;
        }
        let Some(others) = hash_with(&candidates[1..]) else {
            continue;
        };
        for (i, d) in others.into_iter().enumerate() {
            if d == *want {
                score[i + 1] += 1;
            }
        }
    }
    if read == 0 {
        return None;
    }
    let best = (0..candidates.len()).max_by_key(|&i| (score[i], usize::MAX - i))?;
    Some(if score[best] > score[0] {
        candidates[best]
    } else {
        assumed
    })
}

/// A file read against its entry: the size first, then the first digest that differs.
pub(crate) fn compare(e: &Entry, rec: &trawl_scan::FileRecord) -> VerifyState {
    if let Some(sz) = e.size
        && sz != rec.size
    {
        return VerifyState::Failed(format!("size is {}, manifest says {sz}", rec.size));
    }
    for (alg, got) in rec.digests() {
        let want = e.digests.iter().find(|(a, _)| *a == alg).map(|(_, d)| d);
        if want.is_some_and(|w| *w != got) {
            return VerifyState::Failed(format!("{alg} differs"));
        }
    }
    VerifyState::Ok
}
