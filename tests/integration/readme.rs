//! Every command the README shows, run as written on a fixture tree: its absolute paths
//! (`/archive`, `/data`, ...) are directories made here, and nothing else is changed but the
//! server's address (a free loopback port). What cannot run here is named with its reason.

use std::path::Path;
use std::process::Command;

use crate::util::*;

/// The README's example commands: indented lines from "Two commands" to "Commands".
fn readme_commands() -> Vec<String> {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = text.find("## Two commands").unwrap();
    let end = text.find("## Commands").unwrap();
    text[start..end]
        .lines()
        .filter_map(|l| l.strip_prefix("    "))
        .map(str::to_string)
        .collect()
}

/// Why a README line is not run here, if it is not.
fn not_here(line: &str) -> Option<String> {
    let needs = |tool_name: &str| {
        tool(tool_name)
            .is_none()
            .then(|| format!("{tool_name} is not installed"))
    };
    if line.starts_with("cargo ") {
        return Some("the build and the test command: this test runs inside them".into());
    }
    if line.starts_with("ncdu ") {
        return Some(
            "ncdu -f opens an interactive browser (the export is checked by report::ncdu_*)".into(),
        );
    }
    if line.contains("--scheduler tcp://head:8786") {
        return Some("needs a running Dask scheduler at head:8786 (python/tests start one)".into());
    }
    if line.starts_with("python3 ") || line.starts_with("trawl-dask ") {
        let ok = Command::new("python3")
            .args(["-c", "import trawl, distributed"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            skip("the Python package (pip install ./python) and dask are not installed");
            return Some("the Python package is not installed".into());
        }
    }
    for t in ["fclones", "hashdeep", "sha256sum"] {
        if line.contains(t)
            && !line.contains(&format!("{t}:"))
            && let Some(why) = needs(t)
        {
            return Some(why);
        }
    }
    None
}

#[test]
fn every_readme_command_runs_as_written() {
    let d = Dir::new();
    let root = d.path().to_str().unwrap().to_string();
    // The placeholders, made real.
    for (dir, files) in [
        (
            "archive",
            &[
                ("a.txt", &b"alpha\n"[..]),
                ("sub/b.bin", &[7u8; 20_000][..]),
            ][..],
        ),
        (
            "transfer/box-12",
            &[
                ("letter.txt", &b"dear\n"[..]),
                ("scan.tif", &[1u8; 9000][..]),
            ],
        ),
        (
            "data",
            &[
                ("x.bin", &[3u8; 40_000][..]),
                ("copy/x.bin", &[3u8; 40_000][..]),
            ],
        ),
        ("huge", &[("y.bin", &[5u8; 30_000][..])]),
        ("mnt/lustre/proj", &[("p.txt", &b"p\n"[..])]),
    ] {
        for (name, body) in files {
            d.create(format!("{dir}/{name}").as_bytes(), body);
        }
    }
    for dir in ["scratch", "bags", "work", "home", "bin"] {
        std::fs::create_dir_all(d.join(dir)).unwrap();
    }
    std::fs::create_dir_all(d.join("repo/ocfl-root")).unwrap();
    std::fs::write(d.join("repo/ocfl-root/0=ocfl_1.1"), "ocfl_1.1\n").unwrap();
    crate::ocfl::write_object(
        &d.join("repo/ocfl-root/obj"),
        "info:obj",
        &[&[("a.txt", b"alpha")]],
    );
    let flv = crate::flv::flv_with_keyframes();
    d.create(b"videos/talk.flv", &flv);
    d.create(b"work/talk.flv", &flv);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_trawl"), d.join("bin/trawl")).unwrap();
    for name in ["before.json", "after.json"] {
        d.cmd()
            .args(["scan", "../data", "-q", "--json", name])
            .run_in("work")
            .code(0);
    }
    // The object store's lines: s3s-fs here, a bucket `my-bucket` holding `photos/`, and the
    // same files in `work/photos` for `trawl check`.
    let (server, up) = crate::s3_support::s3s_with_bucket(&d);
    up.create_bucket("my-bucket");
    for (name, body) in [("a.jpg", &b"jpeg"[..]), ("2024/b.jpg", &[9u8; 5000][..])] {
        up.put(
            "my-bucket",
            &format!("photos/{name}"),
            body,
            crate::s3_support::Checksum::Crc64Nvme,
        );
        d.create(format!("work/photos/{name}").as_bytes(), body);
    }
    let path = format!("{root}/bin:{}", std::env::var("PATH").unwrap_or_default());
    let mut ran = 0;
    for line in readme_commands() {
        if let Some(why) = not_here(&line) {
            eprintln!("README, not run here: {line}\n  ({why})");
            continue;
        }
        let mut cmd = line.clone();
        for p in [
            "/transfer/box-12",
            "/bags/box-12",
            "/mnt/lustre/proj",
            "/archive",
            "/data",
            "/huge",
            "/scratch",
            "/videos",
            "/repo/ocfl-root",
        ] {
            cmd = cmd.replace(&format!(" {p}"), &format!(" {root}{p}"));
            cmd = cmd.replace(&format!("({p}"), &format!("({root}{p}"));
            cmd = cmd.replace(&format!("\"{p}"), &format!("\"{root}{p}"));
        }
        let serve = cmd.starts_with("trawl serve");
        if serve {
            // A free port instead of the default one (another program may hold it).
            cmd = cmd.replace(
                &format!("trawl serve {root}"),
                &format!("trawl serve --listen 127.0.0.1:0 {root}"),
            );
            // A server runs until stopped: it must still be serving after a second.
            cmd = format!("timeout --preserve-status -s INT 1 {cmd}");
        }
        let mut sh = Command::new("sh");
        if cmd.contains("s3://") {
            cmd = cmd.replace("http://minio:9000", server.endpoint());
            server.env().apply(&mut sh);
        }
        let out = sh
            .args(["-c", &cmd])
            .current_dir(d.join("work"))
            .env("PATH", &path)
            .env("HOME", d.join("home"))
            .output()
            .unwrap();
        let code = out.status.code();
        // `timeout` stops the server with SIGINT, its normal stop (exit 0).
        assert_eq!(
            code,
            Some(0),
            "README line failed as written: {line}\n(run as: {cmd})\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        ran += 1;
    }
    assert!(ran >= 20, "only {ran} README lines ran");
}
