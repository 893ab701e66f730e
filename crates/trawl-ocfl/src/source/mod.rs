//! An audit's walk and reads over OCFL storage roots: the catalog sees each version's files
//! under their logical paths (`OBJECT/vN/LOGICAL`, OBJECT the object's directory below the
//! root), each read from its content file (through trawl-scan's reading service), with the
//! inventory's digests as the expected ones.
//!
//! The objects are those the walk of the hierarchy found (as `ocfl validate` walks it, names
//! kept as bytes, every directory opened from its parent's descriptor without following a
//! link), and a logical path read later is taken back to its object through them, never by
//! the shape of its path. Inside an object no symbolic link is followed, and a content path
//! that would leave the object is refused before any system call. An inventory whose sidecar
//! does not match it is not trusted; every version's inventory gives its digests too, and
//! whatever cannot be audited (a link in the hierarchy, a directory that cannot be checked, a
//! content file the inventory lists and the object lacks) is named.

mod files;
mod read;
#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use trawl_catalog::{CatalogError, ReadPlan, ReadResult, Source, SourceError};
use trawl_digest::Algorithm;
use trawl_read::{DirAt, Refused, RootDir, open_path_no_links};
use trawl_scan::Progress;
use trawl_stop::Stop;
use trawl_walk::{FileEntry, WalkError, WalkItem, WalkOptions};

use crate::log::Log;
use crate::object::is_version_name;
use crate::root::{self, Found};
use crate::tree::{Name, OcflDir, join, list, open_rel};
use files::{Content, Digests, Files, object_files, plain};

/// A walk's item refusing `path` for `reason`.
fn refused(path: PathBuf, reason: impl Into<String>) -> WalkItem {
    WalkItem::Error(WalkError::Refused {
        path,
        reason: reason.into(),
    })
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
    /// `rd`; the object's directory opened as `dir`), or names the object refused as a whole.
    fn object(
        &mut self,
        (ri, root, rd): (usize, &Path, &RootDir),
        (rel, dir): (&[u8], Box<dyn OcflDir>),
        item: &mut dyn FnMut(WalkItem) -> ControlFlow<CatalogError>,
    ) -> ControlFlow<CatalogError> {
        let at = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(std::ffi::OsStr::from_bytes(rel))
        };
        // Refused as a whole, the object is named by its directory: what was registered in
        // it is then not called missing.
        let object = match object_files(&*dir) {
            Ok(o) => o,
            Err(why) => return item(refused(at, format!("{why}: the object is not audited"))),
        };
        if !self.inventory_algorithms.contains(&object.algorithm) {
            self.inventory_algorithms.push(object.algorithm);
        }
        if let Some(found) = self.objects.get_mut(ri) {
            found.insert(rel.to_vec());
        }
        ObjectAt { at, rel, ri, rd }.hand_on(&object.files, item)
    }

    /// One thing the walk of a hierarchy found: an object audited, anything else named.
    fn found(
        &mut self,
        f: Found,
        (ri, root, rd): (usize, &Path, &RootDir),
        item: &mut dyn FnMut(WalkItem) -> ControlFlow<CatalogError>,
    ) -> ControlFlow<CatalogError> {
        let at = |rel: &[u8]| root.join(std::ffi::OsStr::from_bytes(rel));
        match f {
            Found::Object(rel, _, dir) => self.object((ri, root, rd), (&rel, dir), item),
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
        item: &mut dyn FnMut(WalkItem) -> ControlFlow<CatalogError>,
    ) -> Result<(), SourceError> {
        self.objects = vec![HashSet::new(); roots.len()];
        self.inventory_algorithms.clear();
        self.last = None;
        for (ri, root) in roots.iter().enumerate() {
            let opened =
                DirAt::open(root).and_then(|top| Ok((list(&top)?, RootDir::open(root)?, top)));
            let (entries, rd, top) = match opened {
                Ok(o) => o,
                Err(source) => {
                    let e = WalkError::Io {
                        path: root.clone(),
                        source,
                    };
                    if let ControlFlow::Break(e) = item(WalkItem::Error(e)) {
                        return Err(e.into());
                    }
                    continue;
                }
            };
            if !root::is_storage_root(&entries) && !root::lacks_declaration(&entries) {
                if let ControlFlow::Break(e) =
                    self.object((ri, root, &rd), (b"", Box::new(top)), item)
                {
                    return Err(e.into());
                }
                continue;
            }
            // Every object the hierarchy holds is audited, whatever its name's bytes; what may
            // hold one and cannot be checked is named, never passed over.
            let mut walk = root::Walk::new(Box::new(top), &entries);
            // The hierarchy's own faults are `ocfl validate`'s to report: its log is dropped
            // as it goes.
            let mut log = Log::default();
            while let Some(f) = walk.next(&mut log) {
                if stop.is_stopping() {
                    return Ok(());
                }
                log = Log::default();
                if let ControlFlow::Break(e) = self.found(f, (ri, root, &rd), item) {
                    return Err(e.into());
                }
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
        read::read(self, plan, progress, stop, found);
        Ok(())
    }
}

/// One object the walk found, as its logical files are handed on.
struct ObjectAt<'a> {
    /// Its directory, as the walk names it.
    at: PathBuf,
    /// Its directory below its root.
    rel: &'a [u8],
    /// Its root's index, and its root opened.
    ri: usize,
    rd: &'a RootDir,
}

impl ObjectAt<'_> {
    /// Hands on the object's logical files in order: each whose content file is there, a
    /// regular file reached without a link, as a file; each that cannot be so, as refused,
    /// named; the logical paths that are not plain relative paths named by their version.
    fn hand_on(
        &self,
        files: &Files,
        item: &mut dyn FnMut(WalkItem) -> ControlFlow<CatalogError>,
    ) -> ControlFlow<CatalogError> {
        let mut names: Vec<&(String, String)> = files.keys().collect();
        names.sort();
        let mut bad: Vec<&str> = Vec::new();
        let mut bad_version: Option<&str> = None;
        for key in names {
            let (v, logical) = key;
            if bad_version.is_some_and(|b| b != v) {
                item(not_plain(&self.at, bad_version.unwrap_or_default(), &bad))?;
                bad.clear();
            }
            if plain(logical).is_none() {
                bad.push(logical);
                bad_version = Some(v);
                continue;
            }
            let virt = self.at.join(v).join(logical);
            match &files[key] {
                Content::File { path, .. } => item(self.logical(virt, path))?,
                Content::Refused(why) => item(refused(virt, why.to_string()))?,
            }
        }
        if let Some(v) = bad_version {
            item(not_plain(&self.at, v, &bad))?;
        }
        ControlFlow::Continue(())
    }

    /// The walk's item for the logical file `virt` whose content file is `content` (below
    /// the object), opened without following a link to learn what it is.
    fn logical(&self, virt: PathBuf, content: &str) -> WalkItem {
        let segs = join(self.rel, content.as_bytes())
            .split(|&b| b == b'/')
            .map(<[u8]>::to_vec)
            .collect();
        match open_path_no_links(self.rd, segs).map(|f| f.metadata()) {
            Ok(Ok(m)) if m.is_file() => {
                use std::os::unix::fs::MetadataExt;
                WalkItem::File(FileEntry {
                    path: virt,
                    root: self.ri,
                    size: m.len(),
                    dev: m.dev(),
                    ino: m.ino(),
                    mtime_ns: m
                        .mtime()
                        .wrapping_mul(1_000_000_000)
                        .wrapping_add(m.mtime_nsec()),
                    dir: None,
                    open: None,
                })
            }
            Ok(Ok(_)) => refused(
                virt,
                format!("its content file {content} is not a regular file: not read"),
            ),
            Err(Refused::Outside) => refused(
                virt,
                format!(
                    "its content file {content} is reached through a symbolic link inside the object: not followed"
                ),
            ),
            // The inventory lists it and the object lacks it: named, whether or not it was
            // registered before.
            Ok(Err(_)) | Err(Refused::NotFound) => refused(
                virt,
                format!("the inventory lists it, but its content file {content} is not there"),
            ),
        }
    }
}
