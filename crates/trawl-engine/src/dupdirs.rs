//! Directories with equal content, found from the per-file digests as the records come back
//! in path order: a directory's entries are contiguous in that order, so each directory's
//! content digest (its files' names and digests, its subdirectories' names and content
//! digests, in order) is made with a stack of the open directories and handed to a spool
//! keyed by it; equal digests then come out together. Nothing is held per file.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Arc;

use trawl_digest::Algorithm;
use trawl_report::{Breakdown, DuplicateDirectories};
use trawl_spool::Spool;

use crate::records::Records;

/// One open directory: its path, what is hashed of its entries so far, its files and bytes.
struct Open {
    path: Vec<u8>,
    hasher: blake3::Hasher,
    files: u64,
    bytes: u64,
}

impl Open {
    fn new(path: Vec<u8>) -> Open {
        Open {
            path,
            hasher: blake3::Hasher::new(),
            files: 0,
            bytes: 0,
        }
    }
}

/// An entry in a directory's digest: kind, name and content digest, length-prefixed so that
/// no two listings hash the same bytes.
fn entry(h: &mut blake3::Hasher, kind: u8, name: &[u8], digest: &[u8]) {
    h.update(&[kind]);
    h.update(&(name.len() as u64).to_le_bytes());
    h.update(name);
    h.update(&(digest.len() as u64).to_le_bytes());
    h.update(digest);
}

fn closed(
    d: Open,
    parent: Option<&mut Open>,
    spool: &mut Spool,
    val: &mut Vec<u8>,
) -> io::Result<()> {
    let digest = d.hasher.finalize();
    if let Some(p) = parent {
        let name = d.path.rsplit(|b| *b == b'/').next().unwrap_or(&d.path);
        entry(&mut p.hasher, b'd', name, digest.as_bytes());
        p.files += d.files;
        p.bytes += d.bytes;
    }
    if d.files == 0 {
        return Ok(());
    }
    val.clear();
    val.extend_from_slice(&d.files.to_le_bytes());
    val.extend_from_slice(&d.bytes.to_le_bytes());
    val.extend_from_slice(&d.path);
    // Largest first, then by content.
    let mut key = Vec::with_capacity(40);
    key.extend_from_slice(&(!d.bytes).to_be_bytes());
    key.extend_from_slice(digest.as_bytes());
    spool.push(&key, val)
}

/// Names kept per group to tell whether it lies inside another.
const NAMES_KEPT: usize = 1000;

/// The groups of equal directories among the records, compared by `alg`'s digests; a group
/// whose directories all lie in directories of a listed group is left out.
pub fn find(
    records: &Records,
    roots: &[PathBuf],
    alg: Algorithm,
    temp_dir: &std::path::Path,
    budget: usize,
) -> io::Result<Vec<DuplicateDirectories>> {
    let sorted = directory_digests(records, roots, alg, temp_dir, budget)?;
    let groups = equal_groups(&sorted)?;
    Ok(outermost(groups))
}

/// Every directory's digest (of its names and its files' and subdirectories' digests, all the
/// way down), into a spool sorted by digest.
fn directory_digests(
    records: &Records,
    roots: &[PathBuf],
    alg: Algorithm,
    temp_dir: &std::path::Path,
    budget: usize,
) -> io::Result<Arc<trawl_spool::Sorted>> {
    let mut spool = Spool::new(temp_dir, budget);
    let mut stack: Vec<Open> = Vec::new();
    let mut val = Vec::new();
    records.for_each(|f| -> io::Result<()> {
        let Some(digest) = f.digests.iter().find(|(a, _)| *a == alg).map(|(_, d)| d) else {
            return Ok(());
        };
        let path = f.path.as_os_str().as_bytes();
        let root = roots
            .get(f.root)
            .map_or(&b""[..], |r| r.as_os_str().as_bytes());
        let root = root.strip_suffix(b"/").unwrap_or(root);
        // The file's directories from its root down.
        let (dir, name) = match path.iter().rposition(|b| *b == b'/') {
            Some(i) => (&path[..i], &path[i + 1..]),
            None => (&b""[..], path),
        };
        if !dir.starts_with(root) {
            return Ok(()); // a root that is a file
        }
        // Close what this directory is not inside of.
        while let Some(top) = stack.last() {
            let inside = dir == top.path.as_slice()
                || (dir.starts_with(&top.path) && dir.get(top.path.len()) == Some(&b'/'));
            if inside {
                break;
            }
            let d = stack.pop().expect("just seen");
            closed(d, stack.last_mut(), &mut spool, &mut val)?;
        }
        open_down_to(&mut stack, root, dir);
        let top = stack.last_mut().expect("opened");
        entry(&mut top.hasher, b'f', name, digest);
        top.files += 1;
        top.bytes += f.size;
        Ok(())
    })?;
    while let Some(d) = stack.pop() {
        closed(d, stack.last_mut(), &mut spool, &mut val)?;
    }
    Ok(Arc::new(spool.finish()?))
}

/// The directories between the innermost one open (or `root`, when none is) and `dir`,
/// opened, one a level.
fn open_down_to(stack: &mut Vec<Open>, root: &[u8], dir: &[u8]) {
    if stack.is_empty() {
        stack.push(Open::new(root.to_vec()));
    }
    while stack.last().is_some_and(|t| t.path.as_slice() != dir) {
        let t = &stack.last().expect("not empty").path;
        let next = dir[t.len() + usize::from(!t.is_empty())..]
            .split(|b| *b == b'/')
            .next()
            .unwrap_or(b"");
        let mut p = t.clone();
        if !p.is_empty() {
            p.push(b'/');
        }
        p.extend_from_slice(next);
        stack.push(Open::new(p));
    }
}

/// Most bytes wasted first.
fn order(a: &DuplicateDirectories, b: &DuplicateDirectories) -> std::cmp::Ordering {
    (b.bytes * (b.count - 1))
        .cmp(&(a.bytes * (a.count - 1)))
        .then_with(|| a.directories.cmp(&b.directories))
}

/// The directories of equal digest as groups, the best kept (a few times more than are
/// listed: nested ones are dropped after), each with the names needed to tell nesting.
fn equal_groups(sorted: &Arc<trawl_spool::Sorted>) -> io::Result<Vec<DuplicateDirectories>> {
    let keep = 8 * Breakdown::DUPLICATE_GROUPS;
    let mut groups: Vec<DuplicateDirectories> = Vec::new();
    let mut cur: Option<(Vec<u8>, DuplicateDirectories)> = None;
    let flush = |cur: Option<(Vec<u8>, DuplicateDirectories)>,
                 groups: &mut Vec<DuplicateDirectories>| {
        if let Some((_, g)) = cur
            && g.count >= 2
        {
            groups.push(g);
            if groups.len() >= 2 * keep {
                groups.sort_by(order);
                groups.truncate(keep);
            }
        }
    };
    sorted.for_each(|k, v| -> io::Result<()> {
        if v.len() < 16 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a directory record is damaged",
            ));
        }
        let files = u64::from_le_bytes(v[..8].try_into().expect("8 bytes"));
        let bytes = u64::from_le_bytes(v[8..16].try_into().expect("8 bytes"));
        let path = String::from_utf8_lossy(&v[16..]).into_owned();
        match &mut cur {
            Some((ck, g)) if ck.as_slice() == k => {
                g.count += 1;
                if g.directories.len() < NAMES_KEPT {
                    g.directories.push(path);
                }
            }
            _ => {
                flush(cur.take(), &mut groups);
                cur = Some((
                    k.to_vec(),
                    DuplicateDirectories {
                        files,
                        bytes,
                        count: 1,
                        directories: vec![path],
                    },
                ));
            }
        }
        Ok(())
    })?;
    flush(cur.take(), &mut groups);
    Ok(groups)
}

/// The groups, best first, without those inside a listed one (each of its directories directly
/// in a directory of that group: it says nothing new), names cut to what is shown.
fn outermost(mut groups: Vec<DuplicateDirectories>) -> Vec<DuplicateDirectories> {
    groups.sort_by(order);
    let mut listed: Vec<DuplicateDirectories> = Vec::new();
    for g in groups {
        let parent = |d: &String| d.rsplit_once('/').map(|(p, _)| p.to_string());
        let inside = listed.iter().any(|l| {
            g.directories
                .iter()
                .all(|d| parent(d).is_some_and(|p| l.directories.contains(&p)))
        });
        if !inside {
            listed.push(g);
        }
        if listed.len() == Breakdown::DUPLICATE_GROUPS {
            break;
        }
    }
    for g in &mut listed {
        g.directories.truncate(Breakdown::NAMES_SHOWN);
    }
    listed
}
