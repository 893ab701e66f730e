//! `trawl verify`: checks files against a manifest, like `sha256sum -c` and `hashdeep -a -k`.

use std::io::Write;
use std::path::PathBuf;

use trawl_engine::verify::{Notice, VerifyOptions, VerifyOutcome};

use crate::flags::hiargs::scan_config;
use crate::flags::lowargs::VerifyArgs;
use crate::stop::STOP;
use crate::{Outcome, messages};

pub fn run(a: VerifyArgs) -> anyhow::Result<Outcome> {
    let root = a.root.clone().unwrap_or_else(|| PathBuf::from("."));
    let opts = VerifyOptions {
        manifest: a.manifest.clone(),
        prefer: match &a.digest {
            Some(d) => trawl_digest::parse_list(d)?,
            None => Vec::new(),
        },
        confine: a.confine || (a.root.is_some() && !a.no_confine),
        strict: a.strict,
        cfg: scan_config(vec![root.clone()], &a.read)?,
        root,
    };
    let bar = crate::progress::Bar::new(a.read.quiet);
    let outcome = trawl_engine::verify(&opts, &bar, &STOP, &mut |n| match n {
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
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    trawl_printer::verify::lines(&mut out, &report, a.failures_only)?;
    out.flush()?;
    drop(out);
    let c = report.counts();
    let different = c.failed + c.missing + report.not_listed.len() as u64;
    if different + c.unreadable > 0 || !a.read.quiet {
        messages::error(format_args!("{}", trawl_printer::verify::summary(&report)));
    }
    Ok(if c.unreadable > 0 || report.manifest_problems > 0 {
        Outcome::Trouble
    } else if different > 0 {
        Outcome::Difference
    } else {
        Outcome::Ok
    })
}
