//! `bag recover`: an interrupted in-place creation undone from its journal, acting only on what
//! `bag create` could have written.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use trawl_digest::Algorithm;

use crate::{BagError, io_err};

use super::*;

/// What [`recover`] did.
#[derive(Debug, Default)]
pub struct Recovered {
    /// Entries moved back from the payload directory.
    pub moved: usize,
    /// Files trawl had written (tag files, their temporary files) that were removed.
    pub removed: Vec<String>,
}

/// The most a journal may hold: one line per top-level entry of the directory bagged.
pub(crate) const JOURNAL_CAP: u64 = 256 << 20;

/// Whether `name` is a tag file `bag create` writes: `bagit.txt`, `bag-info.txt`, or a payload or
/// tag manifest of an algorithm trawl computes.
pub(crate) fn is_tag_file_name(name: &[u8]) -> bool {
    name == b"bagit.txt"
        || name == b"bag-info.txt"
        || Algorithm::ALL.iter().any(|a| {
            let n = a.bagit_name();
            name == format!("manifest-{n}.txt").as_bytes()
                || name == format!("tagmanifest-{n}.txt").as_bytes()
        })
}

/// Undoes an interrupted in-place creation: moves every entry the journal names back, and removes
/// exactly the files the creation wrote (the tag files its journal names and their temporary
/// files), nothing else.
///
/// Whoever can write into `dir` can plant a journal, so the journal is trusted for nothing that
/// a creation could not have written: tag names must be ones `bag create` writes, entry names
/// plain top-level names, the payload directory a real directory (not a link), and every unlink
/// and rename is done relative to the bag's directory descriptor without following a link.
/// Anything else refuses the whole recovery before it changes anything.
pub fn recover(dir: &Path) -> Result<Recovered, BagError> {
    use trawl_read::{DirAt, EntryKind as Kind};
    let mut done = Recovered::default();
    let top = DirAt::open(dir).map_err(io_err(dir))?;
    let at = |name: &[u8]| dir.join(std::ffi::OsStr::from_bytes(name));
    let jpath = dir.join(JOURNAL);
    let journal = match top.read(JOURNAL.as_bytes(), JOURNAL_CAP) {
        Ok(j) => j,
        Err(trawl_read::Unread::Missing) => return without_journal(&top, dir),
        Err(e) => return Err(io_err(&jpath)(e.into())),
    };
    let untrusted = |why: String| {
        refused(
            &jpath,
            format!(
                "{why}: not a journal `bag create` writes; nothing was changed (look at it, and remove it by hand if it is not yours)"
            ),
        )
    };
    let (names, tags) = journal_entries(&journal, &top, dir, &untrusted)?;
    // Where the entries are: the staging directory, or `data/` once it was renamed.
    let from = entries_dir(&top, dir)?;
    for n in top.names().map_err(io_err(dir))? {
        let ln = lossy(&n);
        if tags.iter().any(|t| is_temp_of(&ln, &lossy(t)))
            && top.kind(&n).map_err(io_err(&at(&n)))? == Some(Kind::File)
        {
            remove(&top, dir, &n, &mut done)?;
        }
    }
    for t in &tags {
        // A tag file of ours sits at the top only once its name's payload entry (if the user had
        // one) was moved away; an entry of that name still at the top is the user's.
        let theirs_still_here = names.contains(t)
            && match &from {
                Some((_, d)) => d.kind(t).map_err(io_err(&at(t)))?.is_none(),
                None => true,
            };
        if !theirs_still_here
            && matches!(
                top.kind(t).map_err(io_err(&at(t)))?,
                Some(Kind::File | Kind::Symlink)
            )
        {
            remove(&top, dir, t, &mut done)?;
        }
    }
    if let Some((name, d)) = &from {
        done.moved = move_back(&top, dir, name, d, &names)?;
    }
    top.unlink(JOURNAL.as_bytes()).map_err(io_err(&jpath))?;
    Ok(done)
}

/// Moves each entry of `names` still in the payload directory `d` (`name` in `top`) back to
/// the top, then removes the directory (empty now); how many were moved.
fn move_back(
    top: &trawl_read::DirAt,
    dir: &Path,
    name: &str,
    d: &trawl_read::DirAt,
    names: &Names,
) -> Result<usize, BagError> {
    let mut moved = 0;
    for n in names {
        let n_at = |base: &Path| base.join(std::ffi::OsStr::from_bytes(n));
        if d.kind(n).map_err(io_err(&n_at(dir)))?.is_some() {
            d.rename(n, top, n)
                .map_err(io_err(&n_at(&dir.join(name))))?;
            moved += 1;
        }
    }
    top.rmdir(name.as_bytes())
        .map_err(io_err(&dir.join(name)))?;
    Ok(moved)
}

/// A name as text, for messages and the list of what was removed.
fn lossy(n: &[u8]) -> String {
    String::from_utf8_lossy(n).into_owned()
}

/// Removes `name` from the bag's directory `top` (at `dir`), without following a link, and
/// notes it in `done`.
fn remove(
    top: &trawl_read::DirAt,
    dir: &Path,
    name: &[u8],
    done: &mut Recovered,
) -> Result<(), BagError> {
    top.unlink(name)
        .map_err(io_err(&dir.join(std::ffi::OsStr::from_bytes(name))))?;
    done.removed.push(lossy(name));
    Ok(())
}

/// No journal: interrupted while the journal itself was being written, so nothing was moved
/// yet; the journal's temporary files are removed. None of them either: no interrupted
/// creation here, refused.
fn without_journal(top: &trawl_read::DirAt, dir: &Path) -> Result<Recovered, BagError> {
    let temps: Vec<Vec<u8>> = top
        .names()
        .map_err(io_err(dir))?
        .into_iter()
        .filter(|n| {
            is_temp_of(&lossy(n), JOURNAL)
                && top.kind(n).ok().flatten() == Some(trawl_read::EntryKind::File)
        })
        .collect();
    if temps.is_empty() {
        return Err(refused(
            dir,
            "no interrupted bag creation here (no journal)",
        ));
    }
    let mut done = Recovered::default();
    for t in temps {
        remove(top, dir, &t, &mut done)?;
    }
    Ok(done)
}

/// Names as bytes.
type Names = Vec<Vec<u8>>;

/// What the journal says, if `bag create` could have written it: the top-level entries moved
/// into the payload, and the tag files the creation wrote (named by a v2 journal; an older
/// journal did not name them, and a creation then wrote the standard ones only). Anything else
/// is `untrusted`, with why.
fn journal_entries(
    journal: &[u8],
    top: &trawl_read::DirAt,
    dir: &Path,
    untrusted: &dyn Fn(String) -> BagError,
) -> Result<(Names, Names), BagError> {
    use trawl_read::is_plain_name;
    let lossy = |n: &[u8]| String::from_utf8_lossy(n).into_owned();
    let mut lines = journal.split(|&b| b == b'\n');
    let header = lines.next().unwrap_or_default();
    let mut names: Vec<Vec<u8>> = Vec::new();
    for l in lines.filter(|l| !l.is_empty()) {
        let n = crate::decode_path_bytes(l);
        if !is_plain_name(&n) || n == JOURNAL.as_bytes() || n == STAGING.as_bytes() {
            return Err(untrusted(format!(
                "it names '{}', which is no top-level entry",
                lossy(&n)
            )));
        }
        names.push(n);
    }
    let tags: Vec<Vec<u8>> = match header.strip_prefix(JOURNAL_V2.as_bytes()) {
        Some(list) => {
            let tags: Vec<Vec<u8>> = list
                .split(|&b| b == b' ')
                .filter(|s| !s.is_empty())
                .map(<[u8]>::to_vec)
                .collect();
            if let Some(bad) = tags.iter().find(|t| !is_tag_file_name(t)) {
                return Err(untrusted(format!(
                    "it names '{}' as a tag file, which `bag create` never writes",
                    lossy(bad)
                )));
            }
            tags
        }
        None if header.starts_with(b"trawl bag create journal") => top
            .names()
            .map_err(io_err(dir))?
            .into_iter()
            .filter(|n| is_tag_file_name(n))
            .collect(),
        None => return Err(untrusted("its first line is not a journal's".into())),
    };
    Ok((names, tags))
}

/// The directory the entries are in: the staging directory, or `data/` once it was renamed;
/// either must be a directory of its own, not a link to one elsewhere. None: neither is there.
fn entries_dir<'a>(
    top: &trawl_read::DirAt,
    dir: &Path,
) -> Result<Option<(&'a str, trawl_read::DirAt)>, BagError> {
    use trawl_read::EntryKind as Kind;
    let mut from = None;
    let names: [&'a str; 2] = [STAGING, "data"];
    for name in names {
        match top.kind(name.as_bytes()).map_err(io_err(&dir.join(name)))? {
            None => continue,
            Some(Kind::Dir) => {
                let d = top.dir(name.as_bytes()).map_err(io_err(&dir.join(name)))?;
                from = Some((name, d));
                break;
            }
            Some(_) => {
                return Err(refused(
                    &dir.join(name),
                    "not a directory (a symbolic link?): nothing was changed",
                ));
            }
        }
    }
    Ok(from)
}
