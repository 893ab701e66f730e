//! A storage root's own checks and its hierarchy: the declaration, `ocfl_layout.json`,
//! `extensions/`, and the directories below, walked depth-first in name order: each is an
//! object (its declaration found; not descended into), holds only directories (descended
//! into), or is an error (empty, or holding files without being an object). Only the path
//! from the root to the current directory is held, whatever the number of objects.

use std::path::Path;
use std::sync::Arc;

use crate::inventory::SPEC_VERSIONS;
use crate::log::Log;
use crate::object::namaste_value;
use crate::tree::{Kind, Name, OcflDir, join};
use serde_json::Value;

/// Whether `entries` (a directory's) declare a storage root (`0=ocfl_1.x`).
pub(crate) fn is_storage_root(entries: &[(Name, Kind)]) -> bool {
    entries
        .iter()
        .any(|(n, _)| n.starts_with(b"0=ocfl_") && !n.starts_with(b"0=ocfl_object_"))
}

/// Whether `entries` look like a storage root that lost its declaration: no object
/// declaration, no inventory (an object without its declaration has one), and directories to
/// walk.
pub(crate) fn lacks_declaration(entries: &[(Name, Kind)]) -> bool {
    !entries
        .iter()
        .any(|(n, _)| n.starts_with(b"0=ocfl_object_") || n == b"inventory.json")
        && entries.iter().any(|(_, k)| *k == Kind::Dir)
}

/// The storage root `dir` lies below, and its declared version, when one of its ancestors
/// declares one (`0=ocfl_1.x`): `dir` is then part of that root's hierarchy.
pub(crate) fn enclosing_root(dir: &Path) -> Option<(std::path::PathBuf, String)> {
    let dir = dir.canonicalize().ok()?;
    dir.ancestors().skip(1).find_map(|a| {
        SPEC_VERSIONS.iter().find_map(|v| {
            a.join(format!("0=ocfl_{v}"))
                .symlink_metadata()
                .is_ok_and(|m| m.is_file())
                .then(|| (a.to_path_buf(), v.to_string()))
        })
    })
}

/// The storage root's declaration (one `0=ocfl_1.x` holding its name's value), layout file
/// and extensions, and what else its top level holds. Returns the declared version.
pub(crate) fn check_root(
    dir: &dyn OcflDir,
    entries: &[(Name, Kind)],
    log: &mut Log,
) -> Option<String> {
    let version = declared_version(dir, entries, log);
    for (name, kind) in entries {
        match (name.as_slice(), kind) {
            (b"ocfl_layout.json", Kind::File) => layout(dir, log),
            (b"ocfl_layout.json", _) => log.error(
                "E070",
                "ocfl_layout.json",
                "not a regular file (a directory, symbolic link or special file): not read",
            ),
            (b"extensions", Kind::Dir) => extensions(dir, log),
            (b"extensions", _) => log.error(
                "E086",
                "extensions",
                "the storage root's extensions must be a directory (not a file or symbolic link)",
            ),
            // A link is never followed: what it points to (an object elsewhere, perhaps) is
            // not part of the storage root, and would otherwise pass unchecked and unnamed.
            (_, Kind::Other) => log.error(
                "E072",
                name,
                "a symbolic link or special file in the storage root: not followed, what it points to is not checked",
            ),
            _ => {}
        }
    }
    version
}

/// The storage root's one declaration, `0=ocfl_1.x` holding its name's value: the version it
/// declares.
fn declared_version(dir: &dyn OcflDir, entries: &[(Name, Kind)], log: &mut Log) -> Option<String> {
    let decls: Vec<&Name> = entries
        .iter()
        .filter(|(n, _)| n.starts_with(b"0="))
        .map(|(n, _)| n)
        .collect();
    let one = match decls.as_slice() {
        [one] => *one,
        [] => {
            log.error(
                "E069",
                "",
                "the storage root has no declaration (0=ocfl_1.x)",
            );
            return None;
        }
        many => {
            log.error(
                "E069",
                "",
                format!(
                    "{} declarations; a storage root has exactly one",
                    many.len()
                ),
            );
            return None;
        }
    };
    let Some(v) = one
        .strip_prefix(b"0=ocfl_")
        .and_then(|v| std::str::from_utf8(v).ok())
        .filter(|v| SPEC_VERSIONS.contains(v))
    else {
        log.error(
            "E069",
            one,
            "not a storage root declaration trawl knows (0=ocfl_1.0 or 0=ocfl_1.1)",
        );
        return None;
    };
    let want = format!("ocfl_{v}");
    let ok = dir
        .read_small(one, 4096)
        .map(|b| namaste_value(&String::from_utf8_lossy(&b)) == want)
        .unwrap_or(false);
    if !ok {
        log.error("E069", one, format!("the declaration must hold '{want}'"));
    }
    Some(v.to_string())
}

/// `ocfl_layout.json`: a JSON object with the strings `extension` and `description`.
fn layout(dir: &dyn OcflDir, log: &mut Log) {
    let good = dir
        .read_small(b"ocfl_layout.json", 1 << 20)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .is_some_and(|v| {
            v.get("extension").is_some_and(Value::is_string)
                && v.get("description").is_some_and(Value::is_string)
        });
    if !good {
        log.error(
            "E070",
            "ocfl_layout.json",
            "must be a JSON object with the strings `extension` and `description`",
        );
    }
}

/// `extensions/`: directories only.
fn extensions(dir: &dyn OcflDir, log: &mut Log) {
    let listed = dir
        .open(b"extensions")
        .map_err(|e| e.to_string())
        .and_then(|d| d.list().map_err(|e| e.to_string()));
    let ext = match listed {
        Ok(ext) => ext,
        Err(e) => return log.error("E086", "extensions", format!("cannot be listed: {e}")),
    };
    for (name, kind) in ext {
        if kind != Kind::Dir {
            log.error(
                "E086",
                join(b"extensions", &name),
                "the storage root's extensions directory must hold only directories",
            );
        }
    }
}

/// What the walk of a hierarchy met next.
pub(crate) enum Found {
    /// An object's directory (below the root), the version it declares, and the directory
    /// opened.
    Object(Name, String, Box<dyn OcflDir>),
    /// A directory that may hold or be an object, but cannot be checked (it cannot be listed,
    /// its declarations are not an object's trawl knows, or it holds an inventory without a
    /// declaration), and why.
    Unchecked(Name, String),
    /// A symbolic link or special file in the hierarchy (never followed: an object it leads to
    /// is not checked).
    Link(Name),
}

/// The storage root's hierarchy, walked depth-first in name order.
pub(crate) struct Walk {
    /// Directories still to visit, per level (reversed, so the next is last), each level with
    /// the directory that holds them, opened: each is opened from it by its name alone.
    stack: Vec<(Arc<dyn OcflDir>, Vec<Name>)>,
    /// Links and special files met and not yet handed on.
    links: Vec<Name>,
}

impl Walk {
    /// Starts below `root`, whose top-level `entries` are given (`extensions/` is not part of
    /// the hierarchy; files at the top are the root's own).
    pub(crate) fn new(root: Box<dyn OcflDir>, entries: &[(Name, Kind)]) -> Walk {
        let mut top: Vec<Name> = entries
            .iter()
            .filter(|(n, k)| *k == Kind::Dir && n != b"extensions")
            .map(|(n, _)| n.clone())
            .collect();
        top.reverse();
        // The root's own checks name these (E072, E070, E086); the walk hands them on too.
        let mut links: Vec<Name> = entries
            .iter()
            .filter(|(_, k)| *k == Kind::Other)
            .map(|(n, _)| n.clone())
            .collect();
        links.reverse();
        Walk {
            stack: vec![(Arc::from(root), top)],
            links,
        }
    }

    /// The next object's directory (below the root) and the version it declares, logging what
    /// is wrong on the way; `None` at the end.
    pub(crate) fn next_object(
        &mut self,
        log: &mut Log,
    ) -> Option<(Name, String, Box<dyn OcflDir>)> {
        loop {
            if let Found::Object(rel, v, dir) = self.next(log)? {
                return Some((rel, v, dir));
            }
        }
    }

    /// The next object, or directory that cannot be checked, logging what is wrong on the
    /// way; `None` at the end.
    pub(crate) fn next(&mut self, log: &mut Log) -> Option<Found> {
        loop {
            if let Some(l) = self.links.pop() {
                return Some(Found::Link(l));
            }
            let (parent, level) = self.stack.last_mut()?;
            let Some(rel) = level.pop() else {
                self.stack.pop();
                continue;
            };
            let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(&rel);
            let listed = parent.open(name).map_err(|e| e.to_string()).and_then(|d| {
                let e = d.list().map_err(|e| e.to_string())?;
                Ok((d, e))
            });
            let (dir, entries) = match listed {
                Ok(e) => e,
                Err(e) => {
                    let why = format!("cannot be listed: {e}");
                    log.error("E072", &rel, &why);
                    return Some(Found::Unchecked(rel, why));
                }
            };
            if entries.is_empty() {
                log.error("E073", &rel, "an empty directory in the storage hierarchy");
                continue;
            }
            if let Some(found) = self.directory(rel, dir, &entries, log) {
                return Some(found);
            }
        }
    }

    /// A directory of the hierarchy, listed (`entries`, not empty): an object, or one that
    /// cannot be checked; None where the walk goes on below it.
    fn directory(
        &mut self,
        rel: Name,
        dir: Box<dyn OcflDir>,
        entries: &[(Name, Kind)],
        log: &mut Log,
    ) -> Option<Found> {
        let files: Vec<&(Name, Kind)> = entries.iter().filter(|(_, k)| *k != Kind::Dir).collect();
        if files.is_empty() {
            let mut below: Vec<Name> = entries.iter().map(|(n, _)| join(&rel, n)).collect();
            below.reverse();
            self.stack.push((Arc::from(dir), below));
            return None;
        }
        let decls: Vec<&Name> = files
            .iter()
            .filter(|(n, k)| *k == Kind::File && n.starts_with(b"0="))
            .map(|(n, _)| n)
            .collect();
        match decls.as_slice() {
            [one] => Some(declared(rel, one, dir, log)),
            [] => self.undeclared(rel, dir, entries, &files, log),
            many => {
                let why = format!(
                    "{} object declarations in one directory: not validated",
                    many.len()
                );
                log.error("E003", &rel, &why);
                Some(Found::Unchecked(rel, format!("[E003] {why}")))
            }
        }
    }

    /// A directory holding files but no declaration: objects below it are still found and
    /// checked, its files named; one holding an inventory cannot be checked.
    fn undeclared(
        &mut self,
        rel: Name,
        dir: Box<dyn OcflDir>,
        entries: &[(Name, Kind)],
        files: &[&(Name, Kind)],
        log: &mut Log,
    ) -> Option<Found> {
        let mut below: Vec<Name> = entries
            .iter()
            .filter(|(_, k)| *k == Kind::Dir)
            .map(|(n, _)| join(&rel, n))
            .collect();
        below.reverse();
        self.stack.push((Arc::from(dir), below));
        for (n, k) in files {
            if *k == Kind::File {
                log.error(
                    "E072",
                    join(&rel, n),
                    "a file in the storage hierarchy outside any object",
                );
            } else {
                log.error(
                    "E072",
                    join(&rel, n),
                    "a symbolic link or special file in the storage hierarchy outside any object (not followed)",
                );
                self.links.push(join(&rel, n));
            }
        }
        self.links.reverse();
        // An inventory without a declaration: an object that lost it, or one planted to look
        // like one; either way not an object to check.
        files
            .iter()
            .any(|(n, _)| n == b"inventory.json")
            .then(|| {
                Found::Unchecked(
                    rel,
                    "holds inventory.json but no object declaration (0=ocfl_object_1.x): not checked as an object".to_string(),
                )
            })
    }
}

/// A directory with one declaration (`one`): an object of a version trawl knows, or one that
/// cannot be checked.
fn declared(rel: Name, one: &[u8], dir: Box<dyn OcflDir>, log: &mut Log) -> Found {
    let at = join(&rel, one);
    let why = match one
        .strip_prefix(b"0=ocfl_object_")
        .map(|v| String::from_utf8_lossy(v).into_owned())
    {
        Some(v) if SPEC_VERSIONS.contains(&v.as_str()) => return Found::Object(rel, v, dir),
        Some(v) => format!(
            "an object declaring specification version {v}, which trawl does not know: not validated"
        ),
        None => "not an object declaration: the directory is not validated".to_string(),
    };
    log.error("E004", &at, &why);
    Found::Unchecked(rel, format!("[E004] {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::tests::{put, sound_object};
    use crate::tree::list;
    use trawl_read::DirAt;

    /// A storage root's top level: `0=ocfl_1.1` holding its value, a layout file.
    fn sound_root(p: &Path) {
        put(p, "0=ocfl_1.1", b"ocfl_1.1\n");
        put(
            p,
            "ocfl_layout.json",
            br#"{"extension": "0002-flat-direct-storage-layout", "description": "flat"}"#,
        );
    }

    /// What a storage root is made, by an edit of a sound one, and the codes it must raise.
    type Case = (&'static str, fn(&Path), Vec<&'static str>);

    fn root_codes(p: &Path) -> (Option<String>, Vec<&'static str>) {
        let dir = DirAt::open(p).unwrap();
        let mut log = Log::default();
        let v = check_root(&dir, &list(&dir).unwrap(), &mut log);
        (v, log.errors.iter().map(|f| f.code).collect())
    }

    /// The root's declaration, layout file and extensions, and what else its top may hold.
    #[test]
    fn a_storage_roots_top_level_is_held_to_its_rules() {
        let cases: Vec<Case> = vec![
            ("sound", |_| {}, vec![]),
            (
                "no declaration",
                |p| std::fs::remove_file(p.join("0=ocfl_1.1")).unwrap(),
                vec!["E069"],
            ),
            (
                "the declaration's content",
                |p| put(p, "0=ocfl_1.1", b"ocfl_1.0\n"),
                vec!["E069"],
            ),
            (
                "two declarations",
                |p| put(p, "0=ocfl_1.0", b"ocfl_1.0\n"),
                vec!["E069"],
            ),
            (
                "a layout that is not JSON",
                |p| put(p, "ocfl_layout.json", b"flat"),
                vec!["E070"],
            ),
            (
                "a layout without its description",
                |p| put(p, "ocfl_layout.json", br#"{"extension": "x"}"#),
                vec!["E070"],
            ),
            (
                "a layout that is a directory",
                |p| {
                    std::fs::remove_file(p.join("ocfl_layout.json")).unwrap();
                    put(p, "ocfl_layout.json/x", b"x");
                },
                vec!["E070"],
            ),
            (
                "a file in extensions",
                |p| put(p, "extensions/x", b"x"),
                vec!["E086"],
            ),
            (
                "extensions as a file",
                |p| put(p, "extensions", b"x"),
                vec!["E086"],
            ),
            (
                "a link",
                |p| std::os::unix::fs::symlink("/", p.join("elsewhere")).unwrap(),
                vec!["E072"],
            ),
        ];
        for (what, edit, errors) in cases {
            let t = tempfile::tempdir().unwrap();
            sound_root(t.path());
            edit(t.path());
            let (v, got) = root_codes(t.path());
            assert_eq!(got, errors, "{what}");
            if what == "sound" {
                assert_eq!(v.as_deref(), Some("1.1"));
            }
        }
    }

    /// The hierarchy is walked in name order: each object found and not entered (the object
    /// inside `obj2`'s content is content); an empty
    /// directory, a file outside any object, an unknown declaration, two declarations and an
    /// inventory without one each named, and the objects beyond them still found.
    #[test]
    fn the_hierarchy_is_walked_in_name_order_naming_what_is_not_an_object() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path();
        sound_root(p);
        sound_object(&p.join("a/b/obj1"));
        std::fs::create_dir_all(p.join("a/empty")).unwrap();
        put(p, "a/stray.txt", b"s");
        put(p, "c/future/0=ocfl_object_9.9", b"ocfl_object_9.9\n");
        put(p, "d/twice/0=ocfl_object_1.0", b"ocfl_object_1.0\n");
        put(p, "d/twice/0=ocfl_object_1.1", b"ocfl_object_1.1\n");
        put(p, "e/lost/inventory.json", b"{}");
        sound_object(&p.join("f/obj2"));
        sound_object(&p.join("f/obj2/v1/content/nested"));
        let top = DirAt::open(p).unwrap();
        let entries = list(&top).unwrap();
        let mut walk = Walk::new(Box::new(top), &entries);
        let mut log = Log::default();
        let mut found = Vec::new();
        while let Some(f) = walk.next(&mut log) {
            found.push(match f {
                Found::Object(rel, v, _) => format!("object {} {v}", String::from_utf8_lossy(&rel)),
                Found::Unchecked(rel, _) => format!("unchecked {}", String::from_utf8_lossy(&rel)),
                Found::Link(rel) => format!("link {}", String::from_utf8_lossy(&rel)),
            });
        }
        assert_eq!(
            found,
            [
                "object a/b/obj1 1.1",
                "unchecked c/future",
                "unchecked d/twice",
                "unchecked e/lost",
                "object f/obj2 1.1",
            ]
        );
        let named: Vec<(&str, String)> = log
            .errors
            .iter()
            .map(|f| {
                (
                    f.code,
                    f.path.as_ref().map_or(String::new(), |p| p.path.clone()),
                )
            })
            .collect();
        assert_eq!(
            named,
            [
                // Named when `a` is listed, before what lies below it is walked.
                ("E072", "a/stray.txt".to_string()),
                ("E073", "a/empty".to_string()),
                ("E004", "c/future/0=ocfl_object_9.9".to_string()),
                ("E003", "d/twice".to_string()),
                ("E072", "e/lost/inventory.json".to_string()),
            ]
        );
    }
}
