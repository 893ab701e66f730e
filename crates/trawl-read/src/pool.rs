//! A bounded pool of pre-allocated read buffers (seed 000): readers take an empty buffer, fill it
//! and pass it on; when the last consumer drops it, it goes back to the pool. No allocation per
//! read, and memory is `count * size` whatever the number or size of files.

use crossbeam_channel::{Receiver, Sender, bounded};
use std::ops::Deref;

/// The pool. Cloning shares it.
#[derive(Clone)]
pub struct BufferPool {
    tx: Sender<Vec<u8>>,
    rx: Receiver<Vec<u8>>,
    size: usize,
}

impl BufferPool {
    /// `count` buffers of `size` bytes, all allocated now.
    pub fn new(count: usize, size: usize) -> BufferPool {
        let count = count.max(1);
        let (tx, rx) = bounded(count);
        for _ in 0..count {
            tx.send(vec![0u8; size]).expect("pool has room");
        }
        BufferPool { tx, rx, size }
    }

    pub fn buffer_size(&self) -> usize {
        self.size
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
    buf: Option<Vec<u8>>,
    len: usize,
    home: Sender<Vec<u8>>,
}

impl PooledBuf {
    /// The whole buffer, to read into.
    pub fn space(&mut self) -> &mut [u8] {
        self.buf.as_mut().expect("present until drop")
    }

    pub fn set_len(&mut self, len: usize) {
        assert!(len <= self.buf.as_ref().map_or(0, Vec::len));
        self.len = len;
    }
}

impl Deref for PooledBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf.as_ref().expect("present until drop")[..self.len]
    }
}

impl Drop for PooledBuf {
    fn drop(&mut self) {
        if let Some(b) = self.buf.take() {
            let _ = self.home.try_send(b);
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
}
