//! Short byte copies without `memcpy` calls (table keys, headers), for the per-packet
//! paths.

/// `dst.copy_from_slice(src)` for short runs without a `memcpy` call (table keys are
/// mostly 1 to 16 bytes, headers 14 or 20): two moves of the largest power of two
/// that fits, the second ending at the end (they overlap when the length is not that
/// power), so any length from 2 to 16 is two loads and two stores after one or two
/// branches.
#[inline(always)]
pub(crate) fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    if n >= 8 {
        if n > 16 {
            dst.copy_from_slice(src);
            return;
        }
        two_moves::<8>(dst, src);
    } else if n >= 4 {
        two_moves::<4>(dst, src);
    } else if n >= 2 {
        two_moves::<2>(dst, src);
    } else if n == 1 {
        dst[0] = src[0];
    }
}

/// The first and the last `K` bytes of `src` into `dst` (same length, `K..=2K`), both
/// loaded before either is stored; as array values, so that the compiler emits plain
/// moves (with `copy_from_slice` it merged the calls into one `memcpy` call).
#[inline(always)]
pub(crate) fn two_moves<const K: usize>(dst: &mut [u8], src: &[u8]) {
    let (Some(a), Some(b)) = (src.first_chunk::<K>(), src.last_chunk::<K>()) else {
        return;
    };
    let (a, b) = (*a, *b);
    if let Some(d) = dst.first_chunk_mut::<K>() {
        *d = a;
    }
    if let Some(d) = dst.last_chunk_mut::<K>() {
        *d = b;
    }
}

/// Copies `src` into `dst` (same length) without a `memcpy` call for headers up to 64
/// bytes: 16 to 32 bytes (IPv4's 20, an Ethernet + IPv4 run's 34 goes to the next case)
/// as two overlapping 16-byte moves, 33 to 64 as four, no loop.
#[inline(always)]
pub(crate) fn copy_small(dst: &mut [u8], src: &[u8]) {
    let n = dst.len();
    if n != src.len() {
        dst.copy_from_slice(src); // panics with the lengths: a bug, not input
        return;
    }
    if (16..=32).contains(&n) {
        two_moves::<16>(dst, src);
    } else if (33..=64).contains(&n) {
        let h = n / 2;
        let (d1, d2) = dst.split_at_mut(h);
        let (s1, s2) = src.split_at(h);
        two_moves::<16>(d1, s1);
        two_moves::<16>(d2, s2);
    } else if n < 16 {
        copy_short(dst, src);
    } else {
        dst.copy_from_slice(src);
    }
}

#[cfg(test)]
mod tests {
    /// `copy_small` and `copy_short` copy exactly the bytes `copy_from_slice` copies, for
    /// every length through 80, at several offsets in their buffers.
    #[test]
    fn short_copies_equal_copy_from_slice() {
        let src: Vec<u8> = (0..200u32).map(|i| (i * 37 + 11) as u8).collect();
        for n in 0..=80usize {
            for off in [0usize, 1, 7, 13] {
                let mut a = vec![0xeeu8; 120];
                let mut b = a.clone();
                let mut c = a.clone();
                a[off..off + n].copy_from_slice(&src[off + 3..off + 3 + n]);
                super::copy_small(&mut b[off..off + n], &src[off + 3..off + 3 + n]);
                assert_eq!(a, b, "copy_small n={n} off={off}");
                if n <= 16 {
                    super::copy_short(&mut c[off..off + n], &src[off + 3..off + 3 + n]);
                    assert_eq!(a, c, "copy_short n={n} off={off}");
                }
            }
        }
    }
}
