//! The AMF0 decoder on arbitrary bytes: never a panic or an allocation larger than the input,
//! and whatever it decodes encodes back to bytes that decode to the same encoding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl_media::amf;

fuzz_target!(|data: &[u8]| {
    if let Ok((name, v)) = amf::script_tag(data) {
        let once = amf::script_payload(&name, &v);
        let (name2, v2) = amf::script_tag(&once).expect("an encoding decodes");
        assert_eq!(amf::script_payload(&name2, &v2), once);
    }
});
