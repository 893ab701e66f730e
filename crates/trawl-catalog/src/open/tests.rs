use super::*;
use crate::SCHEMA_VERSION;

fn refused(r: Result<Catalog>) -> CatalogError {
    match r {
        Ok(_) => panic!("opened"),
        Err(e) => e,
    }
}

fn pragma(path: &Path, name: &str) -> i64 {
    Connection::open(path)
        .unwrap()
        .query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
        .unwrap()
}

/// A catalog is made only where no file is (or an empty one, asked with `Init`); a reader
/// needs one there; a file that is not SQLite, or SQLite of another program, is refused and
/// left as it was.
#[test]
fn a_catalog_is_made_only_where_nothing_is_and_other_files_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("cat.db");
    for mode in [OpenMode::Read, OpenMode::Upgrade] {
        let e = refused(Catalog::open(&p, mode));
        assert!(matches!(e, CatalogError::Missing { .. }), "{e}");
    }
    assert!(!p.exists());
    drop(Catalog::open(&p, OpenMode::Write).unwrap());
    assert_eq!(pragma(&p, "application_id"), 0x7472_776c);
    assert_eq!(pragma(&p, "user_version"), SCHEMA_VERSION);
    Catalog::open(&p, OpenMode::Read).unwrap();

    let empty = t.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let e = refused(Catalog::open(&empty, OpenMode::Write));
    assert!(
        matches!(&e, CatalogError::Empty { path } if *path == empty),
        "{e}"
    );
    assert!(
        e.to_string().contains("an empty file, not a trawl catalog"),
        "{e}"
    );
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
    drop(Catalog::open(&empty, OpenMode::Init).unwrap());
    assert_eq!(pragma(&empty, "application_id"), 0x7472_776c);

    let text = t.path().join("notes.db");
    let words =
        b"a text file of notes, long enough to hold a page header, and no database".repeat(9);
    std::fs::write(&text, &words).unwrap();
    let other = t.path().join("other.db");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1)")
        .unwrap();
    let before = std::fs::read(&other).unwrap();
    for mode in [OpenMode::Read, OpenMode::Write, OpenMode::Init] {
        for f in [&text, &other] {
            let e = refused(Catalog::open(f, mode));
            assert!(
                matches!(e, CatalogError::NotCatalog { .. }),
                "{mode:?}: {e}"
            );
        }
    }
    assert_eq!(std::fs::read(&text).unwrap(), words);
    assert_eq!(std::fs::read(&other).unwrap(), before);
}

/// A directory or a FIFO where the catalog should be is refused as no regular file, named,
/// in every mode: a reader too (it was SQLite's "disk I/O error", or a FIFO's open blocking
/// for ever).
#[test]
fn a_directory_or_a_fifo_is_no_catalog() {
    use std::os::unix::ffi::OsStrExt;
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("cat.db");
    std::fs::create_dir(&dir).unwrap();
    let fifo = t.path().join("fifo.db");
    let name = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    for (d, mode) in [&dir, &fifo].into_iter().flat_map(|d| {
        [
            OpenMode::Read,
            OpenMode::Write,
            OpenMode::Init,
            OpenMode::Upgrade,
        ]
        .map(|m| (d, m))
    }) {
        let e = refused(Catalog::open(d, mode));
        assert!(
            matches!(&e, CatalogError::NotRegular { path } if path == d),
            "{mode:?}: {e}"
        );
        assert!(
            e.to_string()
                .ends_with("not a regular file; a catalog is one")
        );
    }
}

/// A catalog of a schema this trawl does not write is named with both versions: an older
/// one with the command that upgrades it, a newer one as not readable here.
#[test]
fn a_schema_version_other_than_this_trawls_is_named() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("cat.db");
    drop(Catalog::open(&p, OpenMode::Write).unwrap());
    let set = |v: i64| {
        Connection::open(&p)
            .unwrap()
            .pragma_update(None, "user_version", v)
            .unwrap()
    };
    set(SCHEMA_VERSION + 1);
    for mode in [OpenMode::Read, OpenMode::Write] {
        match refused(Catalog::open(&p, mode)) {
            CatalogError::Version {
                found, supported, ..
            } => {
                assert_eq!((found, supported), (SCHEMA_VERSION + 1, SCHEMA_VERSION))
            }
            e => panic!("{mode:?}: {e}"),
        }
    }
    set(1);
    let e = refused(Catalog::open(&p, OpenMode::Read));
    assert!(matches!(e, CatalogError::Old { found: 1, .. }), "{e}");
    assert!(e.to_string().contains("`trawl catalog upgrade -c "), "{e}");
    assert_eq!(pragma(&p, "user_version"), 1, "a reader upgrades nothing");
}

/// A write-ahead log (or journal, or shared-memory index) beside the catalog that is a
/// link, or a file with other names, is not the catalog's own: the catalog is not opened,
/// the file named, with what makes it another's.
#[test]
fn a_sidecar_that_is_a_link_or_has_other_names_stops_the_open() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("cat.db");
    drop(Catalog::open(&p, OpenMode::Write).unwrap());
    let planted = t.path().join("planted");
    std::fs::write(&planted, b"a log from elsewhere").unwrap();
    for (suffix, how) in [
        ("-wal", "link"),
        ("-journal", "hard link"),
        ("-shm", "link"),
    ] {
        let side = t.path().join(format!("cat.db{suffix}"));
        match how {
            "link" => std::os::unix::fs::symlink(&planted, &side).unwrap(),
            _ => std::fs::hard_link(&planted, &side).unwrap(),
        }
        for mode in [OpenMode::Read, OpenMode::Write] {
            match refused(Catalog::open(&p, mode)) {
                e @ CatalogError::Sidecar { .. } => {
                    let msg = e.to_string();
                    let CatalogError::Sidecar {
                        path,
                        catalog,
                        fault,
                    } = e
                    else {
                        unreachable!()
                    };
                    assert_eq!((&path, &catalog), (&side, &p));
                    let (want, why) = if how == "link" {
                        (
                            SidecarFault::NotRegular,
                            "not a regular file (a symbolic link?)",
                        )
                    } else {
                        (SidecarFault::Linked, "a file with other names (hard links)")
                    };
                    assert_eq!(fault, want);
                    assert!(
                        msg.starts_with(&format!("{}: {why}: ", side.display())),
                        "{msg}"
                    );
                }
                e => panic!("{suffix}: {e}"),
            }
        }
        std::fs::remove_file(&side).unwrap();
    }
    Catalog::open(&p, OpenMode::Write).unwrap();
    assert_eq!(std::fs::read(&planted).unwrap(), b"a log from elsewhere");
}

/// A schema-2 catalog (schema 4 without the policy table and the ctime column) is read as it
/// is, with no policy; the first writer upgrades it to schema 4, saying from which.
#[test]
fn a_schema_2_catalog_is_read_as_it_is_and_upgraded_by_a_writer() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("cat.db");
    drop(Catalog::open(&p, OpenMode::Write).unwrap());
    {
        let c = Connection::open(&p).unwrap();
        c.execute_batch(
            "DROP TABLE policy; ALTER TABLE files DROP COLUMN ctime_ns; PRAGMA user_version = 2;",
        )
        .unwrap();
    }
    let cat = Catalog::open(&p, OpenMode::Read).unwrap();
    assert_eq!(cat.upgraded_from(), None);
    assert_eq!(cat.schema_version().unwrap(), 2);
    assert_eq!(cat.policy().unwrap(), None);
    drop(cat);
    assert_eq!(pragma(&p, "user_version"), 2, "a reader upgrades nothing");
    let cat = Catalog::open(&p, OpenMode::Write).unwrap();
    assert_eq!(cat.upgraded_from(), Some(2));
    assert_eq!(cat.policy().unwrap(), None);
    drop(cat);
    assert_eq!(pragma(&p, "user_version"), SCHEMA_VERSION);
}
