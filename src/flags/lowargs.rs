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
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read every regular file under PATH... once, computing digests and writing manifests.
    Scan(ScanArgs),
    /// Check files against a manifest (GNU coreutils, BSD tag or hashdeep format).
    Verify(VerifyArgs),
    /// Create, validate or update BagIt bags (RFC 8493).
    #[command(subcommand)]
    Bag(BagCommand),
}

/// How files are found and read; shared by every command that reads.
#[derive(Debug, Args, Clone)]
pub struct ReadArgs {
    /// Files read at once (default: the number of CPUs).
    #[arg(long, short = 'j', value_name = "N")]
    pub threads: Option<usize>,
    /// How file contents are read: read (read(2) into pooled buffers) or mmap.
    #[arg(long, value_name = "METHOD", default_value = "read")]
    pub io: String,
    /// Size of each pooled read buffer, e.g. 1M, 256K.
    #[arg(long, value_name = "SIZE", default_value = "1M")]
    pub buffer_size: String,
    /// Follow symbolic links (loops are detected and reported).
    #[arg(long, short = 'L')]
    pub follow: bool,
    /// Do not cross into other file systems.
    #[arg(long, short = 'x')]
    pub one_file_system: bool,
    /// No progress bar and no summary; errors are still printed.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Files and directories to scan.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Digests to compute in one pass: md5, sha1, sha256, sha512, blake3, xxh3, crc32c (comma-separated).
    #[arg(long, short = 'd', value_name = "LIST", default_value = "sha256")]
    pub digest: String,
    /// Write a manifest: FORMAT:FILE with FORMAT one of md5sum, sha1sum, sha256sum, sha512sum, b3sum,
    /// xxh128sum, bsd, hashdeep (repeatable; '-' as FILE writes to stdout).
    #[arg(long, short = 'm', value_name = "FORMAT:FILE")]
    pub manifest: Vec<String>,
    /// End manifest lines with NUL instead of newline, without escaping (like sha256sum -z).
    #[arg(long, short = 'z')]
    pub zero: bool,
    /// Write a JSON report to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one JSON record per file to FILE ('-' streams to stdout).
    #[arg(long, value_name = "FILE")]
    pub jsonl: Option<PathBuf>,
    #[command(flatten)]
    pub read: ReadArgs,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The manifest to check.
    #[arg(value_name = "MANIFEST")]
    pub manifest: PathBuf,
    /// Directory the manifest's paths are relative to (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Also report files under the root that the manifest does not list (and fail on them).
    #[arg(long)]
    pub strict: bool,
    /// Algorithm of GNU-format lines whose length two algorithms share (md5/xxh3, sha256/blake3).
    #[arg(long, short = 'd', value_name = "ALG")]
    pub digest: Option<String>,
    /// Print only problems, not every OK file.
    #[arg(long)]
    pub failures_only: bool,
    #[command(flatten)]
    pub read: ReadArgs,
}

#[derive(Debug, Subcommand)]
pub enum BagCommand {
    /// Turn DIR into a bag in place (or build the bag at --out, leaving DIR untouched).
    Create(BagCreateArgs),
    /// Validate a bag per RFC 8493 (--fast: Payload-Oxum only).
    Validate(BagValidateArgs),
    /// Add manifests for more algorithms to an existing bag, verifying the existing ones in the same pass.
    Update(BagUpdateArgs),
    /// Undo an interrupted in-place `bag create`: move the payload back where it was.
    Recover(BagRecoverArgs),
}

#[derive(Debug, Args)]
pub struct BagCreateArgs {
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Build the bag in this new directory (hard links where possible, else verified copies).
    #[arg(long, value_name = "DEST")]
    pub out: Option<PathBuf>,
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
    #[command(flatten)]
    pub read: ReadArgs,
}

#[derive(Debug, Args)]
pub struct BagValidateArgs {
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Only check completeness and Payload-Oxum, read no payload bytes.
    #[arg(long)]
    pub fast: bool,
    #[command(flatten)]
    pub read: ReadArgs,
}

#[derive(Debug, Args)]
pub struct BagUpdateArgs {
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Algorithms to add.
    #[arg(long, short = 'd', value_name = "LIST", required = true)]
    pub digest: String,
    #[command(flatten)]
    pub read: ReadArgs,
}

#[derive(Debug, Args)]
pub struct BagRecoverArgs {
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}
