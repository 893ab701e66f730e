//! The Python package (`pip install ./python`) and `trawl-dask` on Dask: python/tests, run with
//! pytest against this build's `trawl` binary as the one-machine reference. They start their own
//! schedulers and workers (processes on loopback) and spend most of their time waiting on them
//! (start-ups, the fault knobs' delays, timeouts): with pytest-xdist installed they run four at
//! a time, which on two cores takes about half as long; without it, one at a time.

use std::process::Command;

use crate::util::python_with;

#[test]
fn the_python_package_and_the_cluster_tests_pass() {
    if !python_with(&["trawl._native", "distributed", "pytest"]) {
        return;
    }
    let root = env!("CARGO_MANIFEST_DIR");
    let mut args = vec!["-m", "pytest", "-q", "-p", "no:cacheprovider"];
    if xdist() {
        args.extend(["-n", "4"]);
    }
    args.push("python/tests");
    let out = Command::new("python3")
        .args(&args)
        .current_dir(root)
        .env("TRAWL_BIN", env!("CARGO_BIN_EXE_trawl"))
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python/tests failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every test ran: none skipped for want of something.
    let last = text
        .lines()
        .rev()
        .find(|l| l.contains(" passed"))
        .unwrap_or("");
    assert!(!last.contains("skipped"), "{last}");
    eprintln!("python/tests: {last}");
}

/// Whether pytest-xdist is installed (`-n`): an optional speed-up, so its absence is no skip.
fn xdist() -> bool {
    Command::new("python3")
        .args(["-c", "import xdist"])
        .output()
        .is_ok_and(|o| o.status.success())
}
