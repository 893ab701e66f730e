//! `trawl serve`: the FLV files under a directory over HTTP, seekable; stopped by a signal.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;

use crate::flags::plans::ServePlan;
use crate::{Outcome, messages};

pub fn run(plan: ServePlan) -> anyhow::Result<Outcome> {
    let dir = plan.root.clone();
    let log = plan
        .access_log_file
        .as_deref()
        .map(|p| {
            open_log(p).with_context(|| format!("{}: cannot open the access log", p.display()))
        })
        .transpose()?;
    let failed = AtomicBool::new(false);
    let notices = move |n: trawl_serve::Notice<'_>| notice(n, log.as_ref(), &failed);
    trawl_serve::serve(
        plan.config(Arc::new(notices)),
        &crate::stop::current(),
        |addr| {
            let shown = trawl_printer::terminal_line(&dir.display().to_string()).into_owned();
            // The server runs on: a stdout that cannot take the line is said on stderr.
            if let Err(e) =
                crate::messages::to_stdout(&format!("serving {shown} at http://{addr}/\n"))
            {
                messages::warning(format_args!("{}", crate::describe(&e)));
            }
        },
    )?;
    // Ctrl-C is how a server is stopped: it stopped taking requests and finished the ones in
    // flight, so this is a normal end.
    crate::stop::signal_handled();
    messages::error(format_args!("serve: stopped"));
    Ok(Outcome::Ok)
}

/// The access log file: appended to (each line one `write`, whole with `O_APPEND` even when
/// something else writes the file too, and where log rotation's `copytruncate` leaves it),
/// created readable by the owner and group only (it holds the clients' addresses). Never
/// through a symbolic link at its name, and only a regular file: opening a FIFO does not wait.
fn open_log(path: &Path) -> anyhow::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o640)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                anyhow::anyhow!("a symbolic link; name the file itself")
            } else {
                e.into()
            }
        })?;
    if !f.metadata()?.is_file() {
        anyhow::bail!("not a regular file");
    }
    Ok(f)
}

/// The server's notices as trawl prints them: the access log to its file or stderr, the rest
/// as messages.
fn notice(n: trawl_serve::Notice<'_>, log: Option<&File>, failed: &AtomicBool) {
    use trawl_serve::Notice;
    match n {
        Notice::Access(line) => match log {
            Some(mut f) => {
                if let Err(e) = f.write_all(format!("{line}\n").as_bytes())
                    && !failed.swap(true, Ordering::Relaxed)
                {
                    // Said once: a full disk would otherwise say it for every request.
                    messages::error(format_args!(
                        "serve: cannot write the access log: {e}; requests go on unlogged while it fails"
                    ));
                }
            }
            None => messages::to_stderr(&format!("{line}\n")),
        },
        Notice::AcceptFailed(e) => messages::error(format_args!("serve: accept: {e}")),
        Notice::AtCapacity { max_connections } => messages::error(format_args!(
            "serve: {max_connections} connections open, the limit (--max-connections); new clients get 503 until one closes"
        )),
        Notice::CutOff { grace } => messages::error(format_args!(
            "serve: responses still in flight after {} s were cut off",
            grace.as_secs_f64()
        )),
        Notice::Internal { path, error } => messages::error(format_args!("serve: {path}: {error}")),
    }
}
