//! Action profile members and selector groups.
//!
//! bmv2's groups are sets of members; P4Runtime's have weights and watch ports. A
//! group is stored as its members sorted by id, each repeated once per unit of weight,
//! so that the selector's `hash % len` choice is weighted and a group of weight-1
//! members selects exactly as bmv2 does. Watch ports and size limits are kept here.

use std::collections::BTreeMap;

use p4jet_engine::Op;
use p4jet_runtime::bmv2::TableOperationErrorCode as TC;
use p4jet_runtime::{
    Applied, Group, GroupId, GroupMember, Member, MemberId, ProfileId, RuntimeError, Update,
};

use super::{BatchCtx, Done, Prepared, engine_call, unpack_call};
use crate::Switch;

/// What a group keeps besides its member list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GroupMeta {
    /// Most members, weights counted (0: the profile's size).
    pub max_size: u32,
    /// Watch port per member.
    pub watch: BTreeMap<u32, u32>,
}

/// "action profile IngressImpl.route_selector" (for messages).
pub(crate) fn profile_what(sw: &Switch, p: u32) -> String {
    match sw.engine.prog.action_profiles.get(p as usize) {
        Some(ap) => format!("action profile {}", ap.name),
        None => format!("action profile {p}"),
    }
}

impl Switch {
    /// The profile of an id, or `INVALID_ACTION_PROFILE_NAME`.
    fn profile_index(&self, p: ProfileId) -> Result<u32, RuntimeError> {
        if (p.0 as usize) < self.engine.prog.action_profiles.len() {
            Ok(p.0)
        } else {
            Err(
                RuntimeError::not_found(format!("no action profile {}", p.0))
                    .with_bmv2(TC::INVALID_ACTION_PROFILE_NAME),
            )
        }
    }

    /// The actions members of a profile may run: those of the tables using it.
    fn profile_actions(&self, p: u32) -> Vec<u32> {
        let prog = &self.engine.prog;
        let mut out = Vec::new();
        if let Some(ap) = prog.action_profiles.get(p as usize) {
            for t in &ap.tables {
                if let Some(ti) = prog.tables.get(*t as usize) {
                    for a in &ti.actions {
                        if !out.contains(a) {
                            out.push(*a);
                        }
                    }
                }
            }
        }
        out
    }

    pub(crate) fn prepare_profile(
        &mut self,
        ctx: &mut BatchCtx,
        u: Update,
    ) -> Result<Prepared, RuntimeError> {
        let prog = ctx.prog.clone();
        match u {
            Update::AddMember {
                profile,
                id,
                action,
            } => {
                let p = self.profile_index(profile)?;
                let what = profile_what(self, p);
                let call = engine_call(&prog, &what, &self.profile_actions(p), action)?;
                Ok(Prepared::op(
                    Op::AddMember {
                        profile: p,
                        id: id.map(|m| m.0),
                        call,
                    },
                    Done::Member,
                ))
            }
            Update::ModifyMember {
                profile,
                member,
                action,
            } => {
                let p = self.profile_index(profile)?;
                let what = profile_what(self, p);
                let call = engine_call(&prog, &what, &self.profile_actions(p), action)?;
                Ok(Prepared::op(
                    Op::ModifyMember {
                        profile: p,
                        member: member.0,
                        call,
                    },
                    Done::Applied(Applied::Done),
                ))
            }
            Update::DeleteMember { profile, member } => {
                let p = self.profile_index(profile)?;
                Ok(Prepared::op(
                    Op::DeleteMember {
                        profile: p,
                        member: member.0,
                    },
                    Done::Applied(Applied::Done),
                ))
            }
            Update::AddGroup {
                profile,
                id,
                max_size,
            } => {
                // bmv2 creates groups in any profile (simple_switch_CLI refuses them
                // for profiles without selector before it asks)
                let p = self.profile_index(profile)?;
                Ok(Prepared::op(
                    Op::AddGroup {
                        profile: p,
                        id: id.map(|g| g.0),
                    },
                    Done::Group {
                        profile: p,
                        meta: GroupMeta {
                            max_size,
                            watch: BTreeMap::new(),
                        },
                    },
                ))
            }
            Update::DeleteGroup { profile, group } => {
                let p = self.profile_index(profile)?;
                Ok(Prepared::op(
                    Op::DeleteGroup {
                        profile: p,
                        group: group.0,
                    },
                    Done::GroupDeleted {
                        profile: p,
                        group: group.0,
                    },
                ))
            }
            Update::AddToGroup {
                profile,
                group,
                member,
            } => {
                let p = self.profile_index(profile)?;
                Ok(Prepared::op(
                    Op::AddToGroup {
                        profile: p,
                        member: member.0,
                        group: group.0,
                    },
                    Done::Applied(Applied::Done),
                ))
            }
            Update::RemoveFromGroup {
                profile,
                group,
                member,
            } => {
                let p = self.profile_index(profile)?;
                Ok(Prepared::op(
                    Op::RemoveFromGroup {
                        profile: p,
                        member: member.0,
                        group: group.0,
                    },
                    Done::Applied(Applied::Done),
                ))
            }
            Update::SetGroupMembers {
                profile,
                group,
                members,
            } => {
                let p = self.profile_index(profile)?;
                let what = profile_what(self, p);
                let mut list = Vec::new();
                let mut watch = BTreeMap::new();
                let mut seen = std::collections::BTreeSet::new();
                for m in &members {
                    if m.weight == 0 {
                        return Err(RuntimeError::invalid(format!(
                            "{what}: member {} of group {} has weight 0",
                            m.member.0, group.0
                        )));
                    }
                    if !seen.insert(m.member.0) {
                        return Err(RuntimeError::invalid(format!(
                            "{what}: member {} appears twice in group {}",
                            m.member.0, group.0
                        ))
                        .with_bmv2(TC::MBR_ALREADY_IN_GRP));
                    }
                    list.extend(std::iter::repeat_n(m.member.0, m.weight as usize));
                    if let Some(port) = m.watch_port {
                        watch.insert(m.member.0, port);
                    }
                }
                let max = self
                    .rt
                    .group_meta
                    .get(&(p, group.0))
                    .map_or(0, |g| g.max_size);
                let limit = if max > 0 {
                    max as usize
                } else {
                    prog.action_profiles[p as usize].max_size as usize
                };
                if limit > 0 && list.len() > limit {
                    return Err(RuntimeError::exhausted(format!(
                        "{what}: group {} would hold {} members (weights counted), at most {limit}",
                        group.0,
                        list.len()
                    )));
                }
                Ok(Prepared::op(
                    Op::SetGroupMembers {
                        profile: p,
                        group: group.0,
                        members: list,
                    },
                    Done::GroupMembers {
                        profile: p,
                        group: group.0,
                        meta: GroupMeta {
                            max_size: max,
                            watch,
                        },
                    },
                ))
            }
            _ => Err(RuntimeError::internal("not an action profile update")),
        }
    }

    pub(crate) fn read_members(&self, profile: ProfileId) -> Result<Vec<Member>, RuntimeError> {
        self.need_schema()?;
        let p = self.profile_index(profile)?;
        let prog = self.engine.prog.clone();
        self.read_cs(|cs| {
            cs.profiles
                .get(p as usize)
                .map(|ps| {
                    ps.members
                        .iter()
                        .map(|(h, m)| Member {
                            id: MemberId(*h),
                            action: unpack_call(&prog, &m.call),
                        })
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    pub(crate) fn read_member(
        &self,
        profile: ProfileId,
        member: MemberId,
    ) -> Result<Member, RuntimeError> {
        self.need_schema()?;
        let p = self.profile_index(profile)?;
        let prog = self.engine.prog.clone();
        self.read_cs(|cs| {
            cs.profiles
                .get(p as usize)
                .and_then(|ps| ps.members.get(&member.0))
                .map(|m| Member {
                    id: member,
                    action: unpack_call(&prog, &m.call),
                })
        })?
        .ok_or_else(|| {
            RuntimeError::not_found(format!("{}: no member {}", profile_what(self, p), member.0))
                .with_bmv2(TC::INVALID_MBR_HANDLE)
        })
    }

    fn model_group(&self, p: u32, g: u32, list: &[u32]) -> Group {
        let meta = self.rt.group_meta.get(&(p, g));
        let mut members: Vec<GroupMember> = Vec::new();
        for m in list {
            match members.last_mut() {
                Some(last) if last.member.0 == *m => last.weight += 1,
                _ => members.push(GroupMember {
                    member: MemberId(*m),
                    weight: 1,
                    watch_port: meta.and_then(|x| x.watch.get(m).copied()),
                }),
            }
        }
        Group {
            id: GroupId(g),
            members,
            max_size: meta.map_or(0, |x| x.max_size),
        }
    }

    pub(crate) fn read_groups(&self, profile: ProfileId) -> Result<Vec<Group>, RuntimeError> {
        self.need_schema()?;
        let p = self.profile_index(profile)?;
        let groups: Vec<(u32, Vec<u32>)> = self.read_cs(|cs| {
            cs.profiles
                .get(p as usize)
                .map(|ps| ps.groups.iter().map(|(g, l)| (*g, l.clone())).collect())
                .unwrap_or_default()
        })?;
        Ok(groups
            .iter()
            .map(|(g, l)| self.model_group(p, *g, l))
            .collect())
    }

    pub(crate) fn read_group(
        &self,
        profile: ProfileId,
        group: GroupId,
    ) -> Result<Group, RuntimeError> {
        self.need_schema()?;
        let p = self.profile_index(profile)?;
        let list = self.read_cs(|cs| {
            cs.profiles
                .get(p as usize)
                .and_then(|ps| ps.groups.get(&group.0).cloned())
        })?;
        match list {
            Some(l) => Ok(self.model_group(p, group.0, &l)),
            None => Err(RuntimeError::not_found(format!(
                "{}: no group {}",
                profile_what(self, p),
                group.0
            ))
            .with_bmv2(TC::INVALID_GRP_HANDLE)),
        }
    }
}
