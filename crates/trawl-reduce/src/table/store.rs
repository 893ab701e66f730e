//! Where a partition's slots live: on the heap while small, in an anonymous mapping of its
//! own past `MAP_MIN`, grown in place (`mremap` moves page tables, not bytes).

use super::*;

/// A partition's bytes: on the heap while small, in a mapping of its own once large.
pub(crate) enum Store {
    Heap(Vec<u8>),
    Map(memmap2::MmapMut),
}

impl Store {
    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Store::Heap(v) => v,
            Store::Map(m) => m,
        }
    }

    #[inline]
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            Store::Heap(v) => v,
            Store::Map(m) => m,
        }
    }

    /// Resizes to `bytes` (new bytes are zero); moves into a mapping at `map_min` bytes, and
    /// then returns true.
    pub(crate) fn resize(&mut self, bytes: usize, map_min: usize) -> bool {
        match self {
            Store::Heap(v) if bytes >= map_min => {
                let mut m = memmap2::MmapMut::map_anon(bytes.next_multiple_of(PAGE))
                    .expect("fingerprint table: out of memory");
                let keep = v.len().min(bytes);
                m[..keep].copy_from_slice(&v[..keep]);
                *self = Store::Map(m);
                return true;
            }
            Store::Heap(v) => {
                // Exactly: a doubled capacity would be memory the table never uses.
                v.reserve_exact(bytes.saturating_sub(v.len()));
                v.resize(bytes, 0)
            }
            // Mappings are kept in whole pages: the rest of the last page is room to grow.
            Store::Map(m) if bytes <= m.len() && bytes + PAGE > m.len() => {}
            #[cfg(target_os = "linux")]
            Store::Map(m) => {
                // SAFETY: an anonymous private mapping: the added pages are zero-filled memory
                // of the process, and no reference into the old range outlives `&mut self`.
                unsafe {
                    m.remap(
                        bytes.next_multiple_of(PAGE),
                        memmap2::RemapOptions::new().may_move(true),
                    )
                }
                .expect("fingerprint table: out of memory");
            }
            #[cfg(not(target_os = "linux"))]
            Store::Map(m) => {
                let mut n = memmap2::MmapMut::map_anon(bytes.next_multiple_of(PAGE))
                    .expect("fingerprint table: out of memory");
                let keep = m.len().min(n.len());
                n[..keep].copy_from_slice(&m[..keep]);
                *m = n;
            }
        }
        false
    }

    /// Bytes held: heap capacity, mappings in whole pages.
    pub(crate) fn held(&self) -> usize {
        match self {
            Store::Heap(v) => v.capacity(),
            Store::Map(m) => m.len().next_multiple_of(PAGE),
        }
    }
}
