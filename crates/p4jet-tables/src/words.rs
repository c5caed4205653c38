//! Packed keys as 64-bit words, and the seeded masked hash used by the
//! tuple-space search and the lookup cache.
//!
//! Word `i` of a packed key holds bytes `8i..8i+8`, little-endian, zero
//! padded past the end of the key. Masks and stored (masked) keys use the same
//! layout, so `key & mask` is a word-wise AND.

const C0: u64 = 0xA076_1D64_78BD_642F;
const C1: u64 = 0xE703_7ED1_A0B4_28DB;

/// Folded 64x64->128 multiply (wyhash's `mum`).
#[inline(always)]
pub(crate) fn mum(a: u64, b: u64) -> u64 {
    let r = u128::from(a) * u128::from(b);
    (r as u64) ^ ((r >> 64) as u64)
}

/// A deterministic 64-bit seed derived from `i` (splitmix64).
pub(crate) fn seed_of(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Number of words of a `kb`-byte key (at least one).
pub(crate) fn nwords(kb: usize) -> usize {
    kb.div_ceil(8).max(1)
}

/// Word `i` of the packed key `b`.
#[inline(always)]
pub(crate) fn word_at(b: &[u8], i: usize) -> u64 {
    let s = i * 8;
    let le = |c: &[u8]| {
        let mut a = [0u8; 8];
        a.copy_from_slice(c);
        u64::from_le_bytes(a)
    };
    if let Some(c) = b.get(s..s + 8) {
        return le(c);
    }
    let r = b.len().saturating_sub(s);
    if r == 0 {
        0
    } else if b.len() >= 8 {
        // the last 8 bytes of the key, shifted: no byte loop, no memcpy call
        le(&b[b.len() - 8..]) >> (8 * (8 - r))
    } else {
        b[s..]
            .iter()
            .enumerate()
            .fold(0, |a, (j, x)| a | (u64::from(*x) << (8 * j)))
    }
}

/// `b` as `w` words.
pub(crate) fn to_words(b: &[u8], w: usize) -> Vec<u64> {
    (0..w).map(|i| word_at(b, i)).collect()
}

/// A key seen as words: a fixed array (hot paths, small keys) or the bytes.
pub(crate) trait Words {
    fn n(&self) -> usize;
    fn at(&self, i: usize) -> u64;
}

impl<const W: usize> Words for [u64; W] {
    #[inline(always)]
    fn n(&self) -> usize {
        W
    }
    #[inline(always)]
    fn at(&self, i: usize) -> u64 {
        self[i]
    }
}

/// Words read from the key bytes on demand (keys longer than the fixed sizes).
pub(crate) struct ByteWords<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) n: usize,
}

impl Words for ByteWords<'_> {
    #[inline(always)]
    fn n(&self) -> usize {
        self.n
    }
    #[inline(always)]
    fn at(&self, i: usize) -> u64 {
        word_at(self.bytes, i)
    }
}

impl Words for [u64] {
    #[inline(always)]
    fn n(&self) -> usize {
        self.len()
    }
    #[inline(always)]
    fn at(&self, i: usize) -> u64 {
        self[i]
    }
}

/// Load a key of exactly `W` words.
#[inline(always)]
pub(crate) fn fixed<const W: usize>(b: &[u8]) -> [u64; W] {
    let mut a = [0u64; W];
    for (i, x) in a.iter_mut().enumerate() {
        *x = word_at(b, i);
    }
    a
}

/// The low `r` bytes of the little-endian word `v` (all of it from 8 on).
#[inline(always)]
fn low_bytes(v: u64, r: usize) -> u64 {
    if r >= 8 {
        v
    } else {
        v & ((1u64 << (8 * r)) - 1)
    }
}

/// Bytes `s..s + r` (`r <= 8`) of `buf`, little-endian, zero padded: one
/// 8-byte load masked when `buf` extends 8 bytes past `s`, else a byte loop.
#[inline(always)]
pub(crate) fn word_in(buf: &[u8], s: usize, r: usize) -> u64 {
    if let Some(c) = buf.get(s..s + 8) {
        let mut a = [0u8; 8];
        a.copy_from_slice(c);
        low_bytes(u64::from_le_bytes(a), r)
    } else {
        buf[s..s + r]
            .iter()
            .enumerate()
            .fold(0, |a, (j, x)| a | (u64::from(*x) << (8 * j)))
    }
}

/// Load the `kb`-byte key at `buf[at..at + kb]` as exactly `W` words.
/// Same result as `fixed(&buf[at..at + kb])`, but a partial last word is
/// read as 8 bytes and masked when `buf` extends far enough past the key
/// (keys packed back to back), instead of byte by byte.
#[inline(always)]
pub(crate) fn fixed_in<const W: usize>(buf: &[u8], at: usize, kb: usize) -> [u64; W] {
    let mut a = [0u64; W];
    // the common case, `8 * W` bytes from `at` within `buf`: one range check, then
    // whole words, masked to the key's bytes
    if let Some(c) = at.checked_add(8 * W).and_then(|e| buf.get(at..e)) {
        for (i, (x, b)) in a.iter_mut().zip(c.chunks_exact(8)).enumerate() {
            let v = u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
            *x = low_bytes(v, kb.saturating_sub(8 * i));
        }
        return a;
    }
    for (i, x) in a.iter_mut().enumerate() {
        let r = kb.saturating_sub(8 * i);
        let s = at + 8 * i;
        *x = if r == 0 { 0 } else { word_in(buf, s, r.min(8)) };
    }
    a
}

/// Seeded hash of `k & m` (`m.len() == k.n()`): one folded multiply per two
/// words. Equal for two keys whose masked words are equal, so a stored masked
/// key hashes like every key it matches.
#[inline(always)]
pub(crate) fn mhash<K: Words + ?Sized>(k: &K, m: &[u64], seed: u64) -> u64 {
    let n = k.n();
    let m = &m[..n];
    let mut h = seed;
    let mut i = 0;
    while i + 1 < n {
        h = mum(h ^ (k.at(i) & m[i]) ^ C0, (k.at(i + 1) & m[i + 1]) ^ C1);
        i += 2;
    }
    if i < n {
        h = mum(h ^ (k.at(i) & m[i]) ^ C0, C1);
    }
    h
}

/// Seeded hash of a whole key.
#[inline(always)]
pub(crate) fn hash_key<K: Words + ?Sized>(k: &K, seed: u64) -> u64 {
    let n = k.n();
    let mut h = seed ^ (n as u64);
    let mut i = 0;
    while i + 1 < n {
        h = mum(h ^ k.at(i) ^ C0, k.at(i + 1) ^ C1);
        i += 2;
    }
    if i < n {
        h = mum(h ^ k.at(i) ^ C0, C1);
    }
    h
}

/// `stored == k & m`, word-wise.
#[inline(always)]
pub(crate) fn meq<K: Words + ?Sized>(stored: &[u64], k: &K, m: &[u64]) -> bool {
    let n = k.n();
    let (s, m) = (&stored[..n], &m[..n]);
    let mut d = 0u64;
    for i in 0..n {
        d |= s[i] ^ (k.at(i) & m[i]);
    }
    d == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_little_endian_and_zero_padded() {
        for len in 0..30usize {
            let b: Vec<u8> = (0..len).map(|i| (i * 37 + 5) as u8).collect();
            for i in 0..nwords(len) + 1 {
                let mut a = [0u8; 8];
                for (j, x) in a.iter_mut().enumerate() {
                    *x = b.get(8 * i + j).copied().unwrap_or(0);
                }
                assert_eq!(word_at(&b, i), u64::from_le_bytes(a), "len {len} word {i}");
            }
        }
    }

    #[test]
    fn masked_hash_is_a_function_of_the_masked_key() {
        let k: Vec<u8> = (1u8..=21).collect();
        let m: Vec<u8> = (0u8..21)
            .map(|i| if i % 3 == 0 { 0 } else { 0xf0 })
            .collect();
        let km: Vec<u8> = k.iter().zip(&m).map(|(a, b)| a & b).collect();
        let w = nwords(k.len());
        let (kw, mw, kmw) = (to_words(&k, w), to_words(&m, w), to_words(&km, w));
        assert_eq!(mhash(&kw[..], &mw, 7), mhash(&kmw[..], &mw, 7));
        let bw = ByteWords { bytes: &k, n: w };
        assert_eq!(mhash(&bw, &mw, 7), mhash(&kw[..], &mw, 7));
        assert!(meq(&kmw, &kw[..], &mw));
        assert_ne!(mhash(&kw[..], &mw, 7), mhash(&kw[..], &mw, 8));
        let f: [u64; 3] = fixed(&k);
        assert_eq!(&f[..], &kw[..]);
    }

    #[test]
    fn fixed_in_equals_fixed() {
        let buf: Vec<u8> = (0..64u32).map(|i| (i * 91 + 7) as u8).collect();
        for kb in 0..=32usize {
            for at in 0..=buf.len() - kb {
                let key = &buf[at..at + kb];
                assert_eq!(fixed_in::<1>(&buf, at, kb), fixed::<1>(key), "{kb} {at}");
                assert_eq!(fixed_in::<2>(&buf, at, kb), fixed::<2>(key), "{kb} {at}");
                assert_eq!(fixed_in::<3>(&buf, at, kb), fixed::<3>(key), "{kb} {at}");
                assert_eq!(fixed_in::<4>(&buf, at, kb), fixed::<4>(key), "{kb} {at}");
            }
        }
    }
}
