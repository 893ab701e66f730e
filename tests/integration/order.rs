//! The order files are read in: as their data lies on disk (FIEMAP), checked against the
//! offsets `filefrag` (e2fsprogs) prints.

use crate::util::*;
use std::io::Write;

/// The files `trawl scan ARGS disk` opens, by name, in the order opened (the debug build's
/// `TRAWL_TEST_OPEN_LOG`), with one reader so that the opens are the reads' order.
fn opens(d: &Dir, log: &str, args: &[&str]) -> Vec<String> {
    let log = d.join(log);
    let mut c = d
        .cmd()
        .args([
            "scan",
            "-q",
            "--no-reduce",
            "-d",
            "xxh3",
            "-j1",
            "--io-depth",
            "1",
        ])
        .args(args)
        .arg("disk");
    c.cmd.env("TRAWL_TEST_OPEN_LOG", &log);
    c.run().code(0);
    std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|p| p.rsplit('/').next().unwrap().to_string())
        .collect()
}

#[test]
fn files_are_read_in_the_order_their_data_lies_on_disk() {
    let d = Dir::new();
    let Some(filefrag) = tool("filefrag") else {
        return;
    };
    let Some((disk, _)) = Mounted::image(&d, "mkfs.ext4", &["-q", "-F"], 64 << 20, "disk") else {
        return;
    };
    // 24 files in one directory, written in an order that is neither their names' nor the
    // directory's, each synced before the next so that the allocator places them one after
    // another in the order written.
    let names: Vec<String> = (0..24).map(|i| format!("f{i:02}")).collect();
    for k in 0..24 {
        let i = (k * 7 + 5) % 24;
        let mut f = std::fs::File::create(disk.at.join(&names[i])).unwrap();
        f.write_all(&noise(16384 + 4096 * i, i as u64 + 1)).unwrap();
        f.sync_all().unwrap();
    }
    // The reference: each file's first physical block, as filefrag prints it.
    let mut placed: Vec<(u64, String)> = names
        .iter()
        .map(|n| {
            let p = disk.at.join(n);
            let r = run_tool(d.path(), &filefrag, &["-v".as_ref(), p.as_os_str()]);
            r.code(0);
            let first = r
                .stdout
                .lines()
                .find(|l| l.trim_start().starts_with("0:"))
                .unwrap_or_else(|| panic!("no extent in filefrag's output: {}", r.stdout));
            // "   0:        0..       3:      34816..     34819:      4: ..."
            let physical = first.split(':').nth(2).unwrap().split("..").next().unwrap();
            (physical.trim().parse().unwrap(), n.clone())
        })
        .collect();
    placed.sort();
    let on_disk: Vec<String> = placed.into_iter().map(|(_, n)| n).collect();

    assert_eq!(opens(&d, "disk.log", &["--read-order", "disk"]), on_disk);
    // As listed, the order is another (or this test would show nothing).
    let listed = opens(&d, "walk.log", &["--read-order", "walk"]);
    assert_eq!(listed.len(), 24);
    assert_ne!(listed, on_disk);
}
