//! The FLV files: duration, keyframes, the longest time between keyframes.

use std::fmt::Write;

use crate::html::svg::{self, Mark};
use crate::html::{Cell, bytes, group_digits, num, table, text};
use crate::human;

pub(crate) fn seconds(s: f64) -> String {
    if s >= 60.0 {
        human::duration(s)
    } else {
        format!("{s:.2} s")
    }
}

pub(crate) fn media(out: &mut String, id: &str, m: &trawl_report::media::MediaReport) {
    out.push_str("<h2>Media (FLV)</h2>");
    let _ = write!(
        out,
        r#"<p id="{id}-media-summary" data-files="{}" data-keyframes="{}">{} FLV files, {} of video, {} keyframes; {} with problems, {} that could not be indexed.</p>"#,
        m.files,
        m.keyframes,
        group_digits(m.files),
        human::duration(m.duration),
        group_digits(m.keyframes),
        m.with_problems,
        m.failed
    );
    let label = |b: &trawl_report::media::IntervalBucket| match b.to {
        Some(t) => format!("{}-{} s", b.from, t),
        None => format!("{}+ s", b.from),
    };
    let marks: Vec<Mark> = m
        .intervals
        .iter()
        .map(|b| Mark {
            label: label(b),
            value: b.intervals as f64,
            interval: None,
            data: vec![
                ("from", b.from.to_string()),
                ("to", b.to.map_or("null".into(), |t| t.to_string())),
                ("intervals", b.intervals.to_string()),
            ],
            title: format!(
                "{} keyframe intervals of {}",
                group_digits(b.intervals),
                label(b)
            ),
        })
        .collect();
    out.push_str(&svg::bars(
        &format!("{id}-keyframe-intervals"),
        "Time between keyframes (a player seeks no finer than this)",
        "intervals",
        &marks,
    ));
    let rows: Vec<Vec<Cell>> = m
        .listed
        .iter()
        .map(|f| {
            let video = match (&f.video_codec, f.width, f.height) {
                (Some(c), Some(w), Some(h)) => format!("{c} {w}x{h}"),
                (Some(c), _, _) => c.clone(),
                _ => "-".into(),
            };
            let notes = match &f.error {
                Some(e) => e.clone(),
                None => f.problems.join("; "),
            };
            vec![
                text(f.path.clone()),
                (seconds(f.duration), Some(f.duration)),
                num(f.keyframes),
                (f.max_interval.map_or("-".into(), seconds), f.max_interval),
                text(video),
                text(f.audio_codec.clone().unwrap_or_else(|| "-".into())),
                bytes(f.size),
                text(notes),
            ]
        })
        .collect();
    table(
        out,
        &format!("{id}-flv"),
        &[
            "file",
            "duration",
            "keyframes",
            "longest interval",
            "video",
            "audio",
            "size",
            "problems",
        ],
        &rows,
        true,
    );
    if m.files as usize > m.listed.len() {
        let _ = write!(
            out,
            r#"<p class="note">The first {} files are listed; all are counted above.</p>"#,
            m.listed.len()
        );
    }
}
