//! An OCFL `inventory.json` comes from whoever wrote the storage root: the bounded JSON reader
//! and an inventory's checks on arbitrary bytes (a NUL byte, where there is one, ends the root
//! inventory and begins an earlier version's, which is checked too and held against it).
//!
//! What must hold: never a panic; the reader accepts exactly the JSON serde_json accepts (short
//! of its budget, which inputs this small never reach) and keeps what it says it keeps (every
//! object and string, and of an array's other elements the first); the findings are the same
//! however a hash set orders what it holds; and the heap the checks take is linear in the
//! input (a path's parent directories held one by one once took the square of its length).
#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use trawl_ocfl::untrusted::{self, Refused};

/// The system allocator, counting the bytes it holds and the most it held.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is handed to `System` with the caller's own arguments, which meet its
// contract as they meet ours; the counting beside it touches only atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as the caller's `alloc`.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as the caller's `alloc_zeroed`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator (that is, from `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as the caller's `realloc`; `ptr` came from `System` with `layout`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The most heap `f` held at once beyond what was held when it began.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

/// The heap the checks may take for an input of `len` bytes: a manifest's paths cost about a
/// hundred times their text (each held in the parsed value, among the content paths with its
/// digest, and among the paths checked), so this leaves room over that, and none for growth
/// faster than the input.
fn allowed(len: usize) -> usize {
    256 * len + (1 << 20)
}

/// What the bounded reader keeps of a value serde_json reads whole: arrays hold every string
/// and their first element of another kind.
fn thinned(v: &Value) -> Value {
    match v {
        Value::Array(items) => {
            let mut other = false;
            let mut out = Vec::new();
            for e in items {
                if e.is_string() {
                    out.push(e.clone());
                } else if !other {
                    other = true;
                    out.push(thinned(e));
                }
            }
            Value::Array(out)
        }
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), thinned(v))).collect()),
        other => other.clone(),
    }
}

fuzz_target!(|data: &[u8]| {
    let (root, prior) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], Some(&data[i + 1..])),
        None => (data, None),
    };

    // The reader against serde_json's own. A number past an f64's range is JSON's grammar all
    // the same: serde_json's `Value` refuses it anywhere, the reader only where it keeps it (an
    // array's element it drops is read past, as `IgnoredAny` reads it).
    let whole = serde_json::from_slice::<Value>(root);
    match (untrusted::json(root), whole) {
        (Ok(kept), Ok(all)) => assert_eq!(kept, thinned(&all)),
        (Err(Refused::NotJson(_)), Err(_)) => {}
        (Ok(_), Err(e)) if e.to_string().starts_with("number out of range") => {}
        (Err(Refused::OverBudget(b)), _) => panic!("over a budget of {b} bytes"),
        (ours, theirs) => panic!("the reader: {ours:?}; serde_json: {theirs:?}"),
    }

    let (found, peak) = peak_of(|| untrusted::inventory(root, prior));
    assert!(
        peak <= allowed(data.len()),
        "{peak} bytes of heap for {} bytes of inventory",
        data.len()
    );
    for code in found.errors.iter().chain(&found.warnings) {
        assert!(
            code.len() == 4
                && (code.starts_with('E') || code.starts_with('W'))
                && code[1..].bytes().all(|b| b.is_ascii_digit()),
            "{code}"
        );
    }
    // A second check (its hash sets seeded afresh) finds the same, but for order.
    let again = untrusted::inventory(root, prior);
    if found.not_listed == (0, 0) {
        let sorted = |f: &untrusted::Findings| {
            let (mut e, mut w) = (f.errors.clone(), f.warnings.clone());
            e.sort_unstable();
            w.sort_unstable();
            (f.parsed, e, w)
        };
        assert_eq!(sorted(&found), sorted(&again));
    }
});
