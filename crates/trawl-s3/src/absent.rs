//! What stands for a store's objects in a build without the S3 client (the `client` feature
//! off): a source that cannot exist. Code that names one compiles, and never runs: no root
//! is ever made an object source there (the binary refuses `s3://` roots first).

use std::ops::ControlFlow;

use crossbeam_channel::Receiver;
use trawl_scan::{Event, LaneFactory, Listing, Progress, Resolve, ScanConfig, Source};
use trawl_stop::Stop;
use trawl_walk::{Exclusion, FileEntry, WalkItem};

use crate::ObjectUrl;

/// The objects under `s3://` roots; in this build, none can be made.
#[derive(Debug)]
pub enum ObjectSource {}

impl ObjectSource {
    /// The roots, as given.
    pub fn roots(&self) -> &[ObjectUrl] {
        match *self {}
    }
}

impl Listing for ObjectSource {
    fn list(&self, _: &Exclusion, _: &Stop, _: &mut dyn FnMut(WalkItem) -> ControlFlow<()>) {
        match *self {}
    }
}

impl Source for ObjectSource {
    fn resolver(&self) -> Box<dyn Resolve + '_> {
        match *self {}
    }

    fn read(
        &self,
        _: &ScanConfig,
        _: &dyn LaneFactory,
        _: &dyn Progress,
        _: &Stop,
        _: Receiver<FileEntry>,
        _: &mut dyn FnMut(Event),
    ) {
        match *self {}
    }
}
