//! A BagIt Profile comes from outside (a depositor's, a repository's): the profile reader on
//! arbitrary bytes, and each profile it accepts held against the bag `bag create` would make to
//! it. Never a panic; the lines a bag gets from the profile are its identifier first, and once
//! given they are not asked for again; a bag carrying them names the profile as it must; every
//! finding names the profile it comes from.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl_bag::Profile;
use trawl_digest::Algorithm;

fuzz_target!(|data: &[u8]| {
    let Ok(profile) = Profile::parse(data) else {
        return;
    };
    let id = profile.identifier();
    let fixed = profile.fixed_info(&[]);
    assert_eq!(
        fixed.first(),
        Some(&("BagIt-Profile-Identifier".to_string(), id.clone()))
    );
    assert_eq!(profile.fixed_info(&fixed), []);
    let _ = profile.has_payload_rules();
    let payload = vec![
        ("data/a.txt".to_string(), 3),
        ("data/sub/.b".to_string(), 0),
        ("data/sub/c d/e%0A".to_string(), 1),
    ];
    for payload in [None, Some(payload)] {
        let check = profile.check_planned(
            &fixed,
            &[Algorithm::Sha256, Algorithm::Md5],
            &["extra.txt".to_string(), "meta/x.xml".to_string()],
            payload,
        );
        for f in check.departures.iter().chain(&check.warnings) {
            assert_eq!(f.subject.as_deref(), Some("profile"));
            assert!(f.message.ends_with(&format!("({id})")), "{}", f.message);
        }
        for f in &check.departures {
            assert!(
                !f.message.starts_with("BagIt-Profile-Identifier:"),
                "{}",
                f.message
            );
        }
    }
});
