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

use crate::inventory::{algorithm, normalized};
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
            for (d, paths) in block {
                let Ok(bytes) = hex::decode(normalized(d)) else {
                    continue;
                };
                for p in paths
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    fixity.entry(p).or_default().push((a, bytes.clone()));
                }
            }
        }
    }
    let mut files = Files::new();
    for v in &inv.all_versions {
        let state = inv
            .value
            .get("versions")
            .and_then(|x| x.get(v))
            .and_then(|x| x.get("state"))
            .and_then(Value::as_object);
        for (digest, logical) in state.into_iter().flatten() {
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
            for l in logical
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                files.insert(
                    (v.clone(), l.to_string()),
                    (content.to_string(), expected.clone()),
                );
            }
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
        let expected: Mutex<HashMap<PathBuf, Digests>> = Default::default();
        let gone: Mutex<Vec<PathBuf>> = Default::default();
        let (tx, rx) = crossbeam_channel::bounded::<FileEntry>(1024);
        let roots = plan.roots;
        let dirs: Vec<Option<Arc<RootDir>>> = roots
            .iter()
            .map(|r| RootDir::open(r).ok().map(Arc::new))
            .collect();
        let feed = plan.feed;
        std::thread::scope(|s| {
            let (expected, gone) = (&expected, &gone);
            s.spawn(move || {
                for e in feed {
                    let root = &roots[e.root];
                    let rel = e
                        .path
                        .strip_prefix(root)
                        .ok()
                        .and_then(|r| r.to_str())
                        .map(String::from);
                    let hit = rel.and_then(|rel| self.resolve(root, &rel));
                    let (Some((obj, content, want)), Some(Some(rd))) = (hit, dirs.get(e.root))
                    else {
                        gone.lock().unwrap_or_else(|p| p.into_inner()).push(e.path);
                        continue;
                    };
                    // Opened beneath the root, never through a link that leaves it.
                    let rel_content = if obj.is_empty() {
                        content
                    } else {
                        format!("{obj}/{content}")
                    };
                    let rd = rd.clone();
                    let open = Opener(Arc::new(move || {
                        let segs = plain_segments(rel_content.as_bytes())
                            .ok_or_else(|| std::io::Error::other("not a plain path"))?;
                        open_beneath(&rd, segs).map_err(|why| {
                            std::io::Error::other(format!("content file not opened: {why:?}"))
                        })
                    }));
                    expected
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(e.path.clone(), want);
                    if tx
                        .send(FileEntry {
                            open: Some(open),
                            dir: None,
                            ..e
                        })
                        .is_err()
                    {
                        return;
                    }
                }
            });
            trawl_scan::scan(
                plan.cfg,
                Input::Stream(rx),
                &lanes,
                progress,
                stop,
                &mut |ev| match ev {
                    Event::File(rec) => {
                        let digests = rec.digests();
                        let want = expected
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .remove(&rec.path);
                        found(ReadResult::Read {
                            root: rec.root,
                            path: &rec.path,
                            size: rec.size,
                            mtime_ns: rec.mtime_sec * 1_000_000_000 + rec.mtime_nsec,
                            dev: rec.dev,
                            ino: rec.ino,
                            digests: &digests,
                            expected: want.as_deref().map(|digests| Expected {
                                digests,
                                from: FROM,
                            }),
                        })
                    }
                    Event::Failed(ScanError::Read(ReadError::Vanished { path, .. })) => {
                        found(ReadResult::Gone { path: &path })
                    }
                    Event::Failed(e) => found(ReadResult::Failed {
                        path: e.path(),
                        error: &e,
                    }),
                    Event::Skipped { .. } => {}
                },
            );
        });
        for path in gone.into_inner().unwrap_or_else(|p| p.into_inner()) {
            found(ReadResult::Gone { path: &path });
        }
        Ok(())
    }
}
