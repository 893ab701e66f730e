//! trawl's command line as a library: flags parse into [`flags::LowArgs`], become a plain plan
//! in [`flags::hiargs`], and [`main_with`] dispatches to a command and decides the exit code
//! once, at the end. The `trawl` binary is [`main_with`] with the signal handlers installed;
//! the Python package calls the same entry points in-process ([`dask`] holds a Dask run's
//! pieces: a shard's map, a directory's listing, the outputs written from the merged parts).

mod commands;
pub mod dask;
mod flags;
mod messages;
mod progress;
mod stop;

pub use flags::hiargs::parse_size;

/// The documented exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// 0: everything read and, where verifying, everything matched.
    Ok,
    /// 1: verification found a difference (corrupt, missing, extra file).
    Difference,
    /// 2: some files could not be read, or the input was malformed; the run still finished.
    Trouble,
    /// 3: not checked: a catalog export that leaves out files whose digest is not known yet,
    /// a bag whose payload manifests all use algorithms trawl cannot compute,
    /// a serialized bag (only its serialization is held to a profile), or listed files
    /// `verify` could not check (a digest's algorithm not established or not computed) where
    /// nothing else was wrong.
    Unchecked,
    /// 128 + the signal (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP): interrupted; nothing
    /// half-written was left behind.
    Interrupted,
}

impl Outcome {
    pub fn code(self) -> u8 {
        match self {
            Outcome::Ok => 0,
            Outcome::Difference => 1,
            Outcome::Trouble => 2,
            Outcome::Unchecked => 3,
            Outcome::Interrupted => stop::signal().map_or(130, |s| (128 + s) as u8),
        }
    }
}

/// Runs one command line (`argv[0]` is the program's name) and returns its exit code. With
/// `signals`, SIGINT, SIGTERM and SIGHUP stop the run (the binary); an embedding process keeps
/// its own handlers.
pub fn main_with(argv: Vec<std::ffi::OsString>, signals: bool) -> u8 {
    if signals {
        // A file-size limit (ulimit -f) must make writes fail with EFBIG, like a full disk,
        // rather than kill the process with half-written output. Only the command's own
        // process: in a host (the Python binding) signals stay the host's (Python ignores
        // SIGXFSZ itself).
        // SAFETY: setting a signal disposition to SIG_IGN; no other code of this process relies
        // on SIGXFSZ's default (ending the process).
        unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        }
        stop::install_handlers();
    }
    let _run = stop::begin_run();
    let args = match flags::parse_from(argv) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let outcome = match commands::run(args) {
        Ok(o) => o,
        Err(e) => {
            if is_broken_pipe(&e) {
                return 0;
            }
            messages::error(format_args!("{}", describe(&e)));
            Outcome::Trouble
        }
    };
    finish(outcome)
}

/// [`main_with`] without signals, its messages (errors, warnings, a usage error) kept rather than
/// printed: the exit code and the messages' text, for a caller that reports them itself.
pub fn main_captured(argv: Vec<std::ffi::OsString>) -> (u8, String) {
    messages::capture(|| main_with(argv, false))
}

/// The exit code of a command's outcome: a signal decides it whatever the command returned;
/// an error stop has already made the command return its error (exit 2).
pub(crate) fn finish(outcome: Outcome) -> u8 {
    let outcome = match stop::signal() {
        Some(_) => Outcome::Interrupted,
        None => outcome,
    };
    if outcome == Outcome::Interrupted {
        messages::error(format_args!(
            "interrupted; no manifest or report was left half-written"
        ));
    }
    outcome.code()
}

/// The error and its causes joined by ": ", leaving out a cause whose text is already there
/// (library errors name their path and include their I/O cause, which is also their source).
pub(crate) fn describe(e: &anyhow::Error) -> String {
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
