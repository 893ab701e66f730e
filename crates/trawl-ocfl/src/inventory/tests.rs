//! An inventory's checks, case by case.

use super::created::{NotCreated, parse_created};
use super::manifest::files_that_are_directories;
use super::versions::looks_like_address;
use super::*;
use serde_json::json;

/// A sha512 digest written with one hex digit.
pub(crate) fn d(c: char) -> String {
    c.to_string().repeat(128)
}

/// A sound inventory of one version: `a.txt` and `sub/b.txt`, each its own content.
pub(crate) fn sound() -> Value {
    json!({
        "id": "info:example/1",
        "type": "https://ocfl.io/1.1/spec/#inventory",
        "digestAlgorithm": "sha512",
        "head": "v1",
        "manifest": {d('a'): ["v1/content/a.txt"], d('b'): ["v1/content/sub/b.txt"]},
        "versions": {"v1": {
            "created": "2024-01-01T00:00:00Z",
            "message": "first",
            "user": {"name": "A. Person", "address": "mailto:a@example.org"},
            "state": {d('a'): ["a.txt"], d('b'): ["sub/b.txt"]},
        }},
    })
}

/// What checking `inv` logs: the codes of its errors, then of its warnings.
fn codes(inv: &Value) -> (Vec<&'static str>, Vec<&'static str>) {
    let mut log = Log::default();
    check(
        &serde_json::to_vec(inv).unwrap(),
        b"inventory.json",
        "1.1",
        &mut log,
    );
    let c = |f: &[trawl_report::OcflFinding]| f.iter().map(|f| f.code).collect();
    (c(&log.errors), c(&log.warnings))
}

/// `sound()` with `edit` applied.
fn edited(edit: impl FnOnce(&mut Value)) -> Value {
    let mut v = sound();
    edit(&mut v);
    v
}

#[test]
fn a_sound_inventory_raises_nothing_and_says_what_it_holds() {
    let mut log = Log::default();
    let raw = serde_json::to_vec(&sound()).unwrap();
    let inv = check(&raw, b"inventory.json", "1.0", &mut log).unwrap();
    assert!(log.errors.is_empty() && log.warnings.is_empty(), "{log:?}");
    assert_eq!(inv.id.as_deref(), Some("info:example/1"));
    // The type's version, not the one assumed.
    assert_eq!(inv.spec_version, "1.1");
    assert_eq!(
        (inv.head.as_str(), inv.all_versions.as_slice()),
        ("v1", &["v1".to_string()][..])
    );
    assert_eq!(
        inv.manifest_files.get("v1/content/sub/b.txt"),
        Some(&d('b'))
    );
    assert_eq!(inv.content_directory, "content");
    // Not JSON, or JSON but not an object: E033 and nothing else checked.
    for raw in [&b"{\"id\": "[..], b"[1, 2]", b""] {
        let mut log = Log::default();
        assert!(check(raw, b"inventory.json", "1.1", &mut log).is_none());
        assert_eq!(
            log.errors.iter().map(|f| f.code).collect::<Vec<_>>(),
            ["E033"]
        );
    }
}

/// Each top-level key missing or of the wrong kind raises its own code (and a SHOULD its
/// warning).
#[test]
fn each_key_missing_or_mistyped_raises_its_code() {
    let cases: Vec<(Value, &str)> = vec![
        (
            edited(|v| drop(v.as_object_mut().unwrap().remove("id"))),
            "E036",
        ),
        (edited(|v| v["id"] = json!("")), "E037"),
        (edited(|v| v["id"] = json!(7)), "E037"),
        (
            edited(|v| drop(v.as_object_mut().unwrap().remove("type"))),
            "E036",
        ),
        (
            edited(|v| v["type"] = json!("https://ocfl.io/2.0/spec/#inventory")),
            "E038",
        ),
        (edited(|v| v["type"] = json!("inventory")), "E038"),
        (
            edited(|v| drop(v.as_object_mut().unwrap().remove("digestAlgorithm"))),
            "E036",
        ),
        (edited(|v| v["digestAlgorithm"] = json!("md5")), "E025"),
        (edited(|v| v["contentDirectory"] = json!("a/b")), "E017"),
        (edited(|v| v["contentDirectory"] = json!(["c"])), "E017"),
        (edited(|v| v["contentDirectory"] = json!("..")), "E018"),
        (
            edited(|v| drop(v.as_object_mut().unwrap().remove("manifest"))),
            "E041",
        ),
        (edited(|v| v["manifest"] = json!([])), "E041"),
        (
            edited(|v| drop(v.as_object_mut().unwrap().remove("versions"))),
            "E041",
        ),
        (edited(|v| v["versions"] = json!([])), "E044"),
        (edited(|v| v["versions"] = json!({})), "E008"),
        (
            edited(|v| drop(v.as_object_mut().unwrap().remove("head"))),
            "E036",
        ),
        (edited(|v| v["head"] = json!("v2")), "E040"),
    ];
    for (inv, code) in cases {
        let (errors, _) = codes(&inv);
        assert!(errors.contains(&code), "{code}: {errors:?} for {inv}");
    }
    assert_eq!(
        codes(&edited(|v| v["id"] = json!("ark-1"))),
        (vec![], vec!["W005"])
    );
    let sha256 = edited(|v| {
        v["digestAlgorithm"] = json!("sha256");
        v["manifest"] = json!({"a".repeat(64): ["v1/content/a.txt"]});
        v["versions"]["v1"]["state"] = json!({"a".repeat(64): ["a.txt"]});
    });
    assert_eq!(codes(&sha256), (vec![], vec!["W004"]));
}

/// A manifest's digests and content paths: each rule broken raises its code.
#[test]
fn manifest_digests_and_content_paths_are_held_to_their_rules() {
    let with = |m: Value| {
        edited(|v| {
            v["manifest"] = m;
            v["versions"]["v1"]["state"] = json!({d('a'): ["a.txt"]});
        })
    };
    let a = d('a');
    let cases: Vec<(Value, &str)> = vec![
        (json!({"abc": ["v1/content/a.txt"]}), "E025"),
        (
            json!({&a: ["v1/content/a.txt"], a.to_uppercase(): ["v1/content/c"]}),
            "E096",
        ),
        (json!({&a: "v1/content/a.txt"}), "E092"),
        (json!({&a: ["v1/content/a.txt", 5]}), "E092"),
        (json!({&a: ["/v1/content/a.txt"]}), "E100"),
        (json!({&a: ["v1/content/a.txt/"]}), "E100"),
        (json!({&a: ["v1/a.txt"]}), "E042"),
        (json!({&a: ["x1/content/a.txt"]}), "E042"),
        (json!({&a: ["v1/data/a.txt"]}), "E042"),
        (json!({&a: ["v2/content/a.txt"]}), "E042"),
        (json!({&a: ["v1/content/../a.txt"]}), "E099"),
        (json!({&a: ["v1/content//a.txt"]}), "E099"),
        (json!({&a: ["v1/content/./a.txt"]}), "E099"),
        (
            json!({&a: ["v1/content/a.txt"], d('c'): ["v1/content/a.txt"]}),
            "E101",
        ),
        (json!({&a: ["v1/content/a", "v1/content/a/b"]}), "E101"),
        (
            json!({&a: ["v1/content/a.txt"], d('c'): ["v1/content/c"]}),
            "E107",
        ),
    ];
    for (m, code) in cases {
        let (errors, _) = codes(&with(m.clone()));
        assert!(errors.contains(&code), "{code}: {errors:?} for {m}");
    }
    // A name beside a directory of a like name (`a-b` sorts between `a` and `a/`) is not
    // a directory.
    assert_eq!(
        codes(&with(
            json!({&a: ["v1/content/a", "v1/content/a-b", "v1/content/ab/c"]})
        )),
        (vec![], vec![])
    );
}

/// A version's state: digests of the inventory's algorithm written as the manifest writes
/// them, logical paths sound and each once.
#[test]
fn state_digests_and_logical_paths_are_held_to_their_rules() {
    let a = d('a');
    let with = |s: Value| edited(|v| v["versions"]["v1"]["state"] = s);
    let cases: Vec<(Value, &str)> = vec![
        (json!([]), "E050"),
        (json!({"abc": ["a.txt"]}), "E050"),
        (json!({d('c'): ["a.txt"], d('b'): ["sub/b.txt"]}), "E050"),
        (
            json!({a.to_uppercase(): ["a.txt"], d('b'): ["sub/b.txt"]}),
            "E050",
        ),
        (json!({&a: "a.txt", d('b'): ["sub/b.txt"]}), "E050"),
        (json!({&a: ["/a.txt"], d('b'): ["sub/b.txt"]}), "E053"),
        (json!({&a: ["a.txt/"], d('b'): ["sub/b.txt"]}), "E053"),
        (json!({&a: ["x/../a.txt"], d('b'): ["sub/b.txt"]}), "E052"),
        (
            json!({&a: ["a.txt", "sub/b.txt"], d('b'): ["sub/b.txt"]}),
            "E095",
        ),
        (json!({&a: ["sub"], d('b'): ["sub/b.txt"]}), "E095"),
    ];
    for (s, code) in cases {
        let (errors, _) = codes(&with(s.clone()));
        assert!(errors.contains(&code), "{code}: {errors:?} for {s}");
    }
}

/// A version's block: `created` a W3C date-time to the second with a zone, `state` there,
/// `message` and `user` (SHOULD) with a `name`, an `address` (SHOULD) that is a URI.
#[test]
fn a_versions_block_is_held_to_its_rules() {
    let with = |key: &str, value: Option<Value>| {
        edited(|v| {
            let block = v["versions"]["v1"].as_object_mut().unwrap();
            match value {
                Some(x) => drop(block.insert(key.into(), x)),
                None => drop(block.remove(key)),
            }
        })
    };
    for (key, value, errors, warnings) in [
        ("created", None, vec!["E048"], vec![]),
        ("created", Some(json!(20240101)), vec!["E049"], vec![]),
        (
            "created",
            Some(json!("2024-01-01")),
            vec!["E049", "E049"],
            vec![],
        ),
        (
            "created",
            Some(json!("2024-01-01T00:00:00")),
            vec!["E049"],
            vec![],
        ),
        (
            "created",
            Some(json!("2024-01-01T00:00Z")),
            vec!["E049"],
            vec![],
        ),
        (
            "created",
            Some(json!("2023-02-29T00:00:00Z")),
            vec!["E049"],
            vec![],
        ),
        ("message", None, vec![], vec!["W007"]),
        ("message", Some(json!(["m"])), vec!["E094"], vec![]),
        ("user", None, vec![], vec!["W007"]),
        ("user", Some(json!("A. Person")), vec!["E054"], vec![]),
        (
            "user",
            Some(json!({"address": "mailto:a@b.org"})),
            vec!["E054"],
            vec![],
        ),
        (
            "user",
            Some(json!({"name": "A", "address": 5})),
            vec!["E054"],
            vec![],
        ),
        ("user", Some(json!({"name": "A"})), vec![], vec!["W008"]),
        (
            "user",
            Some(json!({"name": "A", "address": "a@b.org"})),
            vec![],
            vec!["W009"],
        ),
    ] {
        assert_eq!(
            codes(&with(key, value.clone())),
            (errors, warnings),
            "{key}: {value:?}"
        );
    }
    let (errors, _) = codes(&edited(|v| v["versions"]["v1"] = json!("v1")));
    assert!(errors.contains(&"E047"), "{errors:?}");
    let (errors, _) = codes(&with("state", None));
    assert!(errors.contains(&"E048"), "{errors:?}");
}

/// The fixity block: algorithms the specification or its extension name, their digests'
/// forms, each once, content paths sound and in the manifest.
#[test]
fn a_fixity_block_is_held_to_its_rules() {
    let md5 = |c: char| c.to_string().repeat(32);
    let with = |f: Value| edited(|v| v["fixity"] = f);
    assert_eq!(
        codes(&with(
            json!({"md5": {md5('1'): ["v1/content/a.txt"]}, "blake2b-160": {"2".repeat(40): ["v1/content/sub/b.txt"]}})
        )),
        (vec![], vec![])
    );
    for (f, code) in [
        (json!([]), "E111"),
        (json!({"crc32": {}}), "E056"),
        (json!({"md5": []}), "E057"),
        (json!({"md5": {"123": ["v1/content/a.txt"]}}), "E057"),
        (json!({"md5": {md5('1'): "v1/content/a.txt"}}), "E057"),
        (
            json!({"md5": {md5('a'): ["v1/content/a.txt"], md5('A'): ["v1/content/sub/b.txt"]}}),
            "E097",
        ),
        (json!({"md5": {md5('1'): ["v1/content/c.txt"]}}), "E057"),
        (json!({"md5": {md5('1'): ["/v1/content/a.txt"]}}), "E100"),
        (json!({"md5": {md5('1'): ["v1/content/./a.txt"]}}), "E099"),
    ] {
        let (errors, _) = codes(&with(f.clone()));
        assert_eq!(errors, [code], "{f}");
    }
    // Under specification 1.0 a fixity that is not an object is E056.
    let old = edited(|v| {
        v["type"] = json!("https://ocfl.io/1.0/spec/#inventory");
        v["fixity"] = json!("none");
    });
    assert_eq!(codes(&old).0, ["E056"]);
}

/// A digest's form is its algorithm's hex length, in either case; an algorithm neither the
/// specification nor extension 0001 names has none.
#[test]
fn digests_have_their_algorithms_form() {
    assert_eq!(digest_form("sha512", &d('f')), Some(true));
    assert_eq!(digest_form("sha512", &d('F')), Some(true));
    assert_eq!(digest_form("sha512", &d('g')), Some(false));
    assert_eq!(digest_form("sha256", &d('a')), Some(false));
    assert_eq!(digest_form("blake2b-384", &"0".repeat(96)), Some(true));
    assert_eq!(digest_form("md5", &"0".repeat(32)), Some(true));
    assert_eq!(digest_form("sha3-256", &"0".repeat(64)), None);
    assert_eq!(normalized("AbC"), "abc");
}

/// Paths that are also another's directory, and only they, whatever lies between them in
/// byte order; a path of 100,000 elements is checked in a moment.
#[test]
fn a_path_is_a_directory_exactly_when_another_begins_with_it_and_a_slash() {
    let paths = ["a", "a-b", "a/b", "ab", "a/b/c", "b", "b.txt", "c/d"];
    assert_eq!(files_that_are_directories(paths.into_iter()), ["a", "a/b"]);
    assert!(files_that_are_directories(["a/b", "a/c"].into_iter()).is_empty());
    let deep = format!("{}x", "a/".repeat(100_000));
    let t = std::time::Instant::now();
    assert!(files_that_are_directories([deep.as_str(), "a/b"].into_iter()).is_empty());
    let with_file = [deep.as_str(), "a/a/a"];
    assert_eq!(files_that_are_directories(with_file.into_iter()), ["a/a/a"]);
    assert!(t.elapsed() < std::time::Duration::from_secs(5));
}

/// Versions past what their zero-padding allows are E011 and E013 (`v10` after `v09`: no
/// gap), and a sequence that does not begin at 1 is E009.
#[test]
fn versions_past_their_padding_are_named() {
    let mut log = Log::default();
    let mut v = serde_json::Map::new();
    for n in 1..=10 {
        v.insert(format!("v{n:02}"), json!({}));
    }
    let got = version_sequence(&Value::Object(v), b"inventory.json", &mut log);
    assert_eq!(got.len(), 9);
    let errors: Vec<_> = log.errors.iter().map(|f| f.code).collect();
    assert_eq!(errors, ["E011", "E013"]);
    let mut log = Log::default();
    version_sequence(&json!({"v0": {}, "v2": {}}), b"i", &mut log);
    assert_eq!(log.errors[0].code, "E009");
}

/// An earlier version's inventory against the root's: the same versions' states, logical
/// paths and content; metadata SHOULD be the same.
#[test]
fn an_earlier_inventory_is_held_to_the_root_one() {
    let root = edited(|v| {
        v["head"] = json!("v2");
        v["manifest"][d('c')] = json!(["v2/content/c.txt"]);
        v["versions"]["v2"] = json!({
            "created": "2024-02-01T00:00:00Z",
            "message": "second",
            "user": {"name": "A. Person", "address": "mailto:a@example.org"},
            "state": {d('a'): ["a.txt"], d('c'): ["c.txt"]},
        });
    });
    let parse = |v: &Value, at: &[u8]| {
        let mut log = Log::default();
        let inv = check(&serde_json::to_vec(v).unwrap(), at, "1.1", &mut log).unwrap();
        assert!(log.errors.is_empty(), "{log:?}");
        inv
    };
    let newest = parse(&root, b"inventory.json");
    let prior_codes = |v: &Value| {
        let mut log = Log::default();
        check_prior(&newest, &parse(v, b"v1/inventory.json"), &mut log);
        let c = |f: &[trawl_report::OcflFinding]| f.iter().map(|f| f.code).collect::<Vec<_>>();
        (c(&log.errors), c(&log.warnings))
    };
    assert_eq!(prior_codes(&sound()), (vec![], vec![]));
    // Not an earlier version: the root's own.
    assert_eq!(prior_codes(&root).0, ["E066"]);
    let moved = edited(|v| {
        v["versions"]["v1"]["state"] = json!({d('a'): ["A.txt"], d('b'): ["sub/b.txt"]})
    });
    assert_eq!(prior_codes(&moved).0, ["E066", "E066"]);
    let other = edited(|v| {
        v["manifest"] = json!({d('a'): ["v1/content/a.txt"], d('e'): ["v1/content/sub/b.txt"]});
        v["versions"]["v1"]["state"] = json!({d('a'): ["a.txt"], d('e'): ["sub/b.txt"]});
    });
    assert_eq!(prior_codes(&other).0, ["E066", "E066"]);
    let elsewhere = edited(|v| v["manifest"][d('b')] = json!(["v1/content/elsewhere.txt"]));
    assert_eq!(prior_codes(&elsewhere).0, ["E066"]);
    let said = edited(|v| v["versions"]["v1"]["message"] = json!("first, said otherwise"));
    assert_eq!(prior_codes(&said), (vec![], vec!["W011"]));
}

#[test]
fn created_dates_are_read_by_part() {
    let ok = parse_created("2019-01-01T02:03:04Z").unwrap();
    assert!(ok.zone && ok.seconds);
    let ok = parse_created("2019-01-01T02:03:04.123+01:00").unwrap();
    assert!(ok.zone && ok.seconds);
    let no_zone = parse_created("2019-01-01T02:03:04").unwrap();
    assert!(!no_zone.zone && no_zone.seconds);
    let no_secs = parse_created("2019-01-01T02:03Z").unwrap();
    assert!(no_secs.zone && !no_secs.seconds);
    for bad in [
        "",
        "2019-13-01T00:00:00Z",
        "yesterday",
        "2019-01-01T25:00:00Z",
        "2019-01-01 00:00:00Z",
        // Days the month does not have, offsets out of range, a 60th second that cannot
        // be a leap second, a time without a whole date.
        "2024-02-31T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "2024-04-31",
        "2024-01-01T00:00:00+99:99",
        "2024-01-01T00:00:00-24:00",
        "2024-01-01T10:00:60Z",
        "2016-12-31T23:59:60",
        "2024-01T10:00Z",
        "2024T10:00Z",
    ] {
        assert!(parse_created(bad).is_err(), "{bad}");
    }
    for good in [
        "2024-02-29T00:00:00Z",
        "2016-12-31T23:59:60Z",
        "2015-06-30T23:59:60.5Z",
        // The same leap second in another zone.
        "2017-01-01T00:59:60+01:00",
        "2015-06-30T18:59:60-05:00",
        "2024-01-01T00:00:00+23:59",
        "2024",
        "2024-02",
    ] {
        assert!(parse_created(good).is_ok(), "{good}");
    }
}

#[test]
fn uris_and_addresses_are_told_from_plain_text() {
    assert!(looks_like_uri("info:fedora/x"));
    assert!(looks_like_uri("https://example.org/a"));
    assert!(!looks_like_uri("ark-123"));
    assert!(!looks_like_uri("1abc:x"));
    assert!(looks_like_address("mailto:a@b.org"));
    assert!(!looks_like_address("a@b.org"));
}

#[test]
fn a_zero_padded_sequence_warns_and_a_gap_is_an_error() {
    let mut log = Log::default();
    let v: Value = serde_json::json!({"v001": {}, "v002": {}});
    assert_eq!(
        version_sequence(&v, b"inventory.json", &mut log),
        ["v001", "v002"]
    );
    assert_eq!(log.warnings[0].code, "W001");
    let mut log = Log::default();
    let v: Value = serde_json::json!({"v1": {}, "v3": {}});
    assert_eq!(version_sequence(&v, b"inventory.json", &mut log), ["v1"]);
    assert_eq!(log.errors[0].code, "E010");
}

#[test]
fn a_created_that_is_no_date_time_says_which_fault_it_has() {
    let err = |s: &str| parse_created(s).err();
    assert_eq!(err("yesterday"), Some(NotCreated::Form("yesterday".into())));
    assert_eq!(
        err("2024-02-31"),
        Some(NotCreated::NoSuchDay("2024-02-31".into()))
    );
    assert_eq!(
        err("2024-01T10:00Z"),
        Some(NotCreated::TimeWithoutDate("2024-01T10:00Z".into()))
    );
    assert_eq!(
        err("2024-01-01T00:00:00+99:99"),
        Some(NotCreated::Offset("2024-01-01T00:00:00+99:99".into()))
    );
    let leap = err("2016-12-31T23:59:60").unwrap();
    assert!(matches!(leap, NotCreated::LeapSecond(..)), "{leap:?}");
    assert_eq!(
        leap.to_string(),
        "'2016-12-31T23:59:60': a 60th second without a time zone cannot be a leap second"
    );
}
