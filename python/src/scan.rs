//! `trawl.scan` in-process: keyword arguments made `trawl scan`'s flags (a keyword is its long
//! flag with `_` for `-`, one rule each way, here), the run, and its failure raised as a typed
//! exception built from the failure's fields, never from its words.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use pyo3::exceptions::{PyOSError, PyTypeError};
use pyo3::prelude::*;
use trawl_cli::failure::{Failure, UsageKind};

use crate::os_args;

pyo3::import_exception!(trawl._errors, ScanError);
pyo3::import_exception!(trawl._errors, OptionError);

/// `--top-files` for the keyword `top_files`; None for a name that is no flag's (a flag's long
/// name is words of lowercase letters and digits joined by `-`).
fn flag_of(keyword: &str) -> Option<String> {
    let word = |w: &str| {
        !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    keyword
        .split('_')
        .all(word)
        .then(|| format!("--{}", keyword.replace('_', "-")))
}

/// The keyword for the flag `--top-files` (`top_files`), or for a flag as given that trawl
/// does not have (`--dedupe`: `dedupe`, the keyword that made it).
fn keyword_of(flag: &str) -> String {
    flag.trim_start_matches('-').replace('-', "_")
}

/// The exception for a failure: `OptionError(message, option)` for a command line refused (by
/// the parser or by a flag's check), its flags said as keywords; `OSError(errno, message,
/// filename)` (Python picks the subclass by the number) for an OS error; `ScanError(code,
/// message)` for anything else. The messages are trawl's words.
fn exception(f: &Failure, code: u8) -> PyErr {
    if let Some(u) = f.usage() {
        let kw = |f: &Option<String>| f.as_deref().map(keyword_of);
        let option = kw(&u.flag);
        let named = option.clone().unwrap_or_else(|| "an option".into());
        let value = u
            .value
            .as_deref()
            .map(|v| format!(" '{v}'"))
            .unwrap_or_default();
        let said = match u.kind {
            UsageKind::Unknown => match kw(&u.suggested) {
                Some(s) => format!("unknown option {named}; a similar option exists: {s}"),
                None => format!("unknown option {named}"),
            },
            UsageKind::Invalid => match &u.reason {
                Some(r) => format!("invalid value{value} for {named}: {r}"),
                None => format!("invalid value{value} for {named}"),
            },
            UsageKind::Unexpected => format!("unexpected value{value} for {named}"),
            UsageKind::Missing => format!("a value is required for {named}"),
            UsageKind::Conflict => match kw(&u.conflicts) {
                Some(c) => format!("{named} cannot be given with {c}"),
                None => format!("{named} cannot be given with the other options"),
            },
            UsageKind::Help => {
                "help and version are trawl's command line's, not options of scan()".into()
            }
            UsageKind::Other => match &option {
                Some(o) => format!("{o}: {}", u.description),
                None => u.description.clone(),
            },
        };
        return OptionError::new_err((format!("scan(): {said}"), option));
    }
    if let Some(r) = f.refused() {
        let said = f.say(&keyword_of);
        return OptionError::new_err((
            format!("scan(): {said}"),
            r.flag.as_deref().map(keyword_of),
        ));
    }
    if let Some(os) = f.os_error() {
        let name = os.path.map(|p| p.into_os_string());
        return PyOSError::new_err((os.errno, f.message(), name));
    }
    ScanError::new_err((code, f.message()))
}

/// Runs `trawl scan` in this process over `paths` with the keyword `options` (each a name and
/// its values, None for a flag that takes none), quietly, its JSON report written to
/// `report`; returns the exit code and its messages (each without `trawl: `). A run that ends
/// without its result raises (see `exception`).
#[pyfunction]
pub fn scan(
    py: Python<'_>,
    paths: Vec<Vec<u8>>,
    options: Vec<(String, Option<Vec<Vec<u8>>>)>,
    report: Vec<u8>,
) -> PyResult<(u8, Vec<String>)> {
    let mut argv: Vec<OsString> = vec!["trawl".into(), "scan".into(), "--quiet".into()];
    for (name, values) in options {
        // Always quiet (the messages go to the caller): a `quiet` keyword changes nothing.
        if name == "quiet" {
            continue;
        }
        let flag = flag_of(&name).ok_or_else(|| {
            PyTypeError::new_err(format!(
                "scan(): {name:?}: not an option's name (trawl scan's long flags, with _ for -)"
            ))
        })?;
        match values {
            None => argv.push(flag.into()),
            // Joined to its flag: a value starting with `-` is the value it is, and one given
            // to a flag that takes none is refused, not taken as a path.
            Some(values) => argv.extend(values.into_iter().map(|v| {
                let mut a = OsString::from(format!("{flag}="));
                a.push(OsString::from_vec(v));
                a
            })),
        }
    }
    argv.extend(["--json".into(), OsString::from_vec(report), "--".into()]);
    argv.extend(os_args(paths));
    let ran = py.detach(|| trawl_cli::run_captured(argv));
    match &ran.failure {
        None => Ok((ran.code, ran.said)),
        Some(f) => Err(exception(f, ran.code)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A keyword is its long flag with `_` for `-`, and back; a name that is no flag's is
    /// refused.
    #[test]
    fn a_keyword_is_its_flag_with_underscores() {
        assert_eq!(flag_of("top_files").as_deref(), Some("--top-files"));
        assert_eq!(flag_of("cdc").as_deref(), Some("--cdc"));
        assert_eq!(keyword_of("--top-files"), "top_files");
        assert_eq!(keyword_of("--dedupe"), "dedupe");
        for bad in ["", "json=x", "Top", "a__b", "_a", "a_", "a-b", "é"] {
            assert_eq!(flag_of(bad), None, "{bad:?}");
        }
    }
}
