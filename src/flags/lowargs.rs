//! The flags as typed, parsed by clap; no interpretation beyond syntax.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

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
    /// Create, validate or update BagIt bags (RFC 8493).
    #[command(subcommand)]
    Bag(BagCommand),
    /// Validate OCFL storage roots and objects (specifications 1.0 and 1.1).
    #[command(subcommand)]
    Ocfl(OcflCommand),
    /// Register a collection in a catalog, then audit it again and again: ok, corrupt, modified,
    /// missing, new, moved, unreadable.
    #[command(after_help = AUDIT_EXAMPLES)]
    Audit(AuditArgs),
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

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The directory whose FLV files are served (nothing outside it is).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Address and port to listen on (port 0 picks a free one; the address is printed).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Worker threads (default: the number of CPUs; 1 to 1024).
    #[arg(long, short = 'j', value_name = "N", value_parser = count(1, 1024))]
    pub threads: Option<usize>,
    /// No access log on stderr (one line per request, common log format).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Append the access log to FILE instead of stderr (created if missing, mode 0640; a
    /// symbolic link or anything but a regular file is refused).
    #[arg(long, value_name = "FILE")]
    pub access_log: Option<PathBuf>,
    /// Serve every regular file under DIR, not only FLV files (names starting with '.' and
    /// trawl's catalogs are never served).
    #[arg(long)]
    pub all: bool,
    /// Connections open at once; past it new clients wait (default: 1024, or less where the
    /// open-file limit is lower; 1 to 1000000).
    #[arg(long, value_name = "N", value_parser = count(1, 1_000_000))]
    pub max_connections: Option<usize>,
    /// Seconds a client has to send a request's headers.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub header_timeout: f64,
    /// Seconds a connection may move no byte either way before it is closed.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub idle_timeout: f64,
    /// Seconds responses in flight get to finish once the server is told to stop.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub grace: f64,
}

#[derive(Debug, Subcommand)]
pub enum FlvCommand {
    /// Every keyframe's time and byte offset, found by seeking over tag payloads.
    Index(FlvIndexArgs),
    /// Write a copy of IN with an onMetaData tag carrying the keyframe index (as yamdi and
    /// flvmeta do); IN is never modified.
    Inject(FlvInjectArgs),
}

#[derive(Debug, Args)]
pub struct FlvInjectArgs {
    /// The FLV file to read (never modified).
    #[arg(value_name = "IN")]
    pub input: PathBuf,
    /// Where the copy with the keyframe index goes (a new file; not IN).
    #[arg(value_name = "OUT")]
    pub output: PathBuf,
    /// Wait for OUT to reach the disk before renaming it into place (as a catalog or manifest
    /// always does); without it, like cp and yamdi, the copy is renamed in when written.
    #[arg(long)]
    pub fsync: bool,
    /// Share IN's blocks instead of copying them where OUT's filesystem can (XFS, btrfs), as
    /// `cp --reflink`: auto (for inputs of 1 MiB or more), always (or fail), never. A shared
    /// copy's onMetaData carries a `trawlpadding` string that aligns the body to a block.
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = Reflink::Auto)]
    pub reflink: Reflink,
}

/// `flv inject --reflink`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Reflink {
    Auto,
    Always,
    Never,
}

/// `flv index --io`: how tag headers are reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SeekIo {
    Auto,
    Mmap,
    Read,
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

#[derive(Debug, Args)]
pub struct FlvIndexArgs {
    /// FLV files to index.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Write the indexes as JSON to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write every keyframe as CSV (path,time,offset) to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Print how many bytes were read to build each index, against the file size.
    #[arg(long)]
    pub stats: bool,
    /// Print nothing on stdout (but an output sent there with '-'); problems and errors still
    /// go to stderr, and the exit code says whether every file was indexed.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// How tag headers are reached: read (one pread a tag), mmap, or auto (both timed on the
    /// file as it is indexed, the cheaper kept; see docs/commands/flv.md).
    #[arg(long, value_name = "METHOD", value_enum, default_value_t = SeekIo::Auto)]
    pub io: SeekIo,
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
    /// blake2b-224, blake2b-256, blake2b-384, blake2s, blake3, xxh3, crc32c, sm3; or none (data
    /// reduction or media only). Default: sha256, or none with --sample (an estimate does not
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
    /// Write a JSON report to FILE ('-' for stdout).
    #[arg(help_heading = "Outputs", long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one JSON record per file to FILE ('-' streams to stdout).
    #[arg(help_heading = "Outputs", long, value_name = "FILE")]
    pub jsonl: Option<PathBuf>,
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
}

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
    /// The bag (a directory holding bagit.txt).
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

Exit codes: 0 valid (warnings allowed), 1 invalid, 2 some content unreadable or a path
not checked. More: docs/commands/ocfl.md.";

#[derive(Debug, Args)]
pub struct OcflValidateArgs {
    /// Storage roots (a directory holding 0=ocfl_1.x) or objects (holding 0=ocfl_object_1.x).
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
    /// Digests a new catalog records, the first one used to pair moves (default sha256). An
    /// existing catalog keeps its own, and adds the others this list names besides them (each
    /// file gets them when next read).
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
    /// Compare only sizes and mtimes (read no contents): a cheap daily check.
    #[arg(long)]
    pub metadata_only: bool,
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
}

#[derive(Debug, Subcommand)]
pub enum CatalogCommand {
    /// The last audit, counts by state, the oldest verification.
    Report(CatalogReportArgs),
    /// What happened to one file across audits (following moves).
    History(CatalogHistoryArgs),
    /// Write the registered digests as a manifest: sha256sum (or md5sum, sha1sum, sha512sum,
    /// b3sum, xxh128sum), hashdeep, or bagit (a BagIt payload manifest).
    Export(CatalogExportArgs),
    /// Recompute the hash chain that seals each audit run; name the first run that was altered.
    Verify(CatalogVerifyArgs),
    /// Upgrade a catalog written by an older trawl to this trawl's schema, in place (in one
    /// transaction: it is upgraded whole or not at all); the next audit does the same.
    Upgrade(CatalogUpgradeArgs),
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
    /// sha256sum, md5sum, sha1sum, sha512sum, b3sum, xxh128sum, hashdeep or bagit.
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

/// A count between `lo` and `hi`: anything else is refused when the flags are parsed, saying
/// the range, rather than reaching an allocation or a runtime that cannot take it.
fn count(lo: u64, hi: u64) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(lo..=hi)
}
