//! The flags as typed, parsed by clap; no interpretation beyond syntax.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod archive;
mod media;
mod notify;
mod policy;

pub use archive::*;
pub use media::*;
pub use notify::*;
pub use policy::*;

#[derive(Debug, Parser)]
#[command(
    name = "trawl",
    version,
    about = "Reads every byte of a file tree once: digests, manifests, verification, BagIt."
)]
pub struct LowArgs {
    #[command(subcommand)]
    pub command: Command,
    /// The command line, program name left out (set by `parse_from`, not a flag).
    #[arg(skip)]
    pub invocation: String,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read every regular file under PATH... once, computing digests and writing manifests.
    #[command(after_help = SCAN_EXAMPLES)]
    Scan(Box<ScanArgs>),
    /// Check files against a manifest (GNU coreutils, BSD tag or hashdeep format).
    #[command(after_help = VERIFY_EXAMPLES)]
    Verify(VerifyArgs),
    /// Check a local tree against the objects it was uploaded to (s3://BUCKET/PREFIX): each
    /// file by the store's own checksums and ETag, reading an object only where the store holds
    /// nothing comparable.
    #[command(after_help = CHECK_EXAMPLES)]
    Check(CheckArgs),
    /// Create, validate or update BagIt bags (RFC 8493).
    #[command(subcommand)]
    Bag(BagCommand),
    /// Validate OCFL storage roots and objects (specifications 1.0 and 1.1).
    #[command(subcommand)]
    Ocfl(OcflCommand),
    /// Register a collection in a catalog, then audit it again and again: ok, corrupt, modified,
    /// missing, new, moved, unreadable.
    #[command(after_help = AUDIT_EXAMPLES)]
    Audit(Box<AuditArgs>),
    /// Ask an audit catalog: report, history, export, verify.
    #[command(subcommand)]
    Catalog(CatalogCommand),
    /// FLV media: the keyframe index (times and byte offsets), and a copy with it injected as
    /// onMetaData (as yamdi and flvmeta write it), for players that seek by it.
    #[command(subcommand)]
    Flv(FlvCommand),
    /// Serve the FLV files under DIR over HTTP, seekable with ?start=SECONDS (or bytes).
    Serve(ServeArgs),
    /// Render saved JSON reports (`trawl scan --json`) as one HTML page, side by side.
    Report(ReportArgs),
    /// Print a shell's completion script for trawl (bash, zsh, fish, elvish, powershell).
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions(CompletionsArgs),
    /// Write trawl's manual pages (trawl.1, trawl-scan.1, ...) into DIR.
    #[command(after_help = "Example:\n  trawl man ~/.local/share/man/man1 && man trawl-scan")]
    Man(ManArgs),
}

const SCAN_EXAMPLES: &str = "Examples:
  trawl scan /data -m sha256sum:SUMS --no-reduce   a fixity manifest, at fixity cost
  trawl scan /data --html report.html             how much dedup and compression would save
  trawl scan /data -d sha256,blake3 --json r.json  two digests and a JSON report in one pass
  trawl scan /data --sample 0.05 --cdc 16k        a quick estimate with content-defined chunks

More: docs/commands/scan.md; the counting rules: docs/reduction-rules.md.";

const VERIFY_EXAMPLES: &str = "Examples:
  trawl verify SUMS                     names relative to the current directory
  trawl verify /backup/SUMS --root /data   names relative to /data
  trawl verify HD.txt --strict --root /data   also report files the manifest does not list

More: docs/commands/verify.md.";

const AUDIT_EXAMPLES: &str = "Examples:
  trawl audit /archive -c archive.db     the first run registers every file
  trawl audit /archive -c archive.db     later runs: ok, corrupt, modified, missing, new, moved
  trawl catalog report -c archive.db     what the last run found

More: docs/commands/audit.md.";

const COMPLETIONS_EXAMPLES: &str = "Examples:
  trawl completions bash > ~/.local/share/bash-completion/completions/trawl
  trawl completions zsh > ~/.zfunc/_trawl        (with fpath+=~/.zfunc before compinit)
  trawl completions fish > ~/.config/fish/completions/trawl.fish";

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell the script is for.
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The directory the pages are written into (created if missing).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// JSON reports written by `trawl scan --json`.
    #[arg(required = true, value_name = "JSON")]
    pub reports: Vec<PathBuf>,
    /// Write the HTML page to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE", required = true)]
    pub html: PathBuf,
}

/// `--io`: how file contents are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReadIo {
    Auto,
    Read,
    Mmap,
}

/// `--read-order`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReadOrderArg {
    Auto,
    Disk,
    Walk,
}

/// How files are found and read; shared by every command that reads.
#[derive(Debug, Args, Clone)]
pub struct ReadArgs {
    /// Compute threads: the cores kept busy hashing and counting (default: the number of CPUs;
    /// 1 to 1024). How many files are read at once is --io-depth's.
    #[arg(help_heading = "Memory and speed", long, short = 'j', value_name = "N", value_parser = count(1, 1024))]
    pub threads: Option<usize>,
    /// Files read at once: auto (the default) starts at -j and adds readers while they wait on
    /// the device rather than compute (up to 64: a cold disk or a network store), or a fixed N
    /// (1 to 1024).
    #[arg(
        help_heading = "Memory and speed",
        long,
        value_name = "N|auto",
        default_value = "auto"
    )]
    pub io_depth: String,
    /// The order files are read in: auto (the default: as their data lies on disk, found with
    /// FIEMAP, for files on a device that seeks while the reads wait on it; as listed
    /// otherwise), disk (as their data lies, wherever the file system says) or walk (as listed).
    #[arg(
        help_heading = "Memory and speed",
        long,
        value_name = "ORDER",
        value_enum,
        default_value_t = ReadOrderArg::Auto
    )]
    pub read_order: ReadOrderArg,
    /// How file contents are read: auto (mapped windows for files of 32 MiB or more whose
    /// digests keep all cores busy, e.g. BLAKE3; read(2) otherwise), read (read(2) into pooled
    /// buffers) or mmap (mapped windows).
    #[arg(
        help_heading = "Memory and speed",
        long,
        value_name = "METHOD",
        value_enum,
        default_value_t = ReadIo::Auto
    )]
    pub io: ReadIo,
    /// Size of each pooled read buffer, e.g. 1M, 256K.
    #[arg(
        help_heading = "Memory and speed",
        long,
        value_name = "SIZE",
        default_value = "1M"
    )]
    pub buffer_size: String,
    /// Follow symbolic links (loops are detected and reported).
    #[arg(help_heading = "Inputs", long, short = 'L')]
    pub follow: bool,
    /// Do not cross into other file systems.
    #[arg(help_heading = "Inputs", long, short = 'x')]
    pub one_file_system: bool,
    /// No progress bar and no summary; errors are still printed.
    #[arg(help_heading = "Outputs", long, short = 'q')]
    pub quiet: bool,
    /// Read at most RATE bytes per second in all, e.g. 200M (spare production storage).
    #[arg(help_heading = "Memory and speed", long, value_name = "RATE")]
    pub limit_rate: Option<String>,
}

/// How to reach an object store, for roots that are `s3://BUCKET/PREFIX`. Credentials come
/// from the standard AWS chain (environment, shared config and credentials files, web
/// identity, container and instance metadata), never from a flag.
#[derive(Debug, Args, Clone, Default)]
pub struct StoreArgs {
    /// An S3-compatible store's URL, e.g. http://127.0.0.1:9000 (default: AWS_ENDPOINT_URL,
    /// else AWS). Buckets are then addressed in the path.
    #[arg(help_heading = "Object stores", long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// The region (default: AWS_REGION or the profile's, else us-east-1).
    #[arg(help_heading = "Object stores", long, value_name = "REGION")]
    pub region: Option<String>,
    /// The shared config's profile to take credentials and region from (default: AWS_PROFILE).
    #[arg(help_heading = "Object stores", long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Send requests unsigned, for public buckets: no credentials are looked for.
    #[arg(help_heading = "Object stores", long)]
    pub no_sign_request: bool,
    /// Address buckets in the path (https://host/BUCKET/KEY) on AWS too (the default with
    /// --endpoint).
    #[arg(help_heading = "Object stores", long)]
    pub path_style: bool,
    /// How long a request waits for the store's next byte (to connect, for an answer, within
    /// a body) before it is cut and tried again, e.g. 30s, 2m (default 30s); a body cut
    /// resumes from the byte reached.
    #[arg(help_heading = "Object stores", long, value_name = "DURATION")]
    pub store_timeout: Option<String>,
}

/// What a walk of the user's tree leaves out; shared by scan, audit and bag create.
#[derive(Debug, Args, Clone, Default)]
pub struct ExcludeArgs {
    /// Leave out what PATTERN matches (repeatable): a .gitignore line, matched against each
    /// path relative to its root: `*.tmp` anywhere, `/build` at the root only, `cache/`
    /// directories only, `a/**/b`, `!keep.log` to take back. An excluded directory is never
    /// listed. See docs/commands/scan.md#excluding.
    #[arg(help_heading = "Inputs", long, value_name = "PATTERN")]
    pub exclude: Vec<std::ffi::OsString>,
    /// Read patterns from FILE, one a line, as a .gitignore file (# comments, blank lines
    /// skipped; a regular file of at most 1 MiB); repeatable, in order with --exclude.
    #[arg(help_heading = "Inputs", long, value_name = "FILE")]
    pub exclude_from: Vec<PathBuf>,
    /// Leave out whole every directory that holds an entry named NAME, e.g. .nobackup
    /// (repeatable).
    #[arg(help_heading = "Inputs", long, value_name = "NAME")]
    pub exclude_if_present: Vec<std::ffi::OsString>,
    /// The order --exclude (false) and --exclude-from (true) were given in (set by
    /// `flags::parse_low`, not a flag): the last pattern that matches decides.
    #[arg(skip)]
    pub order: Vec<bool>,
}

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Files and directories to scan.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Digests to compute in one pass (comma-separated): md5, sha1, sha224, sha256, sha384, sha512,
    /// sha512-256, sha3-224, sha3-256, sha3-384, sha3-512, blake2b, blake2b-128, blake2b-160,
    /// blake2b-224, blake2b-256, blake2b-384, blake2s, blake3, xxh3, crc32c, crc32, crc64nvme, sm3;
    /// or none (data reduction or media only). Default: sha256, or none with --sample (an estimate does not
    /// pay for whole-file digests unless asked).
    #[arg(
        help_heading = "Digests and manifests",
        long,
        short = 'd',
        value_name = "LIST"
    )]
    pub digest: Option<String>,
    /// Write a manifest: FORMAT:FILE with FORMAT a checksum tool's name (md5sum, sha1sum, sha224sum,
    /// sha256sum, sha384sum, sha512sum, b2sum, b3sum, xxh128sum, or ALGsum for any other digest),
    /// bsd or hashdeep (repeatable; '-' as FILE writes to stdout).
    #[arg(
        help_heading = "Digests and manifests",
        long,
        short = 'm',
        value_name = "FORMAT:FILE"
    )]
    pub manifest: Vec<String>,
    /// End manifest lines with NUL instead of newline, without escaping (like sha256sum -z).
    #[arg(help_heading = "Digests and manifests", long, short = 'z')]
    pub zero: bool,
    /// Take each file's digests from CATALOG (a trawl audit catalog, opened read-only) instead
    /// of reading it, where the file's size, mtime, ctime, device and inode are as the audit
    /// that last read it found them: a re-scan reads only what changed. The catalog must hold
    /// every digest asked for (else every file is read). Measures no data reduction and indexes
    /// no FLV file (both read every file). Audits never do this.
    #[arg(help_heading = "Digests and manifests", long, value_name = "CATALOG")]
    pub reuse: Option<PathBuf>,
    /// Leave out of --reuse's rule: inode (device and inode numbers, which network and FUSE
    /// file systems may change) and/or ctime (then a file rewritten with its mtime put back is
    /// taken from the catalog: see docs/commands/scan.md), comma-separated.
    #[arg(
        help_heading = "Digests and manifests",
        long,
        value_name = "LIST",
        requires = "reuse"
    )]
    pub reuse_ignore: Option<String>,
    /// Write a JSON report to FILE ('-' for stdout).
    #[arg(help_heading = "Outputs", long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one JSON record per file to FILE ('-' streams to stdout).
    #[arg(help_heading = "Outputs", long, value_name = "FILE")]
    pub jsonl: Option<PathBuf>,
    /// Say where the CPU went, by stage (walk, order, read, lanes, reduce, merge, output):
    /// threads, CPU time, waits, and the busiest thread's share of the run's CPU (also in
    /// --json as `stages`).
    #[arg(help_heading = "Outputs", long)]
    pub stats: bool,
    /// Write the report as one self-contained HTML page with charts to FILE ('-' for stdout).
    #[arg(help_heading = "Outputs", long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Do not index FLV files met during the scan (they are found by their signature).
    #[arg(help_heading = "Media", long)]
    pub no_media: bool,
    /// Write each FLV file's full keyframe index to DIR (as PATH.keyframes.json, PATH relative
    /// to the root as in manifests).
    #[arg(
        help_heading = "Media",
        long,
        value_name = "DIR",
        conflicts_with = "no_media"
    )]
    pub media_index: Option<PathBuf>,
    /// Write every group of files with equal content to FILE in fclones' report format (JSON if
    /// FILE ends in .json, its text format otherwise), for `fclones remove`, `link` or
    /// `dedupe`; compared by the strongest digest computed, one name per inode, empty files
    /// left out ('-' for stdout).
    #[arg(help_heading = "Outputs", long, value_name = "FILE")]
    pub duplicates: Option<PathBuf>,
    /// Write the tree in ncdu's export format to FILE, for `ncdu -f FILE` (one directory to
    /// scan; '-' for stdout).
    #[arg(help_heading = "Outputs", long, value_name = "FILE")]
    pub ncdu: Option<PathBuf>,
    #[command(flatten)]
    pub reduce: ReduceArgs,
    #[command(flatten)]
    pub excluding: ExcludeArgs,
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Data reduction measured in the same pass.
#[derive(Debug, Args, Clone)]
pub struct ReduceArgs {
    /// List the N files that contribute most duplicate bytes (at the smallest block size; 0:
    /// none).
    #[arg(help_heading = "Data reduction", long, value_name = "N", default_value_t = 10, value_parser = count(0, 1_000_000))]
    pub top_files: usize,
    /// Break the figures down by directory this many levels below each root (and by type).
    #[arg(help_heading = "Data reduction", long, value_name = "N", default_value_t = 2, value_parser = count(0, 4096))]
    pub depth: usize,
    /// Fixed-block dedup at these block sizes (multiples of 4K), all from one hash pass.
    #[arg(
        help_heading = "Data reduction",
        long,
        value_name = "SIZES",
        default_value = "4k,8k,16k,32k,64k,128k"
    )]
    pub dedup: String,
    /// Content-defined chunking (FastCDC 2020) at this average chunk size, e.g. 16k.
    #[arg(help_heading = "Data reduction", long, value_name = "AVG")]
    pub cdc: Option<String>,
    /// Codecs per compression unit: lz4, zstd[:LEVEL], gzip[:LEVEL] ('none' for no compression).
    #[arg(
        help_heading = "Data reduction",
        long,
        value_name = "LIST",
        default_value = "lz4"
    )]
    pub compress: String,
    /// Compression unit (a multiple of 4K).
    #[arg(
        help_heading = "Data reduction",
        long,
        value_name = "SIZE",
        default_value = "32k"
    )]
    pub unit: String,
    /// Allocation granule: every stored unit is rounded up to it.
    #[arg(
        help_heading = "Data reduction",
        long,
        value_name = "SIZE",
        default_value = "4k"
    )]
    pub sector: String,
    /// Store a unit raw unless compression saves at least this fraction of it.
    #[arg(
        help_heading = "Data reduction",
        long,
        value_name = "FRACTION",
        default_value = "0.125"
    )]
    pub threshold: f64,
    /// Estimate from a sample: index and compress only the blocks and units whose fingerprint
    /// falls in this fraction of the hash space (e.g. 0.01); figures come with 99% intervals.
    #[arg(help_heading = "Data reduction", long, value_name = "RATE")]
    pub sample: Option<f64>,
    /// Bound the RAM for what grows with the data, the per-file records and the fingerprint
    /// indexes, to SIZE (default 1G): a quarter of it, at most 16M, for the records, the rest
    /// for the fingerprints; past their share both wait in files under --temp-dir, with the
    /// same results. Not in SIZE, and not growing with the data: the read buffers ((4 x
    /// threads + 4) x --buffer-size), the codecs' and the walk's state (about 48M at -j2), and
    /// file pages --io auto maps (the kernel's page cache, counted in RSS).
    #[arg(help_heading = "Memory and speed", long, value_name = "SIZE")]
    pub memory: Option<String>,
    /// Where spilled records and fingerprints go (default: the system temporary directory);
    /// removed at the end.
    #[arg(help_heading = "Memory and speed", long, value_name = "DIR")]
    pub temp_dir: Option<PathBuf>,
    /// Index all 128 bits of each block fingerprint (about 40 bytes per distinct block in place
    /// of about 10; docs/design.md gives the false-merge arithmetic of the default).
    #[arg(help_heading = "Data reduction", long)]
    pub exact_keys: bool,
    /// Count the fingerprints in this many key partitions, each behind its own lock (1-64,
    /// rounded up to a power of two; default four per thread). No figure depends on it: for
    /// tests and measurements.
    #[arg(long, value_name = "N", hide = true, value_parser = count(1, 64))]
    pub partitions: Option<usize>,
    /// Measure no data reduction (digests only). The default when only manifests (or
    /// --jsonl, --duplicates, --ncdu, --media-index) are asked for and no reduction flag is
    /// given: a fixity scan at fixity cost.
    #[arg(help_heading = "Data reduction", long)]
    pub no_reduce: bool,
    /// Measure data reduction even when only manifests (or other per-file outputs) are asked
    /// for.
    #[arg(
        help_heading = "Data reduction",
        long = "reduce",
        conflicts_with = "no_reduce"
    )]
    pub force_reduce: bool,
    /// Whether a flag that shapes the reduction (--dedup, --cdc, --compress, --sample, ...)
    /// was given on the command line (set by `flags::parse_low`, not a flag).
    #[arg(skip)]
    pub reduction_flags: bool,
    /// Count every name of a hard-linked file in the reduction figures (by default an inode's
    /// data is counted once, as `du` counts it; the other names are in `hardlinks`).
    #[arg(help_heading = "Data reduction", long)]
    pub count_links: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The manifest to check ('-' reads it from stdin).
    #[arg(value_name = "MANIFEST")]
    pub manifest: PathBuf,
    /// Directory the manifest's paths are relative to (default: the current directory). Implies
    /// --confine.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Refuse (and report) entries that are absolute or hold a `..` component, so that a
    /// manifest from someone else cannot make trawl read outside the root. On by default with
    /// --root.
    #[arg(long, overrides_with = "no_confine")]
    pub confine: bool,
    /// Check absolute and `..` entries as sha256sum -c does, even with --root.
    #[arg(long, overrides_with = "confine")]
    pub no_confine: bool,
    /// Also report files under the root that the manifest does not list (and fail on them),
    /// and make lines that are no checksum lines errors (exit 2), as sha256sum --strict does.
    #[arg(long)]
    pub strict: bool,
    /// The algorithm of GNU-format lines (needed where several share a length: md5/xxh3,
    /// sha256/blake3/sha3-256/blake2s, sha512/blake2b/sha3-512); a line of another length is
    /// malformed. blake2b takes its length from the digest, as b2sum -c does.
    #[arg(long, short = 'd', value_name = "ALG")]
    pub digest: Option<String>,
    /// Print only problems, not every OK file (also with -q).
    #[arg(long)]
    pub failures_only: bool,
    /// Say nothing of listed files that do not exist, as sha256sum --ignore-missing (it is an
    /// error when no listed file exists).
    #[arg(long)]
    pub ignore_missing: bool,
    /// Write the result as JSON to FILE ('-' for stdout): one record per entry, then the totals.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Bound the RAM for the manifest's entries to SIZE (default 24M); past it they wait,
    /// sorted, in files under --temp-dir, with the same results.
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<String>,
    /// Where the manifest's entries wait, sorted, when there are more than RAM holds
    /// (default: the system temporary directory); removed at the end.
    #[arg(long, value_name = "DIR")]
    pub temp_dir: Option<PathBuf>,
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

const CHECK_EXAMPLES: &str = "Examples:
  trawl check photos/ s3://my-bucket/photos             every file against its object
  trawl check out/ s3://b/out --endpoint http://127.0.0.1:9000 --part-size 16M
  trawl check out/ s3://b/out --no-download              never read an object";

/// `trawl check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The local tree.
    #[arg(value_name = "DIR")]
    pub local: PathBuf,
    /// The prefix it was uploaded to: s3://BUCKET/PREFIX.
    #[arg(value_name = "S3URL")]
    pub remote: std::ffi::OsString,
    /// The part size multipart uploads were made with (e.g. 8M), tried first where an object's
    /// ETag or checksum is made of parts; without it, whole-MiB sizes that give the part count
    /// are tried, and a disagreement at a guessed size reads the object instead.
    #[arg(long, value_name = "SIZE")]
    pub part_size: Option<String>,
    /// Never read an object: where the store holds nothing comparable, say NOT CHECKED.
    #[arg(long)]
    pub no_download: bool,
    /// Where names wait, sorted, to find the objects with no local file (default: the system
    /// temporary directory).
    #[arg(long, value_name = "DIR")]
    pub temp_dir: Option<PathBuf>,
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// A count between `lo` and `hi`: anything else is refused when the flags are parsed, saying
/// the range, rather than reaching an allocation or a runtime that cannot take it.
fn count(lo: u64, hi: u64) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(lo..=hi)
}
