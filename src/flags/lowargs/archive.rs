//! The flags of the archive commands: `bag`, `ocfl`, `audit` and `catalog` (its policy's
//! subcommands in `policy.rs`).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{ExcludeArgs, ReadArgs};

#[derive(Debug, Subcommand)]
pub enum BagCommand {
    /// Turn DIR into a bag in place (or build the bag at --out, leaving DIR untouched).
    Create(BagCreateArgs),
    /// Validate a bag per RFC 8493 (--fast: the file list and Payload-Oxum, no payload read).
    Validate(BagValidateArgs),
    /// Add manifests for more algorithms to an existing bag, verifying the existing ones in the same pass.
    Update(BagUpdateArgs),
    /// Undo an interrupted in-place `bag create`: move the payload back where it was.
    Recover(BagRecoverArgs),
}

/// `bag create --links`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BagLinks {
    Refuse,
    Skip,
    Follow,
}

#[derive(Debug, Args)]
pub struct BagCreateArgs {
    /// The directory to make a bag of (in place, unless --out).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Build the bag in this new directory, outside DIR (each file copied, a reflink where the
    /// file system offers one, and read back to check it); DIR is left untouched.
    #[arg(long, value_name = "DEST")]
    pub out: Option<PathBuf>,
    /// With --out: hard-link each file to DIR's instead of copying it (where they are on one
    /// file system). The bag then shares its files with DIR: an edit of one changes the other.
    #[arg(long, requires = "out")]
    pub link: bool,
    /// Symbolic links (a bag holds none): refuse (each named; the default), skip (with --out:
    /// left out of the bag, listed in its links-left-out.txt), follow (bag what each points to,
    /// as --follow does; a dangling one is named).
    #[arg(long, value_enum, value_name = "WHAT")]
    pub links: Option<BagLinks>,
    /// Payload manifest algorithms.
    #[arg(
        long,
        short = 'd',
        value_name = "LIST",
        default_value = "sha256,sha512"
    )]
    pub digest: String,
    /// Extra bag-info.txt lines, as LABEL:VALUE (repeatable).
    #[arg(long, value_name = "LABEL:VALUE")]
    pub info: Vec<String>,
    /// Make the bag to this BagIt Profile (a JSON file, specification 1.4.0): bag-info.txt gets
    /// the profile's identifier and each label it fixes to one value; what it requires and
    /// the command line lacks is named, and nothing is written.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    #[command(flatten)]
    pub spool: BagSpoolArgs,
    #[command(flatten)]
    pub excluding: ExcludeArgs,
    #[command(flatten)]
    pub read: ReadArgs,
}

#[derive(Debug, Args)]
pub struct BagValidateArgs {
    /// The bag (a directory holding bagit.txt), or objects under s3://BUCKET/PREFIX.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Only check completeness and Payload-Oxum, read no payload bytes.
    #[arg(long)]
    pub fast: bool,
    /// Also hold the bag to this BagIt Profile (a JSON file, specification 1.4.0): each
    /// departure is an error naming the profile's field.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    #[command(flatten)]
    pub spool: BagSpoolArgs,
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub store: BagStoreArgs,
}

/// How `bag validate s3://...` and `ocfl validate s3://...` reach the store:
/// [`super::StoreArgs`]' flags, the shared config's profile given as `--aws-profile`
/// (`--profile` is a BagIt Profile in `bag validate`).
#[derive(Debug, Args, Clone, Default)]
pub struct BagStoreArgs {
    /// An S3-compatible store's URL, e.g. http://127.0.0.1:9000 (default: AWS_ENDPOINT_URL,
    /// else AWS). Buckets are then addressed in the path.
    #[arg(help_heading = "Object stores", long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// The region (default: AWS_REGION or the profile's, else us-east-1).
    #[arg(help_heading = "Object stores", long, value_name = "REGION")]
    pub region: Option<String>,
    /// The shared config's profile to take credentials and region from (default:
    /// AWS_PROFILE).
    #[arg(help_heading = "Object stores", long, value_name = "NAME")]
    pub aws_profile: Option<String>,
    /// Send requests unsigned, for public buckets: no credentials are looked for.
    #[arg(help_heading = "Object stores", long)]
    pub no_sign_request: bool,
    /// Address buckets in the path (https://host/BUCKET/KEY) on AWS too (the default with
    /// --endpoint).
    #[arg(help_heading = "Object stores", long)]
    pub path_style: bool,
    /// How long a request waits for the store's next byte before it is cut and tried again,
    /// e.g. 30s, 2m (default 30s).
    #[arg(help_heading = "Object stores", long, value_name = "DURATION")]
    pub store_timeout: Option<String>,
}

impl BagStoreArgs {
    /// The same, as every other command's store flags.
    pub fn store(&self) -> super::StoreArgs {
        super::StoreArgs {
            endpoint: self.endpoint.clone(),
            region: self.region.clone(),
            profile: self.aws_profile.clone(),
            no_sign_request: self.no_sign_request,
            path_style: self.path_style,
            store_timeout: self.store_timeout.clone(),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum OcflCommand {
    /// Validate OCFL storage roots or objects: structure, inventories, and every content file's
    /// digests (each file read once, with every algorithm the inventories give).
    #[command(after_help = OCFL_EXAMPLES)]
    Validate(OcflValidateArgs),
}

const OCFL_EXAMPLES: &str = "Examples:
  trawl ocfl validate /repo/ocfl-root         every object, each problem with its code
  trawl ocfl validate --json /repo/obj > r    one JSON record per object, then the totals
  trawl ocfl validate -q /repo/ocfl-root      only what is wrong
  trawl ocfl validate s3://bucket/ocfl-root --endpoint http://127.0.0.1:9000

Exit codes: 0 valid (warnings allowed), 1 invalid, 2 some content unreadable or a path
not checked. More: docs/commands/ocfl.md.";

#[derive(Debug, Args)]
pub struct OcflValidateArgs {
    /// Storage roots (a directory holding 0=ocfl_1.x) or objects (holding 0=ocfl_object_1.x),
    /// on disk or under s3://BUCKET/PREFIX.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Print JSON Lines on stdout (one record per object, then one per path's totals) instead
    /// of text.
    #[arg(long)]
    pub json: bool,
    /// Leave warnings out of the text (they stay in --json).
    #[arg(long)]
    pub no_warnings: bool,
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub store: BagStoreArgs,
}

#[derive(Debug, Args)]
pub struct BagUpdateArgs {
    /// The bag to add manifests to, or whose bag-info.txt to edit.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Algorithms to add.
    #[arg(
        long,
        short = 'd',
        value_name = "LIST",
        required_unless_present_any = ["info", "remove_info"]
    )]
    pub digest: Option<String>,
    /// Set a bag-info.txt label, as LABEL:VALUE: its lines are replaced by this value (several
    /// --info with one label give it several values); a label not there is added.
    #[arg(long, value_name = "LABEL:VALUE")]
    pub info: Vec<String>,
    /// Remove every bag-info.txt line with this label.
    #[arg(long, value_name = "LABEL")]
    pub remove_info: Vec<String>,
    #[command(flatten)]
    pub spool: BagSpoolArgs,
    #[command(flatten)]
    pub read: ReadArgs,
}

/// Where a bag command keeps its per-file state (paths with digests or sizes) past its memory.
#[derive(Debug, Args)]
pub struct BagSpoolArgs {
    /// RAM for the per-file lists (default 32M); past it they are sorted into files under
    /// --temp-dir, with the same results.
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<String>,
    /// Where those files go (default: the system temporary directory); removed at the end.
    #[arg(long, value_name = "DIR")]
    pub temp_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct BagRecoverArgs {
    /// The directory an interrupted `bag create` left half-made.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Directories to audit.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The catalog file (created by the first audit where no file exists; an existing file
    /// must be a trawl catalog).
    #[arg(long, short = 'c', value_name = "FILE")]
    pub catalog: PathBuf,
    /// Make an existing empty file the catalog (otherwise an empty file is refused: it may be a
    /// catalog whose contents were lost).
    #[arg(long)]
    pub init: bool,
    /// Digests a new catalog records, the first one used to pair moves (default sha256; for
    /// s3:// roots sha256,crc64nvme, the checksum S3 keeps for every new object, so that
    /// --no-download has one to compare). An existing catalog keeps its own, and adds the
    /// others this list names besides them (each file gets them when next read).
    #[arg(long, short = 'd', value_name = "LIST")]
    pub digest: Option<String>,
    /// Read only files not verified within this time, e.g. 30d, 12h (new and changed files are
    /// always read).
    #[arg(long, value_name = "AGE")]
    pub older_than: Option<String>,
    /// Stop starting files after this many bytes, e.g. 500G; the next audit goes on from there.
    #[arg(long, value_name = "SIZE")]
    pub max_bytes: Option<String>,
    /// Stop starting files after this long, e.g. 2h; the next audit goes on from there.
    #[arg(long, value_name = "TIME")]
    pub max_time: Option<String>,
    /// Audit as the catalog's policy says (`trawl catalog policy`): the files due first, oldest
    /// verification first, then ahead while its budget lasts; only within its window. Its
    /// budget gives way to --max-bytes, --max-time and --older-than given here.
    #[arg(long)]
    pub policy: bool,
    /// Compare only sizes and mtimes (read no contents): a cheap daily check.
    #[arg(long)]
    pub metadata_only: bool,
    /// s3:// roots: read no object; compare the store's own checksums of each registered
    /// object (CRC64NVME, CRC32, CRC32C, SHA-1, SHA-256, a single-part upload's ETag as MD5;
    /// one HeadObject each) with the digests registered from a read. An object whose store
    /// holds none of the catalog's algorithms is "uncompared" (exit 3 when nothing worse).
    /// Nothing counts as verified by reading (--older-than and the oldest verification stay).
    #[arg(long)]
    pub no_download: bool,
    /// Accept deletions: files missing in this audit are reported, then dropped from the
    /// collection (missing files are otherwise reported by every audit until they come back),
    /// and the exit code does not count them. A full audit only.
    #[arg(long)]
    pub forget_missing: bool,
    /// Write the audit's result as JSON to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the collection's report (every run so far, ages, problems, chain head) as one
    /// HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write the run's figures in the Prometheus text format to FILE at its end (for
    /// node_exporter's textfile collector), also when the run fails (success 0).
    #[arg(long, value_name = "FILE")]
    pub metrics: Option<PathBuf>,
    /// Where the run's walk is kept while it runs (a scratch database, about 70 bytes per file;
    /// default: the system temporary directory); removed at the end.
    #[arg(long, value_name = "DIR")]
    pub temp_dir: Option<PathBuf>,
    /// PATH... are OCFL storage roots (or objects): each version's files are registered and
    /// audited under their logical paths (OBJECT/vN/PATH), read from their content files, the
    /// inventories' digests the expected ones (a new catalog's digest: sha512).
    #[arg(long)]
    pub ocfl: bool,
    #[command(flatten)]
    pub excluding: ExcludeArgs,
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub store: super::StoreArgs,
}

#[derive(Debug, Subcommand)]
pub enum CatalogCommand {
    /// The last audit, counts by state, the oldest verification.
    Report(CatalogReportArgs),
    /// What happened to one file across audits (following moves).
    History(CatalogHistoryArgs),
    /// Write the registered digests as a manifest: sha256sum (or md5sum, sha1sum, sha512sum,
    /// b3sum, xxh128sum), hashdeep, or bagit (a BagIt payload manifest); or the files and
    /// their checks as PREMIS 3 (premis: XML; premis-jsonl: one event a line).
    Export(CatalogExportArgs),
    /// Recompute the hash chain that seals each audit run; name the first run that was altered.
    Verify(CatalogVerifyArgs),
    /// Upgrade a catalog written by an older trawl to this trawl's schema, in place (in one
    /// transaction: it is upgraded whole or not at all); the next audit does the same.
    Upgrade(CatalogUpgradeArgs),
    /// Set, show or clear the collection's policy: how often every file is read, how much one
    /// run may read, when runs may start (`trawl audit --policy` follows it).
    Policy(super::CatalogPolicyArgs),
    /// List the files that are due: not verified within the policy's period (or --older-than).
    Due(super::CatalogDueArgs),
    /// Write a systemd service and timer that run `trawl audit --policy` (or print a cron line).
    Schedule(super::CatalogScheduleArgs),
}

#[derive(Debug, Args)]
pub struct CatalogUpgradeArgs {
    /// The audit catalog (a SQLite file written by `trawl audit`).
    #[arg(long, short = 'c', value_name = "FILE")]
    pub catalog: PathBuf,
}

#[derive(Debug, Args)]
pub struct CatalogReportArgs {
    /// The audit catalog (a SQLite file written by `trawl audit`).
    #[arg(long, short = 'c', value_name = "FILE")]
    pub catalog: PathBuf,
    /// Also list the registered files in these states (comma-separated): corrupt, missing,
    /// modified, unreadable, new, moved, ok, removed.
    #[arg(long, value_name = "STATES")]
    pub list: Option<String>,
    /// Also write the report (every run, ages, problems, chain head) as one HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write the last run's figures in the Prometheus text format to FILE, as `audit
    /// --metrics` writes them.
    #[arg(long, value_name = "FILE")]
    pub metrics: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CatalogHistoryArgs {
    /// The file: a path under an audited root, or relative to one.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// The audit catalog (a SQLite file written by `trawl audit`).
    #[arg(long, short = 'c', value_name = "FILE")]
    pub catalog: PathBuf,
}

#[derive(Debug, Args)]
pub struct CatalogExportArgs {
    /// The audit catalog (a SQLite file written by `trawl audit`).
    #[arg(long, short = 'c', value_name = "FILE")]
    pub catalog: PathBuf,
    /// sha256sum, md5sum, sha1sum, sha512sum, b3sum, xxh128sum, hashdeep, bagit, premis or
    /// premis-jsonl.
    #[arg(long, value_name = "FORMAT", default_value = "sha256sum")]
    pub format: String,
    /// For bagit: the algorithm of the payload manifest (default: the catalog's first).
    #[arg(long, short = 'd', value_name = "ALG")]
    pub digest: Option<String>,
    /// Write to FILE instead of stdout (written whole, then renamed into place).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CatalogVerifyArgs {
    /// The audit catalog (a SQLite file written by `trawl audit`).
    #[arg(long, short = 'c', value_name = "FILE")]
    pub catalog: PathBuf,
    /// The head digest kept elsewhere from an earlier verify: fail unless the chain still ends
    /// there or runs on from it.
    #[arg(long, value_name = "HEX")]
    pub expect: Option<String>,
}
