//! The pool a spread file's work runs on has `-j` threads, whatever the machine's cores (a
//! process of its own: the pool is made once a process, so no other test may make it first).

#[test]
fn the_first_file_that_spreads_sizes_the_pool_to_its_scans_threads() {
    let spread = trawl_scan::Spread::default();
    assert!(!spread.begin(1 << 30, 1 << 20, 1).yes, "-j1 never spreads");
    assert!(spread.begin(1 << 30, 1 << 20, 3).yes);
    assert_eq!(rayon_core::current_num_threads(), 3);
    // A later scan with another -j shares the pool made first.
    assert!(trawl_scan::Spread::default().begin(1 << 30, 1 << 20, 5).yes);
    assert_eq!(rayon_core::current_num_threads(), 3);
}
