//! Command lines trawl cannot take as given: arguments that are not UTF-8, counts and sizes out
//! of range. Each is a clear refusal or a normal run, never a panic.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use crate::util::*;

/// Arguments that are not UTF-8, or counts no run can take: a clear refusal or a normal run,
/// never a panic.
#[test]
fn no_argument_panics_the_command() {
    let d = Dir::new();
    d.create(b"t\xff/f", b"x");
    let r = d
        .cmd()
        .args([
            OsStr::from_bytes(b"audit"),
            OsStr::from_bytes(b"t\xff"),
            OsStr::from_bytes(b"-c"),
            OsStr::from_bytes(b"cat\xfe.db"),
        ])
        .run();
    r.code(0);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    let sql = tool("sqlite3");
    if let Some(sqlite) = sql {
        let o = run_tool(
            d.path(),
            &sqlite,
            &[
                OsStr::from_bytes(b"cat\xfe.db"),
                OsStr::new("SELECT options FROM runs"),
            ],
        );
        assert!(
            o.stdout.starts_with("audit t\u{fffd} -c cat\u{fffd}.db"),
            "{}",
            o.stdout
        );
    }
    for args in [
        vec!["scan", "-j", "0", "t"],
        vec!["scan", "-j", "100000", "t"],
        vec!["serve", "-j", "0", "t"],
        vec!["serve", "--max-connections", "0", "t"],
        vec!["serve", "--max-connections", "18446744073709551615", "t"],
        vec!["scan", "--top-files", "18446744073709551615", "t"],
    ] {
        let r = d.cmd().args(&args).run();
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("is not in"), "{args:?}: {}", r.stderr);
    }
    for (args, says) in [
        (vec!["scan", "--unit", "4G", "t"], "at most 64M"),
        (vec!["scan", "--unit", "3G", "t"], "at most 64M"),
        (vec!["scan", "--dedup", "4K,128M", "t"], "at most 64M"),
    ] {
        let r = d.cmd().args(&args).run();
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        r.stderr_has(says);
    }
}
