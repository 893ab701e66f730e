//! The help a newcomer reads and the shell integration installed from it: grouped `--help` with
//! examples, completion scripts a shell accepts, manual pages groff renders.

use crate::util::*;

#[test]
fn scan_help_is_grouped_under_headings_with_examples() {
    let d = Dir::new();
    let r = d.cmd().args(["scan", "--help"]).run();
    r.code(0);
    let mut at = 0;
    // In this order, each once.
    for heading in [
        "Digests and manifests:",
        "Outputs:",
        "Media:",
        "Data reduction:",
        "Memory and speed:",
        "Inputs:",
        "Examples:",
    ] {
        assert_eq!(
            r.stdout.matches(heading).count(),
            1,
            "{heading}\n{}",
            r.stdout
        );
        let i = r.stdout.find(heading).unwrap();
        assert!(i > at, "{heading} out of order\n{}", r.stdout);
        at = i;
    }
    // No option is left under the catch-all heading but --help itself.
    let options = r.stdout.split("Options:").nth(1).unwrap();
    let options = options.split("\n\n").next().unwrap();
    assert_eq!(options.trim(), "-h, --help  Print help", "{}", r.stdout);
    // --memory says what it bounds and what it does not (see
    // scale::memory_bounds_what_grows_and_the_rest_is_the_stated_constant).
    let long = d.cmd().args(["scan", "--help"]).run();
    let memory = long.stdout.split("--memory <SIZE>").nth(1).unwrap();
    let memory: String = memory
        .split("--temp-dir <DIR>")
        .next()
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(memory.contains("what grows with the data"), "{memory}");
    assert!(
        memory.contains("Not in SIZE")
            && memory.contains("--buffer-size")
            && memory.contains("48M"),
        "{memory}"
    );
    // It points to the pages that hold the details, not to the README.
    assert!(!r.stdout.contains("README"), "{}", r.stdout);
    for cmd in [&["verify", "--help"][..], &["audit", "--help"]] {
        d.cmd().args(cmd).run().code(0).stdout_has("Examples:");
    }
}

#[test]
fn completion_scripts_are_ones_each_shell_reads() {
    let d = Dir::new();
    let bash = d.cmd().args(["completions", "bash"]).run();
    bash.code(0)
        .stdout_has("--manifest")
        .stdout_has("completions");
    std::fs::write(d.join("trawl.bash"), &bash.stdout).unwrap();
    // bash parses it (-n: read, do not run).
    let ok = std::process::Command::new("bash")
        .args(["-n", "trawl.bash"])
        .current_dir(d.path())
        .status()
        .unwrap();
    assert!(ok.success());
    d.cmd()
        .args(["completions", "zsh"])
        .run()
        .code(0)
        .stdout_has("#compdef trawl");
    d.cmd()
        .args(["completions", "fish"])
        .run()
        .code(0)
        .stdout_has("complete -c trawl");
    d.cmd()
        .args(["completions", "tcsh"])
        .run()
        .code(2)
        .stderr_has("possible values: bash");
}

#[test]
fn man_pages_cover_every_command_and_render() {
    let d = Dir::new();
    d.cmd()
        .args(["man", "pages"])
        .run()
        .code(0)
        .stdout_has("manual pages into pages");
    for page in [
        "trawl.1",
        "trawl-scan.1",
        "trawl-verify.1",
        "trawl-bag-create.1",
        "trawl-catalog-report.1",
        "trawl-flv-index.1",
        "trawl-completions.1",
    ] {
        let text = std::fs::read_to_string(d.join("pages").join(page)).unwrap();
        assert!(text.starts_with(".ie") || text.contains(".TH"), "{page}");
    }
    let scan = std::fs::read_to_string(d.join("pages/trawl-scan.1")).unwrap();
    assert!(
        scan.contains("manifest") && scan.contains("DATA REDUCTION"),
        "{scan}"
    );
    let Some(groff) = tool("groff") else {
        return;
    };
    // -ww: every warning; -z: no output, only the checks.
    let out = std::process::Command::new(groff)
        .args(["-man", "-Tutf8", "-ww", "-z", "pages/trawl-scan.1"])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `trawl man DIR` says whether `man trawl` finds the pages it wrote, and how to make it where
/// it does not (the README's folder is on no man's path for root, nor on many systems).
#[test]
fn man_says_whether_man_finds_its_pages_and_how_to_make_it() {
    let d = Dir::new();
    let root = d.join("share/man");
    let mut c = d.cmd().args(["man", "share/man/man1"]);
    c.cmd.env("MANPATH", &root);
    c.run().code(0).stdout_has("`man trawl` finds them");
    let mut c = d.cmd().args(["man", "share/man/man1"]);
    c.cmd.env("MANPATH", d.join("elsewhere"));
    c.run()
        .code(0)
        .stdout_has("man does not look there")
        .stdout_has(&format!("export MANPATH=\"{}:$(manpath)\"", root.display()))
        .stdout_has("man -l share/man/man1/trawl.1");
    d.cmd()
        .args(["man", "pages"])
        .run()
        .code(0)
        .stdout_has("a folder named man1");
}

/// Every enumerated flag is a closed set: a wrong value is refused with the values that exist
/// (and shells complete them).
#[test]
fn enumerated_flags_refuse_other_values_and_list_theirs() {
    let d = Dir::new();
    d.create(b"t/a", b"a");
    for (args, values) in [
        (&["scan", "t", "--io", "bogus"][..], "auto, read, mmap"),
        (&["scan", "t", "--read-order", "bogus"], "auto, disk, walk"),
        (
            &["flv", "index", "x.flv", "--io", "bogus"],
            "auto, mmap, read",
        ),
        (
            &["flv", "inject", "x.flv", "y.flv", "--reflink", "bogus"],
            "auto, always, never",
        ),
    ] {
        let r = d.cmd().args(args).run();
        r.code(2);
        r.stderr_has(&format!("[possible values: {values}]"));
    }
    let r = d.cmd().args(["completions", "bash"]).run();
    r.code(0);
    assert!(
        r.stdout.contains("auto read mmap"),
        "bash completes --io's values"
    );
}
