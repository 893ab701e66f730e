//! The tag files a creation or an update writes: bagit.txt, bag-info.txt, and the tag
//! manifests over every tag file, each replaced whole.

use std::io::Write;
use std::path::Path;

use trawl_atomic::AtomicFile;
use trawl_digest::Algorithm;

use crate::payload::{Listing, digest_reader, write_payload_manifests};
use crate::{BagError, io_err};

fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), BagError> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes).map_err(io_err(path))?;
    f.commit().map_err(io_err(path))
}

/// bag-info.txt's text: `Label: value` per line, in the order given.
fn info_text(info: &[(String, String)]) -> String {
    info.iter().map(|(k, v)| format!("{k}: {v}\n")).collect()
}

pub(crate) fn bag_info(
    files: u64,
    bytes: u64,
    extra: &[(String, String)],
) -> Vec<(String, String)> {
    let mut info = vec![
        (
            "Bag-Software-Agent".to_string(),
            format!("trawl {}", env!("CARGO_PKG_VERSION")),
        ),
        ("Bagging-Date".to_string(), today()),
        ("Payload-Oxum".to_string(), format!("{bytes}.{files}")),
    ];
    info.extend(extra.iter().cloned());
    info
}

/// Writes payload manifests for `algs` from `listing` (when given), bagit.txt (a new bag,
/// `new_bag`), then bag-info.txt from `info` (when given) and tag manifests for `tag_algs`
/// over every tag file: the top's `*.txt` files, the paths in `listed` (what the bag's tag
/// manifests list, which may lie below the top; percent-encoded as written) and bag-info.txt.
/// bag-info.txt's and the tag manifests' texts are all made before the first of them is
/// replaced, and each file is replaced whole (written under a temporary name, then renamed).
pub(crate) fn write_tag_files(
    root: &Path,
    listing: Option<&Listing<'_>>,
    algs: &[Algorithm],
    info: Option<&[(String, String)]>,
    new_bag: bool,
    tag_algs: &[Algorithm],
    listed: &[String],
) -> Result<(), BagError> {
    if let Some(listing) = listing {
        write_payload_manifests(root, listing, algs)?;
    }
    if new_bag {
        // Only a new bag gets a bagit.txt; an updated bag keeps its version.
        write_atomic(
            &root.join("bagit.txt"),
            b"BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n",
        )?;
    }
    let info = info.map(info_text);
    let tag_names = tag_names(root, listed, info.is_some())?;
    let texts = tag_manifests(root, &tag_names, info.as_deref(), tag_algs)?;
    let mut files = Vec::new();
    if let Some(text) = &info {
        files.push((root.join("bag-info.txt"), text.clone()));
    }
    for (alg, text) in tag_algs.iter().zip(texts) {
        files.push((
            root.join(format!("tagmanifest-{}.txt", alg.bagit_name())),
            text,
        ));
    }
    let mut ready = Vec::new();
    for (p, text) in &files {
        let mut f = AtomicFile::create(p)?;
        f.write_all(text.as_bytes()).map_err(io_err(p))?;
        ready.push((p, f));
    }
    for (p, f) in ready {
        f.commit().map_err(io_err(p))?;
    }
    Ok(())
}

/// The tag files the tag manifests list, sorted: the top's `*.txt` files (no hidden one),
/// the paths in `listed` (decoded), and bag-info.txt when one is written (`info`); never a tag
/// manifest or a payload file.
fn tag_names(root: &Path, listed: &[String], info: bool) -> Result<Vec<String>, BagError> {
    let mut tag_names: Vec<String> = std::fs::read_dir(root)
        .map_err(io_err(root))?
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(io_err(root))?
        .into_iter()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.') && n.ends_with(".txt"))
        .chain(listed.iter().map(|p| crate::decode_path(p)))
        .chain(info.then(|| "bag-info.txt".to_string()))
        .filter(|n| !n.starts_with("tagmanifest-") && !n.starts_with("data/"))
        .collect();
    tag_names.sort();
    tag_names.dedup();
    Ok(tag_names)
}

/// Each tag manifest's text, one per algorithm of `tag_algs`, over `tag_names` (those not
/// there are left out). Each tag file is read once for every algorithm (a payload manifest may
/// be large), beneath the bag as validation reads them; bag-info.txt's new text (`info`) from
/// memory.
fn tag_manifests(
    root: &Path,
    tag_names: &[String],
    info: Option<&str>,
    tag_algs: &[Algorithm],
) -> Result<Vec<String>, BagError> {
    let dir = trawl_read::RootDir::open(root).map_err(io_err(root))?;
    let mut texts = vec![String::new(); tag_algs.len()];
    for n in tag_names {
        let digests = match (info, n.as_str()) {
            (Some(text), "bag-info.txt") => digest_reader(text.as_bytes(), tag_algs),
            _ => match crate::validate::open_tag(root, &dir, n)? {
                Some(f) => digest_reader(f, tag_algs),
                None => continue,
            },
        }
        .map_err(io_err(&root.join(n)))?;
        let shown = String::from_utf8_lossy(&crate::encode_path(n.as_bytes())).into_owned();
        for (text, d) in texts.iter_mut().zip(digests) {
            text.push_str(&format!("{}  {shown}\n", hex::encode(d)));
        }
    }
    Ok(texts)
}
