//! `trawl flv index`: keyframe tables (or JSON) for FLV files.

use std::io::Write;

use anyhow::Context;

use super::output::Output;
use crate::flags::lowargs::FlvIndexArgs;
use crate::{Outcome, messages};

pub fn index(a: FlvIndexArgs) -> anyhow::Result<Outcome> {
    let mut json = a.json.as_deref().map(Output::create).transpose()?;
    let to_stdout = a.json.as_ref().is_none_or(|p| p.as_os_str() != "-");
    let mut out = std::io::stdout().lock();
    let mut all = Vec::new();
    let mut trouble = false;
    for f in &a.files {
        match trawl_media::index_file(f) {
            Ok(i) => {
                for p in &i.problems {
                    messages::warning(format_args!("{}: {p}", f.display()));
                }
                if to_stdout {
                    writeln!(
                        out,
                        "{}: {:.3} s, {} keyframes, video {}, audio {}, {} video / {} audio / {} script tags",
                        f.display(),
                        i.duration,
                        i.keyframes.len(),
                        i.video_codec.as_deref().unwrap_or("none"),
                        i.audio_codec.as_deref().unwrap_or("none"),
                        i.tags.video,
                        i.tags.audio,
                        i.tags.script
                    )?;
                    if let (Some(w), Some(h)) = (i.width, i.height) {
                        writeln!(
                            out,
                            "  {w}x{h}{}",
                            i.frame_rate
                                .map(|f| format!(" at {f} fps"))
                                .unwrap_or_default()
                        )?;
                    }
                    for k in &i.keyframes {
                        writeln!(out, "  {:>12.3} s  offset {}", k.time, k.offset)?;
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
                all.push(i);
            }
            Err(e) => {
                trouble = true;
                messages::error(format_args!("{e}"));
            }
        }
    }
    if let Some(mut j) = json.take() {
        serde_json::to_writer_pretty(
            &mut j,
            &serde_json::json!({
                "schema_version": trawl_printer::json::SCHEMA_VERSION,
                "files": all,
            }),
        )
        .map_err(std::io::Error::from)
        .and_then(|()| j.write_all(b"\n"))
        .with_context(|| format!("{}: cannot write", j.name()))?;
        j.commit()?;
    }
    Ok(if trouble {
        Outcome::Trouble
    } else {
        Outcome::Ok
    })
}
