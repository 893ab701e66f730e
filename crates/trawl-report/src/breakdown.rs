//! Where the bytes, the duplicates and the compressible data are: by directory (at a depth
//! below each root), by file type (extension and magic bytes), and the directories whose whole
//! content occurs more than once.

use serde::{Deserialize, Serialize};

/// The figures of a set of files. Duplicate and saved bytes are at the smallest dedup block
/// size, as `top_files` counts them; `allocated_bytes` is what the first codec stores of them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Figures {
    /// Files.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Bytes of blocks that occur more than once in the scan.
    pub duplicate_bytes: u64,
    /// Their share of what dedup saves (each block stored `c` times saves `(c-1) x len`,
    /// shared by its `c` occurrences).
    pub saved_bytes: u64,
    /// Bytes stored after compression, unit by unit, before dedup (zero units take none).
    pub allocated_bytes: u64,
}

impl Figures {
    /// Adds `o`'s figures to these.
    pub fn add(&mut self, o: &Figures) {
        self.files += o.files;
        self.bytes += o.bytes;
        self.duplicate_bytes += o.duplicate_bytes;
        self.saved_bytes += o.saved_bytes;
        self.allocated_bytes += o.allocated_bytes;
    }
}

/// One directory at the breakdown's depth (its files and everything below it).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DirectoryRow {
    /// As reports spell paths, with a trailing `/`.
    pub path: String,
    /// Its figures.
    #[serde(flatten)]
    pub figures: Figures,
}

/// Files of one extension and one detected format.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TypeRow {
    /// Lower-cased, without the dot; `""` for none, `"(other)"` past the rows kept.
    pub extension: String,
    /// The format the first bytes show (a MIME type), `""` when none is recognised.
    pub format: String,
    /// An already-compressed format (compressed media, archives): it will not shrink further.
    pub compressed_format: bool,
    /// Their figures.
    #[serde(flatten)]
    pub figures: Figures,
}

/// Directories with equal content: the same names holding files of equal digests, all the
/// way down.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DuplicateDirectories {
    /// Files and bytes in each of them.
    pub files: u64,
    /// Bytes in each of them.
    pub bytes: u64,
    /// How many directories are equal.
    pub count: u64,
    /// At most [`Breakdown::NAMES_SHOWN`] of them.
    pub directories: Vec<String>,
}

/// The breakdowns of a scan (`breakdown` in its JSON).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Breakdown {
    /// Directories are taken this many levels below each root (1: the root's own
    /// subdirectories; files directly in a root count under the root).
    pub depth: usize,
    /// The directories with the most bytes, most first.
    pub directories: Vec<DirectoryRow>,
    /// The rest of the directories, in sum, and how many they are.
    pub other_directories: Option<Figures>,
    /// How many directories that is.
    pub other_directory_count: u64,
    /// By type, most bytes first.
    pub types: Vec<TypeRow>,
    /// Groups of equal directories (compared by the strongest digest computed), most bytes
    /// wasted first; a group inside one that is listed is not listed again. `None` when no
    /// digest was computed.
    pub duplicate_directories: Option<Vec<DuplicateDirectories>>,
}

impl Breakdown {
    /// Directories listed; the rest are summed.
    pub const DIRECTORIES: usize = 500;
    /// Type rows kept; past it, types go to `(other)`.
    pub const TYPES: usize = 200;
    /// Groups of equal directories listed.
    pub const DUPLICATE_GROUPS: usize = 100;
    /// Names listed per group of equal directories.
    pub const NAMES_SHOWN: usize = 10;
}
