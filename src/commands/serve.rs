//! `trawl serve`: the FLV files under a directory over HTTP, seekable; stopped by a signal.

use crate::flags::plans::ServePlan;
use crate::{Outcome, messages};

pub fn run(plan: ServePlan) -> anyhow::Result<Outcome> {
    let dir = plan.root.clone();
    trawl_serve::serve(
        plan.config(std::sync::Arc::new(notice)),
        &crate::stop::current(),
        |addr| {
            let shown = trawl_printer::terminal::line(&dir.display().to_string()).into_owned();
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

/// The server's notices as trawl prints them: the access log as it is, the rest as messages.
fn notice(n: trawl_serve::Notice<'_>) {
    use trawl_serve::Notice;
    match n {
        Notice::Access(line) => messages::to_stderr(&format!("{line}\n")),
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
