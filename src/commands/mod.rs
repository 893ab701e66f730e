//! The commands, one module each, plus the shared output plumbing.

pub(crate) mod audit;
mod bag;
pub(crate) mod catalog;
#[cfg(feature = "s3")]
mod check;
mod duplicates;
mod flv;
mod inject;
mod metrics;
mod ncdu;
mod ocfl;
pub(crate) mod output;
mod policy_run;
mod report;
pub(crate) mod scan;
#[cfg(feature = "serve")]
mod serve;
mod shell;
mod verify;

use crate::Outcome;
use crate::flags::LowArgs;
use crate::flags::lowargs::Command;
use crate::flags::plans;

pub fn run(args: LowArgs) -> anyhow::Result<Outcome> {
    let LowArgs {
        command,
        invocation,
    } = args;
    // The time a catalog records is TRAWL_NOW where a test sets it: refused unless plain.
    trawl_catalog::fixed_now()?;
    match command {
        Command::Scan(a) => {
            let mut plan = crate::flags::hiargs::ScanPlan::from_args(&a)?;
            plan.invocation = invocation;
            scan::run(plan)
        }
        Command::Verify(a) => verify::run(plans::VerifyPlan::from_args(&a)?),
        #[cfg(feature = "s3")]
        Command::Check(a) => check::run(&a),
        #[cfg(not(feature = "s3"))]
        Command::Check(a) => Err(crate::flags::stores::without_s3(
            &a.remote.to_string_lossy(),
        )),
        Command::Bag(b) => bag::run(b),
        Command::Ocfl(crate::flags::lowargs::OcflCommand::Validate(a)) => {
            ocfl::validate(plans::OcflPlan::from_args(&a)?)
        }
        Command::Audit(a) => {
            let mut plan = crate::flags::hiargs::AuditPlan::from_args(&a)?;
            plan.invocation = invocation;
            if let Some(o) = plan.objects.clone() {
                audit::objects(plan, &a.paths, &o)
            } else if plan.ocfl {
                audit::run_with(plan, &a.paths, &mut trawl_ocfl::OcflSource::new())
            } else {
                audit::run(plan, &a.paths)
            }
        }
        Command::Catalog(c) => catalog::run(c),
        Command::Completions(a) => shell::completions(a),
        Command::Man(a) => shell::man(a),
        Command::Report(a) => report::run(a),
        Command::Flv(crate::flags::lowargs::FlvCommand::Index(a)) => {
            flv::index(plans::FlvIndexPlan::from_args(&a)?)
        }
        Command::Flv(crate::flags::lowargs::FlvCommand::Inject(a)) => {
            inject::run(plans::InjectPlan::from_args(&a))
        }
        #[cfg(feature = "serve")]
        Command::Serve(a) => serve::run(plans::ServePlan::from_args(&a)?),
        #[cfg(not(feature = "serve"))]
        Command::Serve(_) => anyhow::bail!(
            "serve: this trawl was built without the `serve` feature (cargo build --features serve)"
        ),
    }
}
