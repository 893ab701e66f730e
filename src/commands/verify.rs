//! `trawl verify`: checks files against a manifest, like `sha256sum -c` and `hashdeep -a -k`.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use trawl_engine::verify::{Notice, VerifyOptions, VerifyOutcome};
use trawl_report::verify::VerifyJson;

use super::output::{Output, write_json};
use crate::flags::hiargs::scan_config;
use crate::flags::lowargs::VerifyArgs;
use crate::{Outcome, messages};

pub fn run(a: VerifyArgs) -> anyhow::Result<Outcome> {
    let mut json = a
        .json
        .as_deref()
        .map(|p| Output::create_apart(p, &[&a.manifest]))
        .transpose()?;
    let root = a.root.clone().unwrap_or_else(|| PathBuf::from("."));
    let opts = VerifyOptions {
        manifest: a.manifest.clone(),
        prefer: match &a.digest {
            Some(d) => trawl_digest::parse_list(d)?,
            None => Vec::new(),
        },
        confine: a.confine || (a.root.is_some() && !a.no_confine),
        strict: a.strict,
        ignore_missing: a.ignore_missing,
        cfg: scan_config(vec![root.clone()], &a.read)?,
        root: root.clone(),
        temp_dir: crate::flags::hiargs::check_temp_dir(a.temp_dir.as_deref())?,
        memory: match a.memory.as_deref() {
            Some(m) => crate::flags::hiargs::parse_size(m)? as usize,
            None => trawl_engine::VERIFY_MEMORY,
        },
    };
    let bar = crate::progress::Bar::new(a.read.quiet);
    let outcome = trawl_engine::verify(&opts, &bar, &crate::stop::current(), &mut |n| match n {
        Notice::Manifest(p) => messages::error(format_args!("{p}")),
        Notice::Failed(e) => messages::error(format_args!("{e}")),
        Notice::AlgorithmFound { assumed, found } => messages::warning(format_args!(
            "{}: digests of {} hex digits are {found}, not {assumed}: the first files match {found}; checking with it (-d {found} says so)",
            a.manifest.display(),
            found.hex_len()
        )),
    });
    drop(bar);
    let report = match outcome? {
        VerifyOutcome::Finished(r) => r,
        VerifyOutcome::Stopped(_) => return Ok(Outcome::Interrupted),
    };
    let to_stdout = !json.as_ref().is_some_and(Output::is_stdout);
    if to_stdout {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        let failures_only = a.failures_only || a.read.quiet;
        trawl_printer::verify::lines(&mut out, &report, failures_only)?;
        out.flush()?;
    }
    if let Some(mut j) = json.take() {
        let doc = VerifyJson {
            schema_version: trawl_report::SCHEMA_VERSION,
            trawl_version: env!("CARGO_PKG_VERSION"),
            manifest: a.manifest.as_os_str().as_bytes().to_vec(),
            root: root.as_os_str().as_bytes().to_vec(),
            totals: report.totals(),
            entries: &report.entries,
            not_listed: &report.not_listed,
        };
        write_json(&mut j, &doc)?;
        j.commit()?;
    }
    let c = report.counts();
    let different = c.failed + c.missing + report.not_listed.len() as u64;
    let nothing_verified = a.ignore_missing && report.listed() == 0;
    if nothing_verified {
        messages::error(format_args!(
            "{}: no file was verified (every listed file is missing)",
            a.manifest.display()
        ));
    }
    if different + c.unreadable > 0 || !a.read.quiet {
        messages::error(format_args!("{}", trawl_printer::verify::summary(&report)));
    }
    Ok(if c.unreadable > 0 || report.manifest_problems > 0 {
        Outcome::Trouble
    } else if different > 0 || nothing_verified {
        Outcome::Difference
    } else {
        Outcome::Ok
    })
}
