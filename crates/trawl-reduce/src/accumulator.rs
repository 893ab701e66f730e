//! Tests' way to fold files in, by one caller: the [`Counter`] behind a `&mut` interface.

use std::sync::Arc;

use trawl_report::ReductionJson;

use crate::config::ReduceConfig;
use crate::counter::Counter;
use crate::facts::FileReduce;

/// Folds files into the global figures, by one caller (the counting rules: [`Counter`]).
pub struct Accumulator {
    counter: Counter,
}

impl Accumulator {
    pub fn new(cfg: Arc<ReduceConfig>) -> Accumulator {
        Accumulator {
            counter: Counter::new(cfg),
        }
    }

    /// An accumulator that counts nothing itself: it folds files into a cluster map's batches
    /// over `partitions` fingerprint partitions, taken at the end by [`Accumulator::take_map`].
    pub fn mapping(cfg: Arc<ReduceConfig>, partitions: u32) -> Accumulator {
        Accumulator {
            counter: Counter::mapping(cfg, partitions),
        }
    }

    /// A mapping accumulator's batches and totals (once).
    pub fn take_map(&mut self) -> Option<crate::mapreduce::MapOutput> {
        self.counter.take_map()
    }

    /// Numbers a file for [`FileReducer::with_file`](crate::FileReducer::with_file).
    pub fn register(&mut self, path: &std::path::Path) -> u32 {
        self.counter.register(path)
    }

    pub fn add(&mut self, f: &FileReduce) -> std::io::Result<()> {
        self.counter.add(f);
        Ok(())
    }

    /// Counts everything (call once, after the last [`Accumulator::add`]).
    pub fn finish(&mut self) -> std::io::Result<()> {
        self.counter.finish()
    }

    /// The breakdowns by directory and type, when asked for and exact (after
    /// [`Accumulator::finish`]).
    pub fn breakdown(&self) -> Option<trawl_report::Breakdown> {
        self.counter.breakdown()
    }

    pub fn report(&self) -> ReductionJson {
        self.counter.report()
    }
}
