//! `trawl bag`: BagIt create, validate, update, recover.

use anyhow::{Context, bail};
use trawl_bag::CreateOptions;
use trawl_report::bag::BagReport as Report;

use crate::flags::hiargs::{bag_spools, scan_config};
use crate::flags::lowargs::BagCommand;
use crate::{Outcome, messages};

fn print_report(dir: &std::path::Path, r: &Report, quiet: bool) -> anyhow::Result<Outcome> {
    let dir = dir.display().to_string();
    for (is_error, text) in trawl_printer::bag::findings(&dir, r) {
        if is_error {
            messages::error(format_args!("{text}"));
        } else {
            messages::warning(format_args!("{text}"));
        }
    }
    let valid = r.is_valid();
    if !valid || !quiet {
        let verdict = trawl_printer::bag::verdict(&dir, r);
        messages::to_stdout(&format!("{}\n", trawl_printer::terminal::text(&verdict)))?;
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
        BagCommand::Create(a) => create(a),
        BagCommand::Validate(a) => validate(a),
        BagCommand::Update(a) => update(a),
        BagCommand::Recover(a) => recover(a),
    }
}

/// `bag create`.
fn create(a: crate::flags::lowargs::BagCreateArgs) -> anyhow::Result<Outcome> {
    let algorithms = trawl_digest::parse_list(&a.digest)?;
    for alg in algorithms.iter().filter(|a| !a.is_bagit_standard()) {
        messages::warning(format_args!(
            "{}: {alg} is trawl's own: other BagIt tools (bagit-python) will not check manifest-{}.txt",
            a.dir.display(),
            alg.bagit_name()
        ));
    }
    let mut info = Vec::new();
    for i in &a.info {
        let (k, v) = i
            .split_once(':')
            .with_context(|| format!("--info '{i}': expected LABEL:VALUE"))?;
        if k.trim().is_empty() || k.contains(['\n', '\r']) || v.contains(['\n', '\r']) {
            bail!("--info '{i}': label must be non-empty and neither part may hold a line break");
        }
        info.push((k.trim().to_string(), v.trim().to_string()));
    }
    use crate::flags::lowargs::BagLinks;
    let links = match (a.links, a.read.follow) {
        (None, false) | (Some(BagLinks::Refuse), false) => trawl_bag::Links::Refuse,
        (Some(BagLinks::Skip), false) => trawl_bag::Links::Skip,
        (None, true) | (Some(BagLinks::Follow), _) => trawl_bag::Links::Follow,
        (Some(other), true) => bail!(
            "--follow bags what links point to; --links {} says otherwise: give one",
            if other == BagLinks::Skip {
                "skip"
            } else {
                "refuse"
            }
        ),
    };
    let mut read = a.read.clone();
    read.follow = links == trawl_bag::Links::Follow;
    let cfg = scan_config(vec![a.dir.clone()], &read)?;
    let bar = crate::progress::Bar::new(a.read.quiet);
    let opts = CreateOptions {
        links,
        algorithms,
        info,
        out: a.out.as_deref(),
        copy: a.copy,
        spools: bag_spools(&a.spool)?,
    };
    let res = trawl_bag::create(&a.dir, &opts, &cfg, &bar, &crate::stop::current());
    drop(bar);
    let c = res?;
    if !a.read.quiet {
        let target = a.out.as_deref().unwrap_or(&a.dir);
        let mut line = format!(
            "bagged {} files ({} bytes) into {}",
            c.files,
            c.bytes,
            trawl_printer::terminal::line(&target.display().to_string())
        );
        if a.out.is_some() {
            let how = if a.copy {
                "copied (--copy)"
            } else {
                "hard-linked where possible (--copy to copy)"
            };
            line += &format!(
                " ({} hard links, {} verified copies; {how})",
                c.linked, c.copied
            );
        }
        if c.links_left_out > 0 {
            line += &format!(
                "; {} symbolic links left out (--links skip), listed in {}",
                c.links_left_out,
                trawl_printer::terminal::line(
                    &target.join(trawl_bag::LINKS_LEFT_OUT).display().to_string()
                )
            );
        }
        messages::to_stdout(&format!("{line}\n"))?;
    }
    Ok(Outcome::Ok)
}

/// `bag validate`.
fn validate(a: crate::flags::lowargs::BagValidateArgs) -> anyhow::Result<Outcome> {
    refuse_follow(&a.read, "validate")?;
    let cfg = scan_config(vec![a.dir.clone()], &a.read)?;
    let spools = bag_spools(&a.spool)?;
    let bar = crate::progress::Bar::new(a.read.quiet);
    let r = trawl_bag::validate(&a.dir, a.fast, &cfg, &bar, &crate::stop::current(), &spools);
    drop(bar);
    print_report(&a.dir, &r?, a.read.quiet)
}

/// `bag update`.
fn update(a: crate::flags::lowargs::BagUpdateArgs) -> anyhow::Result<Outcome> {
    refuse_follow(&a.read, "update")?;
    let algs = trawl_digest::parse_list(&a.digest)?;
    let cfg = scan_config(vec![a.dir.clone()], &a.read)?;
    let spools = bag_spools(&a.spool)?;
    let bar = crate::progress::Bar::new(a.read.quiet);
    let r = trawl_bag::update(&a.dir, &algs, &cfg, &bar, &crate::stop::current(), &spools);
    drop(bar);
    let u = r?;
    let r = &u.report;
    for w in &r.warnings {
        messages::warning(format_args!("{}: {w}", a.dir.display()));
    }
    if !r.errors.is_empty() {
        print_report(&a.dir, r, a.read.quiet)?;
        bail!(
            "{}: not updated: the bag does not validate",
            a.dir.display()
        );
    }
    if !a.read.quiet {
        let names =
            |v: &[trawl_digest::Algorithm]| -> Vec<&str> { v.iter().map(|a| a.name()).collect() };
        let dir = a.dir.display().to_string();
        let line = trawl_printer::bag::updated(&dir, &names(&u.added), &names(&u.present));
        messages::to_stdout(&format!("{}\n", trawl_printer::terminal::text(&line)))?;
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
    messages::to_stdout(&format!("{}\n", trawl_printer::terminal::line(&line)))?;
    Ok(Outcome::Ok)
}

/// `-L` means nothing to a bag that is read as it is (a bag holds no links, and its payload is
/// never read through one): refused rather than accepted and ignored.
fn refuse_follow(r: &crate::flags::lowargs::ReadArgs, command: &str) -> anyhow::Result<()> {
    if r.follow {
        bail!(
            "-L/--follow: bag {command} reads a bag as it is and follows no link (a bag holds none; `bag create --out` copies what links point to)"
        );
    }
    Ok(())
}
