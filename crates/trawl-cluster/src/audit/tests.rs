//! The audit's pieces on one machine: listing tasks, the wire both ways, a shard's reads.

use super::*;

fn worker(root: &Path) -> Worker {
    Worker::new(ScanConfig::new(vec![root.to_path_buf()]))
}

/// An audit's listing task keeps a scan's budget: directories depth first, and no more
/// once its files are found (the audit's tasks once had no limit on files).
#[test]
fn an_audit_listing_task_stops_at_the_budget_a_scans_has() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    for d in ["d0", "d1", "d2"] {
        std::fs::create_dir_all(root.join(d).join("deep")).unwrap();
        for f in ["x", "y", "z"] {
            std::fs::write(root.join(d).join(f), b"1").unwrap();
        }
    }
    let spec = WalkSpec {
        roots: vec![bytes(&root)],
        exclude: vec![],
    };
    let spec = postcard::to_stdvec(&spec).unwrap();
    let w = worker(&root);
    // Three files found (in d0): the task ends there, d0's subdirectory first in what is left.
    let files = ListBudget {
        dirs: 100,
        files: 3,
    };
    let (made, left) = w.list_task(&spec, 0, None, files).unwrap();
    // (in the order the directory lists them)
    assert_eq!(made.len(), 2, "the root, then its first directory");
    assert_eq!(left.len(), 3, "{left:?}");
    let first = left[0].parent().unwrap().to_path_buf();
    assert_eq!(left[0], first.join("deep"));
    let mut tops = vec![first, left[1].clone(), left[2].clone()];
    tops.sort();
    assert_eq!(tops, [root.join("d0"), root.join("d1"), root.join("d2")]);
    // The directories handed back are listed by the next task, in that order: the empty
    // `deep`, then the next directory (three files), whose `deep` comes before the last.
    let dirs = ListBudget {
        dirs: 2,
        files: 1000,
    };
    let (made, rest) = w.list_task(&spec, 0, Some(left.clone()), dirs).unwrap();
    assert_eq!(made.len(), 2);
    assert_eq!(rest, [left[1].join("deep"), left[2].clone()]);
}

/// A listing crosses the wire whole: files with their metadata, skipped entries with their
/// kind, the subdirectories left, the entries the user's rules left out with their kind,
/// size and reason; directories excluded by the spec are not listed.
#[test]
fn a_listing_comes_back_as_the_walk_gave_it() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    std::fs::write(root.join("a"), b"abc").unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::create_dir(root.join("left-out")).unwrap();
    std::os::unix::fs::symlink("a", root.join("link")).unwrap();
    std::fs::write(root.join("x.tmp"), b"12345").unwrap();
    std::fs::create_dir(root.join("kept-out")).unwrap();
    std::fs::write(root.join("kept-out/.nobackup"), b"").unwrap();
    let spec = WalkSpec {
        roots: vec![bytes(&root)],
        exclude: vec![bytes(&root.join("left-out"))],
    };
    let spec = postcard::to_stdvec(&spec).unwrap();
    let one = ListBudget {
        dirs: 1,
        ..ListBudget::default()
    };
    let mut cfg = ScanConfig::new(vec![root.clone()]);
    let mut rules = trawl_walk::ExclusionBuilder::new();
    rules.pattern(std::ffi::OsStr::new("*.tmp")).unwrap();
    rules.if_present(std::ffi::OsStr::new(".nobackup")).unwrap();
    cfg.walk.excluding = rules.build().unwrap();
    let (b, dirs) = Worker::new(cfg).list_task(&spec, 0, None, one).unwrap();
    assert_eq!(dirs, vec![root.join("sub")]);
    let b = b.into_iter().next().unwrap();
    let mut got = Vec::new();
    take_listing(&b, &mut |it| {
        got.push(match it {
            WalkItem::File(f) => {
                let md = std::fs::metadata(&f.path).unwrap();
                assert_eq!((f.size, f.dev, f.ino), (3, md.dev(), md.ino()));
                assert_eq!(f.mtime_ns, md.mtime() * 1_000_000_000 + md.mtime_nsec());
                format!("file {}", f.path.display())
            }
            WalkItem::Skipped { path, kind } => format!("{} {}", kind.name(), path.display()),
            WalkItem::Error(e) => format!("error {e}"),
            WalkItem::Excluded(x) => format!(
                "excluded {} {} {:?} {:?} {:?}",
                x.kind.name(),
                x.path.display(),
                x.size,
                x.why.pattern(),
                x.why.holds()
            ),
        });
        ControlFlow::Continue(())
    })
    .unwrap();
    got.sort();
    let want = vec![
        format!(
            "excluded directory {} None None Some(\".nobackup\")",
            root.join("kept-out").display()
        ),
        format!(
            "excluded file {} Some(5) Some(\"*.tmp\") None",
            root.join("x.tmp").display()
        ),
        format!("file {}", root.join("a").display()),
        format!("symlink {}", root.join("link").display()),
    ];
    assert_eq!(got, want);
}

/// A shard's reads come back with the digests of the catalog's algorithms, in their
/// order; a file gone since the walk comes back as gone.
#[test]
fn a_shards_reads_carry_the_digests_in_the_catalogs_order() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    std::fs::write(root.join("a"), b"abc").unwrap();
    let (tx, rx) = bounded(4);
    for name in ["a", "gone"] {
        tx.send(FileEntry {
            path: root.join(name),
            root: 0,
            size: 3,
            dev: 0,
            ino: 0,
            mtime_ns: 0,
            dir: None,
            open: None,
        })
        .unwrap();
    }
    drop(tx);
    let algorithms = [Algorithm::Md5, Algorithm::Sha256];
    let feed = Feed {
        rx: Mutex::new(Some(rx)),
        algorithms: algorithms.to_vec(),
        roots: Vec::new(),
        stop: Stop::new(),
        files: 2,
        bytes: 6,
    };
    let shard = feed.next_shard(10, 1 << 20).unwrap();
    assert!(
        feed.next_shard(10, 1 << 20).is_none(),
        "the feed is drained"
    );
    let reads = worker(&root).read(&shard).unwrap();
    let mut got = Vec::new();
    take_reads(&reads, &algorithms, &trawl_scan::NoProgress, &mut |r| {
        got.push(match r {
            ReadResult::Read { path, digests, .. } => format!(
                "{} {}",
                path.display(),
                digests
                    .iter()
                    .map(|(a, d)| format!("{}={}", a.name(), hex::encode(d)))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            ReadResult::Gone { path } => format!("gone {}", path.display()),
            ReadResult::Failed { error, .. } => format!("failed {error}"),
        })
    })
    .unwrap();
    got.sort();
    assert_eq!(
        got,
        vec![
            format!(
                "{} md5=900150983cd24fb0d6963f7d28e17f72 sha256=ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
                root.join("a").display()
            ),
            format!("gone {}", root.join("gone").display()),
        ]
    );
}

/// EACCES, the same number on every Linux.
const EACCES: i32 = 13;

/// A directory a worker could not list comes back with the system's error number where it had
/// one, and otherwise with the worker's words as a typed cause naming the directory; either
/// way the walk's error names the directory once.
#[test]
fn an_unlisted_directory_comes_back_with_its_errno_or_a_typed_cause() {
    let items = vec![
        WireItem::Io {
            path: b"/t/a".to_vec(),
            errno: Some(EACCES),
            message: "ignored".into(),
        },
        WireItem::Io {
            path: b"/t/b".to_vec(),
            errno: None,
            message: "the worker's words".into(),
        },
    ];
    let b = postcard::to_stdvec(&items).unwrap();
    let mut got = Vec::new();
    take_listing(&b, &mut |it| {
        let WalkItem::Error(e @ WalkError::Io { .. }) = it else {
            panic!("not an I/O error");
        };
        got.push(e);
        ControlFlow::Continue(())
    })
    .unwrap();
    let [a, b] = &got[..] else { panic!("{got:?}") };
    let WalkError::Io { source, .. } = a else {
        unreachable!()
    };
    assert_eq!(source.raw_os_error(), Some(EACCES));
    assert_eq!(b.to_string(), "/t/b: the worker's words");
    let WalkError::Io { source, .. } = b else {
        unreachable!()
    };
    match source
        .get_ref()
        .and_then(|e| e.downcast_ref::<ClusterError>())
    {
        Some(ClusterError::Unlisted { path, message }) => {
            assert_eq!(path, Path::new("/t/b"));
            assert_eq!(message, "the worker's words");
        }
        e => panic!("{e:?}"),
    }
}
