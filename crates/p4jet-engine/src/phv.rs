//! The packet header vector: every header instance of the program at a fixed offset in one
//! byte array (in wire format, so extract and emit are copies), a validity byte per header,
//! the next-index of every header stack and the current length of every varbit field.

use num_bigint::BigUint;
use p4jet_ir::{FieldLoc, Program};

/// Bytes of slack after the data area so that a field read/write can always use a
/// 16-byte window.
pub const PHV_PAD: usize = 32;

/// A field read and written as a 64-bit value: one 8-byte load from its first byte,
/// shifted and masked, and a store of its window's bytes. Fields that own a window of
/// at most 8 bytes get this form (all of v1model's standard metadata, which sit in
/// byte-aligned metadata slots, and most header fields); any other layout goes through
/// the general access.
#[derive(Debug, Clone, Copy)]
pub struct Window64 {
    /// The field.
    pub loc: FieldLoc,
    /// Window bytes for the 64-bit access (1..=8), or 0: general access.
    pub(crate) n: u8,
    /// The field's value bits.
    pub(crate) mask: u64,
    /// The window's value sits this far up in the 8 bytes read from the field's first
    /// byte ([`window64`]).
    shift: u32,
}

impl Window64 {
    /// The slot of the field at `loc`.
    pub fn new(loc: FieldLoc) -> Window64 {
        let word = loc.own && !loc.signed && loc.width <= 64 && (1..=8).contains(&loc.nbytes);
        let n = if word { loc.nbytes } else { 0 };
        Window64 {
            loc,
            n,
            shift: window64(loc).filter(|_| word).map_or(0, |(s, _)| s),
            mask: if loc.width >= 64 {
                u64::MAX
            } else {
                (1u64 << loc.width) - 1
            },
        }
    }
}

/// One packet's headers and metadata.
#[derive(Debug, Clone)]
pub struct Phv {
    /// Header bytes (wire format), `phv_bytes + PHV_PAD` long.
    pub data: Box<[u8]>,
    /// Validity per header (metadata headers are always valid).
    pub valid: Box<[bool]>,
    /// Next index per header stack.
    pub stack_next: Box<[u32]>,
    /// Current length in bits per varbit slot.
    pub varbit_bits: Box<[u32]>,
}

#[inline]
fn mask(width: u32) -> u128 {
    if width >= 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    }
}

/// Sign-extends the low `width` bits of `v` to 128 bits.
#[inline]
pub fn sign_extend(v: u128, width: u32) -> u128 {
    if width == 0 || width >= 128 {
        return v;
    }
    let s = 128 - width;
    (((v << s) as i128) >> s) as u128
}

/// Where [`Phv::read_raw`]'s bits of a field sit in the 8 bytes from its first byte:
/// (right shift, mask), when they fit (the whole window of a field that owns it, else
/// the field's own bits). The PHV's `PHV_PAD` bytes of padding keep such an 8-byte load
/// in bounds for any field.
pub fn window64(loc: FieldLoc) -> Option<(u32, u64)> {
    let (end, bits) = if loc.own {
        (8 * u32::from(loc.nbytes), 8 * u32::from(loc.nbytes))
    } else {
        (u32::from(loc.bit) + loc.width, loc.width)
    };
    if loc.nbytes == 0 || loc.nbytes > 8 || bits == 0 || end > 64 {
        return None;
    }
    Some((64 - end, u64::MAX >> (64 - bits)))
}

impl Phv {
    /// The 8 bytes from PHV byte `b`, big-endian (None past the end).
    #[inline(always)]
    pub fn load8(&self, b: usize) -> Option<u64> {
        let w = self.data.get(b..b + 8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(w);
        Some(u64::from_be_bytes(a))
    }

    /// A PHV of `bytes` zero data bytes (plus the padding) and no headers, for tests of
    /// field access.
    #[cfg(test)]
    pub(crate) fn zeroed(bytes: usize) -> Phv {
        Phv {
            data: vec![0u8; bytes + PHV_PAD].into_boxed_slice(),
            valid: Box::new([]),
            stack_next: Box::new([]),
            varbit_bits: Box::new([]),
        }
    }

    /// A PHV for `p`, all zero, metadata valid.
    pub fn new(p: &Program) -> Phv {
        let mut valid = vec![false; p.headers.len()].into_boxed_slice();
        for (i, h) in p.headers.iter().enumerate() {
            valid[i] = h.metadata;
        }
        Phv {
            data: vec![0u8; p.phv_bytes as usize + PHV_PAD].into_boxed_slice(),
            valid,
            stack_next: vec![0; p.stacks.len()].into_boxed_slice(),
            varbit_bits: vec![0; p.varbit_slots as usize].into_boxed_slice(),
        }
    }

    /// Resets for a new packet: everything zero, only metadata valid.
    pub fn reset(&mut self, p: &Program) {
        // Empty slices are skipped: libc's AVX-512 memset turns a zero-length fill of a
        // dangling pointer into a masked store that costs a microcode assist per call.
        self.data.fill(0);
        if self.valid.len() == p.valid_init.len() {
            self.valid.copy_from_slice(&p.valid_init);
        } else {
            for (v, h) in self.valid.iter_mut().zip(&p.headers) {
                *v = h.metadata;
            }
        }
        if !self.stack_next.is_empty() {
            self.stack_next.fill(0);
        }
        if !self.varbit_bits.is_empty() {
            self.varbit_bits.fill(0);
        }
    }

    /// Reads a field of at most 128 bits (bit pattern, sign-extended for signed fields).
    #[inline]
    pub fn read(&self, loc: FieldLoc) -> u128 {
        let v = self.read_raw(loc);
        if loc.signed {
            sign_extend(v, loc.width)
        } else {
            v
        }
    }

    /// Reads a field's bits without sign extension.
    #[inline(always)]
    pub fn read_raw(&self, loc: FieldLoc) -> u128 {
        let n = loc.nbytes as usize;
        if n > 16 {
            return read_bits(&self.data, loc.byte as usize, loc.bit as u32, loc.width);
        }
        let w = load_be(&self.data, loc.byte as usize, n);
        if loc.own {
            w
        } else {
            (w >> (n as u32 * 8 - loc.bit as u32 - loc.width)) & mask(loc.width)
        }
    }

    /// Reads a field through its 64-bit window (at most 64 bits are kept): one 8-byte
    /// load from the field's first byte, whatever its window (one bounds check, no
    /// branch on the window's size).
    #[inline(always)]
    pub fn read64(&self, s: Window64) -> u64 {
        match self.load8(s.loc.byte as usize) {
            Some(w) if s.n != 0 => (w >> s.shift) & s.mask,
            _ => self.read_raw(s.loc) as u64,
        }
    }

    /// Writes the low bits of `v` (as many as the field has) through the field's
    /// 64-bit window.
    #[inline(always)]
    pub fn write64(&mut self, s: Window64, v: u64) {
        let (d, b, v) = (&mut self.data, s.loc.byte as usize, v & s.mask);
        match s.n {
            1 => d[b] = v as u8,
            2 => d[b..b + 2].copy_from_slice(&(v as u16).to_be_bytes()),
            4 => d[b..b + 4].copy_from_slice(&(v as u32).to_be_bytes()),
            0 => self.write(s.loc, u128::from(v)),
            n => store_be(d, b, n as usize, u128::from(v)),
        }
    }

    /// Writes the low `loc.width` bits of `v`.
    #[inline(always)]
    pub fn write(&mut self, loc: FieldLoc, v: u128) {
        let n = loc.nbytes as usize;
        if n > 16 {
            return write_bits(
                &mut self.data,
                loc.byte as usize,
                loc.bit as u32,
                loc.width,
                v,
            );
        }
        let b = loc.byte as usize;
        if loc.own {
            store_be(&mut self.data, b, n, v & mask(loc.width));
        } else {
            let shift = n as u32 * 8 - loc.bit as u32 - loc.width;
            let m = mask(loc.width) << shift;
            let w = load_be(&self.data, b, n);
            store_be(&mut self.data, b, n, (w & !m) | ((v << shift) & m));
        }
    }

    /// Reads any field as an unsigned big integer.
    pub fn read_big(&self, loc: FieldLoc) -> BigUint {
        read_big(&self.data, loc.byte as usize, loc.bit as u32, loc.width)
    }

    /// Writes the low `loc.width` bits of a big integer.
    pub fn write_big(&mut self, loc: FieldLoc, v: &BigUint) {
        write_big(
            &mut self.data,
            loc.byte as usize,
            loc.bit as u32,
            loc.width,
            v,
        )
    }
}

/// Reads an action parameter of `width` bits stored big-endian in `ceil(width/8)` bytes at
/// `data[off..]` (action-data blobs are packed this way).
#[inline(always)]
pub fn read_param(data: &[u8], off: usize, width: u32) -> u128 {
    let n = width.div_ceil(8) as usize;
    if n == 0 || n > 16 || data.len() < off + n {
        return read_param_slow(data, off, width);
    }
    load_be(data, off, n) & mask(width)
}

/// [`read_param`] for empty, wide or short blobs.
#[cold]
#[inline(never)]
fn read_param_slow(data: &[u8], off: usize, width: u32) -> u128 {
    let n = width.div_ceil(8);
    read_bits(data, off, (n * 8).saturating_sub(width), width)
}

/// Loads exactly `n` (1..=16) bytes big-endian: loads no wider than the field, so a
/// recent narrower store to a neighbouring field never blocks store-to-load forwarding.
#[inline(always)]
pub fn load_be(d: &[u8], b: usize, n: usize) -> u128 {
    #[inline(always)]
    fn u8_(d: &[u8], b: usize) -> u128 {
        d[b] as u128
    }
    #[inline(always)]
    fn u16_(d: &[u8], b: usize) -> u128 {
        u16::from_be_bytes([d[b], d[b + 1]]) as u128
    }
    #[inline(always)]
    fn u32_(d: &[u8], b: usize) -> u128 {
        u32::from_be_bytes([d[b], d[b + 1], d[b + 2], d[b + 3]]) as u128
    }
    #[inline(always)]
    fn u64_(d: &[u8], b: usize) -> u128 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&d[b..b + 8]);
        u64::from_be_bytes(a) as u128
    }
    match n {
        1 => u8_(d, b),
        2 => u16_(d, b),
        3 => (u16_(d, b) << 8) | u8_(d, b + 2),
        4 => u32_(d, b),
        5 => (u32_(d, b) << 8) | u8_(d, b + 4),
        6 => (u32_(d, b) << 16) | u16_(d, b + 4),
        7 => (u32_(d, b) << 24) | (u16_(d, b + 4) << 8) | u8_(d, b + 6),
        8 => u64_(d, b),
        16 => {
            let mut a = [0u8; 16];
            a.copy_from_slice(&d[b..b + 16]);
            u128::from_be_bytes(a)
        }
        _ => {
            let hi = u64_(d, b);
            let rest = n - 8;
            let mut lo = 0u128;
            for i in 0..rest {
                lo = (lo << 8) | d[b + 8 + i] as u128;
            }
            (hi << (8 * rest)) | lo
        }
    }
}

/// Stores the low `n` (1..=16) bytes of `v` big-endian.
#[inline(always)]
pub fn store_be(d: &mut [u8], b: usize, n: usize, v: u128) {
    match n {
        1 => d[b] = v as u8,
        2 => d[b..b + 2].copy_from_slice(&(v as u16).to_be_bytes()),
        3 => {
            d[b..b + 2].copy_from_slice(&((v >> 8) as u16).to_be_bytes());
            d[b + 2] = v as u8;
        }
        4 => d[b..b + 4].copy_from_slice(&(v as u32).to_be_bytes()),
        5 => {
            d[b..b + 4].copy_from_slice(&((v >> 8) as u32).to_be_bytes());
            d[b + 4] = v as u8;
        }
        6 => {
            d[b..b + 4].copy_from_slice(&((v >> 16) as u32).to_be_bytes());
            d[b + 4..b + 6].copy_from_slice(&(v as u16).to_be_bytes());
        }
        7 => {
            d[b..b + 4].copy_from_slice(&((v >> 24) as u32).to_be_bytes());
            d[b + 4..b + 6].copy_from_slice(&((v >> 8) as u16).to_be_bytes());
            d[b + 6] = v as u8;
        }
        8 => d[b..b + 8].copy_from_slice(&(v as u64).to_be_bytes()),
        16 => d[b..b + 16].copy_from_slice(&v.to_be_bytes()),
        _ => {
            let rest = n - 8;
            d[b..b + 8].copy_from_slice(&((v >> (8 * rest)) as u64).to_be_bytes());
            for i in 0..rest {
                d[b + 8 + i] = (v >> (8 * (rest - 1 - i))) as u8;
            }
        }
    }
}

/// Reads `width` bits starting `bit` bits into `data[byte..]`. `data` must have 16 bytes of
/// slack after the field for fields up to 128 bits (the PHV and action blobs do).
#[inline]
pub fn read_bits(data: &[u8], byte: usize, bit: u32, width: u32) -> u128 {
    let total = bit + width;
    if total <= 64 && data.len() >= byte + 8 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&data[byte..byte + 8]);
        let w = u64::from_be_bytes(a) << bit;
        (w >> (64 - width)) as u128
    } else if total <= 128 && data.len() >= byte + 16 {
        let mut a = [0u8; 16];
        a.copy_from_slice(&data[byte..byte + 16]);
        let w = u128::from_be_bytes(a) << bit;
        w >> (128 - width)
    } else {
        // slow path: byte loop (wide fields, or short buffers such as action blobs)
        let mut v: u128 = 0;
        for i in 0..width {
            let b = bit + i;
            let byte_i = byte + (b / 8) as usize;
            let bitv = data
                .get(byte_i)
                .map(|x| (x >> (7 - (b % 8))) & 1)
                .unwrap_or(0);
            v = (v << 1) | bitv as u128;
        }
        v
    }
}

/// Writes the low `width` bits of `v` at `bit` bits into `data[byte..]`.
#[inline]
pub fn write_bits(data: &mut [u8], byte: usize, bit: u32, width: u32, v: u128) {
    let total = bit + width;
    if total <= 64 && data.len() >= byte + 8 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&data[byte..byte + 8]);
        let mut w = u64::from_be_bytes(a);
        let shift = 64 - total;
        let m = (mask(width) as u64) << shift;
        w = (w & !m) | (((v as u64) << shift) & m);
        data[byte..byte + 8].copy_from_slice(&w.to_be_bytes());
    } else if total <= 128 && data.len() >= byte + 16 {
        let mut a = [0u8; 16];
        a.copy_from_slice(&data[byte..byte + 16]);
        let mut w = u128::from_be_bytes(a);
        let shift = 128 - total;
        let m = mask(width) << shift;
        w = (w & !m) | ((v << shift) & m);
        data[byte..byte + 16].copy_from_slice(&w.to_be_bytes());
    } else {
        for i in 0..width.min(128) {
            let b = bit + width - 1 - i;
            let byte_i = byte + (b / 8) as usize;
            let sh = 7 - (b % 8);
            if let Some(x) = data.get_mut(byte_i) {
                *x = (*x & !(1 << sh)) | ((((v >> i) & 1) as u8) << sh);
            }
        }
        if width > 128 {
            // bits above 128 of a wider field are zero
            for i in 128..width {
                let b = bit + width - 1 - i;
                let byte_i = byte + (b / 8) as usize;
                let sh = 7 - (b % 8);
                if let Some(x) = data.get_mut(byte_i) {
                    *x &= !(1 << sh);
                }
            }
        }
    }
}

/// Reads any number of bits as a big integer.
pub fn read_big(data: &[u8], byte: usize, bit: u32, width: u32) -> BigUint {
    if bit == 0 && width.is_multiple_of(8) {
        let end = (byte + (width / 8) as usize).min(data.len());
        return BigUint::from_bytes_be(&data[byte.min(end)..end]);
    }
    let mut bytes = vec![0u8; width.div_ceil(8) as usize];
    let pad = bytes.len() as u32 * 8 - width;
    for i in 0..width {
        let b = bit + i;
        let bitv = data
            .get(byte + (b / 8) as usize)
            .map(|x| (x >> (7 - (b % 8))) & 1)
            .unwrap_or(0);
        let o = pad + i;
        bytes[(o / 8) as usize] |= bitv << (7 - (o % 8));
    }
    BigUint::from_bytes_be(&bytes)
}

/// Writes the low `width` bits of a big integer.
pub fn write_big(data: &mut [u8], byte: usize, bit: u32, width: u32, v: &BigUint) {
    let le = v.to_bytes_le();
    for i in 0..width {
        let vb = le
            .get((i / 8) as usize)
            .map(|x| (x >> (i % 8)) & 1)
            .unwrap_or(0);
        let b = bit + width - 1 - i;
        let sh = 7 - (b % 8);
        if let Some(x) = data.get_mut(byte + (b / 8) as usize) {
            *x = (*x & !(1 << sh)) | (vb << sh);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_roundtrip() {
        let mut d = vec![0u8; 64];
        for &(byte, bit, width) in &[
            (0, 0, 8),
            (1, 3, 9),
            (2, 7, 64),
            (3, 1, 127),
            (4, 0, 128),
            (5, 5, 1),
        ] {
            let v: u128 = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210 & mask(width);
            write_bits(&mut d, byte, bit, width, v);
            assert_eq!(read_bits(&d, byte, bit, width), v, "{byte} {bit} {width}");
            assert_eq!(read_big(&d, byte, bit, width), BigUint::from(v));
        }
    }

    /// The 64-bit window access reads and writes what the
    /// general access does, for every width and layout, without touching neighbours.
    #[test]
    fn windows_match_the_general_access() {
        let mut phv = Phv::zeroed(64);
        let vals = [
            0u64,
            1,
            0x1ff,
            0x200,
            0xdead_beef,
            u64::MAX,
            0x8000_0000_0000_0001,
        ];
        for width in 1..=64u32 {
            for bit in 0..8u8 {
                for own in [true, false] {
                    // an owned slot is right-aligned in its bytes
                    let bit = if own {
                        ((8 - width % 8) % 8) as u8
                    } else {
                        bit
                    };
                    let loc = FieldLoc::new(8, bit, width, false, own);
                    let slot = Window64::new(loc);
                    for &v in &vals {
                        phv.data.fill(0xa5);
                        let mut general = phv.clone();
                        phv.write64(slot, v);
                        general.write(loc, u128::from(v));
                        assert_eq!(phv.data, general.data, "write {width} {bit} {own} {v:#x}");
                        assert_eq!(
                            u128::from(phv.read64(slot)),
                            general.read_raw(loc),
                            "read {width} {bit} {own} {v:#x}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn neighbours_untouched() {
        let mut d = vec![0xffu8; 40];
        write_bits(&mut d, 1, 3, 9, 0);
        assert_eq!(d[0], 0xff);
        assert_eq!(d[1], 0b1110_0000);
        assert_eq!(d[2], 0b0000_1111);
        assert_eq!(d[3], 0xff);
    }

    #[test]
    fn exact_windows() {
        for n in 1..=16usize {
            let mut d = vec![0xAAu8; 40];
            let v: u128 = 0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10 & mask(8 * n as u32);
            store_be(&mut d, 3, n, v);
            assert_eq!(load_be(&d, 3, n), v, "{n}");
            assert_eq!(d[2], 0xAA);
            assert_eq!(d[3 + n], 0xAA);
        }
        // a packed field through Phv-style access matches the generic bit functions
        for &(bit, width) in &[(0u8, 9u32), (3, 13), (7, 64), (1, 120), (0, 48), (4, 4)] {
            let loc = FieldLoc::new(5, bit, width, false, false);
            let mut phv = Phv {
                data: vec![0x5Au8; 64].into_boxed_slice(),
                valid: Box::new([]),
                stack_next: Box::new([]),
                varbit_bits: Box::new([]),
            };
            let v = 0xdead_beef_cafe_f00d_1234_5678_9abc_def0u128 & mask(width);
            phv.write(loc, v);
            assert_eq!(phv.read_raw(loc), v);
            assert_eq!(read_bits(&phv.data, 5, bit as u32, width), v);
        }
    }

    #[test]
    fn sign() {
        assert_eq!(sign_extend(0xff, 8) as i128, -1);
        assert_eq!(sign_extend(0x7f, 8) as i128, 127);
    }
}
