//! Many files in bounded memory: the per-file records spill to disk past `--memory` and come
//! back in the same order with the same content.

use std::path::Path;

use crate::util::{Dir, peak_rss_apart};

/// A tree of `n` files in nested directories, with names that sort in tricky ways (a backslash,
/// a byte that is not UTF-8, `.` and `-` beside `/`), one FLV file, and sizes that vary.
fn tree(d: &Dir, top: &str, n: usize) {
    for i in 0..n {
        let name = match i % 7 {
            0 => format!("{top}/d{}/f{i}.txt", i % 13),
            1 => format!("{top}/d{}.x/f{i}", i % 5),
            2 => format!("{top}/d{}-y/{i}", i % 3),
            3 => format!("{top}/back\\slash {i}"),
            4 => format!("{top}/d{}/e/f{i}", i % 11),
            _ => format!("{top}/f{i}"),
        };
        let mut bytes = name.into_bytes();
        if i % 97 == 0 {
            bytes.extend_from_slice(b"\xff");
        }
        let body: Vec<u8> = (0..(i % 300) as u32)
            .map(|k| (k.wrapping_mul(31) ^ i as u32) as u8)
            .collect();
        d.create(&bytes, &body);
    }
    d.create(
        format!("{top}/media/clip.flv").as_bytes(),
        &crate::flv::flv_with_keyframes(),
    );
}

/// The pretty JSON report with the figures that differ from run to run (time, memory) cut out.
fn steady_json(p: &Path) -> String {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .filter(|l| {
            ![
                "\"seconds\"",
                "\"bytes_per_second\"",
                "\"peak_rss_bytes\"",
                "\"peak_anon_bytes\"",
            ]
            .iter()
            .any(|k| l.trim_start().starts_with(k))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every file below `dir`, with its bytes, sorted.
fn files_below(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        for e in std::fs::read_dir(&p).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push((
                    e.path().strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(e.path()).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

/// Scans `roots` with every output, once with the defaults and once with a budget of a few
/// records, and compares what each wrote.
fn same_outputs_when_spilled(d: &Dir, roots: &[&str]) {
    let scratch = d.join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let mut outputs = Vec::new();
    for (tag, extra) in [
        ("ram", vec![]),
        ("disk", vec!["--memory", "8K", "--temp-dir", "scratch"]),
    ] {
        let out = format!("out-{tag}");
        std::fs::create_dir_all(d.join(&out)).unwrap();
        let mut args: Vec<String> = vec!["scan".into()];
        args.extend(roots.iter().map(|r| r.to_string()));
        for a in [
            "-d",
            "md5,sha256",
            "-m",
            &format!("sha256sum:{out}/SHA256SUMS"),
            "-m",
            &format!("bsd:{out}/BSD"),
            "-m",
            &format!("hashdeep:{out}/HASHDEEP"),
            "--json",
            &format!("{out}/report.json"),
            "--media-index",
            &format!("{out}/index"),
        ] {
            args.push(a.to_string());
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let r = d.cmd().args(&args).run();
        r.code(0);
        if tag == "disk" {
            r.stdout_has("the file records passed their share of --memory and waited on disk");
        } else {
            assert!(!r.stdout.contains("waited on disk"), "{}", r.stdout);
        }
        outputs.push(out);
    }
    let (a, b) = (d.join(&outputs[0]), d.join(&outputs[1]));
    for m in ["SHA256SUMS", "BSD"] {
        let (x, y) = (
            std::fs::read(a.join(m)).unwrap(),
            std::fs::read(b.join(m)).unwrap(),
        );
        assert!(x.len() > 1000, "{m} is nearly empty");
        assert!(x == y, "{m} differs when the records spill");
    }
    // hashdeep's header names the command line, which differs by the --memory flags.
    let body = |p: &Path| -> Vec<u8> {
        std::fs::read(p)
            .unwrap()
            .split(|&c| c == b'\n')
            .filter(|l| !l.starts_with(b"## "))
            .flat_map(|l| l.iter().copied().chain([b'\n']))
            .collect()
    };
    assert!(body(&a.join("HASHDEEP")) == body(&b.join("HASHDEEP")));
    let (x, y) = (
        steady_json(&a.join("report.json")),
        steady_json(&b.join("report.json")),
    );
    assert!(x.contains("clip.flv") && x.contains("\"keyframes\""));
    assert!(x == y, "the JSON report differs when the records spill");
    let (x, y) = (files_below(&a.join("index")), files_below(&b.join("index")));
    assert_eq!(x.len(), roots.len());
    assert!(x == y, "the keyframe indexes differ");
    // The runs are gone.
    assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
}

#[test]
fn records_spilled_under_a_tiny_memory_give_byte_identical_manifests_and_json() {
    let d = Dir::new();
    tree(&d, "t", 2500);
    same_outputs_when_spilled(&d, &["t"]);
}

#[test]
fn spilled_records_keep_the_manifest_order_when_names_and_paths_sort_apart() {
    // `./z` is named `z/...` in manifests but sorts before `a` as a path: the manifest is
    // ordered by name, the report by path, and both survive the spill.
    let d = Dir::new();
    tree(&d, "z", 600);
    tree(&d, "a", 600);
    same_outputs_when_spilled(&d, &["./z", "a"]);
    let sums = std::fs::read(d.join("out-disk/SHA256SUMS")).unwrap();
    let names: Vec<&[u8]> = sums
        .split(|&c| c == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| &l[l.windows(2).position(|w| w == b"  ").unwrap() + 2..])
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert!(names == sorted, "the manifest is sorted by name");
    assert!(names[0].starts_with(b"a/"));
}

#[test]
fn one_directory_of_many_files_is_walked_in_the_memory_of_a_spread_tree() {
    // The same number of empty files in one directory and in 100: the walk must not hold a
    // directory's entries (it did, about 300 bytes each: 22 MB more here).
    let d = Dir::new();
    let n = 120_000;
    for i in 0..n {
        let flat = d.join(format!("flat/f{i:06}"));
        let spread = d.join(format!("spread/d{:02}/f{i:06}", i % 100));
        if i < 100 {
            std::fs::create_dir_all(spread.parent().unwrap()).unwrap();
            std::fs::create_dir_all(flat.parent().unwrap()).unwrap();
        }
        for p in [flat, spread] {
            let c = std::ffi::CString::new(p.into_os_string().into_encoded_bytes()).unwrap();
            // SAFETY: a NUL-terminated path that outlives the call; mknod makes an empty
            // regular file in one system call.
            let r = unsafe { libc::mknod(c.as_ptr(), libc::S_IFREG | 0o644, 0) };
            assert_eq!(r, 0);
        }
    }
    let args = |t: &'static str| ["scan", t, "-q", "-d", "xxh3", "--no-reduce"];
    let (code, spread) = peak_rss_apart(&d, &args("spread"));
    assert_eq!(code, 0);
    let (code, flat) = peak_rss_apart(&d, &args("flat"));
    assert_eq!(code, 0);
    assert!(
        flat < spread + (8 << 20),
        "one directory: {} MiB, spread: {} MiB",
        flat >> 20,
        spread >> 20
    );
}

#[test]
fn verify_with_a_tiny_memory_reports_byte_for_byte_what_it_reports_in_ram() {
    let d = Dir::new();
    tree(&d, "t", 1500);
    d.cmd()
        .args(["scan", "t", "-q", "-m", "sha256sum:M"])
        .run()
        .code(0);
    // Every kind of outcome: a changed file, a missing one, an unlisted one, a name listed twice
    // (once agreeing, once not), a malformed line, a name written `./x`.
    std::fs::write(d.join("t/f5"), b"changed").unwrap();
    std::fs::remove_file(d.join("t/f6")).unwrap();
    d.create(b"t/unlisted", b"new");
    let mut m = std::fs::read(d.join("M")).unwrap();
    let line_of = |name: &[u8]| -> Vec<u8> {
        m.split(|&c| c == b'\n')
            .find(|l| l.ends_with(name))
            .unwrap()
            .to_vec()
    };
    let (f12, f13) = (line_of(b"  f12"), line_of(b"  f13"));
    let mut conflict = f12.clone();
    conflict[0] = if conflict[0] == b'0' { b'1' } else { b'0' };
    for l in [
        &f12[..],
        &conflict,
        b"not a checksum line",
        &f13[..64],
        b"  ./f13",
    ] {
        m.extend_from_slice(l);
        if l != &f13[..64] {
            m.push(b'\n');
        }
    }
    std::fs::write(d.join("M"), &m).unwrap();
    std::fs::create_dir_all(d.join("scratch")).unwrap();
    let mut runs = Vec::new();
    for extra in [&[][..], &["--memory", "2K", "--temp-dir", "scratch"][..]] {
        let json = format!("v{}.json", runs.len());
        let mut args = vec!["verify", "M", "--root", "t", "--strict", "--json", &json];
        args.extend_from_slice(extra);
        let r = d.cmd().args(&args).run();
        let j = std::fs::read(d.join(&json)).unwrap();
        runs.push((r, j));
    }
    let (a, b) = (&runs[0], &runs[1]);
    assert_eq!(a.0.code, 2, "{}", a.0.stderr);
    assert_eq!(a.0.code, b.0.code);
    assert!(a.0.stdout_bytes == b.0.stdout_bytes, "stdout differs");
    assert_eq!(a.0.stderr, b.0.stderr);
    assert!(a.1 == b.1, "the JSON differs");
    for want in [
        "f5: FAILED",
        "f6: MISSING",
        "unlisted: NOT IN MANIFEST",
        "f13: OK",
    ] {
        a.0.stdout_has(want);
    }
    // The name listed again with another digest: each line judged, as sha256sum -c does.
    a.0.stdout_has("f12: OK");
    a.0.stdout_has("f12: FAILED");
    a.0.stderr_has("not a checksum line");
    let v: serde_json::Value = serde_json::from_slice(&a.1).unwrap();
    // 1500 files and the FLV file (one of them removed, still listed), f12's second line; the
    // added unlisted.
    assert_eq!(v["totals"]["listed"], 1502);
    assert_eq!(v["totals"]["manifest_problems"], 1);
    assert_eq!(v["totals"]["not_listed"], 1);
    let lines: Vec<u64> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["line"].as_u64().unwrap())
        .collect();
    assert!(
        lines.windows(2).all(|w| w[0] < w[1]),
        "entries in manifest order"
    );
    assert_eq!(std::fs::read_dir(d.join("scratch")).unwrap().count(), 0);
}

#[test]
fn a_temp_dir_that_is_not_there_is_refused_before_anything_is_read() {
    let d = Dir::new();
    d.create(b"t/a", b"a");
    d.cmd()
        .args(["scan", "t", "-q", "-m", "sha256sum:M"])
        .run()
        .code(0);
    let r = d
        .cmd()
        .args([
            "scan",
            "t",
            "--no-reduce",
            "-m",
            "sha256sum:N",
            "--temp-dir",
            "nope",
        ])
        .run();
    r.code(2);
    r.stderr_has("--temp-dir nope: not a directory");
    assert!(!d.join("N").exists());
    let r = d
        .cmd()
        .args(["verify", "M", "--root", "t", "--temp-dir", "nope"])
        .run();
    r.code(2);
    r.stderr_has("--temp-dir nope: not a directory");
    assert!(!r.stdout.contains("OK"), "{}", r.stdout);
}

/// `find DIR/data -type f | sort | xargs SUM` in DIR: coreutils' manifest of a bag's payload.
fn coreutils_manifest(dir: &Path, sum: &str) -> String {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "find data -type f -print0 | LC_ALL=C sort -z | xargs -0 {sum}"
        ))
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{sum}");
    String::from_utf8(out.stdout).unwrap()
}

/// The error and warning lines of a run, sorted (the order of findings is not part of the
/// contract; their set is).
fn findings(r: &crate::util::Run) -> Vec<String> {
    let mut v: Vec<String> = r.stderr.lines().map(str::to_string).collect();
    v.sort();
    v
}

#[test]
fn bags_made_validated_and_updated_under_a_tiny_memory_are_byte_identical() {
    let d = Dir::new();
    for top in ["a", "b"] {
        for i in 0..3000 {
            d.create(
                format!("{top}/d{}/s-{}/f{i}.txt", i % 37, i % 3).as_bytes(),
                format!("file {i}\n").repeat(i % 5).as_bytes(),
            );
        }
    }
    d.cmd()
        .args(["bag", "create", "a", "-d", "sha256,md5", "-q"])
        .run()
        .code(0);
    d.cmd()
        .args([
            "bag",
            "create",
            "b",
            "-d",
            "sha256,md5",
            "-q",
            "--memory",
            "2K",
        ])
        .run()
        .code(0);
    for f in [
        "manifest-sha256.txt",
        "manifest-md5.txt",
        "bag-info.txt",
        "bagit.txt",
        "tagmanifest-sha256.txt",
        "tagmanifest-md5.txt",
    ] {
        let a = std::fs::read(d.join("a").join(f)).unwrap();
        assert_eq!(a, std::fs::read(d.join("b").join(f)).unwrap(), "{f}");
    }
    let m = std::fs::read_to_string(d.join("b/manifest-sha256.txt")).unwrap();
    assert_eq!(m, coreutils_manifest(&d.join("b"), "sha256sum"));
    assert_eq!(m.lines().count(), 3000);

    // A copy built elsewhere, every file copied and checked, under the same tiny memory.
    d.cmd()
        .args(["bag", "create", "a/data", "--out", "c", "-q"])
        .args(["-d", "sha256,md5", "--memory", "2K"])
        .run()
        .code(0);
    let c = std::fs::read(d.join("c/manifest-md5.txt")).unwrap();
    assert_eq!(c, std::fs::read(d.join("a/manifest-md5.txt")).unwrap());

    for bag in ["a", "b"] {
        d.cmd()
            .args(["bag", "validate", bag, "--memory", "2K"])
            .run()
            .code(0)
            .stdout_has("is valid");
    }
    // Damage: a file gone, one unlisted, one changed, a line listed twice, one manifest short.
    std::fs::remove_file(d.join("b/data/d1/s-1/f1.txt")).unwrap();
    d.create(b"b/data/d2/extra.txt", b"not listed\n");
    std::fs::write(d.join("b/data/d3/s-0/f3.txt"), "changed\n").unwrap();
    let md5 = std::fs::read_to_string(d.join("b/manifest-md5.txt")).unwrap();
    let mut lines: Vec<&str> = md5.lines().collect();
    let dup = lines[10];
    lines.push(dup);
    lines.remove(20);
    std::fs::write(d.join("b/manifest-md5.txt"), lines.join("\n") + "\n").unwrap();
    let in_ram = d.cmd().args(["bag", "validate", "b"]).run();
    let spilled = d
        .cmd()
        .args(["bag", "validate", "b", "--memory", "2K"])
        .run();
    in_ram.code(1);
    spilled.code(1);
    assert_eq!(findings(&in_ram), findings(&spilled));
    for want in [
        "data/d1/s-1/f1.txt: listed in the manifests but missing",
        "data/d2/extra.txt: present in the payload but in no manifest",
        "data/d3/s-0/f3.txt: sha256 mismatch",
        "is listed twice (lines 11 and 3000)",
        "listed in some payload manifests but not in manifest-md5.txt",
    ] {
        spilled.stderr_has(want);
    }

    // Adding an algorithm spools the new digests and writes the manifest in path order.
    d.cmd()
        .args(["bag", "update", "a", "-d", "sha512", "--memory", "2K", "-q"])
        .run()
        .code(0);
    let m = std::fs::read_to_string(d.join("a/manifest-sha512.txt")).unwrap();
    assert_eq!(m, coreutils_manifest(&d.join("a"), "sha512sum"));
}

#[test]
fn a_manifest_past_one_read_piece_keeps_its_line_numbers_with_crlf_endings() {
    let d = Dir::new();
    // About 90 bytes a line: 14,000 lines is past the 1 MiB the manifest is parsed in.
    for i in 0..14_000 {
        d.create(
            format!("t/d{}/f{i:05}.txt", i % 20).as_bytes(),
            format!("{i}\n").as_bytes(),
        );
    }
    d.cmd()
        .args(["bag", "create", "t", "-d", "sha256", "-q"])
        .run()
        .code(0);
    let m = std::fs::read_to_string(d.join("t/manifest-sha256.txt")).unwrap();
    assert!(m.len() > (1 << 20), "{}", m.len());
    std::fs::write(d.join("t/manifest-sha256.txt"), m.replace('\n', "\r\n")).unwrap();
    // The last line, in the last piece.
    let line = m.lines().count();
    let victim = m
        .lines()
        .last()
        .unwrap()
        .split_once("  ")
        .unwrap()
        .1
        .to_string();
    std::fs::write(d.join("t").join(&victim), "changed\n").unwrap();
    let r = d.cmd().args(["bag", "validate", "t"]).run();
    r.code(1);
    r.stderr_has(&format!(
        "{victim}: sha256 mismatch (manifest-sha256.txt line {line})"
    ));
    // Nothing else is wrong with the payload: every other line was read where it stands.
    let payload_errors = r.stderr.lines().filter(|l| l.contains("data/")).count();
    assert_eq!(payload_errors, 1, "{}", r.stderr);
}

/// `--memory` bounds what grows with the data; the rest is the constant its help states:
/// (4 x threads + 4) read buffers and about 48 MiB of state at -j2 (file pages mapped by
/// `--io auto` are the kernel's; `--io read` leaves them out of the count).
#[test]
fn memory_bounds_what_grows_and_the_rest_is_the_stated_constant() {
    let d = Dir::new();
    // 30,000 files of distinct bytes: their records (~4 MiB) and fingerprints pass a 4M budget.
    for i in 0..30_000u32 {
        let body = format!("file {i} {}", "x".repeat((i % 200) as usize));
        d.create(format!("t/{:03}/{i}", i % 300).as_bytes(), body.as_bytes());
    }
    let buffers = (4 * 2 + 4) << 20;
    let constant = 48 << 20;
    // This process holding 160 MiB when it starts trawl: trawl's peak is its own (the kernel
    // folds an exec'd image's peak into getrusage's, never into /proc's VmHWM).
    let ballast = vec![1u8; 160 << 20];
    assert_eq!(
        ballast.iter().step_by(4096).map(|&b| b as u64).sum::<u64>(),
        40_960
    );
    let mut peaks = Vec::new();
    for (memory, bytes) in [("4M", 4u64 << 20), ("64M", 64 << 20)] {
        let json = format!("r{memory}.json");
        d.cmd()
            .args([
                "scan",
                "t",
                "-q",
                "-j2",
                "--io",
                "read",
                "--buffer-size",
                "1M",
            ])
            .args(["--memory", memory, "--json", &json])
            .run()
            .code(0);
        let r: serde_json::Value =
            serde_json::from_slice(&std::fs::read(d.join(&json)).unwrap()).unwrap();
        let peak = r["totals"]["peak_rss_bytes"].as_u64().unwrap();
        assert!(
            peak <= bytes + buffers + constant,
            "--memory {memory}: peak {} MiB, past {} MiB",
            peak >> 20,
            (bytes + buffers + constant) >> 20
        );
        assert_eq!(r["totals"]["files"], 30_000);
        peaks.push(peak);
    }
    eprintln!(
        "peaks: {:?} MiB",
        peaks.iter().map(|p| p >> 20).collect::<Vec<_>>()
    );
}

/// `--memory` bounds what trawl holds, and the report's memory figure is that: the pages of a
/// file mapped to read it are resident too, but the kernel drops them when it needs the room,
/// and they are said apart (`peak_anon_bytes` against `peak_rss_bytes`).
#[test]
fn the_memory_figure_is_what_trawl_holds_not_the_pages_it_mapped() {
    let d = Dir::new();
    let f = std::fs::File::create(d.join("big.bin")).unwrap();
    // 160 MiB of pages that are not all zero (one byte each), written without a buffer as big.
    let mut w = std::io::BufWriter::new(f);
    let page = [0u8; 4096];
    for i in 0..(160 << 8) {
        let mut p = page;
        p[0] = (i % 251) as u8 + 1;
        std::io::Write::write_all(&mut w, &p).unwrap();
    }
    drop(w);
    let r = d
        .cmd()
        .args([
            "scan", "big.bin", "--io", "mmap", "--memory", "64M", "-d", "blake3",
        ])
        .args(["--no-reduce", "--json", "r.json"])
        .run();
    r.code(0);
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("r.json")).unwrap()).unwrap();
    let anon = v["totals"]["peak_anon_bytes"].as_u64().unwrap();
    let rss = v["totals"]["peak_rss_bytes"].as_u64().unwrap();
    assert!(anon < 64 << 20, "held {anon}, resident {rss}");
    assert!(anon <= rss, "held {anon}, resident {rss}");
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / (1 << 20) as f64);
    // The summary's figure is the held one, the resident one said apart where it is larger.
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with("peak memory: "))
        .unwrap();
    let held = line.trim_start_matches("peak memory: ");
    let held: f64 = held.split(' ').next().unwrap().parse().unwrap();
    assert!(
        held < 64.0,
        "{line} (json: held {}, resident {})",
        mib(anon),
        mib(rss)
    );
}
