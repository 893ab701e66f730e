//! How many requests are in flight: steered by what the store's answers measure. Two rules,
//! the larger of them wins:
//!
//! - Little's law, as `--io-depth auto` for disks: a request spends `L` waiting for its first
//!   byte and `T` receiving its body; to keep the link busy, `(L + T) / T` requests must be
//!   under way at once (one receiving while the others wait). This is a floor: it knows the
//!   link's latency, not how many requests the store serves side by side.
//! - Throughput, measured: every window of answers gives the bytes a second at the depth it
//!   ran at. The depth is raised by half; where the next window is at least 10% faster it is
//!   raised again, else it goes back to where it was and stays there for a while before it
//!   tries again (a store that serves more requests at once than its latency asks for, such
//!   as one whose requests queue for its CPU, is found this way; one that does not costs a
//!   window at the higher depth now and then).
//!
//! A `SlowDown` halves the depth and holds it; a fixed `--io-depth` is kept as given.

use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The most requests in flight, whatever the measurements say.
pub(crate) const MAX_DEPTH: usize = 64;
/// Where an unmeasured store starts.
const START: usize = 8;
/// Answers in one window, at least.
const WINDOW_ANSWERS: u32 = 8;
/// A window's shortest time: shorter ones measure the clock more than the store.
const WINDOW_TIME: Duration = Duration::from_millis(50);
/// How much faster a raised depth must be to be kept.
const GAIN: f64 = 1.10;
/// Windows a depth is held after a raise that gained nothing, or a `SlowDown`.
const HOLD: u32 = 8;

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
    /// The window being measured: answers, bytes, since when.
    seen: u32,
    bytes: u64,
    since: Instant,
    probe: Probe,
}

/// Where the throughput rule is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Probe {
    /// The depth was moved from `from`, whose window measured `rate` bytes a second.
    Moved { from: usize, rate: f64 },
    /// Held for `windows` more windows; then a move up (`up`) or down.
    Held { windows: u32, up: bool },
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
                bytes: 0,
                since: Instant::now(),
                probe: Probe::Held {
                    windows: 0,
                    up: true,
                },
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

    /// One answer's timing: its first byte after `wait`, its body of `bytes` in `body`.
    pub(crate) fn answered(&self, wait: Duration, body: Duration, bytes: u64) {
        self.answered_at(wait, body, bytes, Instant::now());
    }

    fn answered_at(&self, wait: Duration, body: Duration, bytes: u64, now: Instant) {
        if self.fixed {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (w, b) = (wait.as_secs_f64(), body.as_secs_f64().max(50e-6));
        if s.wait == 0.0 && s.body == 0.0 {
            (s.wait, s.body) = (w, b);
        } else {
            s.wait += 0.2 * (w - s.wait);
            s.body += 0.2 * (b - s.body);
        }
        s.seen += 1;
        s.bytes += bytes;
        let took = now.saturating_duration_since(s.since);
        if s.seen < WINDOW_ANSWERS || took < WINDOW_TIME {
            return;
        }
        let rate = s.bytes as f64 / took.as_secs_f64();
        (s.seen, s.bytes, s.since) = (0, 0, now);
        let floor = (((s.wait + s.body) / s.body).ceil() as usize).clamp(2, MAX_DEPTH);
        let (probe, climbed) = climb(s.probe, s.target, floor, rate);
        s.probe = probe;
        self.move_to(&mut s, climbed.max(floor));
    }

    /// The store asked to slow down: half as many requests, held there a while.
    pub(crate) fn throttled(&self) {
        if self.fixed {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let want = (s.target / 2).max(1);
        (s.seen, s.bytes, s.since) = (0, 0, Instant::now());
        s.probe = Probe::Held {
            windows: HOLD,
            up: true,
        };
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

/// The throughput rule's next step from `probe`, the window just measured having run at
/// `target` requests and moved `rate` bytes a second, never below `floor`: where it goes, and
/// the depth it asks for. A move up is kept where it gained [`GAIN`], a move down where it
/// lost less; one that is not kept goes back and is held, the next move the other way.
fn climb(probe: Probe, target: usize, floor: usize, rate: f64) -> (Probe, usize) {
    let held = |up| Probe::Held { windows: HOLD, up };
    let up = |from: usize| {
        let to = (from + from / 2).max(from + 1).min(MAX_DEPTH);
        (Probe::Moved { from, rate }, to)
    };
    let down = |from: usize| {
        let to = (from * 2 / 3).max(floor).max(1);
        (Probe::Moved { from, rate }, to)
    };
    match probe {
        Probe::Moved { from, rate: before } if target > from => {
            if rate >= before * GAIN {
                up(target)
            } else {
                (held(false), from)
            }
        }
        Probe::Moved { from, rate: before } if target < from => {
            if rate * GAIN >= before && target > floor {
                down(target)
            } else if rate * GAIN >= before {
                (held(true), target)
            } else {
                (held(true), from)
            }
        }
        // The depth could not move (at a bound): the other way next.
        Probe::Moved { from, .. } => (held(from >= MAX_DEPTH), target),
        Probe::Held {
            windows: 0,
            up: true,
        } if target < MAX_DEPTH => up(target),
        Probe::Held {
            windows: 0,
            up: false,
        } if target > floor => down(target),
        Probe::Held { windows: 0, up } => (
            Probe::Held {
                windows: 0,
                up: !up,
            },
            target,
        ),
        Probe::Held { windows, up } => (
            Probe::Held {
                windows: windows - 1,
                up,
            },
            target,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store serving `parallel` requests side by side at `each` bytes a second apiece,
    /// answered `windows` windows long at whatever depth the rule sets, with `wait_ms` to the
    /// first byte of each 4 MiB body: the depth after them.
    fn run(d: &Depth, parallel: usize, each: f64, wait_ms: u64, windows: u32) -> usize {
        let mut now = Instant::now();
        let bytes = 4u64 << 20;
        for _ in 0..windows * WINDOW_ANSWERS {
            let depth = d.now();
            let rate = each * depth.min(parallel) as f64;
            // One answer's share of the time: its bytes at the whole rate.
            let step = Duration::from_secs_f64(bytes as f64 / rate);
            now += step.max(WINDOW_TIME / WINDOW_ANSWERS);
            let body = Duration::from_secs_f64(bytes as f64 / each);
            d.answered_at(Duration::from_millis(wait_ms), body, bytes, now);
        }
        d.now()
    }

    #[test]
    fn a_store_that_serves_more_at_once_is_given_more() {
        // Sixteen served side by side, latency next to nothing: Little's law alone says 2.
        let d = Depth::new(None);
        let got = run(&d, 16, 50e6, 0, 200);
        assert!((16..=24).contains(&got), "{got}");
    }

    #[test]
    fn a_store_that_serves_few_at_once_is_not_crowded() {
        // Two served at once, nothing gained past them: down from the start of 8.
        let d = Depth::new(None);
        let got = run(&d, 2, 200e6, 0, 200);
        assert!((2..=3).contains(&got), "{got}");
    }

    #[test]
    fn latency_keeps_a_floor() {
        // 50 ms to the first byte, 40 ms of body (4 MiB at 100 MB/s): Little's law asks
        // for 3 even where throughput gains nothing past 1.
        let d = Depth::new(None);
        let got = run(&d, 1, 100e6, 50, 200);
        assert!((3..=4).contains(&got), "{got}");
        // Fixed stays fixed.
        let f = Depth::new(Some(3));
        assert_eq!(run(&f, 16, 50e6, 0, 50), 3);
    }

    #[test]
    fn slow_down_halves_it_and_holds_it() {
        let d = Depth::new(None);
        let before = run(&d, 16, 50e6, 0, 200);
        d.throttled();
        assert_eq!(d.now(), before / 2);
        // Held for a while: the next windows leave it where it is.
        assert_eq!(run(&d, 16, 50e6, 0, HOLD - 1), before / 2);
    }

    #[test]
    fn the_rule_moves_up_on_gain_and_back_without() {
        let (p, to) = climb(
            Probe::Held {
                windows: 0,
                up: true,
            },
            8,
            2,
            100.0,
        );
        assert_eq!(
            (p, to),
            (
                Probe::Moved {
                    from: 8,
                    rate: 100.0
                },
                12
            )
        );
        // 20% more at 12: up again.
        assert_eq!(climb(p, 12, 2, 120.0).1, 18);
        // 5% more: back to 8, held, the next move down.
        assert_eq!(
            climb(p, 12, 2, 105.0),
            (
                Probe::Held {
                    windows: HOLD,
                    up: false
                },
                8
            )
        );
    }
}
