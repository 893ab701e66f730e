//! One partition of the table: its sorted 7-byte slots, the merge of a sorted share into them
//! from the back, in place, the side map of counts past a byte, and the sort of a staged share.

use std::collections::HashMap;

use super::*;

/// One partition: `len` slots (remainder << 8 | count byte), sorted by remainder, in `store`
/// (which holds at least `len * SLOT + 1` bytes, so that every slot can be read as a u64).
pub(crate) struct Part {
    pub(crate) store: Store,
    pub(crate) len: usize,
}

impl Part {
    pub(crate) fn new() -> Part {
        Part {
            store: Store::Heap(vec![0]),
            len: 0,
        }
    }

    /// Slot `i`; `i < self.len`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> u64 {
        let b = &self.store.bytes()[i * SLOT..i * SLOT + 8];
        u64::from_le_bytes(b.try_into().unwrap()) & SLOT_MASK
    }

    /// The slot holding `rem`, if any (binary search).
    pub(crate) fn find(&self, rem: u64) -> Option<u64> {
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let s = self.get(mid);
            match (s >> 8).cmp(&rem) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(s),
            }
        }
        None
    }

    /// Merges `b` (staged words of this partition, sorted) into the slots, from the back, in
    /// place; calls `on_new` with the first word of each key that was not there. Sets `moved`
    /// if the partition moved from the heap into a mapping.
    ///
    /// Its cursors (the read and write positions in the slots, the staged word, the count side
    /// map) are one state, which separate functions would hand back and forth.
    // long: the one pass every staged key goes through, the hottest loop of a scan
    pub(crate) fn merge(
        &mut self,
        part: u64,
        b: &[u64],
        side: &mut Side,
        map_min: usize,
        moved: &mut bool,
        on_new: &mut dyn FnMut(u64),
    ) -> usize {
        // Room for every distinct key of the batch, as if all were new.
        let mut groups = 0;
        let mut last = u64::MAX;
        for &w in b {
            groups += (w >> 8 != last) as usize;
            last = w >> 8;
        }
        let old = self.len;
        let total = old + groups;
        *moved |= self.store.resize(total * SLOT + 1, map_min);
        let m = Merge::new(self.store.bytes_mut(), total);
        // SAFETY (each `m.` call below): every slot index is below `total` (`i <= old`,
        // `w < total`), and `move_above` is given `d = w - i >= 1` with `i + d <= total`: the
        // room left for the staged groups not yet placed is at least one.
        let (mut i, mut k) = (old, b.len());
        let mut new = 0;
        // Until the first new key (from the back), nothing moves: keys that are already there
        // get their counts in place.
        while k > 0 {
            let (rem, j) = group(b, k);
            let id = (part << REM_BITS) | rem;
            let add = (k - j) as u64;
            // SAFETY: slot indices stay below `total` (see the note above this loop).
            while i > 0 && unsafe { m.rd(i - 1) } & SLOT_MASK > (rem << 8 | 0xff) {
                i -= 1;
            }
            // The slot below, or 0, which holds no key (a remainder is never 0: `stage_word`).
            let below = if i > 0 {
                // SAFETY: slot indices stay below `total` (see the note above this loop).
                (unsafe { m.rd(i - 1) }) & SLOT_MASK
            } else {
                0
            };
            if below >> 8 == rem {
                let c = side.count(below & 0xff, id);
                // SAFETY: slot indices stay below `total` (see the note above this loop).
                unsafe { m.put(i - 1, side.put(rem, c + add, id)) };
                k = j;
                continue;
            }
            new += 1;
            on_new(b[j]);
            // The first new key: the slots above it move up by the room made for every staged
            // key (`total - old`), it goes below them, and the rest of the merge moves what it
            // passes.
            let mut w = i + (total - old) - 1;
            // SAFETY: slot indices stay below `total` (see the note above this loop).
            unsafe {
                m.shift_up(i, old, w + 1);
                m.put(w, side.put(rem, add, id));
            }
            k = j;
            while k > 0 {
                let (rem, j) = group(b, k);
                let id = (part << REM_BITS) | rem;
                let add = (k - j) as u64;
                // Larger slots move up by the room left, `w - i`, constant through the run.
                let d = w - i;
                // SAFETY: `d = w - i >= 1` and `i + d <= total` (see the note above this loop).
                i = unsafe { m.move_above(i, d, rem) };
                w = i + d;
                let below = if i > 0 {
                    // SAFETY: slot indices stay below `total` (see the note above this loop).
                    (unsafe { m.rd(i - 1) }) & SLOT_MASK
                } else {
                    0
                };
                let s = if below >> 8 == rem {
                    i -= 1;
                    let c = side.count(below & 0xff, id);
                    side.put(rem, c + add, id)
                } else {
                    new += 1;
                    on_new(b[j]);
                    side.put(rem, add, id)
                };
                w -= 1;
                // SAFETY: slot indices stay below `total` (see the note above this loop).
                unsafe { m.put(w, s) };
                k = j;
            }
            // Keys that were already there leave a gap of as many slots below the merged ones.
            if w > i {
                self.store
                    .bytes_mut()
                    .copy_within(w * SLOT..total * SLOT, i * SLOT);
            }
            break;
        }
        self.len = old + new;
        new
    }
}

/// The staged group ending at `k` (words with one key): its remainder and its first index.
#[inline]
pub(crate) fn group(b: &[u64], k: usize) -> (u64, usize) {
    let rem = b[k - 1] >> 8 & REM_MASK;
    let mut j = k - 1;
    while j > 0 && b[j - 1] >> 8 & REM_MASK == rem {
        j -= 1;
    }
    (rem, j)
}

/// Slot access during one merge, unchecked in release builds (the merge's hot loop): a
/// partition's bytes, `total * SLOT + 1` of them or more.
pub(crate) struct Merge<'a> {
    pub(crate) p: *mut u8,
    pub(crate) total: usize,
    pub(crate) _bytes: std::marker::PhantomData<&'a mut [u8]>,
}

impl<'a> Merge<'a> {
    pub(crate) fn new(bytes: &'a mut [u8], total: usize) -> Merge<'a> {
        assert!(bytes.len() > total * SLOT);
        Merge {
            p: bytes.as_mut_ptr(),
            total,
            _bytes: std::marker::PhantomData,
        }
    }

    /// Slot `i` and the next slot's first byte.
    ///
    /// # Safety
    /// `i < total`.
    #[inline]
    unsafe fn rd(&self, i: usize) -> u64 {
        debug_assert!(i < self.total);
        // SAFETY: `i * SLOT + 8 <= total * SLOT + 1`, within the bytes.
        unsafe { self.p.add(i * SLOT).cast::<u64>().read_unaligned() }
    }

    /// Writes slot `i` as 8 bytes from its start, the eighth the next slot's first byte as it is.
    ///
    /// # Safety
    /// `i < total`.
    #[inline]
    unsafe fn put(&self, i: usize, s: u64) {
        debug_assert!(i < self.total);
        // SAFETY: as in `rd`.
        unsafe {
            let next = self.p.add((i + 1) * SLOT).read() as u64;
            self.p
                .add(i * SLOT)
                .cast::<u64>()
                .write_unaligned(s | (next << (8 * SLOT)));
        }
    }

    /// Moves slots `from..to` to start at slot `at` (ranges may overlap).
    ///
    /// # Safety
    /// `from <= to` and `at + (to - from) <= total`.
    unsafe fn shift_up(&self, from: usize, to: usize, at: usize) {
        debug_assert!(at + (to - from) <= self.total);
        // SAFETY: both ranges lie within `total * SLOT` bytes; `copy` allows overlap.
        unsafe {
            std::ptr::copy(
                self.p.add(from * SLOT),
                self.p.add(at * SLOT),
                (to - from) * SLOT,
            )
        }
    }

    /// Moves the slots below `i` whose remainder is above `rem` up by `d` (at least 1: the
    /// room left for the staged keys not yet placed), the hot loop of a merge; returns the new
    /// `i`. Each slot is written as 8 bytes ending where the slot ends, the first over the last
    /// byte of the slot below its destination, which is at or above `i`: read already and to be
    /// written later. So the loop carries no value from slot to slot and its stores never
    /// overlap its next loads (reading back a byte written by the store before stalled every
    /// iteration on a failed store-to-load forward).
    ///
    /// # Safety
    /// `d >= 1` and `i + d <= total`.
    #[inline]
    unsafe fn move_above(&self, mut i: usize, d: usize, rem: u64) -> usize {
        debug_assert!(d >= 1 && i + d <= self.total);
        let lim = rem << 8 | 0xff;
        while i > 0 {
            // SAFETY: `i - 1 < i + d <= total`.
            let v = unsafe { self.rd(i - 1) };
            if v & SLOT_MASK <= lim {
                break;
            }
            i -= 1;
            // SAFETY: `(i + d) * SLOT - 1 >= 0` as `d >= 1`, and `(i + d) * SLOT + 7 <= total
            // * SLOT` as `i + d < total`.
            unsafe {
                self.p
                    .add((i + d) * SLOT - 1)
                    .cast::<u64>()
                    .write_unaligned(v << 8);
            }
        }
        i
    }
}

/// Counts of 255 and more, by (partition << 48 | remainder).
#[derive(Default)]
pub(crate) struct Side {
    pub(crate) big: HashMap<u64, u16>,
}

impl Side {
    /// The count behind a slot's count byte (`id`: the key in the side map).
    #[inline]
    pub(crate) fn count(&self, byte: u64, id: u64) -> u64 {
        if byte == BYTE_MAX {
            self.big.get(&id).map_or(BYTE_MAX, |&c| c as u64)
        } else {
            byte
        }
    }

    /// The slot for `rem` with count `c` (saturated): in the count byte below 255, else in the
    /// side map under `id`.
    #[inline]
    pub(crate) fn put(&mut self, rem: u64, c: u64, id: u64) -> u64 {
        let c = c.min(COUNT_MAX);
        if c < BYTE_MAX {
            (rem << 8) | c
        } else {
            self.big.insert(id, c as u16);
            (rem << 8) | BYTE_MAX
        }
    }
}

/// Sorts `b` ascending, whose top `skip` bits are all equal and whose next bits are uniformly
/// distributed (one partition's share of hashed keys): a counting sort on the next bits into
/// `tmp`, about one key per bucket, then an insertion pass that moves little. In cache: a share
/// is an eighth of a partition. `share` is the staged words' bytes; `tmp` gets them sorted.
pub(crate) fn sort_share(share: &[u8], skip: u32, tmp: &mut Vec<u64>, hist: &mut Vec<u32>) {
    let words = share
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()));
    let n = share.len() / 8;
    tmp.clear();
    if n < 64 {
        tmp.extend(words);
        tmp.sort_unstable();
        return;
    }
    let bits = (usize::BITS - (n - 1).leading_zeros()).min(20);
    let shift = 64 - skip - bits;
    let mask = (1usize << bits) - 1;
    hist.clear();
    hist.resize((1 << bits) + 1, 0);
    for w in words.clone() {
        hist[((w >> shift) as usize & mask) + 1] += 1;
    }
    for i in 1..hist.len() {
        hist[i] += hist[i - 1];
    }
    tmp.resize(n, 0);
    for w in words {
        let h = (w >> shift) as usize & mask;
        tmp[hist[h] as usize] = w;
        hist[h] += 1;
    }
    for i in 1..n {
        let x = tmp[i];
        let mut j = i;
        while j > 0 && tmp[j - 1] > x {
            tmp[j] = tmp[j - 1];
            j -= 1;
        }
        tmp[j] = x;
    }
}
