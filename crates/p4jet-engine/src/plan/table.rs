//! Table plans: how each table's key is built from the PHV, where each outcome of an
//! apply leads, and whether a hit counts or meters.

use num_bigint::BigUint;
use p4jet_ir::expr::{FieldRef, HeaderRef};
use p4jet_ir::{FieldLoc, KeySource, Program, TableNext};

use crate::phv;

/// (PHV byte, length) of every byte run of a table key (`Plan::key_runs`).
pub type KeyRuns = Box<[(usize, usize)]>;

/// One key element of a table, ready for key building.
#[derive(Debug, Clone)]
pub enum KeyPart {
    /// A run of PHV bytes copied as is (byte-aligned fields of whole bytes, or metadata
    /// slots whose padding bits are zero; adjacent ones merged).
    Bytes {
        /// First PHV byte.
        byte: usize,
        /// Bytes.
        n: usize,
    },
    /// A field of at most 128 bits, read, masked and written big-endian.
    Field {
        /// The field (read without sign extension).
        loc: FieldLoc,
        /// Key bytes.
        nbytes: usize,
        /// The key element's static mask.
        mask: Option<u128>,
    },
    /// A wider field.
    Wide {
        /// The field.
        loc: FieldLoc,
        /// Key bytes.
        nbytes: usize,
        /// The key element's static mask.
        mask: Option<BigUint>,
    },
    /// A header's validity as one byte.
    Valid(u32),
}

/// Per table of `prog`, its key's parts; with `plan`, fields of whole bytes are byte
/// runs and adjacent runs are merged.
pub(crate) fn key_parts(prog: &Program, plan: bool) -> Vec<Vec<KeyPart>> {
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
                        if plan && k.mask.is_none() && plain && matches!(f, FieldRef::Static(_)) {
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

/// Table `t`'s key as byte runs of at most 16 bytes each (with 16 PHV bytes readable
/// from a run's start), when every part is such a run.
fn key_runs(prog: &Program, key: &[KeyPart]) -> Option<KeyRuns> {
    let phv_len = prog.phv_bytes as usize + phv::PHV_PAD;
    key.iter()
        .map(|part| match part {
            KeyPart::Bytes { byte, n } if *n <= 16 && byte + 16 <= phv_len => Some((*byte, *n)),
            _ => None,
        })
        .collect()
}

/// How a table's key is built.
#[derive(Debug, Clone)]
pub enum Key {
    /// The table has no key.
    Empty,
    /// Byte runs of at most 16 bytes, each copied as one 16-byte move (the excess
    /// overwritten by the next run or left in the slack past the key).
    Runs(KeyRuns),
    /// Parts in key order.
    Parts(Vec<KeyPart>),
}

/// Where a table apply leads.
#[derive(Debug, Clone)]
pub enum ApplyNext {
    /// One next node whatever the outcome (a plain `t.apply()` whose actions all lead
    /// to the same node): no per-packet action-slot search.
    Same(Option<u32>),
    /// `t.apply().hit` / `.miss`.
    HitMiss {
        /// On a hit.
        hit: Option<u32>,
        /// On a miss.
        miss: Option<u32>,
    },
    /// `switch (t.apply().action_run)`: per action slot of the table, its next node;
    /// `default` when no action runs.
    ByAction {
        /// Per action slot.
        slots: Vec<Option<u32>>,
        /// When no action runs (a miss without a default action).
        default: Option<u32>,
    },
}

/// One table's plan.
#[derive(Debug, Clone)]
pub struct TablePlan {
    /// The key.
    pub key: Key,
    /// Where the apply leads.
    pub next: ApplyNext,
    /// The table has a direct counter, a direct meter or entries that age (a hit counts,
    /// meters or records its time).
    pub direct: bool,
}

/// Per table of `prog`, its plan; with `plan`, keys as byte runs and applies whose
/// actions all lead to one node as [`ApplyNext::Same`].
pub(crate) fn tables(prog: &Program, plan: bool) -> Vec<TablePlan> {
    let parts = key_parts(prog, plan);
    prog.tables
        .iter()
        .zip(parts)
        .map(|(t, parts)| {
            let key = if t.key_bytes == 0 {
                Key::Empty
            } else if let Some(runs) = key_runs(prog, &parts).filter(|_| plan) {
                Key::Runs(runs)
            } else {
                Key::Parts(parts)
            };
            let next = match &t.next {
                TableNext::ByAction(v) if plan && v.iter().all(|n| *n == t.base_default_next) => {
                    ApplyNext::Same(t.base_default_next)
                }
                TableNext::ByAction(v) => ApplyNext::ByAction {
                    slots: v.clone(),
                    default: t.base_default_next,
                },
                TableNext::HitMiss { hit, miss } => ApplyNext::HitMiss {
                    hit: *hit,
                    miss: *miss,
                },
            };
            TablePlan {
                key,
                next,
                direct: t.direct_counter.is_some() || t.direct_meter.is_some() || t.support_timeout,
            }
        })
        .collect()
}
