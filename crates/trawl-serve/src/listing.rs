//! The page a directory's path (ending in `/`) answers: the files served in it and its
//! subdirectories, as relative links, names escaped. Only what a request could reach is
//! listed: each file is opened beneath the root by the same rules as a request for it (a link
//! that leads outside, a dotfile, a catalog, or with `--all` off anything but an FLV file, is
//! left out); subdirectories are listed when they are directories themselves (a link to a
//! directory is not followed).

use maud::{DOCTYPE, html};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_encode};

use crate::resolve::{self, RootDir, Serving};
use trawl_read::{EntryKind, Refused};

/// Entries listed at most; past it the page says how many more there are.
pub const MAX_LISTED: usize = 10_000;

/// What a link's path segment keeps as it is (RFC 3986's unreserved characters); everything
/// else is percent-encoded, so a name can be neither markup nor another path.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// One line of the page.
struct Entry {
    name: Vec<u8>,
    /// `None` for a directory.
    size: Option<u64>,
}

/// The page for the directory `raw_path` (a request path ending in `/`) names beneath `root`.
pub fn page(root: &RootDir, raw_path: &str, serving: Serving) -> Result<String, Refused> {
    let (dir, segs) = resolve::open_dir(root, raw_path)?;
    let mut names = dir.entries().map_err(|_| Refused::NotFound)?;
    names.retain(|(n, _)| !n.starts_with(b"."));
    names.sort_by(|a, b| a.0.cmp(&b.0));
    let (entries, more) = listed(names, MAX_LISTED, |name, kind| match kind {
        EntryKind::Dir => Some(Entry { name, size: None }),
        EntryKind::File | EntryKind::Symlink => {
            let mut path = segs.clone();
            path.push(name.clone());
            resolve::open_segments(root, path, serving)
                .ok()
                .and_then(|f| f.metadata().ok())
                .map(|m| Entry {
                    name,
                    size: Some(m.len()),
                })
        }
        EntryKind::Other => None,
    });
    let title = percent_encoding::percent_decode_str(raw_path)
        .decode_utf8_lossy()
        .into_owned();
    Ok(markup(&title, !segs.is_empty(), serving, &entries, more))
}

/// The first `max` of `names` (in order) that `look` finds listable, and whether one more
/// is: `look` (which may open a file) is asked of no name past that one, so a huge directory
/// costs a request no more than the page shows.
fn listed(
    names: Vec<(Vec<u8>, EntryKind)>,
    max: usize,
    mut look: impl FnMut(Vec<u8>, EntryKind) -> Option<Entry>,
) -> (Vec<Entry>, bool) {
    let mut entries = Vec::new();
    for (name, kind) in names {
        if let Some(e) = look(name, kind) {
            if entries.len() == max {
                return (entries, true);
            }
            entries.push(e);
        }
    }
    (entries, false)
}

/// The page's HTML: `entries` as relative links (a `../` link below the top, `up`), and a
/// line saying there are `more`.
fn markup(title: &str, up: bool, serving: Serving, entries: &[Entry], more: bool) -> String {
    let what = match serving {
        Serving::Media => "FLV files",
        Serving::All => "files",
    };
    let files = entries.iter().filter(|e| e.size.is_some()).count();
    let markup = html! {
        (DOCTYPE)
        html {
            head {
                meta charset="utf-8";
                title { "Index of " (title) }
            }
            body {
                h1 { "Index of " (title) }
                @if entries.is_empty() {
                    p { "No " (what) " here." }
                }
                ul {
                    @if up {
                        li { a href="../" { "../" } }
                    }
                    @for e in entries {
                        // The link is the name's own bytes, encoded: a name that is not UTF-8
                        // is shown lossily, but its link leads to it, not to the name its lossy
                        // copy spells (`caf\xff` and `caf\u{fffd}` are two files).
                        @let shown = String::from_utf8_lossy(&e.name);
                        @let link = percent_encode(&e.name, SEGMENT).to_string();
                        @match e.size {
                            None => li { a href={ (link) "/" } { (shown) "/" } },
                            Some(n) => li { a href=(link) { (shown) } " " (n) " bytes" },
                        }
                    }
                }
                @if more {
                    p { "... and more, not listed (the first " (entries.len()) " are)." }
                }
                p { (files) " " (what) " listed; seek in one with ?start=SECONDS." }
            }
        }
    };
    markup.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past the entries shown, one more is looked at (to say there are more) and no other:
    /// a directory of many files costs a request what the page shows, HEAD included.
    #[test]
    fn no_name_past_the_shown_and_one_more_is_looked_at() {
        let names: Vec<(Vec<u8>, EntryKind)> = (0..50)
            .map(|i| (format!("f{i:02}").into_bytes(), EntryKind::File))
            .collect();
        let mut looked = 0;
        let (entries, more) = listed(names.clone(), 10, |name, _| {
            looked += 1;
            // Every other name is not served (as a link leading outside is not).
            (name[2] % 2 == 0).then_some(Entry {
                name,
                size: Some(1),
            })
        });
        assert_eq!(entries.len(), 10);
        assert!(more);
        assert_eq!(entries[9].name, b"f18");
        assert_eq!(looked, 21, "f00..f20: ten shown, f20 the one more");
        let (entries, more) = listed(names, 50, |name, _| Some(Entry { name, size: None }));
        assert_eq!((entries.len(), more), (50, false));
    }

    /// A name that is not UTF-8 is linked by its own bytes, never by its lossy copy, which may
    /// be another file's name: each link leads to the file it is listed as.
    #[test]
    fn a_name_that_is_not_utf8_links_to_itself_not_to_its_lossy_twin() {
        use std::os::unix::ffi::OsStrExt;
        let top = tempfile::tempdir().unwrap();
        let root = top.path();
        let raw = std::ffi::OsStr::from_bytes(b"caf\xff.flv");
        std::fs::write(root.join(raw), b"FLV raw").unwrap();
        std::fs::write(root.join("caf\u{fffd}.flv"), b"FLV twin").unwrap();
        std::fs::create_dir(root.join(std::ffi::OsStr::from_bytes(b"d\xfe"))).unwrap();
        let r = RootDir::open(root).unwrap();
        let p = page(&r, "/", Serving::Media).unwrap();
        assert!(p.contains(r#"<a href="caf%FF.flv">"#), "{p}");
        assert!(p.contains(r#"<a href="caf%EF%BF%BD.flv">"#), "{p}");
        assert!(p.contains(r#"<a href="d%FE/">"#), "{p}");
        let read = |path: &str| {
            let mut s = Vec::new();
            std::io::Read::read_to_end(
                &mut resolve::open(&r, path, Serving::Media).unwrap(),
                &mut s,
            )
            .unwrap();
            s
        };
        assert_eq!(read("/caf%FF.flv"), b"FLV raw");
        assert_eq!(read("/caf%EF%BF%BD.flv"), b"FLV twin");
        assert!(page(&r, "/d%FE/", Serving::Media).is_ok());
    }

    #[test]
    fn names_are_escaped_links_relative_and_only_what_is_served_listed() {
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("www");
        std::fs::create_dir_all(root.join("sub dir")).unwrap();
        std::fs::create_dir_all(root.join(".hidden")).unwrap();
        for name in ["<b>&\"x\".flv", "a b.flv", "notes.txt", ".secret.flv"] {
            std::fs::write(root.join(name), b"FLV").unwrap();
        }
        std::fs::write(top.path().join("outside.flv"), b"FLV").unwrap();
        std::os::unix::fs::symlink(top.path().join("outside.flv"), root.join("leak.flv")).unwrap();
        std::os::unix::fs::symlink(top.path(), root.join("up")).unwrap();
        std::os::unix::fs::symlink("a b.flv", root.join("inside.flv")).unwrap();
        let r = RootDir::open(&root).unwrap();
        let p = page(&r, "/", Serving::Media).unwrap();
        assert!(
            p.contains(r#"<a href="a%20b.flv">a b.flv</a> 3 bytes"#),
            "{p}"
        );
        assert!(
            p.contains(r#"<a href="%3Cb%3E%26%22x%22.flv">&lt;b&gt;&amp;&quot;x&quot;.flv</a>"#),
            "{p}"
        );
        assert!(p.contains(r#"<a href="sub%20dir/">sub dir/</a>"#), "{p}");
        assert!(p.contains(r#"<a href="inside.flv">"#), "{p}");
        for absent in ["notes.txt", "secret", "hidden", "leak", "up", "../"] {
            assert!(!p.contains(absent), "{absent}: {p}");
        }
        let all = page(&r, "/", Serving::All).unwrap();
        assert!(all.contains("notes.txt"), "{all}");
        let sub = page(&r, "/sub%20dir/", Serving::Media).unwrap();
        assert!(sub.contains(r#"<a href="../">../</a>"#), "{sub}");
        assert!(sub.contains("No FLV files here."), "{sub}");
        assert_eq!(
            page(&r, "/up/", Serving::Media).err(),
            Some(Refused::Outside)
        );
        assert_eq!(
            page(&r, "/../", Serving::Media).err(),
            Some(Refused::Outside)
        );
        assert_eq!(
            page(&r, "/.hidden/", Serving::Media).err(),
            Some(Refused::NotFound)
        );
        assert_eq!(
            page(&r, "/a%20b.flv/", Serving::Media).err(),
            Some(Refused::NotFound)
        );
    }
}
