//! Hashes and internet checksums over inputs laid out at load time
//! (`hash::FixedInput`): the `hash()` primitive (`dst = base + hash(fields) % max`)
//! and a checksum update over fields, constants and the payload (the TCP checksum over
//! its pseudo header) as straight-line code. The input's bytes are loaded from where
//! they lie in the PHV (constant bytes are constants), CRCs run a byte at a time
//! through a 256-entry table (`hash::CrcTable`), internet checksums add 8-, 4- and
//! 2-byte big-endian words and fold the carries back in. The payload's part of a
//! checksum is one helper call that sums it 8 bytes at a time. The code runs when every
//! header the input reads is valid; otherwise the interpreter's general code does
//! (an invalid header's fields drop out of the input and shift what follows).

use cranelift_codegen::ir::{InstBuilder, Value, types};
use p4jet_engine::hash::{CrcTable, FixedInput, FixedPiece, fixed_input};
use p4jet_ir::expr::{Expr, FieldRef};
use p4jet_ir::{ChecksumInfo, FieldLoc, HashAlgo, Prim, Program};

use super::{Gen, H, mem};

/// A hash algorithm with a compiled form.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Algo {
    /// bmv2's fixed CRCs (`crc16`, `crc32`, `crcCCITT`).
    Crc(CrcTable),
    /// The internet checksum.
    Csum16,
    /// Xor of the big-endian 16-bit words (a short last one padded with zeros).
    Xor16,
    /// Xor of the big-endian 32-bit words.
    Xor32,
    /// The first 8 bytes as a big-endian number.
    Identity,
}

impl Algo {
    fn of(a: HashAlgo) -> Option<Algo> {
        match a {
            HashAlgo::Csum16 => Some(Algo::Csum16),
            HashAlgo::Xor16 => Some(Algo::Xor16),
            HashAlgo::Xor32 => Some(Algo::Xor32),
            HashAlgo::Identity => Some(Algo::Identity),
            a => CrcTable::of(a).map(Algo::Crc),
        }
    }
}

/// A `hash()` primitive with a compiled form: a calculation of fixed input without the
/// payload, an algorithm with a compiled form, constant base and modulus of at most 64
/// bits and a destination of at most 64 bits.
#[derive(Debug, Clone)]
pub(crate) struct HashPrim {
    pub input: FixedInput,
    pub algo: Algo,
    pub base: u64,
    pub max: u64,
    pub dst: FieldLoc,
}

/// The value of expression `id` when it is a constant in `0..2^64` (as the
/// interpreter's `eval_index` reads it).
fn const_u64(p: &Program, id: u32) -> Option<u64> {
    let n = p.exprs.nodes.get(id as usize)?;
    let Expr::Const(v) = &n.expr else {
        return None;
    };
    let v = u64::try_from(v).ok()?;
    let wide = p.exprs.wide.get(id as usize).copied().unwrap_or(true);
    (wide || n.konst == u128::from(v)).then_some(v)
}

/// The compiled form of primitive `prim`, when it is a `hash()` that has one.
pub(crate) fn hash_prim(p: &Program, prim: &Prim) -> Option<HashPrim> {
    let Prim::Hash {
        dst: FieldRef::Static(f),
        base,
        calc,
        max,
    } = prim
    else {
        return None;
    };
    let dst = p.fields.get(*f as usize)?.loc;
    if dst.width > 64 || !(1..=8).contains(&dst.nbytes) {
        return None;
    }
    let c = p.calculations.get(*calc as usize)?;
    if c.custom_slot.is_some() {
        return None;
    }
    let input = fixed_input(p, c).filter(|i| !i.payload)?;
    Some(HashPrim {
        input,
        algo: Algo::of(c.algo)?,
        base: const_u64(p, *base)?,
        max: const_u64(p, *max)?,
        dst,
    })
}

/// A checksum update with a compiled form: an internet checksum of fixed input (the
/// payload may follow) into a field of at most 64 bits.
#[derive(Debug, Clone)]
pub(crate) struct CsumUpdate {
    pub input: FixedInput,
    pub target: FieldLoc,
}

/// The compiled form of checksum `ck`'s update, if it has one.
pub(crate) fn csum_update(p: &Program, ck: &ChecksumInfo) -> Option<CsumUpdate> {
    let FieldRef::Static(f) = ck.target else {
        return None;
    };
    let target = p.fields.get(f as usize)?.loc;
    let c = p.calculations.get(ck.calc as usize)?;
    if c.algo != HashAlgo::Csum16 || target.width > 64 || !(1..=8).contains(&target.nbytes) {
        return None;
    }
    Some(CsumUpdate {
        input: fixed_input(p, c)?,
        target,
    })
}

impl Gen<'_, '_> {
    /// 1 when every header of `headers` is valid, else 0 (1 for none).
    pub(crate) fn all_valid(&mut self, valid: Value, headers: &[u32]) -> Value {
        let mut all: Option<Value> = None;
        for &h in headers {
            let v = self.b.ins().load(types::I8, mem(), valid, h as i32);
            all = Some(match all {
                Some(a) => self.b.ins().band(a, v),
                None => v,
            });
        }
        match all {
            Some(a) => self.b.ins().uextend(types::I64, a),
            None => self.k(1),
        }
    }

    /// The input's bytes, in order: each a load from the PHV or a constant.
    fn input_bytes(&mut self, phv: Value, input: &FixedInput) -> Vec<Value> {
        let mut out = vec![];
        for pc in &input.pieces {
            match *pc {
                FixedPiece::Phv { byte, len } => {
                    for o in byte..byte + len {
                        out.push(self.b.ins().uload8(types::I64, mem(), phv, o as i32));
                    }
                }
                FixedPiece::Byte(b) => out.push(self.k(u64::from(b))),
            }
        }
        out
    }

    /// The hash of the input's bytes by `algo` (every header of the input valid).
    pub(crate) fn fixed_hash(&mut self, phv: Value, input: &FixedInput, algo: Algo) -> Value {
        match algo {
            Algo::Crc(t) => self.crc(phv, input, &t),
            Algo::Csum16 => {
                let s = self.ones_sum(phv, input);
                let f = self.fold16(s);
                let n = self.b.ins().bnot(f);
                self.b.ins().band_imm_s(n, 0xffff)
            }
            Algo::Xor16 | Algo::Xor32 => {
                let w = if matches!(algo, Algo::Xor16) { 2 } else { 4 };
                let bytes = self.input_bytes(phv, input);
                let mut r = self.k(0);
                for (i, b) in bytes.into_iter().enumerate() {
                    let s = 8 * (w - 1 - i % w) as i64;
                    let b = if s > 0 {
                        self.b.ins().ishl_imm_s(b, s)
                    } else {
                        b
                    };
                    r = self.b.ins().bxor(r, b);
                }
                r
            }
            Algo::Identity => {
                let bytes = self.input_bytes(phv, input);
                let mut r = self.k(0);
                for b in bytes.into_iter().take(8) {
                    let s = self.b.ins().ishl_imm_s(r, 8);
                    r = self.b.ins().bor(s, b);
                }
                r
            }
        }
    }

    /// The CRC of the input's bytes through `t`'s table (`CrcTable::run`).
    fn crc(&mut self, phv: Value, input: &FixedInput, t: &CrcTable) -> Value {
        // the table is a static of p4jet-engine: it outlives the code; every index is
        // masked to 0..=255
        let table = self.k(t.table.as_ptr() as u64);
        let mut r = self.k(t.init);
        let m = if t.width >= 64 {
            u64::MAX
        } else {
            (1u64 << t.width) - 1
        };
        for pc in &input.pieces {
            let bytes: Vec<(Option<u32>, u8)> = match *pc {
                FixedPiece::Phv { byte, len } => (byte..byte + len).map(|o| (Some(o), 0)).collect(),
                FixedPiece::Byte(b) => vec![(None, b)],
            };
            for (src, k) in bytes {
                let hi = if t.reflected {
                    r
                } else {
                    self.b.ins().ushr_imm_s(r, i64::from(t.width - 8))
                };
                let x = match src {
                    Some(o) => {
                        let b = self.b.ins().uload8(types::I64, mem(), phv, o as i32);
                        self.b.ins().bxor(hi, b)
                    }
                    None => self.b.ins().bxor_imm_s(hi, i64::from(k)),
                };
                let i = self.b.ins().band_imm_s(x, 0xff);
                let o = self.b.ins().ishl_imm_s(i, 3);
                let at = self.b.ins().iadd(table, o);
                let e = self.b.ins().load(types::I64, mem(), at, 0);
                r = if t.reflected {
                    let s = self.b.ins().ushr_imm_s(r, 8);
                    self.b.ins().bxor(s, e)
                } else {
                    let s = self.b.ins().ishl_imm_s(r, 8);
                    let s = self.b.ins().bxor(s, e);
                    self.b.ins().band_imm_s(s, m as i64)
                };
            }
        }
        if t.xor_out == 0 {
            r
        } else {
            self.b.ins().bxor_imm_s(r, t.xor_out as i64)
        }
    }

    /// A sum of the input's bytes as big-endian 16-bit words (a last odd byte the high
    /// byte of a word), congruent to their ones'-complement sum modulo 2^16 - 1 and 0
    /// only when every byte is: a PHV run is added as 8-, 4- and 2-byte big-endian
    /// loads (2^32 and 2^48 are 1 modulo 2^16 - 1, so a wider load counts its words
    /// once), constant bytes are one constant.
    pub(crate) fn ones_sum(&mut self, phv: Value, input: &FixedInput) -> Value {
        let mut konst: u64 = 0;
        let mut sum: Option<Value> = None;
        let mut add = |g: &mut Self, v: Value| {
            sum = Some(match sum {
                Some(s) => g.b.ins().iadd(s, v),
                None => v,
            });
        };
        let mut pos: u32 = 0;
        for pc in &input.pieces {
            match *pc {
                FixedPiece::Byte(b) => {
                    konst += if pos.is_multiple_of(2) {
                        u64::from(b) << 8
                    } else {
                        u64::from(b)
                    };
                    pos += 1;
                }
                FixedPiece::Phv { mut byte, mut len } => {
                    if pos % 2 == 1 && len > 0 {
                        // the low byte of a word
                        let b = self.b.ins().uload8(types::I64, mem(), phv, byte as i32);
                        add(self, b);
                        byte += 1;
                        len -= 1;
                        pos += 1;
                    }
                    while len >= 8 {
                        let w = self.load_be(phv, byte as i32, 8);
                        let hi = self.b.ins().ushr_imm_s(w, 32);
                        let lo = self.b.ins().band_imm_s(w, 0xffff_ffff);
                        let s = self.b.ins().iadd(hi, lo);
                        add(self, s);
                        byte += 8;
                        len -= 8;
                        pos += 8;
                    }
                    for n in [4u32, 2] {
                        if len >= n {
                            let w = self.load_be(phv, byte as i32, n);
                            add(self, w);
                            byte += n;
                            len -= n;
                            pos += n;
                        }
                    }
                    if len == 1 {
                        let b = self.b.ins().uload8(types::I64, mem(), phv, byte as i32);
                        let b = self.b.ins().ishl_imm_s(b, 8);
                        add(self, b);
                        pos += 1;
                    }
                }
            }
        }
        let k = self.k(konst);
        match sum {
            Some(s) => self.b.ins().iadd(s, k),
            None => k,
        }
    }

    /// `s` (below 2^64) folded to 16 bits with end-around carries: 0 only when `s` is.
    /// Two rotate-adds: the high half of `x + rotl(x, half)` is the sum of `x`'s halves
    /// with the carry out of the low half added back (nonzero unless both halves are
    /// 0), so 64 bits fold to 32, then 32 to 16, each the value modulo 2^16 - 1 in
    /// 1..=0xffff as the repeated shift-and-add gives it.
    pub(crate) fn fold16(&mut self, s: Value) -> Value {
        let r = self.b.ins().rotl_imm_u(s, 32);
        let t = self.b.ins().iadd(s, r);
        let t = self.b.ins().ushr_imm_u(t, 32);
        let t = self.b.ins().ireduce(types::I32, t);
        let r = self.b.ins().rotl_imm_u(t, 16);
        let u = self.b.ins().iadd(t, r);
        let u = self.b.ins().ushr_imm_u(u, 16);
        self.b.ins().uextend(types::I64, u)
    }

    /// `dst = base + hash % max` of a compiled `hash()` (every header of its input
    /// valid: the caller tested [`Gen::all_valid`]).
    pub(crate) fn hash_prim(&mut self, phv: Value, h: &HashPrim) {
        let v = self.fixed_hash(phv, &h.input, h.algo);
        let v = match h.max {
            0 => self.k(0),
            m if m.is_power_of_two() => self.b.ins().band_imm_s(v, (m - 1) as i64),
            m => {
                let mk = self.k(m);
                self.b.ins().urem(v, mk)
            }
        };
        let v = if h.base == 0 {
            v
        } else {
            self.b.ins().iadd_imm_s(v, h.base as i64)
        };
        self.write_field(phv, h.dst, v);
    }

    /// Writes a compiled checksum update (every header of its input valid: the caller
    /// tested [`Gen::all_valid`]); the payload's sum comes from a helper call.
    pub(crate) fn csum_update_fixed(&mut self, phv: Value, lane: Value, c: &CsumUpdate) {
        let s = self.ones_sum(phv, &c.input);
        let s = if c.input.payload {
            let env = self.env;
            let p = self
                .call(H::PayloadSum, &[env, lane])
                .unwrap_or_else(|| self.k(0));
            if c.input.len % 2 == 1 {
                // the payload starts at an odd offset: its words straddle; its sum,
                // byte-swapped, is the straddling words' sum (RFC 1071)
                let f = self.fold16(p);
                let sw = self.b.ins().ireduce(types::I16, f);
                let sw = self.b.ins().bswap(sw);
                let sw = self.b.ins().uextend(types::I64, sw);
                let s = self.fold16(s);
                self.b.ins().iadd(s, sw)
            } else {
                self.b.ins().iadd(s, p)
            }
        } else {
            s
        };
        let f = self.fold16(s);
        let n = self.b.ins().bnot(f);
        let v = self.b.ins().band_imm_s(n, 0xffff);
        self.write_field(phv, c.target, v);
    }
}
