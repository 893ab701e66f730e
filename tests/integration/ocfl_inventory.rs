//! `trawl ocfl validate` on inventories from elsewhere: names that are not UTF-8, dates, hostile
//! sizes and deep paths, an inventory checked alone, one that cannot be read.

use serde_json::{Value, json};

use crate::ocfl::{edit_inventory, hex, os, records, write_object};
use crate::util::Dir;

/// Object and content names stay bytes from the listing to the report: an object named
/// `o\xff` (its content corrupt) beside one named `o` + U+FFFD (sound) are two objects, the
/// corrupt one invalid and named by its bytes; an unlisted content file `a\xff` beside a
/// listed `a` + U+FFFD is content the manifest lacks (E023); a sound object under a name that
/// is not UTF-8 is valid on its own.
#[test]
fn names_that_are_not_utf8_stay_apart_from_the_listing_to_the_report() {
    let d = Dir::new();
    let root = d.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("0=ocfl_1.1"), "ocfl_1.1\n").unwrap();
    write_object(&root.join(os(b"o\xff")), "info:ff", &[&[("a", b"1")]]);
    write_object(&root.join("o\u{fffd}"), "info:fffd", &[&[("a", b"2")]]);
    std::fs::write(root.join(os(b"o\xff/v1/content/a")), b"X").unwrap();
    let r = d.cmd().args(["ocfl", "validate", "--json", "root"]).run();
    r.code(1);
    let (objects, s) = records(&r);
    assert_eq!(
        (s["objects"].as_u64(), s["invalid"].as_u64()),
        (Some(2), Some(1)),
        "{s}"
    );
    let bad: Vec<&Value> = objects
        .iter()
        .filter(|o| o["errors"] != json!([]))
        .collect();
    assert_eq!(bad.len(), 1, "{}", r.stdout);
    assert_eq!(bad[0]["path_hex"], hex(b"root/o\xff"), "{}", bad[0]);
    assert_eq!(bad[0]["id"], "info:ff");
    assert_eq!(bad[0]["errors"][0]["code"], "E092");
    // People read the bytes too: two names alike as text are told apart.
    let r = d.cmd().args(["ocfl", "validate", "root"]).run();
    r.stderr_has("root/o\u{fffd} [bytes 726f6f742f6fff]: [E092] v1/content/a");

    // Alone, the sound object under a name that is not UTF-8 is valid.
    std::fs::write(root.join(os(b"o\xff/v1/content/a")), b"1").unwrap();
    let r = d
        .cmd()
        .arg("ocfl")
        .arg("validate")
        .arg(root.join(os(b"o\xff")))
        .run();
    r.code(0);
    let r = d.cmd().args(["ocfl", "validate", "root"]).run();
    r.code(0);
    r.stdout_has("2 objects, 2 valid, 0 invalid");

    write_object(&d.join("c"), "info:c", &[&[("a\u{fffd}", b"1")]]);
    std::fs::write(d.join(os(b"c/v1/content/a\xff")), b"unlisted").unwrap();
    let r = d.cmd().args(["ocfl", "validate", "--json", "c"]).run();
    r.code(1);
    let (objects, _) = records(&r);
    let e = &objects[0]["errors"];
    assert_eq!(e.as_array().unwrap().len(), 1, "{e}");
    assert_eq!(
        (e[0]["code"].as_str(), e[0]["path_hex"].as_str()),
        (Some("E023"), Some(hex(b"v1/content/a\xff").as_str())),
        "{e}"
    );
}

/// `created` holds real dates: a day the month lacks, an offset out of range, a 60th second
/// that cannot be a leap second are E049; a leap second at 23:59:60 UTC is a date.
#[test]
fn created_dates_are_held_to_the_calendar() {
    let d = Dir::new();
    for (created, valid) in [
        ("2024-02-31T00:00:00Z", false),
        ("2024-01-01T00:00:00+99:99", false),
        ("2024-01-01T10:00:60Z", false),
        ("2024-02-29T00:00:00Z", true),
        ("2016-12-31T23:59:60Z", true),
    ] {
        let at = d.join(format!("o-{}", created.replace(':', "")));
        write_object(&at, "info:d", &[&[("a", b"1")]]);
        edit_inventory(&at, |inv| inv["versions"]["v1"]["created"] = json!(created));
        let r = d.cmd().arg("ocfl").arg("validate").arg(&at).run();
        if valid {
            r.code(0);
        } else {
            r.code(1);
            r.stderr_has("[E049]");
        }
    }
}

/// An inventory that breaks a rule a hundred thousand times is reported with the first
/// thousand findings listed and the rest counted; one with twenty million numbers in an array
/// is held in memory bounded by its size, not by the values it holds.
#[test]
fn a_hostile_inventory_costs_memory_bounded_by_its_size() {
    let d = Dir::new();
    write_object(&d.join("many"), "info:m", &[&[("a", b"1")]]);
    edit_inventory(&d.join("many"), |inv| {
        let vs = inv["versions"].as_object_mut().unwrap();
        for i in 2..=100_000 {
            vs.insert(format!("v{i}"), json!({}));
        }
        inv["head"] = json!("v100000");
    });
    let r = d.cmd().args(["ocfl", "validate", "--json", "many"]).run();
    r.code(1);
    let (objects, s) = records(&r);
    let o = &objects[0];
    assert_eq!(o["errors"].as_array().unwrap().len(), 1000);
    let more = o["errors_not_listed"].as_u64().unwrap();
    assert!(more > 100_000, "{more}");
    assert_eq!(s["errors"].as_u64(), Some(1000 + more));
    let r = d.cmd().args(["ocfl", "validate", "many"]).run();
    r.stderr_has(&format!("many: {more} more errors not listed"));

    let dir = d.join("zeros");
    write_object(&dir, "info:z", &[&[("a", b"1")]]);
    let mut text = std::fs::read(dir.join("inventory.json")).unwrap();
    text.pop();
    text.extend_from_slice(b", \"x\": [");
    text.extend(std::iter::repeat_n(&b"0,"[..], 10_000_000).flatten());
    text.extend_from_slice(b"0]}");
    std::fs::write(dir.join("inventory.json"), &text).unwrap();
    let (code, rss) = crate::util::peak_rss_apart(&d, &["ocfl", "validate", "-q", "zeros"]);
    assert_eq!(code, 1);
    println!(
        "peak RSS {} MiB for a {} MiB inventory",
        rss >> 20,
        text.len() >> 20
    );
    // The text itself, and a little; a value per number would take 320 MB.
    assert!(
        rss < text.len() as u64 * 2 + (40 << 20),
        "peak RSS {} MiB for a {} MiB inventory",
        rss >> 20,
        text.len() >> 20
    );

    // Past the cap, refused by its size before anything is read.
    let dir = d.join("sparse");
    write_object(&dir, "info:s", &[&[("a", b"1")]]);
    std::fs::File::options()
        .write(true)
        .open(dir.join("inventory.json"))
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let (code, rss) = crate::util::peak_rss_apart(&d, &["ocfl", "validate", "-q", "sparse"]);
    assert_eq!(code, 1);
    assert!(rss < 100 << 20, "peak RSS {} MiB", rss >> 20);
    let r = d.cmd().args(["ocfl", "validate", "sparse"]).run();
    r.stderr_has("[E033] inventory.json: cannot be read: larger than 1024 MiB: not read");
}

/// A directory without a storage root's declaration that holds objects is a storage root
/// without its declaration (E069), whatever other `0=` file it holds; a link at the storage
/// root's top is named and not followed (E072), `extensions` must be a directory (E086) and
/// `ocfl_layout.json` a file (E070, a FIFO never waited on).
/// A content path and a logical path of a million elements (`a/a/.../x`, 2 MB each): checked
/// in memory and time of their length, each path's parent directories not held one by one
/// (which took the square of the length: 255 MB for an inventory of 64 KB).
#[test]
fn a_deep_path_in_an_inventory_costs_memory_of_its_length() {
    let d = Dir::new();
    let dir = d.join("deep");
    write_object(&dir, "info:d", &[&[("a", b"1")]]);
    let deep = format!("{}x", "a/".repeat(1_000_000));
    let digest = "0".repeat(128);
    edit_inventory(&dir, |inv| {
        inv["manifest"][&digest] = json!([format!("v1/content/{deep}"), "v1/content/a/a"]);
        inv["versions"]["v1"]["state"][&digest] = json!([deep, "a/a/a"]);
    });
    let r = d.cmd().args(["ocfl", "validate", "deep"]).run_within(60);
    r.code(1);
    r.stderr_has("[E101]")
        .stderr_has("content path 'v1/content/a/a' is both a file and a directory")
        .stderr_has("[E095]")
        .stderr_has("logical path 'a/a/a' is both a file and a directory");
    let (code, rss) = crate::util::peak_rss_apart(&d, &["ocfl", "validate", "-q", "deep"]);
    assert_eq!(code, 1);
    assert!(rss < 100 << 20, "peak RSS {} MiB", rss >> 20);
}

/// `ocfl validate INVENTORY` checks an inventory file alone, as ocfl-py does: a sound one is
/// valid, one whose content paths are outside the version directories is E042.
#[test]
fn an_inventory_file_is_checked_alone() {
    let d = Dir::new();
    write_object(&d.join("o"), "info:o", &[&[("a", b"1")]]);
    std::fs::copy(d.join("o/inventory.json"), d.join("good.json")).unwrap();
    let r = d.cmd().args(["ocfl", "validate", "good.json"]).run();
    r.code(0);
    r.stdout_has("good.json is a valid OCFL 1.1 inventory");
    // Named through a link, it is the file the link leads to (the user named it so).
    std::os::unix::fs::symlink("good.json", d.join("link.json")).unwrap();
    d.cmd()
        .args(["ocfl", "validate", "link.json"])
        .run()
        .code(0);
    edit_inventory(&d.join("o"), |inv| {
        let m = inv["manifest"].as_object_mut().unwrap();
        for paths in m.values_mut() {
            *paths = json!(["content/a"]);
        }
    });
    std::fs::copy(d.join("o/inventory.json"), d.join("bad.json")).unwrap();
    let r = d
        .cmd()
        .args(["ocfl", "validate", "--json", "bad.json"])
        .run();
    r.code(1);
    let (objects, s) = records(&r);
    assert_eq!(s["kind"], "inventory");
    assert_eq!(objects[0]["errors"][0]["code"], "E042", "{}", objects[0]);
}

/// The newest version's inventory that cannot be read is E033 ("cannot be read"), never E064
/// (which says it differs from the root inventory: nothing was compared).
#[test]
fn an_unreadable_newest_version_inventory_is_e033_not_e064() {
    let d = Dir::new();
    let dir = d.join("obj");
    write_object(&dir, "info:u", &[&[("a", b"1")]]);
    // Past the cap: refused by its size, not read (sparse, nothing written).
    std::fs::File::options()
        .write(true)
        .open(dir.join("v1/inventory.json"))
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let r = d.cmd().args(["ocfl", "validate", "obj"]).run();
    r.code(1);
    r.stderr_has("[E033] v1/inventory.json: cannot be read: larger than 1024 MiB: not read");
    assert!(!r.stderr.contains("E064"), "{}", r.stderr);
}
