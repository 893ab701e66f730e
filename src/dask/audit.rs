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
    parse_for(args, false)
}

/// The same, on a worker (`worker`): the notice is the client's, so a worker neither reads
/// the mail server's settings (its environment need not have them) nor sends anything.
fn parse_for(args: Vec<OsString>, worker: bool) -> anyhow::Result<(AuditArgs, AuditPlan)> {
    let mut argv: Vec<OsString> = vec!["trawl".into(), "audit".into()];
    argv.extend(args);
    let invocation = crate::flags::hiargs::invocation(&argv[1..]);
    let low = crate::flags::parse_low(argv).map_err(|e| anyhow::anyhow!("{}", e.render()))?;
    let Command::Audit(mut a) = low.command else {
        bail!("not an audit");
    };
    if worker {
        a.notify = Default::default();
    }
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
    let (_, plan) = parse_for(args, true)?;
    Ok(Worker::new(plan.cfg))
}

#[cfg(test)]
mod tests {
    /// A worker takes the client's notice flags without the mail server's settings (which
    /// only the client has) and without the `notify` feature.
    #[test]
    fn a_worker_leaves_the_notice_to_the_client() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().as_os_str().to_owned();
        let cat = d.path().join("cat.db").into_os_string();
        let mail = ["--notify-mail", "ops@example.org", "--notify", "always"];
        let mut args = vec![root, "-c".into(), cat];
        args.extend(mail.iter().map(Into::into));
        assert!(super::worker(args.clone()).is_ok());
        if std::env::var_os("TRAWL_SMTP_URL").is_none() {
            assert!(
                super::parse(args).is_err(),
                "the client checks the settings"
            );
        }
    }
}
