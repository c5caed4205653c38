//! Parser plans made once at load time.
//!
//! The general parser resolves every header reference and builds every select key as a
//! byte string per packet. Most parser states of real programs are simpler than that: they
//! extract fixed headers named statically and select on a few fields or lookahead bits
//! that fit in 128 bits. For those the plan holds the header's PHV offset and length, and
//! the select key and transition values as 128-bit numbers, so a state costs a copy and
//! a few compares; a `set` of one field into another is a read and a masked write.
//! Anything else (stacks indexed at run time, varbit headers, other `set`s, `verify`,
//! value sets, keys wider than 128 bits) runs through the general code, per operation or
//! per select, with the same results.

use p4jet_ir::expr::{FieldRef, HeaderRef};
use p4jet_ir::{FieldLoc, KeyElem, ParseState, ParserOp, Program, TransitionKind};

use crate::copy::copy_small;
use crate::phv::{Phv, Window64, read_bits};

/// One parser operation of a planned state.
#[derive(Debug, Clone, Copy)]
pub enum ParseOp {
    /// `extract` of a fixed-size header named statically.
    Extract {
        /// Header id.
        h: u32,
        /// Offset of the header in the PHV.
        off: u32,
        /// Bytes copied.
        len: u32,
        /// The header is a member of a union (making it valid invalidates the others).
        union: bool,
    },
    /// Consecutive `extract`s of `n` fixed headers outside unions, `h`, `h + 1`, ...,
    /// lying back to back in the PHV from `off` (`len` bytes in all): one copy when the
    /// packet holds them all, else header by header.
    ExtractN {
        /// The first header.
        h: u32,
        /// Headers.
        n: u32,
        /// PHV offset of the first.
        off: u32,
        /// Bytes of all.
        len: u32,
    },
    /// `set(dst, src)` of one unsigned field into another, both named statically and
    /// at most 128 bits wide (p4c's `meta.x = hdr.y` in a parser state): the
    /// general code's evaluation and masked write without the expression walk.
    Copy {
        /// Destination field.
        dst: FieldLoc,
        /// Source field.
        src: FieldLoc,
    },
    /// [`ParseOp::Copy`] of a source whose bits lie within 8 bytes from its first byte
    /// into a destination written as a 64-bit window ([`Window64`]): one 8-byte load,
    /// shift and mask, then the slot's store, without the general read's and write's
    /// dispatch on the field sizes.
    Copy64 {
        /// Destination.
        dst: Window64,
        /// Source (for the general read should the load fail: it cannot, the PHV is
        /// padded).
        src: FieldLoc,
        /// The source's window: shift and mask of the 8 bytes from its first byte.
        shift: u32,
        mask: u64,
    },
    /// [`ParseOp::Copy`] between two fields that own their bytes (zero bits before
    /// them), as many bytes each, the source no wider: the bytes are the value, no
    /// masking needed (`meta.l4_src_port = tcp.src_port`).
    CopyBytes {
        /// PHV byte of the destination.
        dst: u32,
        /// PHV byte of the source.
        src: u32,
        /// Bytes (1..=16).
        n: u32,
    },
    /// `set(dst, lookahead(at * 8, n * 8))` into a field that owns exactly those `n`
    /// bytes (p4c's `tmp = packet.lookahead<probe_t>()`, often wider than 128 bits): a
    /// copy from the packet when it holds them, else operation `i` by the general code
    /// (which gives a short packet's value as it always did).
    SetAhead {
        /// PHV byte of the destination.
        dst: u32,
        /// Bytes past the cursor where the bits start.
        at: u32,
        /// Bytes.
        n: u32,
        /// The operation's index in its state.
        i: u32,
    },
    /// `add_header` of a fixed header named statically (p4c's `setValid` of the header
    /// a `lookahead` probe is sliced into): when it is invalid, its bytes zeroed, made
    /// valid (its union's other members invalid) and the length register grown by its
    /// size, as the primitive does; operation `i` by the general code when tracing.
    AddHeader {
        /// Header id.
        h: u32,
        /// Offset of the header in the PHV.
        off: u32,
        /// Its bytes.
        len: u32,
        /// The operation's index in its state.
        i: u32,
    },
    /// Operation `i` of the state, run by the general code.
    General(u32),
}

/// One element of a planned select key.
#[derive(Debug, Clone, Copy)]
pub enum SelectKey {
    /// A field, read without sign extension, `bits` = its key bytes * 8.
    Field {
        /// The field.
        loc: FieldLoc,
        /// Its key bits.
        bits: u32,
    },
    /// Packet bits after the cursor.
    Ahead {
        /// Bit offset from the cursor.
        offset: u32,
        /// Width in bits.
        width: u32,
        /// Its key bits.
        bits: u32,
    },
}

/// A planned select: key and transitions as 128-bit numbers (key bytes big-endian).
#[derive(Debug, Clone)]
pub struct Select {
    /// Key elements in order (the key is their concatenation).
    pub key: Vec<SelectKey>,
    /// (value, mask, next state); a default transition has mask 0.
    pub trans: Vec<(u128, u128, Option<u32>)>,
    /// The same select in 64 bits, when the key is one field whose bits lie within 8
    /// bytes from its first byte.
    pub word: Option<Select64>,
}

/// A [`Select`] on one field read with one 8-byte load from its first byte (the
/// PHV's padding keeps it in bounds), shifted and masked.
#[derive(Debug, Clone)]
pub struct Select64 {
    /// PHV byte of the 8-byte load.
    pub byte: u32,
    /// Right shift of the loaded big-endian word.
    pub shift: u32,
    /// Mask after the shift.
    pub mask: u64,
    /// (value, mask, next state), as in [`Select`].
    pub trans: Vec<(u64, u64, Option<u32>)>,
}

/// The parser's plan.
#[derive(Debug, Clone)]
pub struct ParserPlan {
    /// The first state.
    pub init: Option<u32>,
    /// Per state of the program, its plan.
    pub states: Vec<State>,
    /// The likeliest path from the start as one step (extract-N), if there is one.
    pub path: Option<ParsePath>,
}

/// How a state chooses the next one.
#[derive(Debug, Clone)]
pub enum Next {
    /// Known without a select (None: parsing ends after the operations): the state has
    /// no transitions, or no key and a first transition that always matches.
    Goto(Option<u32>),
    /// A select of 128-bit numbers.
    Select(Box<Select>),
    /// The general code builds the key and matches the transitions (value sets, keys
    /// wider than 128 bits, stack fields chosen at run time).
    General,
}

/// The plan of one parser state.
#[derive(Debug, Clone)]
pub struct State {
    /// Operations in order.
    pub ops: Vec<ParseOp>,
    /// The next state.
    pub next: Next,
    /// Only extracts of headers outside unions, and a next state known without the
    /// general select: the state runs on the parser's planned path.
    pub simple: bool,
    /// A simple state of exactly one extract (Ethernet, IPv4): (header, PHV offset,
    /// length), so the planned path needs no walk over `ops`.
    pub single: Option<(u32, u32, u32)>,
}

/// [`Next::Goto`] of `st`, if it has one.
fn fixed_next(st: &ParseState) -> Option<Option<u32>> {
    match st.transitions.first() {
        None => Some(None),
        Some(t) if st.key.is_empty() => match t.kind {
            // an empty key matches every value (and a default always)
            TransitionKind::Default | TransitionKind::Value { .. } => Some(t.next),
            TransitionKind::ValueSet { .. } => None,
        },
        Some(_) => None,
    }
}

fn be_u128(bytes: &[u8]) -> u128 {
    bytes.iter().fold(0u128, |a, b| (a << 8) | u128::from(*b))
}

impl ParserPlan {
    /// The plain reading of `p`'s parser: every operation and select by the general
    /// code.
    pub(crate) fn reference(p: &Program) -> ParserPlan {
        ParserPlan {
            init: p.parser.init,
            states: p.parser.states.iter().map(State::general).collect(),
            path: None,
        }
    }

    /// Pass: every operation and select that has a planned form takes it (copies of
    /// known lengths to known offsets, selects on 128-bit numbers, fixed next states).
    pub(crate) fn plan_states(&mut self, p: &Program) {
        for (st, ir) in self.states.iter_mut().zip(&p.parser.states) {
            *st = State::new(p, ir);
        }
    }

    /// Pass: consecutive extracts of headers outside unions that lie back to back in
    /// the PHV (and have consecutive ids) as one [`ParseOp::ExtractN`] (VXLAN's outer
    /// Ethernet, IPv4, UDP and VXLAN headers).
    pub(crate) fn fuse_extracts(&mut self) {
        for st in &mut self.states {
            let mut ops: Vec<ParseOp> = Vec::with_capacity(st.ops.len());
            for op in st.ops.drain(..) {
                let ParseOp::Extract {
                    h,
                    off,
                    len,
                    union: false,
                } = op
                else {
                    ops.push(op);
                    continue;
                };
                match ops.last_mut() {
                    Some(ParseOp::Extract {
                        h: h0,
                        off: o0,
                        len: l0,
                        union: false,
                    }) if *h0 + 1 == h && *o0 + *l0 == off => {
                        *ops.last_mut().expect("just matched") = ParseOp::ExtractN {
                            h: *h0,
                            n: 2,
                            off: *o0,
                            len: *l0 + len,
                        };
                    }
                    Some(ParseOp::ExtractN {
                        h: h0,
                        n,
                        off: o0,
                        len: l0,
                    }) if *h0 + *n == h && *o0 + *l0 == off => {
                        *n += 1;
                        *l0 += len;
                    }
                    _ => ops.push(op),
                }
            }
            st.ops = ops;
            st.simple = st.simple
                || (st.ops.iter().all(|op| {
                    matches!(
                        op,
                        ParseOp::Extract { union: false, .. } | ParseOp::ExtractN { .. }
                    )
                }) && !matches!(st.next, Next::General));
        }
    }

    /// Pass: the likeliest path from the start as one step ([`ParsePath`]).
    pub(crate) fn fuse_path(&mut self) {
        self.path = ParsePath::new(&self.states, self.init);
    }
}

impl State {
    /// A plan that runs everything of `st` through the general code.
    pub(crate) fn general(st: &ParseState) -> State {
        State {
            ops: (0..st.ops.len() as u32).map(ParseOp::General).collect(),
            next: Next::General,
            simple: false,
            single: None,
        }
    }

    /// Plans state `st` of `p`.
    pub(crate) fn new(p: &Program, st: &ParseState) -> State {
        let ops: Vec<ParseOp> = st
            .ops
            .iter()
            .enumerate()
            .map(|(i, op)| plan_op(p, i as u32, op).unwrap_or(ParseOp::General(i as u32)))
            .collect();
        let next = match (fixed_next(st), Select::new(p, st)) {
            (Some(next), _) => Next::Goto(next),
            (None, Some(sel)) => Next::Select(Box::new(sel)),
            (None, None) => Next::General,
        };
        let simple = ops.iter().all(|op| {
            matches!(
                op,
                ParseOp::Extract { union: false, .. } | ParseOp::ExtractN { .. }
            )
        }) && !matches!(next, Next::General);
        let single = match ops[..] {
            [
                ParseOp::Extract {
                    h,
                    off,
                    len,
                    union: false,
                },
            ] if simple => Some((h, off, len)),
            _ => None,
        };
        State {
            ops,
            next,
            simple,
            single,
        }
    }
}

/// The planned form of parser operation `op` (the `i`th of its state), if it has one.
fn plan_op(p: &Program, i: u32, op: &ParserOp) -> Option<ParseOp> {
    match op {
        ParserOp::Extract(HeaderRef::Static(h)) => {
            let hi = p.headers.get(*h as usize)?;
            hi.varbit_slot.is_none().then_some(ParseOp::Extract {
                h: *h,
                off: hi.offset,
                len: hi.max_bytes,
                union: hi.union.is_some(),
            })
        }
        ParserOp::Primitive(p4jet_ir::Prim::AddHeader(HeaderRef::Static(h))) => {
            let hi = p.headers.get(*h as usize)?;
            hi.varbit_slot.is_none().then_some(ParseOp::AddHeader {
                h: *h,
                off: hi.offset,
                len: hi.max_bytes,
                i,
            })
        }
        ParserOp::Set {
            dst: FieldRef::Static(d),
            src,
        } => {
            let dst = p.fields.get(*d as usize)?;
            match &p.exprs.nodes.get(*src as usize)?.expr {
                p4jet_ir::Expr::Field(FieldRef::Static(s)) => {
                    plan_copy(dst, p.fields.get(*s as usize)?)
                }
                p4jet_ir::Expr::Lookahead { offset, width } => {
                    let l = dst.loc;
                    let whole = offset % 8 == 0 && width % 8 == 0 && *width > 0;
                    (whole && l.bit == 0 && l.width == *width && l.own && !dst.varbit).then_some(
                        ParseOp::SetAhead {
                            dst: l.byte,
                            at: offset / 8,
                            n: width / 8,
                            i,
                        },
                    )
                }
                _ => {
                    let src = bit_slice(p, *src, dst.loc.width)?;
                    let d = dst.loc;
                    (!d.signed && d.width <= 128 && !dst.varbit).then(|| copy_op(d, src))
                }
            }
        }
        _ => None,
    }
}

/// The bits of a field that `(f >> k) & m1 & m2 ...` (or `f & m`) leaves when written
/// into a `dst_width`-bit field, as a location inside `f`, when `f` is an unsigned field
/// named statically (of any width: p4c slices a wide `lookahead` temporary this way),
/// `k` and the masks are constants and the masks (with the destination's truncation)
/// keep a run of low bits; at most 128 bits.
fn bit_slice(p: &Program, id: p4jet_ir::expr::ExprId, dst_width: u32) -> Option<FieldLoc> {
    use num_bigint::BigInt;
    use p4jet_ir::expr::{BinOp, Expr};
    let mut keep: BigInt = (BigInt::from(1) << dst_width) - 1;
    let mut at = id;
    // the masks, outermost first
    let (f, k) = loop {
        match &p.exprs.nodes.get(at as usize)?.expr {
            Expr::Bin(BinOp::And, a, b) => {
                let (x, c) = match (
                    &p.exprs.nodes.get(*a as usize)?.expr,
                    &p.exprs.nodes.get(*b as usize)?.expr,
                ) {
                    (_, Expr::Const(c)) => (*a, c),
                    (Expr::Const(c), _) => (*b, c),
                    _ => return None,
                };
                if c.sign() == num_bigint::Sign::Minus {
                    return None;
                }
                keep &= c;
                at = x;
            }
            Expr::Bin(BinOp::Shr, a, b) => {
                let Expr::Const(c) = &p.exprs.nodes.get(*b as usize)?.expr else {
                    return None;
                };
                let Expr::Field(FieldRef::Static(f)) = &p.exprs.nodes.get(*a as usize)?.expr else {
                    return None;
                };
                break (*f, u32::try_from(c).ok()?);
            }
            Expr::Field(FieldRef::Static(f)) => break (*f, 0),
            _ => return None,
        }
    };
    let fl = p.fields.get(f as usize)?;
    let loc = fl.loc;
    if loc.signed || fl.varbit || k >= loc.width {
        return None;
    }
    // a run of low bits: keep + 1 is a power of two
    let wm = u32::try_from(keep.bits()).ok()?;
    if keep != (BigInt::from(1) << wm) - 1 {
        return None;
    }
    let w = wm.min(loc.width - k);
    if w == 0 || w > 128 {
        return None;
    }
    // bits k .. k + w from the field's least significant bit, i.e. from its most
    // significant bit an offset of width - k - w
    let first = loc.byte as u64 * 8 + u64::from(loc.bit) + u64::from(loc.width - k - w);
    Some(FieldLoc::new(
        u32::try_from(first / 8).ok()?,
        (first % 8) as u8,
        w,
        false,
        false,
    ))
}

/// `set(dst, src)` of one unsigned field of at most 128 bits into another: a byte copy
/// when both own as many bytes and the source is no wider, else a read and masked write.
fn plan_copy(dst: &p4jet_ir::FieldInfo, src: &p4jet_ir::FieldInfo) -> Option<ParseOp> {
    let (d, s) = (dst.loc, src.loc);
    if s.signed || s.width > 128 || d.width > 128 || src.varbit || dst.varbit {
        return None;
    }
    Some(
        if d.own && s.own && d.nbytes == s.nbytes && s.width <= d.width {
            ParseOp::CopyBytes {
                dst: d.byte,
                src: s.byte,
                n: u32::from(d.nbytes),
            }
        } else {
            copy_op(d, s)
        },
    )
}

/// `dst = src` for unsigned fields of at most 128 bits: [`ParseOp::Copy64`] when both
/// have 64-bit windows, [`ParseOp::CopyBytes`] when both are as many whole bytes from a
/// byte boundary and the destination owns its bytes (a wide slice of a `lookahead`
/// temporary into a probe header's field), else [`ParseOp::Copy`].
fn copy_op(dst: FieldLoc, src: FieldLoc) -> ParseOp {
    if dst.own
        && !src.signed
        && src.bit == 0
        && src.width == dst.width
        && dst.width.is_multiple_of(8)
        && (1..=16).contains(&(dst.width / 8))
    {
        return ParseOp::CopyBytes {
            dst: dst.byte,
            src: src.byte,
            n: dst.width / 8,
        };
    }
    let slot = Window64::new(dst);
    match crate::phv::window64(src) {
        Some((shift, mask)) if slot.n != 0 && src.width <= 64 => ParseOp::Copy64 {
            dst: slot,
            src,
            shift,
            mask,
        },
        _ => ParseOp::Copy { dst, src },
    }
}

impl Select {
    fn new(p: &Program, st: &ParseState) -> Option<Select> {
        if st.transitions.is_empty() || st.key_bytes > 16 {
            return None;
        }
        let mut key = Vec::with_capacity(st.key.len());
        let mut total = 0u32;
        for k in &st.key {
            let w = k.width(p);
            let bits = w.div_ceil(8) * 8;
            total += bits;
            key.push(match k {
                KeyElem::Field(FieldRef::Static(f)) => {
                    let loc = p.fields.get(*f as usize)?.loc;
                    if loc.width > 128 {
                        return None;
                    }
                    SelectKey::Field { loc, bits }
                }
                KeyElem::Field(_) => return None,
                KeyElem::Lookahead { offset, width } => {
                    if *width > 128 || *width == 0 {
                        return None;
                    }
                    SelectKey::Ahead {
                        offset: *offset,
                        width: *width,
                        bits,
                    }
                }
            });
        }
        if total != st.key_bytes * 8 {
            return None;
        }
        let n = st.key_bytes as usize;
        let mut trans = Vec::with_capacity(st.transitions.len());
        for t in &st.transitions {
            trans.push(match &t.kind {
                TransitionKind::Default => (0, 0, t.next),
                TransitionKind::Value { value, mask } if value.len() == n && mask.len() == n => {
                    let m = be_u128(mask);
                    (be_u128(value) & m, m, t.next)
                }
                _ => return None,
            });
        }
        // one field of read_raw's bits (the whole window of a field that owns it)
        let word = match key[..] {
            [SelectKey::Field { loc, .. }] => crate::phv::window64(loc)
                .filter(|&(_, m)| {
                    trans
                        .iter()
                        .all(|(v, k, _)| *v <= u128::from(m) && *k <= u128::from(m))
                })
                .map(|(shift, mask)| Select64 {
                    byte: loc.byte,
                    shift,
                    mask,
                    trans: trans
                        .iter()
                        .map(|&(v, k, next)| (v as u64, k as u64, next))
                        .collect(),
                }),
            _ => None,
        };
        Some(Select { key, trans, word })
    }

    /// The next state (None: accept), or the error of a lookahead past the packet's end.
    #[inline]
    pub(crate) fn next(
        &self,
        phv: &Phv,
        data: &[u8],
        cursor: usize,
        too_short: u32,
    ) -> Result<Option<u32>, u32> {
        // the commonest key, one field (an EtherType, a protocol number): its value,
        // in 64 bits when it fits
        if let Some(f) = &self.word
            && let Some(w) = phv.load8(f.byte as usize)
        {
            let key = (w >> f.shift) & f.mask;
            for &(value, m, next) in &f.trans {
                if key & m == value {
                    return Ok(next);
                }
            }
            return Ok(None);
        }
        if let [SelectKey::Field { loc, .. }] = self.key[..] {
            let key = phv.read_raw(loc);
            return Ok(self.choose(key));
        }
        let mut key = 0u128;
        for k in &self.key {
            let (v, bits) = match *k {
                SelectKey::Field { loc, bits } => (phv.read_raw(loc), bits),
                SelectKey::Ahead {
                    offset,
                    width,
                    bits,
                } => {
                    let need = cursor * 8 + offset as usize + width as usize;
                    if need > data.len() * 8 {
                        return Err(too_short);
                    }
                    let ahead = &data[cursor..];
                    (
                        read_bits(ahead, (offset / 8) as usize, offset % 8, width),
                        bits,
                    )
                }
            };
            key = key.checked_shl(bits).unwrap_or(0) | v;
        }
        Ok(self.choose(key))
    }

    /// The next state for `key`: the first transition whose masked value matches.
    #[inline(always)]
    fn choose(&self, key: u128) -> Option<u32> {
        for (value, mask, next) in &self.trans {
            if key & mask == *value {
                return *next;
            }
        }
        // no match and no default: bmv2 accepts
        None
    }
}

/// The parser's likeliest path from its start, as one step: a chain of states that each
/// extract one fixed header, the headers back to back both in the packet and in the
/// PHV (Ethernet then IPv4), the chain following at each select its first transition on
/// an exact value. A packet is on the path when it holds all the path's bytes and each
/// select key, read from the packet bytes, equals its value; then the whole chain is one
/// copy, a few valid bits and as many compares as selects. Any other packet is parsed
/// state by state, from the start, as before.
#[derive(Debug, Clone)]
pub struct ParsePath {
    /// Packet bytes extracted (from the packet's first byte).
    pub len: u32,
    /// PHV offset of the first header; the others follow it.
    pub phv_off: u32,
    /// Headers made valid.
    pub headers: Box<[u32]>,
    /// Per select on the path: (packet byte of the key field's first byte, shift,
    /// mask, value): the 8 bytes from there read big-endian, shifted and masked, equal
    /// the value (all eight bytes lie in the path's).
    pub checks: Box<[(u32, u32, u64, u64)]>,
    /// The state after the path (None: parsing ends).
    pub next: Option<u32>,
}

/// Longest path [`ParsePath::new`] follows.
const PATH_MAX_STATES: usize = 8;

impl ParsePath {
    /// The path from state `init` through `plans`, when it has at least two states.
    pub(crate) fn new(plans: &[State], init: Option<u32>) -> Option<ParsePath> {
        let mut state = init;
        let mut phv_off = None;
        let (mut len, mut headers, mut checks) = (0u32, vec![], vec![]);
        while let Some(si) = state {
            if headers.len() == PATH_MAX_STATES {
                break;
            }
            let Some((h, off, hlen)) = plans.get(si as usize).and_then(|pl| pl.single) else {
                break;
            };
            let start = *phv_off.get_or_insert(off);
            if off != start + len || hlen == 0 {
                break;
            }
            let plan = &plans[si as usize];
            let word = match &plan.next {
                Next::Select(s) => s.word.as_ref(),
                _ => None,
            };
            let (next, check) = match (&plan.next, word) {
                (Next::Goto(next), _) => (*next, None),
                (Next::Select(_), Some(f)) => {
                    // the key is a field of a header on the path (read from the packet)
                    let Some(at) = f.byte.checked_sub(start).filter(|b| *b < len + hlen) else {
                        break;
                    };
                    // the first exact-value transition, if no transition before it
                    // takes that value
                    let Some(k) = f.trans.iter().position(|&(_, m, _)| m == f.mask) else {
                        break;
                    };
                    let (v, _, next) = f.trans[k];
                    if f.trans[..k].iter().any(|&(vj, mj, _)| v & mj == vj) {
                        break;
                    }
                    (next, Some((at, f.shift, f.mask, v)))
                }
                _ => break,
            };
            len += hlen;
            headers.push(h);
            checks.extend(check);
            state = next;
        }
        // every key window inside the path's bytes; at least two states to gain
        if headers.len() < 2 || checks.iter().any(|&(at, ..)| at + 8 > len) {
            return None;
        }
        Some(ParsePath {
            len,
            phv_off: phv_off?,
            headers: headers.into_boxed_slice(),
            checks: checks.into_boxed_slice(),
            next: state,
        })
    }

    /// States on the path (for the parser's step count).
    #[inline(always)]
    pub(crate) fn states(&self) -> u32 {
        self.headers.len() as u32
    }

    /// Runs the path on a packet whose PHV was reset: the cursor after it, or None
    /// (nothing written) when the packet is not on it.
    #[inline(always)]
    pub(crate) fn run(&self, data: &[u8], phv: &mut Phv) -> Option<usize> {
        let len = self.len as usize;
        let src = data.get(..len)?;
        for &(at, shift, mask, value) in &self.checks {
            let w = src
                .get(at as usize..)
                .and_then(|s| s.first_chunk::<8>())
                .map_or(0, |b| u64::from_be_bytes(*b));
            if (w >> shift) & mask != value {
                return None;
            }
        }
        let off = self.phv_off as usize;
        copy_small(phv.data.get_mut(off..off + len)?, src);
        for &h in &self.headers {
            if let Some(v) = phv.valid.get_mut(h as usize) {
                *v = true;
            }
        }
        Some(len)
    }
}
