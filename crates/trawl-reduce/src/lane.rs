//! The data-reduction lane: [`FileReducer`] as a scan consumer; its output is a
//! [`FileReduce`] in [`LaneOutput::Other`].

use trawl_scan::{Lane, LaneOutput};

use crate::{FileReduce, FileReducer};

impl Lane for FileReducer {
    fn update(&mut self, chunk: &[u8]) {
        FileReducer::update(self, chunk)
    }

    fn finish(self: Box<Self>) -> LaneOutput {
        let out: FileReduce = FileReducer::finish(*self);
        LaneOutput::Other(Box::new(out))
    }
}
