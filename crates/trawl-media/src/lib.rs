//! Media indexing: the byte offset and time of every keyframe of an FLV file, found by reading the
//! 9-byte header and each 11-byte tag header (plus the first bytes of video payloads) and seeking
//! over everything else, so that only a small fraction of the file is read; the same
//! index from a scan's buffers; metadata injection.
#![warn(missing_docs)]

pub mod amf;
pub mod avc;
pub mod codecs;
pub mod fetch;
pub mod flv;
pub mod index;
pub mod inject;
pub mod lane;
mod parallel;
pub mod stream;
pub mod walker;

pub use fetch::SeekMethod;
pub use flv::{
    index_bytes, index_bytes_in_parts, index_file, index_file_on, index_file_with, index_open,
    open_regular,
};
pub use index::{FlvError, FlvIndex, FlvProblem, Keyframe, TagBytes, TagCounts, TagSpan};
pub use lane::{MediaLane, MediaOutput};
pub use stream::FlvStream;
