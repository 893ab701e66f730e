//! A verdict per file from what its store holds of it (a no-download audit): the store's own
//! checksums of the whole content compared with the digests registered from a read, algorithm
//! by algorithm. Nothing is read, so nothing of the registration changes (its last
//! verification least of all) but the state of a file found corrupt.

use trawl_digest::Algorithm;

use super::Audit;
use crate::verdict::Verdict;
use crate::{Result, split_digests};

/// What a file's store holds of it now: its size and time, its checksums of the whole
/// content by algorithm, and what else it holds that is no digest of the whole content (each
/// in a few words, for a verdict that compares nothing).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Held<'a> {
    pub(crate) size: u64,
    pub(crate) mtime_ns: i64,
    pub(crate) checksums: &'a [(Algorithm, Vec<u8>)],
    pub(crate) withheld: &'a [String],
}

/// The verdict on a registered file (its size, mtime and digests, concatenated in `algs`'
/// order) from what its store holds now, and what its event says:
/// - size or time changed: modified, as a metadata-only audit says it (nothing compared);
/// - a checksum of an algorithm the file has a registered digest of, and different: corrupt,
///   naming the algorithm and both values;
/// - else one such checksum, and equal: ok, naming the algorithms that agree;
/// - else (none in common): uncompared, saying what the store holds.
pub(crate) fn judge(
    registered: (i64, i64, &[u8]),
    algs: &[Algorithm],
    held: Held<'_>,
) -> (Verdict, String) {
    let (size, mtime_ns, digests) = registered;
    if size != held.size as i64 || mtime_ns != held.mtime_ns {
        let mut d = Vec::new();
        if size != held.size as i64 {
            d.push(format!("size {size} -> {}", held.size));
        }
        if mtime_ns != held.mtime_ns {
            d.push("mtime changed".to_string());
        }
        let d = d.join(", ");
        return (
            Verdict::Modified,
            format!("{d} (no-download audit: content not compared)"),
        );
    }
    let registered = split_digests(algs, digests);
    let mut agree = Vec::new();
    for (a, stored) in held.checksums {
        let Some((_, reg)) = registered.iter().find(|(r, _)| r == a) else {
            continue;
        };
        if reg != stored {
            let detail = format!(
                "the store's {} checksum is {}, the digest registered from a read {} (size and mtime as registered)",
                a.bsd_tag(),
                hex::encode(stored),
                hex::encode(reg)
            );
            return (Verdict::Corrupt, detail);
        }
        if !agree.contains(&a.bsd_tag()) {
            agree.push(a.bsd_tag());
        }
    }
    if !agree.is_empty() {
        return (
            Verdict::Ok,
            format!("store checksum unchanged ({})", agree.join(", ")),
        );
    }
    (Verdict::Uncompared, not_compared(&registered, held))
}

/// Why a file's store holds nothing to compare with its registered digests.
fn not_compared(registered: &[(Algorithm, Vec<u8>)], held: Held<'_>) -> String {
    let recorded: Vec<&str> = registered.iter().map(|(a, _)| a.name()).collect();
    let mut holds: Vec<String> = held
        .checksums
        .iter()
        .map(|(a, _)| format!("a {} checksum", a.bsd_tag()))
        .collect();
    holds.extend(held.withheld.iter().cloned());
    if holds.is_empty() {
        format!(
            "not compared: the store holds no checksum of the whole object and no ETag that is its MD5; its registered digests ({}) need a full audit",
            recorded.join(",")
        )
    } else {
        format!(
            "not compared: the store holds {}, none a digest registered for it ({}); a full audit reads it",
            holds.join(" and "),
            recorded.join(",")
        )
    }
}

impl Audit<'_> {
    /// A registered file's verdict from what its store holds (see [`judge`]), recorded: its
    /// event (an ok one too, saying which checksums agreed), and a corrupt file's state. A
    /// file not registered (the plan gives none) is passed over. The verdict and its detail.
    pub(crate) fn record_stored(
        &mut self,
        root: usize,
        rel: &[u8],
        held: Held<'_>,
    ) -> Result<Option<(Verdict, String)>> {
        let rid = self.roots[root].0;
        let at = self.place(rid, rel)?;
        let Some((id, size, mtime_ns, digests, true, _, _)) = self.registered(at)? else {
            self.tick()?;
            return Ok(None);
        };
        let (verdict, detail) = judge((size, mtime_ns, &digests), &self.algorithms, held);
        if verdict == Verdict::Corrupt {
            self.mark_corrupt(id)?;
        }
        // An ok event names no digests: the registered ones are in the file's row.
        let expected = (verdict != Verdict::Ok).then_some(digests.as_slice());
        let meta = Some((held.size, held.mtime_ns));
        self.event(at, verdict, meta, expected, None, None, Some(&detail))?;
        self.tick()?;
        Ok(Some((verdict, detail)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AuditMode;
    use crate::audit::tests::{Harness, ROOT, events};

    const CRC: Algorithm = Algorithm::Crc64Nvme;
    const SHA: Algorithm = Algorithm::Sha256;

    fn held<'a>(
        size: u64,
        mtime_ns: i64,
        c: &'a [(Algorithm, Vec<u8>)],
        w: &'a [String],
    ) -> Held<'a> {
        Held {
            size,
            mtime_ns,
            checksums: c,
            withheld: w,
        }
    }

    /// Equal in a common algorithm and different in none: ok, naming it; different in one:
    /// corrupt at the registered size and time (both values said), modified at another;
    /// nothing in common: uncompared, saying what the store holds instead.
    #[test]
    fn the_stores_checksums_decide_against_the_registered_digests() {
        let algs = [SHA, CRC];
        let reg = [[1u8; 32].as_slice(), &[2u8; 8]].concat();
        let reg = (5, 100, reg.as_slice());
        let crc = |b: u8| (CRC, vec![b; 8]);
        let none: &[String] = &[];
        let (v, d) = judge(reg, &algs, held(5, 100, &[crc(2)], none));
        assert_eq!(
            (v, d.as_str()),
            (Verdict::Ok, "store checksum unchanged (CRC64NVME)")
        );
        let both = [crc(2), (SHA, vec![1; 32])];
        let (v, d) = judge(reg, &algs, held(5, 100, &both, none));
        assert_eq!(
            (v, d.as_str()),
            (Verdict::Ok, "store checksum unchanged (CRC64NVME, SHA256)")
        );
        // One agreeing does not hide one that differs.
        let mixed = [(SHA, vec![1; 32]), crc(9)];
        let (v, d) = judge(reg, &algs, held(5, 100, &mixed, none));
        assert_eq!(v, Verdict::Corrupt);
        assert!(
            d.contains("CRC64NVME checksum is 0909090909090909") && d.contains("0202020202020202"),
            "{d}"
        );
        let (v, d) = judge(reg, &algs, held(5, 101, &[crc(9)], none));
        assert_eq!(
            (v, d.as_str()),
            (
                Verdict::Modified,
                "mtime changed (no-download audit: content not compared)"
            )
        );
        let (v, _) = judge(reg, &algs, held(6, 100, &[crc(2)], none));
        assert_eq!(v, Verdict::Modified);
        // Nothing in common: a CRC32C the catalog does not record, a composite value.
        let other = [(Algorithm::Crc32c, vec![0; 4])];
        let composite = ["a composite CRC32C checksum of 3 parts".to_string()];
        let (v, d) = judge(reg, &algs, held(5, 100, &other, &composite));
        assert_eq!(v, Verdict::Uncompared);
        assert!(
            d.starts_with("not compared: the store holds a CRC32C checksum and a composite CRC32C checksum of 3 parts")
                && d.contains("(sha256,crc64nvme)"),
            "{d}"
        );
        let (v, d) = judge(reg, &algs, held(5, 100, &[], none));
        assert_eq!(v, Verdict::Uncompared);
        assert!(d.contains("no checksum of the whole object"), "{d}");
        // A row registered before an algorithm was added holds no digest of it: nothing to
        // compare that algorithm with.
        let old = (5, 100, &[1u8; 32][..]);
        assert_eq!(
            judge(old, &algs, held(5, 100, &[crc(7)], none)).0,
            Verdict::Uncompared
        );
    }

    /// A no-download run records each verdict as an event (ok too, saying what agreed),
    /// leaves every registration as it was (its last verification above all) but a corrupt
    /// file's state, counts its ok files, and registers nothing new.
    #[test]
    fn a_no_download_run_changes_no_registration_but_a_corrupt_state() {
        let mut h = Harness::new();
        h.full(&[("a", 5, 100, 1), ("b", 6, 100, 2), ("c", 7, 100, 3)]);
        let verified = |h: &Harness, p: &str| -> Option<i64> {
            h.cat
                .conn
                .query_row(
                    "SELECT last_verified FROM file_paths WHERE path = CAST(?1 AS BLOB)",
                    [p],
                    |r| r.get(0),
                )
                .unwrap()
        };
        h.cat
            .conn
            .execute("UPDATE files SET last_verified = 1000", [])
            .unwrap();
        let mut a = h
            .cat
            .begin_audit(&[ROOT.into()], AuditMode::Stored, &[SHA], "", None)
            .unwrap();
        for (i, (p, size)) in [("a", 5), ("b", 6), ("c", 7), ("d", 8)]
            .into_iter()
            .enumerate()
        {
            a.walk_file(0, p.as_bytes(), size, 100, 1, i as u64 + 1)
                .unwrap();
        }
        let none: &[String] = &[];
        for (p, size, c) in [("a", 5, 1u8), ("b", 6, 9), ("c", 7, 0)] {
            let sums = if c == 0 {
                vec![]
            } else {
                vec![(SHA, vec![c; 32])]
            };
            a.record_stored(0, p.as_bytes(), held(size, 100, &sums, none))
                .unwrap();
        }
        a.settle(true).unwrap();
        let run = a.run;
        let summary = a.seal("complete").unwrap();
        assert_eq!(summary.mode, "stored");
        assert_eq!(
            (
                summary.count(Verdict::Ok),
                summary.count(Verdict::Uncompared)
            ),
            (1, 1)
        );
        let mut got = crate::audit::tests::Events::new();
        h.cat
            .for_each_event(run, &mut |e| {
                let rel = e.path.strip_prefix(ROOT).unwrap().display().to_string();
                got.insert(rel, (e.verdict, e.detail));
            })
            .unwrap();
        let corrupt = format!(
            "the store's SHA256 checksum is {}, the digest registered from a read {} (size and mtime as registered)",
            hex::encode([9u8; 32]),
            hex::encode([2u8; 32])
        );
        let uncompared = "not compared: the store holds no checksum of the whole object and no ETag that is its MD5; its registered digests (sha256) need a full audit";
        let new = "not registered yet (a no-download audit reads nothing; the next full audit registers it)";
        assert_eq!(
            got,
            events(&[
                ("a", Verdict::Ok, Some("store checksum unchanged (SHA256)")),
                ("b", Verdict::Corrupt, Some(&corrupt)),
                ("c", Verdict::Uncompared, Some(uncompared)),
                ("d", Verdict::New, Some(new)),
            ])
        );
        for p in ["a", "b", "c"] {
            assert_eq!(
                verified(&h, p),
                Some(1000),
                "{p}: its last verification stays"
            );
        }
        assert_eq!(h.row("a").3, "ok");
        assert_eq!(h.row("b"), (6, 100, vec![2; 32], "corrupt".into(), 1));
        // A full read of b's registered content restores it.
        let restored = h.full(&[
            ("a", 5, 100, 1),
            ("b", 6, 100, 2),
            ("c", 7, 100, 3),
            ("d", 8, 100, 4),
        ]);
        assert_eq!(restored["b"].0, Verdict::Restored);
    }
}
