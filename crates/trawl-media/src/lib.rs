//! Media indexing: the byte offset and time of every keyframe of an FLV file, found by reading the
//! 9-byte header and each 11-byte tag header (plus the first bytes of video payloads) and seeking
//! over everything else, so that only a small fraction of the file is read; the same
//! index from a scan's buffers; metadata injection.
//!
//! The face: [`index_file`] and its variants index a file by [`SeekMethod`] into an
//! [`FlvIndex`] (its [`Keyframe`]s, [`TagCounts`] and the [`FlvProblem`]s met) or fail with an
//! [`FlvError`] (one of them [`NotRegular`]); [`index_bytes`] and [`FlvStream`] index bytes as
//! they come, and [`MediaLane`] does it in a scan; [`inject`] writes the metadata a player seeks
//! with ([`Reflink`], [`Injected`], [`InjectError`]); [`amf`] is the AMF0 codec of the script
//! tags.
#![deny(missing_docs)]

pub mod amf;
mod avc;
mod codecs;
mod fetch;
mod flv;
mod index;
mod inject;
mod lane;
mod parallel;
mod stream;
mod walker;

pub use fetch::SeekMethod;
pub use flv::{
    index_bytes, index_bytes_in_parts, index_file, index_file_on, index_file_with, index_open,
    open_regular,
};
pub use index::{
    FlvError, FlvIndex, FlvProblem, Keyframe, NotRegular, TagCounts, TagFigures, TagSpan,
};
pub use inject::{InjectError, Injected, PADDING_KEY, Reflink, SET_KEYS, inject};
pub use lane::{MediaLane, MediaOutput};
pub use stream::FlvStream;
