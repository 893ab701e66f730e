//! The payload manifests' listings merged with the files on disk: what is missing, what is not
//! listed, what every manifest must agree on, and the files whose digests are to be checked.

use std::ops::ControlFlow;
use std::sync::Arc;

use trawl_digest::Algorithm;
use trawl_report::{BagFinding, ToFetch};
use trawl_scan::{Progress, ScanConfig};
use trawl_spool::Sorted;
use trawl_stop::Stop;

use crate::BagError;
use crate::payload::{Hashed, Spools, hash_stream};

use super::*;

/// A listed path's entries: (index of the payload manifest, line, digest), one per manifest.
pub(crate) type Group = Vec<(usize, usize, String)>;

/// What the merge of the listings with the payload found (kept apart from the digest results,
/// which come from another thread, and put before them in the report).
#[derive(Default)]
pub(crate) struct Findings {
    pub(crate) errors: Vec<BagFinding>,
    pub(crate) warnings: Vec<BagFinding>,
    pub(crate) to_fetch: Vec<ToFetch>,
    /// Listed files absent, and present files in no manifest, whose names are not plain ASCII:
    /// held until the end, where a pair whose names differ only in Unicode normalization is
    /// taken as one file (see [`pair_normalized`]).
    odd_listed: Vec<(String, Group)>,
    odd_present: Vec<String>,
}

impl Findings {
    /// The findings added to `report`.
    fn into_report(self, report: &mut Report) {
        report.errors.extend(self.errors);
        report.warnings.extend(self.warnings);
        report.to_fetch.extend(self.to_fetch);
    }
}

pub(crate) fn next(r: &mut trawl_spool::Records) -> std::io::Result<Option<(Vec<u8>, Vec<u8>)>> {
    Ok(r.next_record()?.map(|(k, v)| (k.to_vec(), v.to_vec())))
}

/// Walks the manifests' entries and the payload's files together, both in path order: for each
/// path, duplicates within a manifest, manifests that leave it out, a file in no manifest, a
/// listed file absent (to fetch, or missing); each listed file present goes to `send` (which
/// returns false to stop).
pub(crate) fn merge(
    bag: &Bag,
    on_disk: &Payload,
    spools: &Spools,
    send: &mut dyn FnMut(String, Group) -> ControlFlow<()>,
) -> Result<Findings, BagError> {
    let io = spools.err();
    let mut f = Findings::default();
    // fetch.txt's items, a third sorted stream: an item met before the path it names is in no
    // payload manifest.
    let mut fetch = Ahead::new(bag.fetch.as_ref()).map_err(&io)?;
    let mut listed = Ahead::new(bag.listed.as_ref()).map_err(&io)?;
    let mut disk = Ahead::new(Some(&on_disk.files)).map_err(&io)?;
    let mut unlisted = LineProblems::new("fetch.txt");
    loop {
        let key = match (&listed.head, &disk.head) {
            (None, None) => break,
            (Some((k, _)), None) | (None, Some((k, _))) => k.clone(),
            (Some((x, _)), Some((y, _))) => x.min(y).clone(),
        };
        let path = String::from_utf8_lossy(&key).into_owned();
        while let Some((fk, _)) = &fetch.head
            && *fk < key
        {
            unlisted.not_listed(&mut f.errors, fk);
            fetch.advance().map_err(&io)?;
        }
        let fetched = fetch_item(&mut fetch, &key).map_err(&io)?;
        let mut group: Group = Vec::new();
        while let Some((k, v)) = &listed.head
            && *k == key
        {
            add_listing(bag, &mut f, &path, &mut group, v);
            listed.advance().map_err(&io)?;
        }
        let present = disk.head.as_ref().is_some_and(|(k, _)| *k == key);
        if present {
            disk.advance().map_err(&io)?;
        }
        let Some((path, group)) = judge(bag, &mut f, &mut unlisted, &key, group, present, fetched)
        else {
            continue;
        };
        if send(path, group).is_break() {
            return Ok(f);
        }
    }
    while let Some((fk, _)) = &fetch.head {
        unlisted.not_listed(&mut f.errors, fk);
        fetch.advance().map_err(&io)?;
    }
    unlisted.finish_into(&mut f.errors);
    for (path, group) in pair_normalized(bag, &mut f) {
        if send(path, group).is_break() {
            break;
        }
    }
    Ok(f)
}

/// A sorted list read one record ahead.
struct Ahead {
    records: Option<trawl_spool::Records>,
    /// The record to be taken next: None at the list's end, or when there is no list.
    head: Option<(Vec<u8>, Vec<u8>)>,
}

impl Ahead {
    /// `sorted` (None: an empty list), its first record read.
    fn new(sorted: Option<&Arc<Sorted>>) -> std::io::Result<Ahead> {
        let mut ahead = Ahead {
            records: sorted.map(|s| s.iter()).transpose()?,
            head: None,
        };
        ahead.advance()?;
        Ok(ahead)
    }

    /// The next record into `head`.
    fn advance(&mut self) -> std::io::Result<()> {
        self.head = match &mut self.records {
            Some(r) => next(r)?,
            None => None,
        };
        Ok(())
    }
}

/// The fetch item of `key` (the first, if it is listed twice): its length (None: `-`) and
/// URL; `fetch` moved past every item of `key`.
fn fetch_item(fetch: &mut Ahead, key: &[u8]) -> std::io::Result<Option<(Option<u64>, String)>> {
    let mut fetched = None;
    while let Some((fk, v)) = &fetch.head
        && *fk == key
    {
        if fetched.is_none() && v.len() >= 8 {
            let len = u64::from_be_bytes(v[..8].try_into().expect("8 bytes"));
            let url = String::from_utf8_lossy(&v[8..]).into_owned();
            fetched = Some(((len != u64::MAX).then_some(len), url));
        }
        fetch.advance()?;
    }
    Ok(fetched)
}

/// A name as it is compared across Unicode normalization forms (a manifest written on one
/// system, the files copied through another that normalizes names, as macOS's HFS+ does).
fn normalized(name: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    name.nfc().collect()
}

/// Pairs a listed file absent with a present file in no manifest whose names differ only in
/// Unicode normalization (`café` composed in the manifest, decomposed on disk): they are one
/// file, read under its name on disk against the manifests' digests, and a warning names both
/// forms (bagit-python compares names the same way and takes the bag as valid). What pairs with
/// nothing gets its error. Returns the pairs to read: (the name on disk, the listings).
fn pair_normalized(bag: &Bag, f: &mut Findings) -> Vec<(String, Group)> {
    // Each normalized name with every listed path of it: a manifest may list several forms
    // of one name (`Å` as U+00C5 and as A with U+030A), and a file pairs with one only; the
    // others are missing, never folded into it.
    let mut listed: std::collections::HashMap<String, Vec<(String, Group)>> =
        std::collections::HashMap::new();
    for (p, g) in std::mem::take(&mut f.odd_listed) {
        listed.entry(normalized(&p)).or_default().push((p, g));
    }
    let mut read = Vec::new();
    for path in std::mem::take(&mut f.odd_present) {
        match listed
            .get_mut(&normalized(&path))
            .and_then(|forms| forms.pop())
        {
            Some((as_listed, group)) => {
                let files: Vec<&str> = group
                    .iter()
                    .map(|(mi, _, _)| bag.payload[*mi].file.as_str())
                    .collect();
                f.warnings.push(BagFinding::about(
                    &path,
                    format!(
                        "listed as '{}' in {}: the same name in another Unicode normalization form; taken as that file",
                        as_listed.escape_debug(),
                        files.join(", ")
                    ),
                ));
                read.push((path, group));
            }
            None => f.errors.push(BagFinding::about(
                &path,
                "present in the payload but in no manifest",
            )),
        }
    }
    let mut left: Vec<String> = listed.into_values().flatten().map(|(p, _)| p).collect();
    left.sort();
    for path in left {
        f.errors.push(BagFinding::about(
            &path,
            "listed in the manifests but missing",
        ));
    }
    read
}

/// One manifest's listing of `path` (its encoded slot, line and digest) added to the path's
/// group; a second listing in the same manifest is an error if its digest differs, else a
/// warning.
fn add_listing(bag: &Bag, f: &mut Findings, path: &str, group: &mut Group, v: &[u8]) {
    if let Some((slot, line, digest)) = decode_listed(v)
        && let Some((mi, m)) = bag.manifest_of(slot)
    {
        match group.iter().find(|g| g.0 == mi) {
            Some((_, prev_line, prev)) => {
                let (list, what) = if *prev != digest {
                    (&mut f.errors, "is listed twice with different digests")
                } else {
                    (&mut f.warnings, "is listed twice")
                };
                list.push(BagFinding::about(
                    &m.file,
                    format!("'{path}' {what} (lines {prev_line} and {line})"),
                ));
            }
            None => group.push((mi, line, digest)),
        }
    }
}

/// What one path's listings, presence and fetch item say: findings into `f`; the path and its
/// group when it is a listed file present, to be read.
fn judge(
    bag: &Bag,
    f: &mut Findings,
    unlisted: &mut LineProblems,
    key: &[u8],
    group: Group,
    present: bool,
    fetched: Option<(Option<u64>, String)>,
) -> Option<(String, Group)> {
    let path = String::from_utf8_lossy(key).into_owned();
    let plain = key.is_ascii();
    if group.is_empty() {
        if present && plain {
            f.errors.push(BagFinding::about(
                &path,
                "present in the payload but in no manifest",
            ));
        } else if present {
            f.odd_present.push(path.clone());
        }
        if fetched.is_some() {
            unlisted.not_listed(&mut f.errors, key);
        }
        return None;
    }
    if group.len() != bag.payload.len() {
        let missing_from: Vec<&str> = bag
            .payload
            .iter()
            .enumerate()
            .filter(|(i, _)| !group.iter().any(|(mi, _, _)| mi == i))
            .map(|(_, m)| m.file.as_str())
            .collect();
        f.errors.push(BagFinding::about(
            &path,
            format!(
                "listed in some payload manifests but not in {}",
                missing_from.join(", ")
            ),
        ));
    }
    if !present {
        match fetched {
            Some((length, url)) => f.to_fetch.push(ToFetch {
                url,
                length,
                path: path.clone(),
            }),
            None if plain => f.errors.push(BagFinding::about(
                &path,
                "listed in the manifests but missing",
            )),
            None => f.odd_listed.push((path, group)),
        }
        return None;
    }
    Some((path, group))
}

/// Receives each payload file hashed, with its digests (for `bag update`).
pub(crate) type Sink<'a> = dyn FnMut(&str, &[(Algorithm, Vec<u8>)]) -> Result<(), BagError> + 'a;

/// Checks the payload against the manifests: completeness always; with `fast` false, the
/// digests too, every present listed file read once with `algs` (at least the manifests'
/// algorithms), each file's digests also handed to `sink`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn check_payload(
    tree: &dyn BagTree,
    bag: &Bag,
    on_disk: &Payload,
    fast: bool,
    algs: &[Algorithm],
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
    spools: &Spools,
    report: &mut Report,
    mut sink: Option<&mut Sink<'_>>,
) -> Result<(), BagError> {
    let findings = if fast {
        merge(bag, on_disk, spools, &mut |_, _| ControlFlow::Continue(()))?
    } else {
        let mut results: Vec<BagFinding> = Vec::new();
        let mut sink_err: Option<BagError> = None;
        let (mut files, mut bytes, mut unreadable) = (0u64, 0u64, 0u64);
        let merged = hash_stream(
            tree.source(),
            tree.root(),
            algs,
            cfg,
            progress,
            stop,
            |feeder| merge(bag, on_disk, spools, &mut |p, g| feeder.send(p, g)),
            |rel, group: Group, hashed| match hashed {
                Hashed::Digests { size, digests } => {
                    files += 1;
                    bytes += size;
                    mismatches(bag, &rel, &group, &digests, &mut results);
                    if let Some(sink) = sink.as_mut()
                        && sink_err.is_none()
                        && let Err(e) = sink(&rel, &digests)
                    {
                        sink_err = Some(e);
                        stop.request(trawl_stop::Reason::Failed);
                    }
                }
                Hashed::Unreadable(f) => {
                    unreadable += 1;
                    results.push(f);
                }
                Hashed::Failed(f) => results.push(f),
            },
        );
        if let Some(e) = sink_err {
            return Err(e);
        }
        let mut findings = merged?;
        report.files_checked += files;
        report.bytes_checked += bytes;
        report.unreadable += unreadable;
        findings.errors.append(&mut results);
        findings
    };
    findings.into_report(report);
    Ok(())
}

/// Each digest of a file (`rel`, listed as `group`) that differs from its manifest's, into
/// `results`.
fn mismatches(
    bag: &Bag,
    rel: &str,
    group: &Group,
    digests: &[(Algorithm, Vec<u8>)],
    results: &mut Vec<BagFinding>,
) {
    for (mi, line, want) in group {
        let m = &bag.payload[*mi];
        let Some(alg) = m.algorithm else { continue };
        let actual = digests
            .iter()
            .find(|(a, _)| *a == alg)
            .map(|(_, v)| hex::encode(v))
            .unwrap_or_default();
        if actual != *want {
            results.push(BagFinding::about(
                rel,
                format!(
                    "{alg} mismatch ({} line {line}): manifest has {want}, file has {actual}",
                    m.file
                ),
            ));
        }
    }
}
