//! An audit's walk and reads over OCFL storage roots: the catalog sees each version's files
//! under their logical paths (`OBJECT/vN/LOGICAL`, OBJECT the object's directory below the
//! root), each read from its content file, with the inventory's digests as the expected ones.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use trawl_catalog::{CatalogError, Expected, ReadPlan, ReadResult, Source, SourceError};
use trawl_digest::Algorithm;
use trawl_read::{ReadError, RootDir, open_beneath, plain_segments};
use trawl_scan::{DigestLanes, Event, Input, Progress, ScanError};
use trawl_stop::Stop;
use trawl_walk::{FileEntry, Opener, WalkError, WalkItem, WalkOptions};

use crate::inventory::{algorithm, digest_paths, normalized, state_of};
use crate::log::Log;
use crate::object::{list, read_small};
use crate::root;

/// Where the expected digests come from, as events name it.
const FROM: &str = "the OCFL inventory";

/// Digests by algorithm.
type Digests = Vec<(Algorithm, Vec<u8>)>;

/// One object's logical files: (version, logical path) -> (content path, expected digests).
type Files = HashMap<(String, String), (String, Digests)>;

/// The root inventory's files of the object at `dir`, or why there are none.
fn object_files(dir: &Path) -> Result<Files, String> {
    let raw = read_small(&dir.join("inventory.json"), 1 << 30)
        .map_err(|e| format!("inventory.json: {e}"))?;
    let mut log = Log::default();
    let inv = crate::inventory::check(&raw, "inventory.json", "1.1", &mut log)
        .ok_or_else(|| "inventory.json: not valid JSON".to_string())?;
    let alg = algorithm(&inv.digest_algorithm)
        .ok_or_else(|| format!("inventory.json: digest algorithm {}", inv.digest_algorithm))?;
    let manifest = inv.value.get("manifest").and_then(Value::as_object);
    // The fixity block's digests of each content path.
    let mut fixity: HashMap<&str, Vec<(Algorithm, Vec<u8>)>> = HashMap::new();
    if let Some(Value::Object(f)) = inv.value.get("fixity") {
        for (name, block) in f {
            let (Some(a), Some(block)) = (algorithm(name), block.as_object()) else {
                continue;
            };
            for (d, p) in digest_paths(block) {
                if let Ok(bytes) = hex::decode(normalized(d)) {
                    fixity.entry(p).or_default().push((a, bytes));
                }
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
            let (Some(content), Ok(bytes)) = (content, hex::decode(normalized(digest))) else {
                continue;
            };
            let mut expected = vec![(alg, bytes)];
            expected.extend(fixity.get(content).cloned().unwrap_or_default());
            files.insert((v.clone(), l.to_string()), (content.to_string(), expected));
        }
    }
    Ok(files)
}

/// The objects to audit under `root`: every object of a storage root, or the root itself when
/// it is an object.
fn objects(root: &Path, stop: &Stop) -> std::io::Result<Vec<String>> {
    let entries = list(root)?;
    if !root::is_storage_root(&entries) && !root::lacks_declaration(&entries) {
        return Ok(vec![String::new()]);
    }
    let mut walk = root::Walk::new(root, &entries);
    let mut out = Vec::new();
    let mut log = Log::default();
    while let Some((rel, _)) = walk.next(&mut log) {
        if stop.is_stopping() {
            break;
        }
        out.push(rel);
    }
    Ok(out)
}

fn join(root: &Path, rel: &str) -> PathBuf {
    if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    }
}

/// Logical paths of one object grouped before their content files are sent, at most this many.
const GROUP_FILES: usize = 4096;

/// The plan's logical paths of one object, by content file.
#[derive(Default)]
struct Group {
    /// The object (its root's index and directory below it).
    object: Option<(usize, String)>,
    /// Content path below the root -> the logical paths' entries that name it.
    by_content: HashMap<String, Vec<(FileEntry, Digests)>>,
    files: usize,
}

impl Group {
    fn add(&mut self, e: FileEntry, content: String, want: Digests) {
        self.files += 1;
        self.by_content.entry(content).or_default().push((e, want));
    }

    /// Sends one read per content file, opened beneath its root (never through a link that
    /// leaves it), the logical paths it stands for left in `waiting`; false once the reader has
    /// stopped.
    fn send(
        &mut self,
        tx: &crossbeam_channel::Sender<FileEntry>,
        waiting: &Mutex<HashMap<PathBuf, Vec<(PathBuf, Digests)>>>,
        dirs: &[Option<Arc<RootDir>>],
    ) -> bool {
        self.files = 0;
        let mut groups: Vec<(String, Vec<(FileEntry, Digests)>)> =
            std::mem::take(&mut self.by_content).into_iter().collect();
        groups.sort_by(|a, b| a.1[0].0.path.cmp(&b.1[0].0.path));
        for (content, entries) in groups {
            let first = entries[0].0.clone();
            let Some(Some(rd)) = dirs.get(first.root).cloned() else {
                continue;
            };
            let names = entries.into_iter().map(|(e, w)| (e.path, w)).collect();
            waiting
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(first.path.clone(), names);
            let open = Opener(Arc::new(move || {
                let segs = plain_segments(content.as_bytes())
                    .ok_or_else(|| std::io::Error::other("not a plain path"))?;
                open_beneath(&rd, segs).map_err(|why| {
                    std::io::Error::other(format!("content file not opened: {why:?}"))
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
/// `trawl ocfl validate`'s to report; here a walk lists what the inventories hold.
#[derive(Default)]
pub struct OcflSource {
    /// The last object read from, with its files (reads come object by object).
    last: Option<(PathBuf, Arc<Files>)>,
}

impl OcflSource {
    /// A source with nothing read yet.
    pub fn new() -> OcflSource {
        OcflSource::default()
    }

    /// The content file and expected digests of a logical path (below `root`), the object
    /// found by the first version directory beneath which an inventory lies.
    fn resolve(&mut self, root: &Path, rel: &str) -> Option<(String, String, Digests)> {
        let parts: Vec<&str> = rel.split('/').collect();
        for i in 0..parts.len().saturating_sub(1) {
            let v = parts[i];
            if !(v.len() > 1 && v.starts_with('v') && v[1..].bytes().all(|b| b.is_ascii_digit())) {
                continue;
            }
            let obj = parts[..i].join("/");
            let dir = join(root, &obj);
            let files = match &self.last {
                Some((d, f)) if *d == dir => f.clone(),
                _ => {
                    if !dir.join("inventory.json").is_file() {
                        continue;
                    }
                    let f = Arc::new(object_files(&dir).ok()?);
                    self.last = Some((dir.clone(), f.clone()));
                    f
                }
            };
            let logical = parts[i + 1..].join("/");
            let (content, expected) = files.get(&(v.to_string(), logical))?;
            return Some((obj, content.clone(), expected.clone()));
        }
        None
    }
}

impl Source for OcflSource {
    fn walk(
        &mut self,
        roots: &[PathBuf],
        _opts: &WalkOptions,
        stop: &Stop,
        item: &mut dyn FnMut(WalkItem) -> Result<(), CatalogError>,
    ) -> Result<(), SourceError> {
        for (ri, root) in roots.iter().enumerate() {
            let objs = match objects(root, stop) {
                Ok(o) => o,
                Err(source) => {
                    item(WalkItem::Error(WalkError::Io {
                        path: root.clone(),
                        source,
                    }))?;
                    continue;
                }
            };
            for obj in objs {
                if stop.is_stopping() {
                    return Ok(());
                }
                let dir = join(root, &obj);
                let files = match object_files(&dir) {
                    Ok(f) => f,
                    Err(why) => {
                        item(WalkItem::Error(WalkError::Io {
                            path: dir.join("inventory.json"),
                            source: std::io::Error::other(why),
                        }))?;
                        continue;
                    }
                };
                let mut names: Vec<&(String, String)> = files.keys().collect();
                names.sort();
                for key in names {
                    let (v, logical) = key;
                    let (content, _) = &files[key];
                    let physical = dir.join(content);
                    let virt = join(root, &obj).join(v).join(logical);
                    match physical.symlink_metadata() {
                        Ok(m) if m.is_file() => {
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
                        // Not there, or not a file: the logical path is not found (missing,
                        // once registered).
                        _ => {}
                    }
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
        let lanes = DigestLanes(plan.algorithms.to_vec());
        // Each content file sent, by the logical path it was sent as: every logical path it
        // stands for, with what each expects (the first is the one sent).
        let waiting: Mutex<HashMap<PathBuf, Vec<(PathBuf, Digests)>>> = Default::default();
        let gone: Mutex<Vec<PathBuf>> = Default::default();
        let (tx, rx) = crossbeam_channel::bounded::<FileEntry>(1024);
        let roots = plan.roots;
        let dirs: Vec<Option<Arc<RootDir>>> = roots
            .iter()
            .map(|r| RootDir::open(r).ok().map(Arc::new))
            .collect();
        let feed = plan.feed;
        std::thread::scope(|s| {
            let (waiting, gone) = (&waiting, &gone);
            s.spawn(move || {
                // The plan's files of one object, in a row, are grouped by content file: a
                // content file several versions name is read once for all of them.
                let mut group = Group::default();
                for e in feed {
                    let root = &roots[e.root];
                    let rel = e
                        .path
                        .strip_prefix(root)
                        .ok()
                        .and_then(|r| r.to_str())
                        .map(String::from);
                    let hit = rel.and_then(|rel| self.resolve(root, &rel));
                    let (Some((obj, content, want)), Some(Some(_))) = (hit, dirs.get(e.root))
                    else {
                        gone.lock().unwrap_or_else(|p| p.into_inner()).push(e.path);
                        continue;
                    };
                    let rel_content = if obj.is_empty() {
                        content
                    } else {
                        format!("{obj}/{content}")
                    };
                    let object = (e.root, obj);
                    if group.object.as_ref() != Some(&object) || group.files >= GROUP_FILES {
                        if !group.send(&tx, waiting, &dirs) {
                            return;
                        }
                        group.object = Some(object);
                    }
                    group.add(e, rel_content, want);
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
                    };
                    let named = waiting
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&path)
                        .unwrap_or_default();
                    for (logical, want) in &named {
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
                                }),
                            }),
                            Event::Failed(ScanError::Read(ReadError::Vanished { .. })) => {
                                found(ReadResult::Gone { path: logical })
                            }
                            Event::Failed(e) => found(ReadResult::Failed {
                                path: Some(logical),
                                error: e,
                            }),
                            Event::Skipped { .. } => {}
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
