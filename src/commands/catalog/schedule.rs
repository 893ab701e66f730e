//! `trawl catalog schedule`: writes a systemd service and timer that run the catalog's policy
//! audit (`trawl audit PATH... -c CATALOG --policy -q`, the running trawl's absolute path), or
//! prints a crontab line that runs the same command. It only writes the two files, each
//! atomically, and says how to enable them: it never calls systemctl.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use trawl_catalog::{Catalog, CatalogError, OpenMode, Policy};

use super::units;
use crate::Outcome;
use crate::flags::lowargs::CatalogScheduleArgs;
use crate::flags::policy::clock_time;

pub fn run(a: CatalogScheduleArgs) -> anyhow::Result<Outcome> {
    let catalog = std::fs::canonicalize(&a.catalog)
        .with_context(|| format!("{}: no such catalog", a.catalog.display()))?;
    let policy = Catalog::open(&catalog, OpenMode::Read)?
        .policy()?
        .ok_or_else(|| CatalogError::NoPolicy {
            path: a.catalog.clone(),
        })?;
    let argv = command(&a, &catalog)?;
    let (hour, minute) = start_time(&a, &policy)?;
    let mut out = std::io::stdout().lock();
    if a.cron {
        writeln!(out, "{}", units::cron_line(hour, minute, &argv)?)?;
        return Ok(Outcome::Ok);
    }
    let on_calendar = match &a.on_calendar {
        Some(s) => {
            let s = units::plain("--on-calendar", s.as_ref())?;
            // No calendar event holds `%` (a specifier) or `\` (which, last on the line,
            // would carry it on into the next setting).
            if s.contains(['%', '\\']) || s.trim().is_empty() {
                bail!(
                    "--on-calendar '{s}': not a calendar event (check one with `systemd-analyze calendar SPEC`)"
                );
            }
            s.trim().to_string()
        }
        None => format!("*-*-* {hour:02}:{minute:02}:00"),
    };
    let name = unit_name(&a)?;
    let dir = match &a.output {
        Some(d) => d.clone(),
        None => default_dir(a.system)?,
    };
    write_units(&dir, &name, &argv, &on_calendar, &catalog)?;
    writeln!(
        out,
        "wrote {name}.service and {name}.timer in {}",
        dir.display()
    )?;
    writeln!(out, "runs: {}", argv.join(" "))?;
    writeln!(out, "when: OnCalendar={on_calendar} (local time)")?;
    say_enable(&mut out, a.system, &name)?;
    Ok(Outcome::Ok)
}

/// The daily start, `--at` or the policy's window's start (else 02:00); a start outside the
/// window is warned of (every run would read nothing).
fn start_time(a: &CatalogScheduleArgs, policy: &Policy) -> anyhow::Result<(u32, u32)> {
    let (hour, minute) = match &a.at {
        Some(s) => clock_time("--at", s)?,
        None => policy.window.map_or((2, 0), |w| w.start()),
    };
    if let Some(w) = policy.window
        && a.on_calendar.is_none()
        && !w.contains(hour * 60 + minute)
    {
        crate::messages::warning(format_args!(
            "{hour:02}:{minute:02} is outside the policy's window {w}: every run would read nothing"
        ));
    }
    Ok((hour, minute))
}

/// How to enable the timer and watch its runs (systemctl is never called here).
fn say_enable(out: &mut impl Write, system: bool, name: &str) -> std::io::Result<()> {
    let (ctl, journal) = match system {
        true => ("systemctl", "journalctl"),
        false => ("systemctl --user", "journalctl --user"),
    };
    writeln!(
        out,
        "enable: {ctl} daemon-reload && {ctl} enable --now {name}.timer"
    )?;
    writeln!(
        out,
        "check: {ctl} list-timers {name}.timer; {journal} -u {name}.service"
    )?;
    if !system {
        writeln!(
            out,
            "note: a user's timers run while the user's manager runs (`loginctl enable-linger` keeps it running)"
        )?;
    }
    Ok(())
}

/// The scheduled command: this trawl's absolute path, `audit`, the roots (absolute), the
/// catalog, `--policy -q`; each argument one a unit and a crontab line can hold.
fn command(a: &CatalogScheduleArgs, catalog: &Path) -> anyhow::Result<Vec<String>> {
    let exe = std::env::current_exe().context("cannot find the running trawl's path")?;
    let mut argv = vec![units::plain("trawl's path", exe.as_os_str())?.to_string()];
    argv.push("audit".into());
    for p in &a.paths {
        let given = p.as_os_str();
        let root = if given.as_encoded_bytes().starts_with(b"s3://") {
            PathBuf::from(given)
        } else {
            let c = std::fs::canonicalize(p).with_context(|| p.display().to_string())?;
            if !c.is_dir() {
                bail!("{}: not a directory (audit takes directories)", p.display());
            }
            c
        };
        argv.push(units::plain("PATH", root.as_os_str())?.to_string());
    }
    argv.push("-c".into());
    argv.push(units::plain("--catalog", catalog.as_os_str())?.to_string());
    argv.extend(["--policy".into(), "-q".into()]);
    Ok(argv)
}

/// `trawl-audit-NAME`: `--name` (letters, digits, `_`, `.`, `-`), else the catalog's file
/// name without its extension, any other character made `_`.
fn unit_name(a: &CatalogScheduleArgs) -> anyhow::Result<String> {
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
    let name = match &a.name {
        Some(n) => {
            if n.is_empty() || n.len() > 200 || !n.chars().all(ok) {
                bail!("--name '{n}': use letters, digits, '_', '.' and '-' (at most 200)");
            }
            n.clone()
        }
        None => {
            let stem = a.catalog.file_stem().unwrap_or_default().to_string_lossy();
            let s: String = stem.chars().map(|c| if ok(c) { c } else { '_' }).collect();
            match s.is_empty() {
                true => "catalog".into(),
                false => s.chars().take(200).collect(),
            }
        }
    };
    Ok(format!("trawl-audit-{name}"))
}

/// Where units go by default: the system's directory, or the user's.
fn default_dir(system: bool) -> anyhow::Result<PathBuf> {
    if system {
        return Ok(PathBuf::from("/etc/systemd/system"));
    }
    let config = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(c) => PathBuf::from(c),
        None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(h) => PathBuf::from(h).join(".config"),
            None => {
                bail!("neither XDG_CONFIG_HOME nor HOME is set: name the directory with -o DIR")
            }
        },
    };
    Ok(config.join("systemd/user"))
}

/// Writes the service and the timer NAME.service and NAME.timer into `dir` (made if missing).
fn write_units(
    dir: &Path,
    name: &str,
    argv: &[String],
    on_calendar: &str,
    catalog: &Path,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let shown = catalog.to_string_lossy();
    write(
        &dir.join(format!("{name}.service")),
        &units::service(argv, &shown),
    )?;
    write(
        &dir.join(format!("{name}.timer")),
        &units::timer(on_calendar, &shown),
    )
}

/// Writes `text` to `path` whole, or not at all.
fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    let what = || format!("{}: cannot write", path.display());
    let mut f =
        trawl_atomic::AtomicFile::create_until(path, &crate::stop::current()).with_context(what)?;
    f.write_all(text.as_bytes()).with_context(what)?;
    f.commit().with_context(what)
}
