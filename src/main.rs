//! The `harness` binary: everything lives in the library's `cli` module.

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
    mi_zalloc_aligned,
};
use std::alloc::{GlobalAlloc, Layout};

#[global_allocator]
static ALLOCATOR: Mimalloc = Mimalloc;

/// [mimalloc](https://github.com/microsoft/mimalloc), asked for aligned memory only when a type
/// needs more than a machine word: every block mimalloc hands out is aligned to one (its own
/// aligned reallocation takes the plain path up to a word), and the plain calls take a shorter
/// path than the aligned ones, which a run pays on each of its million allocations.
struct Mimalloc;

/// The alignment every mimalloc block has.
const WORD: usize = std::mem::size_of::<usize>();

#[expect(
    unsafe_code,
    reason = "a global allocator is an unsafe trait; each call hands mimalloc the layout's size, and its alignment past a word"
)]
// SAFETY: every pointer returned comes from mimalloc with at least the layout's alignment (a
// word from the plain calls, the layout's from the aligned ones), and is freed or reallocated
// only by mimalloc.
unsafe impl GlobalAlloc for Mimalloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: a foreign call with no precondition beyond its arguments.
        unsafe {
            if layout.align() <= WORD {
                mi_malloc(layout.size()).cast()
            } else {
                mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        unsafe {
            if layout.align() <= WORD {
                mi_zalloc(layout.size()).cast()
            } else {
                mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from mimalloc (the trait's contract).
        unsafe { mi_free(ptr.cast()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from mimalloc with `layout` (the trait's contract); the new block
        // keeps the alignment asked for.
        unsafe {
            if layout.align() <= WORD {
                mi_realloc(ptr.cast(), new_size).cast()
            } else {
                mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
            }
        }
    }
}

fn main() -> std::process::ExitCode {
    harness::cli::main()
}
