//! trawl's command line as a library: flags parse into `flags::LowArgs`, become a plain plan
//! in `flags::hiargs`, and [`main_with`] dispatches to a command and decides the exit code
//! once, at the end. The `trawl` binary is [`main_with`] with the signal handlers installed;
//! the Python package calls the same entry points in-process: [`run_captured`], whose
//! [`failure::Failure`] says typed why a command ended without its result, and [`dask`], a
//! Dask run's pieces (a shard's map, a directory's listing, the outputs written from the
//! merged parts).

mod commands;
pub mod dask;
pub mod failure;
mod flags;
mod messages;
mod progress;
mod stop;

pub use failure::Failure;
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
    let say = |f: &Failure| match f {
        // The help and the version go to stdout, a usage error to stderr.
        Failure::Usage(e) => {
            let _ = e.print();
        }
        Failure::Error(_) => messages::error(format_args!("{}", f.message())),
    };
    ended(run(argv), &say).0
}

/// How a command run by [`run_captured`] ended: its exit code, what it said (each message as
/// printed, without `trawl: `), and, where it ended without its result, why.
#[derive(Debug)]
pub struct Ran {
    /// The exit code.
    pub code: u8,
    /// The messages, in order.
    pub said: Vec<String>,
    /// Why it ended without its result, typed: None where it ran to its end.
    pub failure: Option<Failure>,
}

/// [`main_with`] without signals, its messages kept rather than printed and its failure
/// handed back typed rather than said, for a caller that reports them itself.
pub fn run_captured(argv: Vec<std::ffi::OsString>) -> Ran {
    let ((code, failure), said) = messages::capture(|| {
        let _run = stop::begin_run();
        ended(run(argv), &|_| {})
    });
    Ran {
        code,
        said,
        failure,
    }
}

/// Parses a command line and runs its command: its outcome, or why it ended without one.
fn run(argv: Vec<std::ffi::OsString>) -> Result<Outcome, Failure> {
    let args = flags::parse_from(argv).map_err(Failure::Usage)?;
    commands::run(args).map_err(Failure::Error)
}

/// The exit code of a command's end, decided once: a usage error 2 (the help or the version
/// 0), a broken pipe on stdout 0 (the reader has gone; nothing to say), any other error 2
/// (or the signal's code); and the failure, if any, first said by `say`.
fn ended(r: Result<Outcome, Failure>, say: &dyn Fn(&Failure)) -> (u8, Option<Failure>) {
    match r {
        Ok(o) => (finish(o), None),
        Err(Failure::Error(e)) if is_broken_pipe(&e) => (0, None),
        Err(f) => {
            say(&f);
            let code = match &f {
                Failure::Usage(e) if !e.use_stderr() => 0,
                Failure::Usage(_) => 2,
                Failure::Error(_) => finish(Outcome::Trouble),
            };
            (code, Some(f))
        }
    }
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
    describe_with(e, &|flag| flag.to_string())
}

/// [`describe`], with each flag a [`failure::Refused`] among the causes names said by `name`.
pub(crate) fn describe_with(e: &anyhow::Error, name: &dyn Fn(&str) -> String) -> String {
    let mut out = String::new();
    for c in e.chain() {
        let s = match c.downcast_ref::<failure::Refused>() {
            Some(r) => r.say(name),
            None => c.to_string(),
        };
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
