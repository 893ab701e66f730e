//! Output destinations: a file written atomically, or stdout ('-').

use std::io::{self, Write};
use std::path::Path;

use anyhow::Context;
use trawl_atomic::AtomicFile;

pub enum Output {
    Stdout(io::BufWriter<io::Stdout>),
    File(AtomicFile),
}

impl Output {
    /// Opens now, so that a bad destination fails before any reading.
    pub fn create(path: &Path) -> anyhow::Result<Output> {
        if path.as_os_str() == "-" {
            return Ok(Output::Stdout(io::BufWriter::new(io::stdout())));
        }
        AtomicFile::create(path)
            .map(Output::File)
            .with_context(|| format!("{}: cannot create", path.display()))
    }

    /// As [`Output::create`], refusing an output that is one of `inputs` (the same file by
    /// device and inode, whatever name reaches it): writing it would replace what is read.
    pub fn create_apart<P: AsRef<Path>>(path: &Path, inputs: &[P]) -> anyhow::Result<Output> {
        use std::os::unix::fs::MetadataExt;
        if path.as_os_str() != "-"
            && let Ok(o) = std::fs::metadata(path)
        {
            for i in inputs.iter().map(AsRef::as_ref) {
                if i.as_os_str() != "-"
                    && let Ok(m) = std::fs::metadata(i)
                    && (m.dev(), m.ino()) == (o.dev(), o.ino())
                {
                    anyhow::bail!(
                        "{}: is the input {}; writing it would replace it (name another output)",
                        path.display(),
                        i.display()
                    );
                }
            }
        }
        Output::create(path)
    }

    /// Makes the output visible (renames the temporary file into place).
    pub fn commit(self) -> anyhow::Result<()> {
        match self {
            Output::Stdout(mut s) => s.flush().context("stdout"),
            Output::File(f) => {
                let t = f.target().to_path_buf();
                f.commit()
                    .with_context(|| format!("{}: cannot write", t.display()))
            }
        }
    }

    pub fn is_stdout(&self) -> bool {
        matches!(self, Output::Stdout(_))
    }

    /// Device and inode of the file being written, if it is one.
    pub fn identity(&self) -> Option<(u64, u64)> {
        match self {
            Output::Stdout(_) => None,
            Output::File(f) => f.identity(),
        }
    }

    pub fn name(&self) -> String {
        match self {
            Output::Stdout(_) => "<stdout>".into(),
            Output::File(f) => f.target().display().to_string(),
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Output::Stdout(s) => s.write(buf),
            Output::File(f) => f.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Stdout(s) => s.flush(),
            Output::File(f) => f.flush(),
        }
    }
}

/// Writes `v` as pretty JSON and a final newline.
pub fn write_json<T: serde::Serialize>(out: &mut Output, v: &T) -> anyhow::Result<()> {
    serde_json::to_writer_pretty(&mut *out, v)
        .map_err(io::Error::from)
        .and_then(|()| out.write_all(b"\n"))
        .with_context(|| format!("{}: cannot write", out.name()))
}

/// The comment lines a manifest starts with: where and how trawl was run.
pub fn invocation_comment(invoked: &str) -> [String; 2] {
    let cwd = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    [format!("Invoked from: {cwd}"), format!("$ trawl {invoked}")]
}

/// Passes each manifest entry, sorted by name, to the function it is given; called once per
/// manifest written (the entries are read again each time rather than held).
pub type EntrySource<'a> =
    dyn FnMut(&mut dyn FnMut(&trawl_manifest::Entry) -> io::Result<()>) -> io::Result<()> + 'a;

/// Writes each manifest from the sorted entries; `None` if a signal came meanwhile. Returns how
/// many names a format could not hold (each reported).
pub fn write_manifests(
    manifests: Vec<(trawl_manifest::Format, Output)>,
    entries: &mut EntrySource<'_>,
    algorithms: &[trawl_digest::Algorithm],
    zero: bool,
    invoked: &str,
    hashdeep_base: Option<Vec<u8>>,
) -> anyhow::Result<Option<usize>> {
    let stop = crate::stop::current();
    let comment = super::output::invocation_comment(invoked);
    let mut unwritable = 0usize;
    for (format, mut out) in manifests {
        let formats: Vec<trawl_manifest::Format> = match &format {
            trawl_manifest::Format::Bsd(_) => algorithms
                .iter()
                .map(|a| trawl_manifest::Format::Bsd(*a))
                .collect(),
            f => vec![f.clone()],
        };
        for f in &formats {
            let style = trawl_manifest::Style {
                zero,
                hashdeep_base: hashdeep_base.clone(),
            };
            let name = out.name();
            let left_out = (|| {
                let mut w = trawl_manifest::ManifestWriter::begin(&mut out, f, style, &comment)?;
                entries(&mut |e| {
                    if stop.is_stopping() {
                        return Err(io::Error::new(io::ErrorKind::Interrupted, "stopped"));
                    }
                    w.entry(e)
                })?;
                Ok::<_, io::Error>(w.finish())
            })();
            let left_out = match left_out {
                Err(_) if stop.is_stopping() => return Ok(None),
                r => r.with_context(|| format!("{name}: cannot write manifest"))?,
            };
            for name in left_out {
                unwritable += 1;
                crate::messages::error(format_args!(
                    "{}: left out of {} manifest {}: a line break in a name cannot be written in that format",
                    String::from_utf8_lossy(&name).escape_debug(),
                    f.name(),
                    out.name()
                ));
            }
        }
        if stop.is_stopping() {
            return Ok(None);
        }
        out.commit()?;
    }
    Ok(Some(unwritable))
}
