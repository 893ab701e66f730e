//! Prefixes audited into a catalog: the catalog's [`Source`] whose walk is the store's listing
//! and whose reads go through the reading service over the store, so that an audit of objects
//! records, judges and reports as one of files on a disk does.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;

use trawl_catalog::{CatalogError, ReadPlan, ReadResult, Source, SourceError, read_plan};
use trawl_scan::Progress;
use trawl_stop::Stop;
use trawl_walk::{WalkItem, WalkOptions};

use crate::{ObjectSource, ObjectUrl, Store};

/// Objects under prefixes, as an audit's source.
pub struct AuditObjects {
    objects: ObjectSource,
}

impl AuditObjects {
    /// The objects under `roots` of `store`.
    pub fn new(store: Arc<Store>, roots: Vec<ObjectUrl>) -> AuditObjects {
        AuditObjects {
            objects: ObjectSource::reading_later(store, roots),
        }
    }

    /// The objects `source` names, for an audit.
    pub fn of(source: &ObjectSource) -> AuditObjects {
        AuditObjects::new(source.store_arc(), source.roots().to_vec())
    }
}

impl Source for AuditObjects {
    fn walk(
        &mut self,
        _roots: &[PathBuf],
        opts: &WalkOptions,
        stop: &Stop,
        item: &mut dyn FnMut(WalkItem) -> ControlFlow<CatalogError>,
    ) -> Result<(), SourceError> {
        let mut broke = None;
        let listed = self
            .objects
            .walk(&opts.excluding, stop, &mut |it| match item(it) {
                ControlFlow::Continue(()) => ControlFlow::Continue(()),
                ControlFlow::Break(e) => {
                    broke = Some(e);
                    ControlFlow::Break(())
                }
            });
        if let Some(e) = broke {
            return Err(e.into());
        }
        // A prefix that cannot be listed fails the audit: without its listing, every object
        // under it would be called missing.
        listed.map_err(|e| SourceError::Failed(e.to_string()))?;
        Ok(())
    }

    fn read(
        &mut self,
        plan: ReadPlan<'_>,
        progress: &dyn Progress,
        stop: &Stop,
        found: &mut dyn FnMut(ReadResult<'_>),
    ) -> Result<(), SourceError> {
        read_plan(&self.objects, plan, progress, stop, found);
        Ok(())
    }
}
