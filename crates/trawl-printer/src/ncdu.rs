//! ncdu's JSON export format (version 1.2), so that `ncdu -f FILE` browses a scanned tree. The
//! files come in path order, so a directory's entries are contiguous and the nesting is written
//! as it comes, with a stack of the open directories: nothing is held per file.
//!
//! Names are written as ncdu writes them: JSON strings whose bytes are the name's bytes, only
//! `"`, `\` and control characters escaped, so a name that is not UTF-8 keeps its bytes. That is
//! why the strings are escaped here rather than by serde_json, which writes UTF-8 only.

use std::io::{self, Write};

/// Writes one export.
pub struct NcduWriter<W: Write> {
    out: W,
    /// The directories open below the root, outermost first.
    open: Vec<Vec<u8>>,
}

/// One file of the tree.
pub struct NcduFile<'a> {
    /// Its path below the root, `/`-separated.
    pub rel: &'a [u8],
    /// Apparent size and bytes on disk.
    pub asize: u64,
    /// Bytes on disk.
    pub dsize: u64,
    /// Inode number.
    pub ino: u64,
    /// Names of the inode.
    pub nlink: u64,
}

fn name(out: &mut impl Write, n: &[u8]) -> io::Result<()> {
    out.write_all(b"\"")?;
    let mut from = 0;
    for (i, &b) in n.iter().enumerate() {
        let esc: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\t' => Some(b"\\t"),
            b'\r' => Some(b"\\r"),
            0..0x20 | 0x7f => None,
            _ => continue,
        };
        out.write_all(&n[from..i])?;
        match esc {
            Some(e) => out.write_all(e)?,
            None => write!(out, "\\u{b:04x}")?,
        }
        from = i + 1;
    }
    out.write_all(&n[from..])?;
    out.write_all(b"\"")
}

impl<W: Write> NcduWriter<W> {
    /// Starts the export: `root` is the scanned directory's absolute name.
    pub fn new(mut out: W, root: &[u8], progver: &str, timestamp: u64) -> io::Result<Self> {
        write!(
            out,
            "[1,2,{{\"progname\":\"trawl\",\"progver\":\"{progver}\",\"timestamp\":{timestamp}}},\n[{{\"name\":"
        )?;
        name(&mut out, root)?;
        out.write_all(b"}")?;
        Ok(NcduWriter {
            out,
            open: Vec::new(),
        })
    }

    /// Adds a file; files must come in path order (bytes).
    pub fn file(&mut self, f: &NcduFile<'_>) -> io::Result<()> {
        let parts: Vec<&[u8]> = f
            .rel
            .split(|b| *b == b'/')
            .filter(|p| !p.is_empty())
            .collect();
        let Some((file, dirs)) = parts.split_last() else {
            return Ok(());
        };
        let common = self
            .open
            .iter()
            .zip(dirs)
            .take_while(|(a, b)| a.as_slice() == **b)
            .count();
        while self.open.len() > common {
            self.out.write_all(b"]")?;
            self.open.pop();
        }
        for d in &dirs[common..] {
            self.out.write_all(b",\n[{\"name\":")?;
            name(&mut self.out, d)?;
            self.out.write_all(b"}")?;
            self.open.push(d.to_vec());
        }
        self.out.write_all(b",\n{\"name\":")?;
        name(&mut self.out, file)?;
        write!(
            self.out,
            ",\"asize\":{},\"dsize\":{},\"ino\":{}",
            f.asize, f.dsize, f.ino
        )?;
        if f.nlink > 1 {
            write!(self.out, ",\"hlnkc\":true,\"nlink\":{}", f.nlink)?;
        }
        self.out.write_all(b"}")
    }

    /// Closes every open directory and the export.
    pub fn finish(mut self) -> io::Result<W> {
        for _ in 0..self.open.len() {
            self.out.write_all(b"]")?;
        }
        self.out.write_all(b"]]\n")?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(rel: &[u8], asize: u64) -> NcduFile<'_> {
        NcduFile {
            rel,
            asize,
            dsize: 4096,
            ino: asize,
            nlink: 1,
        }
    }

    #[test]
    fn directories_nest_as_the_paths_come_and_the_export_is_json() {
        let mut w = NcduWriter::new(Vec::new(), b"/r", "0.1.0", 5).unwrap();
        for (p, n) in [
            (&b"a/b.txt"[..], 1),
            (b"a/b/c", 2),
            (b"a/b/d/e", 3),
            (b"a/z", 4),
            (b"top", 5),
        ] {
            w.file(&f(p, n)).unwrap();
        }
        let out = w.finish().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let root = &v[3];
        assert_eq!(root[0]["name"], "/r");
        assert_eq!(root[1][0]["name"], "a");
        assert_eq!(root[1][1]["name"], "b.txt");
        assert_eq!(root[1][2][0]["name"], "b");
        assert_eq!(root[1][2][1]["asize"], 2);
        assert_eq!(root[1][2][2][0]["name"], "d");
        assert_eq!(root[1][2][2][1]["name"], "e");
        assert_eq!(root[1][3]["name"], "z");
        assert_eq!(root[2]["name"], "top");
        assert_eq!(root.as_array().unwrap().len(), 3);
    }

    #[test]
    fn names_keep_their_bytes_with_only_json_escapes() {
        let mut out = Vec::new();
        name(&mut out, b"q\"b\\s\n\x01\xff").unwrap();
        assert_eq!(out, b"\"q\\\"b\\\\s\\n\\u0001\xff\"");
    }
}
