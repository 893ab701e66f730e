//! A cluster audit's front: the client runs `trawl audit` itself, catalog, messages and outputs
//! included, with a [`Source`] whose walk and reads are the workers' tasks
//! (`trawl_cluster::audit`); a worker's read settings come from the same flags.

use std::ffi::OsString;

use anyhow::bail;
use trawl_catalog::Source;
use trawl_cluster::AuditWorker as Worker;

use crate::commands::audit::run_with;
use crate::flags::hiargs::AuditPlan;
use crate::flags::lowargs::{AuditArgs, Command};
use crate::{Outcome, describe, finish, messages};

/// `trawl audit`'s arguments (without `trawl audit`), checked for a cluster.
fn parse(args: Vec<OsString>) -> anyhow::Result<(AuditArgs, AuditPlan)> {
    let mut argv: Vec<OsString> = vec!["trawl".into(), "audit".into()];
    argv.extend(args);
    let invocation = crate::flags::hiargs::invocation(&argv[1..]);
    let low = crate::flags::parse_low(argv).map_err(|e| anyhow::anyhow!("{}", e.render()))?;
    let Command::Audit(a) = low.command else {
        bail!("not an audit");
    };
    let mut plan = AuditPlan::from_args(&a)?;
    plan.invocation = invocation;
    if plan.cfg.walk.follow_links {
        bail!("--follow: not available in a cluster audit (trawl audit has it)");
    }
    if plan.ocfl {
        bail!("--ocfl: not available in a cluster audit (trawl audit has it)");
    }
    Ok((*a, plan))
}

/// Runs `trawl audit` with these arguments, its walk and reads done by `source`; returns the
/// exit code `trawl audit` would.
pub fn audit(args: Vec<OsString>, source: &mut dyn Source) -> u8 {
    let _run = crate::stop::begin_run();
    let outcome = parse(args).and_then(|(a, plan)| run_with(plan, &a.paths, source));
    finish(match outcome {
        Ok(o) => o,
        Err(e) => {
            messages::error(format_args!("{}", describe(&e)));
            Outcome::Trouble
        }
    })
}

/// Opens the audit's own figures file (`flag`, e.g. `--stats`) for `trawl audit`'s arguments
/// as the audit's outputs are opened: refused where it would replace a file inside a root, is
/// the catalog or one of SQLite's files beside it, or names the file of another output.
pub fn open_run_output(
    args: Vec<OsString>,
    flag: &str,
    path: &std::path::Path,
) -> anyhow::Result<super::RunOutput> {
    let (_, plan) = parse(args)?;
    let mut outputs = plan.output_paths();
    outputs.push((flag, path));
    crate::commands::output::distinct(&outputs)?;
    crate::commands::audit::create_output(&plan, path).map(super::RunOutput)
}

/// Whether `-q` silences the audit's summaries (and the cluster run's own notes), as `trawl
/// audit`'s flags read it; false for arguments that do not parse (the audit said why).
pub fn quiet(args: Vec<OsString>) -> bool {
    parse(args).is_ok_and(|(_, plan)| plan.quiet)
}

/// A worker's side of a cluster audit, from `trawl audit`'s arguments.
pub fn worker(args: Vec<OsString>) -> anyhow::Result<Worker> {
    let (_, plan) = parse(args)?;
    Ok(Worker::new(plan.cfg))
}
