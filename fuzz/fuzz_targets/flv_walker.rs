//! The FLV tag walker on arbitrary bytes: never a panic, never a read outside the file; the
//! streaming driver (the scan's buffers, here in chunks of a size taken from the input) agrees
//! with the whole-file walk, and so does the segmented walk of large files (in 2 to 7 segments,
//! also taken from the input), field for field.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use trawl_media::{FlvStream, index_bytes, index_bytes_in_parts};

fuzz_target!(|data: &[u8]| {
    let Some((&c, file)) = data.split_first() else {
        return;
    };
    let name = Path::new("fuzz.flv");
    let whole = index_bytes(name, file);
    match (&whole, index_bytes_in_parts(name, file, 2 + c as usize % 6)) {
        (Ok(a), Ok(mut b)) => {
            b.bytes_read = a.bytes_read;
            assert_eq!(*a, b, "segmented walk");
        }
        (Err(_), Err(_)) => {}
        (a, b) => panic!("whole walk {a:?} and segmented walk {b:?} disagree"),
    }
    let mut s = FlvStream::new(name, file.len() as u64);
    for chunk in file.chunks(c as usize + 1) {
        s.update(chunk);
    }
    match (whole, s.finish()) {
        (Ok(mut a), Some(Ok(mut b))) => {
            a.bytes_read = 0;
            b.bytes_read = 0;
            assert_eq!(a.keyframes, b.keyframes);
            assert_eq!(a.problems, b.problems);
            assert!(a.end <= file.len() as u64);
            for k in &a.keyframes {
                assert!(k.offset + 11 <= file.len() as u64);
                assert_eq!(file[k.offset as usize] & 0x1f, 9);
            }
        }
        (Err(_), None | Some(Err(_))) => {}
        (a, b) => panic!("seeking walk {a:?} and streaming walk {b:?} disagree"),
    }
});
