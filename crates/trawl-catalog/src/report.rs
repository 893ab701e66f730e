//! A run and its events in the typed report model (`trawl-report`'s audit schema), and the
//! catalog's files as manifest entries (for `catalog export`).

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use trawl_digest::Algorithm;
use trawl_manifest::{Entry, WriteError};
use trawl_report::{AuditEvent, AuditHead, Digests, JsonPath};

use crate::query::Event;
use crate::run::AuditReport;
use crate::{Catalog, Result, split_digests};

impl AuditReport {
    /// The head of the run's report; `catalog` as the user named it, `peak_rss` measured by the
    /// caller as late as it can.
    pub fn head(&self, catalog: &Path, peak_rss: Option<u64>) -> AuditHead {
        let s = &self.summary;
        AuditHead {
            algorithms: self
                .algorithms
                .iter()
                .map(|a| a.name().to_string())
                .collect(),
            bytes_read: s.bytes_read,
            catalog: JsonPath::new(catalog),
            chain_digest: s.chain_digest.as_ref().map(hex::encode),
            counts: s
                .counts
                .iter()
                .map(|(v, n)| (v.name().to_string(), *n))
                .collect(),
            excluded: self.excluded.clone(),
            files_read: s.files_read,
            mode: s.mode.clone(),
            not_read: s.deferred,
            peak_rss_bytes: peak_rss,
            proves: trawl_report::audit_mode_proves(&s.mode).to_string(),
            roots: self.roots.iter().map(|r| JsonPath::new(r)).collect(),
            run: s.id,
            schema_version: trawl_report::SCHEMA_VERSION,
            seconds: self.seconds,
            status: s.status.clone(),
            trawl_version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

fn digests(algs: &[Algorithm], d: &Option<Vec<u8>>) -> Option<Digests> {
    let d = d.as_ref()?;
    Some(
        split_digests(algs, d)
            .into_iter()
            .map(|(a, v)| (a.name().to_string(), hex::encode(v)))
            .collect(),
    )
}

impl Event {
    /// This event in the report model; `algs` are the catalog's algorithms.
    pub fn to_report(&self, algs: &[Algorithm]) -> AuditEvent {
        let moved = self.other_path.as_ref().map(|p| JsonPath::new(p));
        AuditEvent {
            actual: digests(algs, &self.actual),
            detail: self.detail.clone(),
            expected: digests(algs, &self.expected),
            moved_from: moved.as_ref().map(|j| j.path.clone()),
            moved_from_hex: moved.and_then(|j| j.path_hex),
            path: JsonPath::new(&self.path),
            size: self.size,
            state: self.verdict.name().to_string(),
        }
    }
}

impl Catalog {
    /// Every registered file as a manifest entry, in path order, one at a time (a catalog of
    /// any size is exported without holding it): paths relative to the root with one root, else
    /// absolute. Stops at the first error `f` returns, and returns it.
    pub fn for_each_manifest_entry(
        &self,
        f: &mut dyn FnMut(&Entry) -> std::result::Result<(), WriteError>,
    ) -> Result<std::result::Result<(), WriteError>> {
        let algs = self.algorithms()?;
        let roots = self.roots()?;
        let single = roots.len() == 1;
        let mut failed: std::result::Result<(), WriteError> = Ok(());
        self.for_each_file(&mut |rid, rel, size, d| {
            if failed.is_err() {
                return;
            }
            let mut path = Vec::new();
            if !single && let Some((_, r)) = roots.iter().find(|(i, _)| *i == rid) {
                path.extend_from_slice(r.as_os_str().as_bytes());
                path.push(b'/');
            }
            path.extend_from_slice(rel);
            failed = f(&Entry {
                path,
                size: Some(size),
                digests: split_digests(&algs, d),
                ..Entry::default()
            });
        })?;
        Ok(failed)
    }
}
