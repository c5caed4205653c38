//! Cache prefetch hint and the SSE2 signature compare of the hash buckets: the only
//! `unsafe` in this crate.
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

/// Prefetch every cache line of element `i` of `s`, if it exists: its first and last
/// byte's (an element of up to 64 bytes spans at most two lines).
#[inline(always)]
pub(crate) fn prefetch_whole<T>(s: &[T], i: usize) {
    if let Some(x) = s.get(i) {
        let p = (x as *const T).cast::<u8>();
        prefetch(p);
        if std::mem::size_of::<T>() > 1 {
            prefetch(p.wrapping_add(std::mem::size_of::<T>() - 1));
        }
    }
}

/// Bit `i` set (`i` in 0..8) when 16-bit lane `i` of `words` (lane `i` in bits
/// `16 * (i % 4)` of word `i / 4`) equals `sig`: one vector compare, the lane masks
/// narrowed to bytes, one byte mask.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn eq_lanes16(words: [u64; 2], sig: u16) -> u32 {
    use core::arch::x86_64::{
        _mm_cmpeq_epi16, _mm_movemask_epi8, _mm_packs_epi16, _mm_set_epi64x, _mm_set1_epi16,
        _mm_setzero_si128,
    };
    // SAFETY: SSE2 is part of the x86_64 baseline, so these instructions exist on
    // every CPU this code runs on; they work on registers only (no memory access).
    unsafe {
        let lanes = _mm_set_epi64x(words[1] as i64, words[0] as i64);
        let eq = _mm_cmpeq_epi16(lanes, _mm_set1_epi16(sig as i16));
        (_mm_movemask_epi8(_mm_packs_epi16(eq, _mm_setzero_si128())) as u32) & 0xff
    }
}
