//! One file's bytes to its reduction facts: block fingerprints, unit sizes, CDC chunks.

use crate::codec::Compressor;
use crate::config::CACHE_CODECS;
use crate::counter::Counter;
use std::sync::Arc;

use xxhash_rust::xxh3::xxh3_128;

use crate::config::{BASE, ReduceConfig};
use crate::facts::FileReduce;
use crate::fingerprint::{block_fp, is_zero};
use crate::spread::{SPREAD_MIN, pool_has_room, spread};

/// Consumes one file's bytes in order.
pub struct FileReducer {
    cfg: Arc<ReduceConfig>,
    out: FileReduce,
    block: Vec<u8>,
    unit: Vec<u8>,
    compressors: Vec<Compressor>,
    cdc: Vec<u8>,
    acc: Option<Arc<Counter>>,
    /// The first bytes were looked at for the file's format.
    sniffed: bool,
    /// A large piece's blocks and units are worked out over the rayon pool
    /// ([`FileReducer::with_parallel`]).
    parallel: bool,
}

/// What a reducer keeps between files on one thread: its compressors (an LZ4 state, a zstd
/// context) and its partial-piece buffers. A worker reduces thousands of small files one after
/// another, and making these afresh for each cost more than reducing a small file.
struct Scratch {
    compressors: Vec<Compressor>,
    block: Vec<u8>,
    unit: Vec<u8>,
    cdc: Vec<u8>,
}

/// A buffer that grew past this (a chunk of a large file) is let go rather than kept.
const KEEP: usize = 1 << 20;

/// The bytes each pass over a piece takes before the next pass reads them (`update`; a unit's
/// multiple where units are larger): well within a core's second-level cache.
const FUSED_SLICE: usize = 256 << 10;

thread_local! {
    /// The last reducer's scratch on this thread, for the next one (one per thread: a worker
    /// reduces one file at a time).
    static SPARE: std::cell::RefCell<Option<Scratch>> = const { std::cell::RefCell::new(None) };
}

impl Scratch {
    fn take(codecs: &[crate::codec::Codec]) -> Scratch {
        let spare = SPARE.with(|s| s.borrow_mut().take());
        match spare {
            Some(s)
                if s.compressors
                    .iter()
                    .map(Compressor::codec)
                    .eq(codecs.iter().copied()) =>
            {
                s
            }
            _ => Scratch {
                compressors: codecs.iter().map(|c| Compressor::new(*c)).collect(),
                block: Vec::new(),
                unit: Vec::new(),
                cdc: Vec::new(),
            },
        }
    }

    fn give_back(mut self) {
        for b in [&mut self.block, &mut self.unit, &mut self.cdc] {
            b.clear();
            if b.capacity() > KEEP {
                *b = Vec::new();
            }
        }
        SPARE.with(|s| *s.borrow_mut() = Some(self));
    }
}

impl FileReducer {
    /// A reducer for one file, measuring what `cfg` asks.
    pub fn new(cfg: Arc<ReduceConfig>) -> FileReducer {
        let s = Scratch::take(&cfg.codecs);
        FileReducer {
            cfg,
            out: FileReduce::default(),
            block: s.block,
            unit: s.unit,
            compressors: s.compressors,
            cdc: s.cdc,
            acc: None,
            sniffed: false,
            parallel: false,
        }
    }

    /// Lets a large piece (256 KiB or more, met at a unit's boundary) be worked out over the
    /// rayon pool, in segments whose facts are those of one pass in order; for a file larger
    /// than a buffer, whose lanes may spread (the scan's rule: never at `-j1`).
    pub fn with_parallel(mut self, yes: bool) -> FileReducer {
        self.parallel = yes;
        self
    }

    pub(crate) fn push_block(&mut self, b: &[u8]) {
        self.out.fps.push(xxh3_128(b));
        self.out.zero.push(is_zero(b));
    }

    pub(crate) fn push_unit(&mut self, u: &[u8]) {
        let n = self.compressors.len();
        let base = self.out.units.len();
        self.out.units.resize(base + n, (0, 0));
        let k = self.cfg.unit / BASE;
        let u_idx = base / n.max(1);
        let len = self.out.fps.len();
        let fps = &self.out.fps[(u_idx * k).min(len)..((u_idx + 1) * k).min(len)];
        let out = &mut self.out.units[base..];
        unit_sizes(&self.cfg, &mut self.compressors, fps, u, out);
    }

    /// Feeds `data` in fixed pieces of `size` through `buf` (holding a partial piece between
    /// calls), calling `f` for every full piece.
    pub(crate) fn pieces(
        buf: &mut Vec<u8>,
        size: usize,
        mut data: &[u8],
        f: &mut dyn FnMut(&[u8]),
    ) {
        if !buf.is_empty() {
            let take = (size - buf.len()).min(data.len());
            buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if buf.len() == size {
                f(buf);
                buf.clear();
            }
        }
        let mut it = data.chunks_exact(size);
        for p in &mut it {
            f(p);
        }
        buf.extend_from_slice(it.remainder());
    }

    /// With a shared counter, a large file's facts are folded in every `flush_blocks` blocks
    /// (at a boundary of every block size), so memory stays flat whatever the file size, and
    /// as a scan lane the reducer folds the rest in itself when the file ends, on its own
    /// thread.
    pub fn with_counter(mut self, counter: Arc<Counter>) -> FileReducer {
        self.acc = Some(counter);
        self
    }

    /// The counter the file is folded into, if any.
    pub(crate) fn counter(&self) -> Option<&Arc<Counter>> {
        self.acc.as_ref()
    }

    /// The file's number from [`Counter::register`].
    pub fn with_file(mut self, id: u32) -> FileReducer {
        self.out.file = Some(id);
        self
    }

    pub(crate) fn maybe_flush(&mut self) {
        let Some(acc) = &self.acc else { return };
        if self.out.fps.len() < self.cfg.flush_blocks {
            return;
        }
        let g = self.cfg.group();
        let n = self.out.fps.len() / g * g;
        if n == 0 {
            return;
        }
        let ncodec = self.compressors.len();
        let nunits = (n / (self.cfg.unit / BASE)) * ncodec;
        let part = FileReduce {
            size: (n * BASE) as u64,
            fps: self.out.fps.drain(..n).collect(),
            zero: self.out.zero.drain(..n).collect(),
            units: self
                .out
                .units
                .drain(..nunits.min(self.out.units.len()))
                .collect(),
            chunks: std::mem::take(&mut self.out.chunks),
            file: self.out.file,
            kind: self.out.kind.take(),
        };
        self.out.size -= part.size;
        acc.add_now(&part);
    }

    /// Takes the file's next bytes (any piece size gives the same facts).
    pub fn update(&mut self, data: &[u8]) {
        if !self.sniffed
            && self.out.file.is_some()
            && self.cfg.breakdown.is_some()
            && !data.is_empty()
        {
            // The first bytes tell the format (for the breakdown by type).
            self.sniffed = true;
            self.out.kind = infer::get(&data[..data.len().min(8192)]).map(|t| t.mime_type());
        }
        self.out.size += data.len() as u64;
        let rest = self.spread_fixed(data);
        // The blocks' pass and the units' pass a slice at a time, not each over the whole
        // piece: a piece can be a 32 MiB window, and the second pass then finds the slice the
        // first just read in the core's cache, not in memory.
        // Slices end where units (and so blocks) end in the file, so that no slice leaves a
        // part of a unit to be copied aside.
        let compress = !self.compressors.is_empty();
        let size = self.cfg.unit;
        let (step, held) = match compress {
            true => ((FUSED_SLICE / size).max(1) * size, self.unit.len()),
            false => (FUSED_SLICE, self.block.len()),
        };
        let mut block = std::mem::take(&mut self.block);
        let mut unit = std::mem::take(&mut self.unit);
        let mut rest = rest;
        let mut take = step - held;
        while !rest.is_empty() {
            let (slice, after) = rest.split_at(take.min(rest.len()));
            Self::pieces(&mut block, BASE, slice, &mut |b| self.push_block(b));
            if compress {
                Self::pieces(&mut unit, size, slice, &mut |u| self.push_unit(u));
            }
            rest = after;
            take = step;
        }
        self.block = block;
        self.unit = unit;
        if let Some(bounds) = self.cfg.cdc_bounds() {
            self.cut_chunks(data, bounds);
        }
        self.maybe_flush();
    }

    /// In parallel mode, the blocks and units of the whole units at the start of a large piece
    /// met at a unit's boundary (no partial block or unit held), worked out over the pool and
    /// appended in order; the bytes left for the pass in order.
    fn spread_fixed<'d>(&mut self, data: &'d [u8]) -> &'d [u8] {
        if !self.parallel
            || data.len() < SPREAD_MIN
            || !self.block.is_empty()
            || !self.unit.is_empty()
            || !pool_has_room()
        {
            return data;
        }
        let unit = self.cfg.unit;
        let whole = data.len() / unit * unit;
        let (b0, u0) = (self.out.fps.len(), self.out.units.len());
        let blocks = b0 + whole / BASE;
        self.out.fps.resize(blocks, 0);
        self.out.zero.resize(blocks, false);
        let units = u0 + whole / unit * self.compressors.len();
        self.out.units.resize(units, (0, 0));
        spread(
            &self.cfg,
            &data[..whole],
            &mut self.out.fps[b0..],
            &mut self.out.zero[b0..],
            &mut self.out.units[u0..],
        );
        &data[whole..]
    }

    /// Content-defined chunking of the next `data`, cut where it lies: a chunk is known once
    /// a cut point is found before the end of the bytes seen or it reaches `max`, so only the
    /// unfinished last chunk (under `max` bytes) is kept in `self.cdc`, and it is topped up from
    /// the next data by at most `max` bytes until its cut is known (copying every byte into the
    /// buffer and draining it made a full reduction scan of the mixed benchmark tree 6% slower).
    /// The chunks are those of one FastCDC pass over the whole file.
    pub(crate) fn cut_chunks(&mut self, mut data: &[u8], (min, avg, max): (usize, usize, usize)) {
        let chunks = &mut self.out.chunks;
        let mut push = |d: &[u8]| chunks.push((xxh3_128(d), chunk_len(d.len()), is_zero(d)));
        while !self.cdc.is_empty() && !data.is_empty() {
            let old = self.cdc.len();
            let take = max.saturating_sub(old).min(data.len());
            self.cdc.extend_from_slice(&data[..take]);
            let len = fastcdc::v2020::FastCDC::new(&self.cdc, min, avg, max)
                .next()
                .map_or(0, |c| c.length);
            if len < self.cdc.len() || len == max {
                push(&self.cdc[..len]);
                if len >= old {
                    data = &data[len - old..];
                    self.cdc.clear();
                } else {
                    self.cdc.truncate(old);
                    self.cdc.drain(..len);
                }
            } else {
                // No cut yet, and under `max`: all of `data` was taken.
                data = &[];
            }
        }
        let mut done = 0;
        for c in fastcdc::v2020::FastCDC::new(data, min, avg, max) {
            if c.offset + c.length == data.len() && c.length < max {
                break;
            }
            push(&data[c.offset..c.offset + c.length]);
            done = c.offset + c.length;
        }
        self.cdc.extend_from_slice(&data[done..]);
    }

    /// The file's facts, after its last byte.
    pub fn finish(mut self) -> FileReduce {
        if !self.block.is_empty() {
            let b = std::mem::take(&mut self.block);
            self.push_block(&b);
            self.block = b;
        }
        if !self.unit.is_empty() && !self.compressors.is_empty() {
            let u = std::mem::take(&mut self.unit);
            self.push_unit(&u);
            self.unit = u;
        }
        if let Some((min, avg, max)) = self.cfg.cdc_bounds() {
            // The end of the file ends the last chunks.
            for c in fastcdc::v2020::FastCDC::new(&self.cdc, min, avg, max) {
                let d = &self.cdc[c.offset..c.offset + c.length];
                self.out
                    .chunks
                    .push((xxh3_128(d), chunk_len(c.length), is_zero(d)));
            }
        }
        Scratch {
            compressors: std::mem::take(&mut self.compressors),
            block: std::mem::take(&mut self.block),
            unit: std::mem::take(&mut self.unit),
            cdc: std::mem::take(&mut self.cdc),
        }
        .give_back();
        self.out
    }
}

/// One unit's (compressed, allocated) sizes by each of `compressors` into `out`; `fps` are the
/// fingerprints of its 4 KiB blocks (taken already), from which its own is made: it picks the
/// sample and keys the size cache.
pub(crate) fn unit_sizes(
    cfg: &ReduceConfig,
    compressors: &mut [Compressor],
    fps: &[u128],
    u: &[u8],
    out: &mut [(u32, u32)],
) {
    // Allocates only for a unit of several blocks.
    let fp = block_fp(fps, &mut Vec::new());
    if let Some(t) = cfg.sample_threshold()
        && ((fp >> 64) as u64) >= t
        && !is_zero(u)
    {
        // Not in the sample: not compressed.
        out.fill((u32::MAX, u32::MAX));
        return;
    }
    let cached = compressors.len() <= CACHE_CODECS;
    if cached && cfg.size_cache.get(fp, out) {
        return;
    }
    for (c, o) in compressors.iter_mut().zip(out.iter_mut()) {
        let clen = c.compress(u);
        let alloc = cfg.allocated(u.len(), clen);
        // A unit is at most MAX_BLOCK (ReduceConfig::check), its compressed size a little more
        // at worst.
        let fit = |n: u64| u32::try_from(n).expect("units are at most MAX_BLOCK");
        *o = (fit(clen as u64), fit(alloc));
    }
    if cached {
        cfg.size_cache.put(fp, out);
    }
}

/// A content-defined chunk's length (at most 4 times the average, itself at most 4M).
fn chunk_len(n: usize) -> u32 {
    u32::try_from(n).expect("chunks are at most 16 MiB")
}
