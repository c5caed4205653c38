//! Checksum plans: an internet checksum summed straight from the PHV into a field with a
//! 64-bit window, under no condition or a planned one (the IPv4 header checksum).

use p4jet_ir::Program;
use p4jet_ir::expr::FieldRef;

use crate::hash;
use crate::phv::Window64;
use crate::plan::Cond;

/// A checksum verified or updated without the general code: an internet checksum
/// summed straight from the PHV (`hash::csum16_planned`) into a field with a 64-bit
/// window, under no condition or one with a load-time form (the IPv4 header checksum).
#[derive(Debug, Clone)]
pub(crate) struct Checksum {
    pub(crate) target: Window64,
    /// The target's header: verification skips the checksum when it is invalid.
    pub(crate) header: u32,
    /// The condition, unless it is [`Checksum::only_valid`]'s.
    pub(crate) cond: Option<Cond>,
    /// The condition is "`header` is valid".
    pub(crate) only_valid: bool,
    pub(crate) pieces: Box<[hash::CsumPiece]>,
    /// The pieces as a fixed list when they fit one (the IPv4 header checksum's three).
    pub(crate) quad: Option<hash::CsumQuad>,
    /// With `quad`: the offset in the quad's window of a target that is a plain
    /// byte-aligned 16-bit field (the IPv4 `hdrChecksum`), compared and stored there
    /// in the byte order the quad's sum comes in.
    pub(crate) target16: Option<usize>,
}

/// The program's verified and updated checksums in their [`Checksum`] form, in
/// program order.
#[derive(Debug, Clone)]
pub(crate) struct Checksums {
    /// The verified checksums that have a planned form.
    pub(crate) verify: Box<[Checksum]>,
    /// The updated checksums that have a planned form.
    pub(crate) update: Box<[Checksum]>,
    /// The verified checksums without one (their indexes in the program), verified by
    /// the general code after the planned ones (verification only sets a flag: its order
    /// does not matter).
    pub(crate) general_verify: Box<[u32]>,
    /// When some updated checksum has no planned form: every update in program order (a
    /// later checksum may cover an earlier one's target), `Ok(i)` the `i`th of
    /// `update`, `Err(i)` the program's checksum `i` by the general code.
    pub(crate) update_order: Option<Box<[Result<u32, u32>]>>,
}

impl Checksum {
    /// The planned form of checksum `ck`, if it has one.
    pub(crate) fn of(
        p: &Program,
        ck: &p4jet_ir::ChecksumInfo,
        plans: &[Option<hash::CalcPlan>],
        conds: &[Option<Cond>],
    ) -> Option<Checksum> {
        let FieldRef::Static(fid) = ck.target else {
            return None;
        };
        let fi = p.fields.get(fid as usize)?;
        let target = Window64::new(fi.loc);
        if target.n == 0 {
            return None;
        }
        let cond = match ck.cond {
            Some(c) => Some((*conds.get(c as usize)?)?),
            None => None,
        };
        // the condition "the target's header is valid" (p4c's usual one) is the
        // header test both loops make anyway
        let only_valid = cond.is_some_and(|fc| fc.is_valid_of(fi.header));
        let cond = cond.filter(|_| !only_valid);
        let pieces = plans
            .get(ck.calc as usize)?
            .as_ref()?
            .csum_pieces
            .clone()?
            .into_boxed_slice();
        let quad = hash::csum_quad(&pieces, fi.header);
        let plain16 = fi.loc.width == 16 && fi.loc.bit == 0 && fi.loc.own && !fi.loc.signed;
        Some(Checksum {
            target,
            header: fi.header,
            cond,
            only_valid,
            target16: quad
                .as_ref()
                .filter(|_| plain16)
                .and_then(|q| q.target_offset(fi.loc.byte)),
            quad,
            pieces,
        })
    }
}

impl Checksums {
    /// The checksums' planned forms, with the general code for those that have none
    /// (None when no checksum has one).
    pub(crate) fn new(
        p: &Program,
        plans: &[Option<hash::CalcPlan>],
        conds: &[Option<Cond>],
    ) -> Option<Checksums> {
        let (mut verify, mut update) = (vec![], vec![]);
        let (mut general_verify, mut order, mut mixed) = (vec![], vec![], false);
        for (i, ck) in p.checksums.iter().enumerate() {
            let planned = Checksum::of(p, ck, plans, conds);
            if ck.verify {
                match &planned {
                    Some(f) => verify.push(f.clone()),
                    None => general_verify.push(i as u32),
                }
            }
            if ck.update {
                match planned {
                    Some(f) => {
                        order.push(Ok(update.len() as u32));
                        update.push(f);
                    }
                    None => {
                        order.push(Err(i as u32));
                        mixed = true;
                    }
                }
            }
        }
        if verify.is_empty() && update.is_empty() {
            return None;
        }
        Some(Checksums {
            verify: verify.into_boxed_slice(),
            update: update.into_boxed_slice(),
            general_verify: general_verify.into_boxed_slice(),
            update_order: mixed.then(|| order.into_boxed_slice()),
        })
    }
}
