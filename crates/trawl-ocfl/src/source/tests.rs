//! The audit source's own rules: where a logical path's object is, which paths are looked for.
use super::files::{object_files, plain};
use super::*;
use trawl_scan::Refusal;

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

/// What an audit of the object at `root` reads, each logical path's result in words, after
/// `between` has run between the walk and the reads.
fn audit_reads(root: &Path, between: impl FnOnce()) -> Vec<String> {
    let mut s = OcflSource::new();
    let mut entries = Vec::new();
    s.walk(
        &[root.to_path_buf()],
        &WalkOptions::default(),
        &Stop::new(),
        &mut |it| {
            if let WalkItem::File(e) = it {
                entries.push(e);
            }
            std::ops::ControlFlow::Continue(())
        },
    )
    .unwrap();
    between();
    let (tx, rx) = crossbeam_channel::unbounded();
    for e in entries {
        tx.send(e).unwrap();
    }
    drop(tx);
    let cfg = trawl_scan::ScanConfig::new(vec![root.to_path_buf()]);
    let plan = ReadPlan {
        cfg: &cfg,
        algorithms: &[Algorithm::Sha256],
        feed: rx,
        roots: &[root.to_path_buf()],
        files: 2,
        bytes: 2,
    };
    let mut got = Vec::new();
    s.read(plan, &trawl_scan::NoProgress, &Stop::new(), &mut |r| {
        got.push(match r {
            ReadResult::Read { path, expected, .. } => format!(
                "{} read, {} expected",
                path.strip_prefix(root).unwrap().display(),
                expected.map_or(0, |e| e.digests.len())
            ),
            ReadResult::Gone { path } => format!("{} gone", path.display()),
            ReadResult::Failed { path, error } => format!(
                "{} failed: {error}",
                path.unwrap().strip_prefix(root).unwrap().display()
            ),
        })
    })
    .unwrap();
    got.sort();
    got
}

#[test]
fn each_logical_path_is_read_from_its_content_file_with_its_inventory_digests() {
    let t = tempfile::tempdir().unwrap();
    crate::object::tests::sound_object(t.path());
    let got = audit_reads(t.path(), || {});
    assert_eq!(
        got,
        ["v1/a.txt read, 1 expected", "v1/sub/b.txt read, 1 expected"]
    );
}

/// A content file swapped for a link between the walk and the read is refused, in the
/// reading service's words, and nothing outside is read.
#[test]
fn a_content_file_swapped_for_a_link_after_the_walk_is_refused_as_leading_outside() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("obj");
    crate::object::tests::sound_object(&root);
    std::fs::write(t.path().join("outside"), b"a").unwrap();
    let got = audit_reads(&root, || {
        let f = root.join("v1/content/a.txt");
        std::fs::remove_file(&f).unwrap();
        std::os::unix::fs::symlink(t.path().join("outside"), &f).unwrap();
    });
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got[0].starts_with("v1/a.txt failed: ") && got[0].ends_with(&Refusal::Outside.to_string()),
        "{got:?}"
    );
    assert_eq!(got[1], "v1/sub/b.txt read, 1 expected");
}

/// An object whose inventory cannot be trusted is refused with the error that says why,
/// naming the file the fault is in.
#[test]
fn an_untrusted_inventory_is_a_typed_refusal() {
    let t = tempfile::tempdir().unwrap();
    crate::object::tests::sound_object(t.path());
    let dir = DirAt::open(t.path()).unwrap();
    assert!(object_files(&dir).is_ok());
    std::fs::write(
        t.path().join("inventory.json.sha512"),
        "00  inventory.json\n",
    )
    .unwrap();
    let e = object_files(&dir).err().unwrap();
    assert!(
        matches!(&e, crate::OcflError::Untrusted { path, .. } if path == Path::new("inventory.json")),
        "{e:?}"
    );
    assert!(
        e.to_string().ends_with(": the inventory is not trusted"),
        "{e}"
    );
    std::fs::write(t.path().join("inventory.json"), b"[]").unwrap();
    let e = object_files(&dir).err().unwrap();
    assert!(
        matches!(&e, crate::OcflError::InventoryInvalid { path, .. } if path == Path::new("inventory.json")),
        "{e:?}"
    );
    std::fs::remove_file(t.path().join("inventory.json")).unwrap();
    assert!(matches!(
        object_files(&dir),
        Err(crate::OcflError::InventoryUnread { .. })
    ));
}
