//! `trawl flv index`: keyframe tables, JSON or CSV for FLV files.

use std::io::Write;

use anyhow::Context;
use trawl_report::media::IndexFile;

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
                    writeln!(
                        out,
                        "{}: {:.3} s, {} keyframes, video {}, audio {}, {} video / {} audio / {} script tags",
                        trawl_printer::terminal::line(&f.display().to_string()),
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
                    if a.stats {
                        writeln!(
                            out,
                            "  read {} of {} bytes ({:.3}%)",
                            i.bytes_read,
                            i.size,
                            100.0 * i.bytes_read as f64 / i.size.max(1) as f64
                        )?;
                    }
                }
                if let Some(c) = csv.as_mut() {
                    // RFC 4180: quote the path, doubling any quote in it.
                    let q = format!("\"{}\"", i.path.replace('"', "\"\""));
                    for k in &i.keyframes {
                        writeln!(c, "{q},{:.3},{}", k.time, k.offset)
                            .with_context(|| format!("{}: cannot write", c.name()))?;
                    }
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
