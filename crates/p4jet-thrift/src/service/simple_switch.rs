//! The `simple_switch` service: mirroring sessions, egress queues, the clock.

use p4jet_runtime::{
    CloneSession, CloneTarget, QueueSelector, QueueSetting, RuntimeError, Update, WriteMode,
};

use super::{Bmv2, Reply, Rpc, ret, ret_void};
use crate::codec::{self, Fields, MethodSpec};
use crate::protocol::Value;
use crate::types::*;

/// Largest mirroring session id.
const MAX_MIRROR_SESSION_ID: i32 = 0x7fff;

/// A negative priority or port is out of range (bmv2 throws `std::out_of_range`).
fn unsigned(v: i32, what: &str) -> Rpc<u32> {
    u32::try_from(v).map_err(|_| RuntimeError::out_of_range(format!("negative {what} {v}")))
}

#[allow(missing_docs)]
impl Bmv2<'_> {
    pub fn mirroring_session_add(
        &mut self,
        mirror_id: i32,
        config: MirroringSessionConfig,
    ) -> Rpc<()> {
        if !(0..=MAX_MIRROR_SESSION_ID).contains(&mirror_id) {
            // simple_switch logs "mirror_id out of range" and reports success
            tracing::warn!("mirror_id {mirror_id} out of range: no session added");
            return Ok(());
        }
        self.apply(Update::WriteCloneSession {
            mode: WriteMode::Upsert,
            session: CloneSession {
                id: mirror_id as u32,
                target: CloneTarget::Bmv2 {
                    port: config.port.map(|p| p as u32),
                    mgid: config.mgid.map(|g| g as u32),
                },
                class_of_service: 0,
                packet_length_bytes: 0,
            },
        })
        .map(drop)
    }

    pub fn mirroring_session_delete(&mut self, mirror_id: i32) -> Rpc<()> {
        let id = u32::try_from(mirror_id).unwrap_or(u32::MAX);
        self.apply(Update::DeleteCloneSession { id }).map(drop)
    }

    pub fn mirroring_session_get(&mut self, mirror_id: i32) -> Rpc<MirroringSessionConfig> {
        let id = u32::try_from(mirror_id).unwrap_or(u32::MAX);
        let s = self.rt.clone_session(id)?;
        Ok(match s.target {
            CloneTarget::Bmv2 { port, mgid } => MirroringSessionConfig {
                port: port.map(|p| p as i32),
                mgid: mgid.map(|g| g as i32),
            },
            // a P4Runtime session: one plain copy shows as its port
            CloneTarget::Replicas(r) => MirroringSessionConfig {
                port: match r.as_slice() {
                    [one] if one.instance == 0 => Some(one.port as i32),
                    _ => None,
                },
                mgid: None,
            },
        })
    }

    /// Deprecated RPC: a session to a port. simple_switch returns the result of
    /// `mirroring_add_session`: 1 when the session was added, 0 when the id is out of
    /// range.
    pub fn mirroring_mapping_add(&mut self, mirror_id: i32, egress_port: i32) -> Rpc<i32> {
        if !(0..=MAX_MIRROR_SESSION_ID).contains(&mirror_id) {
            return Ok(0);
        }
        let config = MirroringSessionConfig {
            port: Some(egress_port),
            mgid: None,
        };
        self.mirroring_session_add(mirror_id, config)
            .map(|()| 1)
            .map_err(|e| RuntimeError { bmv2: None, ..e })
    }

    /// Deprecated RPC: 1 when the session existed, 0 otherwise.
    pub fn mirroring_mapping_delete(&mut self, mirror_id: i32) -> Rpc<i32> {
        match self.mirroring_session_delete(mirror_id) {
            Ok(()) => Ok(1),
            Err(e) if e.bmv2.is_some() => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// Deprecated RPC: the session's port, or -1.
    pub fn mirroring_mapping_get_egress_port(&mut self, mirror_id: i32) -> Rpc<i32> {
        match self.mirroring_session_get(mirror_id) {
            Ok(c) => Ok(c.port.unwrap_or(-1)),
            Err(e) if e.bmv2.is_some() => Ok(-1),
            Err(e) => Err(e),
        }
    }

    fn queue(&mut self, which: QueueSelector, setting: QueueSetting) -> Rpc<i32> {
        self.rt.set_queue(which, setting).map(|()| 0)
    }

    pub fn set_egress_queue_depth(&mut self, port_num: i32, depth_pkts: i32) -> Rpc<i32> {
        self.queue(
            QueueSelector::Port(port_num as u32),
            QueueSetting::Depth(depth_pkts as u32),
        )
    }

    pub fn set_egress_priority_queue_depth(
        &mut self,
        port_num: i32,
        priority: i32,
        depth_pkts: i32,
    ) -> Rpc<i32> {
        let p = unsigned(priority, "priority queue")?;
        self.queue(
            QueueSelector::Priority(port_num as u32, p),
            QueueSetting::Depth(depth_pkts as u32),
        )
    }

    pub fn set_all_egress_queue_depths(&mut self, depth_pkts: i32) -> Rpc<i32> {
        self.queue(QueueSelector::All, QueueSetting::Depth(depth_pkts as u32))
    }

    pub fn set_egress_queue_rate(&mut self, port_num: i32, rate_pps: i64) -> Rpc<i32> {
        self.queue(
            QueueSelector::Port(port_num as u32),
            QueueSetting::Rate(rate_pps as u64),
        )
    }

    pub fn set_egress_priority_queue_rate(
        &mut self,
        port_num: i32,
        priority: i32,
        rate_pps: i64,
    ) -> Rpc<i32> {
        let p = unsigned(priority, "priority queue")?;
        self.queue(
            QueueSelector::Priority(port_num as u32, p),
            QueueSetting::Rate(rate_pps as u64),
        )
    }

    pub fn set_all_egress_queue_rates(&mut self, rate_pps: i64) -> Rpc<i32> {
        self.queue(QueueSelector::All, QueueSetting::Rate(rate_pps as u64))
    }

    pub fn get_time_elapsed_us(&mut self) -> Rpc<i64> {
        Ok(self.rt.clock()?.elapsed_us as i64)
    }

    pub fn get_time_since_epoch_us(&mut self) -> Rpc<i64> {
        Ok(self.rt.clock()?.since_epoch_us as i64)
    }
}

/// The `simple_switch` service on the wire.
pub(crate) fn dispatch(b: &mut Bmv2<'_>, spec: &MethodSpec, a: Fields<'_>) -> Reply {
    let s = spec;
    match spec.name {
        "mirroring_mapping_add" => ret(s, b.mirroring_mapping_add(a.i32(1), a.i32(2)), Value::I32),
        "mirroring_mapping_delete" => ret(s, b.mirroring_mapping_delete(a.i32(1)), Value::I32),
        "mirroring_mapping_get_egress_port" => {
            ret(s, b.mirroring_mapping_get_egress_port(a.i32(1)), Value::I32)
        }
        "mirroring_session_add" => {
            let cfg = codec::mirroring_config_from(a.strukt(2));
            ret_void(s, b.mirroring_session_add(a.i32(1), cfg))
        }
        "mirroring_session_delete" => ret_void(s, b.mirroring_session_delete(a.i32(1))),
        "mirroring_session_get" => ret(s, b.mirroring_session_get(a.i32(1)), |c| {
            Value::Struct(codec::mirroring_config(c))
        }),
        "set_egress_priority_queue_depth" => ret(
            s,
            b.set_egress_priority_queue_depth(a.i32(1), a.i32(2), a.i32(3)),
            Value::I32,
        ),
        "set_egress_queue_depth" => {
            ret(s, b.set_egress_queue_depth(a.i32(1), a.i32(2)), Value::I32)
        }
        "set_all_egress_queue_depths" => {
            ret(s, b.set_all_egress_queue_depths(a.i32(1)), Value::I32)
        }
        "set_egress_priority_queue_rate" => ret(
            s,
            b.set_egress_priority_queue_rate(a.i32(1), a.i32(2), a.i64(3)),
            Value::I32,
        ),
        "set_egress_queue_rate" => ret(s, b.set_egress_queue_rate(a.i32(1), a.i64(2)), Value::I32),
        "set_all_egress_queue_rates" => ret(s, b.set_all_egress_queue_rates(a.i64(1)), Value::I32),
        "get_time_elapsed_us" => ret(s, b.get_time_elapsed_us(), Value::I64),
        "get_time_since_epoch_us" => ret(s, b.get_time_since_epoch_us(), Value::I64),
        m => super::unknown(m),
    }
}
