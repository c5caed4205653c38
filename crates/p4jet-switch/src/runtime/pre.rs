//! The packet replication engine and clone sessions.
//!
//! bmv2's PRE has groups of nodes, a node having a replication id and ports (and LAGs).
//! A P4Runtime multicast group (a list of replicas, each a port and an instance) is
//! the same thing seen whole: writing one replaces the group's nodes with one node per
//! instance. Both are checked and changed on the batch's working copy of the PRE,
//! which is published with the batch.
//!
//! A clone session is bmv2's (a port, a multicast group, or both) or P4Runtime's (a
//! list of replicas), with a truncation length and a class of service.

use std::collections::BTreeMap;

use p4jet_engine::state::{McNode as EngineNode, MirrorSession, Pre};
use p4jet_runtime::bmv2::{McOperationErrorCode as MC, MirroringOperationErrorCode};
use p4jet_runtime::{
    Applied, CloneSession, CloneTarget, McGroup, McNode, McNodeHandle, PreState, Replica,
    RuntimeError, SessionId, Update, WriteMode,
};

use super::{
    BatchCtx, Done, MAX_MIRROR_SESSION_ID, MC_LAG_MAX_ENTRIES, MC_PORT_MAP_SIZE, Prepared,
};
use crate::Switch;

fn mc(code: MC, m: impl Into<String>) -> RuntimeError {
    code.into_error(m)
}

trait IntoError {
    fn into_error(self, m: impl Into<String>) -> RuntimeError;
}

impl IntoError for MC {
    fn into_error(self, m: impl Into<String>) -> RuntimeError {
        p4jet_runtime::bmv2::Bmv2Code::Mc(self).error(m)
    }
}

/// Ports (or LAG indexes) must fit the PRE's 512-position maps.
fn check_ports(ports: &[u32], what: &str) -> Result<(), RuntimeError> {
    match ports.iter().find(|p| **p >= MC_PORT_MAP_SIZE) {
        Some(p) => Err(RuntimeError::invalid(format!(
            "{what} {p}: port and LAG maps have {MC_PORT_MAP_SIZE} positions"
        ))),
        None => Ok(()),
    }
}

fn sorted(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v.dedup();
    v
}

/// The session not found error.
fn no_session(id: SessionId) -> RuntimeError {
    p4jet_runtime::bmv2::Bmv2Code::Mirroring(MirroringOperationErrorCode::SESSION_NOT_FOUND)
        .error(format!("no clone session {id}"))
}

impl Switch {
    /// The batch's working copy of the PRE.
    fn working_pre<'c>(&self, ctx: &'c mut BatchCtx) -> Result<&'c mut Pre, RuntimeError> {
        if ctx.pre.is_none() {
            ctx.pre = Some(self.read_cs(|cs| cs.pre.clone())?);
        }
        ctx.pre
            .as_mut()
            .ok_or_else(|| RuntimeError::internal("no working PRE"))
    }

    /// The batch's working copy of the clone sessions.
    fn working_mirror<'c>(
        &self,
        ctx: &'c mut BatchCtx,
    ) -> Result<&'c mut BTreeMap<u32, MirrorSession>, RuntimeError> {
        if ctx.mirror.is_none() {
            ctx.mirror = Some(self.read_cs(|cs| cs.mirror.clone())?);
        }
        ctx.mirror
            .as_mut()
            .ok_or_else(|| RuntimeError::internal("no working sessions"))
    }

    pub(crate) fn prepare_pre(
        &mut self,
        ctx: &mut BatchCtx,
        u: Update,
    ) -> Result<Prepared, RuntimeError> {
        let max_groups = self.rt.max_mc_groups;
        let max_nodes = self.rt.max_mc_l1_entries.min(self.rt.max_mc_l2_entries);
        let done = |a| Ok(Prepared::none(Done::Applied(a)));
        match u {
            Update::McGroupCreate { group } => {
                let pre = self.working_pre(ctx)?;
                if pre.groups.len() >= max_groups && !pre.groups.contains_key(&group) {
                    return Err(mc(MC::TABLE_FULL, "the multicast group table is full"));
                }
                // bmv2 neither checks the range nor rejects a duplicate (which changes
                // nothing)
                pre.groups.entry(group).or_default();
                done(Applied::Done)
            }
            Update::McGroupDestroy { group } => {
                // bmv2 always succeeds, and the nodes of the group stay associated
                self.working_pre(ctx)?.groups.remove(&group);
                done(Applied::Done)
            }
            Update::McNodeCreate { rid, ports, lags } => {
                check_ports(&ports, "port")?;
                check_ports(&lags, "LAG")?;
                let pre = self.working_pre(ctx)?;
                if pre.nodes.len() >= max_nodes {
                    return Err(mc(MC::TABLE_FULL, "the multicast node table is full"));
                }
                let h = (0u32..)
                    .find(|h| !pre.nodes.contains_key(h))
                    .ok_or_else(|| mc(MC::ERROR, "no free node handle"))?;
                pre.nodes.insert(
                    h,
                    EngineNode {
                        rid: rid as u16,
                        ports: sorted(ports),
                        lags: sorted(lags),
                        group: None,
                    },
                );
                done(Applied::McNode(McNodeHandle(h)))
            }
            Update::McNodeUpdate { node, ports, lags } => {
                check_ports(&ports, "port")?;
                check_ports(&lags, "LAG")?;
                let pre = self.working_pre(ctx)?;
                let n = pre.nodes.get_mut(&node.0).ok_or_else(|| {
                    mc(
                        MC::INVALID_L1_HANDLE,
                        format!("no multicast node {}", node.0),
                    )
                })?;
                n.ports = sorted(ports);
                n.lags = sorted(lags);
                done(Applied::Done)
            }
            Update::McNodeAssociate { group, node } => {
                let pre = self.working_pre(ctx)?;
                if !pre.nodes.contains_key(&node.0) {
                    return Err(mc(
                        MC::INVALID_L1_HANDLE,
                        format!("no multicast node {}", node.0),
                    ));
                }
                let Some(list) = pre.groups.get_mut(&group) else {
                    return Err(mc(
                        MC::INVALID_MGRP_HANDLE,
                        format!("no multicast group {group}"),
                    ));
                };
                let n = pre
                    .nodes
                    .get_mut(&node.0)
                    .ok_or_else(|| mc(MC::INVALID_L1_HANDLE, "no such node"))?;
                if n.group.is_some() {
                    return Err(mc(
                        MC::ERROR,
                        format!("multicast node {} belongs to a group already", node.0),
                    ));
                }
                list.push(node.0);
                n.group = Some(group);
                done(Applied::Done)
            }
            Update::McNodeDissociate { group, node } => {
                let pre = self.working_pre(ctx)?;
                if !pre.nodes.contains_key(&node.0) {
                    return Err(mc(
                        MC::INVALID_L1_HANDLE,
                        format!("no multicast node {}", node.0),
                    ));
                }
                let Some(list) = pre.groups.get_mut(&group) else {
                    return Err(mc(
                        MC::INVALID_MGRP_HANDLE,
                        format!("no multicast group {group}"),
                    ));
                };
                let n = pre
                    .nodes
                    .get_mut(&node.0)
                    .ok_or_else(|| mc(MC::INVALID_L1_HANDLE, "no such node"))?;
                if n.group != Some(group) {
                    return Err(mc(
                        MC::ERROR,
                        format!("multicast node {} is not in group {group}", node.0),
                    ));
                }
                list.retain(|x| *x != node.0);
                n.group = None;
                done(Applied::Done)
            }
            Update::McNodeDestroy { node } => {
                let pre = self.working_pre(ctx)?;
                let n = pre.nodes.remove(&node.0).ok_or_else(|| {
                    mc(
                        MC::INVALID_L1_HANDLE,
                        format!("no multicast node {}", node.0),
                    )
                })?;
                // a node may be destroyed while associated: it leaves its group first
                if let Some(g) = n.group
                    && let Some(list) = pre.groups.get_mut(&g)
                {
                    list.retain(|x| *x != node.0);
                }
                done(Applied::Done)
            }
            Update::McSetLag { lag, ports } => {
                if lag >= MC_LAG_MAX_ENTRIES {
                    return Err(mc(
                        MC::ERROR,
                        format!("LAG {lag}: there are {MC_LAG_MAX_ENTRIES} LAG indexes"),
                    ));
                }
                check_ports(&ports, "port")?;
                self.working_pre(ctx)?.lags.insert(lag, sorted(ports));
                done(Applied::Done)
            }
            Update::WriteMulticastGroup {
                mode,
                group,
                replicas,
            } => {
                let mut by_rid: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
                for r in &replicas {
                    if r.instance > u32::from(u16::MAX) {
                        return Err(RuntimeError::invalid(format!(
                            "multicast group {group}: instance {} does not fit 16 bits",
                            r.instance
                        )));
                    }
                    check_ports(&[r.port], "port")?;
                    let ports = by_rid.entry(r.instance).or_default();
                    if ports.contains(&r.port) {
                        return Err(RuntimeError::invalid(format!(
                            "multicast group {group}: replica (port {}, instance {}) twice",
                            r.port, r.instance
                        )));
                    }
                    ports.push(r.port);
                }
                let pre = self.working_pre(ctx)?;
                let exists = pre.groups.contains_key(&group);
                match mode {
                    WriteMode::Insert if exists => {
                        return Err(RuntimeError::already_exists(format!(
                            "multicast group {group} exists"
                        )));
                    }
                    WriteMode::Modify if !exists => {
                        return Err(mc(MC::INVALID_MGID, format!("no multicast group {group}")));
                    }
                    _ => {}
                }
                if !exists && pre.groups.len() >= max_groups {
                    return Err(mc(MC::TABLE_FULL, "the multicast group table is full"));
                }
                let old: Vec<u32> = pre.groups.get(&group).cloned().unwrap_or_default();
                if pre.nodes.len() - old.len().min(pre.nodes.len()) + by_rid.len() > max_nodes {
                    return Err(mc(MC::TABLE_FULL, "the multicast node table is full"));
                }
                for n in old {
                    pre.nodes.remove(&n);
                }
                let mut list = Vec::with_capacity(by_rid.len());
                for (rid, ports) in by_rid {
                    let h = (0u32..)
                        .find(|h| !pre.nodes.contains_key(h))
                        .ok_or_else(|| mc(MC::ERROR, "no free node handle"))?;
                    pre.nodes.insert(
                        h,
                        EngineNode {
                            rid: rid as u16,
                            ports: sorted(ports),
                            lags: vec![],
                            group: Some(group),
                        },
                    );
                    list.push(h);
                }
                pre.groups.insert(group, list);
                done(Applied::Done)
            }
            Update::DeleteMulticastGroup { group } => {
                let pre = self.working_pre(ctx)?;
                let nodes = pre
                    .groups
                    .remove(&group)
                    .ok_or_else(|| mc(MC::INVALID_MGID, format!("no multicast group {group}")))?;
                for n in nodes {
                    pre.nodes.remove(&n);
                }
                done(Applied::Done)
            }
            Update::WriteCloneSession { mode, session } => {
                let id = session.id;
                if id > MAX_MIRROR_SESSION_ID {
                    return Err(RuntimeError::out_of_range(format!(
                        "clone session {id}: ids go up to {MAX_MIRROR_SESSION_ID}"
                    )));
                }
                let ms = engine_session(&session)?;
                let mirror = self.working_mirror(ctx)?;
                let exists = mirror.contains_key(&id);
                match mode {
                    WriteMode::Insert if exists => {
                        return Err(RuntimeError::already_exists(format!(
                            "clone session {id} exists"
                        )));
                    }
                    WriteMode::Modify if !exists => return Err(no_session(id)),
                    _ => {}
                }
                mirror.insert(id, ms);
                done(Applied::Done)
            }
            Update::DeleteCloneSession { id } => {
                let mirror = self.working_mirror(ctx)?;
                if mirror.remove(&id).is_none() {
                    return Err(no_session(id));
                }
                done(Applied::Done)
            }
            _ => Err(RuntimeError::internal("not a PRE update")),
        }
    }

    pub(crate) fn read_pre(&self) -> Result<PreState, RuntimeError> {
        self.need_schema()?;
        self.read_cs(|cs| model_pre(&cs.pre))
    }

    pub(crate) fn read_clone_session(&self, id: SessionId) -> Result<CloneSession, RuntimeError> {
        self.need_schema()?;
        self.read_cs(|cs| cs.mirror.get(&id).map(|s| model_session(id, s)))?
            .ok_or_else(|| no_session(id))
    }

    pub(crate) fn read_clone_sessions(&self) -> Result<Vec<CloneSession>, RuntimeError> {
        self.need_schema()?;
        self.read_cs(|cs| {
            cs.mirror
                .iter()
                .map(|(id, s)| model_session(*id, s))
                .collect()
        })
    }
}

/// The engine's session for a model session.
fn engine_session(s: &CloneSession) -> Result<MirrorSession, RuntimeError> {
    let (port, mgid, replicas) = match &s.target {
        CloneTarget::Bmv2 { port, mgid } => (*port, *mgid, None),
        CloneTarget::Replicas(rs) => {
            let mut out = Vec::with_capacity(rs.len());
            for r in rs {
                let rid = u16::try_from(r.instance).map_err(|_| {
                    RuntimeError::invalid(format!(
                        "clone session {}: instance {} does not fit 16 bits",
                        s.id, r.instance
                    ))
                })?;
                out.push((r.port, rid));
            }
            (None, None, Some(out))
        }
    };
    Ok(MirrorSession {
        port,
        mgid,
        replicas,
        truncate: s.packet_length_bytes,
        class_of_service: s.class_of_service,
    })
}

/// The model's view of an engine session.
fn model_session(id: u32, s: &MirrorSession) -> CloneSession {
    let target = match &s.replicas {
        Some(rs) => CloneTarget::Replicas(
            rs.iter()
                .map(|(port, rid)| Replica {
                    port: *port,
                    instance: u32::from(*rid),
                })
                .collect(),
        ),
        None => CloneTarget::Bmv2 {
            port: s.port,
            mgid: s.mgid,
        },
    };
    CloneSession {
        id,
        target,
        class_of_service: s.class_of_service,
        packet_length_bytes: s.truncate,
    }
}

/// The model's view of the engine's PRE.
pub(crate) fn model_pre(pre: &Pre) -> PreState {
    PreState {
        groups: pre
            .groups
            .iter()
            .map(|(id, nodes)| McGroup {
                id: *id,
                nodes: nodes.iter().map(|n| McNodeHandle(*n)).collect(),
            })
            .collect(),
        nodes: pre
            .nodes
            .iter()
            .map(|(h, n)| McNode {
                handle: McNodeHandle(*h),
                rid: u32::from(n.rid),
                ports: n.ports.clone(),
                lags: n.lags.clone(),
                group: n.group,
            })
            .collect(),
        lags: pre.lags.iter().map(|(l, p)| (*l, p.clone())).collect(),
    }
}
