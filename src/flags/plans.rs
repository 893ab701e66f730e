//! The plans of `verify`, `bag`, `ocfl`, `flv index`, `flv inject` and `serve`: each command's flags
//! checked and turned into the typed settings its library takes, before anything is read or
//! written (`scan` and `audit` have theirs in [`super::hiargs`]).

use std::path::PathBuf;

use anyhow::{Context, bail};
use trawl_digest::Algorithm;
use trawl_engine::VerifyOptions;
use trawl_scan::ScanConfig;

use crate::failure::Refused;

use super::hiargs::{bag_spools, check_temp_dir, parse_size, scan_config};
use super::lowargs::{
    BagCreateArgs, BagLinks, BagUpdateArgs, BagValidateArgs, FlvIndexArgs, FlvInjectArgs,
    OcflValidateArgs, ReadArgs, Reflink, SeekIo, VerifyArgs,
};

/// `trawl verify`.
pub struct VerifyPlan {
    /// What the engine verifies.
    pub opts: VerifyOptions,
    /// `--json`: where the report goes.
    pub json: Option<PathBuf>,
    /// `--root` was given (without it, names resolve under `.`, and a hint may say where).
    pub root_given: bool,
    /// `-q`: failures only, and no summary when all is well.
    pub quiet: bool,
    /// `--failures-only`.
    pub failures_only: bool,
}

impl VerifyPlan {
    /// The plan of `a`.
    pub fn from_args(a: &VerifyArgs) -> anyhow::Result<VerifyPlan> {
        let root = a.root.clone().unwrap_or_else(|| PathBuf::from("."));
        let objects =
            super::stores::object_roots(std::slice::from_ref(&root), &a.read, &a.store, None)?;
        let root = match &objects {
            Some(o) => super::stores::root_paths(o).remove(0),
            None => root,
        };
        let opts = VerifyOptions {
            manifest: a.manifest.clone(),
            prefer: match &a.digest {
                Some(d) => trawl_digest::parse_list(d)?,
                None => Vec::new(),
            },
            confine: a.confine || (a.root.is_some() && !a.no_confine),
            strict: a.strict,
            ignore_missing: a.ignore_missing,
            cfg: scan_config(vec![root.clone()], &a.read)?,
            root,
            temp_dir: check_temp_dir(a.temp_dir.as_deref())?,
            memory: match a.memory.as_deref() {
                Some(m) => parse_size(m)? as usize,
                None => trawl_engine::VERIFY_MEMORY,
            },
            objects: objects.map(|o| o as std::sync::Arc<dyn trawl_scan::Listing>),
        };
        Ok(VerifyPlan {
            opts,
            json: a.json.clone(),
            root_given: a.root.is_some(),
            quiet: a.read.quiet,
            failures_only: a.failures_only,
        })
    }
}

/// `trawl flv index`.
pub struct FlvIndexPlan {
    /// The files to index, in order.
    pub files: Vec<PathBuf>,
    /// `--json`: where the indexes go.
    pub json: Option<PathBuf>,
    /// `--csv`: where the keyframe table goes.
    pub csv: Option<PathBuf>,
    /// How the tag headers are reached (`--io`).
    pub method: trawl_media::SeekMethod,
    /// `--stats`: say how much of each file was read.
    pub stats: bool,
    /// `-q`: nothing on stdout but an output sent there.
    pub quiet: bool,
}

impl FlvIndexPlan {
    /// The plan of `a`; two outputs to stdout are refused.
    pub fn from_args(a: &FlvIndexArgs) -> anyhow::Result<FlvIndexPlan> {
        let dash = |p: &Option<PathBuf>| p.as_ref().is_some_and(|p| p.as_os_str() == "-");
        if dash(&a.json) && dash(&a.csv) {
            bail!("only one output may go to stdout ('-')");
        }
        Ok(FlvIndexPlan {
            files: a.files.clone(),
            json: a.json.clone(),
            csv: a.csv.clone(),
            method: match a.io {
                SeekIo::Read => trawl_media::SeekMethod::Pread,
                SeekIo::Mmap => trawl_media::SeekMethod::Mmap,
                SeekIo::Auto => trawl_media::SeekMethod::Auto,
            },
            stats: a.stats,
            quiet: a.quiet,
        })
    }

    /// What stdout shows besides an output sent there: the table of every keyframe when no
    /// output was asked for; a line a file when the outputs go to files (they hold the
    /// keyframes); nothing with `-q` or when an output takes stdout.
    pub fn stdout_shows(&self) -> Shown {
        let dash = |p: &Option<PathBuf>| p.as_ref().is_some_and(|p| p.as_os_str() == "-");
        if self.quiet || dash(&self.json) || dash(&self.csv) {
            Shown::Nothing
        } else if self.json.is_some() || self.csv.is_some() {
            Shown::Summary
        } else {
            Shown::Table
        }
    }
}

/// What `flv index` prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// Each file's line and its keyframes.
    Table,
    /// Each file's line.
    Summary,
    /// Nothing.
    Nothing,
}

/// `trawl flv inject`.
pub struct InjectPlan {
    /// The FLV file read.
    pub input: PathBuf,
    /// The copy written.
    pub output: PathBuf,
    /// Whether the copy shares IN's blocks (`--reflink`).
    pub reflink: trawl_media::Reflink,
    /// `--fsync`: the copy is on disk before it takes its name.
    pub fsync: bool,
}

impl InjectPlan {
    /// The plan of `a`.
    pub fn from_args(a: &FlvInjectArgs) -> InjectPlan {
        InjectPlan {
            input: a.input.clone(),
            output: a.output.clone(),
            reflink: match a.reflink {
                Reflink::Always => trawl_media::Reflink::Always,
                Reflink::Never => trawl_media::Reflink::Never,
                Reflink::Auto => trawl_media::Reflink::Auto,
            },
            fsync: a.fsync,
        }
    }
}

/// `trawl serve`: the server's settings but where its notices go.
#[cfg(feature = "serve")]
pub struct ServePlan {
    /// The directory served.
    pub root: PathBuf,
    /// `HOST:PORT`.
    pub listen: String,
    /// Worker threads (None: one per CPU).
    pub threads: Option<usize>,
    /// Connections and timeouts.
    pub limits: trawl_serve::Limits,
    /// One line per request (not with `-q`, unless to a file).
    pub access_log: bool,
    /// `--access-log FILE`: where the lines go instead of stderr.
    pub access_log_file: Option<PathBuf>,
    /// FLV files only, or every regular file (`--all`).
    pub serving: trawl_serve::Serving,
}

#[cfg(feature = "serve")]
impl ServePlan {
    /// The plan of `a`: timeouts must be positive numbers of seconds.
    pub fn from_args(a: &super::lowargs::ServeArgs) -> anyhow::Result<ServePlan> {
        let seconds = |flag: &str, v: f64| {
            std::time::Duration::try_from_secs_f64(v)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| anyhow::anyhow!("{flag} {v}: expected a positive number of seconds"))
        };
        Ok(ServePlan {
            root: a.dir.clone(),
            listen: a.listen.clone(),
            threads: a.threads,
            limits: trawl_serve::Limits {
                max_connections: a
                    .max_connections
                    .unwrap_or_else(trawl_serve::default_max_connections)
                    .max(1),
                header_timeout: seconds("--header-timeout", a.header_timeout)?,
                idle_timeout: seconds("--idle-timeout", a.idle_timeout)?,
                grace: seconds("--grace", a.grace)?,
            },
            access_log: !a.quiet || a.access_log.is_some(),
            access_log_file: a.access_log.clone(),
            serving: if a.all {
                trawl_serve::Serving::All
            } else {
                trawl_serve::Serving::Media
            },
        })
    }

    /// The server's configuration, its notices going to `notices`.
    pub fn config(self, notices: trawl_serve::Notices) -> trawl_serve::ServeConfig {
        trawl_serve::ServeConfig {
            root: self.root,
            listen: self.listen,
            threads: self.threads,
            limits: self.limits,
            access_log: self.access_log,
            notices,
            serving: self.serving,
        }
    }
}

/// `trawl bag create`.
pub struct BagCreatePlan {
    /// The directory bagged.
    pub dir: PathBuf,
    /// The payload manifests' algorithms.
    pub algorithms: Vec<Algorithm>,
    /// `--info LABEL:VALUE`, each checked.
    pub info: Vec<(String, String)>,
    /// What is done with symbolic links.
    pub links: trawl_bag::Links,
    /// `--profile`: the BagIt Profile the bag is made to.
    pub profile: Option<trawl_bag::Profile>,
    /// `--out`: a separate destination.
    pub out: Option<PathBuf>,
    /// `--link`: hard links instead of copies.
    pub link: bool,
    /// How the payload is read.
    pub cfg: ScanConfig,
    /// Where lists wait past their memory.
    pub spools: trawl_bag::Spools,
    /// `-q`.
    pub quiet: bool,
}

impl BagCreatePlan {
    /// The plan of `a`: `--info` values and a `--links` that contradicts `--follow` refused.
    pub fn from_args(a: &BagCreateArgs) -> anyhow::Result<BagCreatePlan> {
        refuse_store(&a.dir, "create")?;
        if let Some(out) = &a.out {
            refuse_store(out, "create")?;
        }
        let algorithms = trawl_digest::parse_list(&a.digest)?;
        let info = parse_info(&a.info)?;
        // Read first, as `bag validate --profile` reads it: a profile that cannot be read, or is
        // not one, refuses the creation before anything is read.
        let profile = a
            .profile
            .as_deref()
            .map(trawl_bag::Profile::read)
            .transpose()?;
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
        Ok(BagCreatePlan {
            dir: a.dir.clone(),
            algorithms,
            info,
            links,
            profile,
            out: a.out.clone(),
            link: a.link,
            cfg: {
                let mut cfg = scan_config(vec![a.dir.clone()], &read)?;
                cfg.walk.excluding = super::hiargs::exclusion(&a.excluding)?;
                cfg
            },
            spools: bag_spools(&a.spool)?,
            quiet: a.read.quiet,
        })
    }
}

/// `--info LABEL:VALUE` arguments, each trimmed of the blanks around its parts and held to
/// bag-info.txt's one rule ([`trawl_bag::tagfile::info_line_fault`]: a label, no line break).
fn parse_info(args: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    // Line breaks are not trimmed away: one at either end is refused as one within.
    let blank = |c: char| c.is_whitespace() && !matches!(c, '\n' | '\r');
    let mut info = Vec::new();
    for i in args {
        let (k, v) = i
            .split_once(':')
            .with_context(|| format!("--info '{i}': expected LABEL:VALUE"))?;
        let (k, v) = (k.trim_matches(blank), v.trim_matches(blank));
        if let Some(why) = trawl_bag::tagfile::info_line_fault(k, v) {
            bail!("--info '{i}': {why}");
        }
        info.push((k.to_string(), v.to_string()));
    }
    Ok(info)
}

/// `trawl bag validate` and `trawl bag update`.
pub struct BagCheckPlan {
    /// The bag.
    pub dir: PathBuf,
    /// `bag validate --fast`: everything but the payload's digests.
    pub fast: bool,
    /// `bag update`: the algorithms to add (empty for `validate`).
    pub add: Vec<Algorithm>,
    /// `bag validate --profile`: the profile the bag is held to.
    pub profile: Option<trawl_bag::Profile>,
    /// `bag update --info` and `--remove-info`: bag-info.txt's edits.
    pub edits: trawl_bag::InfoEdits,
    /// How the payload is read.
    pub cfg: ScanConfig,
    /// Where lists wait past their memory.
    pub spools: trawl_bag::Spools,
    /// `-q`.
    pub quiet: bool,
    /// `bag validate s3://...`: the bag's prefix and the store it is in.
    pub objects: Option<std::sync::Arc<trawl_s3::ObjectSource>>,
}

impl BagCheckPlan {
    /// The plan of `bag validate`.
    pub fn validate(a: &BagValidateArgs) -> anyhow::Result<BagCheckPlan> {
        // The flags that mean nothing for objects are refused as a scan of them refuses them.
        let objects = super::stores::object_roots(
            std::slice::from_ref(&a.dir),
            &a.read,
            &a.store.store(),
            None,
        )?;
        refuse_follow(&a.read, "validate")?;
        if objects.is_some() && a.profile.is_some() {
            let why = ": a bag under s3:// is not held to a profile yet (docs/commands/objects.md)";
            return Err(Refused::flag("--profile", why).into());
        }
        let profile = a
            .profile
            .as_deref()
            .map(trawl_bag::Profile::read)
            .transpose()?;
        Ok(BagCheckPlan {
            objects,
            dir: a.dir.clone(),
            fast: a.fast,
            add: Vec::new(),
            profile,
            edits: trawl_bag::InfoEdits::default(),
            cfg: scan_config(vec![a.dir.clone()], &a.read)?,
            spools: bag_spools(&a.spool)?,
            quiet: a.read.quiet,
        })
    }

    /// The plan of `bag update`.
    pub fn update(a: &BagUpdateArgs) -> anyhow::Result<BagCheckPlan> {
        refuse_store(&a.dir, "update")?;
        refuse_follow(&a.read, "update")?;
        Ok(BagCheckPlan {
            objects: None,
            dir: a.dir.clone(),
            fast: false,
            add: a
                .digest
                .as_deref()
                .map(trawl_digest::parse_list)
                .transpose()?
                .unwrap_or_default(),
            profile: None,
            edits: trawl_bag::InfoEdits {
                set: parse_info(&a.info)?,
                remove: a.remove_info.iter().map(|l| l.trim().to_string()).collect(),
            },
            cfg: scan_config(vec![a.dir.clone()], &a.read)?,
            spools: bag_spools(&a.spool)?,
            quiet: a.read.quiet,
        })
    }
}

/// A bag command that writes (`create`, `update`, `recover`) given an `s3://` URL: refused,
/// for trawl never writes to a store.
pub fn refuse_store(dir: &std::path::Path, command: &str) -> anyhow::Result<()> {
    if trawl_s3::is_object_url(dir.as_os_str()) {
        return Err(Refused::text(format!(
            "{}: bag {command} writes, and trawl never writes to a store (bag validate reads a bag there)",
            dir.display()
        ))
        .into());
    }
    Ok(())
}

/// `-L` means nothing to a bag that is read as it is (a bag holds no links, and its payload is
/// never read through one): refused rather than accepted and ignored.
fn refuse_follow(r: &ReadArgs, command: &str) -> anyhow::Result<()> {
    if r.follow {
        bail!(
            "-L/--follow: bag {command} reads a bag as it is and follows no link (a bag holds none; `bag create --out` copies what links point to)"
        );
    }
    Ok(())
}

/// `trawl ocfl validate`.
pub struct OcflPlan {
    /// Storage roots or objects.
    pub paths: Vec<PathBuf>,
    /// JSON Lines instead of text.
    pub json: bool,
    /// Warnings left out of the text.
    pub no_warnings: bool,
    /// How content is read.
    pub cfg: ScanConfig,
    /// `-q`.
    pub quiet: bool,
    /// `ocfl validate s3://...`: the paths' prefixes (root `i` is path `i`) and their store.
    pub objects: Option<std::sync::Arc<trawl_s3::ObjectSource>>,
}

impl OcflPlan {
    /// The plan of `ocfl validate`.
    pub fn from_args(a: &OcflValidateArgs) -> anyhow::Result<OcflPlan> {
        if a.read.follow {
            bail!(
                "-L/--follow: ocfl validate follows no link (an OCFL object holds files, and a link in it is named as a problem)"
            );
        }
        // The flags that mean nothing for objects are refused as a scan of them refuses them.
        let objects = super::stores::object_roots(&a.paths, &a.read, &a.store.store(), None)?;
        Ok(OcflPlan {
            objects,
            paths: a.paths.clone(),
            json: a.json,
            no_warnings: a.no_warnings,
            cfg: scan_config(a.paths.clone(), &a.read)?,
            quiet: a.read.quiet,
        })
    }
}
