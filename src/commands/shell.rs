//! `trawl completions SHELL` and `trawl man DIR`: shell integration generated from the same
//! flags the command parses (clap_complete, clap_mangen), so they never disagree with `--help`.

use anyhow::Context;
use clap::CommandFactory;

use crate::Outcome;
use crate::flags::LowArgs;
use crate::flags::lowargs::{CompletionsArgs, ManArgs};

pub fn completions(a: CompletionsArgs) -> anyhow::Result<Outcome> {
    let mut cmd = LowArgs::command();
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "trawl", &mut out);
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&out)?;
    stdout.flush()?;
    Ok(Outcome::Ok)
}

/// One page per command and subcommand: `trawl.1`, `trawl-scan.1`, `trawl-bag-create.1`, ...
pub fn man(a: ManArgs) -> anyhow::Result<Outcome> {
    std::fs::create_dir_all(&a.dir)
        .with_context(|| format!("{}: cannot create", a.dir.display()))?;
    let cmd = LowArgs::command();
    let mut written = 0;
    write_pages(&cmd, "trawl", &a.dir, &mut written)?;
    crate::messages::to_stdout(&format!(
        "wrote {written} manual pages into {}\n",
        trawl_printer::terminal::line(&a.dir.display().to_string())
    ))?;
    Ok(Outcome::Ok)
}

fn write_pages(
    cmd: &clap::Command,
    name: &str,
    dir: &std::path::Path,
    written: &mut usize,
) -> anyhow::Result<()> {
    let page = cmd
        .clone()
        .display_name(name.to_string())
        .bin_name(name.replace("-", " "));
    let mut buf = Vec::new();
    clap_mangen::Man::new(page).render(&mut buf)?;
    let path = dir.join(format!("{name}.1"));
    let mut out = trawl_atomic::AtomicFile::create(&path)
        .with_context(|| format!("{}: cannot create", path.display()))?;
    use std::io::Write;
    out.write_all(&buf)
        .with_context(|| format!("{}: cannot write", path.display()))?;
    out.commit()
        .with_context(|| format!("{}: cannot write", path.display()))?;
    *written += 1;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}
