//! A multipart upload's ETag: the MD5 of its parts' MD5s, then `-N`, the part count. Written
//! here because it is a definition of S3's, a few lines, not an algorithm any crate offers.

use md5::{Digest, Md5};

/// The ETag S3 gives a multipart upload whose parts have these MD5s (raw bytes each).
pub fn multipart_etag(part_md5s: &[[u8; 16]]) -> String {
    let mut h = Md5::new();
    for p in part_md5s {
        h.update(p);
    }
    format!("{}-{}", hex::encode(h.finalize()), part_md5s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_parts_give_the_md5_of_their_md5s() {
        // Independent reference: python3 -c "import hashlib as h; a=h.md5(b'a'*5).digest();
        // b=h.md5(b'b').digest(); print(h.md5(a+b).hexdigest()+'-2')"
        let a: [u8; 16] = Md5::digest(b"aaaaa").into();
        let b: [u8; 16] = Md5::digest(b"b").into();
        assert_eq!(multipart_etag(&[a, b]), REFERENCE);
    }

    const REFERENCE: &str = "d6cf633d4421b23c497ad462505168a1-2";
}
