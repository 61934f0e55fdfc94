//! [`Allocator`]: the functions' global allocator, mimalloc asked for plain
//! blocks whenever a plain block is aligned enough. (The `streamdex`
//! command uses jemalloc instead: replay's reading thread allocates what
//! its handling thread frees, which jemalloc's thread caches take better;
//! see `infra/src/main.rs`.)
//!
//! Why not `mimalloc::MiMalloc` as it is: it asks for every block with
//! `mi_malloc_aligned(size, align)`, even a `String`'s bytes (alignment 1).
//! mimalloc 3 serves that from its fast path only when the next free block
//! of the size happens to be aligned; otherwise, for any size that is not a
//! power of two (24, 40, 48 bytes: most names, values and vectors here), it
//! allocates `size + align - 1` bytes from a larger size class and marks the
//! page as holding interior pointers, which every later free on that page
//! pays for. Plain blocks avoid both the over-allocation and that cost, in
//! instructions and in peak RSS (`docs/PERFORMANCE.md`, "The allocator").
//!
//! A plain mimalloc block is a whole number of 8-byte words and a page's
//! first block starts 16-byte aligned, so every plain block is 8-byte
//! aligned: a layout aligned to 8 or less (nearly all of them) gets a plain
//! block, as the standard library's `System` does with `malloc`. Anything
//! aligned more still goes through `mi_malloc_aligned`.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The largest alignment every plain mimalloc block has.
const PLAIN_ALIGN: usize = 8;

/// Whether a plain block suffices for `layout`.
fn plain(layout: Layout) -> bool {
    layout.align() <= PLAIN_ALIGN
}

/// mimalloc, plain blocks where they suffice (see the module's docs).
///
/// ```ignore
/// #[global_allocator]
/// static ALLOCATOR: aws_kit::alloc::Allocator = aws_kit::alloc::Allocator;
/// ```
pub struct Allocator;

// SAFETY: every block comes from mimalloc and goes back to it (`mi_free`
// frees plain and aligned blocks alike); a block is aligned to its layout:
// plain blocks to 8 (see above), others by `mi_*_aligned`.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc's allocation functions take any size and alignment.
        unsafe {
            if plain(layout) {
                mi::mi_malloc(layout.size()).cast()
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        unsafe {
            if plain(layout) {
                mi::mi_zalloc(layout.size()).cast()
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator, so from mimalloc.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout`; the new block
        // keeps `layout`'s alignment by the same rule as `alloc`.
        unsafe {
            if plain(layout) {
                mi::mi_realloc(ptr.cast(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // The kit's own tests run on it, too.
    #[global_allocator]
    static ALLOCATOR: Allocator = Allocator;

    /// A layout of about `size` bytes aligned to `2^align_log`, as Rust makes
    /// them (the size a whole number of alignments, never 0).
    fn layout(size: usize, align_log: u32) -> Layout {
        let align = 1usize << align_log;
        let size = size.max(1).div_ceil(align) * align;
        Layout::from_size_align(size, align).unwrap()
    }

    /// Writes `seed` over the block's `len` bytes.
    fn fill(ptr: *mut u8, len: usize, seed: u8) {
        // SAFETY: the caller's block holds `len` bytes.
        unsafe { ptr.write_bytes(seed, len) };
    }

    /// Whether the block's first `len` bytes are all `seed`.
    fn holds(ptr: *const u8, len: usize, seed: u8) -> bool {
        // SAFETY: the caller's block holds `len` initialised bytes.
        unsafe { std::slice::from_raw_parts(ptr, len) }
            .iter()
            .all(|&byte| byte == seed)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Blocks of every size class, plain and over-aligned, many at once
        /// (so pages fill and fresh ones are taken): each is aligned to its
        /// layout, keeps what was written to it, keeps its prefix when it
        /// grows or shrinks, and a zeroed one reads zero.
        #[test]
        fn blocks_are_aligned_and_keep_their_bytes(
            blocks in prop::collection::vec((1usize..70_000, 0u32..13, 1usize..70_000, any::<bool>()), 1..64),
        ) {
            let mut live = Vec::new();
            for (i, &(size, align_log, new_size, zeroed)) in blocks.iter().enumerate() {
                let layout = layout(size, align_log);
                // SAFETY: `layout` has a non-zero size.
                let ptr = unsafe { if zeroed { ALLOCATOR.alloc_zeroed(layout) } else { ALLOCATOR.alloc(layout) } };
                prop_assert!(!ptr.is_null());
                prop_assert_eq!(ptr as usize % layout.align(), 0, "{:?}", layout);
                if zeroed {
                    prop_assert!(holds(ptr, layout.size(), 0), "{:?}", layout);
                }
                // Distinct from every other live block's bytes, and from zero.
                let seed = i as u8 + 1;
                fill(ptr, layout.size(), seed);
                live.push((ptr, layout, new_size, seed));
            }
            for (ptr, layout, new_size, seed) in live {
                prop_assert!(holds(ptr, layout.size(), seed));
                let new_size = new_size.div_ceil(layout.align()) * layout.align();
                // SAFETY: `ptr` came from `ALLOCATOR` with `layout`; `new_size` is non-zero.
                let moved = unsafe { ALLOCATOR.realloc(ptr, layout, new_size) };
                prop_assert!(!moved.is_null());
                prop_assert_eq!(moved as usize % layout.align(), 0, "{:?} to {}", layout, new_size);
                prop_assert!(holds(moved, layout.size().min(new_size), seed));
                // SAFETY: `moved` came from `ALLOCATOR`, `new_size` bytes at `layout`'s alignment.
                unsafe { ALLOCATOR.dealloc(moved, Layout::from_size_align(new_size, layout.align()).unwrap()) };
            }
        }
    }
}
