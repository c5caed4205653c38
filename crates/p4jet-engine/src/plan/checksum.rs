//! Checksum plans: an internet checksum summed straight from the PHV into a field with a
//! 64-bit window, under no condition or a planned one (the IPv4 header checksum).

use p4jet_ir::Program;
use p4jet_ir::expr::FieldRef;

use crate::hash;
use crate::phv::Window64;
use crate::plan::Cond;
use crate::plan::control::CondTest;

/// A checksum verified or updated without the general code: an internet checksum
/// summed straight from the PHV (`hash::csum16_planned`) into a field with a 64-bit
/// window, under no condition or one with a load-time form (the IPv4 header checksum).
#[derive(Debug, Clone)]
pub struct Checksum {
    /// The checksum field.
    pub target: Window64,
    /// The target's header: verification skips the checksum when it is invalid.
    pub header: u32,
    /// The condition, unless it is [`Checksum::only_valid`]'s.
    pub cond: Option<Cond>,
    /// The condition is "`header` is valid".
    pub only_valid: bool,
    /// The 16-bit words summed: byte runs of the PHV.
    pub pieces: Box<[hash::CsumPiece]>,
    /// The pieces as a fixed list when they fit one (the IPv4 header checksum's three).
    pub quad: Option<hash::CsumQuad>,
    /// With `quad`: the offset in the quad's window of a target that is a plain
    /// byte-aligned 16-bit field (the IPv4 `hdrChecksum`), compared and stored there
    /// in the byte order the quad's sum comes in.
    pub target16: Option<usize>,
}

/// One checksum verified or updated.
#[derive(Debug, Clone)]
pub enum CsumOp {
    /// Through its plan.
    Planned(Checksum),
    /// By the general code: checksum `index` of the program, its condition tested by
    /// `cond`.
    General {
        /// Index in the program's checksums.
        index: u32,
        /// Its condition.
        cond: Option<CondTest>,
    },
}

/// The program's checksums: those verified after parsing and those updated before
/// deparsing, in program order (a later checksum may cover an earlier one's target).
#[derive(Debug, Clone)]
pub struct ChecksumPlan {
    /// Verified checksums (verification only sets a flag: its order does not matter).
    pub verify: Vec<CsumOp>,
    /// Updated checksums, in program order.
    pub update: Vec<CsumOp>,
    /// Every verified checksum is planned (the parser runs them inline).
    pub verify_planned: bool,
    /// Every updated checksum is planned (the deparser runs them inline).
    pub update_planned: bool,
}

impl ChecksumPlan {
    /// The checksums of `p`, each planned when `plan` and it has a planned form
    /// (calculation plans `calcs`).
    pub(crate) fn new(p: &Program, calcs: &[Option<hash::CalcPlan>], plan: bool) -> ChecksumPlan {
        let (mut verify, mut update) = (vec![], vec![]);
        for (i, ck) in p.checksums.iter().enumerate() {
            let op = match Checksum::of(p, ck, calcs).filter(|_| plan) {
                Some(c) => CsumOp::Planned(c),
                None => CsumOp::General {
                    index: i as u32,
                    cond: ck.cond.map(|c| CondTest::of(p, c, plan)),
                },
            };
            if ck.verify {
                verify.push(op.clone());
            }
            if ck.update {
                update.push(op);
            }
        }
        let planned = |ops: &[CsumOp]| ops.iter().all(|o| matches!(o, CsumOp::Planned(_)));
        ChecksumPlan {
            verify_planned: planned(&verify),
            update_planned: planned(&update),
            verify,
            update,
        }
    }
}

impl Checksum {
    /// The planned form of checksum `ck`, if it has one.
    pub(crate) fn of(
        p: &Program,
        ck: &p4jet_ir::ChecksumInfo,
        plans: &[Option<hash::CalcPlan>],
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
            Some(c) => Some(Cond::of(p, c)?),
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
