//! Which files hold the duplicates: a key log per block, read back against the final counts.

use crate::config::ReduceConfig;
use crate::index::Index;
use crate::spill;

/// Appends (key, length, file) of each non-zero block to the key log (made on first use).
pub(crate) fn log_keys(
    log: &mut Option<spill::Spill>,
    cfg: &ReduceConfig,
    file: u32,
    keys: &[u128],
    lens: &[u32],
    zero: &[bool],
) -> std::io::Result<()> {
    if log.is_none() {
        let dir = cfg.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
        *log = Some(spill::Spill::new(
            &dir,
            1,
            if cfg.exact_keys { 16 } else { 8 },
        )?);
    }
    let w = log.as_mut().expect("just made");
    for i in 0..keys.len() {
        if !zero[i] {
            w.write(keys[i], lens[i], &[file])?;
        }
    }
    Ok(())
}

/// Per file: (duplicate bytes, share of the saving).
pub(crate) type Shares = Vec<(u64, f64)>;

/// Attributes one partition of the key log against the final counts of its keys.
pub(crate) fn attribute_partition(
    reader: &spill::SpillReader,
    q: usize,
    counts: &Index,
    per: &mut Shares,
) -> std::io::Result<()> {
    reader.read(q, &mut |records| {
        for r in records {
            let c = counts.count(r.key);
            if c >= 2 {
                let f = &mut per[r.extra[0] as usize];
                f.0 += r.len as u64;
                f.1 += r.len as f64 * (c - 1) as f64 / c as f64;
            }
        }
    })
}
