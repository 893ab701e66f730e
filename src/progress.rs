//! The terminal progress bar (indicatif): bytes done of bytes found, the recent rate and the
//! ETA from it, files done, and the current file on a line of its own.
//! Off when stderr is not a terminal or with `--quiet`. The hot path only bumps atomics; a ticker
//! thread moves the numbers to the bar ten times a second.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use trawl_printer::human;

static BAR: OnceLock<ProgressBar> = OnceLock::new();

/// Prints a line on stderr without tearing the bar.
pub fn println(line: &str) {
    match BAR.get() {
        Some(bar) if !bar.is_finished() => {
            bar.suspend(|| crate::messages::to_stderr(&format!("{line}\n")))
        }
        _ => crate::messages::to_stderr(&format!("{line}\n")),
    }
}

#[derive(Default)]
struct Counters {
    found_files: AtomicU64,
    found_bytes: AtomicU64,
    read_bytes: AtomicU64,
    done_files: AtomicU64,
    walk_done: AtomicBool,
    current: Mutex<PathBuf>,
}

/// The engine-facing side of the bar.
pub struct Bar {
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

impl Bar {
    /// A bar if stderr is a terminal and the user did not ask for quiet; otherwise a no-op.
    pub fn new(quiet: bool) -> Bar {
        let counters = Arc::new(Counters::default());
        let stop = Arc::new(AtomicBool::new(false));
        let enabled = !quiet && std::io::stderr().is_terminal();
        let ticker = enabled.then(|| {
            let pb = ProgressBar::with_draw_target(Some(1), ProgressDrawTarget::stderr_with_hz(10));
            // Two lines, so that the current file shows whole at 80 columns: the figures, then
            // the file (cut from the left by the terminal's width).
            pb.set_style(
                ProgressStyle::with_template("{bar:24} {prefix}\n{wide_msg}")
                    .expect("valid template"),
            );
            let _ = BAR.set(pb.clone());
            let (c, s) = (counters.clone(), stop.clone());
            std::thread::spawn(move || {
                let (mut recent, mut walking) = (Recent::default(), Recent::default());
                while !s.load(Ordering::Relaxed) {
                    let found = c.found_bytes.load(Ordering::Relaxed);
                    let read = c.read_bytes.load(Ordering::Relaxed);
                    // Nothing found yet is an empty bar, not a full one.
                    pb.set_length(found.max(1));
                    pb.set_position(read.min(found));
                    let files = c.found_files.load(Ordering::Relaxed);
                    let walk_done = c.walk_done.load(Ordering::Relaxed);
                    pb.set_prefix(figures(&Figures {
                        read,
                        found,
                        files,
                        done: c.done_files.load(Ordering::Relaxed),
                        rate: recent.rate(read),
                        walking: (!walk_done).then(|| walking.rate(files)),
                    }));
                    if let Ok(p) = c.current.try_lock() {
                        pb.set_message(p.display().to_string());
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                pb.finish_and_clear();
            })
        });
        Bar {
            counters,
            stop,
            ticker,
        }
    }
}

/// What the bar's first line says.
struct Figures {
    read: u64,
    found: u64,
    files: u64,
    done: u64,
    /// Bytes read a second lately.
    rate: Option<f64>,
    /// While the walk goes on: files found a second lately (None until it is measured).
    walking: Option<Option<f64>>,
}

/// The bar's figures: bytes read of bytes found, the read rate, the time left, files done of
/// files found. While the walk goes on, what it has found is a floor (`+`), the time left is
/// at least that of what is found so far (`ETA >1m 5s`), and the walk's own pace is said,
/// since on a tree of small files the walk can take most of the run.
fn figures(f: &Figures) -> String {
    let left = match f.rate {
        Some(r) if r > 0.0 => Some(human::duration(f.found.saturating_sub(f.read) as f64 / r)),
        _ => None,
    };
    let (more, eta) = match (&f.walking, left) {
        (None, Some(t)) => ("", t),
        (None, None) => ("", "-".into()),
        (Some(_), Some(t)) => ("+", format!(">{t}")),
        (Some(_), None) => ("+", "-".into()),
    };
    let mut line = format!(
        "{}/{}{more}  {}  ETA {eta}  {}/{}{more} files",
        human::bytes(f.read),
        human::bytes(f.found),
        f.rate.map_or("-".into(), |r| human::rate(r as u64, 1.0)),
        f.done,
        f.files
    );
    if let Some(pace) = f.walking {
        line += &match pace {
            Some(p) => format!("  walking: {} files/s", p.round() as u64),
            None => "  walking".into(),
        };
    }
    line
}

/// The read rate over the last few seconds (not the average since the start, which a pause,
/// a cold cache or `--limit-rate` would skew).
#[derive(Default)]
struct Recent {
    samples: std::collections::VecDeque<(std::time::Instant, u64)>,
}

impl Recent {
    const WINDOW: Duration = Duration::from_secs(5);

    fn rate(&mut self, bytes: u64) -> Option<f64> {
        let now = std::time::Instant::now();
        self.samples.push_back((now, bytes));
        while self
            .samples
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t) > Self::WINDOW)
        {
            self.samples.pop_front();
        }
        let (t0, b0) = *self.samples.front()?;
        let secs = now.duration_since(t0).as_secs_f64();
        (secs >= 0.5).then(|| bytes.saturating_sub(b0) as f64 / secs)
    }
}

impl Bar {
    /// Whether the bar is drawn (stderr is a terminal and not `--quiet`): only then are the
    /// totals found by the walk (which cost a `stat` per file) worth having.
    pub fn is_drawn(&self) -> bool {
        self.ticker.is_some()
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }
}

// Only a drawn bar reads the counters: without one, the workers do not touch them (two cores
// adding to the same cache line for every file cost 2% of a small-file scan).
impl trawl_scan::Progress for Bar {
    fn found(&self, files: u64, bytes: u64) {
        if self.ticker.is_none() {
            return;
        }
        self.counters
            .found_files
            .fetch_add(files, Ordering::Relaxed);
        self.counters
            .found_bytes
            .fetch_add(bytes, Ordering::Relaxed);
    }
    fn walk_done(&self) {
        self.counters.walk_done.store(true, Ordering::Relaxed);
    }
    fn start_file(&self, path: &Path, _size: u64) {
        if self.ticker.is_some()
            && let Ok(mut p) = self.counters.current.try_lock()
        {
            p.clear();
            p.push(path);
        }
    }
    fn read(&self, bytes: u64) {
        if self.ticker.is_some() {
            self.counters.read_bytes.fetch_add(bytes, Ordering::Relaxed);
        }
    }
    fn file_done(&self) {
        if self.ticker.is_some() {
            self.counters.done_files.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn while_the_walk_goes_on_the_bar_gives_a_floor_for_the_time_left_and_the_walks_pace() {
        let f = Figures {
            read: 100 << 20,
            found: 400 << 20,
            files: 12_000,
            done: 3_000,
            rate: Some((100 << 20) as f64),
            walking: Some(Some(2_400.4)),
        };
        let line = figures(&f);
        assert!(line.contains("ETA >3"), "{line}");
        assert!(line.contains("3000/12000+ files"), "{line}");
        assert!(line.ends_with("walking: 2400 files/s"), "{line}");
        // The walk over: a plain estimate, nothing about walking.
        let line = figures(&Figures { walking: None, ..f });
        assert!(line.contains("ETA 3") && !line.contains("walking") && !line.contains('+'));
        // Nothing read yet: no time to give, but the walk's pace is there.
        let line = figures(&Figures {
            rate: None,
            read: 0,
            walking: Some(None),
            ..f
        });
        assert!(
            line.contains("ETA -") && line.ends_with("walking"),
            "{line}"
        );
    }
}
