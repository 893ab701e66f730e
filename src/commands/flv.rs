//! `trawl flv index`: keyframe tables, JSON or CSV for FLV files.

use std::io::Write;

use anyhow::Context;
use trawl_media::FlvIndex;
use trawl_report::IndexFile;

use super::output::Output;
use crate::flags::plans::{FlvIndexPlan, Shown};
use crate::{Outcome, messages};

pub fn index(a: FlvIndexPlan) -> anyhow::Result<Outcome> {
    let apart = |p: &std::path::Path| Output::create_apart(p, &a.files);
    let mut json = a.json.as_deref().map(apart).transpose()?;
    let mut csv = a.csv.as_deref().map(apart).transpose()?;
    let shown = a.stdout_shows();
    if let Some(c) = csv.as_mut() {
        c.write_all(b"path,time,offset\n")?;
    }
    let mut out = std::io::stdout().lock();
    let mut all = Vec::new();
    let mut trouble = false;
    for f in &a.files {
        match trawl_media::index_file_with(f, a.method) {
            Ok(i) => {
                for p in &i.problems {
                    messages::warning(format_args!("{}: {p}", f.display()));
                }
                if shown != Shown::Nothing {
                    print_index(&mut out, f, &i, shown, a.stats)?;
                }
                if let Some(c) = csv.as_mut() {
                    write_csv(c, &i)?;
                }
                all.push(i);
            }
            Err(e) => {
                trouble = true;
                messages::error(format_args!("{e}"));
            }
        }
    }
    if let Some(c) = csv.take() {
        c.commit()?;
    }
    if let Some(mut j) = json.take() {
        super::output::write_json(&mut j, &IndexFile::new(all))?;
        j.commit()?;
    }
    Ok(if trouble {
        Outcome::Trouble
    } else {
        Outcome::Ok
    })
}

/// Prints file `f`'s index `i` on `out`: its summary line, and as `shown` asks its size and
/// keyframes; with `stats`, the bytes read to build it.
fn print_index(
    out: &mut impl Write,
    f: &std::path::Path,
    i: &FlvIndex,
    shown: Shown,
    stats: bool,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "{}: {:.3} s, {} keyframes, video {}, audio {}, {} video / {} audio / {} script tags",
        trawl_printer::terminal_line(&f.display().to_string()),
        i.duration,
        i.keyframes.len(),
        i.video_codec.as_deref().unwrap_or("none"),
        i.audio_codec.as_deref().unwrap_or("none"),
        i.tags.video,
        i.tags.audio,
        i.tags.script
    )?;
    if let (Some(w), Some(h), Shown::Table) = (i.width, i.height, shown) {
        writeln!(
            out,
            "  {w}x{h}{}",
            i.frame_rate
                .map(|f| format!(" at {f} fps"))
                .unwrap_or_default()
        )?;
    }
    if shown == Shown::Table {
        for k in &i.keyframes {
            writeln!(out, "  {:>12.3} s  offset {}", k.time, k.offset)?;
        }
    }
    if stats {
        writeln!(
            out,
            "  read {} of {} bytes ({:.3}%)",
            i.bytes_read,
            i.size,
            100.0 * i.bytes_read as f64 / i.size.max(1) as f64
        )?;
    }
    Ok(())
}

/// Writes each keyframe of `i` as a CSV line (path, time, offset) to `c`.
fn write_csv(c: &mut Output, i: &FlvIndex) -> anyhow::Result<()> {
    // RFC 4180: quote the path, doubling any quote in it.
    let q = format!("\"{}\"", i.path.replace('"', "\"\""));
    for k in &i.keyframes {
        writeln!(c, "{q},{:.3},{}", k.time, k.offset)
            .with_context(|| format!("{}: cannot write", c.name()))?;
    }
    Ok(())
}
