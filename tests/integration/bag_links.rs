//! Links in a tree made a bag: refused, skipped and listed, or followed; and `--out`'s copies
//! and hard links of the payload.

use crate::bag::{bagit_python, inode, validate};
use crate::util::{Dir, sha256_hex};

/// A tree with links as real trees have them: to a file, to a directory, dangling.
fn tree_with_links(d: &Dir) {
    d.create(b"src/a.txt", b"alpha\n");
    d.create(b"src/sub/b.txt", b"beta\n");
    std::os::unix::fs::symlink("a.txt", d.join("src/to-a")).unwrap();
    std::os::unix::fs::symlink("sub", d.join("src/to-sub")).unwrap();
    std::os::unix::fs::symlink("../gone.txt", d.join("src/sub/dangling")).unwrap();
}

#[test]
fn links_are_refused_by_default_each_named_with_the_choices() {
    let d = Dir::new();
    tree_with_links(&d);
    let r = d.cmd().args(["bag", "create", "src", "-q"]).run();
    r.code(2);
    for l in ["src/to-a", "src/to-sub", "src/sub/dangling"] {
        r.stderr_has(&format!(
            "{l}: symbolic link; a bag holds none: --links skip"
        ));
    }
    assert!(!d.join("src/data").exists() && d.join("src/a.txt").exists());
}

#[test]
fn links_skip_leaves_them_out_of_the_bag_and_lists_them() {
    let d = Dir::new();
    tree_with_links(&d);
    // In place the links would stay inside data/: refused, nothing changed.
    let r = d
        .cmd()
        .args(["bag", "create", "src", "--links", "skip"])
        .run();
    r.code(2);
    r.stderr_has("--links skip needs --out DEST");
    assert!(!d.join("src/data").exists());
    let r = d
        .cmd()
        .args(["bag", "create", "src", "--out", "bag", "--links", "skip"])
        .run();
    r.code(0);
    r.stdout_has("3 symbolic links left out (--links skip), listed in bag/links-left-out.txt");
    let listed = std::fs::read_to_string(d.join("bag/links-left-out.txt")).unwrap();
    assert_eq!(
        listed,
        "data/sub/dangling -> ../gone.txt\ndata/to-a -> a.txt\ndata/to-sub -> sub\n"
    );
    assert!(!d.join("bag/data/to-a").exists() && !d.join("bag/data/to-sub").exists());
    // The list is a tag file, under the tag manifests; the source keeps its links.
    let tags = std::fs::read_to_string(d.join("bag/tagmanifest-sha256.txt")).unwrap();
    assert!(tags.contains(&format!(
        "{}  links-left-out.txt",
        sha256_hex(listed.as_bytes())
    )));
    assert!(
        std::fs::symlink_metadata(d.join("src/to-a"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    validate(&d, "bag").code(0);
    if let Some(bagit) = crate::util::tool("bagit.py") {
        crate::util::run_tool(
            d.path(),
            &bagit,
            &[
                std::ffi::OsStr::new("--validate"),
                std::ffi::OsStr::new("bag"),
            ],
        )
        .code(0);
    }
}

#[test]
fn links_follow_bags_their_targets_and_names_a_dangling_one_as_dangling() {
    let d = Dir::new();
    tree_with_links(&d);
    let r = d
        .cmd()
        .args(["bag", "create", "src", "--out", "bag", "--links", "follow"])
        .run();
    r.code(2);
    r.stderr_has("src/sub/dangling: dangling symbolic link to ../gone.txt: nothing there");
    assert!(!d.join("bag").exists());
    std::fs::remove_file(d.join("src/sub/dangling")).unwrap();
    d.cmd()
        .args([
            "bag", "create", "src", "--out", "bag", "--links", "follow", "-q",
        ])
        .run()
        .code(0);
    assert_eq!(std::fs::read(d.join("bag/data/to-a")).unwrap(), b"alpha\n");
    assert_eq!(
        std::fs::read(d.join("bag/data/to-sub/b.txt")).unwrap(),
        b"beta\n"
    );
    assert!(
        !std::fs::symlink_metadata(d.join("bag/data/to-a"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    validate(&d, "bag").code(0);
    // --follow says the same; with --links skip it contradicts, and is refused.
    let r = d
        .cmd()
        .args([
            "bag", "create", "src", "--out", "bag2", "--links", "skip", "--follow",
        ])
        .run();
    r.code(2);
    r.stderr_has("--links skip says otherwise");
}

/// `--links skip` with a link whose name and target are not UTF-8: links-left-out.txt, a tag
/// file of a UTF-8 bag, holds them percent-encoded (each byte outside UTF-8 as `%XX`), valid
/// UTF-8 that decodes back to the exact bytes.
#[test]
fn links_left_out_that_are_not_utf8_are_percent_encoded() {
    use std::os::unix::ffi::OsStrExt;
    let d = Dir::new();
    d.create(b"src/a.txt", b"alpha\n");
    let name = d.join(std::ffi::OsStr::from_bytes(b"src/l\xffnk"));
    std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(b"t\xff 50%"), &name).unwrap();
    d.cmd()
        .args([
            "bag", "create", "src", "--out", "bag", "--links", "skip", "-q",
        ])
        .run()
        .code(0);
    let raw = std::fs::read(d.join("bag/links-left-out.txt")).unwrap();
    let text = String::from_utf8(raw).expect("links-left-out.txt is UTF-8");
    assert_eq!(text, "data/l%FFnk -> t%FF 50%25\n");
    let (path, target) = text.trim_end().split_once(" -> ").unwrap();
    assert_eq!(
        trawl_bag::decode_path_bytes(path.as_bytes()),
        b"data/l\xffnk"
    );
    assert_eq!(
        trawl_bag::decode_path_bytes(target.as_bytes()),
        b"t\xff 50%"
    );
    validate(&d, "bag").code(0);
}

/// `bag create --out` copies the payload by default: the bag shares no inode with its source,
/// so an edit of the source leaves the bag as it was (valid to bagit-python and to trawl);
/// `--link` hard-links, and then an edit of the source is an edit of the bag.
#[test]
fn out_copies_the_payload_and_links_it_only_when_asked() {
    let d = Dir::new();
    d.create(b"src/a.txt", b"first version\n");
    d.create(b"src/d/b.txt", b"second file\n");
    let r = d
        .cmd()
        .args(["bag", "create", "src", "--out", "copied"])
        .run();
    r.code(0);
    for f in ["a.txt", "d/b.txt"] {
        assert_ne!(
            inode(&d.join("src").join(f)),
            inode(&d.join("copied/data").join(f)),
            "{f}: the bag's file is the source's"
        );
    }
    r.stdout_has("2 copied and read back");
    let r = d
        .cmd()
        .args(["bag", "create", "src", "--out", "linked", "--link"])
        .run();
    r.code(0);
    r.stdout_has("2 hard-linked (--link)");
    assert_eq!(
        inode(&d.join("src/a.txt")),
        inode(&d.join("linked/data/a.txt"))
    );
    // The source edited in place (the same inode, as an editor that rewrites a file keeps it).
    std::fs::write(d.join("src/a.txt"), b"edited afterwards\n").unwrap();
    validate(&d, "copied").code(0);
    validate(&d, "linked").code(1);
    if let Some(verdict) = bagit_python(&d, "copied") {
        assert_eq!(verdict, Ok(()), "bagit-python on the copied bag");
        assert!(
            bagit_python(&d, "linked").unwrap().is_err(),
            "bagit-python finds the linked bag changed with its source"
        );
    }
}
