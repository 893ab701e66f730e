//! Stop tokens: the process's signal token, requested only by the signal handlers, and one
//! child of it for each run ([`begin_run`]), which the run's stages request on failure. A run
//! that failed therefore leaves the next run in the same process (a Python interpreter calling
//! `trawl.main` again) untouched, while a signal stops whatever runs. The reason a run's token
//! carries decides, at the end, whether it exits as interrupted (128 + the signal) or as
//! failed (2).

use std::cell::RefCell;
use std::sync::LazyLock;

pub use trawl_stop::{Reason, Stop};

/// The process's signal token.
static SIGNALS: LazyLock<Stop> = LazyLock::new(Stop::new);

thread_local! {
    /// The token of the run this thread is in.
    static CURRENT: RefCell<Option<Stop>> = const { RefCell::new(None) };
}

/// A run in progress on this thread; when it ends, the thread's previous run (if any) is its
/// current one again.
pub struct RunGuard {
    prev: Option<Stop>,
}

/// Begins a run on this thread: its token is a fresh child of the signal token.
pub fn begin_run() -> RunGuard {
    let token = SIGNALS.child();
    RunGuard {
        prev: CURRENT.with(|c| c.replace(Some(token))),
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        let prev = self.prev.take();
        CURRENT.with(|c| *c.borrow_mut() = prev);
    }
}

/// The token of this thread's run (outside one, a fresh child of the signal token).
pub fn current() -> Stop {
    CURRENT
        .with(|c| c.borrow().clone())
        .unwrap_or_else(|| SIGNALS.child())
}

/// The signal that stopped the process, if one did.
pub fn signal() -> Option<i32> {
    match SIGNALS.reason() {
        Some(Reason::Signal(s)) => Some(s),
        _ => None,
    }
}

/// Takes a signal as the normal end of this run (a server, which a signal is how one stops).
#[cfg(feature = "serve")]
pub fn signal_handled() {
    SIGNALS.clear();
    current().clear();
}

/// A signal repeated sooner than this after the first is the same request, not a second one:
/// `timeout`, `kill -- -PGID` and a terminal's Ctrl-C can deliver one signal twice, to the
/// process and to its group, microseconds apart.
const REPEATED_WITHIN: std::time::Duration = std::time::Duration::from_millis(250);

/// Turns SIGINT, SIGTERM and SIGHUP into a stop request, on a thread of their own; a second
/// signal (at least [`REPEATED_WITHIN`] after the first) ends the process at once, whatever any
/// run's token holds (temporary files, named `*.trawl-tmp`, may then remain).
pub fn install_handlers() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    let stop: &'static Stop = &SIGNALS;
    std::thread::spawn(move || {
        let mut first: Option<std::time::Instant> = None;
        for sig in signals.forever() {
            let repeated = first.is_some_and(|t| t.elapsed() < REPEATED_WITHIN);
            if stop.is_stopping() && !repeated {
                std::process::exit(128 + sig);
            }
            first.get_or_insert_with(std::time::Instant::now);
            stop.request(Reason::Signal(sig));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_run_leaves_the_next_one_running() {
        {
            let _run = begin_run();
            current().request(Reason::OutputFailed);
            assert!(current().is_stopping());
        }
        let _run = begin_run();
        assert!(!current().is_stopping(), "the next run starts clear");
        assert_eq!(current().reason(), None);
    }
}
