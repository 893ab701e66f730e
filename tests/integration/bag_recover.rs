//! `bag create` in place keeps a journal of what it moves and writes: an interruption or a
//! full disk is put back from it (`bag recover`, or at once), `bag validate` of such a
//! directory names the way back, and a journal planted by someone else moves nothing.

use crate::util::*;

#[test]
fn interrupted_creation_is_recoverable() {
    let d = Dir::new();
    d.create(b"b/x", b"x");
    d.create(b"b/data", b"a file named data");
    d.create(b"b/dir/y", b"y");
    // The state an interruption between two moves leaves: journal written, one entry moved.
    std::fs::write(
        d.join("b/.trawl-bag-journal"),
        "trawl bag create journal\ndata\ndir\nx\n",
    )
    .unwrap();
    std::fs::create_dir(d.join("b/.trawl-bag-payload")).unwrap();
    std::fs::rename(d.join("b/data"), d.join("b/.trawl-bag-payload/data")).unwrap();
    let r = d.cmd().args(["bag", "create", "b"]).run();
    r.code(2);
    r.stderr_has("trawl bag recover");
    d.cmd().args(["bag", "recover", "b"]).run().code(0);
    let mut names: Vec<_> = std::fs::read_dir(d.join("b"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["data", "dir", "x"]);
    assert_eq!(
        std::fs::read(d.join("b/data")).unwrap(),
        b"a file named data"
    );
    // And after recovery, creation works.
    d.cmd().args(["bag", "create", "b", "-q"]).run().code(0);
    d.cmd().args(["bag", "validate", "b"]).run().code(0);
}

#[test]
fn bag_recover_removes_exactly_what_creation_wrote() {
    let d = Dir::new();
    d.create(b"b/x", b"x");
    d.create(
        b"b/manifest-sha256.txt",
        b"the user's own file of this name",
    );
    // The state an interruption while writing tag files leaves: every entry moved into data/,
    // the payload manifests written, bag-info.txt half-written as a temporary file.
    std::fs::write(
        d.join("b/.trawl-bag-journal"),
        "trawl bag create journal v2: these entries were moved into data/; tag files written: \
         manifest-sha256.txt bag-info.txt bagit.txt tagmanifest-sha256.txt\nmanifest-sha256.txt\nx\n",
    )
    .unwrap();
    std::fs::create_dir(d.join("b/data")).unwrap();
    std::fs::rename(d.join("b/x"), d.join("b/data/x")).unwrap();
    std::fs::rename(
        d.join("b/manifest-sha256.txt"),
        d.join("b/data/manifest-sha256.txt"),
    )
    .unwrap();
    d.create(b"b/manifest-sha256.txt", b"0000  data/x\n");
    d.create(b"b/.bag-info.txt.Ab12Cd.trawl-tmp", b"Payload-Ox");
    // Written by someone else after the interruption: not trawl's to remove.
    d.create(b"b/manifest-md5.txt", b"another tool's manifest");
    let r = d.cmd().args(["bag", "recover", "b"]).run();
    r.code(0)
        .stdout_has("moved 2 entries back")
        .stdout_has(".bag-info.txt.Ab12Cd.trawl-tmp");
    let mut names: Vec<_> = std::fs::read_dir(d.join("b"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["manifest-md5.txt", "manifest-sha256.txt", "x"]);
    assert_eq!(
        std::fs::read(d.join("b/manifest-sha256.txt")).unwrap(),
        b"the user's own file of this name"
    );
    // The next creation bags exactly the user's files.
    d.cmd().args(["bag", "create", "b", "-q"]).run().code(0);
    let mut payload: Vec<_> = std::fs::read_dir(d.join("b/data"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    payload.sort();
    assert_eq!(payload, ["manifest-md5.txt", "manifest-sha256.txt", "x"]);
}

/// `bag validate` on a directory whose `bag create` was cut short names the way back.
#[test]
fn bag_validate_of_an_interrupted_creation_names_bag_recover() {
    let d = Dir::new();
    d.create(b"p/a", b"alpha\n");
    d.create(
        b"p/.trawl-bag-journal",
        b"trawl bag create journal v2: these entries were moved into data/; tag files written: bagit.txt\n",
    );
    d.cmd()
        .args(["bag", "validate", "p"])
        .run()
        .code(2)
        .stderr_has("run `trawl bag recover");
}

/// A tmpfs of `kib` KiB mounted at `DIR/NAME`; `None` (skipped) where it cannot be.
struct SmallFs(Mounted);

impl SmallFs {
    fn new(d: &Dir, name: &str, kib: u64) -> Option<SmallFs> {
        let size = format!("size={kib}k");
        let args = ["-t", "tmpfs", "-o", &size, "tmpfs"].map(std::ffi::OsStr::new);
        Mounted::new(&args, d.join(name), "a tmpfs").map(SmallFs)
    }

    /// Fills the filesystem but for about `free` KiB.
    fn fill(&self, free: u64) {
        use std::io::Write;
        let spare = self.0.at.join(".spare");
        std::fs::write(&spare, vec![0u8; (free as usize) << 10]).unwrap();
        let mut f = std::fs::File::create(self.0.at.join(".filler")).unwrap();
        while f.write_all(&[0u8; 4096]).is_ok() {}
        std::fs::remove_file(spare).unwrap();
    }
}

/// A disk that fills up while `bag create` writes the tag files in place: the directory is put
/// back as it was (from the journal), and the message says so.
#[test]
fn bag_create_in_place_on_a_full_disk_puts_the_directory_back() {
    let d = Dir::new();
    let Some(fs) = SmallFs::new(&d, "small", 1024) else {
        return;
    };
    let bag = fs.0.at.join("bag");
    let mut names = Vec::new();
    for i in 0..60 {
        let name = format!("{i:03}-{}", "n".repeat(200));
        std::fs::create_dir_all(bag.join("sub")).unwrap();
        std::fs::write(bag.join("sub").join(&name), format!("{i}\n")).unwrap();
        names.push(name);
    }
    std::fs::write(bag.join("top.txt"), b"top\n").unwrap();
    let listing = |p: &std::path::Path| {
        let mut v: Vec<String> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let before = (listing(&bag), listing(&bag.join("sub")));
    fs.fill(8);
    let r = d
        .cmd()
        .arg("bag")
        .arg("create")
        .arg(&bag)
        .args(["--digest", "sha512,sha256"])
        .run();
    r.code(2)
        .stderr_has("No space left on device")
        .stderr_has("the directory was put back as it was");
    assert_eq!((listing(&bag), listing(&bag.join("sub"))), before);
    assert_eq!(std::fs::read(bag.join("top.txt")).unwrap(), b"top\n");
}

/// A journal planted in a directory by whoever can write into it: `bag recover` refuses it
/// whole, and nothing outside the directory (or inside it) changes.
#[test]
fn bag_recover_refuses_a_planted_journal() {
    let header =
        "trawl bag create journal v2: these entries were moved into data/; tag files written: ";
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "absolute tag name",
            format!("{header}manifest-sha256.txt {{OUT}}/victim\n"),
            "never writes",
        ),
        (
            "tag name through ..",
            format!("{header}../victim\n"),
            "never writes",
        ),
        (
            "payload name through ..",
            format!("{header}bagit.txt\n../victim\n"),
            "no top-level entry",
        ),
        (
            "payload name with a slash",
            format!("{header}bagit.txt\nx/victim\n"),
            "no top-level entry",
        ),
        (
            "payload name through .. percent-encoded",
            format!("{header}bagit.txt\n%2E%2E%2Fvictim\n"),
            "no top-level entry",
        ),
        (
            "not a journal at all",
            "hello\n../victim\n".into(),
            "not a journal",
        ),
    ];
    for (what, journal, says) in cases {
        let d = Dir::new();
        d.create(b"out/victim", b"precious");
        d.create(b"b/keep", b"mine");
        let out = d.join("out");
        let journal = journal.replace("{OUT}", out.to_str().unwrap());
        std::fs::write(d.join("b/.trawl-bag-journal"), &journal).unwrap();
        std::fs::create_dir(d.join("b/data")).unwrap();
        let r = d.cmd().args(["bag", "recover", "b"]).run();
        assert_ne!(r.code, 0, "{what}: {}", r.stderr);
        r.stderr_has(says).stderr_has("nothing was changed");
        assert_eq!(
            std::fs::read(d.join("out/victim")).unwrap(),
            b"precious",
            "{what}"
        );
        assert!(d.join("b/keep").exists(), "{what}");
        assert!(
            d.join("b/.trawl-bag-journal").exists(),
            "{what}: the journal stays"
        );
    }
}

/// A staging directory or `data/` that is a link to elsewhere: nothing is moved through it,
/// neither out of it (a file outside pulled in) nor into it.
#[test]
fn bag_recover_never_moves_through_a_linked_payload_directory() {
    for staging in [".trawl-bag-payload", "data"] {
        let d = Dir::new();
        d.create(b"outside/secret", b"0600 file");
        d.create(b"b/keep", b"mine");
        std::os::unix::fs::symlink(d.join("outside"), d.join("b").join(staging)).unwrap();
        std::fs::write(
            d.join("b/.trawl-bag-journal"),
            "trawl bag create journal v2: these entries were moved into data/; tag files written: bagit.txt\nsecret\n",
        )
        .unwrap();
        let r = d.cmd().args(["bag", "recover", "b"]).run();
        assert_ne!(r.code, 0, "{staging}: {}", r.stdout);
        r.stderr_has("not a directory");
        assert!(
            d.join("outside/secret").exists(),
            "{staging}: the outside file stayed"
        );
        assert!(
            !d.join("b/secret").exists(),
            "{staging}: nothing was pulled in"
        );
    }
    // And a payload entry that is itself a link is moved back as the link, never followed.
    let d = Dir::new();
    d.create(b"outside/f", b"outside");
    std::fs::create_dir_all(d.join("b/data")).unwrap();
    std::os::unix::fs::symlink(d.join("outside"), d.join("b/data/x")).unwrap();
    std::fs::write(
        d.join("b/.trawl-bag-journal"),
        "trawl bag create journal v2: these entries were moved into data/; tag files written: bagit.txt\nx\n",
    )
    .unwrap();
    d.cmd().args(["bag", "recover", "b"]).run().code(0);
    assert!(
        d.join("b/x")
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(d.join("outside/f").exists());
}
