//! What a scan says about what it is given: bad flags and sizes, missing roots, placeholder
//! paths, outputs in missing directories.

use crate::util::Dir;

#[test]
fn bad_flags_are_clear_errors() {
    let d = Dir::new();
    let r = d.cmd().args(["scan", ".", "-d", "sha3"]).run();
    r.code(2);
    r.stderr_has("unknown digest algorithm 'sha3'");
    let r = d.cmd().args(["scan", ".", "-m", "nope:x"]).run();
    r.code(2);
    r.stderr_has("unknown format 'nope'");
    let r = d.cmd().args(["scan", "missing-dir"]).run();
    r.code(2);
    assert!(
        r.stderr
            .contains("trawl: missing-dir: No such file or directory"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_root_that_does_not_exist_is_an_error_without_a_table_of_zeros() {
    let d = Dir::new();
    let r = d.cmd().args(["scan", "nowhere"]).run();
    r.code(2)
        .stderr_has("nowhere")
        .stdout_has("FAILED: 1 file could not be read");
    assert!(!r.stdout.contains("data reduction"), "{}", r.stdout);
    assert!(!r.stdout.contains("0 B read"), "{}", r.stdout);
    // Rates are in the binary units the sizes are in.
    d.create(b"t/a", b"abc");
    let r = d.cmd().args(["scan", "t"]).run();
    r.code(0).stdout_has("B/s)");
    assert!(!r.stdout.contains("MB/s"), "{}", r.stdout);
}

#[test]
fn a_missing_root_is_named_once_when_stderr_and_stdout_are_one_stream() {
    use std::io::Read;
    let d = Dir::new();
    d.create(b"t/a.txt", b"alpha\n");
    // `trawl scan t missing 2>&1`: the message and the summary on one stream.
    let (mut reader, writer) = std::io::pipe().unwrap();
    let mut child = d
        .cmd()
        .args(["scan", "t", "missing"])
        .cmd
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .spawn()
        .unwrap();
    drop(child.stdin.take());
    let mut both = String::new();
    // The writer's copies are the child's alone once `cmd` (holding ours) is gone.
    let status = child.wait().unwrap();
    reader.read_to_string(&mut both).unwrap();
    assert_eq!(status.code(), Some(2), "{both}");
    assert_eq!(both.matches("missing: No such file").count(), 1, "{both}");
    assert!(
        both.contains("FAILED: 1 file could not be read (named above)"),
        "{both}"
    );
    // Apart, each stream names it.
    let r = d.cmd().args(["scan", "t", "missing"]).run();
    r.code(2)
        .stderr_has("missing: No such file")
        .stdout_has("  missing: No such file");
}

/// `trawl scan PATH` with the README's placeholder as it is: one line naming it, exit 2, no
/// figure of a run that read nothing.
#[test]
fn a_placeholder_path_is_one_line_and_no_memory_figure() {
    use std::io::Read;
    let d = Dir::new();
    let (mut reader, writer) = std::io::pipe().unwrap();
    let mut child = d
        .cmd()
        .args(["scan", "PATH"])
        .cmd
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .spawn()
        .unwrap();
    let status = child.wait().unwrap();
    let mut both = String::new();
    reader.read_to_string(&mut both).unwrap();
    assert_eq!(status.code(), Some(2), "{both}");
    assert_eq!(
        both,
        "trawl: PATH: No such file or directory (os error 2)\n"
    );
    // Apart, the summary names it (stderr may be read by no one), still with no memory figure.
    let r = d.cmd().args(["scan", "PATH"]).run();
    r.code(2).stdout_has("  PATH: No such file");
    assert!(!r.stdout.contains("peak memory"), "{}", r.stdout);
}

#[test]
fn an_output_in_a_missing_directory_is_named_as_the_user_gave_it() {
    let d = Dir::new();
    d.create(b"t/a.txt", b"alpha\n");
    for flag in ["--json", "--html", "-m"] {
        let target = if flag == "-m" {
            "sha256sum:nodir/out"
        } else {
            "nodir/out"
        };
        let r = d.cmd().args(["scan", "t", "-q", flag, target]).run();
        r.code(2)
            .stderr_has("trawl: nodir/out: cannot create: No such file or directory");
        assert!(!r.stderr.contains("trawl-tmp"), "{}", r.stderr);
    }
}

#[test]
fn sizes_take_a_fraction_of_a_unit_and_a_bad_one_shows_the_forms_that_work() {
    let d = Dir::new();
    d.create(b"t/a.txt", b"alpha\n");
    d.cmd()
        .args(["scan", "t", "-q", "--memory", "1.5G"])
        .run()
        .code(0);
    let r = d.cmd().args(["scan", "t", "-q", "--memory", "1,5G"]).run();
    r.code(2)
        .stderr_has("bad size '1,5G' (use e.g. 4096, 256K, 1.5M, 2GiB)");
    assert!(!r.stderr.contains("invalid digit"), "{}", r.stderr);
}
