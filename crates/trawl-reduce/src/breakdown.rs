//! The figures broken down by directory (at a depth below each root) and by type (extension
//! and the format the first bytes show), from each file's share of the duplicates, its bytes
//! and what the first codec stores of it. Files come one at a time in the order they were
//! numbered; directories are summed through a spool (their number is bounded by nothing but
//! the tree), types in a map of at most [`TYPE_KEYS`] keys.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;

use trawl_report::{Breakdown, DirectoryRow, Figures, TypeRow};
use trawl_spool::Spool;

use crate::attribution::{Share, whole_bytes};
use crate::config::BreakdownConfig;

/// Distinct (extension, format) pairs counted apart; past it, new ones go to `(other)`.
const TYPE_KEYS: usize = 4096;

/// Bytes of directory rows held in RAM before they go to disk.
const DIRS_MEMORY: usize = 4 << 20;

/// A file's figures with its share of the saving in parts of a byte ([`Share`]), rounded to
/// the byte once, per row.
#[derive(Default, Clone)]
struct Acc {
    f: Figures,
    saved: Share,
}

impl Acc {
    fn add(&mut self, o: &Acc) {
        self.f.add(&o.f);
        self.saved = self.saved.saturating_add(o.saved);
    }

    fn done(mut self) -> Figures {
        self.f.saved_bytes = whole_bytes(self.saved);
        self.f
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.clear();
        for v in [
            self.f.files,
            self.f.bytes,
            self.f.duplicate_bytes,
            self.f.allocated_bytes,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.saved.to_le_bytes());
    }

    fn decode(v: &[u8]) -> io::Result<Acc> {
        if v.len() != 48 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a breakdown record is damaged",
            ));
        }
        let at = |i: usize| u64::from_le_bytes(v[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        Ok(Acc {
            f: Figures {
                files: at(0),
                bytes: at(1),
                duplicate_bytes: at(2),
                saved_bytes: 0,
                allocated_bytes: at(3),
            },
            saved: u128::from_le_bytes(v[32..48].try_into().expect("16 bytes")),
        })
    }
}

/// Sums files into directory and type rows.
pub(crate) struct BreakdownBuilder {
    cfg: BreakdownConfig,
    types: HashMap<(String, &'static str), Acc>,
    dirs: Spool,
    key: Vec<u8>,
    val: Vec<u8>,
}

/// Whether a format is already compressed (compressed media, compressed archives and the
/// office formats that are zip files): such files will not shrink further.
pub fn compressed_format(mime: &str) -> bool {
    const RAW: &[&str] = &[
        "image/bmp",
        "image/tiff",
        "image/vnd.microsoft.icon",
        "image/vnd.adobe.photoshop",
        "image/x-canon-cr2",
        "audio/x-wav",
        "audio/x-aiff",
        "application/x-tar",
        "application/x-cpio",
        "application/x-unix-archive",
        "application/vnd.sqlite3",
        "application/x-executable",
        "application/wasm",
    ];
    if RAW.contains(&mime) {
        return false;
    }
    mime.starts_with("image/")
        || mime.starts_with("video/")
        || mime.starts_with("audio/")
        || mime.starts_with("font/woff")
        || mime.contains("zip")
        || mime.contains("compressed")
        || mime.contains("openxmlformats")
        || mime.contains("opendocument")
        || [
            "application/gzip",
            "application/x-bzip2",
            "application/x-xz",
            "application/zstd",
            "application/x-lzip",
            "application/x-lz4",
            "application/vnd.rar",
            "application/x-rar-compressed",
            "application/x-rpm",
            "application/vnd.debian.binary-package",
            "application/epub+zip",
            "application/x-shockwave-flash",
            "application/x-xpinstall",
            "application/java-archive",
        ]
        .contains(&mime)
}

/// The extension of a file name, lower-cased (`""` for none, `(other)` for one that is not a
/// short run of letters and digits). Version numbers after it are not one: `libfoo.so.1.0.199`
/// is a `so`, `python3.11` has none.
fn extension(name: &[u8]) -> String {
    let file = name.rsplit(|b| *b == b'/').next().unwrap_or(name);
    // A leading dot starts a hidden name, not an extension.
    let body = file.strip_prefix(b".").unwrap_or(file);
    let mut parts = body.split(|b| *b == b'.');
    parts.next(); // the name itself
    let parts: Vec<&[u8]> = parts.collect();
    let e = match parts
        .iter()
        .rev()
        .find(|p| p.is_empty() || !p.iter().all(u8::is_ascii_digit))
    {
        None => return String::new(),
        Some(e) => *e,
    };
    if (1..=12).contains(&e.len()) && e.iter().all(u8::is_ascii_alphanumeric) {
        String::from_utf8_lossy(e).to_ascii_lowercase()
    } else {
        "(other)".into()
    }
}

impl BreakdownBuilder {
    pub(crate) fn new(cfg: BreakdownConfig, temp_dir: &std::path::Path) -> BreakdownBuilder {
        BreakdownBuilder {
            cfg,
            types: HashMap::new(),
            dirs: Spool::new(temp_dir, DIRS_MEMORY),
            key: Vec::new(),
            val: Vec::new(),
        }
    }

    /// The directory a file counts under: its root and up to `depth` directories below it,
    /// with a trailing `/`.
    fn directory(&mut self, name: &[u8]) {
        let root = self
            .cfg
            .roots
            .iter()
            .filter(|r| {
                r.as_slice() == b"."
                    || (r.as_slice() == b"/" && name.starts_with(b"/"))
                    || name == r.as_slice()
                    || (name.starts_with(r) && name.get(r.len()) == Some(&b'/'))
            })
            .max_by_key(|r| r.len());
        let (prefix, rest): (&[u8], &[u8]) = match root {
            Some(r) if r.as_slice() == b"." => (b"", name),
            Some(r) if r.as_slice() == b"/" => (b"/", &name[1..]),
            Some(r) if name.len() > r.len() => (&name[..r.len()], &name[r.len() + 1..]),
            Some(r) => (r.as_slice(), b""),
            None => (b"", name),
        };
        let mut dirs: Vec<&[u8]> = rest.split(|b| *b == b'/').collect();
        dirs.pop(); // the file's own name
        dirs.truncate(self.cfg.depth);
        self.key.clear();
        self.key.extend_from_slice(prefix);
        for d in dirs {
            if !self.key.is_empty() && !self.key.ends_with(b"/") {
                self.key.push(b'/');
            }
            self.key.extend_from_slice(d);
        }
        if self.key.is_empty() {
            self.key.push(b'.');
        }
        if !self.key.ends_with(b"/") {
            self.key.push(b'/');
        }
    }

    /// Counts one file in.
    pub(crate) fn add(
        &mut self,
        name: &[u8],
        size: u64,
        duplicate: u64,
        saved: Share,
        allocated: u64,
        kind: Option<&'static str>,
    ) -> io::Result<()> {
        let a = Acc {
            f: Figures {
                files: 1,
                bytes: size,
                duplicate_bytes: duplicate,
                saved_bytes: 0,
                allocated_bytes: allocated,
            },
            saved,
        };
        let mut key = (extension(name), kind.unwrap_or(""));
        if !self.types.contains_key(&key) && self.types.len() >= TYPE_KEYS {
            key = ("(other)".into(), "");
        }
        self.types.entry(key).or_default().add(&a);
        self.directory(name);
        a.encode(&mut self.val);
        self.dirs.push(&self.key, &self.val)
    }

    /// The rows: directories and types with the most bytes first (ties by name).
    pub(crate) fn finish(self) -> io::Result<Breakdown> {
        let sorted = Arc::new(self.dirs.finish()?);
        let mut top: Vec<(Vec<u8>, Acc)> = Vec::new();
        let mut other = Acc::default();
        let mut other_count = 0u64;
        let order = |a: &(Vec<u8>, Acc), b: &(Vec<u8>, Acc)| {
            b.1.f.bytes.cmp(&a.1.f.bytes).then_with(|| a.0.cmp(&b.0))
        };
        let keep = Breakdown::DIRECTORIES;
        let mut offer = |row: (Vec<u8>, Acc), top: &mut Vec<(Vec<u8>, Acc)>| {
            top.push(row);
            if top.len() >= 2 * keep + 64 {
                top.sort_by(order);
                for (_, a) in top.drain(keep..) {
                    other.add(&a);
                    other_count += 1;
                }
            }
        };
        let mut cur: Option<(Vec<u8>, Acc)> = None;
        sorted.for_each(|k, v| -> io::Result<()> {
            let a = Acc::decode(v)?;
            match &mut cur {
                Some((ck, ca)) if ck.as_slice() == k => ca.add(&a),
                _ => {
                    if let Some(row) = cur.take() {
                        offer(row, &mut top);
                    }
                    cur = Some((k.to_vec(), a));
                }
            }
            Ok(())
        })?;
        if let Some(row) = cur.take() {
            offer(row, &mut top);
        }
        top.sort_by(order);
        if top.len() > keep {
            for (_, a) in top.drain(keep..) {
                other.add(&a);
                other_count += 1;
            }
        }
        let types = type_rows(self.types);
        Ok(Breakdown {
            depth: self.cfg.depth,
            directories: top
                .into_iter()
                .map(|(k, a)| DirectoryRow {
                    path: String::from_utf8_lossy(&k).into_owned(),
                    figures: a.done(),
                })
                .collect(),
            other_directories: (other_count > 0).then(|| other.done()),
            other_directory_count: other_count,
            types,
            duplicate_directories: None,
        })
    }
}

/// The rows by type: the most bytes first (ties by extension and format), past
/// [`Breakdown::TYPES`] the rest summed in one `(other)` row.
fn type_rows(types: HashMap<(String, &'static str), Acc>) -> Vec<TypeRow> {
    let mut types: Vec<TypeRow> = types
        .into_iter()
        .map(|((extension, format), a)| TypeRow {
            extension,
            format: format.to_string(),
            compressed_format: compressed_format(format),
            figures: a.done(),
        })
        .collect();
    types.sort_by(|a, b| {
        b.figures
            .bytes
            .cmp(&a.figures.bytes)
            .then_with(|| (&a.extension, &a.format).cmp(&(&b.extension, &b.format)))
    });
    if types.len() > Breakdown::TYPES {
        let mut rest = TypeRow {
            extension: "(other)".into(),
            format: String::new(),
            compressed_format: false,
            figures: Figures::default(),
        };
        for t in types.drain(Breakdown::TYPES - 1..) {
            rest.figures.add(&t.figures);
        }
        types.push(rest);
    }
    types
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribution::SHARE_ONE;

    fn builder(depth: usize, roots: &[&str]) -> BreakdownBuilder {
        BreakdownBuilder::new(
            BreakdownConfig {
                depth,
                roots: roots.iter().map(|r| r.as_bytes().to_vec()).collect(),
            },
            &std::env::temp_dir(),
        )
    }

    fn dir_of(b: &mut BreakdownBuilder, name: &str) -> String {
        b.directory(name.as_bytes());
        String::from_utf8(b.key.clone()).unwrap()
    }

    #[test]
    fn a_file_counts_under_its_directory_at_the_depth_below_its_root() {
        let mut b = builder(2, &["data/x", "other"]);
        assert_eq!(dir_of(&mut b, "data/x/a/b/c/f.txt"), "data/x/a/b/");
        assert_eq!(dir_of(&mut b, "data/x/a/f.txt"), "data/x/a/");
        assert_eq!(dir_of(&mut b, "data/x/f.txt"), "data/x/");
        assert_eq!(dir_of(&mut b, "other/q/w/e/r"), "other/q/w/");
        let mut b = builder(1, &["."]);
        assert_eq!(dir_of(&mut b, "a/b/f"), "a/");
        assert_eq!(dir_of(&mut b, "f"), "./");
        // A root that is a file.
        let mut b = builder(1, &["one.bin"]);
        assert_eq!(dir_of(&mut b, "one.bin"), "one.bin/");
        let mut b = builder(1, &["/"]);
        assert_eq!(dir_of(&mut b, "/etc/x/f"), "/etc/");
        assert_eq!(dir_of(&mut b, "/f"), "/");
    }

    #[test]
    fn extensions_are_short_lower_case_runs() {
        assert_eq!(extension(b"a/b/Photo.JPG"), "jpg");
        assert_eq!(extension(b"a/.bashrc"), "");
        assert_eq!(extension(b"a.d/noext"), "");
        assert_eq!(extension(b"x.tar.gz"), "gz");
        assert_eq!(extension(b"x.what ever"), "(other)");
        // Version numbers are not extensions: the one before them is.
        assert_eq!(extension(b"lib/libfoo.so.1.0.199"), "so");
        assert_eq!(extension(b"bin/python3.11"), "");
        assert_eq!(extension(b"a/archive.001"), "");
        assert_eq!(extension(b"a/x.tar.gz"), "gz");
        assert_eq!(extension(b"a/.hidden.conf"), "conf");
        assert_eq!(extension(b"a/name."), "(other)");
    }

    #[test]
    fn rows_sum_their_files_and_the_rest_is_other() {
        let mut b = builder(1, &["r"]);
        for i in 0..(Breakdown::DIRECTORIES + 10) {
            b.add(
                format!("r/d{i:04}/f.bin").as_bytes(),
                1000 + i as u64,
                10,
                5 * SHARE_ONE / 2,
                7,
                None,
            )
            .unwrap();
        }
        b.add(b"r/d0000/g.jpg", 5, 0, 0, 5, Some("image/jpeg"))
            .unwrap();
        let r = b.finish().unwrap();
        assert_eq!(r.directories.len(), Breakdown::DIRECTORIES);
        assert_eq!(r.other_directory_count, 10);
        let total: u64 = r.directories.iter().map(|d| d.figures.files).sum::<u64>()
            + r.other_directories.as_ref().unwrap().files;
        assert_eq!(total, Breakdown::DIRECTORIES as u64 + 11);
        assert!(
            r.directories
                .windows(2)
                .all(|w| w[0].figures.bytes >= w[1].figures.bytes)
        );
        let first = &r.directories[0];
        assert_eq!(first.path, format!("r/d{:04}/", Breakdown::DIRECTORIES + 9));
        assert_eq!(first.figures.saved_bytes, 3, "2.5 rounded once per row");
        let jpg = r.types.iter().find(|t| t.extension == "jpg").unwrap();
        assert!(jpg.compressed_format && jpg.format == "image/jpeg");
        let bin = r.types.iter().find(|t| t.extension == "bin").unwrap();
        assert_eq!(bin.figures.files, Breakdown::DIRECTORIES as u64 + 10);
        assert!(!bin.compressed_format);
    }

    #[test]
    fn a_rows_saving_is_the_same_whatever_order_its_files_come_in() {
        // Shares of files of 2^40 and 10^11 bytes stored three times over (and a small one)
        // whose float sum is ...221.4999 one way and ...221.5 the other: rounded, 1 byte apart.
        let shares: [f64; 5] = [
            733_007_751_850.666_6,
            66_666_666_666.666_664,
            37_036.5,
            66_666_666_666.666_664,
            1.0,
        ];
        let float = |order: &mut dyn Iterator<Item = &f64>| order.sum::<f64>().round() as u64;
        assert_ne!(float(&mut shares.iter()), float(&mut shares.iter().rev()));
        let row = |order: &mut dyn Iterator<Item = &f64>| {
            let mut acc = Acc::default();
            for &share in order {
                acc.add(&Acc {
                    f: Figures::default(),
                    saved: (share * SHARE_ONE as f64).round() as Share,
                });
            }
            let mut bytes = Vec::new();
            acc.encode(&mut bytes);
            Acc::decode(&bytes).unwrap().done().saved_bytes
        };
        assert_eq!(row(&mut shares.iter()), row(&mut shares.iter().rev()));
    }
}
