//! An audit's walk and reads over OCFL storage roots: the catalog sees each version's files
//! under their logical paths (`OBJECT/vN/LOGICAL`, OBJECT the object's directory below the
//! root), each read from its content file, with the inventory's digests as the expected ones.
//!
//! The objects are those the walk of the hierarchy found (as `ocfl validate` walks it, names
//! kept as bytes, every directory opened from its parent's descriptor without following a
//! link), and a logical path read later is taken back to its object through them, never by
//! the shape of its path. Inside an object no symbolic link is followed, and a content path
//! that would leave the object is refused before any system call. An inventory whose sidecar
//! does not match it is not trusted; every version's inventory gives its digests too, and
//! whatever cannot be audited (a link in the hierarchy, a directory that cannot be checked, a
//! content file the inventory lists and the object lacks) is named.

use std::collections::{HashMap, HashSet};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use trawl_catalog::{CatalogError, Expected, ReadPlan, ReadResult, Source, SourceError};
use trawl_digest::Algorithm;
use trawl_read::{DirAt, ReadError, Refused, RootDir, open_no_links, open_path_no_links};
use trawl_scan::{DigestLanes, Event, Input, Progress, ScanError};
use trawl_stop::Stop;
use trawl_walk::{FileEntry, Opener, WalkError, WalkItem, WalkOptions};

use crate::inventory::{algorithm, digest_paths, normalized, state_of};
use crate::log::Log;
use crate::object::is_version_name;
use crate::root::{self, Found};
use crate::tree::{Name, join, list, open_rel, read_small};

/// Where the expected digests come from, as events name it.
const FROM: &str = "the OCFL inventory";

/// Digests by algorithm.
type Digests = Vec<(Algorithm, Vec<u8>)>;

/// Where a logical path's bytes are: its content file and the digests it must have, or why
/// it is not read.
#[derive(Clone)]
enum Content {
    File { path: String, expected: Digests },
    Refused(String),
}

/// One object's logical files: (version, logical path) -> its content.
type Files = HashMap<(String, String), Content>;

/// A path the inventory gives (content or logical) as the plain names it is made of: no empty,
/// `.` or `..` element, not absolute, no NUL; `None` otherwise.
fn plain(path: &str) -> Option<Vec<Vec<u8>>> {
    let segs: Vec<Vec<u8>> = path.split('/').map(|s| s.as_bytes().to_vec()).collect();
    segs.iter()
        .all(|s| trawl_read::is_plain_name(s))
        .then_some(segs)
}

/// An object's logical files, and the digest algorithm its root inventory uses.
struct Object {
    files: Files,
    algorithm: Algorithm,
}

/// The files of the object at `dir`, from its root inventory (held to its sidecar) and every
/// earlier version's, or why there are none.
fn object_files(dir: &DirAt) -> Result<Object, String> {
    let raw = read_small(dir, b"inventory.json", crate::object::INVENTORY_CAP)
        .map_err(|e| format!("inventory.json: {e}"))?;
    let mut log = Log::default();
    let inv =
        crate::inventory::check(&raw, b"inventory.json", "1.1", &mut log).ok_or_else(|| {
            log.errors.first().map_or_else(
                || "inventory.json: not valid JSON".to_string(),
                |f| format!("inventory.json: {}", f.message),
            )
        })?;
    if inv.all_versions.is_empty() {
        return Err(
            "inventory.json lists no version (or its `versions` are not a sequence)".into(),
        );
    }
    let alg = algorithm(&inv.digest_algorithm)
        .ok_or_else(|| format!("inventory.json: digest algorithm {}", inv.digest_algorithm))?;
    // The sidecar is the inventory's own fixity: one that does not match is not trusted.
    let mut side = Log::default();
    crate::object::sidecar(
        dir,
        "inventory.json",
        &raw,
        &inv.digest_algorithm,
        &mut side,
    );
    if let Some(f) = side.errors.first() {
        return Err(format!(
            "{}: {}: the inventory is not trusted",
            String::from_utf8_lossy(
                f.path
                    .as_ref()
                    .map_or(b"inventory.json", |p| p.path.as_bytes())
            ),
            f.message
        ));
    }
    drop(raw);
    // Every digest given for a content path, oldest inventory first: the earlier versions'
    // manifests (each written when its version was), then the root's, then the fixity block's.
    let mut given: HashMap<String, Digests> = HashMap::new();
    let add = |given: &mut HashMap<String, Digests>, p: &str, a: Algorithm, d: &str| {
        if let Ok(bytes) = hex::decode(normalized(d)) {
            let e = given.entry(p.to_string()).or_default();
            if !e.iter().any(|(x, y)| *x == a && *y == bytes) {
                e.push((a, bytes));
            }
        }
    };
    for v in &inv.all_versions[..inv.all_versions.len() - 1] {
        let rel = format!("{v}/inventory.json");
        let Ok(raw) = read_small(dir, rel.as_bytes(), crate::object::INVENTORY_CAP) else {
            continue;
        };
        let mut ignored = Log::default();
        let Some(prior) = crate::inventory::check(&raw, rel.as_bytes(), "1.1", &mut ignored) else {
            continue;
        };
        let (Some(a), Some(Value::Object(m))) = (
            algorithm(&prior.digest_algorithm),
            prior.value.get("manifest"),
        ) else {
            continue;
        };
        for (d, p) in digest_paths(m) {
            add(&mut given, p, a, d);
        }
    }
    let manifest = inv.value.get("manifest").and_then(Value::as_object);
    for (d, p) in manifest.into_iter().flat_map(digest_paths) {
        add(&mut given, p, alg, d);
    }
    if let Some(Value::Object(f)) = inv.value.get("fixity") {
        for (name, block) in f {
            let (Some(a), Some(block)) = (algorithm(name), block.as_object()) else {
                continue;
            };
            for (d, p) in digest_paths(block) {
                add(&mut given, p, a, d);
            }
        }
    }
    let mut files = Files::new();
    for v in &inv.all_versions {
        for (digest, l) in state_of(&inv.value, v).into_iter().flat_map(digest_paths) {
            let content = manifest
                .and_then(|m| m.get(digest))
                .and_then(Value::as_array)
                .and_then(|c| c.first())
                .and_then(Value::as_str);
            let Some(content) = content else {
                files.insert(
                    (v.clone(), l.to_string()),
                    Content::Refused(format!(
                        "the inventory's state gives it digest {digest}, which its manifest does not hold: not audited"
                    )),
                );
                continue;
            };
            // Within the object, and in one of its versions' directories: anything else is
            // refused here, before it is looked for.
            let inside = plain(content).is_some_and(|segs| {
                segs.len() > 2 && inv.all_versions.iter().any(|v| v.as_bytes() == segs[0])
            });
            let expected = given.get(content).cloned().unwrap_or_default();
            let c = if !inside {
                Content::Refused(format!(
                    "the inventory gives its content as '{content}', which is not a file in one of the object's version directories: not looked for"
                ))
            } else if !expected.iter().any(|(a, _)| *a == alg) {
                Content::Refused(format!(
                    "the inventory's digest for it, {digest}, is not of the form of {}: not audited",
                    inv.digest_algorithm
                ))
            } else {
                Content::File {
                    path: content.to_string(),
                    expected,
                }
            };
            files.insert((v.clone(), l.to_string()), c);
        }
    }
    Ok(Object {
        files,
        algorithm: alg,
    })
}

/// A walk's item refusing `path` for `reason`.
fn refused(path: PathBuf, reason: impl Into<String>) -> WalkItem {
    WalkItem::Error(WalkError::Refused {
        path,
        reason: reason.into(),
    })
}

/// A logical path sent to be read: its path, the digests it must have, and its version's
/// directory (what it is fixed in).
type Named = (PathBuf, Digests, PathBuf);

/// A logical path of the plan waiting for its content file: its entry, the digests it must
/// have, its version's directory.
type Planned = (FileEntry, Digests, PathBuf);

/// Logical paths of one object grouped before their content files are sent, at most this many.
const GROUP_FILES: usize = 4096;

/// The plan's logical paths of one object, by content file.
#[derive(Default)]
struct Group {
    /// The object (its root's index and directory below it).
    object: Option<(usize, Name)>,
    /// Content path below the root -> the logical paths' entries that name it.
    by_content: HashMap<Name, Vec<Planned>>,
    files: usize,
}

impl Group {
    fn add(&mut self, e: FileEntry, content: Name, want: Digests, unit: PathBuf) {
        self.files += 1;
        self.by_content
            .entry(content)
            .or_default()
            .push((e, want, unit));
    }

    /// Sends one read per content file, opened beneath its root without following any link
    /// (nothing inside an object may be one), the logical paths it stands for left in
    /// `waiting`; false once the reader has stopped.
    fn send(
        &mut self,
        tx: &crossbeam_channel::Sender<FileEntry>,
        waiting: &Mutex<HashMap<PathBuf, Vec<Named>>>,
        dirs: &[Option<Arc<RootDir>>],
    ) -> bool {
        self.files = 0;
        let mut groups: Vec<(Name, Vec<Planned>)> =
            std::mem::take(&mut self.by_content).into_iter().collect();
        groups.sort_by(|a, b| a.1[0].0.path.cmp(&b.1[0].0.path));
        for (content, entries) in groups {
            let first = entries[0].0.clone();
            let Some(Some(rd)) = dirs.get(first.root).cloned() else {
                continue;
            };
            let names = entries
                .into_iter()
                .map(|(e, w, u)| (e.path, w, u))
                .collect();
            waiting
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(first.path.clone(), names);
            let open = Opener(Arc::new(move || {
                let segs = content.split(|&b| b == b'/').map(<[u8]>::to_vec).collect();
                open_no_links(&rd, segs).map_err(|why| match why {
                    Refused::Outside => std::io::Error::from_raw_os_error(libc::ELOOP),
                    Refused::NotFound => std::io::Error::from(std::io::ErrorKind::NotFound),
                })
            }));
            if tx
                .send(FileEntry {
                    open: Some(open),
                    dir: None,
                    ..first
                })
                .is_err()
            {
                return false;
            }
        }
        true
    }
}

/// OCFL storage roots (or objects) as an audit's source. Their hierarchy's faults are
/// `trawl ocfl validate`'s to report; here a walk lists what the inventories hold, and names
/// what it cannot audit.
#[derive(Default)]
pub struct OcflSource {
    /// The objects the walk found, per root: each one's directory below its root (empty: the
    /// root is the object). One name per object, not per file.
    objects: Vec<HashSet<Name>>,
    /// The digest algorithms of the inventories the walk read: the reads compute them, so that
    /// every file is held to its inventory whatever the catalog's algorithms.
    inventory_algorithms: Vec<Algorithm>,
    /// The last object read from, with its files (reads come object by object).
    last: Option<((usize, Name), Arc<Files>)>,
}

/// A logical path is refused by naming it: the paths that are not plain relative paths
/// cannot be, and are named by their version, counted, the first few quoted.
fn not_plain(dir: &Path, v: &str, bad: &[&str]) -> WalkItem {
    let quoted: Vec<String> = bad.iter().take(3).map(|l| format!("'{l}'")).collect();
    let more = if bad.len() > 3 {
        format!(" and {} more", bad.len() - 3)
    } else {
        String::new()
    };
    refused(
        dir.join(v),
        format!(
            "the inventory names {} logical path{} that {} not a plain relative path ({}{more}): not audited",
            bad.len(),
            if bad.len() == 1 { "" } else { "s" },
            if bad.len() == 1 { "is" } else { "are" },
            quoted.join(", ")
        ),
    )
}

impl OcflSource {
    /// A source with nothing read yet.
    pub fn new() -> OcflSource {
        OcflSource::default()
    }

    /// The object a logical path (below root `ri`) is in, among those the walk found, and
    /// the path's version and logical path in it.
    fn object_of<'r>(&self, ri: usize, rel: &'r [u8]) -> Option<(Name, &'r [u8], &'r [u8])> {
        let found = self.objects.get(ri)?;
        // Each `/` (and the start) is where an object's directory may end; the segment after
        // it must be a version's. Objects are never nested, so at most one matches.
        let starts = std::iter::once(0).chain(
            rel.iter()
                .enumerate()
                .filter(|(_, b)| **b == b'/')
                .map(|(i, _)| i + 1),
        );
        for start in starts {
            let obj = &rel[..start.saturating_sub(1)];
            let rest = &rel[start..];
            let Some(slash) = rest.iter().position(|&b| b == b'/') else {
                break;
            };
            let (v, logical) = (&rest[..slash], &rest[slash + 1..]);
            if is_version_name(v) && found.contains(obj) {
                return Some((obj.to_vec(), v, logical));
            }
        }
        None
    }

    /// The object (below the root), its content file (below the root), the expected digests
    /// and the version's directory of a logical path below root `ri` (opened as `top`).
    fn resolve(
        &mut self,
        (ri, top): (usize, &DirAt),
        rel: &[u8],
    ) -> Option<(Name, Name, Digests, Name)> {
        let (obj, v, logical) = self.object_of(ri, rel)?;
        let key = (ri, obj);
        let files = match &self.last {
            Some((k, f)) if *k == key => f.clone(),
            _ => {
                let dir = open_rel(top, &key.1).ok()?;
                let f = Arc::new(object_files(&dir).ok()?.files);
                self.last = Some((key.clone(), f.clone()));
                f
            }
        };
        let unit = join(&key.1, v);
        let v = std::str::from_utf8(v).ok()?.to_string();
        let logical = std::str::from_utf8(logical).ok()?.to_string();
        match files.get(&(v, logical))? {
            Content::File { path, expected } => Some((
                key.1.clone(),
                join(&key.1, path.as_bytes()),
                expected.clone(),
                unit,
            )),
            Content::Refused(_) => None,
        }
    }

    /// Hands on the logical files of the object at `rel` below `root` (index `ri`, opened as
    /// `rd`; the object's directory opened as `opened`): each whose content file is there, a
    /// regular file reached without a link, as a file; each that cannot be so, as refused,
    /// named.
    fn object(
        &mut self,
        (ri, root, rd): (usize, &Path, &RootDir),
        (rel, opened): (&[u8], std::io::Result<DirAt>),
        item: &mut dyn FnMut(WalkItem) -> Result<(), CatalogError>,
    ) -> Result<(), CatalogError> {
        let dir = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(std::ffi::OsStr::from_bytes(rel))
        };
        // Refused as a whole, the object is named by its directory: what was registered in
        // it is then not called missing.
        let object = match opened
            .map_err(|e| format!("cannot be opened: {e}"))
            .and_then(|d| object_files(&d))
        {
            Ok(o) => o,
            Err(why) => return item(refused(dir, format!("{why}: the object is not audited"))),
        };
        if !self.inventory_algorithms.contains(&object.algorithm) {
            self.inventory_algorithms.push(object.algorithm);
        }
        if let Some(found) = self.objects.get_mut(ri) {
            found.insert(rel.to_vec());
        }
        let files = object.files;
        let mut names: Vec<&(String, String)> = files.keys().collect();
        names.sort();
        let mut bad: Vec<&str> = Vec::new();
        let mut bad_version: Option<&str> = None;
        for key in names {
            let (v, logical) = key;
            if bad_version.is_some_and(|b| b != v) {
                item(not_plain(&dir, bad_version.unwrap_or_default(), &bad))?;
                bad.clear();
            }
            if plain(logical).is_none() {
                bad.push(logical);
                bad_version = Some(v);
                continue;
            }
            let virt = dir.join(v).join(logical);
            let content = match &files[key] {
                Content::File { path, .. } => path,
                Content::Refused(why) => {
                    item(refused(virt, why.clone()))?;
                    continue;
                }
            };
            let segs = join(rel, content.as_bytes())
                .split(|&b| b == b'/')
                .map(<[u8]>::to_vec)
                .collect();
            match open_path_no_links(rd, segs).map(|f| f.metadata()) {
                Ok(Ok(m)) if m.is_file() => {
                    use std::os::unix::fs::MetadataExt;
                    item(WalkItem::File(FileEntry {
                        path: virt,
                        root: ri,
                        size: m.len(),
                        dev: m.dev(),
                        ino: m.ino(),
                        mtime_ns: m.mtime() * 1_000_000_000 + m.mtime_nsec(),
                        dir: None,
                        open: None,
                    }))?;
                }
                Ok(Ok(_)) => item(refused(
                    virt,
                    format!("its content file {content} is not a regular file: not read"),
                ))?,
                Err(Refused::Outside) => item(refused(
                    virt,
                    format!(
                        "its content file {content} is reached through a symbolic link inside the object: not followed"
                    ),
                ))?,
                // The inventory lists it and the object lacks it: named, whether or not it was
                // registered before.
                Ok(Err(_)) | Err(Refused::NotFound) => item(refused(
                    virt,
                    format!("the inventory lists it, but its content file {content} is not there"),
                ))?,
            }
        }
        if let Some(v) = bad_version {
            item(not_plain(&dir, v, &bad))?;
        }
        Ok(())
    }

    /// One thing the walk of a hierarchy found: an object audited, anything else named.
    fn found(
        &mut self,
        f: Found,
        (ri, root, rd): (usize, &Path, &RootDir),
        item: &mut dyn FnMut(WalkItem) -> Result<(), CatalogError>,
    ) -> Result<(), CatalogError> {
        let at = |rel: &[u8]| root.join(std::ffi::OsStr::from_bytes(rel));
        match f {
            Found::Object(rel, _, dir) => self.object((ri, root, rd), (&rel, Ok(dir)), item),
            Found::Unchecked(rel, why) => item(refused(
                at(&rel),
                format!("{why}: any object in it is not audited"),
            )),
            Found::Link(rel) => item(refused(
                at(&rel),
                "a symbolic link or special file in the storage hierarchy: not followed, any object it leads to is not audited",
            )),
        }
    }
}

impl Source for OcflSource {
    /// An OCFL version's content never changes.
    fn fixed(&self) -> bool {
        true
    }

    fn walk(
        &mut self,
        roots: &[PathBuf],
        _opts: &WalkOptions,
        stop: &Stop,
        item: &mut dyn FnMut(WalkItem) -> std::ops::ControlFlow<CatalogError>,
    ) -> Result<(), SourceError> {
        // The walk's helpers stop at an `Err`: a break's error, carried as one.
        let item = &mut |it| item(it).break_value().map_or(Ok(()), Err);
        self.objects = vec![HashSet::new(); roots.len()];
        self.inventory_algorithms.clear();
        self.last = None;
        for (ri, root) in roots.iter().enumerate() {
            let opened =
                DirAt::open(root).and_then(|top| Ok((list(&top)?, RootDir::open(root)?, top)));
            let (entries, rd, top) = match opened {
                Ok(o) => o,
                Err(source) => {
                    item(WalkItem::Error(WalkError::Io {
                        path: root.clone(),
                        source,
                    }))?;
                    continue;
                }
            };
            if !root::is_storage_root(&entries) && !root::lacks_declaration(&entries) {
                self.object((ri, root, &rd), (b"", Ok(top)), item)?;
                continue;
            }
            // Every object the hierarchy holds is audited, whatever its name's bytes; what may
            // hold one and cannot be checked is named, never passed over.
            let mut walk = root::Walk::new(top, &entries);
            // The hierarchy's own faults are `ocfl validate`'s to report: its log is dropped
            // as it goes.
            let mut log = Log::default();
            while let Some(f) = walk.next(&mut log) {
                if stop.is_stopping() {
                    return Ok(());
                }
                log = Log::default();
                self.found(f, (ri, root, &rd), item)?;
            }
        }
        Ok(())
    }

    fn read(
        &mut self,
        plan: ReadPlan<'_>,
        progress: &dyn Progress,
        stop: &Stop,
        found: &mut dyn FnMut(ReadResult<'_>),
    ) -> Result<(), SourceError> {
        // The catalog's algorithms, then the inventories' that it lacks: a file is held to its
        // inventory whatever the catalog computes.
        let mut algorithms = plan.algorithms.to_vec();
        for a in &self.inventory_algorithms {
            if !algorithms.contains(a) {
                algorithms.push(*a);
            }
        }
        let lanes = DigestLanes(algorithms);
        // Each content file sent, by the logical path it was sent as: every logical path it
        // stands for, with what each expects (the first is the one sent).
        let waiting: Mutex<HashMap<PathBuf, Vec<Named>>> = Default::default();
        let gone: Mutex<Vec<PathBuf>> = Default::default();
        let (tx, rx) = crossbeam_channel::bounded::<FileEntry>(1024);
        let roots = plan.roots;
        let dirs: Vec<Option<Arc<RootDir>>> = roots
            .iter()
            .map(|r| RootDir::open(r).ok().map(Arc::new))
            .collect();
        // Each root's directory, for the inventories (opened as the walk opened them).
        let tops: Vec<Option<DirAt>> = roots.iter().map(|r| DirAt::open(r).ok()).collect();
        let feed = plan.feed;
        std::thread::scope(|s| {
            let (waiting, gone) = (&waiting, &gone);
            s.spawn(move || {
                // The plan's files of one object, in a row, are grouped by content file: a
                // content file several versions name is read once for all of them.
                let mut group = Group::default();
                for e in feed {
                    let root = &roots[e.root];
                    let top = tops.get(e.root).and_then(Option::as_ref);
                    let hit = e
                        .path
                        .strip_prefix(root)
                        .ok()
                        .zip(top)
                        .and_then(|(rel, top)| {
                            self.resolve((e.root, top), rel.as_os_str().as_bytes())
                        });
                    let (Some((obj, content, want, unit)), Some(Some(_))) = (hit, dirs.get(e.root))
                    else {
                        gone.lock().unwrap_or_else(|p| p.into_inner()).push(e.path);
                        continue;
                    };
                    let object = (e.root, obj);
                    if group.object.as_ref() != Some(&object) || group.files >= GROUP_FILES {
                        if !group.send(&tx, waiting, &dirs) {
                            return;
                        }
                        group.object = Some(object);
                    }
                    let unit = root.join(std::ffi::OsStr::from_bytes(&unit));
                    group.add(e, content, want, unit);
                }
                group.send(&tx, waiting, &dirs);
            });
            trawl_scan::scan(
                plan.cfg,
                Input::Stream(rx),
                &lanes,
                progress,
                stop,
                &mut |ev| {
                    let path = match &ev {
                        Event::File(rec) => rec.path.clone(),
                        Event::Failed(e) => match e.path() {
                            Some(p) => p.to_path_buf(),
                            None => {
                                return found(ReadResult::Failed {
                                    path: None,
                                    error: e,
                                });
                            }
                        },
                        Event::Skipped { path, .. } => path.clone(),
                        // Content files are streamed, not walked: nothing is excluded.
                        Event::Excluded(_) => return,
                    };
                    let named = waiting
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&path)
                        .unwrap_or_default();
                    for (logical, want, unit) in &named {
                        match &ev {
                            Event::File(rec) => found(ReadResult::Read {
                                root: rec.root,
                                path: logical,
                                size: rec.size,
                                mtime_ns: rec.mtime_sec * 1_000_000_000 + rec.mtime_nsec,
                                dev: rec.dev,
                                ino: rec.ino,
                                digests: &rec.digests(),
                                expected: Some(Expected {
                                    digests: want,
                                    from: FROM,
                                    fixed: Some(unit),
                                }),
                            }),
                            Event::Failed(ScanError::Read(ReadError::Vanished { .. })) => {
                                found(ReadResult::Gone { path: logical })
                            }
                            Event::Failed(e) => found(ReadResult::Failed {
                                path: Some(logical),
                                error: e,
                            }),
                            Event::Skipped { .. } | Event::Excluded(_) => {}
                        }
                    }
                },
            );
        });
        for path in gone.into_inner().unwrap_or_else(|p| p.into_inner()) {
            found(ReadResult::Gone { path: &path });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logical_path_is_taken_to_an_object_the_walk_found_only() {
        let mut s = OcflSource::new();
        s.objects = vec![HashSet::from([b"v1".to_vec(), b"a/b".to_vec()])];
        // An object named like a version: its own v1, not the root's.
        assert_eq!(
            s.object_of(0, b"v1/v1/doc.txt"),
            Some((b"v1".to_vec(), &b"v1"[..], &b"doc.txt"[..]))
        );
        assert_eq!(
            s.object_of(0, b"a/b/v2/v1/x"),
            Some((b"a/b".to_vec(), &b"v2"[..], &b"v1/x"[..]))
        );
        // No object the walk found: nothing, whatever the path's shape.
        assert_eq!(s.object_of(0, b"v2/doc.txt"), None);
        assert_eq!(s.object_of(0, b"a/v1/x"), None);
        assert_eq!(s.object_of(1, b"v1/v1/doc.txt"), None);
        // The root as the object.
        s.objects = vec![HashSet::from([Vec::new()])];
        assert_eq!(
            s.object_of(0, b"v3/d/e"),
            Some((Vec::new(), &b"v3"[..], &b"d/e"[..]))
        );
    }

    #[test]
    fn only_plain_paths_are_looked_for() {
        assert!(plain("v1/content/a").is_some());
        for bad in [
            "/etc/passwd",
            "v1/content/../../..",
            "v1//a",
            "v1/./a",
            "a\0b",
            "",
        ] {
            assert!(plain(bad).is_none(), "{bad}");
        }
    }
}
