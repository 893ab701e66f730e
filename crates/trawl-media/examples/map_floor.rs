//! The floor under a mapped FLV index: what the kernel takes to map every page of a file and to
//! take the mapping down again, with no parsing at all. `flv index` on a file of small tags
//! touches about every 64 KiB of it, so this is the least any mapped walk of it can cost.
//!
//!     map_floor FILE [seq|4k]
//!
//! With `seq` or `4k`, the file is first evicted from the page cache and cached again the way
//! `bench/media.py` does it: by a sequential read (large folios), or 4 KiB at a time with
//! random-access advice (order-0 folios). Prints seconds to touch one byte a page (one thread)
//! and to unmap.

use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::time::Instant;

fn recache(file: &std::fs::File, state: &str) -> std::io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: advice on an open descriptor; no memory is involved.
    unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED) };
    let size = file.metadata()?.len();
    if state == "seq" {
        let mut buf = vec![0u8; 1 << 20];
        let mut off = 0;
        while off < size {
            off += file.read_at(&mut buf, off)?.max(1) as u64;
        }
    } else {
        // SAFETY: as above.
        unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_RANDOM) };
        let mut buf = [0u8; 4096];
        for off in (0..size).step_by(4096) {
            file.read_at(&mut buf, off)?;
        }
    }
    Ok(())
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: map_floor FILE [seq|4k]");
        std::process::exit(2);
    };
    let file = std::fs::File::open(path)?;
    if let Some(state) = args.get(2) {
        recache(&file, state)?;
    }
    let t0 = Instant::now();
    // SAFETY: read-only; the file is not changed while this runs (a benchmark file).
    let map = unsafe { memmap2::Mmap::map(&file)? };
    let _ = map.advise(memmap2::Advice::Random);
    let mut sum = 0u8;
    for i in (0..map.len()).step_by(4096) {
        sum ^= map[i];
    }
    std::hint::black_box(sum);
    let touched = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    drop(map);
    let unmapped = t1.elapsed().as_secs_f64();
    println!(
        "{} pages: touch {touched:.3} s, unmap {unmapped:.3} s, together {:.3} s on one core",
        file.metadata()?.len().div_ceil(4096),
        touched + unmapped
    );
    Ok(())
}
