//! `trawl bag`: BagIt create, validate, update, recover.

use anyhow::bail;
use trawl_bag::{BagOutcome, CreateOptions, Created};
use trawl_report::BagReport as Report;

use crate::flags::lowargs::BagCommand;
use crate::flags::plans::{BagCheckPlan, BagCreatePlan};
use crate::{Outcome, messages};

fn print_report(dir: &std::path::Path, r: &Report, quiet: bool) -> anyhow::Result<Outcome> {
    let dir = dir.display().to_string();
    for (is_error, text) in trawl_printer::bag_findings(&dir, r) {
        if is_error {
            messages::error(format_args!("{text}"));
        } else {
            messages::warning(format_args!("{text}"));
        }
    }
    let valid = r.is_valid();
    if !valid || !quiet {
        let verdict = trawl_printer::bag_verdict(&dir, r);
        messages::to_stdout(&format!("{}\n", trawl_printer::terminal_text(&verdict)))?;
    }
    if r.is_unchecked() {
        return Ok(Outcome::Unchecked);
    }
    Ok(match (valid, r.unreadable > 0) {
        (true, _) => Outcome::Ok,
        (false, true) => Outcome::Trouble,
        (false, false) => Outcome::Difference,
    })
}

pub fn run(cmd: BagCommand) -> anyhow::Result<Outcome> {
    match cmd {
        BagCommand::Create(a) => create(BagCreatePlan::from_args(&a)?),
        BagCommand::Validate(a) => validate(BagCheckPlan::validate(&a)?),
        BagCommand::Update(a) => update(BagCheckPlan::update(&a)?),
        BagCommand::Recover(a) => {
            crate::flags::plans::refuse_store(&a.dir, "recover")?;
            recover(a)
        }
    }
}

/// `bag create`.
fn create(a: BagCreatePlan) -> anyhow::Result<Outcome> {
    let BagCreatePlan {
        dir,
        algorithms,
        info,
        links,
        out,
        link,
        profile,
        cfg,
        spools,
        quiet,
    } = a;
    for alg in algorithms.iter().filter(|a| !a.is_bagit_standard()) {
        messages::warning(format_args!(
            "{}: {alg} is trawl's own: other BagIt tools (bagit-python) will not check manifest-{}.txt",
            dir.display(),
            alg.bagit_name()
        ));
    }
    let bar = crate::progress::Bar::new(quiet);
    let opts = CreateOptions {
        links,
        algorithms,
        info,
        out: out.as_deref(),
        link,
        spools,
        profile: profile.as_ref(),
    };
    let res = trawl_bag::create(&dir, &opts, &cfg, &bar, &crate::stop::current());
    drop(bar);
    let c = match res? {
        BagOutcome::Finished(c) => c,
        BagOutcome::Stopped(_) => return Ok(Outcome::Interrupted),
    };
    for w in &c.warnings {
        messages::warning(format_args!("{}: {w}", dir.display()));
    }
    if !quiet {
        let target = out.as_deref().unwrap_or(&dir);
        let line = bagged(&c, target, out.is_some(), link);
        messages::to_stdout(&format!("{line}\n"))?;
    }
    Ok(Outcome::Ok)
}

/// The line `bag create` ends with: what was bagged into `target`, copied (`copied`: built at
/// --out) or hard-linked (`link`), and what was left out.
fn bagged(c: &Created, target: &std::path::Path, copied: bool, link: bool) -> String {
    let mut line = format!(
        "bagged {} files ({} bytes) into {}",
        c.files,
        c.bytes,
        trawl_printer::terminal_line(&target.display().to_string())
    );
    if copied {
        line += &format!(
            " ({} copied and read back, {} of them sharing blocks with the source (reflink)",
            c.copied, c.reflinked
        );
        if link {
            line += &format!(
                "; {} hard-linked (--link): those are the source's files, and an edit of one changes the bag",
                c.linked
            );
        }
        line += ")";
    }
    let x = c.excluded;
    if x.directories + x.files + x.other > 0 {
        line += &format!(
            "; left out by --exclude, not in the bag: {} directories, {} files ({} bytes), {} other entries",
            x.directories, x.files, x.bytes, x.other
        );
    }
    if c.links_left_out > 0 {
        line += &format!(
            "; {} symbolic links left out (--links skip), listed in {}",
            c.links_left_out,
            trawl_printer::terminal_line(
                &target.join(trawl_bag::LINKS_LEFT_OUT).display().to_string()
            )
        );
    }
    line
}

/// `bag validate`.
fn validate(a: BagCheckPlan) -> anyhow::Result<Outcome> {
    // A serialized bag: held to the profile's serialization rules, its content not read.
    if let Some(p) = &a.profile
        && a.dir.is_file()
    {
        let (kind, departures) = trawl_bag::check_serialized(&a.dir, p)?;
        let dir = a.dir.display();
        for f in &departures {
            messages::error(format_args!("{dir}: {f}"));
        }
        messages::to_stdout(&format!(
            "{dir} is a serialized bag ({kind}): {}; its content was NOT CHECKED (unpack it and validate the directory)\n",
            if departures.is_empty() {
                "the profile accepts its serialization".to_string()
            } else {
                format!(
                    "{} from the profile",
                    trawl_printer::human_count(departures.len() as u64, "departure", "departures")
                )
            }
        ))?;
        return Ok(if departures.is_empty() {
            Outcome::Unchecked
        } else {
            Outcome::Difference
        });
    }
    if let Some(objects) = &a.objects {
        return validate_objects(&a, objects);
    }
    let bar = crate::progress::Bar::new(a.quiet);
    let r = trawl_bag::validate(
        &a.dir,
        a.fast,
        &a.cfg,
        &bar,
        &crate::stop::current(),
        &a.spools,
    );
    drop(bar);
    let mut r = r?;
    if let Some(p) = &a.profile {
        let held = trawl_bag::hold_to_profile(&a.dir, p)?;
        r.errors.extend(held.departures);
        r.warnings.extend(held.warnings);
        r.profile = Some(p.identifier());
    }
    print_report(&a.dir, &r, a.quiet)
}

/// `bag validate s3://BUCKET/PREFIX`: the prefix listed once, then validated as the same bag
/// on disk is.
#[cfg(feature = "s3")]
fn validate_objects(a: &BagCheckPlan, objects: &trawl_s3::ObjectSource) -> anyhow::Result<Outcome> {
    let stop = crate::stop::current();
    let url = objects.roots()[0].clone();
    let tree = trawl_s3::BagObjects::open(objects.store_arc(), url, &a.spools, &stop)?;
    if stop.is_stopping() {
        // The listing was cut short: what it left out would be called missing.
        return Ok(Outcome::Interrupted);
    }
    let bar = crate::progress::Bar::new(a.quiet);
    let r = trawl_bag::validate_tree(&tree, a.fast, &a.cfg, &bar, &stop, &a.spools);
    drop(bar);
    print_report(&a.dir, &r?, a.quiet)
}

/// No object source exists in a build without the S3 client.
#[cfg(not(feature = "s3"))]
fn validate_objects(_: &BagCheckPlan, objects: &trawl_s3::ObjectSource) -> anyhow::Result<Outcome> {
    match *objects {}
}

/// `bag update`.
fn update(a: BagCheckPlan) -> anyhow::Result<Outcome> {
    let bar = crate::progress::Bar::new(a.quiet);
    let r = trawl_bag::update(
        &a.dir,
        &a.add,
        &a.edits,
        &a.cfg,
        &bar,
        &crate::stop::current(),
        &a.spools,
    );
    drop(bar);
    let u = match r? {
        BagOutcome::Finished(u) => u,
        BagOutcome::Stopped(_) => return Ok(Outcome::Interrupted),
    };
    let r = &u.report;
    for w in &r.warnings {
        messages::warning(format_args!("{}: {w}", a.dir.display()));
    }
    if !r.errors.is_empty() {
        print_report(&a.dir, r, a.quiet)?;
        bail!(
            "{}: not updated: the bag does not validate",
            a.dir.display()
        );
    }
    if !a.quiet {
        let names =
            |v: &[trawl_digest::Algorithm]| -> Vec<&str> { v.iter().map(|a| a.name()).collect() };
        let dir = a.dir.display().to_string();
        let line =
            trawl_printer::bag_updated(&dir, &names(&u.added), &names(&u.present), u.info_edited);
        messages::to_stdout(&format!("{}\n", trawl_printer::terminal_text(&line)))?;
    }
    Ok(Outcome::Ok)
}

/// `bag recover`.
fn recover(a: crate::flags::lowargs::BagRecoverArgs) -> anyhow::Result<Outcome> {
    let r = trawl_bag::recover(&a.dir)?;
    let removed = if r.removed.is_empty() {
        String::new()
    } else {
        format!(
            ", removed {} files it had written ({})",
            r.removed.len(),
            r.removed.join(", ")
        )
    };
    let line = format!(
        "{}: moved {} entries back{removed}; the directory is as it was before `bag create`",
        a.dir.display(),
        r.moved
    );
    messages::to_stdout(&format!("{}\n", trawl_printer::terminal_line(&line)))?;
    Ok(Outcome::Ok)
}
