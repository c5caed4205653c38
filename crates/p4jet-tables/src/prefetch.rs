//! Cache prefetch hint, the only `unsafe` in this crate.
#![allow(unsafe_code)]

/// Hint the CPU to pull the cache line holding `*p` into L1.
///
/// A pure performance hint: it never changes program behaviour, and on
/// targets other than x86_64 it compiles to nothing.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: `prefetch` is a hint: it never faults (not even on an invalid or
        // unmapped address), does not read memory in the Rust abstract machine,
        // and SSE (which provides it) is part of the x86_64 baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = p;
    }
}

/// Prefetch the element `i` of `s`, if it exists.
#[inline(always)]
pub(crate) fn prefetch_index<T>(s: &[T], i: usize) {
    if let Some(x) = s.get(i) {
        prefetch(x as *const T);
    }
}
