//! Renderers, apart from computing: human text, HTML, and the formats other tools read
//! (Prometheus text, PREMIS), built from the typed report model (`trawl-report`).

// Unsafe code only in tests (to make FIFOs).
#![deny(missing_docs)]
#![cfg_attr(not(test), forbid(unsafe_code))]

mod audit;
mod bag;
mod fclones;
mod html;
mod human;
mod metrics;
mod ncdu;
mod ocfl;
mod premis;
mod reduction;
mod scan;
mod stages;
mod terminal;
mod verify;

// Numbers for people: sizes, rates, durations, counts, ratios.
pub use human::{
    grouped_digits, human_bytes, human_count, human_duration, human_estimate, human_rate,
    human_ratio,
};
// Text made safe for a terminal: control characters escaped.
pub use terminal::{terminal_line, terminal_message, terminal_text};
// A scan's human summary.
pub use reduction::reduction_table;
pub use scan::{Spilled, excluded_line, scan_summary};
pub use stages::stages_table;
// HTML pages: a scan's report, an audit catalog's.
pub use html::{html_catalog, html_scan};
// An audit's human output and its JSON.
pub use audit::{
    AuditSummaryOf, EachAuditEvent, ShownPaths, audit_event_line, audit_summary, write_audit_json,
};
// A verification's lines and summary.
pub use verify::{verify_lines, verify_summary};
// A bag validation's findings and verdict, a bag update's line.
pub use bag::{bag_findings, bag_updated, bag_verdict};
// An OCFL validation's findings and verdicts.
pub use ocfl::{ocfl_object_findings, ocfl_object_verdict, ocfl_root_findings, ocfl_verdict};
// Duplicate groups in fclones' report formats.
pub use fclones::{
    FCLONES_FORMAT_VERSION, FclonesGroups, FclonesHeader, write_fclones_json, write_fclones_text,
};
// An audit's figures for monitoring (Prometheus text); a catalog's fixity record as PREMIS 3.
pub use metrics::metrics_text;
pub use premis::{PremisFormat, PremisWriter, premis_text};
// A scan's listing in ncdu's export format.
pub use ncdu::{NcduFile, NcduWriter};
