//! `trawl flv inject`: the sizes and rates written as flvmeta checks them, copies ffprobe and
//! flvmeta read, the body shared by reflink, the input untouched, a full stdout.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::flv::{ffmpeg_files, ffprobe_video, xfs_mount};
use crate::util::{Dir, run_tool, tool};

/// An injected copy `out` of `name` (paths in `d`): ffprobe finds the same video packets in
/// both, and flvmeta (where installed, returned) reads `filepositions`/`times` equal to the
/// video tags flagged key in the copy (walked here apart from trawl, the first at each
/// timestamp), holding every keyframe ffprobe finds, the right `filesize`, and the keys ffmpeg
/// wrote.
fn check_injected(d: &Dir, name: &str, out: &str) -> Option<PathBuf> {
    let (keys_in, all_in) = ffprobe_video(d.path(), name);
    let (keys_out, all_out) = ffprobe_video(d.path(), out);
    assert_eq!(
        all_in, all_out,
        "{name}: the same video packets after injection"
    );
    assert_eq!(keys_in.len(), keys_out.len());
    let flvmeta = tool("flvmeta")?;
    let r = run_tool(
        d.path(),
        &flvmeta,
        &[OsStr::new("-D"), OsStr::new("-j"), OsStr::new(out)],
    );
    r.code(0);
    let m: Value = serde_json::from_str(&r.stdout).unwrap();
    let pos: Vec<u64> = m["keyframes"]["filepositions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_f64().unwrap() as u64)
        .collect();
    let times: Vec<u64> = m["keyframes"]["times"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t.as_f64().unwrap() * 1000.0).round() as u64)
        .collect();
    let copy = std::fs::read(d.join(out)).unwrap();
    assert_eq!(
        times.iter().copied().zip(pos).collect::<Vec<_>>(),
        walk(&copy).flagged,
        "{name}: filepositions/times are the copy's video tags flagged key"
    );
    for (t, _) in &keys_out {
        assert!(times.contains(t), "{name}: ffprobe's keyframe at {t} ms");
    }
    assert_eq!(m["filesize"].as_u64(), Some(copy.len() as u64));
    assert_eq!(
        m["encoder"].as_str().map(|s| s.starts_with("Lavf")),
        Some(true),
        "existing keys kept"
    );
    Some(flvmeta)
}

/// An FLV file's tags, walked here in a few lines apart from trawl's own reader.
#[derive(Default)]
struct Walked {
    /// Each kind's tags with their 11-byte headers (not the 4 bytes after each).
    video: u64,
    audio: u64,
    script: u64,
    /// Payload bytes after each tag's first byte.
    video_data: u64,
    audio_data: u64,
    /// (ms, offset) of the video tags whose frame type is 1 (key), the first at each time.
    flagged: Vec<(u64, u64)>,
}

fn walk(data: &[u8]) -> Walked {
    let mut at = u32::from_be_bytes(data[5..9].try_into().unwrap()) as usize + 4;
    let mut w = Walked::default();
    while at + 11 <= data.len() {
        let size = u32::from_be_bytes([0, data[at + 1], data[at + 2], data[at + 3]]) as u64;
        let ts = u32::from_be_bytes([data[at + 7], data[at + 4], data[at + 5], data[at + 6]]);
        let (whole, payload) = (11 + size, size.saturating_sub(1));
        match data[at] & 0x1f {
            9 => {
                w.video += whole;
                w.video_data += payload;
                let ms = ts as u64;
                if size > 0 && data[at + 11] >> 4 == 1 && w.flagged.last().is_none_or(|k| k.0 != ms)
                {
                    w.flagged.push((ms, at as u64));
                }
            }
            8 => {
                w.audio += whole;
                w.audio_data += payload;
            }
            18 => w.script += whole,
            _ => {}
        }
        at += whole as usize + 4;
    }
    w
}

/// The sizes as flvmeta's checker counts them (yamdi's `datasize` counts every tag instead):
/// read back by ffprobe, against the copy walked here.
#[test]
fn inject_writes_the_sizes_and_rates_flvmeta_checks() {
    let d = Dir::new();
    let Some(files) = ffmpeg_files(&d) else {
        return;
    };
    let ffprobe = tool("ffprobe").unwrap();
    for name in files {
        let out = format!("sizes_{name}");
        d.cmd().args(["flv", "inject", name, &out]).run().code(0);
        let w = walk(&std::fs::read(d.join(&out)).unwrap());
        let a = [
            "-v",
            "error",
            "-show_format",
            "-show_streams",
            "-of",
            "json",
            &out,
        ];
        let a: Vec<&OsStr> = a.iter().map(OsStr::new).collect();
        let v: Value = serde_json::from_str(&run_tool(d.path(), &ffprobe, &a).stdout).unwrap();
        let tag = |k: &str| {
            v["format"]["tags"][k]
                .as_str()
                .map(|s| s.parse::<u64>().unwrap())
        };
        let has = |n| if n > 0 { Some(n) } else { None };
        assert_eq!(tag("videosize"), has(w.video), "{name}");
        assert_eq!(tag("audiosize"), has(w.audio), "{name}");
        assert_eq!(tag("datasize"), Some(w.script), "{name}");
        // The rates, as FFmpeg reads them back: bits a second of each kind's payloads.
        let duration: f64 = v["format"]["duration"].as_str().unwrap().parse().unwrap();
        for s in v["streams"].as_array().unwrap() {
            let bytes = if s["codec_type"] == "video" {
                w.video_data
            } else {
                w.audio_data
            };
            let want = bytes as f64 * 8.0 / duration;
            let got: f64 = s["bit_rate"].as_str().unwrap().parse().unwrap();
            assert!(
                (got - want).abs() / want < 0.05,
                "{name}: {s}: {got} against {want}"
            );
        }
    }
}

#[test]
fn injected_copies_are_read_by_ffprobe_and_flvmeta_and_the_input_is_untouched() {
    let d = Dir::new();
    let Some(files) = ffmpeg_files(&d) else {
        return;
    };
    for name in files {
        let before = std::fs::read(d.join(name)).unwrap();
        let out = format!("inj_{name}");
        d.cmd().args(["flv", "inject", name, &out]).run().code(0);
        assert_eq!(
            std::fs::read(d.join(name)).unwrap(),
            before,
            "{name} changed"
        );
        let Some(flvmeta) = check_injected(&d, name, &out) else {
            continue;
        };
        // yamdi, where installed: the same keyframe times, but for the second entry it keeps at
        // one timestamp (a sequence header and the picture after it), which flvmeta's checker
        // refuses.
        if let Some(yamdi) = tool("yamdi") {
            let y = format!("yamdi_{name}");
            let a = [
                OsStr::new("-i"),
                OsStr::new(name),
                OsStr::new("-o"),
                OsStr::new(&y),
            ];
            run_tool(d.path(), &yamdi, &a).code(0);
            let a = [OsStr::new("-D"), OsStr::new("-j"), OsStr::new(&y)];
            let ym: Value = serde_json::from_str(&run_tool(d.path(), &flvmeta, &a).stdout).unwrap();
            let ytimes: Vec<u64> = ym["keyframes"]["times"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|t| (t.as_f64().unwrap() * 1000.0).round() as u64)
                        .collect()
                })
                .unwrap_or_default();
            let mut ytimes = ytimes;
            ytimes.dedup();
            let ours: Vec<u64> = walk(&std::fs::read(d.join(&out)).unwrap())
                .flagged
                .iter()
                .map(|k| k.0)
                .collect();
            assert_eq!(ytimes, ours, "{name}: yamdi's keyframe times");
        }
    }
    // OUT may not be IN.
    let r = d
        .cmd()
        .args(["flv", "inject", "avc_aac.flv", "avc_aac.flv"])
        .run();
    r.code(2);
    r.stderr_has("never modifies its input");
}

#[test]
fn inject_shares_the_body_with_a_reflink_where_the_filesystem_can() {
    let d = Dir::new();
    let Some(files) = ffmpeg_files(&d) else {
        return;
    };
    let Some(xfs) = xfs_mount(&d) else {
        return;
    };
    for name in files {
        let input = format!("xfs/{name}");
        std::fs::copy(d.join(name), d.join(&input)).unwrap();
        let out = format!("xfs/inj_{name}");
        let r = d
            .cmd()
            .args(["flv", "inject", "--reflink", "always", &input, &out])
            .run();
        r.code(0);
        assert!(
            r.stdout.contains("shared with IN (reflink)"),
            "{}",
            r.stdout
        );
        // The body, byte for byte: the input after its onMetaData tag (ffmpeg writes one, first,
        // at offset 13) ends the copy.
        let src = std::fs::read(d.join(&input)).unwrap();
        let copy = std::fs::read(d.join(&out)).unwrap();
        assert_eq!(src[13], 18, "{name}: ffmpeg's onMetaData first");
        let meta = u32::from_be_bytes([0, src[14], src[15], src[16]]) as usize;
        let body = &src[13 + 11 + meta + 4..];
        assert!(copy.ends_with(body), "{name}: the body is the input's");
        check_injected(&d, &input, &out);
        // The kernel says the copy's extents are shared (filefrag, from e2fsprogs).
        if let Some(filefrag) = tool("filefrag") {
            let r = run_tool(d.path(), &filefrag, &[OsStr::new("-v"), OsStr::new(&out)]);
            r.code(0);
            if body.len() >= 2 * 4096 {
                assert!(r.stdout.contains("shared"), "{name}: {}", r.stdout);
            }
        }
    }
    // Never: a plain copy, no padding key.
    let r = d
        .cmd()
        .args([
            "flv",
            "inject",
            "--reflink",
            "never",
            "xfs/avc_aac.flv",
            "xfs/plain.flv",
        ])
        .run();
    r.code(0);
    assert!(!r.stdout.contains("reflink"), "{}", r.stdout);
    let plain = std::fs::read(d.join("xfs/plain.flv")).unwrap();
    assert!(!plain.windows(12).any(|w| w == b"trawlpadding"));
    // Always, where OUT is on another filesystem than IN: a clear error, and no OUT.
    let r = d
        .cmd()
        .args([
            "flv",
            "inject",
            "--reflink",
            "always",
            "xfs/avc_aac.flv",
            "other.flv",
        ])
        .run();
    r.code(2);
    assert!(
        r.stderr.contains("other.flv") && r.stderr.contains("reflink"),
        "{}",
        r.stderr
    );
    assert!(!d.join("other.flv").exists());
    drop(xfs);
}

/// `flv inject` whose stdout cannot take its closing line (a full disk) says so, exit 2; the
/// output file itself is written whole.
#[test]
fn inject_with_a_full_stdout_is_exit_2() {
    let d = Dir::new();
    let Some(_) = ffmpeg_files(&d) else {
        return;
    };
    let mut c = d
        .cmd()
        .args(["flv", "inject", "avc_aac.flv", "out.flv"])
        .cmd;
    c.stdout(
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap(),
    );
    let r = crate::util::Run::from(c.output().unwrap());
    r.code(2).stderr_has("stdout: cannot write");
    d.cmd().args(["flv", "index", "out.flv"]).run().code(0);
}

/// `flvmeta -C`'s report of `file` in `dir`: (errors, warnings), and its lines.
fn flvmeta_check(flvmeta: &Path, dir: &Path, file: &str) -> ((u64, u64), Vec<String>) {
    let r = run_tool(dir, flvmeta, &[OsStr::new("-C"), OsStr::new(file)]);
    let lines: Vec<String> = r.stdout.lines().map(str::to_string).collect();
    let last = lines.last().cloned().unwrap_or_default();
    let n: Vec<u64> = last
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(n.len(), 2, "{file}: no summary in {}", r.stdout);
    ((n[0], n[1]), lines)
}

/// A QC pipeline runs flvmeta's checker: a copy trawl wrote passes it with no error and no
/// warning (three ffmpeg encodings: video only; H.264 with 48 kHz mono AAC; H.263 with MP3 and
/// a keyframe every 7 frames). The Enhanced FLV samples cannot pass it (flvmeta 1.2.1 reads
/// neither their video nor their audio tags: hundreds of errors in the samples themselves):
/// there, every complaint but those about values it cannot read from such tags is one it has
/// about the input too.
#[test]
fn injected_copies_pass_flvmetas_checker() {
    let Some(ffmpeg) = tool("ffmpeg") else { return };
    let Some(flvmeta) = tool("flvmeta") else {
        return;
    };
    let d = Dir::new();
    let jobs: [(&str, &[&str]); 3] = [
        (
            "video_only.flv",
            &["-pix_fmt", "yuv420p", "-c:v", "libx264", "-g", "25", "-an"],
        ),
        (
            "avc_aac48.flv",
            &[
                "-pix_fmt", "yuv420p", "-c:v", "libx264", "-g", "50", "-c:a", "aac",
            ],
        ),
        (
            "flv1_mp3.flv",
            &[
                "-c:v",
                "flv",
                "-g",
                "7",
                "-c:a",
                "libmp3lame",
                "-ar",
                "22050",
            ],
        ),
    ];
    for (name, codec) in jobs {
        let mut args = vec![
            "-v",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            "testsrc2=s=176x144:r=25",
            "-f",
            "lavfi",
            "-i",
            "sine=f=440:sample_rate=48000",
            "-t",
            "4",
        ];
        args.extend(codec);
        args.push(name);
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        run_tool(d.path(), &ffmpeg, &args).code(0);
        let out = format!("checked_{name}");
        d.cmd().args(["flv", "inject", name, &out]).run().code(0);
        let (counts, lines) = flvmeta_check(&flvmeta, d.path(), &out);
        assert_eq!(counts, (0, 0), "{name}:\n{}", lines.join("\n"));
    }

    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/media/enhanced-flv");
    let Ok(rd) = std::fs::read_dir(dir) else {
        return crate::util::skip(&format!("{dir} is not present"));
    };
    // What flvmeta reckons from tags it misreads: the keyframes (it finds none), the FourCC
    // codec ids the specification puts in `videocodecid`/`audiocodecid`, and audio format bits
    // that Enhanced audio tags do not have.
    let unreadable = [
        "hasKeyframes",
        "canSeekToEnd",
        "lastkeyframetimestamp",
        "invalid keyframes arrays length",
        "videocodecid",
        "audiocodecid",
        "audiosamplerate",
        "audiosamplesize",
        "stereo",
    ];
    let mut seen = 0;
    for e in rd.flatten() {
        let p = e.path();
        if p.extension().and_then(|x| x.to_str()) != Some("flv") {
            continue;
        }
        let out = format!("checked_{}", p.file_name().unwrap().to_str().unwrap());
        d.cmd()
            .arg("flv")
            .arg("inject")
            .arg(&p)
            .arg(&out)
            .run()
            .code(0);
        let ((errors_in, _), lines_in) = flvmeta_check(&flvmeta, d.path(), p.to_str().unwrap());
        let ((errors_out, _), lines_out) = flvmeta_check(&flvmeta, d.path(), &out);
        assert_eq!(errors_out, errors_in, "{out}: errors are the input's");
        // The metadata tag is the first, at offset 13 in both.
        let meta = |l: &&String| l.starts_with("0x0000000d:");
        for l in lines_out.iter().filter(meta) {
            assert!(
                unreadable.iter().any(|k| l.contains(k)),
                "{out}: {l}\n{}",
                lines_out.join("\n")
            );
        }
        // The rest (each tag's, the file's), offsets aside, are the input's.
        let rest = |lines: &[String]| {
            let n = lines.len().saturating_sub(1); // the summary
            let mut v: Vec<String> = lines[..n]
                .iter()
                .filter(|l| !meta(l))
                .map(|l| l.split_once(": ").map_or(l.clone(), |(_, m)| m.to_string()))
                .collect();
            v.sort();
            v
        };
        assert_eq!(rest(&lines_out), rest(&lines_in), "{out}");
        seen += 1;
    }
    assert_eq!(seen, 3);
}
