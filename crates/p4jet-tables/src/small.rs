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
//! rebuilt from the flat records on every write to a small table: cleared,
//! then per entry and lane the values it admits are marked (one interval for
//! a prefix mask or range bounds; a pass over the lane's values otherwise).

use crate::tss::SMALL;

/// Most lanes a bit-vector table has; a table needing more is scanned.
const MAX_LANES: usize = 4;
/// Most two-byte lanes (64 KiB each).
const MAX_WIDE: usize = 2;

/// Values of a two-byte lane.
const WIDE: usize = 1 << 16;

#[derive(Clone, Default)]
pub(crate) struct SmallBits {
    /// two-byte lanes: the key offset of the lane's bytes, and per value of
    /// them the entries (bit `r` = `r`-th in rank order) that match there
    wide: Vec<(usize, Box<[u8; WIDE]>)>,
    /// one-byte lanes, likewise
    narrow: Vec<(usize, Box<[u8; 256]>)>,
    /// entry index of the `r`-th entry in rank order
    ent: [u32; SMALL],
    /// one bit per entry
    all: u8,
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

/// Set `bit` in `t[v]` for every `v` in `lo..=hi` (`hi < t.len()`) with
/// `v & m == val`.
fn fill(t: &mut [u8], lo: u64, hi: u64, m: u64, val: u64, bit: u8) {
    if val & !m != 0 {
        return;
    }
    let free = !m & (t.len() as u64 - 1);
    // a prefix mask (no mask, a single value, ...) admits one interval
    let prefix = free & (free + 1) == 0;
    let (lo, hi) = if prefix {
        (lo.max(val), hi.min(val | free))
    } else {
        (lo, hi)
    };
    if lo > hi {
        return;
    }
    let t = &mut t[lo as usize..=hi as usize];
    if prefix {
        t.iter_mut().for_each(|b| *b |= bit);
    } else {
        let (m, val) = (m as u32, val as u32);
        for (v, b) in (lo as u32..).zip(t.iter_mut()) {
            *b |= bit & u8::from(v & m == val).wrapping_neg();
        }
    }
}

impl SmallBits {
    /// Bytes held.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.wide.capacity() * (8 + WIDE) + self.narrow.capacity() * (8 + 256)
    }

    /// (two-byte lanes, one-byte lanes).
    #[inline(always)]
    pub(crate) fn shape(&self) -> (usize, usize) {
        (self.wide.len(), self.narrow.len())
    }

    /// Build from flat scan records (`rec` as `Tss::small_rec`: stride
    /// `2w + 1 + 2r`: value words, mask words, entry index, per range field
    /// its bounds), range fields `(offset, bytes)`, `kb` key bytes. `false`
    /// (and `self` unusable) when the table needs more than `MAX_LANES`
    /// lanes or `MAX_WIDE` two-byte ones, or has a range field wider than 2
    /// bytes. Reuses `self`'s tables.
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
        if kb == 0 || n > SMALL || range_fields.iter().any(|&(_, nb)| nb > 2) {
            return false;
        }
        let recs = || rec.chunks_exact(stride);
        // lanes: (key offset, bytes, range field)
        let mut lanes: Vec<(usize, usize, Option<usize>)> = Vec::new();
        // a range field is a lane when some entry has a mask or bounds there
        let mut in_range = vec![false; kb];
        for (j, &(off, nb)) in range_fields.iter().enumerate() {
            in_range[off..off + nb].fill(true);
            let top = (1u64 << (8 * nb)) - 1;
            if recs().any(|r| {
                num_of(&r[w..2 * w], off, nb) != 0
                    || r[2 * w + 1 + 2 * j] != 0
                    || r[2 * w + 2 + 2 * j] < top
            }) {
                lanes.push((off, nb, Some(j)));
            }
        }
        // any other byte some entry masks
        for (i, &r) in in_range.iter().enumerate() {
            if !r && recs().any(|r| byte_of(&r[w..2 * w], i) != 0) {
                lanes.push((i, 1, None));
            }
        }
        let nwide = lanes.iter().filter(|l| l.1 == 2).count();
        if lanes.len() > MAX_LANES || nwide > MAX_WIDE {
            return false;
        }
        self.wide.truncate(nwide);
        for t in &mut self.wide {
            t.1.fill(0);
        }
        while self.wide.len() < nwide {
            let t: Box<[u8; WIDE]> = match vec![0u8; WIDE].into_boxed_slice().try_into() {
                Ok(t) => t,
                Err(_) => return false,
            };
            self.wide.push((0, t));
        }
        let nnarrow = lanes.len() - nwide;
        self.narrow.truncate(nnarrow);
        for t in &mut self.narrow {
            t.1.fill(0);
        }
        self.narrow.resize(nnarrow, (0, Box::new([0; 256])));
        self.ent = [0; SMALL];
        self.all = 0;
        for (r, rc) in recs().enumerate() {
            self.ent[r] = rc[2 * w] as u32;
            self.all |= 1 << r;
        }
        let (mut iw, mut inn) = (0, 0);
        for &(off, nb, rf) in &lanes {
            let t: &mut [u8] = if nb == 2 {
                iw += 1;
                self.wide[iw - 1].0 = off;
                &mut self.wide[iw - 1].1[..]
            } else {
                inn += 1;
                self.narrow[inn - 1].0 = off;
                &mut self.narrow[inn - 1].1[..]
            };
            let top = t.len() as u64 - 1;
            for (r, rc) in recs().enumerate() {
                let val = num_of(&rc[..w], off, nb);
                let m = num_of(&rc[w..2 * w], off, nb);
                let (lo, hi) = match rf {
                    Some(j) => (rc[2 * w + 1 + 2 * j], rc[2 * w + 2 + 2 * j].min(top)),
                    None => (0, top),
                };
                fill(t, lo, hi, m, val, 1 << r);
            }
        }
        true
    }

    /// The best entry matching the packed key `key`.
    #[inline(always)]
    pub(crate) fn lookup(&self, key: &[u8]) -> Option<u32> {
        let mut m = self.all;
        for (o, t) in &self.wide {
            m &= t[usize::from(u16::from_be_bytes([key[*o], key[*o + 1]]))];
        }
        for (o, t) in &self.narrow {
            m &= t[usize::from(key[*o])];
        }
        (m != 0).then(|| self.ent[m.trailing_zeros() as usize % SMALL])
    }

    /// [`SmallBits::each`] for this table's shape (one dispatch per batch);
    /// false, with nothing emitted, for a shape it has no copy of.
    #[inline]
    pub(crate) fn each_any(
        &self,
        keys: &[u8],
        kb: usize,
        n: usize,
        emit: &mut impl FnMut(usize, Option<u32>),
    ) -> bool {
        macro_rules! by_shape {
            ($(($t:literal, $b:literal)),*) => {
                match self.shape() {
                    $(($t, $b) => self.each::<$t, $b>(keys, kb, n, emit),)*
                    _ => return false,
                }
            };
        }
        // every shape `build` accepts: at most MAX_WIDE two-byte lanes, MAX_LANES in all
        by_shape!(
            (0, 0),
            (0, 1),
            (0, 2),
            (0, 3),
            (0, 4),
            (1, 0),
            (1, 1),
            (1, 2),
            (1, 3),
            (2, 0),
            (2, 1),
            (2, 2)
        );
        true
    }

    /// `emit(i, lookup(key i))` for `n` keys of `kb > 0` bytes packed back
    /// to back in `keys`, with `T` two-byte and `B` one-byte lanes.
    #[inline(never)]
    pub(crate) fn each<const T: usize, const B: usize>(
        &self,
        keys: &[u8],
        kb: usize,
        n: usize,
        emit: &mut impl FnMut(usize, Option<u32>),
    ) {
        let (Ok(wide), Ok(narrow)) = (
            <&[_; T]>::try_from(&self.wide[..]),
            <&[_; B]>::try_from(&self.narrow[..]),
        ) else {
            return;
        };
        let wide: [(usize, &[u8; WIDE]); T] = std::array::from_fn(|j| (wide[j].0, &*wide[j].1));
        let narrow: [(usize, &[u8; 256]); B] =
            std::array::from_fn(|j| (narrow[j].0, &*narrow[j].1));
        // the table bytes only hold bits of entries
        let init = if T + B == 0 { self.all } else { u8::MAX };
        let keys = &keys[..n * kb];
        for (i, key) in keys.chunks_exact(kb).enumerate() {
            let mut m = init;
            for (o, t) in &wide {
                m &= t[usize::from(u16::from_be_bytes([key[*o], key[*o + 1]]))];
            }
            for (o, t) in &narrow {
                m &= t[usize::from(key[*o])];
            }
            emit(
                i,
                (m != 0).then(|| self.ent[m.trailing_zeros() as usize % SMALL]),
            );
        }
    }
}
