//! The hash chain that seals each audit run (in the spirit of ACE's integrity tokens).
//!
//! When a run ends, three SHA-256 digests are stored in its row:
//! - `events_digest` over the run's events (every non-ok verdict), in (root, path) order;
//! - `state_digest` over every column an audit decides by, as the run left them: each row of the
//!   `files` table (paths, sizes, mtimes, ctimes, device and inode, the primary and all registered
//!   digests, states, versions, times, verdicts) in (root, path) order, then the `roots` and
//!   `meta` tables (the algorithms the digests are read as);
//! - `chain_digest` = SHA-256(previous sealed run's `chain_digest` || this run's record (id, times,
//!   status, mode, roots, options, counts) || `events_digest` || `state_digest`).
//!
//! [`verify`] first runs SQLite's `integrity_check` (a malformed file is reported as such, never
//! as a chain that matches), then recomputes all of it and names the first run whose seal does
//! not match. Every field is length-prefixed, so no two different inputs encode alike. Runs
//! sealed by an older trawl (`v1`: fewer file columns, no `roots`/`meta`; `v2`: no ctime)
//! still verify as sealed.
//!
//! What this protects against: any edit, insertion or deletion of an event row, of a run's record,
//! or of a sealed run in the middle of the chain; any edit of the file table after the last seal
//! (e.g. rewriting a registered digest so that corruption would pass as ok). What it does not: an
//! adversary who rewrites the catalog and recomputes the chain with this code (there is no secret
//! key), nor the removal of the newest runs. Against those, keep the head digest that
//! `trawl catalog verify` prints somewhere else and pass it back with `--expect`.

use rusqlite::{Connection, OptionalExtension, params};
use trawl_digest::{Algorithm, Hasher};

/// Feeds length-prefixed fields to SHA-256.
struct Enc(Hasher);

impl Enc {
    fn new() -> Enc {
        Enc(Algorithm::Sha256.hasher())
    }
    fn bytes(&mut self, b: &[u8]) {
        self.0.update(&(b.len() as u64).to_le_bytes());
        self.0.update(b);
    }
    fn opt(&mut self, b: Option<&[u8]>) {
        match b {
            None => self.0.update(&[0]),
            Some(b) => {
                self.0.update(&[1]);
                self.bytes(b);
            }
        }
    }
    fn finish(self) -> Vec<u8> {
        self.0.finish()
    }
}

fn blob(v: rusqlite::types::ValueRef<'_>) -> Option<Vec<u8>> {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => None,
        ValueRef::Integer(i) => Some(i.to_le_bytes().to_vec()),
        ValueRef::Real(f) => Some(f.to_le_bytes().to_vec()),
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(t.to_vec()),
    }
}

/// Digest of every column of every row a query returns, in its order.
fn digest_rows(conn: &Connection, sql: &str, param: Option<i64>) -> rusqlite::Result<Vec<u8>> {
    let mut enc = Enc::new();
    let mut st = conn.prepare(sql)?;
    let n = st.column_count();
    let mut rows = match param {
        Some(r) => st.query([r])?,
        None => st.query([])?,
    };
    while let Some(row) = rows.next()? {
        for i in 0..n {
            enc.opt(blob(row.get_ref(i)?).as_deref());
        }
    }
    Ok(enc.finish())
}

pub fn events_digest(conn: &Connection, run: i64) -> rusqlite::Result<Vec<u8>> {
    digest_rows(
        conn,
        "SELECT root, path, state, size, mtime_ns, expected, actual, other_root, other_path, detail
         FROM event_paths WHERE run = ?1 ORDER BY root, path",
        Some(run),
    )
}

/// How a run was sealed: `V1` by trawl before the seal covered every column an audit decides by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SealVersion {
    V1,
    V2,
    /// V2 and each file's ctime (schema 4), which `scan --reuse` decides by.
    V3,
}

impl SealVersion {
    fn tag(self) -> &'static [u8] {
        match self {
            SealVersion::V1 => b"trawl-catalog-run-v1",
            SealVersion::V2 => b"trawl-catalog-run-v2",
            SealVersion::V3 => b"trawl-catalog-run-v3",
        }
    }
}

/// The length of the primary digest: the first algorithm's (the primary digest is stored as the
/// first bytes of the concatenated digests, and sealed as a column of its own).
fn primary_len(conn: &Connection) -> rusqlite::Result<i64> {
    let algs: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'algorithms'", [], |r| {
            r.get(0)
        })
        .optional()?;
    Ok(algs
        .and_then(|s| trawl_digest::parse_list(&s).ok())
        .and_then(|a| a.first().map(|a| a.output_len() as i64))
        .unwrap_or(0))
}

fn state_digest_of(conn: &Connection, v: SealVersion) -> rusqlite::Result<Vec<u8>> {
    match v {
        SealVersion::V1 => digest_rows(
            conn,
            "SELECT r.path, f.path, f.size, f.mtime_ns, f.digests, f.state, f.present, f.version,
                    f.first_seen, f.last_verified
             FROM file_paths f JOIN roots r ON r.id = f.root ORDER BY r.path, f.path",
            None,
        ),
        SealVersion::V2 | SealVersion::V3 => {
            let mut enc = Enc::new();
            // The view has no ctime: V3 takes it from the table by the row's id.
            let ctime = match v {
                SealVersion::V3 => ", (SELECT c.ctime_ns FROM files c WHERE c.id = f.id)",
                _ => "",
            };
            enc.bytes(&digest_rows(
                conn,
                &format!(
                    "SELECT r.path, f.path, f.size, f.mtime_ns, f.dev, f.ino,
                        substr(f.digests, 1, ?1), f.digests, f.state, f.present, f.version,
                        f.first_seen, f.last_verified, f.first_run, f.last_run, f.last_verdict,
                        f.missing_since{ctime}
                     FROM file_paths f JOIN roots r ON r.id = f.root ORDER BY r.path, f.path"
                ),
                Some(primary_len(conn)?),
            )?);
            enc.bytes(&digest_rows(
                conn,
                "SELECT id, path FROM roots ORDER BY id",
                None,
            )?);
            enc.bytes(&digest_rows(
                conn,
                "SELECT key, value FROM meta ORDER BY key",
                None,
            )?);
            Ok(enc.finish())
        }
    }
}

/// The state digest a run sealed now records.
pub fn state_digest(conn: &Connection) -> rusqlite::Result<Vec<u8>> {
    state_digest_of(conn, SealVersion::V3)
}

/// The run's record and digests chained onto `prev`.
fn chain_digest(
    conn: &Connection,
    v: SealVersion,
    run: i64,
    prev: &[u8],
    events: &[u8],
    state: &[u8],
) -> rusqlite::Result<Vec<u8>> {
    let mut enc = Enc::new();
    enc.bytes(v.tag());
    enc.bytes(prev);
    let mut st = conn.prepare(
        "SELECT id, started, finished, status, mode, options, files_read, bytes_read, n_ok,
                n_corrupt, n_modified, n_missing, n_new, n_moved, n_unreadable, n_deferred
         FROM runs WHERE id = ?1",
    )?;
    let mut rows = st.query([run])?;
    let row = rows.next()?.ok_or(rusqlite::Error::QueryReturnedNoRows)?;
    for i in 0..16 {
        enc.opt(blob(row.get_ref(i)?).as_deref());
    }
    let roots: String =
        conn.query_row("SELECT roots FROM runs WHERE id = ?1", [run], |r| r.get(0))?;
    for id in roots.split(',').filter(|s| !s.is_empty()) {
        let p: Option<Vec<u8>> = conn
            .query_row(
                "SELECT path FROM roots WHERE id = ?1",
                [id.parse::<i64>().unwrap_or(-1)],
                |r| r.get(0),
            )
            .optional()?;
        enc.opt(p.as_deref());
    }
    enc.bytes(events);
    enc.bytes(state);
    Ok(enc.finish())
}

/// The chain digest of the newest sealed run before `run` (all zeros for the first).
fn prev_chain(conn: &Connection, run: i64) -> rusqlite::Result<Vec<u8>> {
    let p: Option<Vec<u8>> = conn
        .query_row(
            "SELECT chain_digest FROM runs WHERE id < ?1 AND chain_digest IS NOT NULL
             ORDER BY id DESC LIMIT 1",
            [run],
            |r| r.get(0),
        )
        .optional()?;
    Ok(p.unwrap_or_else(|| vec![0; 32]))
}

/// Sets the run's final status and seals it.
pub fn seal(conn: &Connection, run: i64, status: &str) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE runs SET status = ?2, finished = coalesce(finished, ?3) WHERE id = ?1",
        params![run, status, crate::now_secs()],
    )?;
    let events = events_digest(conn, run)?;
    let state = state_digest(conn)?;
    let prev = prev_chain(conn, run)?;
    let chain = chain_digest(conn, SealVersion::V3, run, &prev, &events, &state)?;
    conn.execute(
        "UPDATE runs SET events_digest = ?2, state_digest = ?3, prev_digest = ?4, chain_digest = ?5
         WHERE id = ?1",
        params![run, events, state, prev, chain],
    )?;
    Ok(())
}

/// What `catalog verify` found.
#[derive(Debug, Default)]
pub struct ChainReport {
    /// Sealed runs whose seal matched.
    pub runs_ok: u64,
    /// The newest sealed run's chain digest.
    pub head: Option<(i64, Vec<u8>)>,
    /// The first problem: the run it names and what is wrong.
    pub broken: Option<(i64, String)>,
    /// Runs not sealed (running or interrupted): their events are not protected yet.
    pub unsealed: Vec<i64>,
    /// What SQLite's `integrity_check` found wrong with the file (empty: nothing); when not
    /// empty, nothing else was checked.
    pub integrity: Vec<String>,
}

/// What SQLite's `integrity_check` says of the file: `ok`, or each problem it found (a file
/// too malformed to check is one problem).
fn integrity_check(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let checked = conn.prepare("PRAGMA integrity_check").and_then(|mut st| {
        st.query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<_>>()
    });
    match checked {
        Err(rusqlite::Error::SqliteFailure(f, msg))
            if f.code == rusqlite::ErrorCode::DatabaseCorrupt =>
        {
            Ok(vec![msg.unwrap_or_else(|| {
                "database disk image is malformed".into()
            })])
        }
        other => other,
    }
}

/// A run's row as the chain reads it: its id and its four digests (None: not sealed).
type SealRow = (
    i64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
);

/// Every run's row, in order.
fn seal_rows(conn: &Connection) -> rusqlite::Result<Vec<SealRow>> {
    let mut st = conn.prepare(
        "SELECT id, events_digest, state_digest, prev_digest, chain_digest FROM runs ORDER BY id",
    )?;
    // A row reads straight into a tuple of its columns (rusqlite's `TryFrom<&Row>`).
    st.query_map([], |r| SealRow::try_from(r))?
        .collect::<rusqlite::Result<_>>()
}

/// Checks the catalog's chain: the file's integrity first, then each run's seal in order, the
/// newest sealed run's also against the file table as it is now (when no run came after it).
pub fn verify(conn: &Connection) -> rusqlite::Result<ChainReport> {
    let mut rep = ChainReport::default();
    // A malformed file first: its rows cannot be trusted to say anything about the chain.
    let problems = integrity_check(conn)?;
    if problems.iter().any(|p| p != "ok") {
        rep.integrity = problems;
        return Ok(rep);
    }
    let runs = seal_rows(conn)?;
    let mut prev = vec![0u8; 32];
    let last_sealed = runs.iter().rev().find(|r| r.4.is_some()).map(|r| r.0);
    let newest = runs.last().map(|r| r.0);
    for (expected_id, (id, ev, st, pv, ch)) in (1i64..).zip(&runs) {
        let id = *id;
        if id != expected_id {
            let why = format!("runs {expected_id} to {} have been removed", id - 1);
            rep.broken = Some((id, why));
            return Ok(rep);
        }
        let (Some(ev), Some(st), Some(pv), Some(ch)) = (ev, st, pv, ch) else {
            if Some(id) < last_sealed {
                rep.broken = Some((id, "its seal was removed".into()));
                return Ok(rep);
            }
            rep.unsealed.push(id);
            continue;
        };
        let newest_seal = Some(id) == last_sealed && newest == last_sealed;
        if let Some(why) = check_seal(conn, id, (ev, st, pv, ch), &prev, newest_seal)? {
            rep.broken = Some((id, why.into()));
            return Ok(rep);
        }
        prev = ch.clone();
        rep.runs_ok += 1;
        rep.head = Some((id, ch.clone()));
    }
    Ok(rep)
}

/// What is wrong with sealed run `id`'s seal (its events, state, previous and chain digests),
/// `prev` the chain digest of the run before it; None: nothing. The newest seal, with no run
/// after it, is held to the file table too.
fn check_seal(
    conn: &Connection,
    id: i64,
    (ev, st, pv, ch): (&Vec<u8>, &Vec<u8>, &Vec<u8>, &Vec<u8>),
    prev: &[u8],
    newest_seal: bool,
) -> rusqlite::Result<Option<&'static str>> {
    if pv.as_slice() != prev {
        return Ok(Some(
            "it does not follow the run before it: a run was removed or altered",
        ));
    }
    if events_digest(conn, id)? != *ev {
        return Ok(Some(
            "its events were altered after it was sealed (added, removed or edited)",
        ));
    }
    // A catalog of schema 3 or older has no ctime column, so no run of it was sealed as V3.
    let ctimes: bool = conn.query_row(
        "SELECT count(*) > 0 FROM pragma_table_info('files') WHERE name = 'ctime_ns'",
        [],
        |r| r.get(0),
    )?;
    let version = if ctimes && chain_digest(conn, SealVersion::V3, id, pv, ev, st)? == *ch {
        SealVersion::V3
    } else if chain_digest(conn, SealVersion::V2, id, pv, ev, st)? == *ch {
        SealVersion::V2
    } else if chain_digest(conn, SealVersion::V1, id, pv, ev, st)? == *ch {
        SealVersion::V1
    } else {
        return Ok(Some(
            "its record (status, times, counts or options) was altered after it was sealed",
        ));
    };
    if newest_seal && state_digest_of(conn, version)? != *st {
        return Ok(Some(
            "the file table, roots or settings were altered after this run sealed it (registered digests, sizes, inodes, states or algorithms differ)",
        ));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each field goes in as a presence byte, its length (8 bytes, little-endian) and its
    /// bytes: fields that join to the same bytes, and an absent field against an empty one,
    /// encode apart.
    #[test]
    fn fields_are_length_prefixed_so_no_two_inputs_encode_alike() {
        let enc = |fields: &[Option<&[u8]>]| {
            let mut e = Enc::new();
            for f in fields {
                e.opt(*f);
            }
            e.finish()
        };
        assert_ne!(
            enc(&[Some(b"ab"), Some(b"c")]),
            enc(&[Some(b"a"), Some(b"bc")])
        );
        assert_ne!(enc(&[None]), enc(&[Some(b"")]));
        assert_ne!(enc(&[Some(b"")]), enc(&[]));
        let mut raw = vec![1u8];
        raw.extend_from_slice(&2u64.to_le_bytes());
        raw.extend_from_slice(b"ab");
        raw.push(0);
        assert_eq!(
            enc(&[Some(b"ab"), None]),
            trawl_digest::digest(Algorithm::Sha256, &raw)
        );
    }

    /// A catalog's tables with two sealed runs: one registering `a` and `b`, one finding `b`
    /// modified.
    fn sealed() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(crate::tables::DDL_RUNS).unwrap();
        c.execute_batch(crate::tables::DDL_FILES).unwrap();
        c.execute_batch(crate::tables::DDL_CTIME).unwrap();
        c.execute_batch(
            "INSERT INTO meta VALUES ('algorithms', 'sha256');
             INSERT INTO roots VALUES (1, CAST('/r' AS BLOB));
             INSERT INTO dirs VALUES (1, 1, x'');
             INSERT INTO files(dir, name, size, mtime_ns, dev, ino, digests, state, present,
                 version, first_seen, first_run, last_run, last_verdict)
             VALUES (1, CAST('a' AS BLOB), 1, 10, 1, 1, zeroblob(32), 'ok', 1, 1, 100, 1, 1, 'new'),
                    (1, CAST('b' AS BLOB), 2, 10, 1, 2, zeroblob(32), 'ok', 1, 1, 100, 1, 1, 'new');
             INSERT INTO runs(id, started, status, mode, roots, options) VALUES (1, 100, 'running', 'full', '1', '');
             INSERT INTO events(run, dir, name, state, size, mtime_ns, actual)
             VALUES (1, 1, CAST('a' AS BLOB), 'new', 1, 10, zeroblob(32)),
                    (1, 1, CAST('b' AS BLOB), 'new', 2, 10, zeroblob(32));",
        )
        .unwrap();
        seal(&c, 1, "complete").unwrap();
        c.execute_batch(
            "UPDATE files SET size = 3, mtime_ns = 20, version = 2, last_run = 2,
                 last_verdict = 'modified' WHERE name = CAST('b' AS BLOB);
             INSERT INTO runs(id, started, status, mode, roots, options) VALUES (2, 200, 'running', 'full', '1', '');
             INSERT INTO events(run, dir, name, state, size, mtime_ns, detail)
             VALUES (2, 1, CAST('b' AS BLOB), 'modified', 3, 20, 'size 2 -> 3');",
        )
        .unwrap();
        seal(&c, 2, "complete").unwrap();
        c
    }

    fn broken(c: &Connection) -> Option<(i64, String)> {
        let r = verify(c).unwrap();
        assert!(r.integrity.is_empty(), "{:?}", r.integrity);
        r.broken
    }

    /// Sealed runs verify, each chained on the one before, the head the newest; a run that
    /// is not sealed yet is listed as such, not called broken.
    #[test]
    fn sealed_runs_verify_and_chain_on_one_another() {
        let c = sealed();
        let r = verify(&c).unwrap();
        assert_eq!((r.runs_ok, &r.broken), (2, &None));
        let chains: Vec<Vec<u8>> = c
            .prepare("SELECT chain_digest FROM runs ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let prev2: Vec<u8> = c
            .query_row("SELECT prev_digest FROM runs WHERE id = 2", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(prev2, chains[0]);
        assert_eq!(r.head, Some((2, chains[1].clone())));
        c.execute_batch(
            "INSERT INTO runs(id, started, status, mode, roots, options) VALUES (3, 300, 'running', 'full', '1', '')",
        )
        .unwrap();
        let r = verify(&c).unwrap();
        assert_eq!((r.runs_ok, &r.unsealed, &r.broken), (2, &vec![3], &None));
    }

    /// Every kind of edit after a seal is caught, naming the first run it breaks and how.
    #[test]
    fn an_edit_after_a_seal_names_the_run_it_breaks() {
        for (edit, run, says) in [
            (
                "UPDATE events SET detail = 'fine' WHERE run = 1",
                1,
                "its events were altered",
            ),
            (
                "DELETE FROM events WHERE run = 2",
                2,
                "its events were altered",
            ),
            (
                "UPDATE runs SET n_corrupt = 5 WHERE id = 1",
                1,
                "its record",
            ),
            (
                "UPDATE runs SET options = '--older-than 1d' WHERE id = 2",
                2,
                "its record",
            ),
            (
                // A ctime planted so that `scan --reuse` would take a changed file.
                "UPDATE files SET ctime_ns = 5 WHERE name = CAST('a' AS BLOB)",
                2,
                "the file table, roots or settings were altered",
            ),
            (
                "UPDATE files SET digests = zeroblob(31) || x'01' WHERE name = CAST('a' AS BLOB)",
                2,
                "the file table, roots or settings were altered",
            ),
            (
                "UPDATE meta SET value = 'md5' WHERE key = 'algorithms'",
                2,
                "the file table, roots or settings were altered",
            ),
            (
                "UPDATE runs SET prev_digest = zeroblob(32) WHERE id = 2",
                2,
                "it does not follow the run before it",
            ),
            (
                "UPDATE runs SET chain_digest = NULL WHERE id = 1",
                1,
                "its seal was removed",
            ),
            (
                "DELETE FROM runs WHERE id = 1",
                2,
                "runs 1 to 1 have been removed",
            ),
        ] {
            let c = sealed();
            c.execute_batch(edit).unwrap();
            let b = broken(&c);
            assert!(
                b.as_ref()
                    .is_some_and(|(r, why)| *r == run && why.contains(says)),
                "{edit}: {b:?}"
            );
        }
    }

    /// The file table is held to the newest seal only while no later run has begun: a run in
    /// progress changes it, and its own seal will cover it.
    #[test]
    fn the_file_table_is_held_to_the_newest_seal_only() {
        let c = sealed();
        c.execute_batch(
            "INSERT INTO runs(id, started, status, mode, roots, options) VALUES (3, 300, 'running', 'full', '1', '');
             UPDATE files SET size = 9 WHERE name = CAST('a' AS BLOB);",
        )
        .unwrap();
        assert_eq!(broken(&c), None);
        c.execute_batch("DELETE FROM runs WHERE id = 3").unwrap();
        assert!(broken(&c).is_some_and(|(r, _)| r == 2));
    }
}
