//! The flags of the media commands: `flv index`, `flv inject` and `serve`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::count;

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
