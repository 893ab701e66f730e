//! The unit tests of `profile`.

use super::*;

/// A bag of one payload file, with a sha256 manifest and tag manifest, and bag-info.txt.
fn bag() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    std::fs::create_dir_all(r.join("data/sub")).unwrap();
    std::fs::write(r.join("data/sub/a.txt"), b"abc").unwrap();
    std::fs::write(
        r.join("bagit.txt"),
        "BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n",
    )
    .unwrap();
    std::fs::write(
        r.join("bag-info.txt"),
        "Source-Organization: Example\nContact-Name: A\nContact-Name: B\nBagIt-Profile-Identifier: http://x/p.json\n",
    )
    .unwrap();
    std::fs::write(r.join("manifest-sha256.txt"), "ba78  data/sub/a.txt\n").unwrap();
    std::fs::write(r.join("tagmanifest-sha256.txt"), "00  bagit.txt\n").unwrap();
    t
}

/// The base profile, which the bag meets, with `extra` fields added or replaced.
fn profile(extra: &str) -> Profile {
    let mut v: serde_json::Value = serde_json::from_str(
        r#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "http://x/p.json",
             "Source-Organization": "x", "External-Description": "d", "Version": "1",
             "BagIt-Profile-Version": "1.4.0"},
            "Accept-BagIt-Version": ["0.97", "1.0"]}"#,
    )
    .unwrap();
    let e: serde_json::Value = serde_json::from_str(extra).unwrap();
    for (k, x) in e.as_object().unwrap() {
        v[k] = x.clone();
    }
    Profile::parse(v.to_string().as_bytes()).unwrap()
}

/// The departures of the test bag from the base profile plus `extra`, as "FIELD: what".
fn found(t: &tempfile::TempDir, extra: &str) -> Vec<String> {
    check_profile(t.path(), &profile(extra))
        .unwrap()
        .into_iter()
        .map(|f| f.message)
        .collect()
}

fn one(t: &tempfile::TempDir, extra: &str, field: &str) {
    let f = found(t, extra);
    assert_eq!(f.len(), 1, "{extra}: {f:?}");
    assert!(f[0].starts_with(&format!("{field}: ")), "{extra}: {f:?}");
    assert!(f[0].ends_with("(http://x/p.json)"), "{f:?}");
}

#[test]
fn a_bag_that_meets_every_field_has_no_departure() {
    let t = bag();
    let all = r#"{"Bag-Info": {"Source-Organization": {"required": true, "values": ["Example"]},
                   "Contact-Name": {"required": true}},
                  "Manifests-Required": ["sha256"], "Manifests-Allowed": ["sha256", "sha512"],
                  "Tag-Manifests-Required": ["sha256"], "Tag-Manifests-Allowed": ["sha256"],
                  "Tag-Files-Required": [], "Tag-Files-Allowed": [],
                  "Payload-Files-Required": ["data/sub/a.txt"], "Payload-Files-Allowed": ["data/sub/*"],
                  "Allow-Fetch.txt": false, "Fetch.txt-Required": false, "Data-Empty": false,
                  "Serialization": "optional", "Accept-Serialization": ["application/zip"]}"#;
    assert_eq!(found(&t, all), Vec::<String>::new());
}

#[test]
fn each_field_is_checked() {
    let t = bag();
    one(
        &t,
        r#"{"Accept-BagIt-Version": ["0.97"]}"#,
        "Accept-BagIt-Version",
    );
    one(
        &t,
        r#"{"Bag-Info": {"External-Identifier": {"required": true}}}"#,
        "Bag-Info",
    );
    one(
        &t,
        r#"{"Bag-Info": {"Source-Organization": {"values": ["Other"]}}}"#,
        "Bag-Info",
    );
    one(
        &t,
        r#"{"Bag-Info": {"Contact-Name": {"repeatable": false}}}"#,
        "Bag-Info",
    );
    one(
        &t,
        r#"{"Manifests-Required": ["sha512"]}"#,
        "Manifests-Required",
    );
    one(&t, r#"{"Manifests-Allowed": ["md5"]}"#, "Manifests-Allowed");
    one(
        &t,
        r#"{"Tag-Manifests-Required": ["md5"]}"#,
        "Tag-Manifests-Required",
    );
    one(
        &t,
        r#"{"Tag-Manifests-Allowed": ["md5"]}"#,
        "Tag-Manifests-Allowed",
    );
    one(
        &t,
        r#"{"Tag-Files-Required": ["DPN/dpnFirstNode.txt"]}"#,
        "Tag-Files-Required",
    );
    one(&t, r#"{"Fetch.txt-Required": true}"#, "Fetch.txt-Required");
    one(&t, r#"{"Serialization": "required"}"#, "Serialization");
    one(
        &t,
        r#"{"Payload-Files-Required": ["data/b.txt"]}"#,
        "Payload-Files-Required",
    );
    one(
        &t,
        r#"{"Payload-Files-Allowed": ["data/*.csv"]}"#,
        "Payload-Files-Allowed",
    );
    one(&t, r#"{"Data-Empty": true}"#, "Data-Empty");
    // A tag file the profile does not allow, and one it does.
    std::fs::create_dir(t.path().join("meta")).unwrap();
    std::fs::write(t.path().join("meta/x.xml"), b"<x/>").unwrap();
    one(
        &t,
        r#"{"Tag-Files-Allowed": ["other/*"]}"#,
        "Tag-Files-Allowed",
    );
    assert!(found(&t, r#"{"Tag-Files-Allowed": ["meta/*"]}"#).is_empty());
    // fetch.txt where the profile forbids one.
    std::fs::write(t.path().join("fetch.txt"), b"http://a/b 3 data/b\n").unwrap();
    one(&t, r#"{"Allow-Fetch.txt": false}"#, "Allow-Fetch.txt");
    assert!(found(&t, r#"{"Fetch.txt-Required": true}"#).is_empty());
}

#[test]
fn the_bag_names_the_profile_it_follows() {
    let t = bag();
    let info = t.path().join("bag-info.txt");
    std::fs::write(
        &info,
        "Source-Organization: Example\nBagIt-Profile-Identifier: http://y/other.json\n",
    )
    .unwrap();
    one(&t, "{}", "BagIt-Profile-Identifier");
    std::fs::write(&info, "Source-Organization: Example\n").unwrap();
    one(&t, "{}", "BagIt-Profile-Identifier");
    std::fs::remove_file(&info).unwrap();
    one(&t, "{}", "BagIt-Profile-Identifier");
}

/// Data-Empty: no file, or one file of zero bytes; one byte, or a second empty file, is a
/// departure.
#[test]
fn a_data_empty_bag_holds_no_file_or_one_empty_file() {
    let t = bag();
    let data = t.path().join("data");
    std::fs::remove_dir_all(&data).unwrap();
    std::fs::create_dir(&data).unwrap();
    assert!(found(&t, r#"{"Data-Empty": true}"#).is_empty());
    std::fs::write(data.join(".keep"), b"").unwrap();
    assert!(found(&t, r#"{"Data-Empty": true}"#).is_empty());
    std::fs::write(data.join(".keep"), b"x").unwrap();
    one(&t, r#"{"Data-Empty": true}"#, "Data-Empty");
    std::fs::write(data.join(".keep"), b"").unwrap();
    std::fs::write(data.join(".keep2"), b"").unwrap();
    one(&t, r#"{"Data-Empty": true}"#, "Data-Empty");
}

/// `"values": []` allows no value: a value present is a departure (as the python validator
/// has it); an absent label is not.
#[test]
fn an_empty_list_of_values_allows_none() {
    let t = bag();
    let f = found(
        &t,
        r#"{"Bag-Info": {"Source-Organization": {"values": []}}}"#,
    );
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(
        f[0].starts_with("Bag-Info: 'Source-Organization' is 'Example'")
            && f[0].contains("allows no value"),
        "{f:?}"
    );
    assert!(
        found(
            &t,
            r#"{"Bag-Info": {"External-Identifier": {"values": []}}}"#
        )
        .is_empty()
    );
}

/// A bag-info.txt that names two profiles (the profile's and another) is a departure, as
/// it is when it names only another.
#[test]
fn a_bag_that_names_two_profiles_is_a_departure() {
    let t = bag();
    std::fs::write(
        t.path().join("bag-info.txt"),
        "Source-Organization: Example\nBagIt-Profile-Identifier: http://x/p.json\n\
         BagIt-Profile-Identifier: http://y/other.json\n",
    )
    .unwrap();
    let f = found(&t, "{}");
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(
        f[0].starts_with(
            "BagIt-Profile-Identifier: bag-info.txt has 2 BagIt-Profile-Identifier lines"
        ) && f[0].contains("http://y/other.json"),
        "{f:?}"
    );
}

/// A profile's own identifier is a string (a URI): a number is refused, naming the field.
#[test]
fn a_profile_identifier_that_is_not_a_string_is_refused() {
    let json = br#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": 42},
                    "Accept-BagIt-Version": ["1.0"]}"#;
    let e = Profile::parse(json).unwrap_err();
    assert!(
        e.contains("BagIt-Profile-Identifier") && e.contains("42") && e.contains("string"),
        "{e}"
    );
}

/// A FIFO among the tag files does not count as the tag file a profile requires, and one
/// under data/ leaves it not empty.
#[test]
fn a_fifo_is_not_a_tag_or_payload_file() {
    let t = bag();
    let fifo = |p: &Path| {
        let st = std::process::Command::new("mkfifo")
            .arg(p)
            .status()
            .unwrap();
        assert!(st.success());
    };
    fifo(&t.path().join("extra.txt"));
    let f = found(&t, r#"{"Tag-Files-Required": ["extra.txt"]}"#);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(
        f[0].starts_with("Tag-Files-Required: extra.txt is a FIFO"),
        "{f:?}"
    );
    std::fs::remove_file(t.path().join("extra.txt")).unwrap();
    let data = t.path().join("data");
    std::fs::remove_dir_all(&data).unwrap();
    std::fs::create_dir(&data).unwrap();
    fifo(&data.join("pipe"));
    one(&t, r#"{"Data-Empty": true}"#, "Data-Empty");
}

/// The validator's own cases for Tag-Files-Allowed: not given (valid), an existing tag file
/// not allowed (one departure), a required one not allowed (the profile contradicts
/// itself: refused, naming both fields).
#[test]
fn tag_files_allowed_as_the_python_validator_tests_it() {
    let t = bag();
    assert!(found(&t, "{}").is_empty());
    std::fs::write(t.path().join("tag-foo"), b"").unwrap();
    let f = found(&t, r#"{"Tag-Files-Allowed": []}"#);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(
        f[0].starts_with("Tag-Files-Allowed: tag-foo is not allowed"),
        "{f:?}"
    );
    let contradicts = br#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "x"},
        "Accept-BagIt-Version": ["1.0"], "Tag-Files-Allowed": [], "Tag-Files-Required": ["tag-foo"]}"#;
    let e = Profile::parse(contradicts).unwrap_err();
    assert!(
        e.contains("Tag-Files-Required 'tag-foo' is not among Tag-Files-Allowed"),
        "{e}"
    );
    let manifests = br#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "x"},
        "Accept-BagIt-Version": ["1.0"], "Manifests-Required": ["sha512"], "Manifests-Allowed": ["sha256"]}"#;
    assert!(
        Profile::parse(manifests)
            .unwrap_err()
            .contains("Manifests-Required 'sha512'")
    );
}

/// The bagit-profiles-validator's own cases (its test.py), rebuilt: Bag-Info labels, tag
/// descriptions, manifests allowed and required. Where trawl differs it says so.
#[test]
fn the_python_validator_s_cases() {
    let t = bag();
    // Labels: the same case always matches; another case matches too (RFC 8493 labels
    // are compared without case, as the validator's ignore_baginfo_tag_case=True).
    for label in ["BagIt-Profile-Identifier", "BAGIT-PROFILE-IDENTIFIER"] {
        let extra = format!(r#"{{"Bag-Info": {{"{label}": {{"required": true}}}}}}"#);
        assert!(found(&t, &extra).is_empty(), "{label}");
    }
    // A tag's description is a string, when present.
    for bad in ["false", "0"] {
        let json = format!(
            r#"{{"BagIt-Profile-Info": {{"BagIt-Profile-Identifier": "x"}}, "Accept-BagIt-Version": ["1.0"],
                "Bag-Info": {{"FakeTag": {{"description": {bad}}}}}}}"#
        );
        assert!(Profile::parse(json.as_bytes()).is_err(), "{bad}");
    }
    assert!(
        found(
            &t,
            r#"{"Bag-Info": {"FakeTag": {"description": "some string"}}}"#
        )
        .is_empty()
    );
    // Required not among allowed: the validator reports one error, trawl refuses the
    // profile (it contradicts itself), naming both fields.
    for (req, allowed) in [
        ("Manifests-Required", "Manifests-Allowed"),
        ("Tag-Manifests-Required", "Tag-Manifests-Allowed"),
    ] {
        let json = format!(
            r#"{{"BagIt-Profile-Info": {{"BagIt-Profile-Identifier": "x"}}, "Accept-BagIt-Version": ["1.0"],
                "{allowed}": ["foo"], "{req}": ["sha256"]}}"#
        );
        let e = Profile::parse(json.as_bytes()).unwrap_err();
        assert!(e.contains(req) && e.contains(allowed), "{e}");
    }
    // A manifest the profile does not allow: one departure each.
    one(
        &t,
        r#"{"Manifests-Allowed": ["foo"], "Manifests-Required": []}"#,
        "Manifests-Allowed",
    );
    one(
        &t,
        r#"{"Tag-Manifests-Allowed": ["foo"], "Tag-Manifests-Required": []}"#,
        "Tag-Manifests-Allowed",
    );
    // More allowed than required: valid.
    assert!(
        found(
            &t,
            r#"{"Manifests-Allowed": ["sha256", "sha512"], "Manifests-Required": ["sha256"]}"#
        )
        .is_empty()
    );
    assert!(found(&t, r#"{"Tag-Manifests-Allowed": ["sha256", "sha512"], "Tag-Manifests-Required": ["sha256"]}"#).is_empty());
}

/// The validator's "bar" case: a BagIt 0.96 bag with md5 manifests, DPN tag files and the
/// bag-info values its profile (bagProfileBar.json, rebuilt here) asks for, valid as a
/// directory (Serialization optional); then each rule broken once.
#[test]
fn the_python_validator_s_bar_bag_and_profile() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    std::fs::create_dir_all(r.join("data")).unwrap();
    std::fs::create_dir_all(r.join("DPN")).unwrap();
    std::fs::write(r.join("data/photo.jpg"), b"jpeg").unwrap();
    std::fs::write(r.join("DPN/dpnFirstNode.txt"), b"node").unwrap();
    std::fs::write(r.join("DPN/dpnRegistry"), b"reg").unwrap();
    std::fs::write(
        r.join("bagit.txt"),
        "BagIt-Version: 0.96\nTag-File-Character-Encoding: UTF-8\n",
    )
    .unwrap();
    let info = "Bag-Count: 1/1\nBag-Size: 1.6M\nBagging-Date: 2012-12-06\nContact-Email: ruestn@yorku.ca\n\
                Contact-Name: Nick Ruest\nExternal-Description: Sample BagBar for testing\n\
                Organization-Address: 4700 Keele Street Toronto, Ontario M3J 1P3 Canada\n\
                Payload-Oxum: 4.1\nSource-Organization: York University\n\
                BagIt-Profile-Identifier: http://canadiana.org/standards/bagit/tdr_ingest.json\n";
    std::fs::write(r.join("bag-info.txt"), info).unwrap();
    std::fs::write(r.join("manifest-md5.txt"), "x  data/photo.jpg\n").unwrap();
    std::fs::write(r.join("tagmanifest-md5.txt"), "x  bagit.txt\n").unwrap();
    let bar = r#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "http://canadiana.org/standards/bagit/tdr_ingest.json",
          "BagIt-Profile-Version": "1.2.0", "Source-Organization": "Candiana.org", "Version": "1.2"},
        "Bag-Info": {
          "Source-Organization": {"required": true, "values": ["Simon Fraser University", "York University"]},
          "Organization-Address": {"required": true, "values": ["8888 University Drive Burnaby, B.C. V5A 1S6 Canada",
                                                                "4700 Keele Street Toronto, Ontario M3J 1P3 Canada"]},
          "Contact-Name": {"required": true, "values": ["Mark Jordan", "Nick Ruest"]},
          "Contact-Phone": {"required": false}, "Contact-Email": {"required": true},
          "External-Description": {"required": true}, "External-Identifier": {"required": false},
          "Bag-Size": {"required": true}, "Bag-Group-Identifier": {"required": false},
          "Bag-Count": {"required": true}, "Internal-Sender-Identifier": {"required": false},
          "Internal-Sender-Description": {"required": false}, "Bagging-Date": {"required": true},
          "Payload-Oxum": {"required": true}},
        "Manifests-Required": ["md5"], "Allow-Fetch.txt": false, "Serialization": "optional",
        "Accept-Serialization": ["application/zip"], "Tag-Manifests-Required": ["md5"],
        "Tag-Files-Allowed": ["DPN/*"], "Tag-Files-Required": ["DPN/dpnFirstNode.txt", "DPN/dpnRegistry"],
        "Accept-BagIt-Version": ["0.96"]}"#;
    let p = Profile::parse(bar.as_bytes()).unwrap();
    let departures = |p: &Profile| -> Vec<String> {
        check_profile(r, p)
            .unwrap()
            .into_iter()
            .map(|f| f.message)
            .collect()
    };
    assert_eq!(departures(&p), Vec::<String>::new());
    // Each broken once.
    std::fs::write(r.join("fetch.txt"), "http://a/b 3 data/b\n").unwrap();
    let f = departures(&p);
    assert!(
        f.len() == 1 && f[0].starts_with("Allow-Fetch.txt: "),
        "{f:?}"
    );
    std::fs::remove_file(r.join("fetch.txt")).unwrap();
    std::fs::remove_file(r.join("DPN/dpnRegistry")).unwrap();
    let f = departures(&p);
    assert!(
        f.len() == 1 && f[0].starts_with("Tag-Files-Required: "),
        "{f:?}"
    );
    std::fs::write(r.join("DPN/dpnRegistry"), b"reg").unwrap();
    std::fs::write(
        r.join("bag-info.txt"),
        info.replace("York University", "Elsewhere"),
    )
    .unwrap();
    let f = departures(&p);
    assert!(
        f.len() == 1 && f[0].starts_with("Bag-Info: 'Source-Organization' is 'Elsewhere'"),
        "{f:?}"
    );
    std::fs::write(r.join("bag-info.txt"), info.replace("Bag-Count: 1/1\n", "")).unwrap();
    let f = departures(&p);
    assert!(
        f.len() == 1 && f[0].starts_with("Bag-Info: 'Bag-Count' is required"),
        "{f:?}"
    );
}

/// A serialized bag is held to Serialization and Accept-Serialization by its type.
#[test]
fn a_serialized_bag_is_held_to_the_accepted_serializations() {
    let t = tempfile::tempdir().unwrap();
    let zip = t.path().join("b.zip");
    std::fs::write(&zip, b"PK\x03\x04rest").unwrap();
    let mut tar = vec![0u8; 512];
    tar[257..262].copy_from_slice(b"ustar");
    let tarf = t.path().join("b.tar");
    std::fs::write(&tarf, &tar).unwrap();
    let p =
        profile(r#"{"Serialization": "optional", "Accept-Serialization": ["application/zip"]}"#);
    let (kind, f) = check_serialized(&zip, &p).unwrap();
    assert_eq!((kind.as_str(), f.len()), ("application/zip", 0));
    let (kind, f) = check_serialized(&tarf, &p).unwrap();
    assert_eq!(kind, "application/x-tar");
    assert!(
        f.len() == 1
            && f[0]
                .message
                .starts_with("Accept-Serialization: the bag is application/x-tar"),
        "{f:?}"
    );
    let p = profile(r#"{"Serialization": "forbidden"}"#);
    let (_, f) = check_serialized(&zip, &p).unwrap();
    assert!(
        f.len() == 1 && f[0].message.starts_with("Serialization: forbidden"),
        "{f:?}"
    );
    // A list of types, or refused.
    let bad = br#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "x"},
                   "Accept-BagIt-Version": ["1.0"], "Accept-Serialization": "application/zip"}"#;
    assert!(Profile::parse(bad).is_err());
}

/// What a profile fixes goes into a new bag's bag-info.txt (its identifier, each label of
/// one allowed value the command line lacks); a label the command line gives is left to it.
#[test]
fn a_profile_fixes_its_identifier_and_each_label_of_one_value() {
    let p = profile(
        r#"{"Bag-Info": {"Source-Organization": {"required": true, "values": ["Archive"]},
                         "Contact-Name": {"values": ["A", "B"]},
                         "Bag-Group-Identifier": {"values": ["g"]}}}"#,
    );
    let given = vec![("bag-group-identifier".to_string(), "mine".to_string())];
    assert_eq!(
        p.fixed_info(&given),
        vec![
            (
                "BagIt-Profile-Identifier".to_string(),
                "http://x/p.json".to_string()
            ),
            ("Source-Organization".to_string(), "Archive".to_string()),
        ]
    );
}

/// A recommended label the bag lacks is a warning, never a departure; a bag planned with no
/// payload listed is not held to the payload's rules, and is once it is listed.
#[test]
fn recommended_labels_warn_and_a_planned_bag_s_payload_is_checked_when_listed() {
    let t = bag();
    let p = profile(r#"{"Bag-Info": {"Contact-Phone": {"recommended": true}}}"#);
    let held = hold_to_profile(t.path(), &p).unwrap();
    assert!(held.departures.is_empty(), "{:?}", held.departures);
    assert_eq!(held.warnings.len(), 1);
    assert_eq!(
        held.warnings[0].message,
        "Bag-Info: 'Contact-Phone' is recommended and absent (http://x/p.json)"
    );
    let p = profile(r#"{"Payload-Files-Required": ["data/must"]}"#);
    let info = p.fixed_info(&[]);
    let algs = [trawl_digest::Algorithm::Sha256];
    assert!(
        p.check_planned(&info, &algs, &[], None)
            .departures
            .is_empty()
    );
    let listed = Some(vec![("data/other".to_string(), 3)]);
    let d = p.check_planned(&info, &algs, &[], listed).departures;
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(
        d[0].message
            .starts_with("Payload-Files-Required: no data/must")
    );
}

#[test]
fn a_profile_without_what_it_must_say_is_refused() {
    let no_id = br#"{"BagIt-Profile-Info": {}, "Accept-BagIt-Version": ["1.0"]}"#;
    assert!(
        Profile::parse(no_id)
            .unwrap_err()
            .contains("BagIt-Profile-Identifier")
    );
    let no_versions = br#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "x"}}"#;
    assert!(
        Profile::parse(no_versions)
            .unwrap_err()
            .contains("Accept-BagIt-Version")
    );
    let bad = br#"{"BagIt-Profile-Info": {"BagIt-Profile-Identifier": "x"},
                   "Accept-BagIt-Version": ["1.0"], "Serialization": "sometimes"}"#;
    assert!(Profile::parse(bad).unwrap_err().contains("Serialization"));
}

/// A tag file whose name is not UTF-8 is compared on its bytes: the text its lossy
/// conversion gives neither meets `Tag-Files-Required` nor is allowed by `Tag-Files-Allowed`.
#[test]
fn a_name_that_is_not_utf8_meets_no_name_of_the_profile() {
    use std::os::unix::ffi::OsStrExt;
    let t = bag();
    std::fs::write(
        t.path().join(std::ffi::OsStr::from_bytes(b"extra\xff.txt")),
        b"",
    )
    .unwrap();
    let f = found(&t, r#"{"Tag-Files-Required": ["extra\ufffd.txt"]}"#);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(
        f[0].starts_with("Tag-Files-Required: no extra\u{fffd}.txt"),
        "{f:?}"
    );
    let f = found(&t, r#"{"Tag-Files-Allowed": ["extra\ufffd.txt"]}"#);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(
        f[0].starts_with("Tag-Files-Allowed: extra\u{fffd}.txt is not allowed"),
        "{f:?}"
    );
    assert!(found(&t, r#"{"Tag-Files-Allowed": ["extra*"]}"#).is_empty());
}

/// What a profile would put into bag-info.txt (its identifier, a label of one allowed
/// value) that bag-info.txt cannot hold as it is is refused, naming the label.
#[test]
fn a_fixed_value_bag_info_txt_cannot_hold_is_refused() {
    let base = r#""Accept-BagIt-Version": ["1.0"]"#;
    for (info, label) in [
        (
            r#"{"BagIt-Profile-Identifier": "x"}, "Bag-Info": {"Source-Organization": {"values": ["Org\nPayload-Oxum: 999.9"]}}"#,
            "'Source-Organization'",
        ),
        (
            r#"{"BagIt-Profile-Identifier": "x"}, "Bag-Info": {"Contact-Name": {"values": [" padded "]}}"#,
            "'Contact-Name'",
        ),
        (
            r#"{"BagIt-Profile-Identifier": "x\rY: z"}"#,
            "'BagIt-Profile-Identifier'",
        ),
        (
            r#"{"BagIt-Profile-Identifier": "x"}, "Bag-Info": {"A:B": {"values": ["v"]}}"#,
            "'A:B'",
        ),
    ] {
        let json = format!(r#"{{"BagIt-Profile-Info": {info}, {base}}}"#);
        let e = Profile::parse(json.as_bytes()).unwrap_err();
        assert!(
            e.contains(label) && e.contains("cannot go into bag-info.txt"),
            "{e}"
        );
    }
    // Several values: none is written, the bag chooses (with --info, held to the same rule).
    let json = format!(
        r#"{{"BagIt-Profile-Info": {{"BagIt-Profile-Identifier": "x"}}, {base},
            "Bag-Info": {{"Contact-Name": {{"values": ["a", "b"]}}}}}}"#
    );
    assert!(Profile::parse(json.as_bytes()).is_ok());
}

/// A byte-order mark before the JSON is skipped; a URL is said not to be fetched.
#[test]
fn a_bom_is_skipped_and_a_url_is_not_fetched() {
    let json = "\u{feff}{\"BagIt-Profile-Info\": {\"BagIt-Profile-Identifier\": \"x\"}, \"Accept-BagIt-Version\": [\"1.0\"]}";
    assert_eq!(Profile::parse(json.as_bytes()).unwrap().identifier(), "x");
    let e = Profile::read(Path::new("https://example.org/no/such/p.json"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("a URL is not fetched"), "{e}");
    let e = Profile::read(Path::new("no/such/p.json"))
        .unwrap_err()
        .to_string();
    assert!(!e.contains("URL"), "{e}");
}

/// Thousands of required names against thousands of globs: each glob compiled once, the
/// profile parsed at once (it took seconds when each was compiled again for every name).
#[test]
fn a_large_profile_parses_at_once() {
    let n = 3000;
    let names: Vec<String> = (0..n).map(|i| format!("\"dir{i:05}/f.txt\"")).collect();
    let globs: Vec<String> = (0..n).map(|i| format!("\"dir{i:05}/*.t?t\"")).collect();
    let json = format!(
        r#"{{"BagIt-Profile-Info": {{"BagIt-Profile-Identifier": "x"}}, "Accept-BagIt-Version": ["1.0"],
            "Tag-Files-Required": [{}], "Tag-Files-Allowed": [{}],
            "Payload-Files-Required": [{}], "Payload-Files-Allowed": [{}]}}"#,
        names.join(","),
        globs.join(","),
        names.join(","),
        globs.join(","),
    );
    let start = std::time::Instant::now();
    Profile::parse(json.as_bytes()).unwrap();
    let took = start.elapsed();
    assert!(took < std::time::Duration::from_secs(2), "{took:?}");
    // Globs that neither start nor end with text, each matched whole against each name:
    // past a bounded amount of work the profile is refused, at once.
    let globs: Vec<String> = (0..n).rev().map(|i| format!("\"*{i:05}*/*\"")).collect();
    let json = format!(
        r#"{{"BagIt-Profile-Info": {{"BagIt-Profile-Identifier": "x"}}, "Accept-BagIt-Version": ["1.0"],
            "Tag-Files-Required": [{}], "Tag-Files-Allowed": [{}]}}"#,
        names.join(","),
        globs.join(","),
    );
    let start = std::time::Instant::now();
    let e = Profile::parse(json.as_bytes()).unwrap_err();
    let took = start.elapsed();
    assert!(
        e.starts_with("Tag-Files-Required against Tag-Files-Allowed: more names and globs"),
        "{e}"
    );
    assert!(took < std::time::Duration::from_secs(2), "{took:?}");
}
