//! A scheduled policy audit as text: a systemd service and timer, and a crontab line, each
//! with the command quoted by the rules of what reads it. systemd (ExecStart=): each word in
//! double quotes, `\` and `"` escaped with a backslash, `%` doubled (a specifier otherwise)
//! and `$` doubled (a variable otherwise). cron: each word in the shell's single quotes (a `'`
//! written `'\''`), and `%` written `\%` (cron makes a bare one a newline). What neither can
//! hold is refused: a name that is not UTF-8 (systemd reads only UTF-8), a control character,
//! or (for cron) a backslash before a `%`.

use std::ffi::OsStr;

use anyhow::bail;

/// The argument `s` as text both systemd and cron can hold, or why not (naming `what`).
pub(crate) fn plain<'a>(what: &str, s: &'a OsStr) -> anyhow::Result<&'a str> {
    let Some(t) = s.to_str() else {
        bail!(
            "{what} {}: not UTF-8, which a systemd unit cannot hold",
            s.to_string_lossy()
        );
    };
    if t.chars().any(char::is_control) {
        bail!(
            "{what} {}: holds a control character, which a unit or crontab line cannot hold as it is",
            t.escape_debug()
        );
    }
    Ok(t)
}

/// One word of an ExecStart= line.
pub(crate) fn systemd_word(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '%' => o.push_str("%%"),
            '$' => o.push_str("$$"),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// Text systemd takes as it is in a setting that expands specifiers (Description=). Never
/// last on its line: a line ending in `\` goes on into the next (whose setting is lost).
fn systemd_text(s: &str) -> String {
    s.replace('%', "%%")
}

/// One word of a crontab line's command: single-quoted for the shell, `%` escaped for cron.
pub(crate) fn cron_word(s: &str) -> anyhow::Result<String> {
    if s.contains("\\%") {
        bail!(
            "{s}: a backslash before a % cannot be written in a crontab line (cron would cut the command there)"
        );
    }
    Ok(format!(
        "'{}'",
        s.replace('\'', "'\\''").replace('%', "\\%")
    ))
}

/// The service: one policy audit of `argv` (the trawl binary's absolute path first), at the
/// lowest CPU and I/O priority.
pub(crate) fn service(argv: &[String], catalog: &str) -> String {
    let exec: Vec<String> = argv.iter().map(|a| systemd_word(a)).collect();
    format!(
        "# Written by `trawl catalog schedule`: the policy audit of {cat}.\n\
         # A run that finds the catalog in use by another audit reads nothing (exit 0).\n\
         [Unit]\n\
         Description=trawl policy audit of {cat}, one run\n\
         After=local-fs.target\n\
         \n\
         [Service]\n\
         Type=oneshot\n\
         ExecStart={exec}\n\
         Nice=19\n\
         IOSchedulingClass=idle\n",
        cat = systemd_text(catalog),
        exec = exec.join(" ")
    )
}

/// The timer: the service at `on_calendar`, a run missed while the machine was off made up
/// at the next boot (which the policy's window may then turn away).
pub(crate) fn timer(on_calendar: &str, catalog: &str) -> String {
    format!(
        "# Written by `trawl catalog schedule`: when the policy audit of {cat} starts.\n\
         [Unit]\n\
         Description=trawl policy audit of {cat}, on a schedule\n\
         \n\
         [Timer]\n\
         OnCalendar={on_calendar}\n\
         Persistent=true\n\
         \n\
         [Install]\n\
         WantedBy=timers.target\n",
        cat = systemd_text(catalog)
    )
}

/// The crontab line: `argv` at `hour:minute` every day, at the lowest CPU and I/O priority.
pub(crate) fn cron_line(hour: u32, minute: u32, argv: &[String]) -> anyhow::Result<String> {
    let words = argv
        .iter()
        .map(|a| cron_word(a))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(format!(
        "{minute} {hour} * * * nice -n 19 ionice -c 3 {}",
        words.join(" ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each character systemd or cron reads as syntax is escaped its way; other text is left.
    #[test]
    fn words_are_quoted_by_their_readers_rules() {
        assert_eq!(systemd_word("/a b"), "\"/a b\"");
        assert_eq!(systemd_word(r#"x%y$z"q\w'"#), r#""x%%y$$z\"q\\w'""#);
        assert_eq!(cron_word("/a b").unwrap(), "'/a b'");
        assert_eq!(cron_word("it's 5%").unwrap(), r"'it'\''s 5\%'");
        assert!(cron_word(r"a\%b").is_err());
        assert!(plain("PATH", OsStr::new("tab\there")).is_err());
        use std::os::unix::ffi::OsStrExt;
        assert!(plain("PATH", OsStr::from_bytes(b"\xff")).is_err());
        assert_eq!(plain("PATH", OsStr::new("ok é %")).unwrap(), "ok é %");
    }
}
