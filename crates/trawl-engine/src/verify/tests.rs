//! Unit tests of `verify`: what a confined run says of names that lead outside the root.

use std::ops::ControlFlow;

use trawl_report::VerifyState;
use trawl_scan::NoProgress;

use super::*;

fn sha256_hex(bytes: &[u8]) -> String {
    let mut h = Algorithm::Sha256.hasher();
    h.update(bytes);
    hex::encode(h.finish())
}

/// Every entry's name and state, in manifest order.
fn states(opts: &VerifyOptions) -> Vec<(String, VerifyState)> {
    let out = verify(opts, &NoProgress, &Stop::new(), &mut |_| {}).unwrap();
    let VerifyOutcome::Finished(r) = out else {
        panic!("stopped");
    };
    let mut got = Vec::new();
    let walked = r.entries.try_for_each(|e| {
        got.push((
            String::from_utf8_lossy(&e.name).into_owned(),
            e.state.clone(),
        ));
        ControlFlow::<()>::Continue(())
    });
    assert!(walked.unwrap().is_continue());
    got
}

/// A name through a symbolic link to outside the root is refused in the reading service's
/// one wording; a name that stays inside is read; a missing one is missing.
#[test]
fn a_confined_name_through_a_link_outside_is_refused_in_the_one_wording() {
    let top = tempfile::tempdir().unwrap();
    let root = top.path().join("root");
    std::fs::create_dir_all(root.join("in")).unwrap();
    std::fs::write(root.join("in/f"), b"inside").unwrap();
    std::fs::create_dir_all(top.path().join("outside")).unwrap();
    std::fs::write(top.path().join("outside/f"), b"outside").unwrap();
    std::os::unix::fs::symlink(top.path().join("outside"), root.join("sub")).unwrap();
    let manifest = top.path().join("SUMS");
    let lines = format!(
        "SHA256 (in/f) = {}\nSHA256 (sub/f) = {}\nSHA256 (gone) = {}\n",
        sha256_hex(b"inside"),
        sha256_hex(b"outside"),
        sha256_hex(b""),
    );
    std::fs::write(&manifest, lines).unwrap();
    let opts = VerifyOptions {
        manifest,
        root: root.clone(),
        prefer: Vec::new(),
        confine: true,
        strict: false,
        ignore_missing: false,
        cfg: ScanConfig::new(vec![root]),
        temp_dir: Some(top.path().to_path_buf()),
        memory: VERIFY_MEMORY,
        objects: None,
    };
    let got = states(&opts);
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got[0], ("in/f".into(), VerifyState::Ok), "{got:?}");
    assert_eq!(
        got[1],
        (
            "sub/f".into(),
            VerifyState::Unreadable(
                "leads outside the root through a symbolic link: not read".into()
            )
        )
    );
    assert_eq!(got[2], ("gone".into(), VerifyState::Missing), "{got:?}");
}

/// `..` and absolute names are trawl-read's names that leave the root: refused as manifest
/// problems when confined.
#[test]
fn names_with_dot_dot_or_a_leading_slash_leave_the_root() {
    for name in [&b"../x"[..], b"/etc/x", b"a/../../x", b"a/.."] {
        assert!(leaves_root(name), "{}", String::from_utf8_lossy(name));
    }
    for name in [&b"a/b"[..], b"a/./b", b"a//b", b"..a/b.."] {
        assert!(!leaves_root(name), "{}", String::from_utf8_lossy(name));
    }
}
