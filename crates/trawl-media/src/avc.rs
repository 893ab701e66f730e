//! Picture size and frame rate from an AVCDecoderConfigurationRecord (ISO 14496-15), the payload
//! of an FLV AVC sequence header, through `h264-reader`'s SPS parser.

use h264_reader::nal::sps::SeqParameterSet;
use h264_reader::rbsp::{BitReader, decode_nal};

/// What the first SPS says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VideoFormat {
    pub width: u32,
    pub height: u32,
    /// From the VUI timing information, when the encoder wrote it.
    pub frame_rate: Option<f64>,
}

/// Parses a configuration record; `None` when it is malformed or holds no SPS.
pub fn config_record(rec: &[u8]) -> Option<VideoFormat> {
    // version, profile, compatibility, level, length size, then the SPS count (low 5 bits).
    if rec.len() < 8 || rec[0] != 1 || rec[5] & 0x1f == 0 {
        return None;
    }
    let len = u16::from_be_bytes([rec[6], rec[7]]) as usize;
    let nal = rec.get(8..8 + len)?;
    if nal.first()? & 0x1f != 7 {
        return None;
    }
    let rbsp = decode_nal(nal).ok()?;
    let sps = SeqParameterSet::from_bits(BitReader::new(&rbsp[..])).ok()?;
    let (width, height) = sps.pixel_dimensions().ok()?;
    Some(VideoFormat {
        width,
        height,
        frame_rate: sps.fps(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_size_of_an_x264_sps_and_refuses_garbage() {
        // A 320x240 High-profile SPS as libx264 writes it (from `ffmpeg -f lavfi -i
        // testsrc2=s=320x240 -c:v libx264`), wrapped in a configuration record.
        let sps = [
            0x67, 0x64, 0x00, 0x0d, 0xac, 0xd9, 0x41, 0x41, 0xfb, 0x01, 0x10, 0x00, 0x00, 0x03,
            0x00, 0x10, 0x00, 0x00, 0x03, 0x03, 0x20, 0xf1, 0x42, 0x99, 0x60,
        ];
        let mut rec = vec![1, 0x64, 0, 0x0d, 0xff, 0xe1];
        rec.extend_from_slice(&(sps.len() as u16).to_be_bytes());
        rec.extend_from_slice(&sps);
        rec.extend_from_slice(&[1, 0, 4, 0x68, 0xeb, 0xe3, 0xcb]);
        let f = config_record(&rec).expect("parses");
        assert_eq!((f.width, f.height), (320, 240));
        assert!(config_record(&rec[..10]).is_none());
        assert!(config_record(&[1, 2, 3]).is_none());
        assert!(config_record(&[0; 64]).is_none());
    }
}
