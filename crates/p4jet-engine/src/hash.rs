//! Hash and checksum algorithms with bmv2's definitions, and the input buffer of a
//! calculation (fields bit-packed back to back, invalid headers skipped, payload appended).

use p4jet_ir::{CalcInput, Calculation, HashAlgo, Program};

use crate::eval::{EvalCtx, resolve_field};

/// Parameters of a configurable CRC (`crc16_custom`, `crc32_custom`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrcParams {
    /// Width in bits (8, 16, 32, 64).
    pub width: u32,
    /// Polynomial (normal form).
    pub poly: u64,
    /// Initial remainder.
    pub init: u64,
    /// Final xor.
    pub xor_out: u64,
    /// Reflect input bytes.
    pub refin: bool,
    /// Reflect the remainder.
    pub refout: bool,
}

impl CrcParams {
    /// CRC-16/ARC (bmv2 `crc16`).
    pub const CRC16: CrcParams = CrcParams {
        width: 16,
        poly: 0x8005,
        init: 0,
        xor_out: 0,
        refin: true,
        refout: true,
    };
    /// CRC-32 (bmv2 `crc32`).
    pub const CRC32: CrcParams = CrcParams {
        width: 32,
        poly: 0x04C1_1DB7,
        init: 0xFFFF_FFFF,
        xor_out: 0xFFFF_FFFF,
        refin: true,
        refout: true,
    };
    /// CRC-16/CCITT-FALSE (bmv2 `crcCCITT`).
    pub const CCITT: CrcParams = CrcParams {
        width: 16,
        poly: 0x1021,
        init: 0xFFFF,
        xor_out: 0,
        refin: false,
        refout: false,
    };
    /// bmv2 `crc8_custom` default.
    pub const CRC8: CrcParams = CrcParams {
        width: 8,
        poly: 0x07,
        init: 0,
        xor_out: 0,
        refin: false,
        refout: false,
    };
    /// bmv2 `crc64_custom` default.
    pub const CRC64: CrcParams = CrcParams {
        width: 64,
        poly: 0x1B,
        init: 0,
        xor_out: 0,
        refin: false,
        refout: false,
    };
}

/// The low `width` bits of `v` in reverse order (`width` in 1..=64).
fn reflect(v: u64, width: u32) -> u64 {
    v.reverse_bits().checked_shr(64 - width).unwrap_or(0)
}

/// A CRC's byte table: the remainder of each byte value shifted to the top.
fn crc_table(params: &CrcParams) -> [u64; 256] {
    let w = params.width;
    let top = 1u64 << (w - 1);
    let m = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    let mut t = [0u64; 256];
    for (b, slot) in t.iter_mut().enumerate() {
        let mut r = (b as u64) << (w - 8);
        for _ in 0..8 {
            r = if r & top != 0 {
                ((r << 1) ^ params.poly) & m
            } else {
                (r << 1) & m
            };
        }
        *slot = r;
    }
    t
}

/// The byte tables of bmv2's fixed CRCs (`crc16`, `crc32`, `crcCCITT`).
static CRC_TABLES: std::sync::LazyLock<[[u64; 256]; 3]> = std::sync::LazyLock::new(|| {
    [
        crc_table(&CrcParams::CRC16),
        crc_table(&CrcParams::CRC32),
        crc_table(&CrcParams::CCITT),
    ]
});

/// A CRC: a byte at a time through a table for bmv2's fixed ones, bit by bit for
/// configured ones.
pub fn crc(params: &CrcParams, data: &[u8]) -> u64 {
    let table = match *params {
        CrcParams::CRC16 => Some(&CRC_TABLES[0]),
        CrcParams::CRC32 => Some(&CRC_TABLES[1]),
        CrcParams::CCITT => Some(&CRC_TABLES[2]),
        _ => None,
    };
    let Some(table) = table else {
        return crc_bitwise(params, data);
    };
    let w = params.width;
    let m = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    let mut r = params.init & m;
    for &b in data {
        let b = if params.refin { b.reverse_bits() } else { b };
        let i = ((r >> (w - 8)) as u8 ^ b) as usize;
        r = ((r << 8) ^ table[i]) & m;
    }
    if params.refout {
        r = reflect(r, w);
    }
    (r ^ params.xor_out) & m
}

/// Generic bitwise CRC.
pub fn crc_bitwise(params: &CrcParams, data: &[u8]) -> u64 {
    let w = params.width;
    let top = 1u64 << (w - 1);
    let m = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    let mut r = params.init & m;
    for &b in data {
        let b = if params.refin {
            (b.reverse_bits()) as u64
        } else {
            b as u64
        };
        r ^= if w >= 8 { b << (w - 8) } else { b >> (8 - w) };
        for _ in 0..8 {
            r = if r & top != 0 {
                ((r << 1) ^ params.poly) & m
            } else {
                (r << 1) & m
            };
        }
    }
    if params.refout {
        r = reflect(r, w);
    }
    (r ^ params.xor_out) & m
}

/// Internet checksum (one's complement of the one's complement sum), big-endian.
pub fn csum16(data: &[u8]) -> u64 {
    let mut sum: u64 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u64;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u64) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    (!sum) & 0xffff
}

fn xor_words(data: &[u8], bytes: usize) -> u64 {
    let mut r = 0u64;
    for c in data.chunks(bytes) {
        let mut w = 0u64;
        for (i, b) in c.iter().enumerate() {
            w |= (*b as u64) << (8 * (bytes - 1 - i));
        }
        r ^= w;
    }
    r
}

/// Runs an algorithm over a byte buffer. `custom` gives configurable CRC parameters.
pub fn run(algo: HashAlgo, data: &[u8], custom: Option<&CrcParams>) -> u64 {
    match algo {
        HashAlgo::Crc16 => crc(&CrcParams::CRC16, data),
        HashAlgo::Crc32 => crc(&CrcParams::CRC32, data),
        HashAlgo::CrcCcitt => crc(&CrcParams::CCITT, data),
        HashAlgo::Crc16Custom => crc(custom.unwrap_or(&CrcParams::CRC16), data),
        HashAlgo::Crc32Custom => crc(custom.unwrap_or(&CrcParams::CRC32), data),
        HashAlgo::Crc8Custom => crc(custom.unwrap_or(&CrcParams::CRC8), data),
        HashAlgo::Crc64Custom => crc(custom.unwrap_or(&CrcParams::CRC64), data),
        HashAlgo::Csum16 => csum16(data),
        HashAlgo::Xor16 => xor_words(data, 2),
        HashAlgo::Xor32 => xor_words(data, 4),
        HashAlgo::Identity => {
            let mut v = 0u64;
            for b in data.iter().take(8) {
                v = (v << 8) | *b as u64;
            }
            v
        }
        // Not deterministic in bmv2 either; p4jet uses CRC-32 for them.
        HashAlgo::RoundRobin
        | HashAlgo::RoundRobinConsistent
        | HashAlgo::Random
        | HashAlgo::Xxh64
        | HashAlgo::Toeplitz => crc(&CrcParams::CRC32, data),
    }
}

/// Bit writer used to build calculation inputs without allocating per packet.
pub struct BitBuf<'a> {
    buf: &'a mut Vec<u8>,
    bits: usize,
}

impl<'a> BitBuf<'a> {
    /// Starts an empty buffer reusing `buf`'s allocation.
    pub fn new(buf: &'a mut Vec<u8>) -> Self {
        buf.clear();
        BitBuf { buf, bits: 0 }
    }

    /// Appends `width` bits taken from `data` starting at (`byte`, `bit`).
    pub fn push_bits(&mut self, data: &[u8], byte: usize, bit: u32, width: u32) {
        if self.bits.is_multiple_of(8) && bit == 0 && width.is_multiple_of(8) {
            let end = byte + (width / 8) as usize;
            self.buf
                .extend_from_slice(data.get(byte..end).unwrap_or(&[]));
            self.bits += width as usize;
            return;
        }
        for i in 0..width {
            let b = bit + i;
            let v = data
                .get(byte + (b / 8) as usize)
                .map(|x| (x >> (7 - (b % 8))) & 1)
                .unwrap_or(0);
            self.push_bit(v);
        }
    }

    fn push_bit(&mut self, v: u8) {
        if self.bits.is_multiple_of(8) {
            self.buf.push(0);
        }
        if v != 0
            && let Some(last) = self.buf.last_mut()
        {
            *last |= 1 << (7 - (self.bits % 8));
        }
        self.bits += 1;
    }

    /// Appends bytes.
    pub fn push_bytes(&mut self, data: &[u8]) {
        if self.bits.is_multiple_of(8) {
            self.buf.extend_from_slice(data);
            self.bits += data.len() * 8;
        } else {
            for b in data {
                self.push_bits(std::slice::from_ref(b), 0, 0, 8);
            }
        }
    }
}

/// Builds the input buffer of a calculation into `out`.
pub fn build_input(
    p: &Program,
    c: &EvalCtx,
    calc: &Calculation,
    payload: &[u8],
    out: &mut Vec<u8>,
) {
    let mut bb = BitBuf::new(out);
    // Consecutive fields of one header that are adjacent in the PHV are pushed as one run
    // (for a whole IPv4 header that is one byte copy instead of a bit loop per field).
    let mut run: Option<(usize, u32)> = None; // (absolute start bit, length in bits)
    let flush = |bb: &mut BitBuf, run: &mut Option<(usize, u32)>| {
        if let Some((start, len)) = run.take() {
            bb.push_bits(&c.phv.data, start / 8, (start % 8) as u32, len);
        }
    };
    for inp in &calc.inputs {
        match inp {
            CalcInput::Field(f) => {
                let Some(fid) = resolve_field(p, c, f) else {
                    continue;
                };
                let fi = &p.fields[fid as usize];
                if !c.phv.valid[fi.header as usize] {
                    continue;
                }
                let width = if fi.varbit {
                    let h = &p.headers[fi.header as usize];
                    h.varbit_slot
                        .map(|s| c.phv.varbit_bits[s as usize])
                        .unwrap_or(0)
                } else {
                    fi.loc.width
                };
                let abs = fi.loc.byte as usize * 8 + fi.loc.bit as usize;
                match &mut run {
                    Some((start, len)) if *start + *len as usize == abs && !fi.varbit => {
                        *len += width
                    }
                    _ => {
                        flush(&mut bb, &mut run);
                        run = Some((abs, width));
                    }
                }
                if fi.varbit {
                    flush(&mut bb, &mut run);
                }
            }
            CalcInput::Const { value, width } => {
                flush(&mut bb, &mut run);
                if *width <= 128 {
                    // no allocation: the constant as a 16-byte big-endian buffer
                    let d = value.to_u64_digits();
                    let v = (d.first().copied().unwrap_or(0) as u128)
                        | ((d.get(1).copied().unwrap_or(0) as u128) << 64);
                    let be = v.to_be_bytes();
                    bb.push_bits(&be, 0, 128 - *width, *width);
                } else {
                    let nbytes = width.div_ceil(8) as usize;
                    let mut be = value.to_bytes_be();
                    if be.len() < nbytes {
                        let mut v = vec![0u8; nbytes - be.len()];
                        v.extend(be);
                        be = v;
                    }
                    let skip = (be.len() * 8) as u32 - width;
                    bb.push_bits(&be, 0, skip, *width);
                }
            }
            CalcInput::Header(h) => {
                flush(&mut bb, &mut run);
                push_header(&mut bb, p, c.phv, *h);
            }
            CalcInput::Payload => {
                flush(&mut bb, &mut run);
                bb.push_bytes(payload)
            }
        }
    }
    flush(&mut bb, &mut run);
}

/// Appends header `h`'s bytes when it is valid.
fn push_header(bb: &mut BitBuf, p: &Program, phv: &crate::phv::Phv, h: u32) {
    if phv.valid[h as usize] {
        let hi = &p.headers[h as usize];
        let bytes = crate::header_bytes(p, phv, h);
        bb.push_bits(&phv.data, hi.offset as usize, 0, bytes * 8);
    }
}

/// One input of a calculation resolved at load time (see [`plan`]).
#[derive(Debug, Clone)]
pub enum PlanItem {
    /// Adjacent fields of one header (`bits` bits from PHV bit `start`), pushed when the
    /// header is valid.
    Run {
        /// Header whose validity decides.
        header: u32,
        /// First PHV bit.
        start: usize,
        /// Length in bits.
        bits: u32,
    },
    /// A constant: `width` bits of `be` after the first `skip` bits.
    Const {
        /// Value, 16 bytes big-endian.
        be: [u8; 16],
        /// Bits skipped at the front.
        skip: u32,
        /// Width in bits.
        width: u32,
    },
    /// A whole header (skipped when invalid).
    Header(u32),
    /// Everything after the parsed headers.
    Payload,
}

/// Resolves a calculation's inputs once: static fields become runs of adjacent PHV bits
/// (an IPv4 header checksum is two runs instead of eleven field look-ups per packet).
/// `None` when an input needs run-time resolution (a field of a stack element picked at
/// run time, a varbit field, a constant wider than 128 bits): [`build_input`] handles
/// those.
pub fn plan(p: &Program, calc: &Calculation) -> Option<CalcPlan> {
    let mut items: Vec<PlanItem> = Vec::new();
    for inp in &calc.inputs {
        match inp {
            CalcInput::Field(p4jet_ir::FieldRef::Static(fid)) => {
                let fi = p.fields.get(*fid as usize)?;
                if fi.varbit {
                    return None;
                }
                let abs = fi.loc.byte as usize * 8 + fi.loc.bit as usize;
                if let Some(PlanItem::Run {
                    header,
                    start,
                    bits,
                }) = items.last_mut()
                    && *header == fi.header
                    && *start + *bits as usize == abs
                {
                    *bits += fi.loc.width;
                    continue;
                }
                items.push(PlanItem::Run {
                    header: fi.header,
                    start: abs,
                    bits: fi.loc.width,
                });
            }
            CalcInput::Field(_) => return None,
            CalcInput::Const { value, width } => {
                if *width > 128 {
                    return None;
                }
                let d = value.to_u64_digits();
                let v = (d.first().copied().unwrap_or(0) as u128)
                    | ((d.get(1).copied().unwrap_or(0) as u128) << 64);
                items.push(PlanItem::Const {
                    be: v.to_be_bytes(),
                    skip: 128 - *width,
                    width: *width,
                });
            }
            CalcInput::Header(h) => items.push(PlanItem::Header(*h)),
            CalcInput::Payload => items.push(PlanItem::Payload),
        }
    }
    let csum_pieces =
        (calc.algo == HashAlgo::Csum16 && csum16_direct(&items)).then(|| csum16_pieces_of(&items));
    let csum_bytes = calc.algo == HashAlgo::Csum16 && items.iter().all(whole_bytes);
    Some(CalcPlan {
        items,
        csum_pieces,
        csum_bytes,
    })
}

/// A calculation's inputs resolved at load time.
#[derive(Debug, Clone)]
pub struct CalcPlan {
    /// The inputs in order.
    pub items: Vec<PlanItem>,
    /// An internet checksum that [`csum16_planned`] sums straight from the PHV, in
    /// these pieces.
    pub csum_pieces: Option<Vec<CsumPiece>>,
    /// An internet checksum whose inputs are all whole bytes (a pseudo header, the
    /// TCP header, the payload): [`csum16_bytes`] sums them where they lie instead of
    /// concatenating them first.
    pub csum_bytes: bool,
}

/// An 8-, 4- or 2-byte big-endian piece of a header's bytes in an internet checksum
/// summed straight from the PHV (its length is in its mask).
#[derive(Debug, Clone, Copy)]
pub struct CsumPiece {
    /// Header whose validity decides.
    pub header: u32,
    /// First PHV byte.
    pub byte: u32,
    /// The piece's bits in the 8 bytes read from `byte` (the first `len` bytes).
    pub mask: u64,
}

/// The pieces of a plan that [`csum16_direct`] accepts: each run cut into 8-byte
/// pieces, then at most one of 4 and one of 2 bytes.
fn csum16_pieces_of(items: &[PlanItem]) -> Vec<CsumPiece> {
    let mut out = vec![];
    for item in items {
        if let PlanItem::Run {
            header,
            start,
            bits,
        } = item
        {
            let mut b = (*start / 8) as u32;
            let mut n = *bits / 8;
            for len in [8u32, 4, 2] {
                while n >= len {
                    out.push(CsumPiece {
                        header: *header,
                        byte: b,
                        mask: !0u64 << (64 - 8 * len),
                    });
                    b += len;
                    n -= len;
                }
            }
        }
    }
    out
}

/// [`build_input`] from a [`plan`]: the same bytes.
pub fn build_planned(
    p: &Program,
    phv: &crate::phv::Phv,
    items: &[PlanItem],
    payload: &[u8],
    out: &mut Vec<u8>,
) {
    let mut bb = BitBuf::new(out);
    for item in items {
        match item {
            PlanItem::Run {
                header,
                start,
                bits,
            } => {
                if phv.valid[*header as usize] {
                    bb.push_bits(&phv.data, start / 8, (start % 8) as u32, *bits);
                }
            }
            PlanItem::Const { be, skip, width } => bb.push_bits(be, 0, *skip, *width),
            PlanItem::Header(h) => push_header(&mut bb, p, phv, *h),
            PlanItem::Payload => bb.push_bytes(payload),
        }
    }
}

/// Whether `item` is whole bytes from a byte boundary (its bytes are the input as is).
fn whole_bytes(item: &PlanItem) -> bool {
    match item {
        PlanItem::Run { start, bits, .. } => start.is_multiple_of(8) && bits.is_multiple_of(8),
        PlanItem::Const { skip, width, .. } => skip.is_multiple_of(8) && width.is_multiple_of(8),
        PlanItem::Header(_) | PlanItem::Payload => true,
    }
}

/// A sum of `data` read as big-endian 16-bit words (an odd last byte is the high byte
/// of a word), congruent to their ones'-complement sum modulo 2^16 - 1 and 0 only when
/// every byte is 0 (not folded: below 2^33 per 8 bytes).
#[inline(always)]
fn ones_sum(data: &[u8]) -> u64 {
    let mut sum: u64 = 0;
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_be_bytes(w.try_into().unwrap_or([0; 8]));
        // a 32-bit half is 1 modulo 2^16 - 1 times the sum of its two words
        sum += (w >> 32) + (w & 0xffff_ffff);
    }
    let mut rest = words.remainder().chunks_exact(2);
    for c in &mut rest {
        sum += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = rest.remainder() {
        sum += u64::from(*last) << 8;
    }
    sum
}

/// `sum` folded to 16 bits with end-around carries: 0 only when `sum` is.
#[inline(always)]
fn fold16(mut sum: u64) -> u64 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum
}

/// [`csum16`] of [`build_planned`]'s bytes for a plan with `csum_bytes`, without
/// building them: each input's bytes are summed where they lie (`CsumStream`). None when an
/// input is not where it should be (then the general code decides).
pub fn csum16_bytes(
    p: &Program,
    phv: &crate::phv::Phv,
    items: &[PlanItem],
    payload: &[u8],
) -> Option<u64> {
    let mut st = CsumStream::default();
    let mut add = |bytes: &[u8]| st.add(bytes);
    for item in items {
        match item {
            PlanItem::Run {
                header,
                start,
                bits,
            } => {
                if *phv.valid.get(*header as usize)? {
                    add(phv.data.get(start / 8..start / 8 + (*bits / 8) as usize)?);
                }
            }
            PlanItem::Const { be, skip, width } => {
                add(be.get((skip / 8) as usize..((skip + width) / 8) as usize)?)
            }
            PlanItem::Header(h) => {
                if *phv.valid.get(*h as usize)? {
                    let off = p.headers.get(*h as usize)?.offset as usize;
                    let n = crate::header_bytes(p, phv, *h) as usize;
                    add(phv.data.get(off..off + n)?);
                }
            }
            PlanItem::Payload => add(payload),
        }
    }
    Some(st.finish())
}

/// An internet checksum over a concatenation of byte strings, summed piece by piece:
/// the pieces that start at an even offset of the concatenation in one sum, those at an
/// odd offset in another, whose folded value is byte-swapped at the end (RFC 1071: the
/// ones'-complement sum commutes with swapping the bytes of every word).
#[derive(Default)]
struct CsumStream {
    sums: [u64; 2],
    /// The bytes so far are an odd number.
    odd: bool,
}

impl CsumStream {
    /// Appends `bytes`.
    #[inline(always)]
    fn add(&mut self, bytes: &[u8]) {
        self.sums[usize::from(self.odd)] += ones_sum(bytes);
        self.odd ^= bytes.len() % 2 == 1;
    }

    /// [`csum16`] of the concatenation.
    fn finish(self) -> u64 {
        let swapped = u64::from((fold16(self.sums[1]) as u16).swap_bytes());
        (!fold16(fold16(self.sums[0]) + swapped)) & 0xffff
    }
}

/// True when the internet checksum of `items` can be summed straight from the PHV: every
/// item is a run that starts on a byte and covers whole 16-bit words, so concatenating
/// the runs never shifts a word (the IPv4 header checksum).
fn csum16_direct(items: &[PlanItem]) -> bool {
    items
        .iter()
        .all(|i| matches!(i, PlanItem::Run { start, bits, .. } if start % 8 == 0 && bits % 16 == 0))
}

/// [`csum16`] of [`build_planned`]'s bytes for a plan with `csum_pieces`, without
/// building them: each piece is one 8-byte load from its first byte (the PHV's padding
/// keeps it in bounds) masked to the piece, added as two 32-bit halves, and the carries
/// above bit 16 are folded back in at the end. A piece of 4 or 2 bytes thus counts
/// 2^32 or 2^48 times its words; both are 1 modulo 2^16 - 1, the checksum's modulus,
/// so no branch on the length is needed.
#[inline(always)]
pub fn csum16_planned(phv: &crate::phv::Phv, pieces: &[CsumPiece]) -> u64 {
    let mut sum: u64 = 0;
    for pc in pieces {
        if !phv.valid.get(pc.header as usize).copied().unwrap_or(false) {
            continue;
        }
        if let Some(w) = phv.load8(pc.byte as usize) {
            let w = w & pc.mask;
            sum += (w >> 32) + (w & 0xffff_ffff);
        }
    }
    csum16_fold(sum)
}

/// Up to four [`CsumPiece`]s of one header within 32 bytes from `base`, as a fixed list
/// (unused ones masked to nothing) of (offset from `base`, at most 24; the piece's mask
/// in little-endian byte order), summed by [`quad_sum_le`] from one bounds-checked
/// [`QUAD_WINDOW`]-byte window without a loop.
#[derive(Debug, Clone, Copy)]
pub struct CsumQuad {
    base: u32,
    pieces: [(u32, u64); 4],
}

/// The [`CsumQuad`] of `pieces` when there are at most four, all of header `h` and
/// within 32 bytes of the first.
pub fn csum_quad(pieces: &[CsumPiece], h: u32) -> Option<CsumQuad> {
    let base = pieces.iter().map(|p| p.byte).min()?;
    if pieces.len() > 4 || pieces.iter().any(|p| p.header != h || p.byte - base > 24) {
        return None;
    }
    let mut q = [(0u32, 0u64); 4];
    for (slot, p) in q.iter_mut().zip(pieces) {
        *slot = (p.byte - base, p.mask.swap_bytes());
    }
    Some(CsumQuad { base, pieces: q })
}

/// Bytes of PHV a [`CsumQuad`] is summed from, from its base: every piece's 8-byte load
/// (offsets at most 24) and a 16-bit checksum field up to offset 38 fit.
pub const QUAD_WINDOW: usize = 40;

/// The [`QUAD_WINDOW`] bytes of `data` from the quad's base (None past the end): the
/// one bounds check of a quad's sum.
#[inline(always)]
pub fn quad_window<'a>(data: &'a [u8], q: &CsumQuad) -> Option<&'a [u8; QUAD_WINDOW]> {
    data.get(q.base as usize..)?.first_chunk::<QUAD_WINDOW>()
}

/// [`quad_window`], writable (for the checksum field in it).
#[inline(always)]
pub fn quad_window_mut<'a>(data: &'a mut [u8], q: &CsumQuad) -> Option<&'a mut [u8; QUAD_WINDOW]> {
    data.get_mut(q.base as usize..)?
        .first_chunk_mut::<QUAD_WINDOW>()
}

/// The internet checksum of the quad's pieces in `win`, with its two bytes swapped: the
/// words are read little-endian (on x86 a plain load, no byte swaps), and the
/// ones'-complement sum commutes with swapping the bytes of every word (RFC 1071), so
/// the result compares with (or is stored as) a field read little-endian.
#[inline(always)]
pub fn quad_sum_le(win: &[u8; QUAD_WINDOW], q: &CsumQuad) -> u16 {
    let mut sum: u64 = 0;
    for &(o, m) in &q.pieces {
        // offsets are at most 24: the mask only lets the compiler see the load in bounds
        let o = (o as usize) & 31;
        let w = win[o..o + 8]
            .first_chunk::<8>()
            .map_or(0, |b| u64::from_le_bytes(*b))
            & m;
        sum += (w >> 32) + (w & 0xffff_ffff);
    }
    // at most 8 halves of 32 bits: ones'-complement additions with end-around carry,
    // 64 -> 32 -> 16 bits, then the complement
    let (s, c) = (sum as u32).overflowing_add((sum >> 32) as u32);
    let s = s + u32::from(c);
    let (t, c) = (s as u16).overflowing_add((s >> 16) as u16);
    !(t + u16::from(c))
}

/// [`csum16_planned`] of a [`CsumQuad`] whose header is valid (None when the window
/// is not in the PHV).
#[inline(always)]
pub fn csum16_quad(phv: &crate::phv::Phv, q: &CsumQuad) -> Option<u64> {
    let win = quad_window(&phv.data, q)?;
    Some(u64::from(quad_sum_le(win, q).swap_bytes()))
}

impl CsumQuad {
    /// The offset from the quad's base of a 16-bit checksum field at PHV byte `byte`,
    /// when it lies in the quad's window.
    pub fn target_offset(&self, byte: u32) -> Option<usize> {
        let o = byte.checked_sub(self.base)? as usize;
        (o + 2 <= QUAD_WINDOW).then_some(o)
    }
}

/// The internet checksum of a sum of 32-bit halves: carries folded in, complemented.
#[inline(always)]
fn csum16_fold(mut sum: u64) -> u64 {
    sum = (sum & 0xffff_ffff) + (sum >> 32);
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    (!sum) & 0xffff
}

/// One piece of a [`FixedInput`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixedPiece {
    /// `len` bytes of the PHV from byte `byte`.
    Phv {
        /// First PHV byte.
        byte: u32,
        /// Bytes.
        len: u32,
    },
    /// One constant byte.
    Byte(u8),
}

/// A calculation's input laid out at load time for packets in which every header it
/// reads is valid: whole bytes at fixed places of the PHV and constant bytes, then the
/// payload when `payload`. With every header in `headers` valid, [`FixedInput::bytes`]
/// (then the payload) is exactly what [`build_planned`] builds, so code generated from
/// it needs no per-packet input building; with one of them invalid the general code
/// decides.
#[derive(Debug, Clone)]
pub struct FixedInput {
    /// The headers that must be valid (sorted, without repeats).
    pub headers: Vec<u32>,
    /// The pieces in order (adjacent PHV runs merged).
    pub pieces: Vec<FixedPiece>,
    /// The payload follows the pieces.
    pub payload: bool,
    /// Bytes of the pieces.
    pub len: u32,
}

/// The [`FixedInput`] of calculation `calc`, when its inputs are whole bytes from byte
/// boundaries (fields, constants, fixed-length headers) and the payload, if any, comes
/// last.
pub fn fixed_input(p: &Program, calc: &Calculation) -> Option<FixedInput> {
    let plan = plan(p, calc)?;
    let mut fi = FixedInput {
        headers: vec![],
        pieces: vec![],
        payload: false,
        len: 0,
    };
    let push_phv = |fi: &mut FixedInput, header: u32, byte: u32, len: u32| {
        fi.headers.push(header);
        if len == 0 {
            return;
        }
        fi.len += len;
        if let Some(FixedPiece::Phv { byte: b, len: l }) = fi.pieces.last_mut()
            && *b + *l == byte
        {
            *l += len;
            return;
        }
        fi.pieces.push(FixedPiece::Phv { byte, len });
    };
    for item in &plan.items {
        if fi.payload || !whole_bytes(item) {
            // something after the payload, or bits across bytes
            return None;
        }
        match item {
            PlanItem::Run {
                header,
                start,
                bits,
            } => push_phv(&mut fi, *header, u32::try_from(start / 8).ok()?, bits / 8),
            PlanItem::Header(h) => {
                let hi = p.headers.get(*h as usize)?;
                if hi.varbit_slot.is_some() {
                    return None;
                }
                push_phv(&mut fi, *h, hi.offset, hi.max_bytes);
            }
            PlanItem::Const { be, skip, width } => {
                for b in be.get((skip / 8) as usize..((skip + width) / 8) as usize)? {
                    fi.pieces.push(FixedPiece::Byte(*b));
                    fi.len += 1;
                }
            }
            PlanItem::Payload => fi.payload = true,
        }
    }
    fi.headers.sort_unstable();
    fi.headers.dedup();
    Some(fi)
}

impl FixedInput {
    /// The pieces' bytes from `phv` (None: a piece is not in it).
    pub fn bytes(&self, phv: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(self.len as usize);
        for pc in &self.pieces {
            match *pc {
                FixedPiece::Phv { byte, len } => {
                    out.extend_from_slice(phv.get(byte as usize..(byte + len) as usize)?)
                }
                FixedPiece::Byte(b) => out.push(b),
            }
        }
        Some(out)
    }

    /// Every piece's PHV byte in order (None for a constant byte): where generated code
    /// loads the input from.
    pub fn sources(&self) -> Vec<Option<u32>> {
        let mut out = Vec::with_capacity(self.len as usize);
        for pc in &self.pieces {
            match *pc {
                FixedPiece::Phv { byte, len } => out.extend((byte..byte + len).map(Some)),
                FixedPiece::Byte(_) => out.push(None),
            }
        }
        out
    }
}

/// A CRC of fixed parameters computed a byte at a time through a 256-entry table in
/// the form generated code runs it: a reflected CRC (`crc16`, `crc32`) shifts its
/// register right, `r = (r >> 8) ^ table[(r ^ byte) & 0xff]`, with no reflection of
/// bytes or result; a plain one (`crcCCITT`) shifts left,
/// `r = ((r << 8) ^ table[((r >> (width - 8)) ^ byte) & 0xff]) & mask`. Both end with
/// `r ^ xor_out`.
#[derive(Debug, Clone, Copy)]
pub struct CrcTable {
    /// The byte table.
    pub table: &'static [u64; 256],
    /// Shifts right (reflected input and output).
    pub reflected: bool,
    /// Width in bits.
    pub width: u32,
    /// The register's initial value (reflected for a reflected CRC).
    pub init: u64,
    /// Final xor.
    pub xor_out: u64,
}

/// A reflected CRC's byte table: each byte value run through the reversed polynomial.
fn crc_table_reflected(params: &CrcParams) -> [u64; 256] {
    let poly = reflect(params.poly, params.width);
    let mut t = [0u64; 256];
    for (b, slot) in t.iter_mut().enumerate() {
        let mut r = b as u64;
        for _ in 0..8 {
            r = if r & 1 != 0 { (r >> 1) ^ poly } else { r >> 1 };
        }
        *slot = r;
    }
    t
}

/// The tables of [`CrcTable`]: `crc16` and `crc32` reflected, `crcCCITT` plain.
static CRC_FAST: std::sync::LazyLock<[[u64; 256]; 3]> = std::sync::LazyLock::new(|| {
    [
        crc_table_reflected(&CrcParams::CRC16),
        crc_table_reflected(&CrcParams::CRC32),
        crc_table(&CrcParams::CCITT),
    ]
});

impl CrcTable {
    /// The table form of `algo`: bmv2's fixed CRCs (`crc16`, `crc32`, `crcCCITT`); None
    /// for the others (a configurable CRC's parameters come from the control plane).
    pub fn of(algo: HashAlgo) -> Option<CrcTable> {
        let (params, i) = match algo {
            HashAlgo::Crc16 => (CrcParams::CRC16, 0),
            HashAlgo::Crc32 => (CrcParams::CRC32, 1),
            HashAlgo::CrcCcitt => (CrcParams::CCITT, 2),
            _ => return None,
        };
        let table = &CRC_FAST[i];
        let m = mask_bits(params.width);
        match (params.refin, params.refout) {
            (true, true) => Some(CrcTable {
                table,
                reflected: true,
                width: params.width,
                init: reflect(params.init & m, params.width),
                xor_out: params.xor_out & m,
            }),
            (false, false) => Some(CrcTable {
                table,
                reflected: false,
                width: params.width,
                init: params.init & m,
                xor_out: params.xor_out & m,
            }),
            _ => None,
        }
    }

    /// The register after byte `b`.
    #[inline(always)]
    pub fn step(&self, r: u64, b: u8) -> u64 {
        if self.reflected {
            (r >> 8) ^ self.table[((r ^ u64::from(b)) & 0xff) as usize]
        } else {
            let i = ((r >> (self.width - 8)) ^ u64::from(b)) & 0xff;
            ((r << 8) ^ self.table[i as usize]) & mask_bits(self.width)
        }
    }

    /// The CRC of `data` ([`crc`] of the same parameters).
    pub fn run(&self, data: &[u8]) -> u64 {
        let r = data.iter().fold(self.init, |r, &b| self.step(r, b));
        r ^ self.xor_out
    }
}

/// The low `width` bits set (`width` in 1..=64).
fn mask_bits(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// [`ones_sum`] of a packet's payload: the sum, not folded, that an internet checksum
/// over a fixed input followed by the payload adds for the payload (generated code sums
/// the fixed part itself).
pub fn payload_ones_sum(payload: &[u8]) -> u64 {
    ones_sum(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflect_reverses_the_low_bits() {
        for w in 1..=64u32 {
            for v in [0u64, 1, 0x8005, 0x1234_5678_9abc_def0, u64::MAX] {
                let v = if w == 64 { v } else { v & ((1 << w) - 1) };
                let mut r = 0;
                for i in 0..w {
                    if v & (1 << i) != 0 {
                        r |= 1 << (w - 1 - i);
                    }
                }
                assert_eq!(reflect(v, w), r, "width {w}, {v:#x}");
            }
        }
    }

    #[test]
    fn csum_stream_is_csum16_of_the_concatenation() {
        // pieces of every length and parity, zeros and all-ones included
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..2000 {
            let n = (next() % 120) as usize;
            let data: Vec<u8> = (0..n)
                .map(|i| match round % 4 {
                    0 => 0,
                    1 => 0xff,
                    _ => (next() >> (i % 8)) as u8,
                })
                .collect();
            let mut st = CsumStream::default();
            let mut at = 0;
            while at < n {
                let take = ((next() % 12) as usize).min(n - at);
                st.add(&data[at..at + take]);
                at += take;
            }
            assert_eq!(st.finish(), csum16(&data), "round {round}: {data:?}");
        }
    }

    /// The table CRCs in the form generated code runs them (reflected ones shifting
    /// right, no byte reflection) equal the byte-wise and bit-wise CRCs.
    #[test]
    fn crc_tables_equal_reference_crcs() {
        assert_eq!(
            CrcTable::of(HashAlgo::Crc16).unwrap().run(b"123456789"),
            0xBB3D
        );
        assert_eq!(
            CrcTable::of(HashAlgo::Crc32).unwrap().run(b"123456789"),
            0xCBF4_3926
        );
        assert_eq!(
            CrcTable::of(HashAlgo::CrcCcitt).unwrap().run(b"123456789"),
            0x29B1
        );
        assert!(CrcTable::of(HashAlgo::Crc16Custom).is_none());
        assert!(CrcTable::of(HashAlgo::Csum16).is_none());
    }

    proptest::proptest! {
        #[test]
        fn crc_table_forms_equal_bitwise(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80)) {
            for (algo, params) in [
                (HashAlgo::Crc16, CrcParams::CRC16),
                (HashAlgo::Crc32, CrcParams::CRC32),
                (HashAlgo::CrcCcitt, CrcParams::CCITT),
            ] {
                let t = CrcTable::of(algo).unwrap();
                proptest::prop_assert_eq!(t.run(&data), crc_bitwise(&params, &data));
                proptest::prop_assert_eq!(t.run(&data), run(algo, &data, None));
            }
        }

        /// The payload's unfolded sum, folded and complemented, is the checksum of the
        /// payload, at every length and parity; and appended at an odd offset it is
        /// byte-swapped (what generated code does after an odd fixed input).
        #[test]
        fn payload_sum_is_the_checksum(
            head in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..9),
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            fill in 0u8..3,
        ) {
            let data: Vec<u8> = match fill {
                0 => data,
                1 => vec![0xff; data.len()],
                _ => vec![0; data.len()],
            };
            proptest::prop_assert_eq!((!fold16(payload_ones_sum(&data))) & 0xffff, csum16(&data));
            let mut st = CsumStream::default();
            st.add(&head);
            st.add(&data);
            let whole = [head.clone(), data.clone()].concat();
            proptest::prop_assert_eq!(st.finish(), csum16(&whole));
            let p = fold16(payload_ones_sum(&data));
            let p = if head.len() % 2 == 1 { u64::from((p as u16).swap_bytes()) } else { p };
            let h = fold16(ones_sum(&head));
            proptest::prop_assert_eq!((!fold16(h + p)) & 0xffff, csum16(&whole));
        }
    }

    #[test]
    fn check_values() {
        // standard check values over "123456789"
        let d = b"123456789";
        assert_eq!(crc(&CrcParams::CRC16, d), 0xBB3D);
        assert_eq!(crc(&CrcParams::CRC32, d), 0xCBF4_3926);
        assert_eq!(crc(&CrcParams::CCITT, d), 0x29B1);
        assert_eq!(crc(&CrcParams::CRC8, d), 0xF4);
    }

    /// The table CRCs equal the bitwise ones on random data of every length to 40.
    #[test]
    fn table_crcs_equal_bitwise() {
        let mut x = 0x1234_5678_9abc_def0u64;
        for len in 0..40 {
            let data: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            for p in [CrcParams::CRC16, CrcParams::CRC32, CrcParams::CCITT] {
                assert_eq!(crc(&p, &data), crc_bitwise(&p, &data), "{p:?} {data:?}");
            }
        }
    }

    #[test]
    fn internet_checksum() {
        // RFC 1071 example
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(csum16(&d), !0xddf2u64 & 0xffff);
        assert_eq!(csum16(&[0xff, 0xff]), 0);
    }

    /// The quad's sum (little-endian loads, carries folded 64 -> 32 -> 16 without a
    /// loop) equals the byte-wise checksum, at the extremes (all ones: every fold
    /// carries) and on random headers, and its byte-swapped form compares with a field
    /// read little-endian.
    #[test]
    fn quad_sum_equals_bytewise_checksum() {
        // an IPv4 header's pieces: bytes 0..10 and 12..20 (the checksum at 10 left out)
        let at = 5u32;
        let pieces = [
            CsumPiece {
                header: 0,
                byte: at,
                mask: u64::MAX,
            },
            CsumPiece {
                header: 0,
                byte: at + 8,
                mask: 0xffff << 48,
            },
            CsumPiece {
                header: 0,
                byte: at + 12,
                mask: u64::MAX,
            },
        ];
        let q = csum_quad(&pieces, 0).unwrap();
        assert_eq!(q.target_offset(at + 10), Some(10));
        assert_eq!(q.target_offset(at - 1), None);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for round in 0..2000 {
            let mut phv = crate::phv::Phv::zeroed(64);
            for (i, b) in phv.data.iter_mut().enumerate() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = match round {
                    0 => 0xff,
                    1 => 0,
                    2 => (i as u8) | 0xf0,
                    _ => x as u8,
                };
            }
            let a = at as usize;
            let bytes = [&phv.data[a..a + 10], &phv.data[a + 12..a + 20]].concat();
            let want = csum16(&bytes);
            assert_eq!(csum16_quad(&phv, &q), Some(want), "round {round}");
            let win = quad_window(&phv.data, &q).unwrap();
            assert_eq!(u64::from(quad_sum_le(win, &q).swap_bytes()), want);
        }
        // too close to the end of the PHV for the window: no quick sum
        let phv = crate::phv::Phv::zeroed(0);
        assert!(quad_window(&phv.data, &q).is_none());
    }
}
