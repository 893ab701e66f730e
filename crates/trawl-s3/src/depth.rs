//! How many requests are in flight: steered by what the store's answers measure, the same
//! Little's-law rule as `--io-depth auto` for disks. A request spends `L` waiting for its first
//! byte and `T` receiving its body; to keep the link busy, `(L + T) / T` requests must be under
//! way at once (one receiving while the others wait). A `SlowDown` halves the depth; a fixed
//! `--io-depth` is kept as given.

use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The most requests in flight, whatever the measurements say.
pub(crate) const MAX_DEPTH: usize = 64;
/// Where an unmeasured store starts.
const START: usize = 8;

/// The gate every request passes, and its steering.
pub(crate) struct Depth {
    gate: Arc<Semaphore>,
    fixed: bool,
    state: Mutex<State>,
}

struct State {
    /// Requests allowed now.
    target: usize,
    /// Moving averages of the wait for the first byte and of the body's time, in seconds.
    wait: f64,
    body: f64,
    /// Answers measured since the target last moved.
    seen: u32,
}

impl Depth {
    /// A gate of `fixed` requests, or steered (None).
    pub(crate) fn new(fixed: Option<usize>) -> Depth {
        let target = fixed.map_or(START, |n| n.clamp(1, MAX_DEPTH));
        Depth {
            gate: Arc::new(Semaphore::new(target)),
            fixed: fixed.is_some(),
            state: Mutex::new(State {
                target,
                wait: 0.0,
                body: 0.0,
                seen: 0,
            }),
        }
    }

    /// Waits for a request's turn.
    pub(crate) async fn enter(&self) -> OwnedSemaphorePermit {
        // The gate is never closed.
        self.gate
            .clone()
            .acquire_owned()
            .await
            .unwrap_or_else(|_| unreachable!("the depth gate is never closed"))
    }

    /// Requests allowed now.
    pub(crate) fn now(&self) -> usize {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).target
    }

    /// One answer's timing: its first byte after `wait`, its body in `body`.
    pub(crate) fn answered(&self, wait: Duration, body: Duration) {
        if self.fixed {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (w, b) = (wait.as_secs_f64(), body.as_secs_f64().max(50e-6));
        if s.seen == 0 && s.wait == 0.0 {
            (s.wait, s.body) = (w, b);
        } else {
            s.wait += 0.2 * (w - s.wait);
            s.body += 0.2 * (b - s.body);
        }
        s.seen += 1;
        if s.seen < 8 {
            return;
        }
        s.seen = 0;
        let want = (((s.wait + s.body) / s.body).ceil() as usize).clamp(2, MAX_DEPTH);
        self.move_to(&mut s, want);
    }

    /// The store asked to slow down: half as many requests.
    pub(crate) fn throttled(&self) {
        if self.fixed {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let want = (s.target / 2).max(1);
        s.seen = 0;
        self.move_to(&mut s, want);
    }

    fn move_to(&self, s: &mut State, want: usize) {
        if want > s.target {
            self.gate.add_permits(want - s.target);
            s.target = want;
        } else if want < s.target {
            // Only permits not in use can be taken back now; the rest stay until the next
            // move (the depth falls as fast as requests end).
            let taken = self.gate.forget_permits(s.target - want);
            s.target -= taken;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(d: &Depth, wait_ms: u64, body_ms: u64) -> usize {
        for _ in 0..16 {
            d.answered(
                Duration::from_millis(wait_ms),
                Duration::from_millis(body_ms),
            );
        }
        d.now()
    }

    #[test]
    fn latency_against_transfer_time_sets_the_depth() {
        // Waits as long as bodies: two at once keep the link busy.
        assert_eq!(after(&Depth::new(None), 5, 5), 2);
        // 50 ms to the first byte and 5 ms of body: eleven.
        assert_eq!(after(&Depth::new(None), 50, 5), 11);
        // Small objects on a slow link: as many as allowed.
        assert_eq!(after(&Depth::new(None), 20, 0), MAX_DEPTH);
        // Fixed stays fixed.
        assert_eq!(after(&Depth::new(Some(3)), 50, 5), 3);
    }

    #[test]
    fn slow_down_halves_it() {
        let d = Depth::new(None);
        assert_eq!(after(&d, 50, 5), 11);
        d.throttled();
        assert_eq!(d.now(), 5);
    }
}
