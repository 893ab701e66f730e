//! `trawl ocfl validate`: OCFL storage roots and objects.

use std::ops::ControlFlow;

use trawl_report::{ObjectReport, OcflSummary};

use crate::flags::plans::OcflPlan;
use crate::{Outcome, messages};

/// One record of `--json`'s lines.
#[derive(serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Record<'a> {
    Object(&'a ObjectReport),
    Summary(&'a OcflSummary),
}

fn json_line(r: &Record<'_>) -> anyhow::Result<()> {
    let mut line = serde_json::to_string(r)?;
    line.push('\n');
    messages::to_stdout(&line)
}

pub fn validate(plan: OcflPlan) -> anyhow::Result<Outcome> {
    let warnings = !plan.no_warnings && !plan.quiet;
    let (mut invalid, mut trouble) = (false, false);
    let stop = crate::stop::current();
    for (i, path) in plan.paths.iter().enumerate() {
        let bar = crate::progress::Bar::new(plan.quiet || plan.json);
        let mut failed: Option<anyhow::Error> = None;
        let mut each = |o: &ObjectReport| match say_object(&plan, path, o, warnings) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                failed = Some(e);
                ControlFlow::Break(())
            }
        };
        let r = match &plan.objects {
            Some(objects) => validate_objects(objects, i, path, &plan, &bar, &stop, &mut each),
            None => trawl_ocfl::validate(path, &plan.cfg, &bar, &stop, &mut each)
                .map_err(|e| e.to_string()),
        };
        drop(bar);
        if let Some(e) = failed {
            return Err(e);
        }
        let s = match r {
            Ok(s) => s,
            Err(e) => {
                messages::error(format_args!("{e}"));
                trouble = true;
                continue;
            }
        };
        invalid |= !s.is_valid();
        trouble |= s.unreadable > 0;
        say_root(&plan, &s, warnings)?;
        if stop.is_stopping() {
            break;
        }
    }
    Ok(if trouble {
        Outcome::Trouble
    } else if invalid {
        Outcome::Difference
    } else {
        Outcome::Ok
    })
}

/// `ocfl validate s3://BUCKET/PREFIX` of path `i` (root `i` of `objects`): its top level
/// listed, then validated as the same tree on disk is, one "directory" listed at a time.
#[cfg(feature = "s3")]
fn validate_objects(
    objects: &trawl_s3::ObjectSource,
    i: usize,
    path: &std::path::Path,
    plan: &OcflPlan,
    bar: &crate::progress::Bar,
    stop: &trawl_stop::Stop,
    each: &mut dyn FnMut(&ObjectReport) -> ControlFlow<()>,
) -> Result<OcflSummary, String> {
    let url = objects.roots()[i].clone();
    let tree =
        trawl_s3::OcflObjects::open(objects.store_arc(), url, path).map_err(|e| e.to_string())?;
    trawl_ocfl::validate_tree(&tree, &plan.cfg, bar, stop, each).map_err(|e| e.to_string())
}

/// No object source exists in a build without the S3 client.
#[cfg(not(feature = "s3"))]
fn validate_objects(
    objects: &trawl_s3::ObjectSource,
    _: usize,
    _: &std::path::Path,
    _: &OcflPlan,
    _: &crate::progress::Bar,
    _: &trawl_stop::Stop,
    _: &mut dyn FnMut(&ObjectReport) -> ControlFlow<()>,
) -> Result<OcflSummary, String> {
    match *objects {}
}

/// Says findings, each an error or a warning.
fn say_findings(findings: impl IntoIterator<Item = (bool, String)>) {
    for (is_error, text) in findings {
        if is_error {
            messages::error(format_args!("{text}"));
        } else {
            messages::warning(format_args!("{text}"));
        }
    }
}

/// Says one object's report `o`, found validating `path`: a JSON line, or its findings and
/// verdict.
fn say_object(
    plan: &OcflPlan,
    path: &std::path::Path,
    o: &ObjectReport,
    warnings: bool,
) -> anyhow::Result<()> {
    if plan.json {
        return json_line(&Record::Object(o));
    }
    say_findings(trawl_printer::ocfl_object_findings(o, warnings));
    match trawl_printer::ocfl_object_verdict(o) {
        // An object validated by itself has its verdict in the path's line.
        Some(_) if o.path == trawl_report::JsonPath::new(path) => Ok(()),
        Some(v) => messages::to_stdout(&format!("{}\n", trawl_printer::terminal_text(&v))),
        None => Ok(()),
    }
}

/// Says a path's summary `s`: a JSON line, or its findings and verdict.
fn say_root(plan: &OcflPlan, s: &OcflSummary, warnings: bool) -> anyhow::Result<()> {
    if plan.json {
        return json_line(&Record::Summary(s));
    }
    say_findings(trawl_printer::ocfl_root_findings(s, warnings));
    if !plan.quiet || !s.is_valid() {
        let v = trawl_printer::ocfl_verdict(s);
        messages::to_stdout(&format!("{}\n", trawl_printer::terminal_text(&v)))?;
    }
    Ok(())
}
