//! What `trawl audit --policy` makes of an audit: the catalog's policy read, the run left
//! undone outside its window (or while another audit holds the catalog), the budget and age
//! filter set from it (flags given on the command line win), and what it left due said.
//!
//! With a budget the run reads the due files first (they are the least recently verified),
//! then goes on ahead of time, oldest verification first, while the budget lasts: so a
//! collection registered in one night falls due a little each night rather than all at once.
//! Without one it reads the due files alone (`--older-than` the policy's period).

use std::time::Duration;

use anyhow::bail;
use trawl_catalog::{AuditOptions, AuditReport, Catalog, CatalogError, Policy, now_secs};

use crate::flags::hiargs::AuditPlan;
use crate::flags::policy::show_duration;
use crate::messages;

/// Refuses what a policy audit cannot be: one that reads no contents.
pub(crate) fn check(plan: &AuditPlan) -> anyhow::Result<()> {
    if plan.policy && (plan.metadata_only || plan.no_download) {
        bail!(
            "--policy reads the files that are due: --metadata-only and --no-download read no contents"
        );
    }
    Ok(())
}

/// Whether a policy audit that could not open its catalog because another audit holds it
/// ends here, said (exit 0: the audit at work does what is due).
pub(crate) fn in_use(plan: &AuditPlan, e: &CatalogError) -> bool {
    if !plan.policy || !matches!(e, CatalogError::InUse { .. }) {
        return false;
    }
    messages::warning(format_args!(
        "{e}; this policy run reads nothing and leaves what is due to it"
    ));
    true
}

/// Sets `opts` as the catalog's policy says, and returns the policy; None where the run does
/// not start (outside the policy's window: said unless quiet).
pub(crate) fn apply(
    plan: &AuditPlan,
    cat: &Catalog,
    opts: &mut AuditOptions,
) -> anyhow::Result<Option<Policy>> {
    let policy = cat.policy()?.ok_or_else(|| CatalogError::NoPolicy {
        path: plan.catalog.clone(),
    })?;
    let now = now_secs();
    if let Some(w) = policy.window
        && !w.holds(now)
    {
        if !plan.quiet {
            let m = trawl_catalog::local_minute(now);
            out(&format!(
                "{}: outside the policy's window {w} (local time; it is {:02}:{:02}): nothing read\n",
                plan.catalog.display(),
                m / 60,
                m % 60
            ));
        }
        return Ok(None);
    }
    opts.max_bytes = plan.max_bytes.or(policy.max_bytes);
    opts.max_time = plan.max_time.or(policy.max_time);
    let budget = opts.max_bytes.is_some() || opts.max_time.is_some();
    opts.older_than = plan.older_than.or((!budget).then_some(policy.every));
    opts.invocation = format!("{} [{}]", opts.invocation, describe(opts, &policy));
    Ok(Some(policy))
}

/// Writes `text` to stdout; a reader gone loses it, not the run.
fn out(text: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes()).and_then(|()| o.flush());
}

/// The policy as this run applies it, recorded with the run's command line.
fn describe(opts: &AuditOptions, p: &Policy) -> String {
    let mut s = format!("policy: every {}", show_duration(p.every));
    if let Some(b) = opts.max_bytes {
        s.push_str(&format!(", max-bytes {b}"));
    }
    if let Some(t) = opts.max_time {
        s.push_str(&format!(", max-time {}", show_duration(t)));
    }
    if let Some(a) = opts.older_than {
        s.push_str(&format!(", older-than {}", show_duration(a)));
    }
    s
}

/// Says what the run left due for the next (unless quiet), and warns, quiet or not, where
/// files are still due after a run whose budget ran out: the policy is falling behind.
pub(crate) fn left(
    plan: &AuditPlan,
    cat: &Catalog,
    every: Duration,
    report: &AuditReport,
    to_stderr: bool,
) -> anyhow::Result<()> {
    let due = cat.due_totals(now_secs(), every)?;
    let what = format!(
        "{} files ({})",
        due.files,
        trawl_printer::human_bytes(due.bytes)
    );
    if !plan.quiet {
        let line = match due.files {
            0 => format!(
                "policy (every {}): nothing left due\n",
                show_duration(every)
            ),
            _ => format!(
                "policy (every {}): left for the next run: {what} due\n",
                show_duration(every)
            ),
        };
        match to_stderr {
            true => messages::to_stderr(&line),
            false => out(&line),
        }
    }
    if due.files > 0 && report.budget_spent {
        messages::warning(format_args!(
            "{}: {what} still due after this run (its budget ran out first): raise the policy's --max-bytes or --max-time, or run more often",
            plan.catalog.display()
        ));
    }
    if due.files > 0 {
        let unread = roots_not_given(plan, cat)?;
        if !unread.is_empty() {
            messages::warning(format_args!(
                "{}: {what} due, and this run was not given the catalog's {}: their files fall due and no run of this command reads them (give every root to the policy audit)",
                plan.catalog.display(),
                unread.join(", ")
            ));
        }
    }
    Ok(())
}

/// The catalog's roots that no root of this run reaches (a root given reaches a root
/// registered inside it, and one inside a registered root is audited as that root), as shown:
/// files under them are never read by this command, however often it runs.
fn roots_not_given(plan: &AuditPlan, cat: &Catalog) -> anyhow::Result<Vec<String>> {
    let given: Vec<std::path::PathBuf> = plan
        .cfg
        .roots
        .iter()
        .map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| r.clone()))
        .collect();
    Ok(cat
        .roots()?
        .into_iter()
        .filter(|(_, root)| {
            !given
                .iter()
                .any(|g| root.starts_with(g) || g.starts_with(root))
        })
        .map(|(_, root)| format!("root {}", root.display()))
        .collect())
}
