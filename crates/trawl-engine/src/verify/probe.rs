//! Which algorithm a digest length means when it fits several (read the first files and see),
//! and how an entry compares with what was read.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use trawl_digest::Algorithm;
use trawl_manifest::Entry;
use trawl_report::VerifyState;
use trawl_stop::Stop;

use super::*;

/// How many listed files a probe wants to see match before it settles.
pub(crate) const PROBE_MATCHES: usize = 3;
/// How many listed files a probe reads at most, matching or not.
pub(crate) const PROBE_READS: usize = 16;

/// What a probe found of the digests taken for one algorithm by their length alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Probed {
    /// The files that matched all match this algorithm (the one assumed, or another of its
    /// length).
    Settled(Algorithm),
    /// No algorithm is established: no file read matched any algorithm of that length, or
    /// files matched different ones.
    Unsettled {
        /// The listed files read.
        read: usize,
        /// The algorithms some file matched (several: the manifest mixes them).
        matched: Vec<Algorithm>,
    },
}

/// Which algorithm of `assumed`'s length the digests guessed to be `assumed`'s really are: the
/// candidates ([`trawl_manifest::same_length`]) are computed over the listed files of those
/// entries, in order, until [`PROBE_MATCHES`] of them have matched one, or [`PROBE_READS`] were
/// read, or `entries` end. The algorithm is settled only by files that match it: a file that
/// matches none (corrupt, or of an algorithm trawl lacks) settles nothing, so that no file is
/// FAILED by an algorithm no file showed.
pub(crate) fn probe(
    entries: &[Entry],
    assumed: Algorithm,
    root: &Path,
    confine: bool,
    stop: &Stop,
) -> Probed {
    let candidates = trawl_manifest::same_length(assumed.hex_len());
    let mut score = vec![0usize; candidates.len()];
    let (mut read, mut matched) = (0, 0);
    // Confined: opened as the read itself opens them, beneath the root.
    let mut beneath = confine
        .then(|| trawl_scan::RelativeEntries::open(root).ok())
        .flatten();
    for e in entries {
        if matched == PROBE_MATCHES || read == PROBE_READS || stop.is_stopping() {
            break;
        }
        if !e.guessed {
            continue;
        }
        let Some((_, want)) = e.digests.iter().find(|(a, _)| *a == assumed) else {
            continue;
        };
        let name = strip_dot_slash(&e.path);
        if confine && leaves_root(name) {
            continue;
        }
        let path = root.join(OsStr::from_bytes(name));
        let mut hash_with = |algs: &[Algorithm]| digests_of(beneath.as_mut(), name, &path, algs);
        // The usual algorithm alone first: a file it matches needs no other (a manifest of
        // that algorithm, the common case, costs one digest of the first files, not one per
        // algorithm of that length).
        let Some(first) = hash_with(&candidates[..1]) else {
            continue;
        };
        read += 1;
        if first[0] == *want {
            score[0] += 1;
            matched += 1;
            continue;
        }
        let Some(others) = hash_with(&candidates[1..]) else {
            continue;
        };
        for (i, d) in others.into_iter().enumerate() {
            if d == *want {
                score[i + 1] += 1;
                matched += 1;
            }
        }
    }
    verdict(&candidates, &score, read)
}

/// What a probe's scores settle: the one candidate some file matched, or none.
fn verdict(candidates: &[Algorithm], score: &[usize], read: usize) -> Probed {
    let found: Vec<Algorithm> = (0..candidates.len())
        .filter(|&i| score[i] > 0)
        .map(|i| candidates[i])
        .collect();
    match found[..] {
        [one] => Probed::Settled(one),
        _ => Probed::Unsettled {
            read,
            matched: found,
        },
    }
}

/// The digests of `algs` of the listed file `name` (at `path`), opened beneath the root where
/// confined (`beneath`) as the read itself opens it; None where it cannot be opened or read.
fn digests_of(
    beneath: Option<&mut trawl_scan::RelativeEntries>,
    name: &[u8],
    path: &Path,
    algs: &[Algorithm],
) -> Option<Vec<Vec<u8>>> {
    use std::io::Read;
    let opened = match beneath {
        None => trawl_read::open_for_read(path),
        Some(b) => match b.entry_following_inside(name, path, 0) {
            Ok(f) => trawl_read::open_for_read_with((f.open.as_ref()?.0)(), path),
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
}

/// Why an entry whose algorithm no probe settled is not verified (see [`probe`]).
pub(crate) fn unsettled_reason(assumed: Algorithm) -> String {
    format!(
        "no algorithm of its {} hex digits is established by the files: -d names it",
        assumed.hex_len()
    )
}

/// A file read against its entry: the size first, then the first digest that differs. A
/// digest whose algorithm was guessed and not settled ([`probe`]) is no ground for FAILED: a
/// match under it is OK, anything else NOT VERIFIED with `unsettled`'s reason.
pub(crate) fn compare(
    e: &Entry,
    rec: &trawl_scan::FileRecord,
    unsettled: &[(Algorithm, String)],
) -> VerifyState {
    if let Some(sz) = e.size
        && sz != rec.size
    {
        return VerifyState::Failed(format!("size is {}, manifest says {sz}", rec.size));
    }
    if let Some(why) = &e.unverifiable {
        return VerifyState::Unverified(why.clone());
    }
    let computed = rec.digests();
    let mut not_settled = None;
    for (alg, want) in &e.digests {
        let got = computed.iter().find(|(a, _)| a == alg).map(|(_, d)| d);
        let guessed = e
            .guessed
            .then(|| unsettled.iter().find(|(a, _)| a == alg))
            .flatten();
        match (got, guessed) {
            (Some(got), _) if want == got => {}
            (_, Some((_, why))) => not_settled = Some(why),
            (Some(_), None) => return VerifyState::Failed(format!("{alg} differs")),
            // Every algorithm an entry gives that is not left unsettled is computed.
            (None, None) => {
                return VerifyState::Unverified(format!("{alg} was not computed"));
            }
        }
    }
    match not_settled {
        Some(why) => VerifyState::Unverified(why.clone()),
        None => VerifyState::Ok,
    }
}
