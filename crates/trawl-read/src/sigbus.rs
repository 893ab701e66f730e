//! Mapped windows that survive their file shrinking: a SIGBUS raised by a page past the file's
//! new end, inside a registered window, maps a page of zeros there and marks the window's file,
//! so that the read is reported as changed instead of the process being killed.
//!
//! Why by hand: no crate does this. `memmap2` documents the hazard and leaves it to the caller;
//! ripgrep and b3sum accept it. Reading by `mmap` is measurably faster for large files (see
//! the README's I/O section), so the scan maps them by default, and a file truncated by another
//! process while it is read must not end the scan.
//!
//! How: a process-wide `SIGBUS` handler (installed once, before the first window) looks the
//! faulting address up in a fixed table of registered windows. Inside one, it maps an anonymous
//! zero page over the faulting page (`mmap` is a plain system call on Linux, safe in a handler
//! in practice though POSIX does not list it), sets the window's flag (an atomic store) and
//! returns, so the access is retried and reads zeros. Outside every window, the handler that
//! was there before (Rust's own guard-page check, or the default action) gets the signal.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

/// Windows registered at once, at most: a reader thread keeps a handful of windows in flight
/// (the lanes' channels are 4 deep), so this is room for well over a hundred reader threads.
const SLOTS: usize = 1024;
/// A slot's `start` while it is being filled in or emptied.
const BUSY: usize = usize::MAX;

struct Slot {
    /// The window's first byte; 0 for a free slot, [`BUSY`] while changing.
    start: AtomicUsize,
    end: AtomicUsize,
    /// Set when a page of this window was replaced by zeros.
    flag: AtomicPtr<AtomicBool>,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot {
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
    flag: AtomicPtr::new(std::ptr::null_mut()),
};
static TABLE: [Slot; SLOTS] = [FREE; SLOTS];

/// The handler that was installed before ours (written once, before ours is installed).
static PREVIOUS: AtomicPtr<libc::sigaction> = AtomicPtr::new(std::ptr::null_mut());
static PAGE: AtomicUsize = AtomicUsize::new(4096);
static INSTALL: std::sync::Once = std::sync::Once::new();
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// A window registered with the handler; unregistered when dropped (drop it before unmapping
/// the window, so that a later mapping at the same address is not taken for it).
pub struct MapGuard {
    slot: usize,
    _flag: Arc<AtomicBool>,
}

impl Drop for MapGuard {
    fn drop(&mut self) {
        let s = &TABLE[self.slot];
        s.start.store(BUSY, Ordering::SeqCst);
        s.end.store(0, Ordering::SeqCst);
        s.flag.store(std::ptr::null_mut(), Ordering::SeqCst);
        s.start.store(0, Ordering::SeqCst);
    }
}

/// Why a guarded window of `file` raised SIGBUS: the file is now shorter than `len`, the bytes
/// the windows covered (it shrank), or not (the device failed to deliver a page: an I/O error
/// raises the same signal).
pub fn file_shrank_below(file: &std::fs::File, len: u64) -> bool {
    file.metadata().is_ok_and(|m| m.len() < len)
}

/// Registers `window` (a mapping of a file) so that a SIGBUS inside it sets `flag` instead of
/// killing the process. `None` if the handler could not be installed or the table is full:
/// then the caller must not rely on a mapping (read instead).
pub fn guard_map(window: &[u8], flag: &Arc<AtomicBool>) -> Option<MapGuard> {
    INSTALL.call_once(install);
    if !INSTALLED.load(Ordering::SeqCst) || window.is_empty() {
        return None;
    }
    let start = window.as_ptr() as usize;
    for (i, s) in TABLE.iter().enumerate() {
        if s.start
            .compare_exchange(0, BUSY, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
        {
            s.flag
                .store(Arc::as_ptr(flag) as *mut AtomicBool, Ordering::SeqCst);
            s.end.store(start + window.len(), Ordering::SeqCst);
            s.start.store(start, Ordering::SeqCst);
            return Some(MapGuard {
                slot: i,
                _flag: Arc::clone(flag),
            });
        }
    }
    None
}

fn install() {
    // SAFETY: sysconf and sigaction with valid pointers; the previous action is stored (leaked,
    // read only by the handler) before ours is installed.
    unsafe {
        let page = libc::sysconf(libc::_SC_PAGESIZE);
        if page > 0 {
            PAGE.store(page as usize, Ordering::SeqCst);
        }
        let mut ours: libc::sigaction = std::mem::zeroed();
        ours.sa_sigaction = on_sigbus as *const () as usize;
        ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut ours.sa_mask);
        let previous: *mut libc::sigaction = Box::into_raw(Box::new(std::mem::zeroed()));
        if libc::sigaction(libc::SIGBUS, std::ptr::null(), previous) != 0 {
            return;
        }
        PREVIOUS.store(previous, Ordering::SeqCst);
        if libc::sigaction(libc::SIGBUS, &ours, std::ptr::null_mut()) == 0 {
            INSTALLED.store(true, Ordering::SeqCst);
        }
    }
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    let page = PAGE.load(Ordering::Relaxed);
    for s in &TABLE {
        let start = s.start.load(Ordering::SeqCst);
        if start == 0 || start == BUSY || addr < start || addr >= s.end.load(Ordering::SeqCst) {
            continue;
        }
        let at = addr & !(page - 1);
        // SAFETY: the page lies in a registered window, a read-only file mapping that its
        // reader holds (the guard is dropped before the unmap): replacing it with zeros only
        // changes what that reader sees, which the flag then reports.
        let p = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                page,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if p != libc::MAP_FAILED {
            let flag = s.flag.load(Ordering::SeqCst);
            if !flag.is_null() {
                // SAFETY: the guard keeps the flag alive while the slot is registered.
                unsafe { (*flag).store(true, Ordering::SeqCst) };
            }
            return;
        }
    }
    // Not a window of ours: whoever handled SIGBUS before.
    let prev = PREVIOUS.load(Ordering::SeqCst);
    // SAFETY: `prev` was filled in by sigaction before our handler was installed and is never
    // freed; the previous handler is called as the kind of handler it was installed as.
    unsafe {
        if !prev.is_null() {
            let h = (*prev).sa_sigaction;
            if h != libc::SIG_DFL && h != libc::SIG_IGN {
                if (*prev).sa_flags & libc::SA_SIGINFO != 0 {
                    let f = std::mem::transmute::<
                        libc::sighandler_t,
                        extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void),
                    >(h);
                    f(sig, info, ctx);
                } else {
                    let f =
                        std::mem::transmute::<libc::sighandler_t, extern "C" fn(libc::c_int)>(h);
                    f(sig);
                }
                return;
            }
        }
        // The default action: returning re-raises the fault, which then kills the process.
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut dfl.sa_mask);
        libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_window_whose_file_shrinks_reads_zeros_and_is_flagged() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::File::create(&p)
            .unwrap()
            .write_all(&vec![7u8; 64 << 10])
            .unwrap();
        let file = std::fs::File::open(&p).unwrap();
        // SAFETY: a test file of our own; the test itself truncates it to provoke the fault it checks.
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        let flag = Arc::new(AtomicBool::new(false));
        let g = guard_map(&map, &flag).expect("registered");
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(8192)
            .unwrap();
        // Without the guard, this read past the new end kills the test process with SIGBUS.
        let sum: u64 = map.iter().map(|&b| b as u64).sum();
        assert_eq!(sum, 7 * 8192, "the pages past the end read as zeros");
        assert!(flag.load(Ordering::SeqCst));
        let slot = g.slot;
        drop(g);
        // The slot no longer names the window.
        assert_ne!(
            TABLE[slot].start.load(Ordering::SeqCst),
            map.as_ptr() as usize
        );
    }

    #[test]
    fn a_fault_outside_every_window_still_kills() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("g");
        std::fs::write(&p, vec![1u8; 64 << 10]).unwrap();
        // Our handler is installed, with nothing registered for this mapping.
        let flag = Arc::new(AtomicBool::new(false));
        drop(guard_map(b"x", &flag));
        assert!(INSTALLED.load(Ordering::SeqCst));
        let file = std::fs::File::open(&p).unwrap();
        // SAFETY: a test file of our own; the test itself truncates it to provoke the fault it checks.
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(0)
            .unwrap();
        // SAFETY: the child only reads memory and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: offset 40,000 is inside the 64 KiB map; the page is gone, which is the point: the child dies of SIGBUS.
            let v = unsafe { std::ptr::read_volatile(map.as_ptr().add(40_000)) };
            // SAFETY: _exit ends the forked child without running the parent's destructors.
            unsafe { libc::_exit(v as i32) };
        }
        let mut status = 0;
        // SAFETY: waits for our own child, writing only `status`.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGBUS,
            "status {status:#x}"
        );
        assert!(!flag.load(Ordering::SeqCst));
    }
}
