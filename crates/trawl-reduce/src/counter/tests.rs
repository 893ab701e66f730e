//! The unit tests of `counter`.

use super::*;
use crate::FileReducer;
use crate::tests::data;

fn facts(cfg: &Arc<ReduceConfig>, bytes: &[u8]) -> FileReduce {
    let mut r = FileReducer::new(cfg.clone());
    r.update(bytes);
    r.finish()
}

#[test]
fn a_file_shorter_than_every_size_is_kept_once_and_counted_at_every_size() {
    let cfg = Arc::new(ReduceConfig {
        threads: 4,
        ..ReduceConfig::default()
    });
    let c = Counter::new(cfg.clone());
    let files: Vec<Vec<u8>> = (0..3000).map(|i| data(1 + i % 4000, i as u64)).collect();
    for f in &files {
        c.add(&facts(&cfg, f));
    }
    // Drained into the partitions as the end does.
    for s in &c.slots {
        lock(s).hand_over(&c.shared).unwrap();
    }
    let (mut short, mut in_tables) = (0, 0u64);
    for p in &c.shared.parts {
        let mut p = lock(p);
        p.short.flush();
        short += p.short.found().0;
        for d in &mut p.ways {
            d.flush();
            d.table.for_each_count(&mut |_| in_tables += 1);
        }
    }
    assert_eq!(
        (short, in_tables),
        (3000, 0),
        "one entry per file, none per size"
    );
    c.finish().unwrap();
    let r = c.report();
    assert_eq!(r.dedup.len(), 6);
    for d in &r.dedup {
        assert_eq!(d.counts.unique_blocks, 3000, "at {}", d.block_size);
        assert_eq!(
            d.counts.unique_bytes,
            files.iter().map(|f| f.len() as u64).sum::<u64>()
        );
    }
}
