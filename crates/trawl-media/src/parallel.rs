//! One large FLV file indexed on several cores. The walk is a chain (each tag header gives the
//! next tag's offset), so the file is cut into segments; each segment after the first finds its
//! first tag by resynchronising (a run of tags whose sizes and PreviousTagSizes agree), then
//! walks its tags on its own thread. The joins are checked: a segment is used only when it starts
//! exactly where the walk of the previous one stopped; otherwise that stretch is walked again
//! from where the previous one stopped, so a false resynchronisation costs time, never a wrong
//! index. Timestamp and PreviousTagSize checks across a join are made when joining, so the result
//! equals a single walk's, problems included (tests and the fuzz target compare them).

use std::fs::File;
use std::path::Path;

use crate::fetch::{Fetch, SeekMethod};
use crate::index::{FlvError, FlvIndex, FlvProblem};
use crate::walker::{Problem, Segment, Walker, prev_mismatch, problem_list, ts_problem};

/// Tags in a row that must agree before a guessed offset is taken as a tag.
const RESYNC_CHAIN: usize = 3;
/// Bytes searched for the first tag of a segment.
const RESYNC_WINDOW: usize = 1 << 20;

/// Whether the 11 bytes at `h` can start a tag: audio, video or script, no reserved or filter
/// bits, stream id 0.
fn plausible(h: &[u8]) -> bool {
    h.len() >= 11 && matches!(h[0], 8 | 9 | 18) && h[8..11] == [0, 0, 0]
}

/// A run of `RESYNC_CHAIN` tags from `p` whose PreviousTagSizes match (or that reaches the end
/// of the file exactly).
fn chain_ok(fetch: &mut Fetch<'_>, mut p: u64, size: u64) -> std::io::Result<bool> {
    for _ in 0..RESYNC_CHAIN {
        if p == size || p + 4 == size {
            return Ok(true);
        }
        let h = fetch.get(p, 11)?;
        if !plausible(h) {
            return Ok(false);
        }
        let s = u32::from_be_bytes([0, h[1], h[2], h[3]]) as u64;
        let after = p + 11 + s;
        if after + 4 > size {
            return Ok(false);
        }
        let prev = fetch.get(after, 4)?;
        if u32::from_be_bytes(prev.try_into().expect("4 bytes")) as u64 != 11 + s {
            return Ok(false);
        }
        p = after + 4;
    }
    Ok(true)
}

/// The first offset in `from..to` that looks like the start of a tag.
fn resync(fetch: &mut Fetch<'_>, from: u64, to: u64, size: u64) -> std::io::Result<Option<u64>> {
    // No tag starts before the 9-byte header and the first PreviousTagSize.
    let from = from.max(13);
    if from >= to {
        return Ok(None);
    }
    let len = ((to - from) as usize).min(RESYNC_WINDOW) + 10;
    let window = fetch.get(from, len.min((size - from) as usize))?.to_vec();
    for i in 0..window.len().saturating_sub(10) {
        let p = from + i as u64;
        if p >= to {
            break;
        }
        if plausible(&window[i..]) && chain_ok(fetch, p, size)? {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

/// Walks one segment.
fn walk(path: &Path, fetch: &mut Fetch<'_>, mut w: Walker) -> Result<Segment, FlvError> {
    crate::fetch::drive(&mut w, fetch).map_err(|source| FlvError::Io {
        path: path.into(),
        source,
    })??;
    Ok(w.finish_segment())
}

/// Lets go of the mapped pages of `from..to` (the whole pages inside it) once this segment's
/// walk is done, so that taking down their page table entries runs on every core, beside the
/// other walks, and not in one `munmap` at the end (docs/decisions/0004). The pages stay in the
/// page cache; one touched again (a join walked again, a
/// tag header just past `to`) is faulted in again.
///
/// `m` must be a shared mapping of a file: on memory of the process's own (bytes indexed in
/// memory), `MADV_DONTNEED` would zero the pages.
fn release(m: &[u8], from: u64, to: u64) {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    let lo = from.next_multiple_of(page);
    let hi = (to / page * page).min(m.len() as u64 / page * page);
    if hi > lo {
        // SAFETY: `lo..hi` is whole pages of a shared, read-only file mapping (it starts on a
        // page: the map is of the whole file). MADV_DONTNEED only removes their page table
        // entries: a later read of them faults the same page-cache pages in again, so what the
        // other threads read through `m` does not change.
        unsafe {
            libc::madvise(
                m.as_ptr().add(lo as usize) as *mut libc::c_void,
                (hi - lo) as usize,
                libc::MADV_DONTNEED,
            );
        }
    }
}

/// Indexes `file` (of `size` bytes) in `parts` segments at once. `map`: the whole file's bytes;
/// with `file`, its shared mapping, whose pages each segment lets go of when its walk is done;
/// without, bytes in memory, left alone.
pub(crate) fn index(
    path: &Path,
    file: Option<&File>,
    map: Option<&[u8]>,
    method: SeekMethod,
    size: u64,
    parts: usize,
) -> Result<FlvIndex, FlvError> {
    let bounds: Vec<u64> = (0..=parts)
        .map(|i| size * i as u64 / parts as u64)
        .collect();
    let split = Split {
        path,
        file,
        map,
        method,
        size,
        bounds: &bounds,
    };
    let mut segs = split.walk_all().into_iter();
    let mut cur = segs
        .next()
        .expect("one part at least")?
        .expect("the first part");
    let mut texts: Vec<FlvProblem> = Vec::new();
    let mut over = 0u64;
    take_problems(&mut cur, &mut texts, &mut over, [None; 2]);
    for (i, seg) in segs.enumerate() {
        let Some(stop) = cur.stopped_at else { break };
        let end = bounds[i + 2];
        if stop >= end {
            continue; // a tag of the previous segment covers all of this one
        }
        let seg = match seg? {
            Some(s) if s.start == stop => s,
            // A false or missed resynchronisation: walk this stretch from where the previous
            // walk stopped.
            _ => walk(
                path,
                &mut Fetch::new(file, map, method),
                Walker::segment(path, size, stop, end),
            )?,
        };
        join(&mut cur, seg, &mut texts, &mut over);
    }
    let mut idx = cur.idx;
    idx.problems = problem_list(texts.into_iter(), over);
    Ok(idx)
}

/// A file cut into segments: where its bytes come from and where each segment starts.
#[derive(Clone, Copy)]
struct Split<'a> {
    path: &'a Path,
    file: Option<&'a File>,
    map: Option<&'a [u8]>,
    method: SeekMethod,
    size: u64,
    /// Segment `i` is `bounds[i]..bounds[i + 1]`.
    bounds: &'a [u64],
}

impl Split<'_> {
    /// Every segment's walk, each on a thread of its own, in file order.
    fn walk_all(&self) -> Vec<Result<Option<Segment>, FlvError>> {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..self.bounds.len() - 1)
                .map(|i| s.spawn(move || self.walk_one(i)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    }

    /// Segment `i`'s walk, from its first tag (the file's for the first; found by
    /// resynchronising for the others: None where none starts in it), its pages let go after.
    fn walk_one(&self, i: usize) -> Result<Option<Segment>, FlvError> {
        let (path, size) = (self.path, self.size);
        let (from, to) = (self.bounds[i], self.bounds[i + 1]);
        let mut fetch = Fetch::new(self.file, self.map, self.method);
        let seg = if i == 0 {
            let w = Walker::new(path, size).stop_at(to);
            walk(path, &mut fetch, w).map(Some)
        } else {
            let io = |source| FlvError::Io {
                path: path.into(),
                source,
            };
            match resync(&mut fetch, from, to, size).map_err(io)? {
                Some(p) => walk(path, &mut fetch, Walker::segment(path, size, p, to)).map(Some),
                None => Ok(None),
            }
        };
        if let Some(m) = self.file.and(self.map) {
            release(m, from, to);
        }
        seg
    }
}

/// Moves a segment's problems into the running list, resolving its first-timestamp checks
/// against the last timestamps before it.
fn take_problems(
    seg: &mut Segment,
    texts: &mut Vec<FlvProblem>,
    over: &mut u64,
    last: [Option<u32>; 2],
) {
    for p in std::mem::take(&mut seg.problems) {
        match p {
            Problem::Text(t) => texts.push(t),
            Problem::FirstTs { track, ts, pos } => {
                if let Some(t) = last[track].and_then(|l| ts_problem(track, l, ts, pos)) {
                    texts.push(t);
                }
            }
        }
    }
    *over += seg.problems_over;
}

/// Appends the segment that starts where `cur` stopped.
fn join(cur: &mut Segment, mut seg: Segment, texts: &mut Vec<FlvProblem>, over: &mut u64) {
    if let (Some(e), Some(p)) = (cur.expect_prev, seg.first_prev)
        && e != p
    {
        texts.push(prev_mismatch(seg.start - 4, p, e));
    }
    take_problems(&mut seg, texts, over, cur.last_ts);
    let (a, b) = (&mut cur.idx, seg.idx);
    a.keyframes.extend(b.keyframes);
    a.tags.video += b.tags.video;
    a.tags.audio += b.tags.audio;
    a.tags.script += b.tags.script;
    a.tags.other += b.tags.other;
    a.figures.join(b.figures);
    a.duration = a.duration.max(b.duration);
    a.bytes_read += b.bytes_read;
    if b.end > a.end {
        a.end = b.end;
        a.last_timestamp = b.last_timestamp;
    }
    a.video_codec = a.video_codec.take().or(b.video_codec);
    a.audio_codec = a.audio_codec.take().or(b.audio_codec);
    a.last_video_tag = b.last_video_tag.or(a.last_video_tag);
    if a.metadata.is_none() && b.metadata.is_some() {
        a.metadata = b.metadata;
        a.width = b.width;
        a.height = b.height;
        a.frame_rate = b.frame_rate;
        a.metadata_duration = b.metadata_duration;
    }
    if a.video_config.is_none() && b.video_config.is_some() {
        a.video_config = b.video_config;
        a.coded_width = b.coded_width;
        a.coded_height = b.coded_height;
        a.coded_frame_rate = b.coded_frame_rate;
    }
    a.audio_config = a.audio_config.or(b.audio_config);
    for t in 0..2 {
        cur.last_ts[t] = seg.last_ts[t].or(cur.last_ts[t]);
    }
    cur.expect_prev = seg.expect_prev.or(cur.expect_prev);
    cur.stopped_at = seg.stopped_at;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flv::synth::*;

    fn sequential(path: &Path) -> FlvIndex {
        let mut i = crate::index_file_with(path, SeekMethod::Pread).unwrap();
        i.bytes_read = 0;
        i
    }

    fn in_parts(path: &Path, parts: usize, method: SeekMethod) -> FlvIndex {
        let file = File::open(path).unwrap();
        let size = file.metadata().unwrap().len();
        // SAFETY: a test file of our own that nothing else changes while it is mapped.
        let map = unsafe { memmap2::MmapOptions::new().map(&file) }.unwrap();
        let mut i = index(path, Some(&file), Some(&map), method, size, parts).unwrap();
        i.bytes_read = 0;
        i
    }

    /// Tags of every kind, problems here and there, and payloads that hold whole FLV tag runs
    /// (a false resynchronisation must be caught at the join).
    fn tricky() -> Vec<u8> {
        let mut v = header(9);
        let mut meta = b"\x02\x00\x0aonMetaData\x08\x00\x00\x00\x01".to_vec();
        meta.extend_from_slice(b"\x00\x05width\x00");
        meta.extend_from_slice(&320f64.to_be_bytes());
        meta.extend_from_slice(&[0, 0, 9]);
        tag(&mut v, 18, 0, &meta);
        tag(&mut v, 9, 0, &[0x17, 0, 0, 0, 0]);
        tag(&mut v, 8, 0, &[0xaf, 0, 0x12, 0x10]);
        // A fake run of tags to hide inside payloads.
        let mut fake = Vec::new();
        for k in 0..5u32 {
            tag(&mut fake, 9, 7_000_000 + k, &[0x17, 1, 0, 0, 0, 1, 2, 3]);
        }
        let mut x = 12345u32;
        for i in 0..3000u32 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let key = i % 25 == 0;
            let mut p = vec![if key { 0x17 } else { 0x27 }, 1, 0, 0, 0];
            p.resize(p.len() + (x % 3000) as usize, (x >> 8) as u8);
            if i % 2 == 0 {
                // Filler, then the fake run: a cut in the filler resynchronises on the fake.
                p.extend_from_slice(&fake);
            }
            let ts = if i == 1500 { 10 } else { i * 40 }; // one backwards step
            tag(&mut v, 9, ts, &p);
            if i % 3 == 0 {
                tag(&mut v, 8, i * 40, &[0xaf, 1, 5, 5]);
            }
            if i == 2000 {
                // A wrong PreviousTagSize in the middle.
                let n = v.len();
                v[n - 4..].copy_from_slice(&7u32.to_be_bytes());
            }
            if i == 2500 {
                tag(&mut v, 9, i * 40 + 100_000, &[0x27, 1, 0, 0, 0]); // a jump
            }
            if i == 1800 {
                // A second, corrupt onMetaData (found by the fuzz target: a segment that had
                // not seen the first one decoded it).
                tag(&mut v, 18, i * 40, &meta[..meta.len() - 6]);
            }
        }
        v
    }

    /// Found by the fuzz target: a second onMetaData tag, in a later segment, holding a
    /// number that is not finite. The whole walk and the segmented walk must report the same.
    #[test]
    fn a_later_metadata_tag_is_reported_alike_by_both_walks() {
        let data = include_bytes!("../../../fuzz/corpus/flv_walker/regress-later-metadata-nan");
        let (&c, file) = data.split_first().unwrap();
        let whole = crate::index_bytes(Path::new("m"), file).unwrap();
        let mut parts =
            crate::index_bytes_in_parts(Path::new("m"), file, 2 + c as usize % 6).unwrap();
        parts.bytes_read = whole.bytes_read;
        assert_eq!(whole, parts);
        assert!(
            whole
                .problems
                .iter()
                .any(|p| p.message.contains("not a finite number")),
            "{:?}",
            whole.problems
        );
    }

    #[test]
    fn segments_joined_equal_one_walk() {
        let v = tricky();
        let f = write(&v);
        let want = sequential(f.path());
        assert_eq!(want.keyframes.len(), 120);
        assert!(want.problems.len() >= 4, "{:?}", want.problems);
        assert!(
            want.problems.iter().any(|p| p.message.contains("AMF0")),
            "{:?}",
            want.problems
        );
        for parts in [2, 3, 5, 8, 13] {
            for m in [SeekMethod::Pread, SeekMethod::Mmap, SeekMethod::Auto] {
                assert_eq!(in_parts(f.path(), parts, m), want, "{parts} parts, {m:?}");
            }
        }
        // A wrong last PreviousTagSize (found by the fuzz target: the last segment stopped
        // before checking it).
        let mut w = v.clone();
        let n = w.len();
        w[n - 4..].copy_from_slice(&1u32.to_be_bytes());
        let g = write(&w);
        let want = sequential(g.path());
        assert!(
            want.problems
                .iter()
                .any(|p| p.message.contains("is 1, expected"))
        );
        for parts in [2, 3, 6] {
            assert_eq!(
                in_parts(g.path(), parts, SeekMethod::Auto),
                want,
                "last size"
            );
        }
        // Truncated in the middle of the last segment and in the middle of the file.
        for cut in [v.len() - 1000, v.len() / 2 + 17] {
            let g = write(&v[..cut]);
            let want = sequential(g.path());
            assert!(
                want.problems
                    .iter()
                    .any(|p| p.message.contains("truncated"))
            );
            for parts in [2, 4, 7] {
                assert_eq!(
                    in_parts(g.path(), parts, SeekMethod::Auto),
                    want,
                    "cut {cut}"
                );
            }
        }
    }

    #[test]
    fn segments_let_go_of_a_file_mapping_and_leave_bytes_in_memory_alone() {
        let v = tricky();
        assert!(v.len() > 64 * 4096, "several pages a segment");
        // Bytes in memory: a segment must not give their pages back (that would zero them).
        // Page-aligned memory of the process's own, as a large allocation may be.
        let mut mem = memmap2::MmapMut::map_anon(v.len()).unwrap();
        mem.copy_from_slice(&v);
        let want = crate::index_bytes(Path::new("m"), &v).unwrap();
        for parts in [2, 5] {
            let got = crate::index_bytes_in_parts(Path::new("m"), &mem, parts).unwrap();
            assert!(
                mem[..] == v[..],
                "{parts} parts: the bytes in memory changed"
            );
            assert_eq!(got.keyframes, want.keyframes);
        }
        // A file's mapping: its pages are let go of, and read back as they were. (Plain tags:
        // `tricky`'s false resynchronisations have most joins walked again, which maps their
        // pages again.)
        let mut v = header(9);
        for i in 0..4000u32 {
            let mut p = vec![if i % 50 == 0 { 0x17 } else { 0x27 }, 1, 0, 0, 0];
            p.resize(1500 + (i % 7) as usize * 100, i as u8);
            tag(&mut v, 9, i * 40, &p);
        }
        let want = crate::index_bytes(Path::new("m"), &v).unwrap();
        let f = write(&v);
        let file = File::open(f.path()).unwrap();
        // SAFETY: a test file of our own that nothing else changes while it is mapped.
        let map = unsafe { memmap2::MmapOptions::new().map(&file) }.unwrap();
        let i = index(
            f.path(),
            Some(&file),
            Some(&map),
            SeekMethod::Mmap,
            v.len() as u64,
            4,
        )
        .unwrap();
        assert_eq!(i.keyframes, want.keyframes);
        // The walk touched a page for nearly every tag header; what stays mapped is at most
        // the pages at the segments' edges.
        let rss = mapping_rss(map.as_ptr());
        assert!(
            rss < v.len() as u64 / 10,
            "{rss} bytes of a {} byte file still mapped",
            v.len()
        );
        assert!(map[..] == v[..], "the mapping reads back the file");
    }

    /// Resident bytes of the mapping starting at `at` (/proc/self/smaps).
    fn mapping_rss(at: *const u8) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let start = format!("{:x}-", at as usize);
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&start)).skip(1);
        let rss = lines
            .find(|l| l.starts_with("Rss:"))
            .expect("the mapping in smaps");
        rss.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap()
            * 1024
    }
}
