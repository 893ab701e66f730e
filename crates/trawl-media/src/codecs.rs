//! Codec names from FLV tag headers: legacy codec ids and Enhanced FLV FourCCs, and whether a
//! video tag holds a keyframe.

pub(crate) fn legacy_video_codec(id: u8) -> String {
    match id {
        2 => "h263 (flv1)".into(),
        3 => "screen video".into(),
        4 => "vp6".into(),
        5 => "vp6a".into(),
        6 => "screen video 2".into(),
        7 => "avc".into(),
        12 => "hevc".into(),
        n => format!("video codec {n}"),
    }
}

pub(crate) fn audio_codec(id: u8) -> String {
    match id {
        0 => "pcm".into(),
        1 => "adpcm".into(),
        2 => "mp3".into(),
        3 => "pcm le".into(),
        4..=6 => "nellymoser".into(),
        7 | 8 => "g711".into(),
        9 => "enhanced audio".into(),
        10 => "aac".into(),
        11 => "speex".into(),
        14 => "mp3 8khz".into(),
        n => format!("audio codec {n}"),
    }
}

/// Whether a video tag whose payload starts with `p` is a keyframe, and its codec name.
pub(crate) fn video_tag(p: &[u8]) -> (bool, Option<String>) {
    let Some(&b0) = p.first() else {
        return (false, None);
    };
    if b0 & 0x80 != 0 {
        // Enhanced FLV: [1][frame type:3][packet type:4] then FourCC (or multitrack byte first).
        let frame_type = (b0 >> 4) & 7;
        let mut packet_type = b0 & 0x0f;
        let mut fourcc_at = 1;
        if packet_type == 6 {
            // Multitrack: [multitrack type:4][inner packet type:4], then FourCC.
            let Some(&b1) = p.get(1) else {
                return (false, None);
            };
            packet_type = b1 & 0x0f;
            fourcc_at = 2;
        }
        let codec = p
            .get(fourcc_at..fourcc_at + 4)
            .map(|f| String::from_utf8_lossy(f).into_owned());
        (
            frame_type == 1 && (packet_type == 1 || packet_type == 3),
            codec,
        )
    } else {
        let frame_type = b0 >> 4;
        let codec_id = b0 & 0x0f;
        let key = frame_type == 1
            && match codec_id {
                // AVC/HEVC: only NALU packets are pictures.
                7 | 12 => p.get(1) == Some(&1),
                _ => true,
            };
        (key, Some(legacy_video_codec(codec_id)))
    }
}
