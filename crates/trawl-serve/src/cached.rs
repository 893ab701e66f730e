//! Reads that never wait for the storage: `preadv2` with `RWF_NOWAIT` copies what the page cache
//! holds and answers `EAGAIN` for the rest. A served file is usually in the page cache, and then
//! its bytes are read on the connection's own thread: a hand-off to tokio's blocking pool and
//! back costs two thread wake-ups, most of the time a small answer takes. What is not cached
//! (or a file system without `RWF_NOWAIT`) is read on the blocking pool as before, so a slow
//! disk never stalls the threads that serve the other connections. Written with `libc`
//! directly: neither the standard library nor tokio offers `preadv2`'s flags.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

use crate::seek::Unread;

/// Appends to `buf` up to `n` bytes of `file` from `at` that the page cache holds, without
/// waiting for the storage; returns how many (0: none is cached, the file ends at `at`, or the
/// system cannot say without waiting).
pub(crate) fn append_cached(file: &File, at: u64, n: usize, buf: &mut Vec<u8>) -> usize {
    buf.reserve(n);
    let mut got = 0;
    while got < n {
        let spare = &mut buf.spare_capacity_mut()[..n - got];
        let iov = libc::iovec {
            iov_base: spare.as_mut_ptr().cast(),
            iov_len: spare.len(),
        };
        let Ok(off) = libc::off_t::try_from(at + got as u64) else {
            break;
        };
        // SAFETY: the iovec points at `spare`, spare capacity of `buf` that lives across the
        // call and is at least `iov_len` bytes; the kernel writes at most that many.
        let r = unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, off, libc::RWF_NOWAIT) };
        if r <= 0 {
            // EAGAIN (not cached), EOPNOTSUPP (no RWF_NOWAIT here), the end of the file, or an
            // error that the waiting read will meet and report.
            break;
        }
        let r = r as usize;
        // SAFETY: the kernel wrote `r` bytes at the start of the spare capacity.
        unsafe { buf.set_len(buf.len() + r) };
        got += r;
    }
    got
}

/// Appends to `buf` up to `n` bytes of `file` from `at`, waiting for the storage (on the
/// blocking pool): fewer only where the file ends first.
pub(crate) fn append_waiting(file: &File, at: u64, n: usize, buf: &mut Vec<u8>) -> io::Result<()> {
    let start = buf.len();
    buf.resize(start + n, 0);
    let mut got = 0;
    while got < n {
        match file.read_at(&mut buf[start + got..], at + got as u64) {
            Ok(0) => break,
            Ok(r) => got += r,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                buf.truncate(start);
                return Err(e);
            }
        }
    }
    buf.truncate(start + got);
    Ok(())
}

/// Reads exactly `buf.len()` bytes of `file` at `at` if the page cache holds them all;
/// [`Unread::NotCached`] otherwise (the caller reads them on the blocking pool).
pub(crate) fn read_exact_cached(file: &File, buf: &mut [u8], at: u64) -> Result<(), Unread> {
    let mut v = Vec::new();
    if append_cached(file, at, buf.len(), &mut v) == buf.len() {
        buf.copy_from_slice(&v);
        Ok(())
    } else {
        Err(Unread::NotCached)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_bytes_are_read_without_waiting_and_reads_stop_at_the_end() {
        let mut f = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
        std::io::Write::write_all(&mut f, &data).unwrap();
        // Just written: in the page cache (or, where RWF_NOWAIT is not supported, nothing).
        let mut buf = b"head".to_vec();
        let n = append_cached(&f, 1000, 200_000, &mut buf);
        assert!(n == 0 || n == 200_000, "{n}");
        if n > 0 {
            assert_eq!(&buf[4..], &data[1000..201_000]);
        }
        let mut buf = Vec::new();
        append_waiting(&f, 299_990, 100, &mut buf).unwrap();
        assert_eq!(buf, &data[299_990..]);
        let mut exact = [0u8; 10];
        match read_exact_cached(&f, &mut exact, 299_995) {
            Err(e) => assert!(matches!(e, Unread::NotCached), "{e:?}"),
            Ok(()) => panic!("5 bytes left, 10 asked for"),
        }
    }
}
