//! The stop token: asks every stage of a run to stop, and says why.
//!
//! A [`Stop`] is polled on the hot path (one relaxed load), requested once with a [`Reason`]
//! (the first reason wins), and may have children: a child stops when it or any ancestor is
//! asked to, while asking a child leaves its parent running. The audit uses that to stop
//! feeding files when its budget is spent without cutting short the reads already started, and
//! to stop its reads on a catalog error without making the caller's run look interrupted.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// Why a run stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// A termination signal (its number): the user or the system wants the run to end.
    Signal(i32),
    /// An output (a report, a record stream, a spill file) could not be written: reading on
    /// would be pointless.
    OutputFailed,
    /// A budget (bytes or time) was spent; the work so far is kept and the next run goes on.
    Budget,
    /// A stage failed in a way that ends the run (the error itself travels separately).
    Failed,
}

impl Reason {
    fn code(self) -> i64 {
        match self {
            Reason::Signal(s) => i64::from(s.max(1)),
            Reason::OutputFailed => -1,
            Reason::Budget => -2,
            Reason::Failed => -3,
        }
    }

    fn from_code(c: i64) -> Option<Reason> {
        match c {
            0 => None,
            -1 => Some(Reason::OutputFailed),
            -2 => Some(Reason::Budget),
            -3 => Some(Reason::Failed),
            s => Some(Reason::Signal(s as i32)),
        }
    }

    /// What the reason is, in a few words.
    pub fn describe(self) -> String {
        match self {
            Reason::Signal(2) => "interrupted (SIGINT)".into(),
            Reason::Signal(15) => "terminated (SIGTERM)".into(),
            Reason::Signal(1) => "hung up (SIGHUP)".into(),
            Reason::Signal(s) => format!("stopped by signal {s}"),
            Reason::OutputFailed => "an output could not be written".into(),
            Reason::Budget => "the budget was spent".into(),
            Reason::Failed => "a stage failed".into(),
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    flag: AtomicBool,
    reason: AtomicI64,
}

/// A stop token; cloning gives another handle to the same token.
#[derive(Debug, Clone, Default)]
pub struct Stop {
    own: Arc<Inner>,
    /// Ancestors, nearest first: any of them stopping stops this token.
    ancestors: Vec<Arc<Inner>>,
}

impl Stop {
    /// A token that has not stopped.
    pub fn new() -> Stop {
        Stop::default()
    }

    /// A token that stops with this one, and that can also be stopped alone.
    pub fn child(&self) -> Stop {
        let mut ancestors = Vec::with_capacity(self.ancestors.len() + 1);
        ancestors.push(self.own.clone());
        ancestors.extend(self.ancestors.iter().cloned());
        Stop {
            own: Arc::new(Inner::default()),
            ancestors,
        }
    }

    /// Asks every stage that polls this token (and its children) to stop; the first reason
    /// given is kept.
    pub fn request(&self, r: Reason) {
        let _ = self
            .own
            .reason
            .compare_exchange(0, r.code(), Ordering::SeqCst, Ordering::SeqCst);
        self.own.flag.store(true, Ordering::SeqCst);
    }

    /// Whether this token or an ancestor was asked to stop: what the hot path polls.
    #[inline]
    pub fn is_stopping(&self) -> bool {
        self.own.flag.load(Ordering::Relaxed)
            || self
                .ancestors
                .iter()
                .any(|a| a.flag.load(Ordering::Relaxed))
    }

    /// Why this token stops: its own reason first, else the nearest ancestor's.
    pub fn reason(&self) -> Option<Reason> {
        std::iter::once(&self.own)
            .chain(self.ancestors.iter())
            .find_map(|i| Reason::from_code(i.reason.load(Ordering::SeqCst)))
    }

    /// This token's own reason, ignoring its ancestors.
    pub fn own_reason(&self) -> Option<Reason> {
        Reason::from_code(self.own.reason.load(Ordering::SeqCst))
    }

    /// Takes a stop as handled (a server for which a signal is the normal way to end): the
    /// token runs again and has no reason.
    pub fn clear(&self) {
        self.own.reason.store(0, Ordering::SeqCst);
        self.own.flag.store(false, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_reason_is_kept() {
        let s = Stop::new();
        assert!(!s.is_stopping());
        assert_eq!(s.reason(), None);
        s.request(Reason::OutputFailed);
        s.request(Reason::Signal(2));
        assert!(s.is_stopping());
        assert_eq!(s.reason(), Some(Reason::OutputFailed));
        s.clear();
        assert!(!s.is_stopping());
        assert_eq!(s.reason(), None);
    }

    #[test]
    fn a_child_stops_with_its_parent_but_not_the_other_way() {
        let parent = Stop::new();
        let child = parent.child();
        let grandchild = child.child();
        grandchild.request(Reason::Budget);
        assert!(grandchild.is_stopping());
        assert!(!child.is_stopping() && !parent.is_stopping());
        parent.request(Reason::Signal(15));
        assert!(child.is_stopping());
        assert_eq!(child.reason(), Some(Reason::Signal(15)));
        assert_eq!(child.own_reason(), None);
        assert_eq!(grandchild.reason(), Some(Reason::Budget));
    }
}
