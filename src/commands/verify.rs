//! `trawl verify`: checks files against a manifest, like `sha256sum -c` and `hashdeep -a -k`.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;

use trawl_engine::{VerifyNotice as Notice, VerifyOutcome};
use trawl_report::{VerifyJson, VerifyReport};

use super::output::{Output, write_json};
use crate::flags::plans::VerifyPlan;
use crate::{Outcome, messages};

/// Problems with a manifest's lines shown one by one; past them, a count.
const SHOWN_PROBLEMS: u64 = 5;

pub fn run(plan: VerifyPlan) -> anyhow::Result<Outcome> {
    let opts = &plan.opts;
    let json = plan
        .json
        .as_deref()
        .map(|p| Output::create_apart(p, &[&opts.manifest]))
        .transpose()?;
    let bar = crate::progress::Bar::new(plan.quiet);
    let mut problems = 0u64;
    let outcome = trawl_engine::verify(opts, &bar, &crate::stop::current(), &mut |n| {
        say(opts, &mut problems, n)
    });
    drop(bar);
    let report = match outcome? {
        VerifyOutcome::Finished(r) => r,
        VerifyOutcome::Stopped(_) => return Ok(Outcome::Interrupted),
    };
    let troubled = say_manifest(&plan, &report, problems);
    write_results(&plan, &report, json)?;
    Ok(verdict(&plan, &report, troubled))
}

/// Says what the engine reports as it goes. A file that is no manifest at all (a JSON report,
/// a tarball) has a problem on every line: the first few are shown, the rest counted in
/// `problems` (sha256sum says it once). A line that is no checksum line is a warning, as with
/// `sha256sum -c`, unless --strict.
fn say(opts: &trawl_engine::VerifyOptions, problems: &mut u64, n: Notice) {
    match n {
        Notice::Manifest(p) => {
            *problems += 1;
            if *problems <= SHOWN_PROBLEMS {
                if p.is_malformed() && !opts.strict {
                    messages::warning(format_args!("{p}"));
                } else {
                    messages::error(format_args!("{p}"));
                }
            }
        }
        Notice::Failed(e) => messages::error(format_args!("{e}")),
        Notice::AlgorithmFound { assumed, found } => messages::warning(format_args!(
            "{}: digests of {} hex digits are {found}, not {assumed}: the first files match {found}; checking with it (-d {found} says so)",
            opts.manifest.display(),
            found.hex_len()
        )),
        Notice::AlgorithmUnsettled {
            assumed,
            read,
            matched,
        } => messages::warning(format_args!(
            "{}: digests of {} hex digits fit {}; {}: files that do not match {assumed} are NOT VERIFIED (-d names the algorithm)",
            opts.manifest.display(),
            assumed.hex_len(),
            list(&trawl_manifest::same_length(assumed.hex_len())),
            match &matched[..] {
                [] => format!("none of the {read} files read first matches any of them"),
                _ => format!(
                    "the files read first match {}: the manifest mixes them",
                    list(&matched)
                ),
            }
        )),
    }
}

/// Says what was wrong with the manifest's lines beyond those shown (`problems` in all);
/// whether that is trouble: lines that name a file refused, and with --strict lines that are
/// no checksum lines, are errors; lines that are no checksum lines otherwise only warned about.
fn say_manifest(plan: &VerifyPlan, report: &VerifyReport, problems: u64) -> bool {
    let opts = &plan.opts;
    let refused = report.manifest_problems - report.malformed_lines;
    let malformed_count = report.malformed_lines > 0 && (opts.strict || report.listed() == 0);
    if problems > SHOWN_PROBLEMS {
        let more = format_args!(
            "{}: {} more lines that are not checksum lines",
            opts.manifest.display(),
            problems - SHOWN_PROBLEMS
        );
        if refused > 0 || malformed_count {
            messages::error(more);
        } else {
            messages::warning(more);
        }
    }
    if problems > 0 && report.listed() == 0 {
        messages::error(format_args!(
            "{}: no properly formatted checksum lines found: is it a manifest (sha256sum, BSD or hashdeep format)?",
            opts.manifest.display()
        ));
    }
    refused > 0 || malformed_count
}

/// Writes the report: its lines on stdout (unless the JSON goes there), and the JSON.
fn write_results(
    plan: &VerifyPlan,
    report: &VerifyReport,
    json: Option<Output>,
) -> anyhow::Result<()> {
    let opts = &plan.opts;
    let to_stdout = !json.as_ref().is_some_and(Output::is_stdout);
    if to_stdout {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        let failures_only = plan.failures_only || plan.quiet;
        trawl_printer::verify_lines(&mut out, report, failures_only)?;
        out.flush()?;
    }
    if let Some(mut j) = json {
        let doc = VerifyJson {
            schema_version: trawl_report::SCHEMA_VERSION,
            trawl_version: env!("CARGO_PKG_VERSION"),
            manifest: opts.manifest.as_os_str().as_bytes().to_vec(),
            root: opts.root.as_os_str().as_bytes().to_vec(),
            totals: report.totals(),
            entries: &report.entries,
            not_listed: &report.not_listed,
        };
        write_json(&mut j, &doc)?;
        j.commit()?;
    }
    Ok(())
}

/// Says the summary and decides the outcome; `troubled`: the manifest's lines were trouble.
fn verdict(plan: &VerifyPlan, report: &VerifyReport, troubled: bool) -> Outcome {
    let opts = &plan.opts;
    let c = report.counts();
    let different = c.failed + c.missing + report.not_listed.len() as u64;
    let nothing_verified = opts.ignore_missing && report.listed() == 0;
    if nothing_verified {
        messages::error(format_args!(
            "{}: no file was verified (every listed file is missing)",
            opts.manifest.display()
        ));
    }
    if !plan.root_given && c.missing > 0 && c.missing == report.listed() {
        messages::error(format_args!("{}", root_hint(&opts.manifest, report)));
    }
    if different + c.unreadable + c.unverified > 0 || !plan.quiet {
        messages::error(format_args!("{}", trawl_printer::verify_summary(report)));
    }
    if c.unreadable > 0 || troubled {
        Outcome::Trouble
    } else if different > 0 || nothing_verified {
        Outcome::Difference
    } else if c.unverified > 0 {
        Outcome::Unchecked
    } else {
        Outcome::Ok
    }
}

/// Algorithms' names, `a, b and c`.
fn list(algs: &[trawl_digest::Algorithm]) -> String {
    let names: Vec<&str> = algs.iter().map(|a| a.name()).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

/// Every listed file missing, no `--root` given: most likely the manifest was made elsewhere.
/// Names in a manifest are relative to the directory it was made in; when the first one is
/// found beside the manifest, that directory is named.
fn root_hint(manifest: &std::path::Path, report: &trawl_report::VerifyReport) -> String {
    // The first entry's name (entries that cannot be read back give no hint).
    let first = match report
        .entries
        .try_for_each(|e| std::ops::ControlFlow::Break(e.name.clone()))
    {
        Ok(std::ops::ControlFlow::Break(name)) => Some(name),
        _ => None,
    };
    let beside = manifest.parent().map(|p| {
        if p.as_os_str().is_empty() {
            std::path::Path::new(".")
        } else {
            p
        }
    });
    let found = match (&first, beside) {
        (Some(name), Some(dir)) if dir != std::path::Path::new(".") => {
            let name = std::path::Path::new(std::ffi::OsStr::from_bytes(name));
            dir.join(name).exists().then_some(dir)
        }
        _ => None,
    };
    match found {
        Some(dir) => format!(
            "every listed file is missing here, and they are beside the manifest: run with --root {} (names in a manifest are relative to the directory it was made in)",
            trawl_printer::terminal_line(&dir.display().to_string())
        ),
        None => "every listed file is missing: names in a manifest are relative to the directory it was made in; run there, or name it with --root DIR".to_string(),
    }
}
