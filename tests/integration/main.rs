//! The binary driven as a user would: stdout, stderr and exit code.
//!
//! The object-store tests (and the README's, which has `s3://` lines) need the binary's `s3`
//! feature: `cargo test --workspace` has it (the Python package asks for it); a run without it
//! says that they were not built, and fails where every test is required.

mod arguments;
mod audit;
mod audit_algorithms;
mod audit_catalog;
mod audit_crash;
mod audit_metrics;
mod audit_policy;
mod audit_premis;
mod audit_schedule;
mod bag;
mod bag_hostile;
mod bag_links;
mod bag_profile;
mod bag_recover;
mod cluster;
mod exclude;
mod exclude_audit_bag;
mod fixity;
mod flv;
mod flv_inject;
mod golden;
mod interop;
mod io_errors;
mod names;
#[cfg(feature = "notify")]
mod notify;
#[cfg(feature = "s3")]
mod objects_audit;
#[cfg(feature = "s3")]
mod objects_audit_stored;
#[cfg(feature = "s3")]
mod objects_bag;
#[cfg(feature = "s3")]
mod objects_check;
#[cfg(feature = "s3")]
mod objects_exclude;
#[cfg(feature = "s3")]
mod objects_hostile;
#[cfg(feature = "s3")]
mod objects_ocfl;
#[cfg(feature = "s3")]
mod objects_ocfl_hostile;
#[cfg(feature = "s3")]
mod objects_scan;
#[cfg(feature = "s3")]
mod objects_verify;
mod ocfl;
mod ocfl_audit;
mod ocfl_inventory;
mod order;
mod outputs;
#[cfg(feature = "s3")]
mod readme;
mod reduce;
mod reduce_large;
mod report;
mod report_catalog;
mod report_sampled;
mod report_tools;
#[cfg(feature = "s3")]
mod s3_harness;
#[cfg(feature = "s3")]
mod s3_support;
mod scale;
mod scan;
mod scan_errors;
mod scan_reuse;
mod scan_stop;
mod serve;
mod serve_clients;
mod shell;
mod special_files;
mod stages;
mod streams;
mod util;
mod verify;
mod verify_gnu;

#[cfg(not(feature = "s3"))]
#[test]
fn object_store_tests_are_built() {
    util::skip("built without the `s3` feature: the object-store and README tests are left out");
}

/// A build without the S3 client refuses `s3://` roots in one line naming the build that reads
/// them (exit 2), and creates nothing (no catalog, no manifest).
#[cfg(not(feature = "s3"))]
#[test]
fn a_build_without_the_s3_client_refuses_object_roots() {
    let d = util::Dir::new();
    for args in [
        vec!["scan", "s3://bkt/p", "-m", "sha256sum:SUMS"],
        vec!["audit", "s3://bkt/p", "-c", "cat.db"],
        vec!["check", ".", "s3://bkt/p"],
        vec!["bag", "validate", "s3://bkt/p"],
        vec!["ocfl", "validate", "s3://bkt/p"],
    ] {
        d.cmd()
            .args(&args)
            .run()
            .code(2)
            .stderr_has("built without object storage")
            .stderr_has("--features s3");
    }
    assert!(!d.join("SUMS").exists() && !d.join("cat.db").exists());
}

/// A build without the `notify` feature refuses the notice flags with one line naming it.
#[cfg(not(feature = "notify"))]
#[test]
fn notice_flags_name_the_feature_without_it() {
    let d = util::Dir::new();
    d.create(b"t/a", b"a\n");
    let r = d
        .cmd()
        .args([
            "audit",
            "t",
            "-c",
            "cat.db",
            "--notify-webhook",
            "http://127.0.0.1:9/",
        ])
        .run();
    r.code(2).stderr_has("--features notify");
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(!d.join("cat.db").exists());
}
