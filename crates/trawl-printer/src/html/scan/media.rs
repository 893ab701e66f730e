//! The FLV files: duration, keyframes, the longest time between keyframes.

use maud::{Markup, html};

use crate::html::svg::{self, Mark};
use crate::html::{Cell, bytes, chart, group_digits, num, table, text};
use crate::human_duration;

pub(crate) fn seconds(s: f64) -> String {
    if s >= 60.0 {
        human_duration(s)
    } else {
        format!("{s:.2} s")
    }
}

/// The FLV files: a summary, the time between keyframes, and a row per file.
pub(crate) fn media(id: &str, m: &trawl_report::MediaReport) -> Markup {
    let summary = html! {
        h2 { "Media (FLV)" }
        p id=(format!("{id}-media-summary")) data-files=(m.files) data-keyframes=(m.keyframes) {
            (group_digits(m.files)) " FLV files, " (human_duration(m.duration)) " of video, "
            (group_digits(m.keyframes)) " keyframes; " (m.with_problems) " with problems, "
            (m.failed) " that could not be indexed."
        }
    };
    html! {
        (summary)
        (chart(keyframe_intervals(id, m)))
        (flv_table(id, m))
        @if m.files as usize > m.listed.len() {
            p.note { "The first " (m.listed.len()) " files are listed; all are counted above." }
        }
    }
}

/// Keyframe intervals by length.
fn keyframe_intervals(id: &str, m: &trawl_report::MediaReport) -> String {
    let label = |b: &trawl_report::IntervalBucket| match b.to {
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
    svg::bars(
        &format!("{id}-keyframe-intervals"),
        "Time between keyframes (a player seeks no finer than this)",
        "intervals",
        &marks,
    )
}

/// A row per FLV file listed.
fn flv_table(id: &str, m: &trawl_report::MediaReport) -> Markup {
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
    )
}
