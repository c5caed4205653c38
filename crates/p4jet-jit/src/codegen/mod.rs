//! Cranelift IR from a plan: one function for the parser (with checksum verification),
//! one per control block, one for the deparser (with checksum updates). Offsets,
//! widths, masks and next states are constants in the code; table lookups, externs and
//! the operations without a compiled form are calls into the interpreter (`native.rs`).
//!
//! [`Gen`] holds the function being built and the emitters every stage uses: big-endian
//! loads and stores of exact sizes, field reads and writes, byte copies, loops over the
//! packets of a mask, helper calls.

pub(crate) mod action;
pub(crate) mod arch;
pub(crate) mod checksum;
pub(crate) mod control;
pub(crate) mod deparse;
pub(crate) mod hash;
pub(crate) mod parse;
pub(crate) mod walk;

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    AbiParam, InstBuilder, MemFlagsData, SigRef, Signature, Type, Value, types,
};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::{FunctionBuilder, Variable};
use p4jet_engine::Engine;
use p4jet_engine::phv::Window64;
use p4jet_ir::FieldLoc;

use crate::abi::off;

/// The pointer type (64-bit hosts only).
pub(crate) const PTR: Type = types::I64;

/// The interpreter's entry points that generated code calls (`native.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum H {
    /// `(env, lane, state, op, cursor) -> cursor | ERR_BIT | code`
    ParseOp,
    /// `(env, lane, state, cursor) -> state | ACCEPT | ERR_BIT | code`
    Select,
    /// `(env, lane)`: every verified checksum.
    Verify,
    /// `(env, lane)`: every updated checksum.
    Update,
    /// `(env, lane, checksum)`: one checksum of the program updated by the general
    /// code (its condition was tested).
    UpdateOne,
    /// `(env, lane, expr) -> bool`
    Test,
    /// `(env, lane, table, out)`: a key from its parts.
    BuildKey,
    /// `(env, table, waiting) -> stride`: lookup and outcomes of the waiting packets;
    /// the stride of their outcomes in bytes (0: the first one is everyone's).
    Lookup,
    /// `(env, lane, action, data, len) -> exit`
    RunAction,
    /// `(env, lane, action, pc, data, len) -> exit`
    Prim,
    /// `(env, lane) -> sum`: the payload's ones'-complement sum, not folded.
    PayloadSum,
    /// `(env, table, n)`: `n` lookups of a table applied inline, all misses.
    Count,
}

impl H {
    /// Parameter and result types.
    fn types(self) -> (&'static [Type], &'static [Type]) {
        use types::{I32, I64};
        match self {
            H::ParseOp => (&[I64, I64, I32, I32, I64], &[I64]),
            H::Select => (&[I64, I64, I32, I64], &[I64]),
            H::Verify | H::Update => (&[I64, I64], &[]),
            H::Test => (&[I64, I64, I32], &[I32]),
            H::UpdateOne => (&[I64, I64, I32], &[]),
            H::BuildKey => (&[I64, I64, I32, I64], &[]),
            H::Lookup => (&[I64, I32, I32], &[I64]),
            H::RunAction => (&[I64, I64, I32, I64, I64], &[I32]),
            H::Prim => (&[I64, I64, I32, I32, I64, I64], &[I32]),
            H::PayloadSum => (&[I64, I64], &[I64]),
            H::Count => (&[I64, I32, I64], &[]),
        }
    }
}

/// Addresses of the helpers (set by `native.rs`).
#[derive(Debug, Clone)]
pub(crate) struct Helpers(pub HashMap<H, usize>);

/// The function being built, with the program it comes from.
pub(crate) struct Gen<'a, 'f> {
    /// The builder.
    pub b: FunctionBuilder<'f>,
    /// The engine whose plan is compiled.
    pub e: &'a Engine,
    helpers: &'a Helpers,
    sigs: HashMap<H, SigRef>,
    call_conv: CallConv,
    /// The function's `env` argument.
    pub env: Value,
}

/// Memory flags of every access: no trap (the addresses are in bounds), no alignment.
pub(crate) fn mem() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

/// Memory flags of a load from memory no code writes while a generated function runs
/// (the pointer fields of a lane: the Rust side fills them before the call, helpers
/// only read them): Cranelift may then drop the load when its value goes unused,
/// reuse one load for several, and place it anywhere its address is computed. (Not
/// for `Env`'s fields: loaded once before a loop, they would be sunk into it.)
pub(crate) fn ro() -> MemFlagsData {
    mem().with_readonly().with_can_move()
}

/// The low `width` bits set (all 64 for 64 and more).
pub(crate) fn mask64(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

impl<'a, 'f> Gen<'a, 'f> {
    pub(crate) fn new(
        b: FunctionBuilder<'f>,
        e: &'a Engine,
        helpers: &'a Helpers,
        call_conv: CallConv,
        env: Value,
    ) -> Gen<'a, 'f> {
        Gen {
            b,
            e,
            helpers,
            sigs: HashMap::new(),
            call_conv,
            env,
        }
    }

    /// A 64-bit constant.
    pub(crate) fn k(&mut self, v: u64) -> Value {
        self.b.ins().iconst(types::I64, v as i64)
    }

    /// A 32-bit constant.
    pub(crate) fn k32(&mut self, v: u32) -> Value {
        self.b.ins().iconst(types::I32, i64::from(v))
    }

    /// A new 64-bit variable set to `init`.
    pub(crate) fn var(&mut self, init: u64) -> Variable {
        let v = self.b.declare_var(types::I64);
        let k = self.k(init);
        self.b.def_var(v, k);
        v
    }

    /// Calls helper `h`; its result, if it has one.
    pub(crate) fn call(&mut self, h: H, a: &[Value]) -> Option<Value> {
        let sig = match self.sigs.get(&h) {
            Some(s) => *s,
            None => {
                let (params, rets) = h.types();
                let mut sig = Signature::new(self.call_conv);
                sig.params.extend(params.iter().map(|t| AbiParam::new(*t)));
                sig.returns.extend(rets.iter().map(|t| AbiParam::new(*t)));
                let s = self.b.import_signature(sig);
                self.sigs.insert(h, s);
                s
            }
        };
        let addr = self.helpers.0.get(&h).copied().unwrap_or(0);
        let callee = self.k(addr as u64);
        let inst = self.b.ins().call_indirect(sig, callee, a);
        self.b.inst_results(inst).first().copied()
    }

    /// The `i`th lane of `lanes` (an address).
    pub(crate) fn lane(&mut self, lanes: Value, i: Value) -> Value {
        let o = self.b.ins().imul_imm_s(i, off::LANE_SIZE);
        self.b.ins().iadd(lanes, o)
    }

    /// A pointer field of a lane.
    pub(crate) fn lane_ptr(&mut self, lane: Value, at: i32) -> Value {
        self.b.ins().load(PTR, ro(), lane, at)
    }

    /// `n` (1..=8) bytes at `p + o`, big-endian, zero-extended to 64 bits.
    pub(crate) fn load_be(&mut self, p: Value, o: i32, n: u32) -> Value {
        let ins = |g: &mut Self, t: Type, o: i32| -> Value {
            let v = g.b.ins().load(t, mem(), p, o);
            let v = if t == types::I8 {
                v
            } else {
                g.b.ins().bswap(v)
            };
            if t == types::I64 {
                v
            } else {
                g.b.ins().uextend(types::I64, v)
            }
        };
        let part = |g: &mut Self, hi: Value, hi_bytes: u32, lo: Value, lo_bytes: u32| {
            let _ = hi_bytes;
            let s = g.b.ins().ishl_imm_s(hi, i64::from(8 * lo_bytes));
            g.b.ins().bor(s, lo)
        };
        match n {
            1 => ins(self, types::I8, o),
            2 => ins(self, types::I16, o),
            4 => ins(self, types::I32, o),
            8 => ins(self, types::I64, o),
            3 => {
                let a = ins(self, types::I16, o);
                let b = ins(self, types::I8, o + 2);
                part(self, a, 2, b, 1)
            }
            5 => {
                let a = ins(self, types::I32, o);
                let b = ins(self, types::I8, o + 4);
                part(self, a, 4, b, 1)
            }
            6 => {
                let a = ins(self, types::I32, o);
                let b = ins(self, types::I16, o + 4);
                part(self, a, 4, b, 2)
            }
            _ => {
                // 7
                let a = ins(self, types::I32, o);
                let b = ins(self, types::I16, o + 4);
                let c = ins(self, types::I8, o + 6);
                let ab = part(self, a, 4, b, 2);
                part(self, ab, 6, c, 1)
            }
        }
    }

    /// The low `n` (1..=8) bytes of `v` at `p + o`, big-endian.
    pub(crate) fn store_be(&mut self, p: Value, o: i32, n: u32, v: Value) {
        let st = |g: &mut Self, t: Type, v: Value, o: i32| {
            let x = if t == types::I64 {
                v
            } else {
                g.b.ins().ireduce(t, v)
            };
            let x = if t == types::I8 {
                x
            } else {
                g.b.ins().bswap(x)
            };
            g.b.ins().store(mem(), x, p, o);
        };
        let shr =
            |g: &mut Self, v: Value, bytes: u32| g.b.ins().ushr_imm_s(v, i64::from(8 * bytes));
        match n {
            1 => st(self, types::I8, v, o),
            2 => st(self, types::I16, v, o),
            4 => st(self, types::I32, v, o),
            8 => st(self, types::I64, v, o),
            3 => {
                let hi = shr(self, v, 1);
                st(self, types::I16, hi, o);
                st(self, types::I8, v, o + 2);
            }
            5 => {
                let hi = shr(self, v, 1);
                st(self, types::I32, hi, o);
                st(self, types::I8, v, o + 4);
            }
            6 => {
                let hi = shr(self, v, 2);
                st(self, types::I32, hi, o);
                st(self, types::I16, v, o + 4);
            }
            _ => {
                let hi = shr(self, v, 3);
                st(self, types::I32, hi, o);
                let mid = shr(self, v, 1);
                st(self, types::I16, mid, o + 4);
                st(self, types::I8, v, o + 6);
            }
        }
    }

    /// Copies `n` bytes from `src + so` to `dst + dof` (the ranges do not overlap):
    /// 8-byte moves, the last one overlapping the one before it, all loads first.
    pub(crate) fn copy(&mut self, dst: Value, dof: i32, src: Value, so: i32, n: u32) {
        let n = n as i32;
        let mut parts: Vec<(Type, i32)> = vec![];
        if n >= 8 {
            let mut at = 0;
            while at + 8 <= n {
                parts.push((types::I64, at));
                at += 8;
            }
            if at < n {
                parts.push((types::I64, n - 8));
            }
        } else if n >= 4 {
            parts.push((types::I32, 0));
            if n > 4 {
                parts.push((types::I32, n - 4));
            }
        } else if n >= 2 {
            parts.push((types::I16, 0));
            if n > 2 {
                parts.push((types::I16, n - 2));
            }
        } else if n == 1 {
            parts.push((types::I8, 0));
        }
        // loads and stores interleaved by chunks of four: registers stay few
        for chunk in parts.chunks(4) {
            let vals: Vec<Value> = chunk
                .iter()
                .map(|&(t, at)| self.b.ins().load(t, mem(), src, so + at))
                .collect();
            for (&(_, at), v) in chunk.iter().zip(vals) {
                self.b.ins().store(mem(), v, dst, dof + at);
            }
        }
    }

    /// A field read through its 64-bit window: one load from its first byte of the
    /// fewest bytes (2, 4 or 8) that hold it (the PHV's padding keeps an 8-byte load in
    /// bounds), shifted and masked.
    /// A field within its first byte is one zero-extending byte load instead; the mask
    /// is left out when it keeps every bit the shift left (a field from the top of its
    /// window: `bit` 0).
    pub(crate) fn read_window(&mut self, phv: Value, shift: u32, mask: u64, byte: u32) -> Value {
        // the bits left after the shift
        let live = mask64(64 - shift.min(64));
        let w = if shift >= 56 {
            let w = self.b.ins().uload8(types::I64, mem(), phv, byte as i32);
            if shift > 56 {
                self.b.ins().ushr_imm_s(w, i64::from(shift - 56))
            } else {
                w
            }
        } else {
            // the narrowest load that holds the field: a load that covers more than a
            // recent narrower store of the same bytes (an action's write, then the
            // unicast check's read of egress_spec) waits for the store to reach the
            // cache instead of taking its value from the store buffer
            let (t, k) = if shift >= 48 {
                (types::I16, 2)
            } else if shift >= 32 {
                (types::I32, 4)
            } else {
                (types::I64, 8)
            };
            let w = self.b.ins().load(t, mem(), phv, byte as i32);
            let w = self.b.ins().bswap(w);
            let w = if k < 8 {
                self.b.ins().uextend(types::I64, w)
            } else {
                w
            };
            let s = shift - (64 - 8 * k);
            if s > 0 {
                self.b.ins().ushr_imm_s(w, i64::from(s))
            } else {
                w
            }
        };
        if mask & live == live {
            w
        } else {
            self.b.ins().band_imm_s(w, (mask & live) as i64)
        }
    }

    /// [`Window64`] read.
    pub(crate) fn read64(&mut self, phv: Value, w: Window64) -> Option<Value> {
        let (shift, mask) = p4jet_engine::phv::window64(w.loc)?;
        let _ = mask;
        if w.loc.nbytes == 0 || w.loc.nbytes > 8 {
            return None;
        }
        Some(self.read_window(phv, shift, mask64(w.loc.width), w.loc.byte))
    }

    /// [`Window64`] write of the low bits of `v` (as many as the field has).
    pub(crate) fn write64(&mut self, phv: Value, w: Window64, v: Value) -> bool {
        self.write_field(phv, w.loc, v)
    }

    /// A field of at most 64 bits in at most 8 bytes, its raw bits (None: wider).
    pub(crate) fn read_field(&mut self, phv: Value, loc: FieldLoc) -> Option<Value> {
        let n = u32::from(loc.nbytes);
        if n == 0 || n > 8 || loc.width > 64 {
            return None;
        }
        let w = self.load_be(phv, loc.byte as i32, n);
        if loc.own {
            return Some(w);
        }
        let shift = n * 8 - u32::from(loc.bit) - loc.width;
        let w = if shift > 0 {
            self.b.ins().ushr_imm_s(w, i64::from(shift))
        } else {
            w
        };
        Some(self.b.ins().band_imm_s(w, mask64(loc.width) as i64))
    }

    /// Writes the low `loc.width` bits of `v` into a field of at most 64 bits in at
    /// most 8 bytes (false: wider, nothing written).
    pub(crate) fn write_field(&mut self, phv: Value, loc: FieldLoc, v: Value) -> bool {
        let n = u32::from(loc.nbytes);
        if n == 0 || n > 8 || loc.width > 64 {
            return false;
        }
        let m = mask64(loc.width);
        if loc.own {
            let v = if m == u64::MAX || u64::from(n) * 8 == u64::from(loc.width) {
                v
            } else {
                self.b.ins().band_imm_s(v, m as i64)
            };
            self.store_be(phv, loc.byte as i32, n, v);
            return true;
        }
        let shift = n * 8 - u32::from(loc.bit) - loc.width;
        let fm = m << shift;
        let w = self.load_be(phv, loc.byte as i32, n);
        let keep = self.b.ins().band_imm_s(w, !fm as i64);
        let s = if shift > 0 {
            self.b.ins().ishl_imm_s(v, i64::from(shift))
        } else {
            v
        };
        let s = self.b.ins().band_imm_s(s, fm as i64);
        let nw = self.b.ins().bor(keep, s);
        self.store_be(phv, loc.byte as i32, n, nw);
        true
    }

    /// Header `h`'s validity byte (0 or 1) as a 64-bit value.
    pub(crate) fn valid(&mut self, valid: Value, h: u32) -> Value {
        // one zero-extending load (a byte load then an extension is two instructions)
        self.b.ins().uload8(types::I64, mem(), valid, h as i32)
    }

    /// Sets header `h`'s validity byte.
    pub(crate) fn set_valid(&mut self, valid: Value, h: u32, on: bool) {
        let v = self.b.ins().iconst(types::I8, i64::from(on));
        self.b.ins().store(mem(), v, valid, h as i32);
    }

    /// Runs `body(self, i)` for every set bit `i` of `mask`, lowest first.
    pub(crate) fn each_bit(&mut self, mask: Value, mut body: impl FnMut(&mut Self, Value)) {
        let m = self.b.declare_var(types::I64);
        self.b.def_var(m, mask);
        let head = self.b.create_block();
        let work = self.b.create_block();
        let done = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let cur = self.b.use_var(m);
        self.b.ins().brif(cur, work, &[], done, &[]);
        self.b.switch_to_block(work);
        let cur = self.b.use_var(m);
        let i = self.b.ins().ctz(cur);
        let less = self.b.ins().iadd_imm_s(cur, -1);
        let rest = self.b.ins().band(cur, less);
        self.b.def_var(m, rest);
        body(self, i);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(done);
    }

    /// `1 << i`.
    pub(crate) fn bit(&mut self, i: Value) -> Value {
        let one = self.k(1);
        self.b.ins().ishl(one, i)
    }

    /// `var |= v`.
    pub(crate) fn or_into(&mut self, var: Variable, v: Value) {
        let cur = self.b.use_var(var);
        let n = self.b.ins().bor(cur, v);
        self.b.def_var(var, n);
    }

    /// Branches to `then` when `a < b` (unsigned), else to `other`.
    pub(crate) fn if_lt(
        &mut self,
        a: Value,
        b: Value,
        then: cranelift_codegen::ir::Block,
        other: cranelift_codegen::ir::Block,
    ) {
        let c = self.b.ins().icmp(IntCC::UnsignedLessThan, a, b);
        self.b.ins().brif(c, then, &[], other, &[]);
    }
}
