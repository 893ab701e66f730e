//! A bounded pool of pre-allocated read buffers: readers take an empty buffer, fill it
//! and pass it on; when the last consumer drops it, it goes back to the pool. No allocation per
//! read, and memory is `count * size` whatever the number or size of files.
//!
//! When a pool ends, its buffers wait (up to [`SPARE_BYTES`] in all) for the next pool of the
//! process: a process that scans again and again (a cluster worker running one map after
//! another) reads into memory already faulted in, instead of allocating and faulting its
//! buffers anew each time (a quarter of a worker's page faults, measured).

use crossbeam_channel::{Receiver, Sender, bounded};
use std::ops::Deref;

/// The pool. Cloning shares it.
#[derive(Clone)]
pub struct BufferPool {
    tx: Sender<Colored>,
    rx: Receiver<Colored>,
    size: usize,
    /// Buffers made so far (at most the channel's capacity).
    made: std::sync::Arc<std::sync::Mutex<usize>>,
}

/// A buffer and where its usable part starts.
///
/// Buffers of a power-of-two size come back from the allocator at addresses a multiple of that
/// size apart (plus a constant), so their first bytes all fall in the same sets of the CPU's
/// caches: with a FIFO pool of 1 MiB buffers, a tree of small files is read through 16 starts
/// that evict each other from an 8-way L2, and the kernel's copy into them takes about twice
/// the system time it takes into 64 KiB buffers (docs/decisions/0010). Each buffer therefore
/// starts `COLOR_STEP` further past a `COLOR_SPAN` boundary than the one before, across
/// `COLORS` steps.
struct Colored {
    mem: Vec<u8>,
    start: usize,
    size: usize,
}

/// The most bytes of ended pools' buffers kept for the next pool.
pub const SPARE_BYTES: usize = 64 << 20;

/// Buffers of ended pools, for the next one (taken and given once per buffer, never per read).
static SPARE: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());

/// A buffer of `len` bytes: a spare one of that length if there is one, or a new one.
fn spare_or_new(len: usize) -> Vec<u8> {
    let mut spare = SPARE.lock().unwrap_or_else(|p| p.into_inner());
    match spare.iter().position(|m| m.len() == len) {
        Some(i) => spare.swap_remove(i),
        None => vec![0u8; len],
    }
}

/// Keeps `mem` for the next pool, within [`SPARE_BYTES`].
fn keep_spare(mem: Vec<u8>) {
    let mut spare = SPARE.lock().unwrap_or_else(|p| p.into_inner());
    if spare.iter().map(Vec::len).sum::<usize>() + mem.len() <= SPARE_BYTES {
        spare.push(mem);
    }
}

const COLORS: usize = 16;
/// The span the starts are spread over: one way of a 1 MiB 8-way L2 (a 512 KiB one repeats
/// every 64 KiB, which the steps cover twice).
const COLOR_SPAN: usize = 128 << 10;
/// 8 KiB and a cache line: 16 starts spread over `COLOR_SPAN`.
const COLOR_STEP: usize = (8 << 10) + 64;

impl BufferPool {
    /// `count` buffers of `size` bytes, all allocated now.
    pub fn new(count: usize, size: usize) -> BufferPool {
        BufferPool::growable(count, count, size)
    }

    /// `count` buffers of `size` bytes now, room for up to `max` ([`BufferPool::grow_to`]).
    pub fn growable(count: usize, max: usize, size: usize) -> BufferPool {
        let count = count.max(1);
        let (tx, rx) = bounded(max.max(count));
        let pool = BufferPool {
            tx,
            rx,
            size,
            made: Default::default(),
        };
        pool.grow_to(count);
        pool
    }

    /// Makes buffers until there are `count` (within the room given): more reads in flight
    /// need more buffers, and a pool made at its largest would, cycling first in first out,
    /// leave all of them resident in a scan that never needed them.
    pub fn grow_to(&self, count: usize) {
        let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner());
        let count = count.min(self.tx.capacity().unwrap_or(usize::MAX));
        while *made < count {
            let i = *made;
            // Room to move the start to a `COLOR_SPAN` boundary, then `i` steps on.
            let mem = spare_or_new(COLOR_SPAN + COLORS * COLOR_STEP + self.size);
            let to_boundary = mem.as_ptr().align_offset(COLOR_SPAN);
            let start = to_boundary + (i % COLORS) * COLOR_STEP;
            if self
                .tx
                .send(Colored {
                    mem,
                    start,
                    size: self.size,
                })
                .is_err()
            {
                return;
            }
            *made += 1;
        }
    }

    /// Bytes in each buffer.
    pub fn buffer_size(&self) -> usize {
        self.size
    }

    /// Takes a buffer if one is free now.
    pub fn try_get(&self) -> Option<PooledBuf> {
        let buf = self.rx.try_recv().ok()?;
        Some(PooledBuf {
            buf: Some(buf),
            len: 0,
            home: self.tx.clone(),
        })
    }

    /// Takes a buffer, waiting while all are in use.
    pub fn get(&self) -> PooledBuf {
        let buf = self
            .rx
            .recv()
            .expect("the pool owns a sender, so it never disconnects");
        PooledBuf {
            buf: Some(buf),
            len: 0,
            home: self.tx.clone(),
        }
    }
}

/// A buffer on loan from a [`BufferPool`], holding `len` valid bytes.
pub struct PooledBuf {
    buf: Option<Colored>,
    len: usize,
    home: Sender<Colored>,
}

impl PooledBuf {
    /// The whole buffer, to read into.
    pub fn space(&mut self) -> &mut [u8] {
        let b = self.buf.as_mut().expect("present until drop");
        &mut b.mem[b.start..b.start + b.size]
    }

    /// Sets the length of the filled part (at most the buffer's size).
    pub fn set_len(&mut self, len: usize) {
        assert!(len <= self.buf.as_ref().map_or(0, |b| b.size));
        self.len = len;
    }
}

impl Deref for PooledBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        let b = self.buf.as_ref().expect("present until drop");
        &b.mem[b.start..b.start + self.len]
    }
}

impl Drop for PooledBuf {
    fn drop(&mut self) {
        if let Some(b) = self.buf.take()
            && let Err(e) = self.home.try_send(b)
        {
            // Its pool has ended.
            keep_spare(e.into_inner().mem);
        }
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        // The last handle: the buffers at home go to the spares (those on loan follow when
        // they are dropped).
        if std::sync::Arc::strong_count(&self.made) == 1 {
            for b in self.rx.try_iter() {
                keep_spare(b.mem);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_return_to_the_pool() {
        let pool = BufferPool::new(2, 16);
        let a = pool.get();
        let b = pool.get();
        assert!(pool.rx.is_empty());
        drop(a);
        let mut c = pool.get();
        c.space()[0] = 7;
        c.set_len(1);
        assert_eq!(&*c, &[7]);
        drop(b);
        drop(c);
        assert_eq!(pool.rx.len(), 2);
    }

    #[test]
    fn an_ended_pools_buffers_serve_the_next_pool() {
        // A size no other test uses, so that tests running at once do not take these.
        let size = 12_345;
        let base = |b: &PooledBuf| b.buf.as_ref().map(|c| c.mem.as_ptr());
        let pool = BufferPool::new(2, size);
        let a = pool.get();
        let b = pool.get();
        let kept = [base(&a), base(&b)];
        drop(b);
        drop(pool);
        drop(a); // on loan when its pool ended
        // Freed, the two would likely be the allocator's next answers: these take them.
        let len = COLOR_SPAN + COLORS * COLOR_STEP + size;
        let hold: Vec<Vec<u8>> = (0..2).map(|_| vec![1u8; len]).collect();
        let next = BufferPool::new(2, size);
        let (c, d) = (next.get(), next.get());
        let mut got = [base(&c), base(&d)];
        got.sort();
        let mut kept = kept;
        kept.sort();
        assert_eq!(
            got, kept,
            "the next pool reads into the ended pool's buffers"
        );
        drop((c, d, next, hold));
        let spare = SPARE.lock().unwrap();
        assert!(spare.iter().map(Vec::len).sum::<usize>() <= SPARE_BYTES);
    }

    #[test]
    fn buffer_starts_fall_in_different_cache_sets() {
        // 1 MiB buffers: without colouring their starts share the same offset modulo 128 KiB.
        let pool = BufferPool::new(COLORS, 1 << 20);
        let mut bufs: Vec<PooledBuf> = (0..COLORS).map(|_| pool.get()).collect();
        let mut sets: Vec<usize> = bufs
            .iter_mut()
            .map(|b| (b.space().as_ptr() as usize % (128 << 10)) / 4096)
            .collect();
        sets.sort();
        sets.dedup();
        assert_eq!(
            sets.len(),
            COLORS,
            "starts by 4 KiB slot mod 128 KiB: {sets:?}"
        );
        for b in &mut bufs {
            assert_eq!(b.space().len(), 1 << 20);
        }
    }
}
