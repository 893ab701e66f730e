//! Why a run stops early: a signal (SIGINT, SIGTERM, SIGHUP) or an error that makes reading on
//! pointless (an output that cannot be written). The libraries poll one flag; the reason travels
//! beside it, so that the exit code decided at the end tells an interrupted run (128 + the
//! signal) from a failed one (2).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// A termination signal: the run ends with 128 + its number.
    Signal(i32),
    /// An error already reported, or to be returned by the command: exit 2.
    Error,
}

/// The stop token: set once, with the first reason.
pub struct Stop {
    flag: AtomicBool,
    /// 0: none; -1: an error; a positive number: that signal.
    reason: AtomicI32,
}

pub static STOP: Stop = Stop {
    flag: AtomicBool::new(false),
    reason: AtomicI32::new(0),
};

impl Stop {
    /// What the libraries poll.
    pub fn flag(&self) -> &AtomicBool {
        &self.flag
    }

    /// Asks every stage to stop; the first reason given is the one kept.
    pub fn request(&self, r: Reason) {
        let code = match r {
            Reason::Signal(s) => s,
            Reason::Error => -1,
        };
        let _ = self
            .reason
            .compare_exchange(0, code, Ordering::SeqCst, Ordering::SeqCst);
        self.flag.store(true, Ordering::SeqCst);
    }

    pub fn reason(&self) -> Option<Reason> {
        match self.reason.load(Ordering::SeqCst) {
            0 => None,
            -1 => Some(Reason::Error),
            s => Some(Reason::Signal(s)),
        }
    }

    pub fn is_stopping(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// A command for which a signal is the normal way to end (a server) takes it as handled.
    pub fn handled(&self) {
        self.reason.store(0, Ordering::SeqCst);
        self.flag.store(false, Ordering::SeqCst);
    }
}

/// Turns SIGINT, SIGTERM and SIGHUP into a stop request, on a thread of their own; a second
/// signal ends the process at once (temporary files, named `*.trawl-tmp`, may then remain).
pub fn install_handlers() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        for sig in signals.forever() {
            if STOP
                .reason()
                .is_some_and(|r| matches!(r, Reason::Signal(_)))
            {
                std::process::exit(128 + sig);
            }
            STOP.request(Reason::Signal(sig));
        }
    });
}
