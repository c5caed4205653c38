//! Table plans: how each table's key is built from the PHV, and which tables lead to
//! one next node whatever action runs.

use num_bigint::BigUint;
use p4jet_ir::expr::{FieldRef, HeaderRef};
use p4jet_ir::{FieldLoc, KeySource, Program, TableNext};

use crate::phv;

/// (PHV byte, length) of every byte run of a table key (`Plan::key_runs`).
pub(crate) type KeyRuns = Box<[(usize, usize)]>;

/// One key element of a table, ready for key building.
#[derive(Debug, Clone)]
pub(crate) enum KeyPart {
    /// A run of PHV bytes copied as is (byte-aligned fields of whole bytes, or metadata
    /// slots whose padding bits are zero; adjacent ones merged).
    Bytes { byte: usize, n: usize },
    /// A field of at most 128 bits, read, masked and written big-endian.
    Field {
        loc: FieldLoc,
        nbytes: usize,
        mask: Option<u128>,
    },
    /// A wider field.
    Wide {
        loc: FieldLoc,
        nbytes: usize,
        mask: Option<BigUint>,
    },
    /// A header's validity as one byte.
    Valid(u32),
}

/// Per table of `prog`, its key's parts (adjacent byte runs merged).
pub(crate) fn key_parts(prog: &Program) -> Vec<Vec<KeyPart>> {
    prog.tables
        .iter()
        .map(|t| {
            t.keys
                .iter()
                .map(|k| match &k.source {
                    KeySource::Valid(HeaderRef::Static(h)) => KeyPart::Valid(*h),
                    KeySource::Valid(_) => KeyPart::Valid(0),
                    KeySource::Field(f) => {
                        let fid = match f {
                            FieldRef::Static(f) => *f,
                            FieldRef::Dyn { .. } => 0,
                        };
                        let loc = prog.fields[fid as usize].loc;
                        let nbytes = k.width.div_ceil(8) as usize;
                        let plain = loc.nbytes as usize == nbytes
                            && loc.width == k.width
                            && (loc.own || (loc.bit == 0 && loc.width.is_multiple_of(8)));
                        if k.mask.is_none() && plain && matches!(f, FieldRef::Static(_)) {
                            KeyPart::Bytes {
                                byte: loc.byte as usize,
                                n: nbytes,
                            }
                        } else if k.width <= 128 {
                            let mask = k.mask.as_ref().map(|m| {
                                let d = m.to_u64_digits();
                                (d.first().copied().unwrap_or(0) as u128)
                                    | ((d.get(1).copied().unwrap_or(0) as u128) << 64)
                            });
                            KeyPart::Field {
                                loc: FieldLoc {
                                    signed: false,
                                    ..loc
                                },
                                nbytes,
                                mask,
                            }
                        } else {
                            KeyPart::Wide {
                                loc,
                                nbytes,
                                mask: k.mask.clone(),
                            }
                        }
                    }
                })
                .fold(Vec::new(), |mut plan: Vec<KeyPart>, part| {
                    // merge a byte run that continues the previous one
                    if let (Some(KeyPart::Bytes { byte, n }), KeyPart::Bytes { byte: b2, n: n2 }) =
                        (plan.last_mut(), &part)
                        && *byte + *n == *b2
                    {
                        *n += *n2;
                        return plan;
                    }
                    plan.push(part);
                    plan
                })
        })
        .collect()
}

/// Per table, its key as byte runs of at most 16 bytes each (with 16 PHV bytes
/// readable from a run's start), when every part is such a run.
pub(crate) fn key_runs(prog: &Program, keys: &[Vec<KeyPart>]) -> Vec<Option<KeyRuns>> {
    let phv_len = prog.phv_bytes as usize + phv::PHV_PAD;
    keys.iter()
        .map(|plan| {
            plan.iter()
                .map(|part| match part {
                    KeyPart::Bytes { byte, n } if *n <= 16 && byte + 16 <= phv_len => {
                        Some((*byte, *n))
                    }
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// Per table: Some(next) when every action (and no action) leads to the same next node.
pub(crate) fn same_next(prog: &Program) -> Vec<Option<Option<u32>>> {
    prog.tables
        .iter()
        .map(|t| match &t.next {
            TableNext::ByAction(v) if v.iter().all(|n| *n == t.base_default_next) => {
                Some(t.base_default_next)
            }
            _ => None,
        })
        .collect()
}
