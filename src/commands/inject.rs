//! `trawl flv inject IN OUT`: a copy of an FLV file with onMetaData holding its keyframe index.

use anyhow::Context;
use trawl_media::{FlvError, InjectError};

use crate::flags::plans::InjectPlan;
use crate::{Outcome, messages};

pub fn run(a: InjectPlan) -> anyhow::Result<Outcome> {
    use std::os::unix::fs::MetadataExt;
    // One open, never blocking (a FIFO is refused), for both the index and the copy.
    // Its cause under "IN: cannot open" (the error's own words name IN again).
    let src = trawl_media::open_regular(&a.input)
        .map_err(|e| match e {
            FlvError::Io { source, .. } => anyhow::Error::new(source),
            FlvError::NotRegular { kind, .. } => anyhow::Error::new(kind),
            e => anyhow::Error::new(e),
        })
        .with_context(|| format!("{}: cannot open", a.input.display()))?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let i = trawl_media::index_open(&a.input, &src, trawl_media::SeekMethod::Auto, threads)?;
    let before = src.metadata()?;
    if let Ok(o) = std::fs::metadata(&a.output)
        && (o.dev(), o.ino()) == (before.dev(), before.ino())
    {
        anyhow::bail!(
            "{}: OUT is IN; inject writes a copy and never modifies its input",
            a.output.display()
        );
    }
    for p in &i.problems {
        messages::warning(format_args!("{}: {p}", a.input.display()));
    }
    let mut out = trawl_atomic::AtomicFile::create_until(&a.output, &crate::stop::current())
        .with_context(|| format!("{}: cannot create", a.output.display()))?;
    let file = out
        .file_mut()
        .with_context(|| format!("{}: cannot write", a.output.display()))?;
    // A refusal names its file itself; an I/O error is OUT's to write.
    let r = trawl_media::inject(&i, &src, file, &a.output, a.reflink).map_err(|e| match e {
        InjectError::Io(e) => {
            anyhow::Error::new(e).context(format!("{}: cannot write", a.output.display()))
        }
        e => anyhow::Error::new(e),
    })?;
    let after = src.metadata()?;
    if (after.len(), after.mtime(), after.mtime_nsec())
        != (before.len(), before.mtime(), before.mtime_nsec())
    {
        anyhow::bail!(
            "{}: changed while it was copied; {} not written",
            a.input.display(),
            a.output.display()
        );
    }
    out.commit_with(a.fsync)
        .with_context(|| format!("{}: cannot write", a.output.display()))?;
    if r.dropped_tail > 0 {
        messages::warning(format_args!(
            "{}: the last {} bytes are not complete tags and were left out of {}",
            a.input.display(),
            r.dropped_tail,
            a.output.display()
        ));
    }
    crate::messages::to_stdout(&written(&a.output, &r))?;
    Ok(Outcome::Ok)
}

/// The line that says what was written to `output`.
fn written(output: &std::path::Path, r: &trawl_media::Injected) -> String {
    format!(
        "{}: {} bytes, {} keyframes in a {}-byte onMetaData tag{}\n",
        trawl_printer::terminal_line(&output.display().to_string()),
        r.size,
        r.keyframes,
        r.metadata_tag,
        if r.shared > 0 {
            format!(", {} bytes shared with IN (reflink)", r.shared)
        } else {
            String::new()
        }
    )
}
