//! trawl: reads every byte of a file tree once and answers whether it is intact.
//!
//! This binary stays thin: flags parse into [`flags::LowArgs`], become a plain plan in
//! [`flags::hiargs`], and `main` dispatches to a command. Exit codes are decided once, at the end.

mod commands;
mod flags;
mod messages;
mod progress;
mod stop;

use std::process::ExitCode;

use stop::{Reason, STOP};

/// The documented exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// 0: everything read and, where verifying, everything matched.
    Ok,
    /// 1: verification found a difference (corrupt, missing, extra file).
    Difference,
    /// 2: some files could not be read, or the input was malformed; the run still finished.
    Trouble,
    /// 3: nothing could be checked: a bag whose payload manifests all use algorithms trawl
    /// cannot compute.
    Unchecked,
    /// 128 + the signal (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP): interrupted; nothing
    /// half-written was left behind.
    Interrupted,
}

impl Outcome {
    fn code(self) -> u8 {
        match self {
            Outcome::Ok => 0,
            Outcome::Difference => 1,
            Outcome::Trouble => 2,
            Outcome::Unchecked => 3,
            Outcome::Interrupted => match STOP.reason() {
                Some(Reason::Signal(s)) => (128 + s) as u8,
                _ => 130,
            },
        }
    }
}

fn main() -> ExitCode {
    // A file-size limit (ulimit -f) must make writes fail with EFBIG, like a full disk,
    // rather than kill the process with half-written output.
    // SAFETY: setting a signal disposition to SIG_IGN at startup, before any thread exists.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    stop::install_handlers();
    let args = match flags::parse() {
        Ok(a) => a,
        Err(code) => return code,
    };
    let outcome = match commands::run(args) {
        Ok(o) => o,
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            messages::error(format_args!("{}", describe(&e)));
            Outcome::Trouble
        }
    };
    // A signal decides the outcome whatever the command returned; an error stop has already
    // made the command return its error (exit 2).
    let outcome = match STOP.reason() {
        Some(Reason::Signal(_)) => Outcome::Interrupted,
        _ => outcome,
    };
    if outcome == Outcome::Interrupted {
        messages::error(format_args!(
            "interrupted; no manifest or report was left half-written"
        ));
    }
    ExitCode::from(outcome.code())
}

/// The error and its causes joined by ": ", leaving out a cause whose text is already there
/// (library errors name their path and include their I/O cause, which is also their source).
fn describe(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for c in e.chain() {
        let s = c.to_string();
        if out.contains(&s) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&s);
    }
    out
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
