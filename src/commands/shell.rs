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
    let shown = a.dir.display().to_string();
    let shown = trawl_printer::terminal_line(&shown);
    crate::messages::to_stdout(&format!(
        "wrote {written} manual pages into {shown}; {}\n",
        where_man_looks(&a.dir, &shown)
    ))?;
    Ok(Outcome::Ok)
}

/// Whether `man trawl` finds pages written into `dir`, and if not, how to make it: man looks in
/// the `man1` folders of the directories on its path (`manpath`, which `MANPATH` sets).
fn where_man_looks(dir: &std::path::Path, shown: &str) -> String {
    let read_one = format!("read one now with `man -l {shown}/trawl.1`");
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let root = match (dir.file_name(), dir.parent()) {
        (Some(n), Some(p)) if n == "man1" => p.to_path_buf(),
        _ => {
            return format!(
                "man looks for them in a folder named man1 (give one, e.g. \
                 ~/.local/share/man/man1), or {read_one}"
            );
        }
    };
    let root_shown = root.display().to_string();
    let root_shown = trawl_printer::terminal_line(&root_shown);
    let path = match man_path() {
        Some(p) => p,
        None => {
            return format!(
                "man finds them if {root_shown} is on its path (`manpath` shows it), or {read_one}"
            );
        }
    };
    let on_path = path
        .split(':')
        .filter(|p| !p.is_empty())
        .any(|p| std::fs::canonicalize(p).is_ok_and(|p| p == root));
    if on_path {
        "`man trawl` finds them".to_string()
    } else {
        format!(
            "man does not look there (its path: {}): add `export MANPATH=\"{root_shown}:$(manpath)\"` \
             to your shell's profile, or {read_one}",
            trawl_printer::terminal_line(&path)
        )
    }
}

/// man's search path: what `manpath` prints (it reads `MANPATH` and man's configuration), or
/// `MANPATH` itself where `manpath` is not installed (an empty part stands for man's defaults,
/// which are then not known).
fn man_path() -> Option<String> {
    let out = std::process::Command::new("manpath")
        .arg("-q")
        .stderr(std::process::Stdio::null())
        .output();
    if let Ok(o) = out
        && o.status.success()
    {
        return Some(String::from_utf8_lossy(&o.stdout).trim().to_string());
    }
    std::env::var("MANPATH")
        .ok()
        .filter(|p| !p.is_empty() && !p.starts_with(':') && !p.ends_with(':') && !p.contains("::"))
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
    let mut out = trawl_atomic::AtomicFile::create_until(&path, &crate::stop::current())
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
