//! `trawl ocfl validate`: OCFL storage roots and objects.

use crate::flags::plans::OcflPlan;
use crate::{Outcome, messages};

/// One record of `--json`'s lines.
#[derive(serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Record<'a> {
    Object(&'a trawl_report::ocfl::ObjectReport),
    Summary(&'a trawl_report::ocfl::OcflSummary),
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
    for path in &plan.paths {
        let bar = crate::progress::Bar::new(plan.quiet || plan.json);
        let mut failed: Option<anyhow::Error> = None;
        let r = trawl_ocfl::validate(path, &plan.cfg, &bar, &stop, &mut |o| {
            if failed.is_some() {
                return;
            }
            let shown = if plan.json {
                json_line(&Record::Object(o))
            } else {
                for (is_error, text) in trawl_printer::ocfl::findings(o, warnings) {
                    if is_error {
                        messages::error(format_args!("{text}"));
                    } else {
                        messages::warning(format_args!("{text}"));
                    }
                }
                match trawl_printer::ocfl::object_verdict(o) {
                    // An object validated by itself has its verdict in the path's line.
                    Some(_) if o.path == trawl_report::JsonPath::new(path) => Ok(()),
                    Some(v) => {
                        messages::to_stdout(&format!("{}\n", trawl_printer::terminal::text(&v)))
                    }
                    None => Ok(()),
                }
            };
            if let Err(e) = shown {
                failed = Some(e);
                stop.request(trawl_stop::Reason::Failed);
            }
        });
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
        if plan.json {
            json_line(&Record::Summary(&s))?;
        } else {
            for (is_error, text) in trawl_printer::ocfl::root_findings(&s, warnings) {
                if is_error {
                    messages::error(format_args!("{text}"));
                } else {
                    messages::warning(format_args!("{text}"));
                }
            }
            if !plan.quiet || !s.is_valid() {
                let v = trawl_printer::ocfl::verdict(&s);
                messages::to_stdout(&format!("{}\n", trawl_printer::terminal::text(&v)))?;
            }
        }
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
