//! The scan as one call, with every lane the workspace has: the layer the `trawl` binary and
//! the Python bindings both stand on. It assembles the lanes (digests from `trawl-scan`, data
//! reduction from `trawl-reduce`, the FLV index from `trawl-media`), runs the engine, folds the
//! results into the typed report of `trawl-report`, and says how each file is named in a
//! manifest and where its keyframe index goes; and verification against a manifest. It writes
//! nothing: rendering is the caller's.
//!
//! The face: [`Scan`] (made of [`ScanOptions`]) runs to a [`ScanOutcome`], telling the caller
//! each file as it finishes ([`Notice`]); its [`ScanResult`] holds the report, the [`Records`]
//! and the [`Duplicates`]. [`verify`] checks a tree against manifest entries ([`VerifyOptions`]).
//! Beside them, what the cluster and the renderers share with a scan: how files are named
//! ([`manifest_name`], [`media_index_name`]), the comparing digest, the search for equal
//! directories, the report's empty shape, and where a scan's CPU went ([`stages_report`]).
#![deny(missing_docs)]

mod dupdirs;
mod duplicates;
mod lanes;
mod memory;
mod names;
mod options;
mod records;
mod scan;
mod stages;
mod verify;

pub use dupdirs::find as duplicate_directories;
pub use duplicates::{Duplicates, comparing_digest};
pub use memory::peak_anon;
pub use names::{directory_root, manifest_name, media_index_name};
pub use options::{OptionsError, RECORD_MEMORY, ScanOptions};
pub use records::{RecordSink, Records, StoredFile};
pub use scan::{
    Notice, Scan, ScanOutcome, ScanResult, ScanRunError, empty_report, excluded_report, file_json,
};
pub use stages::stages_report;
pub use verify::{
    Notice as VerifyNotice, VERIFY_MEMORY, VerifyError, VerifyOptions, VerifyOutcome, verify,
};

/// Peak resident set size of this process so far (its own address space's, from /proc).
pub fn peak_rss() -> Option<u64> {
    // VmHWM is this address space's own peak. getrusage's ru_maxrss is not: Linux folds the
    // peak of the image an exec replaced into it, so a trawl started by a large process (a test
    // harness, a Python session) would report its parent's memory as its own.
    if let Ok(status) = std::fs::read_to_string("/proc/self/status")
        && let Some(kib) = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    {
        return Some(kib * 1024);
    }
    // SAFETY: an all-zero `rusage` is a valid value of that plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes only into the struct we own and pass by pointer.
    let ok = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } == 0;
    ok.then(|| ru.ru_maxrss as u64 * 1024)
}
