//! `trawl flv index`: table, JSON and errors through the binary.

use std::ffi::OsStr;
use std::path::Path;

use serde_json::Value;

use crate::util::{Dir, Mounted, Serve, python_with, run_tool, tool};

pub fn flv_with_keyframes() -> Vec<u8> {
    let mut v = b"FLV\x01\x01\x00\x00\x00\x09\x00\x00\x00\x00".to_vec();
    for (ts, key) in [(0u32, true), (40, false), (1000, true)] {
        let payload = [if key { 0x17 } else { 0x27 }, 1, 0, 0, 0, 7, 7];
        v.push(9);
        v.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
        v.extend_from_slice(&ts.to_be_bytes()[1..]);
        v.extend_from_slice(&[0, 0, 0, 0]);
        v.extend_from_slice(&payload);
        v.extend_from_slice(&(payload.len() as u32 + 11).to_be_bytes());
    }
    v
}

#[test]
fn index_prints_keyframes_and_json_and_refuses_non_flv() {
    let d = Dir::new();
    d.create(b"a.flv", &flv_with_keyframes());
    d.create(b"not.flv", b"<html>not a video</html>");
    let r = d.cmd().args(["flv", "index", "a.flv", "--stats"]).run();
    r.code(0);
    r.stdout_has("2 keyframes, video avc");
    r.stdout_has("1.000 s  offset 57");
    let r = d
        .cmd()
        .args(["flv", "index", "a.flv", "not.flv", "--json", "-"])
        .run();
    r.code(2);
    r.stderr_has("not.flv: not an FLV file");
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let f = &v["files"][0];
    assert_eq!(f["path"], "a.flv");
    assert_eq!(f["duration"], 1.0);
    assert_eq!(f["keyframes"][1]["time"], 1.0);
    assert_eq!(f["keyframes"][1]["offset"], 57);
}

/// With its outputs in files, `flv index` prints a line a file, not every keyframe again;
/// `-q` prints nothing on stdout (an output sent there aside), and errors still on stderr.
#[test]
fn index_to_files_prints_a_line_a_file_and_quiet_prints_nothing() {
    let d = Dir::new();
    d.create(b"a.flv", &flv_with_keyframes());
    d.create(b"not.flv", b"<html>not a video</html>");
    for out in ["--json", "--csv"] {
        let r = d.cmd().args(["flv", "index", "a.flv", out, "o"]).run();
        r.code(0);
        assert_eq!(r.stdout.lines().count(), 1, "{out}: {}", r.stdout);
        r.stdout_has("a.flv: 1.000 s, 2 keyframes");
        assert!(!r.stdout.contains("offset 57"), "{out}: {}", r.stdout);
        let written = std::fs::read_to_string(d.join("o")).unwrap();
        assert!(written.contains("57"), "{out}: {written}");
    }
    let r = d.cmd().args(["flv", "index", "a.flv", "-q"]).run();
    r.code(0);
    assert_eq!(r.stdout, "");
    let r = d
        .cmd()
        .args(["flv", "index", "a.flv", "--json", "q.json", "--quiet"])
        .run();
    r.code(0);
    assert_eq!(r.stdout, "");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("q.json")).unwrap()).unwrap();
    assert_eq!(v["files"][0]["keyframes"][1]["offset"], 57);
    // An output on stdout still goes there; a file that is not FLV is said on stderr and in
    // the exit code.
    let r = d
        .cmd()
        .args(["flv", "index", "a.flv", "not.flv", "-q", "--csv", "-"])
        .run();
    r.code(2);
    r.stderr_has("not.flv: not an FLV file");
    assert_eq!(
        r.stdout,
        "path,time,offset\n\"a.flv\",0.000,13\n\"a.flv\",1.000,57\n"
    );
}

/// Test files made by ffmpeg (lavfi testsrc2 + sine), one per codec pairing; `None` (skipped)
/// without ffmpeg and ffprobe.
pub(crate) fn ffmpeg_files(d: &Dir) -> Option<Vec<&'static str>> {
    let ffmpeg = tool("ffmpeg")?;
    tool("ffprobe")?;
    let src = [
        "-f",
        "lavfi",
        "-i",
        "testsrc2=s=320x240:r=25",
        "-f",
        "lavfi",
        "-i",
        "sine=f=440",
        "-t",
        "6",
    ];
    let jobs: Vec<(&str, Vec<&str>)> = vec![
        (
            "avc_aac.flv",
            vec!["-c:v", "libx264", "-g", "50", "-c:a", "aac"],
        ),
        (
            "flv1_mp3.flv",
            vec!["-c:v", "flv", "-g", "30", "-c:a", "libmp3lame"],
        ),
        ("video_only.flv", vec!["-c:v", "libx264", "-g", "40", "-an"]),
        ("audio_only.flv", vec!["-vn", "-c:a", "aac"]),
    ];
    let mut names = Vec::new();
    for (name, codec) in jobs {
        let mut args: Vec<&str> = vec!["-v", "error", "-y"];
        args.extend(src);
        args.extend(codec);
        args.push(name);
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        run_tool(d.path(), &ffmpeg, &args).code(0);
        names.push(name);
    }
    // Extended timestamps: past 2^24 ms, the 8-bit upper part is needed.
    let args = [
        "-v",
        "error",
        "-y",
        "-i",
        "avc_aac.flv",
        "-c",
        "copy",
        "-output_ts_offset",
        "16770",
        "ext_ts.flv",
    ];
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    run_tool(d.path(), &ffmpeg, &args).code(0);
    names.push("ext_ts.flv");
    Some(names)
}

/// (dts in ms, byte offset of the tag) of each keyframe.
type Keys = Vec<(u64, u64)>;

/// (dts in ms, key flag) of each video packet.
type Packets = Vec<(u64, bool)>;

/// ffprobe's video keyframes and every video packet.
pub(crate) fn ffprobe_video(dir: &Path, file: &str) -> (Keys, Packets) {
    let ffprobe = tool("ffprobe").unwrap();
    let args = [
        "-v",
        "error",
        "-select_streams",
        "v",
        "-show_packets",
        "-show_entries",
        "packet=flags,pos,dts_time",
        "-of",
        "json",
        file,
    ];
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    let r = run_tool(dir, &ffprobe, &args);
    r.code(0);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let mut keys = Vec::new();
    let mut all = Vec::new();
    for p in v["packets"].as_array().into_iter().flatten() {
        let ms = (p["dts_time"].as_str().unwrap().parse::<f64>().unwrap() * 1000.0).round() as u64;
        let key = p["flags"].as_str().unwrap().starts_with('K');
        if key {
            keys.push((ms, p["pos"].as_str().unwrap().parse().unwrap()));
        }
        all.push((ms, key));
    }
    (keys, all)
}

fn trawl_keyframes(f: &Value) -> Vec<(u64, u64)> {
    f["keyframes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                (k["time"].as_f64().unwrap() * 1000.0).round() as u64,
                k["offset"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn keyframes_equal_ffprobes_from_a_seeking_read_and_from_a_scan() {
    let d = Dir::new();
    let Some(files) = ffmpeg_files(&d) else {
        return;
    };
    let r = d
        .cmd()
        .args(["scan", ".", "--no-reduce", "--media-index", "../idx", "-q"])
        .run();
    r.code(0);
    for name in &files {
        let (want, _) = ffprobe_video(d.path(), name);
        if *name != "audio_only.flv" {
            assert!(want.len() >= 2, "{name}: ffprobe found {want:?}");
        }
        let r = d.cmd().args(["flv", "index", name, "--json", "-"]).run();
        r.code(0);
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        let f = &v["files"][0];
        assert_eq!(
            trawl_keyframes(f),
            want,
            "{name}: flv index against ffprobe"
        );
        assert!(f["problems"].as_array().unwrap().is_empty(), "{f}");
        if name.starts_with("avc") || name.starts_with("video") {
            assert_eq!(
                (f["coded_width"].as_u64(), f["coded_height"].as_u64()),
                (Some(320), Some(240))
            );
        }
        let idx = d
            .path()
            .parent()
            .unwrap()
            .join("idx")
            .join(format!("{name}.keyframes.json"));
        let s: Value = serde_json::from_str(&std::fs::read_to_string(&idx).unwrap()).unwrap();
        assert_eq!(
            trawl_keyframes(&s["files"][0]),
            want,
            "{name}: scan against ffprobe"
        );
    }
    std::fs::remove_dir_all(d.path().parent().unwrap().join("idx")).ok();
}

#[test]
fn served_seeks_start_at_the_right_keyframe_decode_and_survive_200_concurrent_requests() {
    let d = Dir::new();
    let Some(_) = ffmpeg_files(&d) else { return };
    if !python_with(&["urllib.request", "concurrent.futures"]) {
        return;
    }
    let ffmpeg = tool("ffmpeg").unwrap();
    // Twenty copies: different files for the concurrent seeks, and fresh ones for the
    // single-flight check.
    let src = std::fs::read(d.join("avc_aac.flv")).unwrap();
    std::fs::create_dir(d.join("many")).unwrap();
    for i in 0..20 {
        std::fs::write(d.join(format!("many/c{i}.flv")), &src).unwrap();
    }
    std::fs::write(d.path().parent().unwrap().join("secret.txt"), b"s").ok();
    std::os::unix::fs::symlink("/etc/hostname", d.join("out_link.flv")).unwrap();
    let (keys, _) = ffprobe_video(d.path(), "avc_aac.flv");
    let srv = Serve::start(&d, ".", &[]);
    let checker = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/reference/serve_check.py"
    );
    let r = std::process::Command::new("python3")
        .args([checker, &srv.base(), &d.path().display().to_string()])
        .arg(serde_json::to_string(&keys).unwrap())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(
        r.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&r.stderr)
    );
    // Each saved seek decodes.
    for n in ["0", "3", "4.5"] {
        let f = d.join(format!("seek_{n}.flv"));
        assert!(f.exists(), "{out}");
        run_tool(
            d.path(),
            &ffmpeg,
            &[
                OsStr::new("-v"),
                OsStr::new("error"),
                OsStr::new("-xerror"),
                OsStr::new("-i"),
                f.as_os_str(),
                OsStr::new("-f"),
                OsStr::new("null"),
                OsStr::new("-"),
            ],
        )
        .code(0);
    }
}

#[test]
fn serve_refuses_a_missing_directory_and_stops_cleanly_on_ctrl_c() {
    let d = Dir::new();
    let r = d
        .cmd()
        .args(["serve", "nope", "--listen", "127.0.0.1:0"])
        .run();
    r.code(2);
    r.stderr_has("nope: No such file or directory");
    // The cause is named once, not repeated by the error chain.
    assert_eq!(r.stderr.matches("No such file").count(), 1, "{}", r.stderr);
    let mut srv = Serve::start(&d, ".", &[]);
    // SAFETY: sending SIGINT to our own child.
    unsafe {
        libc::kill(srv.child.id() as i32, libc::SIGINT);
    }
    let status = srv.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    // A normal end: said as such, not as a warning.
    let log = srv.stop();
    assert!(log.contains("trawl: serve: stopped"), "{log}");
    assert!(!log.contains("warning"), "{log}");
}

/// `timeout -s INT` sends its signal to the command and again to its process group: one
/// request delivered twice, microseconds apart, is still the normal stop (exit 0), not the
/// second Ctrl-C that ends the process at once (exit 130, nothing said).
#[test]
fn a_signal_delivered_twice_at_once_is_one_stop() {
    let d = Dir::new();
    let mut srv = Serve::start(&d, ".", &[]);
    let pid = srv.child.id() as i32;
    // SAFETY: sending SIGINT to our own child, twice: the second once the first has surely
    // been taken (the signal thread wakes within microseconds), well within a repeat.
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    std::thread::sleep(std::time::Duration::from_millis(30));
    // SAFETY: as above.
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    let status = srv.child.wait().unwrap();
    let log = srv.stop();
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(log.contains("trawl: serve: stopped"), "{log}");
}

#[test]
fn the_scan_reports_keyframe_intervals_as_ffprobe_finds_them() {
    let d = Dir::new();
    let Some(files) = ffmpeg_files(&d) else {
        return;
    };
    d.cmd()
        .args(["scan", ".", "-q", "--json", "r.json", "--html", "r.html"])
        .run()
        .code(0);
    let r: Value = serde_json::from_slice(&std::fs::read(d.join("r.json")).unwrap()).unwrap();
    let m = &r["media"];
    let edges = [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0];
    let mut all = [0u64; 8];
    let mut video_files = 0;
    for f in &files {
        let row = m["listed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["path"] == *f)
            .unwrap_or_else(|| panic!("{f} not listed"));
        let (keys, _) = ffprobe_video(d.path(), f);
        assert_eq!(
            row["keyframes"].as_u64().unwrap() as usize,
            keys.len(),
            "{f}"
        );
        let gaps: Vec<f64> = keys
            .windows(2)
            .map(|w| (w[1].0 - w[0].0) as f64 / 1000.0)
            .collect();
        let mut want = [0u64; 8];
        for g in &gaps {
            want[edges.iter().position(|e| g < e).unwrap_or(7)] += 1;
        }
        let got: Vec<u64> = row["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        assert_eq!(got, want, "{f}");
        match gaps.iter().copied().reduce(f64::max) {
            Some(max) => {
                assert!(
                    (row["max_interval"].as_f64().unwrap() - max).abs() < 0.0015,
                    "{f}"
                );
                video_files += 1;
            }
            None => assert!(row["max_interval"].is_null(), "{f}"),
        }
        for (a, w) in all.iter_mut().zip(want) {
            *a += w;
        }
    }
    assert!(video_files >= 3);
    let sums: Vec<u64> = m["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["intervals"].as_u64().unwrap())
        .collect();
    assert_eq!(sums, all);
    let html = std::fs::read_to_string(d.join("r.html")).unwrap();
    for n in all {
        assert!(html.contains(&format!(r#"data-intervals="{n}""#)));
    }
}

/// The Enhanced FLV samples of the shared material: keyframes at video tags, found by
/// reading a small fraction of each file.
#[test]
fn enhanced_samples_have_keyframes_at_video_tags_and_reads_are_a_small_fraction() {
    // The samples come with the project's shared material (CI has it), not with a clone.
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/media/enhanced-flv");
    let Ok(rd) = std::fs::read_dir(dir) else {
        return crate::util::skip(&format!("{dir} is not present"));
    };
    let mut seen = 0;
    for e in rd.flatten() {
        let p = e.path();
        if p.extension().and_then(|x| x.to_str()) != Some("flv") {
            continue;
        }
        let i = trawl_media::index_file(&p).unwrap();
        assert!(!i.keyframes.is_empty(), "{}: no keyframes", p.display());
        assert!(i.problems.is_empty(), "{:?}", i.problems);
        let data = std::fs::read(&p).unwrap();
        for k in &i.keyframes {
            let o = k.offset as usize;
            assert_eq!(data[o] & 0x1f, 9, "keyframe offset {o} is a video tag");
            assert_eq!(data[o + 11] & 0x80, 0x80, "an Enhanced FLV video tag");
            assert_eq!((data[o + 11] >> 4) & 7, 1, "with the key frame type");
        }
        // These samples have ~370-byte tags, so the 21 bytes looked at per tag are ~6%;
        // in real files tags are kilobytes and the fraction far smaller.
        assert!(
            i.bytes_read * 10 < i.size,
            "read {} of {}",
            i.bytes_read,
            i.size
        );
        seen += 1;
    }
    assert_eq!(seen, 3);
}

/// An XFS filesystem with reflinks, loop-mounted at `DIR/xfs` and unmounted on drop; `None`
/// (skipped, with the reason printed) where the tests cannot mount one: not root, no
/// `mkfs.xfs` (xfsprogs), or mounting refused (a container without the right).
pub(crate) fn xfs_mount(d: &Dir) -> Option<Mounted> {
    // 300 MB is XFS's smallest; the image is sparse.
    Mounted::image(d, "mkfs.xfs", &["-q", "-m", "reflink=1"], 320 << 20, "xfs").map(|(m, _)| m)
}
