//! An object's checks, case by case.

use super::*;
use crate::inventory::tests::{d, sound};
use std::path::Path;
use trawl_read::DirAt;

pub(crate) fn put(dir: &Path, rel: &str, bytes: &[u8]) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

/// `inv` written at `rel` with its sidecar.
fn inventory_at(dir: &Path, rel: &str, inv: &[u8]) {
    put(dir, rel, inv);
    let line = format!("{}  inventory.json\n", digest_of("sha512", inv));
    put(dir, &format!("{rel}.sha512"), line.as_bytes());
}

/// A sound object of one version (`sound()`'s inventory) at `dir`: its declaration, root
/// and version inventories with their sidecars, and the two content files it lists.
pub(crate) fn sound_object(dir: &Path) {
    let inv = serde_json::to_vec_pretty(&sound()).unwrap();
    put(dir, "0=ocfl_object_1.1", b"ocfl_object_1.1\n");
    inventory_at(dir, "inventory.json", &inv);
    inventory_at(dir, "v1/inventory.json", &inv);
    put(dir, "v1/content/a.txt", b"a");
    put(dir, "v1/content/sub/b.txt", b"b");
}

/// A case of an object's checks: what it is, the edit of a sound object that makes it, and
/// the codes of the errors and warnings it must raise.
type Case = (
    &'static str,
    fn(&Path),
    Vec<&'static str>,
    Vec<&'static str>,
);

/// The codes `check` raises for the object at `dir`: errors, then warnings.
fn codes_of(dir: &Path) -> (Vec<&'static str>, Vec<&'static str>) {
    let c = check(&DirAt::open(dir).unwrap());
    let code = |f: &[trawl_report::OcflFinding]| f.iter().map(|f| f.code).collect();
    (code(&c.log.errors), code(&c.log.warnings))
}

#[test]
fn a_declaration_value_is_read_as_namaste_says() {
    assert_eq!(namaste_value("ocfl_object_1.1\n"), "ocfl_object_1.1");
    assert_eq!(namaste_value("  ocfl 1.1 \n"), "ocfl_1.1");
    assert_ne!(
        namaste_value("This is not the right content!\n"),
        "ocfl_object_1.0"
    );
}

/// A sound object raises nothing, and leaves each manifest file to read with its digest.
#[test]
fn a_sound_object_raises_nothing_and_leaves_its_content_to_read() {
    let t = tempfile::tempdir().unwrap();
    sound_object(t.path());
    let c = check(&DirAt::open(t.path()).unwrap());
    assert!(
        c.log.errors.is_empty() && c.log.warnings.is_empty(),
        "{:?}",
        c.log
    );
    assert_eq!(
        (c.id.as_deref(), c.spec.as_str()),
        (Some("info:example/1"), "1.1")
    );
    let reads: Vec<(&str, &str, &str)> = c
        .reads
        .iter()
        .flat_map(|r| {
            r.expect
                .iter()
                .map(move |e| (r.path.as_str(), e.code, e.digest.as_str()))
        })
        .collect();
    let (a, b) = (d('a'), d('b'));
    assert_eq!(
        reads,
        [
            ("v1/content/a.txt", "E092", a.as_str()),
            ("v1/content/sub/b.txt", "E092", b.as_str())
        ]
    );
}

/// The sidecar is one line, the inventory's digest (hex, lower case) and its name.
#[test]
fn a_sidecar_holds_one_line_with_the_inventorys_digest() {
    let t = tempfile::tempdir().unwrap();
    let inv = b"{}";
    put(t.path(), "inventory.json", inv);
    let dir = DirAt::open(t.path()).unwrap();
    let digest = digest_of("sha512", inv);
    let said = |text: Option<String>| {
        let p = t.path().join("inventory.json.sha512");
        let _ = std::fs::remove_file(&p);
        if let Some(s) = text {
            std::fs::write(&p, s).unwrap();
        }
        let mut log = Log::default();
        sidecar(&dir, "inventory.json", inv, "sha512", &mut log);
        log.errors.iter().map(|f| f.code).collect::<Vec<_>>()
    };
    assert!(said(Some(format!("{digest}  inventory.json\n"))).is_empty());
    assert!(said(Some(format!("{digest} inventory.json"))).is_empty());
    assert_eq!(said(None), ["E058"]);
    assert_eq!(
        said(Some(format!("{}  inventory.json\n", digest.to_uppercase()))),
        ["E060"]
    );
    assert_eq!(
        said(Some(format!("{}  inventory.json\n", d('0')))),
        ["E060"]
    );
    for bad in [
        format!(" {digest}  inventory.json\n"),
        format!("{digest}  inventory.json extra\n"),
        format!("{digest}  other.json\n"),
        format!("{digest}\n"),
        format!("{}-  inventory.json\n", &digest[1..]),
        String::new(),
    ] {
        assert_eq!(said(Some(bad.clone())), ["E061"], "{bad:?}");
    }
}

/// What an object root holds: one declaration holding its name's value, the inventory and
/// its sidecar, the versions the inventory lists, `logs/` and `extensions/` (directories
/// only, registered ones SHOULD), nothing else.
#[test]
fn an_object_roots_entries_are_held_to_their_rules() {
    let cases: Vec<Case> = vec![
        (
            "no declaration",
            |p| std::fs::remove_file(p.join("0=ocfl_object_1.1")).unwrap(),
            vec!["E003"],
            vec![],
        ),
        (
            "declaration's content",
            |p| put(p, "0=ocfl_object_1.1", b"ocfl_object_1.0\n"),
            vec!["E007"],
            vec![],
        ),
        (
            "a declaration of an unknown version beside the known one",
            |p| put(p, "0=ocfl_object_2.0", b"ocfl_object_2.0\n"),
            vec!["E006", "E003"],
            vec![],
        ),
        (
            "two declarations",
            |p| put(p, "0=ocfl_object_1.0", b"ocfl_object_1.0\n"),
            vec!["E003"],
            vec![],
        ),
        (
            "a stray file",
            |p| put(p, "notes.txt", b"n"),
            vec!["E001"],
            vec![],
        ),
        (
            "a stray directory",
            |p| put(p, "junk/x", b"x"),
            vec!["E001"],
            vec![],
        ),
        (
            "a version not listed",
            |p| put(p, "v2/x", b"x"),
            vec!["E046"],
            vec![],
        ),
        ("logs", |p| put(p, "logs/log.txt", b"l"), vec![], vec![]),
        (
            "a file in extensions",
            |p| put(p, "extensions/x", b"x"),
            vec!["E067"],
            vec![],
        ),
        (
            "an extension not registered",
            |p| put(p, "extensions/9999-mine/x", b"x"),
            vec![],
            vec!["W013"],
        ),
        (
            "a registered extension",
            |p| put(p, "extensions/0005-mutable-head/x", b"x"),
            vec![],
            vec![],
        ),
        (
            "a link",
            |p| std::os::unix::fs::symlink("v1", p.join("v0")).unwrap(),
            vec!["E001"],
            vec![],
        ),
    ];
    for (what, edit, errors, warnings) in cases {
        let t = tempfile::tempdir().unwrap();
        sound_object(t.path());
        edit(t.path());
        assert_eq!(codes_of(t.path()), (errors, warnings), "{what}");
    }
    let t = tempfile::tempdir().unwrap();
    sound_object(t.path());
    std::fs::remove_file(t.path().join("inventory.json")).unwrap();
    assert_eq!(codes_of(t.path()).0, ["E063"]);
}

/// What a version directory holds: its inventory (SHOULD; the newest the root's own
/// bytes), the sidecar and the content directory, whose files are exactly the manifest's.
#[test]
fn a_versions_directory_and_content_are_held_to_the_manifest() {
    let cases: Vec<Case> = vec![
        (
            "a file the manifest lacks",
            |p| put(p, "v1/content/c.txt", b"c"),
            vec!["E023"],
            vec![],
        ),
        (
            "a file the object lacks",
            |p| std::fs::remove_file(p.join("v1/content/a.txt")).unwrap(),
            vec!["E092"],
            vec![],
        ),
        (
            "an empty directory",
            |p| std::fs::create_dir(p.join("v1/content/empty")).unwrap(),
            vec!["E024"],
            vec![],
        ),
        (
            "a stray file",
            |p| put(p, "v1/stray.txt", b"s"),
            vec!["E015"],
            vec![],
        ),
        (
            "a stray directory",
            |p| put(p, "v1/other/x", b"x"),
            vec![],
            vec!["W002"],
        ),
        (
            "an inventory that is not the root's",
            |p| put(p, "v1/inventory.json", b"{}"),
            vec!["E064"],
            vec![],
        ),
        (
            "no inventory",
            |p| {
                std::fs::remove_file(p.join("v1/inventory.json")).unwrap();
                std::fs::remove_file(p.join("v1/inventory.json.sha512")).unwrap();
            },
            vec![],
            vec!["W010"],
        ),
        (
            "a link among the content",
            |p| {
                std::fs::remove_file(p.join("v1/content/a.txt")).unwrap();
                std::os::unix::fs::symlink("sub/b.txt", p.join("v1/content/a.txt")).unwrap();
            },
            vec!["E092"],
            vec![],
        ),
    ];
    for (what, edit, errors, warnings) in cases {
        let t = tempfile::tempdir().unwrap();
        sound_object(t.path());
        edit(t.path());
        assert_eq!(codes_of(t.path()), (errors, warnings), "{what}");
    }
    let t = tempfile::tempdir().unwrap();
    sound_object(t.path());
    std::fs::remove_dir_all(t.path().join("v1")).unwrap();
    let (errors, _) = codes_of(t.path());
    assert!(errors.contains(&"E046"), "{errors:?}");
}
