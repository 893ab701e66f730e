//! Duplicate files as groups: files of equal size and equal digest, one name per inode (hard
//! links of one inode are one file, not copies), empty files left out. The report carries the
//! totals and the groups that waste most; every group goes to `--duplicates`.

use serde::{Deserialize, Serialize};

/// One group of files with equal content, names as bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct FileGroup {
    /// Each file's size.
    pub size: u64,
    /// Their digest.
    pub digest: Vec<u8>,
    /// Absolute names, one per inode.
    pub names: Vec<Vec<u8>>,
}

impl FileGroup {
    /// As the report lists it (names made text, lossily).
    pub fn to_report(&self) -> DuplicateGroup {
        DuplicateGroup {
            size: self.size,
            digest: hex::encode(&self.digest),
            count: self.names.len() as u64,
            files: self
                .names
                .iter()
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .collect(),
        }
    }
}

/// One group of files with equal content, as the report lists it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DuplicateGroup {
    /// Bytes of each file.
    pub size: u64,
    /// The digest they share, hex (of [`DuplicateSummary::algorithm`]).
    pub digest: String,
    /// How many files (distinct inodes) hold it.
    pub count: u64,
    /// Their names, as absolute paths; in the report's `top` at most
    /// [`DuplicateSummary::NAMES_SHOWN`] of them.
    pub files: Vec<String>,
}

impl DuplicateGroup {
    /// Bytes that removing all copies but one would free.
    pub fn redundant_bytes(&self) -> u64 {
        self.size * self.count.saturating_sub(1)
    }
}

/// The duplicate files of a scan, in sum.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DuplicateSummary {
    /// The digest files were compared by (the strongest computed).
    pub algorithm: String,
    /// Groups of equal files.
    pub groups: u64,
    /// Files in the groups, and their bytes.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Files beyond the first of each group, and their bytes.
    pub redundant_files: u64,
    /// Their bytes.
    pub redundant_bytes: u64,
    /// The groups with the most redundant bytes, most first (ties by digest).
    pub top: Vec<DuplicateGroup>,
}

impl DuplicateSummary {
    /// Groups kept in `top`.
    pub const TOP: usize = 20;
    /// Names listed per group of `top`.
    pub const NAMES_SHOWN: usize = 10;

    /// Counts a group in, keeping it in `top` if it is among the largest.
    pub fn add(&mut self, g: &DuplicateGroup) {
        self.groups += 1;
        self.files += g.count;
        self.bytes += g.size * g.count;
        self.redundant_files += g.count - 1;
        self.redundant_bytes += g.redundant_bytes();
        let better = |a: &DuplicateGroup, b: &DuplicateGroup| {
            b.redundant_bytes()
                .cmp(&a.redundant_bytes())
                .then_with(|| a.digest.cmp(&b.digest))
        };
        if self.top.len() == Self::TOP
            && self
                .top
                .last()
                .is_some_and(|last| better(last, g) != std::cmp::Ordering::Greater)
        {
            return;
        }
        let mut g = g.clone();
        g.files.truncate(Self::NAMES_SHOWN);
        self.top.push(g);
        self.top.sort_by(better);
        self.top.truncate(Self::TOP);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(size: u64, count: u64, digest: &str) -> DuplicateGroup {
        DuplicateGroup {
            size,
            digest: digest.into(),
            count,
            files: (0..count).map(|i| format!("/f{i}")).collect(),
        }
    }

    #[test]
    fn totals_count_every_group_and_top_keeps_the_largest_wastes() {
        let mut s = DuplicateSummary::default();
        for i in 0..30u64 {
            s.add(&g(100 + i, 2 + i % 3, &format!("{i:02}")));
        }
        assert_eq!(s.groups, 30);
        let files: u64 = (0..30u64).map(|i| 2 + i % 3).sum();
        assert_eq!(s.files, files);
        assert_eq!(s.redundant_files, files - 30);
        let waste: Vec<u64> = s.top.iter().map(DuplicateGroup::redundant_bytes).collect();
        assert_eq!(waste.len(), DuplicateSummary::TOP);
        assert!(waste.windows(2).all(|w| w[0] >= w[1]), "{waste:?}");
        let mut all: Vec<u64> = (0..30u64).map(|i| (100 + i) * (1 + i % 3)).collect();
        all.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(waste, all[..DuplicateSummary::TOP]);
        assert!(
            s.top
                .iter()
                .all(|g| g.files.len() <= DuplicateSummary::NAMES_SHOWN)
        );
    }
}
