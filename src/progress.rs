//! The terminal progress bar (indicatif): bytes done of bytes found, the recent rate and the
//! ETA from it, files done, and the current file on a line of its own.
//! Off when stderr is not a terminal or with `--quiet`. The hot path only bumps atomics; a ticker
//! thread moves the numbers to the bar ten times a second.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use trawl_printer::grouped_digits;

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
            // the file (cut from the left by the terminal's width). While the walk goes on the
            // total is not known: a bar of what is found so far would move backwards as more is
            // found, so the walk's figures are shown as such, and the bar once the total is known.
            let walking_style = ProgressStyle::with_template("{spinner} {prefix}\n{wide_msg}")
                .expect("valid template");
            let bar_style = ProgressStyle::with_template("{bar:24} {prefix}\n{wide_msg}")
                .expect("valid template");
            pb.set_style(walking_style);
            crate::messages::print_above(&pb);
            let (c, s) = (counters.clone(), stop.clone());
            std::thread::spawn(move || {
                let (mut recent, mut walking) = (Recent::default(), Recent::default());
                let mut bar_shown = false;
                while !s.load(Ordering::Relaxed) {
                    let found = c.found_bytes.load(Ordering::Relaxed);
                    let read = c.read_bytes.load(Ordering::Relaxed);
                    let files = c.found_files.load(Ordering::Relaxed);
                    let walk_done = c.walk_done.load(Ordering::Relaxed);
                    // The figures first: a style changed draws the bar with them at once.
                    pb.set_prefix(figures(&Figures {
                        read,
                        found,
                        files,
                        done: c.done_files.load(Ordering::Relaxed),
                        rate: recent.rate(read),
                        walking: (!walk_done).then(|| walking.rate(files)),
                    }));
                    if walk_done {
                        // Nothing found is an empty bar, not a full one.
                        pb.set_length(found.max(1));
                        pb.set_position(read.min(found));
                        if !bar_shown {
                            pb.set_style(bar_style.clone());
                            bar_shown = true;
                        }
                    } else {
                        pb.tick();
                    }
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
/// files found. While the walk goes on there is no total to measure against and no time left
/// to give: what the walk found so far and its pace, and what was read and how fast (on a tree
/// of small files the walk can take most of the run).
fn figures(f: &Figures) -> String {
    let rate = f
        .rate
        .map_or("-".into(), |r| trawl_printer::human_rate(r as u64, 1.0));
    if let Some(pace) = f.walking {
        let pace = match pace {
            Some(p) => format!(" ({} files/s)", grouped_digits(p.round() as u64)),
            None => String::new(),
        };
        return format!(
            "walking: {} {} found, {}{pace}; read {} files, {} ({rate})",
            grouped_digits(f.files),
            if f.files == 1 { "file" } else { "files" },
            trawl_printer::human_bytes(f.found),
            grouped_digits(f.done),
            trawl_printer::human_bytes(f.read),
        );
    }

    let eta = match f.rate {
        Some(r) if r > 0.0 => {
            trawl_printer::human_duration(f.found.saturating_sub(f.read) as f64 / r)
        }
        _ => "-".into(),
    };
    format!(
        "{}/{}  {rate}  ETA {eta}  {}/{} files",
        trawl_printer::human_bytes(f.read),
        trawl_printer::human_bytes(f.found),
        f.done,
        f.files
    )
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

    /// While the walk goes on there is no total: the line says what the walk found and how
    /// fast, what was read, and gives no time left and no fraction (the bar is not drawn: it
    /// moved backwards as more was found, 22/24 to 14/24, and said `ETA >0s` with GiB unfound).
    #[test]
    fn while_the_walk_goes_on_the_line_says_what_was_found_and_no_time_left() {
        let f = Figures {
            read: 100 << 20,
            found: 400 << 20,
            files: 12_000,
            done: 3_000,
            rate: Some((100 << 20) as f64),
            walking: Some(Some(2_400.4)),
        };
        let line = figures(&f);
        assert_eq!(
            line,
            "walking: 12,000 files found, 400.0 MiB (2,400 files/s); read 3,000 files, \
             100.0 MiB (100.0 MiB/s)"
        );
        // The walk over: bytes of the total, the time left, files of the total.
        let line = figures(&Figures { walking: None, ..f });
        assert!(
            line.starts_with("100.0 MiB/400.0 MiB  100.0 MiB/s  ETA 3"),
            "{line}"
        );
        assert!(
            line.ends_with("3000/12000 files") && !line.contains("walking"),
            "{line}"
        );
        // Nothing read yet, the walk's pace not measured yet.
        let line = figures(&Figures {
            rate: None,
            read: 0,
            done: 0,
            walking: Some(None),
            ..f
        });
        assert_eq!(
            line,
            "walking: 12,000 files found, 400.0 MiB; read 0 files, 0 B (-)"
        );
    }
}
