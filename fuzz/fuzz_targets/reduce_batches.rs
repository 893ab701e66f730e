//! A reduce task's input: one batch set per map, from other machines. Arbitrary bytes as up to
//! four maps' batches give a count or an error, never a panic; and the batches a map makes of
//! the same bytes (read as one file's content) always decode, each partition counted whole.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use trawl_reduce::{FileReducer, Mapper, ReduceConfig, reduce_partition};

fuzz_target!(|data: &[u8]| {
    // The first byte says how many maps the rest is cut into.
    let Some((&k, rest)) = data.split_first() else {
        return;
    };
    let maps = usize::from(k % 4) + 1;
    let parts: Vec<&[u8]> = rest.chunks(rest.len().div_ceil(maps).max(1)).collect();
    let _ = reduce_partition(&parts);

    // A map's own batches: every partition decodes.
    let cfg = Arc::new(ReduceConfig {
        codecs: vec![],
        ..ReduceConfig::default()
    });
    let mut r = FileReducer::new(cfg.clone());
    r.update(rest);
    let facts = r.finish();
    let mut m = Mapper::new(cfg, u32::from(k % 8) + 1);
    m.add(&facts);
    let out = m.finish();
    for p in &out.partitions {
        reduce_partition(&[p.as_slice()]).expect("a map's own batch decodes");
    }
});
