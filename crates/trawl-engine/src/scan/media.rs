//! An FLV file's index as a scan's report shows it: its row in the media section, its
//! summary in the file's record, and the lane's product taken out of a record.

use trawl_media::{FlvIndex, MediaOutput};
use trawl_report::{FlvRow, FlvSummary, JsonPath};
use trawl_scan::FileRecord;

/// The FLV lane's product for a record, taken out of it.
pub(super) fn take_media(rec: &mut FileRecord) -> Option<Result<FlvIndex, String>> {
    let at = rec
        .outputs
        .iter()
        .position(|o| o.other::<MediaOutput>().is_some())?;
    let out = rec.outputs.swap_remove(at);
    out.into_other::<MediaOutput>().ok().and_then(|b| *b)
}

/// An FLV file's row in the media section (intervals are filled in by the report).
pub(super) fn flv_row(rec: &FileRecord, m: &Result<FlvIndex, String>) -> FlvRow {
    let path = JsonPath::shown(&rec.path).path;
    match m {
        Ok(i) => FlvRow {
            path,
            size: rec.size,
            duration: i.duration,
            keyframes: i.keyframes.len() as u64,
            video_codec: i.video_codec.clone(),
            audio_codec: i.audio_codec.clone(),
            width: i.width.or(i.coded_width),
            height: i.height.or(i.coded_height),
            max_interval: None,
            intervals: Vec::new(),
            problems: i.problems.iter().map(|p| p.message.clone()).collect(),
            error: None,
        },
        Err(e) => FlvRow {
            path,
            size: rec.size,
            duration: 0.0,
            keyframes: 0,
            video_codec: None,
            audio_codec: None,
            width: None,
            height: None,
            max_interval: None,
            intervals: Vec::new(),
            problems: Vec::new(),
            error: Some(e.clone()),
        },
    }
}

pub(super) fn keyframe_times(m: &Result<FlvIndex, String>) -> Vec<f64> {
    match m {
        Ok(i) => i.keyframes.iter().map(|k| k.time).collect(),
        Err(_) => Vec::new(),
    }
}

/// What a scan's report says of an FLV file.
pub(super) fn flv_summary(m: &Result<FlvIndex, String>) -> FlvSummary {
    match m {
        Ok(i) => FlvSummary::Indexed {
            duration: i.duration,
            video_codec: i.video_codec.clone(),
            audio_codec: i.audio_codec.clone(),
            width: i.width.or(i.coded_width),
            height: i.height.or(i.coded_height),
            keyframes: i.keyframes.len(),
            first_keyframe: i.keyframes.first().copied(),
            last_keyframe: i.keyframes.last().copied(),
            tags: i.tags.clone(),
            problems: i.problems.iter().map(|p| p.message.clone()).collect(),
        },
        Err(e) => FlvSummary::Failed { error: e.clone() },
    }
}
