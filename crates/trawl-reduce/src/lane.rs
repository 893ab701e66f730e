//! The data-reduction lane: [`FileReducer`] as a scan consumer. With a counter it folds the
//! file in itself, on the thread that read it, and says nothing; without, its output is a
//! [`FileReduce`] in [`LaneOutput::Other`].

use trawl_scan::{Lane, LaneOutput};

use crate::{FileReduce, FileReducer};

impl Lane for FileReducer {
    fn update(&mut self, chunk: &[u8]) {
        FileReducer::update(self, chunk)
    }

    fn finish(self: Box<Self>) -> LaneOutput {
        let counter = self.counter().cloned();
        let out: FileReduce = FileReducer::finish(*self);
        match counter {
            Some(c) => {
                c.add(&out);
                LaneOutput::Nothing
            }
            None => LaneOutput::Other(Box::new(out)),
        }
    }
}
