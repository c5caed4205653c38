//! Counters, meters, registers and parser value sets.
//!
//! Counters, meters and registers are extern state, written by packets too (atomics
//! and short critical sections, not the control state): their writes are checked
//! when a batch is prepared and made after it is published ([`Later`]).

use std::sync::Mutex;

use num_bigint::BigUint;
use p4jet_engine::Op;
use p4jet_engine::state::{MeterCell, handle_index};
use p4jet_runtime::bmv2::{
    Bmv2Code, CounterOperationErrorCode as CC, MeterOperationErrorCode as MC,
    ParseVSetOperationErrorCode as VC, RegisterOperationErrorCode as RC,
};
use p4jet_runtime::{
    Applied, Bytes, CounterId, CounterValue, DigestConfig, MeterConfig, MeterId, MeterRate,
    RegisterId, RuntimeError, Update, ValueSetId,
};

use super::{BatchCtx, Done, Prepared};
use crate::Switch;

/// A write made after the batch's publication.
pub(crate) enum Later {
    /// An entry's direct counter (the entry's handle comes from the batch).
    DirectCounter { table: u32, value: CounterValue },
    /// An entry's direct meter.
    DirectMeter { table: u32, config: MeterConfig },
    /// Every direct counter of a table.
    ResetDirectCounters { table: u32 },
    /// A counter cell.
    Counter {
        counter: usize,
        index: usize,
        value: CounterValue,
    },
    /// Every cell of a counter.
    ResetCounter { counter: usize },
    /// Meter cells (None: all).
    Meter {
        meter: usize,
        index: Option<usize>,
        config: MeterConfig,
    },
    /// Register cells `start..end`.
    Register {
        register: usize,
        start: usize,
        end: usize,
        value: BigUint,
    },
    /// Every cell of a register.
    ResetRegister { register: usize },
    /// A digest's configuration (by JSON list id).
    DigestConfig { list_id: u32, config: DigestConfig },
    /// A digest acknowledgement.
    DigestAck {
        list_id: u32,
        buffer: u64,
        samples: Option<Vec<u32>>,
    },
}

impl Later {
    pub(crate) fn what(&self, sw: &Switch) -> String {
        match self {
            Later::DirectCounter { table, .. }
            | Later::DirectMeter { table, .. }
            | Later::ResetDirectCounters { table } => sw.table_what(*table).to_string(),
            Later::Counter { .. } | Later::ResetCounter { .. } => "counter".into(),
            Later::Meter { .. } => "meter".into(),
            Later::Register { .. } | Later::ResetRegister { .. } => "register".into(),
            Later::DigestConfig { .. } | Later::DigestAck { .. } => "digest".into(),
        }
    }
}

/// bmv2's `Meter::set_rates` checks: exactly `rate_count` rates (`BAD_RATES_LIST`),
/// information rates non-decreasing, committed first (`INVALID_INFO_RATE_VALUE`). No
/// rates at all: the meter goes back to unconfigured.
pub(crate) fn check_rates(
    what: &str,
    rate_count: u32,
    c: &MeterConfig,
) -> Result<(), RuntimeError> {
    if c.rates.is_empty() {
        return Ok(());
    }
    if c.rates.len() != rate_count as usize {
        return Err(Bmv2Code::Meter(MC::BAD_RATES_LIST).error(format!(
            "{what}: {} rates given, the meter has {rate_count}",
            c.rates.len()
        )));
    }
    if c.rates
        .windows(2)
        .any(|w| w[0].units_per_us > w[1].units_per_us)
    {
        return Err(Bmv2Code::Meter(MC::INVALID_INFO_RATE_VALUE).error(format!(
            "{what}: information rates must not decrease (committed first)"
        )));
    }
    if c.rates
        .iter()
        .any(|r| !r.units_per_us.is_finite() || r.units_per_us < 0.0)
    {
        return Err(Bmv2Code::Meter(MC::INVALID_INFO_RATE_VALUE)
            .error(format!("{what}: a rate is not a non-negative number")));
    }
    Ok(())
}

/// Configures one meter cell.
fn set_cell(cell: &Mutex<MeterCell>, c: &MeterConfig, now_us: u64) -> Result<(), RuntimeError> {
    let mut m = cell
        .lock()
        .map_err(|_| RuntimeError::internal("meter lock poisoned"))?;
    if c.rates.is_empty() {
        *m = MeterCell::default();
    } else {
        m.set_rates(
            c.rates.iter().map(|r| (r.units_per_us, r.burst)).collect(),
            now_us,
        );
    }
    Ok(())
}

/// One meter cell's configuration.
pub(crate) fn meter_config(
    what: &str,
    cell: &Mutex<MeterCell>,
) -> Result<MeterConfig, RuntimeError> {
    let c = cell
        .lock()
        .map_err(|_| RuntimeError::internal(format!("{what}: meter lock poisoned")))?;
    Ok(MeterConfig {
        rates: c
            .rates
            .iter()
            .map(|(r, b)| MeterRate {
                units_per_us: *r,
                burst: *b,
            })
            .collect(),
    })
}

/// The low `width` bits of a big-endian value.
fn register_value(value: &[u8], width: u32) -> BigUint {
    BigUint::from_bytes_be(&p4jet_runtime::schema::fit(value, width))
}

impl Switch {
    /// An indexed counter (direct counters are read through their table:
    /// `INVALID_COUNTER_NAME`, as in bmv2).
    fn counter_index(&self, c: CounterId) -> Result<usize, RuntimeError> {
        match self.engine.prog.counters.get(c.index()) {
            Some(ci) if ci.direct_table.is_none() => Ok(c.index()),
            Some(ci) => Err(Bmv2Code::Counter(CC::INVALID_COUNTER_NAME).error(format!(
                "counter {} is a direct counter: read it through its table",
                ci.name
            ))),
            None => {
                Err(Bmv2Code::Counter(CC::INVALID_COUNTER_NAME)
                    .error(format!("no counter {}", c.0)))
            }
        }
    }

    /// A meter's cells (a direct meter's: its table's, by entry slot) and rate count.
    fn meter_cells(&self, m: MeterId) -> Result<(&[Mutex<MeterCell>], u32, String), RuntimeError> {
        let prog = &self.engine.prog;
        let info = prog.meters.get(m.index()).ok_or_else(|| {
            Bmv2Code::Meter(MC::INVALID_METER_NAME).error(format!("no meter {}", m.0))
        })?;
        let cells = match &info.direct {
            Some((t, _)) => self
                .externs
                .direct_meters
                .get(*t as usize)
                .and_then(|c| c.as_deref()),
            None => self.externs.meters.get(m.index()).map(|c| &**c),
        };
        Ok((
            cells.unwrap_or(&[]),
            info.rate_count,
            format!("meter {}", info.name),
        ))
    }

    fn register_index(&self, r: RegisterId) -> Result<(usize, u32, usize, String), RuntimeError> {
        let info = self.engine.prog.registers.get(r.index()).ok_or_else(|| {
            Bmv2Code::Register(RC::INVALID_REGISTER_NAME).error(format!("no register {}", r.0))
        })?;
        let len = self.externs.registers.get(r.index()).map_or(0, |a| a.len());
        Ok((
            r.index(),
            info.width,
            len,
            format!("register {}", info.name),
        ))
    }

    /// A value set value: exactly `ceil(width / 8)` bytes (bmv2 aborts on any other
    /// length), bits above the width cleared.
    fn vset_value(&self, vs: ValueSetId, value: &[u8]) -> Result<(u32, Vec<u8>), RuntimeError> {
        let info = self.engine.prog.value_sets.get(vs.index()).ok_or_else(|| {
            Bmv2Code::ParseVSet(VC::INVALID_PARSE_VSET_NAME).error(format!("no value set {}", vs.0))
        })?;
        let nb = info.width.div_ceil(8) as usize;
        if value.len() != nb {
            return Err(Bmv2Code::ParseVSet(VC::ERROR).error(format!(
                "value set {}: a value of {} bytes, the set's values have {nb}",
                info.name,
                value.len()
            )));
        }
        Ok((vs.0, p4jet_runtime::schema::fit(value, info.width)))
    }

    pub(crate) fn prepare_extern(
        &mut self,
        _ctx: &mut BatchCtx,
        u: Update,
    ) -> Result<Prepared, RuntimeError> {
        let later = |l| Ok(Prepared::none(Done::Later(l)));
        match u {
            Update::WriteCounter {
                counter,
                index,
                value,
            } => {
                let c = self.counter_index(counter)?;
                let size = self.externs.counters.get(c).map_or(0, |x| x.len());
                if index as usize >= size {
                    return Err(Bmv2Code::Counter(CC::INVALID_INDEX).error(format!(
                        "counter {}: index {index} past its {size} cells",
                        self.engine.prog.counters[c].name
                    )));
                }
                later(Later::Counter {
                    counter: c,
                    index: index as usize,
                    value,
                })
            }
            Update::ResetCounter { counter } => {
                let c = self.counter_index(counter)?;
                later(Later::ResetCounter { counter: c })
            }
            Update::SetMeter {
                meter,
                index,
                config,
            } => {
                let (cells, rate_count, what) = self.meter_cells(meter)?;
                if let Some(i) = index
                    && i as usize >= cells.len()
                {
                    return Err(Bmv2Code::Meter(MC::INVALID_INDEX)
                        .error(format!("{what}: index {i} past its {} cells", cells.len())));
                }
                check_rates(&what, rate_count, &config)?;
                later(Later::Meter {
                    meter: meter.index(),
                    index: index.map(|i| i as usize),
                    config,
                })
            }
            Update::WriteRegister {
                register,
                start,
                end,
                value,
            } => {
                let (r, width, len, what) = self.register_index(register)?;
                let (start, end) = (start as usize, end as usize);
                if end > len || start > end {
                    return Err(Bmv2Code::Register(RC::INVALID_INDEX)
                        .error(format!("{what}: cells {start}..{end} of {len}")));
                }
                later(Later::Register {
                    register: r,
                    start,
                    end,
                    value: register_value(&value, width),
                })
            }
            Update::ResetRegister { register } => {
                let (r, ..) = self.register_index(register)?;
                later(Later::ResetRegister { register: r })
            }
            Update::AddValueSetMember { value_set, value } => {
                let (vset, value) = self.vset_value(value_set, &value)?;
                Ok(Prepared::op(
                    Op::VsetAdd { vset, value },
                    Done::Applied(Applied::Done),
                ))
            }
            Update::RemoveValueSetMember { value_set, value } => {
                let (vset, value) = self.vset_value(value_set, &value)?;
                Ok(Prepared::op(
                    Op::VsetRemove { vset, value },
                    Done::Applied(Applied::Done),
                ))
            }
            Update::ClearValueSet { value_set } => {
                let (vset, _) = self.vset_value(
                    value_set,
                    &vec![
                        0;
                        self.engine
                            .prog
                            .value_sets
                            .get(value_set.index())
                            .map_or(0, |v| v.width.div_ceil(8) as usize)
                    ],
                )?;
                Ok(Prepared::op(
                    Op::VsetClear(vset),
                    Done::Applied(Applied::Done),
                ))
            }
            _ => Err(RuntimeError::internal("not an extern update")),
        }
    }

    /// Makes a write prepared for after the publication (`h`: the handle the batch
    /// found for an entry).
    pub(crate) fn later(&mut self, l: Later, h: Option<u32>) -> Result<Applied, RuntimeError> {
        let now = self.clock.now_us();
        match l {
            Later::DirectCounter { table, value } => {
                let h = h.ok_or_else(|| RuntimeError::internal("no entry handle"))?;
                if let Some(Some(cells)) = self.externs.direct_counters.get(table as usize)
                    && let Some(c) = cells.get(handle_index(h))
                {
                    c.write(value.bytes, value.packets);
                }
            }
            Later::DirectMeter { table, config } => {
                let h = h.ok_or_else(|| RuntimeError::internal("no entry handle"))?;
                let cell = self
                    .externs
                    .direct_meters
                    .get(table as usize)
                    .and_then(|c| c.as_ref())
                    .and_then(|c| c.get(handle_index(h)))
                    .ok_or_else(|| RuntimeError::internal("direct meter cell missing"))?;
                set_cell(cell, &config, now)?;
            }
            Later::ResetDirectCounters { table } => {
                if let Some(Some(cells)) = self.externs.direct_counters.get(table as usize) {
                    cells.iter().for_each(|c| c.write(0, 0));
                }
            }
            Later::Counter {
                counter,
                index,
                value,
            } => {
                if let Some(c) = self
                    .externs
                    .counters
                    .get(counter)
                    .and_then(|x| x.get(index))
                {
                    c.write(value.bytes, value.packets);
                }
            }
            Later::ResetCounter { counter } => {
                if let Some(cells) = self.externs.counters.get(counter) {
                    cells.iter().for_each(|x| x.write(0, 0));
                }
            }
            Later::Meter {
                meter,
                index,
                config,
            } => {
                let (cells, ..) = self.meter_cells(MeterId(meter as u32))?;
                match index {
                    Some(i) => {
                        if let Some(c) = cells.get(i) {
                            set_cell(c, &config, now)?;
                        }
                    }
                    None => {
                        for c in cells {
                            set_cell(c, &config, now)?;
                        }
                    }
                }
            }
            Later::Register {
                register,
                start,
                end,
                value,
            } => {
                if let Some(arr) = self.externs.registers.get(register) {
                    for i in start..end {
                        arr.write(i, &value);
                    }
                }
            }
            Later::ResetRegister { register } => {
                if let Some(a) = self.externs.registers.get(register) {
                    a.reset();
                }
            }
            Later::DigestConfig { list_id, config } => self.configure_digest(list_id, config),
            Later::DigestAck {
                list_id,
                buffer,
                samples,
            } => self.ack_digest(list_id, buffer, samples.as_deref()),
        }
        Ok(Applied::Done)
    }

    pub(crate) fn read_counters(
        &self,
        counter: CounterId,
        start: u32,
        end: u32,
    ) -> Result<Vec<CounterValue>, RuntimeError> {
        self.need_schema()?;
        let c = self.counter_index(counter)?;
        let cells = self.externs.counters.get(c).map_or(&[][..], |x| &x[..]);
        let (s, e) = (start as usize, end as usize);
        if e > cells.len() || s > e {
            return Err(Bmv2Code::Counter(CC::INVALID_INDEX).error(format!(
                "counter {}: cells {s}..{e} of {}",
                self.engine.prog.counters[c].name,
                cells.len()
            )));
        }
        Ok(cells[s..e]
            .iter()
            .map(|x| {
                let (bytes, packets) = x.read();
                CounterValue { bytes, packets }
            })
            .collect())
    }

    pub(crate) fn read_meter(
        &self,
        meter: MeterId,
        index: u32,
    ) -> Result<MeterConfig, RuntimeError> {
        self.need_schema()?;
        let (cells, _, what) = self.meter_cells(meter)?;
        let cell = cells.get(index as usize).ok_or_else(|| {
            Bmv2Code::Meter(MC::INVALID_INDEX).error(format!(
                "{what}: index {index} past its {} cells",
                cells.len()
            ))
        })?;
        meter_config(&what, cell)
    }

    pub(crate) fn read_registers(
        &self,
        register: RegisterId,
        start: u32,
        end: u32,
    ) -> Result<Vec<Bytes>, RuntimeError> {
        self.need_schema()?;
        let (r, width, len, what) = self.register_index(register)?;
        let (s, e) = (start as usize, end as usize);
        if e > len || s > e {
            return Err(Bmv2Code::Register(RC::INVALID_INDEX)
                .error(format!("{what}: cells {s}..{e} of {len}")));
        }
        let arr = self
            .externs
            .registers
            .get(r)
            .ok_or_else(|| RuntimeError::internal(format!("{what}: no cells")))?;
        Ok((s..e)
            .map(|i| {
                let v = arr.read(i).unwrap_or_default();
                p4jet_runtime::schema::fit(&v.to_bytes_be(), width)
            })
            .collect())
    }

    pub(crate) fn read_value_set(&self, vs: ValueSetId) -> Result<Vec<Bytes>, RuntimeError> {
        self.need_schema()?;
        if self.engine.prog.value_sets.get(vs.index()).is_none() {
            return Err(Bmv2Code::ParseVSet(VC::INVALID_PARSE_VSET_NAME)
                .error(format!("no value set {}", vs.0)));
        }
        self.read_cs(|cs| cs.value_sets.get(vs.index()).cloned().unwrap_or_default())
    }
}
