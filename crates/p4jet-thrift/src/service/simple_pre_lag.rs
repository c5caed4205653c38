//! The `simple_pre_lag` service (and `simple_pre`, the same without LAGs): bmv2's
//! packet replication engine.

use p4jet_runtime::bmv2::McOperationErrorCode as MC;
use p4jet_runtime::{Applied, McNodeHandle, PreState, RuntimeError, Update};

use super::{Bmv2, Reply, Rpc, ret, ret_void};
use crate::codec::{Fields, MethodSpec};
use crate::protocol::Value;
use crate::types::*;

/// A port or LAG map's positions; bmv2 throws (`std::invalid_argument`) on other
/// characters than '0' and '1': no exception code.
fn ports(map: &str) -> Rpc<Vec<u32>> {
    port_map_to_ports(map).map_err(|e| RuntimeError::invalid(e.to_string()))
}

/// The JSON of `bm_mc_get_entries`: `{"l1_handles": [{"handle", "l2_handle", "rid"}],
/// "l2_handles": [{"handle", "lags", "ports"}], "lags": [{"id", "ports"}], "mgrps":
/// [{"id", "l1_handles"}]}`, keys in lexicographic order as jsoncpp writes them; L2
/// handles are allocated with the L1 handles, so they are equal.
pub fn pre_json(pre: &PreState) -> String {
    let list = |v: &[u32]| {
        let items: Vec<String> = v.iter().map(u32::to_string).collect();
        format!("[{}]", items.join(", "))
    };
    let l1: Vec<String> = pre
        .nodes
        .iter()
        .map(|n| {
            format!(
                "{{\"handle\": {h}, \"l2_handle\": {h}, \"rid\": {}}}",
                n.rid,
                h = n.handle.0
            )
        })
        .collect();
    let l2: Vec<String> = pre
        .nodes
        .iter()
        .map(|n| {
            format!(
                "{{\"handle\": {}, \"lags\": {}, \"ports\": {}}}",
                n.handle.0,
                list(&n.lags),
                list(&n.ports)
            )
        })
        .collect();
    let lags: Vec<String> = pre
        .lags
        .iter()
        .map(|(id, p)| format!("{{\"id\": {id}, \"ports\": {}}}", list(p)))
        .collect();
    let mgrps: Vec<String> = pre
        .groups
        .iter()
        .map(|g| {
            let nodes: Vec<u32> = g.nodes.iter().map(|n| n.0).collect();
            format!("{{\"id\": {}, \"l1_handles\": {}}}", g.id, list(&nodes))
        })
        .collect();
    format!(
        "{{\"l1_handles\": [{}], \"l2_handles\": [{}], \"lags\": [{}], \"mgrps\": [{}]}}",
        l1.join(", "),
        l2.join(", "),
        lags.join(", "),
        mgrps.join(", ")
    )
}

#[allow(missing_docs)]
impl Bmv2<'_> {
    pub fn bm_mc_mgrp_create(&mut self, mgrp: BmMcMgrp) -> Rpc<BmMcMgrpHandle> {
        self.apply(Update::McGroupCreate { group: mgrp as u32 })?;
        Ok(mgrp)
    }

    pub fn bm_mc_mgrp_destroy(&mut self, mgrp_handle: BmMcMgrpHandle) -> Rpc<()> {
        self.apply(Update::McGroupDestroy {
            group: mgrp_handle as u32,
        })
        .map(drop)
    }

    pub fn bm_mc_node_create(
        &mut self,
        rid: BmMcRid,
        port_map: &str,
        lag_map: &str,
    ) -> Rpc<BmMcL1Handle> {
        let (ports, lags) = (ports(port_map)?, ports(lag_map)?);
        match self.apply(Update::McNodeCreate {
            rid: rid as u32,
            ports,
            lags,
        })? {
            Applied::McNode(h) => Ok(h.0 as BmMcL1Handle),
            _ => Err(RuntimeError::internal("no node handle")),
        }
    }

    pub fn bm_mc_node_associate(
        &mut self,
        mgrp_handle: BmMcMgrpHandle,
        l1_handle: BmMcL1Handle,
    ) -> Rpc<()> {
        self.apply(Update::McNodeAssociate {
            group: mgrp_handle as u32,
            node: McNodeHandle(l1_handle as u32),
        })
        .map(drop)
    }

    pub fn bm_mc_node_dissociate(
        &mut self,
        mgrp_handle: BmMcMgrpHandle,
        l1_handle: BmMcL1Handle,
    ) -> Rpc<()> {
        self.apply(Update::McNodeDissociate {
            group: mgrp_handle as u32,
            node: McNodeHandle(l1_handle as u32),
        })
        .map(drop)
    }

    pub fn bm_mc_node_destroy(&mut self, l1_handle: BmMcL1Handle) -> Rpc<()> {
        self.apply(Update::McNodeDestroy {
            node: McNodeHandle(l1_handle as u32),
        })
        .map(drop)
    }

    pub fn bm_mc_node_update(
        &mut self,
        l1_handle: BmMcL1Handle,
        port_map: &str,
        lag_map: &str,
    ) -> Rpc<()> {
        let (ports, lags) = (ports(port_map)?, ports(lag_map)?);
        self.apply(Update::McNodeUpdate {
            node: McNodeHandle(l1_handle as u32),
            ports,
            lags,
        })
        .map(drop)
    }

    pub fn bm_mc_set_lag_membership(&mut self, lag_index: BmMcLagIndex, port_map: &str) -> Rpc<()> {
        let ports = ports(port_map)?;
        self.apply(Update::McSetLag {
            lag: u32::from(lag_index as u16),
            ports,
        })
        .map(drop)
    }

    pub fn bm_mc_get_entries(&mut self) -> Rpc<String> {
        Ok(pre_json(&self.rt.pre()?))
    }
}

/// The `simple_pre_lag` (`lag`) or `simple_pre` service on the wire.
pub(crate) fn dispatch(b: &mut Bmv2<'_>, spec: &MethodSpec, a: Fields<'_>, lag: bool) -> Reply {
    super::standard::cxt!(a, MC::ERROR);
    let s = spec;
    // simple_pre has no LAGs: its node calls carry no LAG map
    let lag_map = |id| if lag { a.string(id) } else { String::new() };
    match spec.name {
        "bm_mc_mgrp_create" => ret(s, b.bm_mc_mgrp_create(a.i32(2)), Value::I32),
        "bm_mc_mgrp_destroy" => ret_void(s, b.bm_mc_mgrp_destroy(a.i32(2))),
        "bm_mc_node_create" => ret(
            s,
            b.bm_mc_node_create(a.i32(2), &a.string(3), &lag_map(4)),
            Value::I32,
        ),
        "bm_mc_node_associate" => ret_void(s, b.bm_mc_node_associate(a.i32(2), a.i32(3))),
        "bm_mc_node_dissociate" => ret_void(s, b.bm_mc_node_dissociate(a.i32(2), a.i32(3))),
        "bm_mc_node_destroy" => ret_void(s, b.bm_mc_node_destroy(a.i32(2))),
        "bm_mc_node_update" => {
            ret_void(s, b.bm_mc_node_update(a.i32(2), &a.string(3), &lag_map(4)))
        }
        "bm_mc_set_lag_membership" if lag => {
            ret_void(s, b.bm_mc_set_lag_membership(a.i16(2), &a.string(3)))
        }
        "bm_mc_get_entries" => ret(s, b.bm_mc_get_entries(), |j| Value::string(&j)),
        m => super::unknown(m),
    }
}
