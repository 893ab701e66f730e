//! A catalog's digests of a file, stored concatenated in its algorithm order, split back.

use trawl_digest::Algorithm;

/// Splits a catalog's concatenated digests (in the catalog's algorithm order) by algorithm.
pub fn split_digests(algs: &[Algorithm], d: &[u8]) -> Vec<(Algorithm, Vec<u8>)> {
    let mut out = Vec::new();
    let mut off = 0;
    for a in algs {
        let n = a.output_len();
        if off + n <= d.len() {
            out.push((*a, d[off..off + n].to_vec()));
        }
        off += n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Concatenated digests are cut at each algorithm's length, in the catalog's order; a row
    /// registered before an algorithm was added holds only the ones before it, and a digest
    /// cut short is none.
    #[test]
    fn digests_split_at_each_algorithms_length() {
        let algs = [Algorithm::Sha256, Algorithm::Md5];
        let d: Vec<u8> = (0..48).collect();
        assert_eq!(
            split_digests(&algs, &d),
            [
                (Algorithm::Sha256, d[..32].to_vec()),
                (Algorithm::Md5, d[32..].to_vec())
            ]
        );
        assert_eq!(
            split_digests(&algs, &d[..32]),
            [(Algorithm::Sha256, d[..32].to_vec())]
        );
        assert_eq!(split_digests(&algs, &d[..47]).len(), 1);
        assert!(split_digests(&algs, &d[..31]).is_empty());
    }
}
