//! What a cluster's tasks send the client: a scan's listing, an audit's listing and an audit's
//! reads, from other machines. Arbitrary bytes decode or give an error, never a panic; a listing
//! that decodes encodes to bytes that decode to the same listing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl_cluster::Listing;
use trawl_digest::Algorithm;

fuzz_target!(|data: &[u8]| {
    if let Ok(l) = Listing::decode(data) {
        let once = l.encode();
        let again = Listing::decode(&once).expect("an encoding decodes");
        assert_eq!(again.encode(), once);
    }
    let _ = trawl_cluster::wire::audit_listing(data);
    let _ = trawl_cluster::wire::audit_reads(data, &[Algorithm::Sha256, Algorithm::Md5]);
});
