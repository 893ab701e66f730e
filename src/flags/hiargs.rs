//! The plan: flags turned into plain values the commands use (engine config, outputs).

use crate::flags::lowargs::{ReadIo, ReadOrderArg};
use std::path::PathBuf;

use anyhow::{Context, bail};
use trawl_digest::Algorithm;
use trawl_manifest::Format;
use trawl_read::IoMethod;
use trawl_scan::ScanConfig;

use super::lowargs::{AuditArgs, ExcludeArgs, ReadArgs, ReduceArgs, ScanArgs};
use crate::failure::Refused;

/// A command line as one line of text (names that are not UTF-8 shown with U+FFFD), for
/// records and comments that only say what was run.
pub fn invocation(argv: &[std::ffi::OsString]) -> String {
    argv.iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Parses sizes like `4096`, `256K`, `1MiB`, `1.5G` (binary units; a fraction of a unit is
/// rounded down to whole bytes).
pub fn parse_size(s: &str) -> anyhow::Result<u64> {
    let hint = || format!("bad size '{s}' (use e.g. 4096, 256K, 1.5M, 2GiB)");
    let t = s.trim();
    let (num, mult) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => {
            let unit = t[i..].to_ascii_lowercase();
            let m: u64 = match unit
                .strip_suffix("ib")
                .unwrap_or(unit.strip_suffix('b').unwrap_or(&unit))
            {
                "" if unit == "b" => 1,
                "k" => 1 << 10,
                "m" => 1 << 20,
                "g" => 1 << 30,
                "t" => 1 << 40,
                _ => bail!(hint()),
            };
            (t[..i].trim(), m)
        }
        None => (t, 1),
    };
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit());
    if !digits(whole) || (num.contains('.') && (!digits(frac) || mult == 1)) {
        bail!(hint());
    }
    let n: u64 = whole
        .parse()
        .with_context(|| format!("size '{s}' too large"))?;
    // The fraction in exact integer arithmetic: at most 12 digits count (below a byte of a TiB).
    let frac = &frac[..frac.len().min(12)];
    let part = if frac.is_empty() {
        0
    } else {
        let f: u128 = frac.parse().expect("digits");
        (f * u128::from(mult) / 10u128.pow(frac.len() as u32)) as u64
    };
    n.checked_mul(mult)
        .and_then(|b| b.checked_add(part))
        .with_context(|| format!("size '{s}' too large"))
}

/// A size flag's value, in bytes; refused by the flag's name (`--memory 1x: bad size ...`).
fn size(flag: &str, s: &str) -> Result<u64, Refused> {
    parse_size(s).map_err(|e| Refused::flag(flag, format!(" {s}: {e:#}")))
}

/// Engine settings from the shared read flags.
pub fn scan_config(roots: Vec<PathBuf>, r: &ReadArgs) -> anyhow::Result<ScanConfig> {
    let mut cfg = ScanConfig::new(roots);
    if let Some(t) = r.threads {
        if t == 0 {
            return Err(Refused::flag("--threads", " must be at least 1").into());
        }
        cfg.threads = t;
        cfg.buffers = t * 4 + 4;
        cfg.walk.threads = t.min(8);
    }
    cfg.io = match r.io {
        ReadIo::Auto => IoMethod::Auto,
        ReadIo::Read => IoMethod::Read,
        ReadIo::Mmap => IoMethod::Mmap,
    };
    cfg.io_depth = match r.io_depth.trim() {
        "auto" => trawl_scan::IoDepth::Auto,
        n => match n.parse::<usize>() {
            Ok(n @ 1..=1024) => trawl_scan::IoDepth::Fixed(n),
            _ => {
                let why = format!(" {n}: expected auto or a number from 1 to 1024");
                return Err(Refused::flag("--io-depth", why).into());
            }
        },
    };
    cfg.read_order = match r.read_order {
        ReadOrderArg::Disk => trawl_scan::ReadOrder::Disk,
        ReadOrderArg::Walk => trawl_scan::ReadOrder::Walk,
        ReadOrderArg::Auto => trawl_scan::ReadOrder::Auto,
    };
    let bs = size("--buffer-size", &r.buffer_size)?;
    if !(4096..=(256 << 20)).contains(&bs) {
        return Err(Refused::flag("--buffer-size", " must be between 4K and 256M").into());
    }
    cfg.buffer_size = bs as usize;
    if let Some(rate) = &r.limit_rate {
        let v = size("--limit-rate", rate.trim_end_matches("/s"))?;
        if v == 0 {
            return Err(Refused::flag("--limit-rate", " must be more than 0").into());
        }
        cfg.rate_limit = Some(v);
    }
    cfg.walk.follow_links = r.follow;
    cfg.walk.one_file_system = r.one_file_system;
    Ok(cfg)
}

/// The most an `--exclude-from` file may hold: tens of thousands of patterns.
pub const EXCLUDE_FILE_CAP: u64 = 1 << 20;

/// The walk's exclusion from `--exclude`, `--exclude-from` and `--exclude-if-present`, checked
/// before anything is read: a bad pattern, a file that cannot be read (read as trawl reads a
/// small input: a regular file of at most [`EXCLUDE_FILE_CAP`], never waited on), a name that
/// is not one name, each refused by name.
pub fn exclusion(a: &ExcludeArgs) -> anyhow::Result<trawl_walk::Exclusion> {
    let mut b = trawl_walk::ExclusionBuilder::new();
    // In the order given; without it (a plan made otherwise), the files first.
    let order = if a.order.len() == a.exclude.len() + a.exclude_from.len() {
        a.order.clone()
    } else {
        std::iter::repeat_n(true, a.exclude_from.len())
            .chain(std::iter::repeat_n(false, a.exclude.len()))
            .collect()
    };
    let (mut patterns, mut files) = (a.exclude.iter(), a.exclude_from.iter());
    for from_file in order {
        if from_file {
            let path = files.next().expect("counted");
            b.file(path, &read_exclude_file(path)?)?;
        } else {
            b.pattern(patterns.next().expect("counted"))?;
        }
    }
    for name in &a.exclude_if_present {
        b.if_present(name)?;
    }
    Ok(b.build()?)
}

/// An `--exclude-from FILE`'s bytes, read as trawl reads a small input.
pub fn read_exclude_file(path: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    match trawl_read::read_whole(path, EXCLUDE_FILE_CAP) {
        Ok(t) => Ok(t),
        Err(trawl_read::ReadError::Vanished { .. }) => {
            bail!(
                "--exclude-from {}: cannot read it: no such file",
                path.display()
            )
        }
        Err(e) => bail!("--exclude-from {e}"),
    }
}

/// The data-reduction settings, or None with --no-reduce.
pub fn reduce_config(r: &ReduceArgs) -> anyhow::Result<Option<trawl_reduce::ReduceConfig>> {
    if r.no_reduce {
        return Ok(None);
    }
    let mut dedup_sizes = Vec::new();
    for s in r.dedup.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bytes =
            parse_size(s).map_err(|e| Refused::flag("--dedup", format!(" {}: {e:#}", r.dedup)))?;
        dedup_sizes.push(bytes as usize);
    }
    dedup_sizes.sort_unstable();
    dedup_sizes.dedup();
    let codecs = if r.compress == "none" {
        Vec::new()
    } else {
        r.compress
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(trawl_reduce::Codec::parse)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Refused::flag("--compress", format!(" {}: {e}", r.compress)))?
    };
    let cfg = trawl_reduce::ReduceConfig {
        dedup_sizes,
        cdc_avg: r
            .cdc
            .as_deref()
            .map(|s| size("--cdc", s))
            .transpose()?
            .map(|v| v as usize),
        codecs,
        unit: size("--unit", &r.unit)? as usize,
        sector: size("--sector", &r.sector)? as usize,
        threshold: r.threshold,
        sample: r.sample,
        // The fingerprints' share of --memory is set by the scan plan, which splits it.
        temp_dir: r.temp_dir.clone(),
        exact_keys: r.exact_keys,
        top_files: r.top_files,
        partitions: r.partitions.unwrap_or(0),
        ..Default::default()
    };
    cfg.check().map_err(Refused::text)?;
    Ok(Some(cfg))
}

/// Where one manifest goes.
#[derive(Debug, Clone)]
pub struct ManifestSpec {
    /// The format as given (`sha256sum`).
    pub kind: String,
    pub format: Format,
    pub path: PathBuf,
}

/// A bag command's spools from `--memory` and `--temp-dir`.
pub fn bag_spools(a: &crate::flags::lowargs::BagSpoolArgs) -> anyhow::Result<trawl_bag::Spools> {
    let mut s = trawl_bag::Spools::default();
    if let Some(m) = &a.memory {
        s.memory = usize::try_from(parse_size(m)?).unwrap_or(usize::MAX);
    }
    if let Some(d) = check_temp_dir(a.temp_dir.as_deref())? {
        s.dir = d;
    }
    Ok(s)
}

/// `--temp-dir`, checked before anything is read: a typo must not cost a read up to the spill.
pub fn check_temp_dir(dir: Option<&std::path::Path>) -> anyhow::Result<Option<PathBuf>> {
    if let Some(d) = dir
        && !d.is_dir()
    {
        let why = format!(" {}: not a directory", d.display());
        return Err(Refused::flag("--temp-dir", why).into());
    }
    Ok(dir.map(PathBuf::from))
}

/// `--memory` when it is not given.
pub const DEFAULT_MEMORY: u64 = 1 << 30;

/// Everything `trawl scan` will do.
#[derive(Debug)]
pub struct ScanPlan {
    /// The command line as the user gave it (for manifests' comments), set by the caller.
    pub invocation: String,
    pub cfg: ScanConfig,
    pub algorithms: Vec<Algorithm>,
    pub manifests: Vec<ManifestSpec>,
    pub zero: bool,
    pub json: Option<PathBuf>,
    pub jsonl: Option<PathBuf>,
    pub html: Option<PathBuf>,
    pub quiet: bool,
    pub stats: bool,
    pub reduce: Option<trawl_reduce::ReduceConfig>,
    /// Index FLV files from the scan's buffers.
    pub media: bool,
    pub media_index: Option<PathBuf>,
    /// Where the ncdu export goes.
    pub ncdu: Option<PathBuf>,
    /// Where the duplicate groups go, and the digest that compares files.
    pub duplicates: Option<(PathBuf, Algorithm)>,
    /// Count every name of a hard-linked file in the reduction.
    pub count_links: bool,
    /// Bytes of per-file records held in RAM before they wait on disk.
    pub record_memory: usize,
    pub temp_dir: Option<PathBuf>,
    /// The objects read where the roots are `s3://` URLs.
    pub objects: Option<std::sync::Arc<trawl_s3::ObjectSource>>,
    /// `--reuse`: the catalog digests are taken from, and the rule.
    pub reuse: Option<super::reads::ReusePlan>,
}

/// A root as reports spell the paths under it: its components joined (no `./`, no trailing
/// `/`), `.` for the current directory, `/` for the root directory.
fn shown_root(p: &std::path::Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    for c in p.components() {
        match c {
            std::path::Component::RootDir => out.push(b'/'),
            std::path::Component::CurDir => {}
            c => {
                if !out.is_empty() && !out.ends_with(b"/") {
                    out.push(b'/');
                }
                out.extend_from_slice(c.as_os_str().as_bytes());
            }
        }
    }
    if out.is_empty() {
        out.push(b'.');
    }
    out
}

/// The roots with a path given twice, or one inside another given root, left out (each with a
/// warning): every file is scanned once.
pub fn distinct_roots(paths: &[PathBuf]) -> Vec<PathBuf> {
    let canon: Vec<Option<PathBuf>> = paths
        .iter()
        .map(|p| std::fs::canonicalize(p).ok())
        .collect();
    let mut out = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let Some(c) = &canon[i] else {
            // Reported when it is walked.
            out.push(p.clone());
            continue;
        };
        let same = canon[..i].iter().position(|o| o.as_ref() == Some(c));
        let within = canon.iter().enumerate().position(|(j, o)| {
            j != i
                && o.as_ref()
                    .is_some_and(|o| c != o && c.starts_with(o) && o.is_dir())
        });
        match (same, within) {
            (Some(j), _) => crate::messages::warning(format_args!(
                "{}: given twice (as {}); scanned once",
                p.display(),
                paths[j].display()
            )),
            (None, Some(j)) => crate::messages::warning(format_args!(
                "{}: inside {}, which is scanned too; scanned once, as part of it",
                p.display(),
                paths[j].display()
            )),
            (None, None) => out.push(p.clone()),
        }
    }
    out
}

impl ScanPlan {
    /// Every output file named, with the flag that names it (the media index folder aside).
    pub fn output_paths(&self) -> Vec<(&'static str, &std::path::Path)> {
        let mut out: Vec<(&'static str, &std::path::Path)> = self
            .manifests
            .iter()
            .map(|m| ("--manifest", m.path.as_path()))
            .collect();
        for (flag, p) in [
            ("--json", &self.json),
            ("--jsonl", &self.jsonl),
            ("--html", &self.html),
            ("--ncdu", &self.ncdu),
        ] {
            if let Some(p) = p {
                out.push((flag, p));
            }
        }
        if let Some((p, _)) = &self.duplicates {
            out.push(("--duplicates", p));
        }
        out
    }

    pub fn from_args(a: &ScanArgs) -> anyhow::Result<ScanPlan> {
        let reuse = super::reads::ReusePlan::from_args(a)?;
        let mut algorithms = scan_algorithms(a)?;
        let manifests = manifest_specs(&a.manifest, &mut algorithms)?;
        one_on_stdout(a, &manifests)?;
        let (mut reduce, record_memory) = memory_budget(a)?;
        let objects = super::stores::object_roots(&a.paths, &a.read, &a.store, Some(&a.excluding))?;
        let roots = match &objects {
            Some(o) => super::stores::root_paths(o),
            None => distinct_roots(&a.paths),
        };
        if let Some(r) = reduce.as_mut() {
            breakdown(r, a, &roots);
        }
        let duplicates = (a.duplicates.as_ref())
            .map(|p| duplicates_digest(&algorithms).map(|d| (p.clone(), d)))
            .transpose()?;
        if a.ncdu.is_some() && (a.paths.len() != 1 || !a.paths[0].is_dir()) {
            let why = " exports one directory: name exactly one directory to scan";
            return Err(Refused::flag("--ncdu", why).into());
        }
        let mut cfg = scan_config(roots, &a.read)?;
        cfg.walk.excluding = exclusion(&a.excluding)?;
        Ok(ScanPlan {
            invocation: String::new(),
            cfg,
            algorithms,
            manifests,
            zero: a.zero,
            json: a.json.clone(),
            jsonl: a.jsonl.clone(),
            html: a.html.clone(),
            quiet: a.read.quiet,
            stats: a.stats,
            reduce,
            // A file taken from a catalog is not read, so not indexed either.
            media: !a.no_media && reuse.is_none(),
            media_index: a.media_index.clone(),
            duplicates,
            ncdu: a.ncdu.clone(),
            count_links: a.reduce.count_links,
            record_memory,
            temp_dir: check_temp_dir(a.reduce.temp_dir.as_deref())?,
            objects,
            reuse,
        })
    }
}

/// The algorithms `--digest` names. `none`: no digest (a data-reduction or media scan only),
/// unless a manifest needs one; the default sha256, or none when sampling.
fn scan_algorithms(a: &ScanArgs) -> anyhow::Result<Vec<Algorithm>> {
    let sampling = a.reduce.sample.is_some_and(|s| s < 1.0);
    let digest = a
        .digest
        .as_deref()
        .unwrap_or(if sampling { "none" } else { "sha256" });
    Ok(if digest.trim() == "none" {
        Vec::new()
    } else {
        trawl_digest::parse_list(digest)
            .map_err(|e| Refused::flag("--digest", format!(" {digest}: {e}")))?
    })
}

/// Refuses more than one output sent to stdout ('-').
fn one_on_stdout(a: &ScanArgs, manifests: &[ManifestSpec]) -> anyhow::Result<()> {
    let stdout_users = manifests
        .iter()
        .filter(|m| m.path.as_os_str() == "-")
        .count()
        + [&a.json, &a.jsonl, &a.duplicates, &a.html, &a.ncdu]
            .iter()
            .filter(|p| p.as_ref().is_some_and(|p| p.as_os_str() == "-"))
            .count();
    if stdout_users > 1 {
        return Err(Refused::text("only one output may go to stdout ('-')").into());
    }
    Ok(())
}

/// The reduction's configuration (if the scan measures one) and the records' memory. One
/// budget (--memory, default 1 GiB) for the records and the fingerprints: the records get a
/// quarter of it up to 16 MiB (more buys little: past it they are written once and read back
/// once, sequentially), the fingerprint indexes the rest.
fn memory_budget(a: &ScanArgs) -> anyhow::Result<(Option<trawl_reduce::ReduceConfig>, usize)> {
    let memory = match a.reduce.memory.as_deref() {
        Some(m) => size("--memory", m)?,
        None => DEFAULT_MEMORY,
    };
    let mut reduce = if super::reads::measures_reduction(a) {
        reduce_config(&a.reduce)?
    } else {
        None
    };
    let share = if reduce.is_some() { memory / 4 } else { memory };
    let record_memory = share.min(trawl_engine::RECORD_MEMORY as u64);
    if let Some(r) = reduce.as_mut() {
        r.memory = Some(memory - record_memory);
    }
    Ok((reduce, record_memory as usize))
}

/// Asks the reduction `r` for its breakdowns by directory of `roots`. They cost a little per
/// file: made only for an output that shows them.
fn breakdown(r: &mut trawl_reduce::ReduceConfig, a: &ScanArgs, roots: &[PathBuf]) {
    if a.json.is_some() || a.html.is_some() {
        r.breakdown = Some(trawl_reduce::BreakdownConfig {
            depth: a.reduce.depth,
            roots: roots.iter().map(|p| shown_root(p)).collect(),
        });
    }
}

/// The digest `--duplicates` compares files by: one of 128 bits or more among `algorithms`.
fn duplicates_digest(algorithms: &[Algorithm]) -> anyhow::Result<Algorithm> {
    trawl_engine::comparing_digest(algorithms).ok_or_else(|| {
        let why = " compares files by a digest of 128 bits or more: add one with ";
        Refused::flag("--duplicates", why)
            .then_flag("--digest")
            .then_text(" (sha256 is the default)")
            .into()
    })
}

/// The manifests asked for (`-m FORMAT:FILE`, repeatable); a manifest's algorithm is added to
/// `algorithms` if `--digest` did not name it.
fn manifest_specs(
    specs: &[String],
    algorithms: &mut Vec<Algorithm>,
) -> anyhow::Result<Vec<ManifestSpec>> {
    let mut manifests = Vec::new();
    for spec in specs {
        let refused = |why: String| Refused::flag("--manifest", why);
        let (kind, file) = spec.split_once(':').ok_or_else(|| {
            refused(format!(
                " '{spec}': expected FORMAT:FILE, e.g. sha256sum:SHA256SUMS"
            ))
        })?;
        if file.is_empty() {
            return Err(refused(format!(" '{spec}': missing file name after ':'")).into());
        }
        let format = manifest_format(kind, spec, algorithms)?;
        // A manifest's algorithm is computed even if --digest did not name it.
        if let Format::Gnu(alg) = format
            && !algorithms.contains(&alg)
        {
            algorithms.push(alg);
        }
        manifests.push(ManifestSpec {
            kind: kind.to_string(),
            format,
            path: PathBuf::from(file),
        });
    }
    Ok(manifests)
}

/// The format of one `-m` manifest, `kind` from `spec` (`FORMAT:FILE`), given the algorithms
/// computed.
fn manifest_format(kind: &str, spec: &str, algorithms: &[Algorithm]) -> anyhow::Result<Format> {
    let refused = |why: String| Refused::flag("--manifest", why);
    Ok(match kind {
        k if trawl_manifest::gnu_tool_algorithm(k).is_some() => {
            Format::Gnu(trawl_manifest::gnu_tool_algorithm(k).expect("just checked"))
        }
        // BSD tag lines: one per file per chosen algorithm.
        "bsd" => match algorithms.first() {
            Some(&alg) => Format::Bsd(alg),
            None => {
                let r = refused(" bsd: name the digest with ".into())
                    .then_flag("--digest")
                    .then_text(" (not 'none')");
                return Err(r.into());
            }
        },
        "hashdeep" => {
            let hd: Vec<Algorithm> = trawl_manifest::HASHDEEP_ALGORITHMS
                .into_iter()
                .filter(|h| algorithms.contains(h))
                .collect();
            if hd.is_empty() {
                let why = " hashdeep: hashdeep knows md5, sha1 and sha256; add one with ";
                return Err(refused(why.into()).then_flag("--digest").into());
            }
            Format::Hashdeep(hd)
        }
        other => {
            let why = format!(
                " '{spec}': unknown format '{other}' ({}, bsd, hashdeep)",
                trawl_manifest::GNU_TOOL_NAMES
            );
            return Err(refused(why).into());
        }
    })
}

pub use super::policy::parse_duration;

/// Everything `trawl audit` will do.
#[derive(Debug)]
pub struct AuditPlan {
    /// The command line as the user gave it (recorded with the run), set by the caller.
    pub invocation: String,
    pub cfg: ScanConfig,
    pub catalog: PathBuf,
    /// `--init`: an existing empty file may become the catalog.
    pub init: bool,
    /// As given with --digest (None: the catalog's, or sha256 for a new one).
    pub algorithms: Option<Vec<Algorithm>>,
    pub older_than: Option<std::time::Duration>,
    pub max_bytes: Option<u64>,
    pub max_time: Option<std::time::Duration>,
    /// `--policy`: the catalog's policy says what to read (`commands::policy_run`).
    pub policy: bool,
    pub metadata_only: bool,
    pub no_download: bool,
    pub forget_missing: bool,
    pub json: Option<PathBuf>,
    pub html: Option<PathBuf>,
    /// `--metrics FILE`: the run's figures in the Prometheus text format.
    pub metrics: Option<PathBuf>,
    pub temp_dir: Option<PathBuf>,
    pub quiet: bool,
    /// `--ocfl`: the roots are OCFL storage roots, audited by their logical paths.
    pub ocfl: bool,
    /// The objects audited where the roots are `s3://` URLs.
    pub objects: Option<std::sync::Arc<trawl_s3::ObjectSource>>,
    /// `--notify-*`: where the run's notice goes, if anywhere.
    pub notify: Option<crate::commands::notify::Notify>,
}

impl AuditPlan {
    /// Every output file named, with the flag that names it.
    pub fn output_paths(&self) -> Vec<(&'static str, &std::path::Path)> {
        [
            ("--json", &self.json),
            ("--html", &self.html),
            ("--metrics", &self.metrics),
        ]
        .into_iter()
        .filter_map(|(f, p)| Some((f, p.as_deref()?)))
        .collect()
    }

    // long: a line or more per flag of `trawl audit`, checked where it is read
    pub fn from_args(a: &AuditArgs) -> anyhow::Result<AuditPlan> {
        let algorithms = a
            .digest
            .as_deref()
            .map(trawl_digest::parse_list)
            .transpose()?;
        if a.metadata_only && (a.older_than.is_some() || a.max_bytes.is_some()) {
            bail!("--metadata-only reads no contents: --older-than and --max-bytes do not apply");
        }
        if a.metadata_only && a.forget_missing {
            bail!(
                "--forget-missing needs a full audit: a metadata-only audit changes no registration, so it could not forget what it reports missing"
            );
        }
        let objects = super::stores::audit_roots(a)?;
        let mut roots = objects
            .as_deref()
            .map_or_else(Vec::new, super::stores::root_paths);
        for p in a.paths.iter().filter(|_| objects.is_none()) {
            let c = std::fs::canonicalize(p).with_context(|| format!("{}", p.display()))?;
            if !c.is_dir() {
                bail!("{}: not a directory (audit takes directories)", p.display());
            }
            roots.push(c);
        }
        let mut cfg = scan_config(roots, &a.read)?;
        cfg.walk.excluding = exclusion(&a.excluding)?;
        if a.ocfl && !cfg.walk.excluding.is_empty() {
            bail!(
                "--exclude, --exclude-from and --exclude-if-present do not apply with --ocfl (an object is audited whole)"
            );
        }
        Ok(AuditPlan {
            invocation: String::new(),
            cfg,
            catalog: a.catalog.clone(),
            init: a.init,
            algorithms,
            older_than: a
                .older_than
                .as_deref()
                .map(|s| parse_duration("--older-than", s))
                .transpose()?,
            max_bytes: a.max_bytes.as_deref().map(parse_size).transpose()?,
            max_time: a
                .max_time
                .as_deref()
                .map(|s| parse_duration("--max-time", s))
                .transpose()?,
            policy: a.policy,
            metadata_only: a.metadata_only,
            no_download: a.no_download,
            forget_missing: a.forget_missing,
            json: a.json.clone(),
            html: a.html.clone(),
            metrics: a.metrics.clone(),
            temp_dir: check_temp_dir(a.temp_dir.as_deref())?,
            quiet: a.read.quiet,
            ocfl: a.ocfl,
            objects,
            notify: crate::commands::notify::Notify::from_args(&a.notify)?,
        })
    }
}

#[cfg(test)]
mod tests;
