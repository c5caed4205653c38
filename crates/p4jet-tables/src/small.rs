//! Bit-vector lookup for small ternary/range tables (at most `SMALL` = 8
//! live entries, see `tss.rs`).
//!
//! The key is cut into *lanes*: every range field of at most 2 bytes is one
//! lane (its bytes as one big-endian number), every other key byte that some
//! entry masks is a one-byte lane; bytes no entry looks at have none. Per
//! lane and value of its bytes, one byte holds the set of entries that match
//! the key on that lane: bit `r` for the `r`-th entry in rank order (value
//! under mask, and for an entry with a range check the bounds). A key matches
//! entry `r` exactly when bit `r` is set in the table byte of each of its
//! lanes, so a lookup is one table load per lane, an AND, and the lowest set
//! bit: the first match in bmv2's order.
//!
//! A one-byte lane costs 256 bytes, a two-byte lane 64 KiB. The tables are
//! rebuilt from the flat records on every write to a small table (a 64 KiB
//! lane: cleared, then one pass over the values each entry covers).

use crate::tss::SMALL;

/// Most lanes a bit-vector table has; a key needing more is scanned.
pub(crate) const MAX_LANES: usize = 4;

/// One lane: bytes `off..off + len` of the key (`len` 1 or 2), table bytes
/// from `base` (`256^len` of them).
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct Lane {
    pub(crate) off: usize,
    pub(crate) two: bool,
    pub(crate) base: usize,
}

#[derive(Clone, Default)]
pub(crate) struct SmallBits {
    /// at most `MAX_LANES`
    pub(crate) lanes: Vec<Lane>,
    /// per lane, per value of its bytes: the entries (bit `r` = rank `r`)
    /// that match on the lane
    pub(crate) table: Vec<u8>,
    /// entry index of the `r`-th entry in rank order
    pub(crate) ent: [u32; SMALL],
    /// one bit per entry
    pub(crate) all: u8,
}

/// Byte `i` of a key held as little-endian words.
#[inline(always)]
fn byte_of(words: &[u64], i: usize) -> u64 {
    (words[i / 8] >> (8 * (i % 8))) & 0xff
}

/// Bytes `off..off + n` of a key held as words, big-endian, as a number.
fn num_of(words: &[u64], off: usize, n: usize) -> u64 {
    (off..off + n).fold(0, |a, i| (a << 8) | byte_of(words, i))
}

impl SmallBits {
    /// Build from flat scan records (`rec` as `Tss::small_rec`: stride
    /// `2w + 1 + 2r`: value words, mask words, entry index, per range field
    /// its bounds), `kb` key bytes, range fields `(offset, bytes)`. `false`
    /// (and `self` unusable) when the table needs more than `MAX_LANES` lanes
    /// or has a range field wider than 2 bytes. Reuses `self`'s allocation.
    pub(crate) fn build(
        &mut self,
        kb: usize,
        w: usize,
        range_fields: &[(usize, usize)],
        rec: &[u64],
    ) -> bool {
        let nr = range_fields.len();
        let stride = 2 * w + 1 + 2 * nr;
        let n = rec.len() / stride;
        if n > SMALL || range_fields.iter().any(|&(_, nb)| nb > 2) {
            return false;
        }
        let recs = || rec.chunks_exact(stride);
        self.lanes.clear();
        // range fields: a lane when some entry has a mask or bounds there
        let mut in_range = vec![false; kb];
        for (j, &(off, nb)) in range_fields.iter().enumerate() {
            in_range[off..off + nb].fill(true);
            let full = (1u64 << (8 * nb)) - 1;
            let used = recs().any(|r| {
                num_of(&r[w..2 * w], off, nb) != 0
                    || r[2 * w + 1 + 2 * j] != 0
                    || r[2 * w + 2 + 2 * j] < full
            });
            if used {
                self.lanes.push(Lane {
                    off,
                    two: nb == 2,
                    base: 0,
                });
            }
        }
        for (i, &r) in in_range.iter().enumerate() {
            if !r && recs().any(|r| byte_of(&r[w..2 * w], i) != 0) {
                self.lanes.push(Lane {
                    off: i,
                    two: false,
                    base: 0,
                });
            }
        }
        if self.lanes.len() > MAX_LANES {
            return false;
        }
        self.lanes.sort_by_key(|l| l.off);
        let mut size = 0;
        for l in &mut self.lanes {
            l.base = size;
            size += if l.two { 1 << 16 } else { 1 << 8 };
        }
        self.table.clear();
        self.table.resize(size, 0);
        self.ent = [0; SMALL];
        self.all = 0;
        for (r, rc) in recs().enumerate() {
            let bit = 1u8 << r;
            self.all |= bit;
            self.ent[r] = rc[2 * w] as u32;
            for l in &self.lanes {
                let nb = if l.two { 2 } else { 1 };
                let top = (1u64 << (8 * nb)) - 1;
                let val = num_of(&rc[..w], l.off, nb);
                let m = num_of(&rc[w..2 * w], l.off, nb);
                let (lo, hi) = match range_fields.iter().position(|&(off, _)| off == l.off) {
                    Some(j) => (rc[2 * w + 1 + 2 * j], rc[2 * w + 2 + 2 * j].min(top)),
                    None => (0, top),
                };
                if lo > hi {
                    continue;
                }
                let t = &mut self.table[l.base + lo as usize..=l.base + hi as usize];
                if m == 0 {
                    t.iter_mut().for_each(|b| *b |= bit);
                } else if m == top {
                    if (lo..=hi).contains(&val) {
                        t[(val - lo) as usize] |= bit;
                    }
                } else {
                    let (m, val) = (m as u32, val as u32);
                    for (v, b) in (lo as u32..).zip(t.iter_mut()) {
                        *b |= bit & u8::from(v & m == val).wrapping_neg();
                    }
                }
            }
        }
        true
    }

    /// The best entry matching the packed key `key`.
    #[inline(always)]
    pub(crate) fn lookup(&self, key: &[u8]) -> Option<u32> {
        let mut m = self.all;
        for l in &self.lanes {
            let v = if l.two {
                (usize::from(key[l.off]) << 8) | usize::from(key[l.off + 1])
            } else {
                usize::from(key[l.off])
            };
            m &= self.table[l.base + v];
        }
        (m != 0).then(|| self.ent[m.trailing_zeros() as usize % SMALL])
    }

    /// `emit(i, lookup(key i))` for `n` keys of `kb` bytes packed back to
    /// back in `keys`, `L == lanes.len()`.
    #[inline(never)]
    pub(crate) fn each<const L: usize>(
        &self,
        keys: &[u8],
        kb: usize,
        n: usize,
        emit: &mut impl FnMut(usize, Option<u32>),
    ) {
        let mut lanes = [Lane::default(); L];
        for (d, s) in lanes.iter_mut().zip(&self.lanes) {
            *d = *s;
        }
        let table = &self.table[..];
        for i in 0..n {
            let at = i * kb;
            let mut m = self.all;
            for l in &lanes {
                let p = at + l.off;
                let v = if l.two {
                    (usize::from(keys[p]) << 8) | usize::from(keys[p + 1])
                } else {
                    usize::from(keys[p])
                };
                m &= table[l.base + v];
            }
            emit(
                i,
                (m != 0).then(|| self.ent[m.trailing_zeros() as usize % SMALL]),
            );
        }
    }
}
