//! Output destinations: a file written atomically, or stdout ('-'); and the rule that no output
//! replaces what its command reads (an input, a file inside a root, a catalog's own files).

use std::io::{self, Write};
use std::ops::ControlFlow;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use trawl_atomic::AtomicFile;
use trawl_manifest::WriteError;

use crate::failure::{AtPath, Refused};

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
        // A FIFO waits for its reader until a signal stops the run.
        AtomicFile::create_until(path, &crate::stop::current())
            .map(Output::File)
            .with_context(|| AtPath::new(path, "cannot create"))
    }

    /// As [`Output::create`], refusing what [`apart`] refuses: an output that would replace
    /// one of `inputs` or a file inside one.
    pub fn create_apart<P: AsRef<Path>>(path: &Path, inputs: &[P]) -> anyhow::Result<Output> {
        apart(path, inputs)?;
        Output::create(path)
    }

    /// As [`Output::create`], refusing an output that is the catalog or one of the files
    /// SQLite keeps beside it while it is open (its write-ahead log, shared memory index or
    /// rollback journal, which may not exist yet): replacing one of those loses runs.
    pub fn create_beside_catalog(path: &Path, catalog: &Path) -> anyhow::Result<Output> {
        for (suffix, what) in CATALOG_COMPANIONS {
            let mut c = catalog.as_os_str().to_owned();
            c.push(suffix);
            let c = PathBuf::from(c);
            if same_file(path, &c) {
                anyhow::bail!(
                    "{}: is {what} {}; writing it would damage the catalog (name another output)",
                    path.display(),
                    c.display()
                );
            }
        }
        Output::create(path)
    }

    /// As [`Output::create_beside_catalog`] (`cat` open at `catalog`), refusing too an output
    /// [`outside`] refuses inside the catalog's roots: a command that reads the catalog alone
    /// (`catalog export`, `catalog report`) would otherwise put a file there for the next
    /// audit to find.
    pub fn create_for_catalog(
        flag: &str,
        path: &Path,
        catalog: &Path,
        cat: &trawl_catalog::Catalog,
    ) -> anyhow::Result<Output> {
        let roots: Vec<PathBuf> = cat.roots()?.into_iter().map(|(_, r)| r).collect();
        outside(flag, path, &roots)?;
        Output::create_beside_catalog(path, catalog)
    }

    /// Makes the output visible (renames the temporary file into place).
    pub fn commit(self) -> anyhow::Result<()> {
        match self {
            Output::Stdout(mut s) => s.flush().context("stdout"),
            Output::File(f) => {
                let t = f.target().to_path_buf();
                f.commit().with_context(|| AtPath::new(&t, "cannot write"))
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

    /// `e`, an error on this output, in its words: `PATH: WHAT` with the path kept typed
    /// ([`AtPath`]), or `<stdout>: WHAT`.
    pub fn error(&self, e: impl Into<anyhow::Error>, what: &'static str) -> anyhow::Error {
        match self {
            Output::File(f) => e.into().context(AtPath::new(f.target(), what)),
            Output::Stdout(_) => e.into().context(format!("<stdout>: {what}")),
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

/// The catalog and the files SQLite keeps beside it, by the suffix of their name.
const CATALOG_COMPANIONS: [(&str, &str); 4] = [
    ("", "the catalog"),
    ("-wal", "the catalog's write-ahead log"),
    ("-shm", "the catalog's shared-memory index"),
    ("-journal", "the catalog's rollback journal"),
];

/// Refuses an output that would replace what the command reads: one of `inputs` (the same
/// file by device and inode, whatever name reaches it, or the same name in the same
/// directory), or an existing file inside an input that is a directory (a scan's or an
/// audit's root), found by the device and inode of each directory above the file's real
/// path, so that a link, `..` or a bind mount reaches the same root. A name not yet taken
/// inside a root is allowed: the walk leaves the output's file out.
pub fn apart<P: AsRef<Path>>(path: &Path, inputs: &[P]) -> anyhow::Result<()> {
    if let Some(i) = inputs
        .iter()
        .map(AsRef::as_ref)
        .find(|i| same_file(path, i))
    {
        let why = format!(
            "{}: is the input {}; writing it would replace it (name another output)",
            path.display(),
            i.display()
        );
        return Err(Refused::text(why).into());
    }
    // The file the writer would replace: links followed, as it follows them; a device or a
    // FIFO is written in place, never replaced.
    let existing = path.as_os_str() != "-" && std::fs::metadata(path).is_ok_and(|m| m.is_file());
    if let Some(root) = existing
        .then(|| std::fs::canonicalize(path).ok())
        .flatten()
        .and_then(|real| inside(real.parent()?, inputs))
    {
        let why = format!(
            "{}: is a file inside {}, which is read; writing it would replace it (name a new \
             file, or one outside {})",
            path.display(),
            root.display(),
            root.display()
        );
        return Err(Refused::text(why).into());
    }
    Ok(())
}

/// Refuses an output anywhere inside one of `inputs` (the roots an audit reads), whether its
/// file exists yet or not, where the next audit would find it among the files it reads: one
/// every run writes again (`audit --metrics`; [`apart`] lets a new name through, but the next
/// run would then refuse to replace it, a scheduled run working once), and the outputs of the
/// commands that read a catalog alone (`catalog export -o`, `catalog report --html/--metrics`,
/// `inputs` the catalog's roots), which the next audit would report as a new file.
pub fn outside<P: AsRef<Path>>(flag: &str, path: &Path, inputs: &[P]) -> anyhow::Result<()> {
    let Some(root) = place(path).and_then(|real| inside(real.parent()?, inputs)) else {
        return Ok(());
    };
    let why = format!(
        " {}: inside {}, which is audited: the next audit would find the file among those it \
         reads (name a file outside {})",
        path.display(),
        root.display(),
        root.display()
    );
    Err(Refused::flag(flag, why).into())
}

/// Refuses a directory of outputs whose names are known only once the files are read
/// (`--media-index DIR`) where it lies inside one of `inputs` and holds anything: one of
/// the files written into it could replace a file that was read. A new or empty directory
/// inside a root is allowed.
pub fn dir_apart<P: AsRef<Path>>(flag: &str, dir: &Path, inputs: &[P]) -> anyhow::Result<()> {
    let holds = std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some());
    if let Some(root) = holds
        .then(|| std::fs::canonicalize(dir).ok())
        .flatten()
        .and_then(|real| inside(&real, inputs))
    {
        let why = format!(
            " {}: a directory inside {}, which is read, and not empty: what is written \
             into it could replace a file of it (name a new or empty directory, or one outside {})",
            dir.display(),
            root.display(),
            root.display()
        );
        return Err(Refused::flag(flag, why).into());
    }
    Ok(())
}

/// The input directory that holds `dir` (a real path), `dir` itself included: each directory
/// from `dir` up to `/` compared with the inputs' by device and inode.
fn inside<'a, P: AsRef<Path>>(dir: &Path, inputs: &'a [P]) -> Option<&'a Path> {
    let roots: Vec<((u64, u64), &Path)> = inputs
        .iter()
        .map(AsRef::as_ref)
        .filter_map(|i| {
            let m = std::fs::metadata(i).ok().filter(|m| m.is_dir())?;
            Some(((m.dev(), m.ino()), i))
        })
        .collect();
    if roots.is_empty() {
        return None;
    }
    dir.ancestors().find_map(|a| {
        let m = std::fs::metadata(a).ok()?;
        roots
            .iter()
            .find(|(id, _)| *id == (m.dev(), m.ino()))
            .map(|(_, r)| *r)
    })
}

/// Where a name leads: its directory resolved (links and `..` followed) joined with its own
/// name, so that two names of a file not yet made can be compared; None for stdout ('-') or a
/// directory that does not exist.
fn place(p: &Path) -> Option<PathBuf> {
    if p.as_os_str() == "-" {
        return None;
    }
    let name = p.file_name()?;
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(std::fs::canonicalize(dir).ok()?.join(name))
}

/// Whether two names reach one file: the same device and inode where both exist, else the
/// same name in the same directory.
fn same_file(a: &Path, b: &Path) -> bool {
    if a.as_os_str() == "-" || b.as_os_str() == "-" {
        return false;
    }
    if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b))
        && (x.dev(), x.ino()) == (y.dev(), y.ino())
    {
        return true;
    }
    place(a).is_some_and(|p| Some(p) == place(b))
}

/// Refuses two outputs named to one file (`--json X --html X`): one of them would be lost.
/// A character device (`/dev/null`) takes any number: it is written in place, as a stream.
/// `outputs`: each output's flag and path.
pub fn distinct(outputs: &[(&str, &Path)]) -> anyhow::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    for (i, (flag, p)) in outputs.iter().enumerate() {
        if std::fs::metadata(p).is_ok_and(|m| m.file_type().is_char_device()) {
            continue;
        }
        if let Some((other, _)) = outputs[..i].iter().find(|(_, q)| same_file(p, q)) {
            let r = Refused::text(format!("{}: named by ", p.display()))
                .then_flag(other)
                .then_text(" and by ")
                .then_flag(flag)
                .then_text("; each output needs a file of its own")
                .about(flag);
            return Err(r.into());
        }
    }
    Ok(())
}

/// Writes `v` as pretty JSON and a final newline.
pub fn write_json<T: serde::Serialize>(out: &mut Output, v: &T) -> anyhow::Result<()> {
    serde_json::to_writer_pretty(&mut *out, v)
        .map_err(io::Error::from)
        .and_then(|()| out.write_all(b"\n"))
        .map_err(|e| out.error(e, "cannot write"))
}

/// The comment lines a manifest starts with: where and how trawl was run.
pub fn invocation_comment(invoked: &str) -> [String; 2] {
    let cwd = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    [format!("Invoked from: {cwd}"), format!("$ trawl {invoked}")]
}

/// Passes each manifest entry, sorted by name, to the function it is given until that breaks
/// (`Break` then); called once per manifest written (the entries are read again each time
/// rather than held).
pub type EntrySource<'a> = dyn FnMut(
        &mut dyn FnMut(&trawl_manifest::Entry) -> Result<ControlFlow<()>, WriteError>,
    ) -> Result<ControlFlow<()>, WriteError>
    + 'a;

/// Writes each manifest from the sorted entries; `Break` if a signal came meanwhile (nothing
/// is then committed: each manifest is dropped, its temporary file removed). Returns how many
/// names a format could not hold (each reported).
pub fn write_manifests(
    manifests: Vec<(trawl_manifest::Format, Output)>,
    entries: &mut EntrySource<'_>,
    algorithms: &[trawl_digest::Algorithm],
    zero: bool,
    invoked: &str,
    hashdeep_base: Option<Vec<u8>>,
) -> anyhow::Result<ControlFlow<(), usize>> {
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
            let left_out = match write_manifest(&mut out, f, style, &comment, entries, &stop) {
                // A write that fails once a signal came is the signal's: the stop decides.
                Err(_) if stop.is_stopping() => return Ok(ControlFlow::Break(())),
                r => match r.map_err(|e| out.error(e, "cannot write manifest"))? {
                    ControlFlow::Continue(left_out) => left_out,
                    ControlFlow::Break(()) => return Ok(ControlFlow::Break(())),
                },
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
            return Ok(ControlFlow::Break(()));
        }
        out.commit()?;
    }
    Ok(ControlFlow::Continue(unwritable))
}

/// Writes one manifest of format `f` to `out`, the entries walked until `stop` is requested
/// (`Break` then); the names the format could not hold.
fn write_manifest(
    out: &mut Output,
    f: &trawl_manifest::Format,
    style: trawl_manifest::Style,
    comment: &[String],
    entries: &mut EntrySource<'_>,
    stop: &crate::stop::Stop,
) -> Result<ControlFlow<(), Vec<Vec<u8>>>, WriteError> {
    let mut w = trawl_manifest::ManifestWriter::begin(out, f, style, comment)?;
    let walked = entries(&mut |e| {
        if stop.is_stopping() {
            return Ok(ControlFlow::Break(()));
        }
        w.entry(e)?;
        Ok(ControlFlow::Continue(()))
    })?;
    Ok(match walked {
        ControlFlow::Continue(()) => ControlFlow::Continue(w.finish()),
        ControlFlow::Break(()) => ControlFlow::Break(()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use trawl_digest::Algorithm;
    use trawl_manifest::{Entry, Format};

    fn entry(name: &str) -> Entry {
        Entry {
            path: name.as_bytes().to_vec(),
            digests: vec![(Algorithm::Sha256, vec![0xab; 32])],
            ..Entry::default()
        }
    }

    /// Writes one sha256sum manifest into `dir` from three entries; `stop_after`: the entry
    /// after which the run's stop is requested (as a signal would).
    fn write_one(dir: &Path, stop_after: Option<usize>) -> anyhow::Result<ControlFlow<(), usize>> {
        let _run = crate::stop::begin_run();
        let out = Output::create(&dir.join("SUMS"))?;
        let entries = [entry("a"), entry("b"), entry("c")];
        let mut source = |f: &mut dyn FnMut(&Entry) -> Result<ControlFlow<()>, WriteError>| {
            for (i, e) in entries.iter().enumerate() {
                if f(e)?.is_break() {
                    return Ok(ControlFlow::Break(()));
                }
                if stop_after == Some(i) {
                    crate::stop::current().request(crate::stop::Reason::Signal(libc::SIGTERM));
                }
            }
            Ok(ControlFlow::Continue(()))
        };
        write_manifests(
            vec![(Format::Gnu(Algorithm::Sha256), out)],
            &mut source,
            &[Algorithm::Sha256],
            false,
            "scan .",
            None,
        )
    }

    #[test]
    fn a_stopped_write_breaks_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let r = write_one(dir.path(), Some(0)).unwrap();
        assert_eq!(r, ControlFlow::Break(()));
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "no manifest, whole or half: {left:?}");
    }

    #[test]
    fn a_write_not_stopped_continues_with_the_manifest_whole() {
        let dir = tempfile::tempdir().unwrap();
        let r = write_one(dir.path(), None).unwrap();
        assert_eq!(r, ControlFlow::Continue(0));
        let text = std::fs::read_to_string(dir.path().join("SUMS")).unwrap();
        assert_eq!(text.lines().filter(|l| !l.starts_with('#')).count(), 3);
    }
}
