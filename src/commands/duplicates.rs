//! `--duplicates FILE`: the scan's groups of equal files in fclones' report format.

use std::os::unix::ffi::OsStrExt;

use trawl_engine::Duplicates;

use super::output::Output;

/// Writes every group, as JSON or as fclones' text.
pub fn write(
    out: &mut Output,
    d: &Duplicates,
    roots: &[std::path::PathBuf],
    json: bool,
) -> anyhow::Result<()> {
    let now = std::time::SystemTime::now();
    // `2026-11-25T06:40:00.123Z`, and fclones' text form of it.
    let rfc3339 = humantime::format_rfc3339_millis(now).to_string();
    let text = format!(
        "{} +0000",
        rfc3339.trim_end_matches('Z').replacen('T', " ", 1)
    );
    // fclones replays the options of the command a report names: name the fclones command
    // that groups files as trawl did (whole files, one name per inode, empty files left out,
    // the same digest where fclones has it); trawl's own command goes in a comment.
    let mut command = vec!["fclones".to_string(), "group".to_string()];
    command.extend(roots.iter().map(|r| r.to_string_lossy().into_owned()));
    if let Some(h) = fclones_hash(d.algorithm) {
        command.extend(["--hash-fn".to_string(), h.to_string()]);
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    let invoked: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let made_by = format!(
        "trawl {} ({})",
        env!("CARGO_PKG_VERSION"),
        invoked.join(" ")
    );
    let h = trawl_printer::FclonesHeader {
        timestamp_text: &text,
        timestamp_rfc3339: &rfc3339,
        command: &command,
        base_dir: cwd.as_os_str().as_bytes(),
        summary: &d.summary,
        made_by: &made_by,
    };
    let mut groups = |f: &mut dyn FnMut(&_) -> std::io::Result<()>| d.for_each_group(f);
    let r = if json {
        trawl_printer::write_fclones_json(out, &h, &mut groups)
    } else {
        trawl_printer::write_fclones_text(out, &h, &mut groups)
    };
    r.map_err(|e| out.error(e, "cannot write"))
}

/// fclones' name for a digest (`--hash-fn`), where it has one.
fn fclones_hash(a: trawl_digest::Algorithm) -> Option<&'static str> {
    use trawl_digest::Algorithm::*;
    Some(match a {
        Sha256 => "sha256",
        Sha512 => "sha512",
        Sha3_256 => "sha3-256",
        Sha3_512 => "sha3-512",
        Blake3 => "blake3",
        _ => return None,
    })
}
