//! The flags of `trawl catalog policy`, `catalog due` and `catalog schedule`: a collection's
//! policy, what is due against it, and the timer that runs it.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct CatalogPolicyArgs {
    /// The audit catalog (a SQLite file written by `trawl audit`).
    #[arg(long, short = 'c', value_name = "FILE")]
    pub catalog: PathBuf,
    /// Every file is read at least this often, e.g. 90d (a policy needs it).
    #[arg(long, value_name = "AGE")]
    pub every: Option<String>,
    /// One run starts no file after this many bytes, e.g. 500G.
    #[arg(long, value_name = "SIZE")]
    pub max_bytes: Option<String>,
    /// One run starts no file after this long, e.g. 2h.
    #[arg(long, value_name = "TIME")]
    pub max_time: Option<String>,
    /// Runs start only within this time of day, local time, e.g. 01:00-06:00 (22:00-06:00
    /// runs past midnight).
    #[arg(long, value_name = "HH:MM-HH:MM")]
    pub window: Option<String>,
    /// Remove the policy (with settings: start a new one from them alone).
    #[arg(long)]
    pub clear: bool,
    /// Print the policy as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CatalogDueArgs {
    /// The audit catalog (a SQLite file written by `trawl audit`).
    #[arg(long, short = 'c', value_name = "FILE")]
    pub catalog: PathBuf,
    /// Due: not verified within this time (default: the policy's period).
    #[arg(long, value_name = "AGE")]
    pub older_than: Option<String>,
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CatalogScheduleArgs {
    /// The audit catalog (it must have a policy).
    #[arg(long, short = 'c', value_name = "FILE")]
    pub catalog: PathBuf,
    /// The directories the scheduled audit reads.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// A user's units (run while the user's manager runs) [default].
    #[arg(long, conflicts_with = "system")]
    pub user: bool,
    /// System units (run as root, for the machine).
    #[arg(long)]
    pub system: bool,
    /// Start each day at this local time, HH:MM (default: the start of the policy's window,
    /// else 02:00).
    #[arg(long, value_name = "HH:MM", conflicts_with = "on_calendar")]
    pub at: Option<String>,
    /// Start at systemd's calendar event SPEC instead (`systemd-analyze calendar SPEC` checks
    /// one), e.g. "Sun *-*-* 03:00".
    #[arg(long, value_name = "SPEC")]
    pub on_calendar: Option<String>,
    /// Where the units are written (default: ~/.config/systemd/user, or /etc/systemd/system
    /// with --system).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// The units' name: trawl-audit-NAME.service and .timer (default: the catalog's file name
    /// without its extension).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Print a crontab line instead (for systems without systemd, a user's crontab); write
    /// nothing. The units' settings (`--on-calendar`, `-o`, `--name`, `--system`) are refused
    /// with it.
    #[arg(long, conflicts_with_all = ["on_calendar", "output", "name", "system"])]
    pub cron: bool,
}
