//! BagIt Profiles: a bag held to one, a bag created to one (what it fixes, what it refuses), and
//! a profile file that is not a small regular file.

use crate::bag::{bagit_python, bagit_python_info};
use crate::util::Dir;

/// `bag validate --profile`: a bag held to a BagIt Profile. One it meets is valid (exit 0); a
/// departure is an error naming the field and the profile (exit 1); a profile that cannot be
/// read or is not one is named, and nothing is validated (exit 2).
#[test]
fn a_bag_is_held_to_a_bagit_profile() {
    let d = Dir::new();
    d.create(b"b/a.txt", b"abc");
    d.cmd()
        .args(["bag", "create", "b", "--info", "Source-Organization: Test"])
        .args([
            "--info",
            "BagIt-Profile-Identifier: https://example.org/p.json",
        ])
        .run()
        .code(0);
    let profile = |extra: &str| {
        format!(
            r#"{{"BagIt-Profile-Info": {{"BagIt-Profile-Identifier": "https://example.org/p.json"}},
                 "Accept-BagIt-Version": ["1.0"], "Manifests-Required": ["sha256"]{extra}}}"#
        )
    };
    d.create(b"meets.json", profile("").as_bytes());
    d.create(
        b"strict.json",
        profile(r#", "Bag-Info": {"Contact-Email": {"required": true}}, "Data-Empty": true"#)
            .as_bytes(),
    );
    d.create(b"broken.json", b"{\"BagIt-Profile-Info\": {}}");
    let r = d
        .cmd()
        .args(["bag", "validate", "b", "--profile", "meets.json"])
        .run();
    r.code(0);
    let r = d
        .cmd()
        .args(["bag", "validate", "b", "--profile", "strict.json"])
        .run();
    r.code(1);
    r.stderr_has("Bag-Info: 'Contact-Email' is required and absent (https://example.org/p.json)");
    r.stderr_has("Data-Empty: data/ must hold no file or one empty file");
    let r = d
        .cmd()
        .args(["bag", "validate", "b", "--profile", "broken.json"])
        .run();
    r.code(2);
    r.stderr_has("broken.json: not a BagIt Profile");
    let r = d
        .cmd()
        .args(["bag", "validate", "b", "--profile", "absent.json"])
        .run();
    r.code(2);
    r.stderr_has("absent.json: cannot read the profile");

    // A serialized bag: its type against Accept-Serialization, its content not read.
    let zip = std::process::Command::new("python3")
        .args([
            "-c",
            "import shutil; shutil.make_archive('b', 'zip', '.', 'b')",
        ])
        .current_dir(d.path())
        .status()
        .unwrap();
    assert!(zip.success());
    d.create(
        b"zips.json",
        br#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "https://example.org/p.json"},
             "Accept-BagIt-Version": ["1.0"], "Accept-Serialization": ["application/zip"]}"#,
    );
    d.create(
        b"tars.json",
        br#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "https://example.org/p.json"},
             "Accept-BagIt-Version": ["1.0"], "Serialization": "optional",
             "Accept-Serialization": ["application/x-tar"]}"#,
    );
    let r = d
        .cmd()
        .args(["bag", "validate", "b.zip", "--profile", "zips.json"])
        .run();
    r.code(3);
    r.stdout_has("b.zip is a serialized bag (application/zip): the profile accepts its serialization; its content was NOT CHECKED");
    let r = d
        .cmd()
        .args(["bag", "validate", "b.zip", "--profile", "tars.json"])
        .run();
    r.code(1);
    r.stderr_has(
        "Accept-Serialization: the bag is application/zip, the profile accepts application/x-tar",
    );
}

/// `--profile` names a FIFO, a device or an oversized file: refused at once, naming the file
/// and why (exit 2, as for a profile that does not exist), never waited on or read whole.
#[test]
fn a_profile_that_is_not_a_small_regular_file_is_refused_at_once() {
    let d = Dir::new();
    d.create(b"b/a.txt", b"abc");
    d.cmd().args(["bag", "create", "b", "-q"]).run().code(0);
    crate::util::mkfifo(&d.join("p.fifo"));
    let r = d
        .cmd()
        .args(["bag", "validate", "b", "--profile", "p.fifo"])
        .run_within(5);
    r.code(2);
    r.stderr_has("p.fifo: cannot read the profile: FIFO (named pipe), not read");
    let r = d
        .cmd()
        .args(["bag", "validate", "b", "--profile", "/dev/zero"])
        .run_within(5);
    r.code(2);
    r.stderr_has("/dev/zero: cannot read the profile: character device, not read");
    d.create(b"big.json", &vec![b' '; (1 << 20) + 1]);
    let r = d
        .cmd()
        .args(["bag", "validate", "b", "--profile", "big.json"])
        .run_within(5);
    r.code(2);
    r.stderr_has("big.json: cannot read the profile: larger than the 1 MiB");
}

const PROFILE: &str = r#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "https://example.org/p.json"},
    "Accept-BagIt-Version": ["1.0"], "Manifests-Required": ["sha256"],
    "Bag-Info": {"Source-Organization": {"required": true, "values": ["Archive"]},
                 "Contact-Email": {"required": true},
                 "Contact-Name": {"recommended": true},
                 "External-Identifier": {"required": true}}}"#;

/// `bag create --profile`: what the profile requires and the command line lacks is refused at
/// once, each field named, nothing written (in place or at --out); what it fixes (a label of
/// one allowed value, its identifier) is filled in, and what it recommends and the bag lacks
/// is said. The bag validates against the profile, the ok line naming it, and bagit-python
/// accepts it with the fields in its `info`.
#[test]
fn create_with_a_profile_fills_in_what_it_fixes_and_refuses_what_is_missing() {
    let d = Dir::new();
    d.create(b"src/a.txt", b"alpha\n");
    d.create(b"p.json", PROFILE.as_bytes());
    let untouched = |d: &Dir| {
        assert!(d.join("src/a.txt").is_file() && !d.join("src/data").exists());
        assert!(!d.join("src/bagit.txt").exists() && !d.join("bag").exists());
    };
    let r = d
        .cmd()
        .args([
            "bag",
            "create",
            "src",
            "--profile",
            "p.json",
            "-d",
            "sha512",
        ])
        .run();
    r.code(2);
    r.stderr_has("not bagged, nothing written: the bag would not meet the BagIt Profile https://example.org/p.json (3 departures)");
    r.stderr_has("Bag-Info: 'Contact-Email' is required and absent");
    r.stderr_has("Bag-Info: 'External-Identifier' is required and absent");
    r.stderr_has("Manifests-Required: no manifest-sha256.txt");
    untouched(&d);
    let r = d
        .cmd()
        .args([
            "bag",
            "create",
            "src",
            "--out",
            "bag",
            "--profile",
            "p.json",
        ])
        .args(["--info", "Contact-Email: a@example.org"])
        .args(["--info", "External-Identifier: x1"])
        .args(["--info", "Source-Organization: Elsewhere"])
        .run();
    r.code(2);
    r.stderr_has("Bag-Info: 'Source-Organization' is 'Elsewhere', not one of Archive");
    untouched(&d);
    // What the profile asks of the payload, once it is read: still nothing written.
    d.create(
        b"p2.json",
        PROFILE
            .replace(
                r#""Manifests-Required""#,
                r#""Payload-Files-Required": ["data/must.txt"], "Manifests-Required""#,
            )
            .as_bytes(),
    );
    let r = d
        .cmd()
        .args(["bag", "create", "src", "--profile", "p2.json"])
        .args(["--info", "Contact-Email: a@example.org"])
        .args(["--info", "External-Identifier: x1"])
        .run();
    r.code(2);
    r.stderr_has("Payload-Files-Required: no data/must.txt");
    untouched(&d);

    let r = d
        .cmd()
        .args([
            "bag",
            "create",
            "src",
            "--out",
            "bag",
            "--profile",
            "p.json",
        ])
        .args(["--info", "Contact-Email: a@example.org"])
        .args(["--info", "External-Identifier: x1"])
        .run();
    r.code(0);
    r.stderr_has("Bag-Info: 'Contact-Name' is recommended and absent");
    let info = std::fs::read_to_string(d.join("bag/bag-info.txt")).unwrap();
    for line in [
        "Source-Organization: Archive\n",
        "BagIt-Profile-Identifier: https://example.org/p.json\n",
        "Contact-Email: a@example.org\n",
    ] {
        assert!(info.contains(line), "{line:?} in\n{info}");
    }
    let r = d
        .cmd()
        .args(["bag", "validate", "bag", "--profile", "p.json"])
        .run();
    r.code(0);
    r.stdout_has("bag is valid (BagIt 1.0, 1 file, 6 bytes checked); it meets the BagIt Profile https://example.org/p.json");
    r.stderr_has("warning: bag: profile: Bag-Info: 'Contact-Name' is recommended and absent (https://example.org/p.json)");
    if let Some(verdict) = bagit_python(&d, "bag") {
        assert_eq!(verdict, Ok(()));
        let info = bagit_python_info(&d, "bag");
        assert_eq!(info["Source-Organization"], "Archive");
        assert_eq!(
            info["BagIt-Profile-Identifier"],
            "https://example.org/p.json"
        );
        assert_eq!(info["External-Identifier"], "x1");
    }
}

/// `bag create --profile`: what the profile would write into bag-info.txt (a label of one
/// allowed value, its identifier) is held to `--info`'s rule: a line break (which would plant
/// labels of its own) or white space around a value (which bag-info.txt does not keep, so the
/// bag would not meet its own profile) is refused at once, naming the profile file and the
/// label: exit 2, nothing written, the source untouched.
#[test]
fn create_refuses_a_profile_value_bag_info_txt_cannot_hold() {
    let d = Dir::new();
    d.create(b"src/a.txt", b"alpha\n");
    let head = r#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "https://example.org/p.json"},
        "Accept-BagIt-Version": ["1.0"], "Bag-Info": {"Source-Organization": {"values": ["#;
    for (value, why) in [
        (
            r#""Org\nPayload-Oxum: 999.9\nExternal-Identifier: injected""#,
            "line break",
        ),
        (r#"" padded ""#, "white space"),
    ] {
        d.create(b"p.json", format!("{head}{value}]}}}}}}").as_bytes());
        for out in [&["--out", "bag"][..], &[]] {
            let r = d
                .cmd()
                .args(["bag", "create", "src", "--profile", "p.json"])
                .args(out)
                .run();
            r.code(2);
            r.stderr_has("p.json: ");
            r.stderr_has("'Source-Organization'");
            r.stderr_has(why);
            assert!(!d.join("bag").exists(), "{value}");
            assert!(d.join("src/a.txt").is_file() && !d.join("src/data").exists());
            assert!(!d.join("src/bag-info.txt").exists());
        }
    }
    // The same rule as --info's.
    let r = d
        .cmd()
        .args(["bag", "create", "src", "--out", "bag"])
        .args(["--info", "Source-Organization: Org\nPayload-Oxum: 999.9"])
        .run();
    r.code(2);
    r.stderr_has("line break");
    assert!(!d.join("bag").exists());
}

/// `bag validate --profile`: a tag file whose name is not UTF-8 is compared on its bytes: a
/// profile requiring (or allowing only) the text its lossy conversion gives is not met.
#[test]
fn a_name_that_is_not_utf8_does_not_meet_the_profile_s_lossy_text() {
    use std::os::unix::ffi::OsStrExt;
    let d = Dir::new();
    d.create(b"b/a.txt", b"abc");
    d.cmd()
        .args(["bag", "create", "b", "-q"])
        .args([
            "--info",
            "BagIt-Profile-Identifier: https://example.org/p.json",
        ])
        .run()
        .code(0);
    std::fs::write(
        d.join(std::ffi::OsStr::from_bytes(b"b/extra\xff.txt")),
        b"x",
    )
    .unwrap();
    for field in ["Tag-Files-Required", "Tag-Files-Allowed"] {
        d.create(
            b"p.json",
            format!(
                r#"{{"BagIt-Profile-Info": {{"BagIt-Profile-Identifier": "https://example.org/p.json"}},
                     "Accept-BagIt-Version": ["1.0"], "{field}": ["extra\ufffd.txt"]}}"#
            )
            .as_bytes(),
        );
        let r = d
            .cmd()
            .args(["bag", "validate", "b", "--profile", "p.json"])
            .run();
        r.code(1);
        r.stderr_has(&format!("{field}: "));
    }
}
