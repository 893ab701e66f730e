//! fetch.txt on arbitrary text: never a panic, every item's path is a safe path under `data/`,
//! and every non-blank line is either an item or an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl_bag::tagfile;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (items, errors) = tagfile::parse_fetch(text);
    for it in &items {
        assert!(it.path.starts_with("data/"), "{}", it.path);
        assert!(
            !it.path.split('/').any(|c| c == ".." || c.is_empty()),
            "{}",
            it.path
        );
    }
    let lines = tagfile::lines(text)
        .into_iter()
        .filter(|l| !l.trim().is_empty())
        .count();
    assert_eq!(items.len() + errors.len(), lines);
});
