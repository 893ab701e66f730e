//! Messages to stderr: `trawl: <path>: <reason>`, printed above the progress bar if one was
//! drawn ([`print_above`]), with control characters escaped (a name cannot act on the terminal or forge a line); and the
//! writes to stderr and stdout that a reader gone away must not turn into an abort.

use std::fmt::Arguments;
use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use indicatif::ProgressBar;

/// The progress bar that lines on stderr are printed above, once one is drawn.
static BAR: OnceLock<ProgressBar> = OnceLock::new();

/// Makes `bar` the progress bar that messages are printed above without tearing it (the first
/// bar drawn in the process; later ones are left to draw over).
pub fn print_above(bar: &ProgressBar) {
    let _ = BAR.set(bar.clone());
}

/// Prints a line on stderr without tearing the bar.
fn println(line: &str) {
    match BAR.get() {
        Some(bar) if !bar.is_finished() => bar.suspend(|| to_stderr(&format!("{line}\n"))),
        _ => to_stderr(&format!("{line}\n")),
    }
}

/// Set once a write to stderr failed (its reader closed the pipe): later messages are dropped.
static STDERR_GONE: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Where this thread's messages go instead of stderr while a caller captures them (the
    /// Python package: it logs them itself), one entry a message. Messages are written on the
    /// thread that runs the command (the engine reports through callbacks on the caller's
    /// thread).
    static CAPTURED: std::cell::RefCell<Option<Vec<String>>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with this thread's messages kept, not printed; returns its result and them, each
/// as printed without the leading `trawl: `.
pub fn capture<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
    let before = CAPTURED.with(|c| c.borrow_mut().replace(Vec::new()));
    let out = f();
    let said = CAPTURED.with(|c| std::mem::replace(&mut *c.borrow_mut(), before));
    (out, said.unwrap_or_default())
}

/// Keeps `message` if this thread's messages are being captured; whether it was.
fn captured(message: impl FnOnce() -> String) -> bool {
    CAPTURED.with(|c| match c.borrow_mut().as_mut() {
        Some(said) => {
            said.push(message());
            true
        }
        None => false,
    })
}

/// Writes `text` to stderr as it is. A stderr that cannot be written (a pipe whose reader has
/// gone, as in `2>&1 | head`) loses the messages only: the run goes on, its outputs are written
/// and its exit code is the one it decides (`eprint!` would panic, and the release build
/// aborts on a panic).
pub fn to_stderr(text: &str) {
    if captured(|| text.trim_end_matches('\n').to_string()) || STDERR_GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut e = std::io::stderr().lock();
    if e.write_all(text.as_bytes())
        .and_then(|()| e.flush())
        .is_err()
    {
        STDERR_GONE.store(true, Ordering::Relaxed);
    }
}

/// Writes a command's result line (`bag create`'s "bagged ...", `bag validate`'s verdict) to
/// stdout. A reader gone away (EPIPE) loses the line, as `to_stderr`'s lose theirs, and nothing
/// else; any other failure (a full disk, an I/O error) is the caller's error: what was asked
/// for did not reach its destination.
pub fn to_stdout(text: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    let mut o = std::io::stdout().lock();
    match o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("stdout: cannot write"),
    }
}

/// Prints `trawl: MESSAGE` on stderr (an error, or a plain notice such as `serve: stopped`).
pub fn error(args: Arguments<'_>) {
    if captured(|| trawl_printer::terminal_message(&args.to_string()).into_owned()) {
        return;
    }
    let line = format!("trawl: {args}");
    println(&trawl_printer::terminal_message(&line));
}

/// Prints `trawl: warning: MESSAGE` on stderr.
pub fn warning(args: Arguments<'_>) {
    if captured(|| trawl_printer::terminal_message(&format!("warning: {args}")).into_owned()) {
        return;
    }
    let line = format!("trawl: warning: {args}");
    println(&trawl_printer::terminal_message(&line));
}

/// Whether stderr and stdout are one file (a terminal, or `2>&1`): what was said on one was
/// seen on the other.
pub fn stderr_is_stdout() -> bool {
    use std::os::fd::AsFd;
    let id = |fd: std::os::fd::BorrowedFd<'_>| {
        let f = std::fs::File::from(fd.try_clone_to_owned().ok()?);
        let md = f.metadata().ok()?;
        use std::os::unix::fs::MetadataExt;
        Some((md.dev(), md.ino(), md.rdev()))
    };
    let (o, e) = (std::io::stdout(), std::io::stderr());
    matches!((id(o.as_fd()), id(e.as_fd())), (Some(a), Some(b)) if a == b)
}
