//! `trawl scan --stats`: where the CPU went, by stage, within what the kernel charged the
//! process.

use crate::util::{Dir, noise, python_with};

/// Runs trawl with `args` in `d` under a small python3 process that waits for it with
/// `wait4`: its exit code and the CPU time (user and system) the kernel charged it.
fn cpu_charged(d: &Dir, args: &[&str]) -> (i32, f64, String) {
    let script = "import os, subprocess, sys\n\
                  p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)\n\
                  out = p.stdout.read()\n\
                  _, st, ru = os.wait4(p.pid, 0)\n\
                  print(os.waitstatus_to_exitcode(st), ru.ru_utime + ru.ru_stime)\n\
                  sys.stdout.write(out.decode())";
    let o = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_trawl"))
        .args(args)
        .current_dir(d.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let (first, rest) = text.split_once('\n').unwrap();
    let mut it = first.split_whitespace();
    let code = it.next().unwrap().parse().unwrap();
    (code, it.next().unwrap().parse().unwrap(), rest.to_string())
}

#[test]
fn stats_names_every_stage_within_the_cpu_the_kernel_charged() {
    if !python_with(&["json"]) {
        return;
    }
    let d = Dir::new();
    for i in 0..40 {
        d.create(
            format!("t/d{}/f{i}", i % 4).as_bytes(),
            &noise(1000 + 97 * i, i as u64),
        );
    }
    // Larger than a buffer: read through lanes of its own.
    d.create(b"t/big", &noise(600 << 10, 7));
    let args = [
        "scan",
        "t",
        "-j3",
        "--buffer-size",
        "64K",
        "--stats",
        "--json",
        "r.json",
        "-q",
    ];
    let (code, charged, stdout) = cpu_charged(&d, &args);
    assert_eq!(code, 0, "{stdout}");
    let stages = [
        "walk", "order", "read", "lanes", "reduce", "merge", "output",
    ];
    for s in stages {
        assert!(
            stdout
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{s} "))),
            "no {s} row:\n{stdout}"
        );
    }
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("r.json")).unwrap()).unwrap();
    let s = &report["stages"];
    let rows = s["stages"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["stage"].as_str().unwrap()).collect();
    assert_eq!(names, stages);
    let cpu = |r: &serde_json::Value| r["cpu_seconds"].as_f64().unwrap();
    let threads = |n: &str| rows.iter().find(|r| r["stage"] == n).unwrap()["threads"].as_u64();
    let sum: f64 = rows.iter().map(cpu).sum();
    // Every thread counted is the process's own: the stages add up to no more than the kernel
    // charged it (its clock ticks are coarser than the threads' clocks: a few ms of slack).
    assert!(sum > 0.0, "{s}");
    assert!(
        sum <= charged + 0.02,
        "stages {sum} s, charged {charged} s: {s}"
    );
    assert!(cpu(s) <= charged + 0.02, "{s}");
    assert!(
        threads("walk") >= Some(1) && threads("read") >= Some(1),
        "{s}"
    );
    assert!(threads("lanes") >= Some(1), "the large file's lanes: {s}");
    for r in rows {
        let (b, c) = (r["busiest_cpu_seconds"].as_f64().unwrap(), cpu(r));
        assert!(b <= c && r["wait_seconds"].as_f64().unwrap() >= 0.0, "{r}");
    }
    let busiest = s["busiest_share"].as_f64().unwrap();
    assert!(busiest > 0.0 && busiest <= 1.0, "{s}");
}
