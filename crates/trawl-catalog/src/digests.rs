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

/// Whether `d` holds whole digests of the catalog's first algorithms (one at least): what an
/// audit writes (a row registered before an algorithm was added holds the ones before it). A
/// row cut anywhere else was not written by trawl, and comparing it would compare a part of a
/// digest (or nothing) and call the file ok.
pub(crate) fn digests_fit(algs: &[Algorithm], d: &[u8]) -> bool {
    let mut len = 0;
    algs.iter().any(|a| {
        len += a.output_len();
        len == d.len()
    })
}

/// The error for a row whose digests do not fit ([`digests_fit`]), as the database's
/// conversion error of column `col`.
pub(crate) fn misfit(algs: &[Algorithm], d: &[u8], col: usize) -> rusqlite::Error {
    let names: Vec<String> = algs
        .iter()
        .map(|a| format!("{} {} bytes", a.name(), a.output_len()))
        .collect();
    rusqlite::Error::FromSqlConversionFailure(
        col,
        rusqlite::types::Type::Blob,
        format!(
            "a row's digests are {} bytes, whole digests of none of the catalog's first algorithms ({}): not written by trawl (it may have been tampered with)",
            d.len(),
            names.join(", ")
        )
        .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_digests_of_the_first_algorithms_fit() {
        let algs = [Algorithm::Sha256, Algorithm::Md5];
        for n in [32, 48] {
            assert!(digests_fit(&algs, &vec![0; n]), "{n}");
        }
        for n in [0, 1, 16, 31, 33, 47, 49, 64] {
            assert!(!digests_fit(&algs, &vec![0; n]), "{n}");
        }
    }

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
