//! Client arbitration: which StreamChannel of a role is the primary.
//!
//! Sans-I/O: the server feeds it arbitration requests and stream ends, and sends the
//! [`Notice`]s it returns. Rules (P4Runtime 1.5 "Client Arbitration and Controller
//! Replication", as PI's server applies them):
//!
//! * Arbitration is per role (the role's name; "" is the default role, full pipeline
//!   access). Within a role the stream with the highest election id is the primary;
//!   an unset election id counts as 0.
//! * A stream's first arbitration message joins it to a role. An election id already
//!   held by another stream of the role is refused (`INVALID_ARGUMENT`, the stream
//!   ends), and so is a role config that differs from the one the role's other
//!   streams gave (`INVALID_ARGUMENT`).
//! * The first stream of a role sets the role's config ([`crate::role`]): one p4jet
//!   cannot read, a config on the default role, or one that claims an id another
//!   role holds exclusively (or names one exclusively that another role names) is
//!   refused (`INVALID_ARGUMENT`). The config lives as long as the role has streams.
//! * Later messages may change the stream's election id; changing its device id or
//!   role is refused (`FAILED_PRECONDITION`).
//! * When the primary changes (a higher id joins, the primary lowers its id, or the
//!   primary's stream ends), every stream of the role is told who the primary is:
//!   `status` OK "Is primary" to the primary, `ALREADY_EXISTS` "Is backup" to the
//!   others, `election_id` the primary's. Otherwise only the stream that sent the
//!   message is answered. When the primary's stream ends, the next highest becomes
//!   primary (failover).
//! * At most [`MAX_STREAMS`] streams per device (`RESOURCE_EXHAUSTED`).

use std::collections::{BTreeMap, HashMap};

use std::sync::Arc;

use crate::proto::google::rpc::Status as RpcStatus;
use crate::proto::p4::v1::{MasterArbitrationUpdate, Role, Uint128};
use crate::role::{Access, Scope};

/// Identifies one StreamChannel call.
pub type StreamId = u64;

/// Most simultaneous StreamChannel calls of a device (PI allows 16 too).
pub const MAX_STREAMS: usize = 16;

/// gRPC codes used here (google.rpc.Code values).
pub mod code {
    /// OK
    pub const OK: i32 = 0;
    /// UNKNOWN
    pub const UNKNOWN: i32 = 2;
    /// INVALID_ARGUMENT
    pub const INVALID_ARGUMENT: i32 = 3;
    /// NOT_FOUND
    pub const NOT_FOUND: i32 = 5;
    /// ALREADY_EXISTS
    pub const ALREADY_EXISTS: i32 = 6;
    /// PERMISSION_DENIED
    pub const PERMISSION_DENIED: i32 = 7;
    /// RESOURCE_EXHAUSTED
    pub const RESOURCE_EXHAUSTED: i32 = 8;
    /// FAILED_PRECONDITION
    pub const FAILED_PRECONDITION: i32 = 9;
    /// OUT_OF_RANGE
    pub const OUT_OF_RANGE: i32 = 11;
    /// UNIMPLEMENTED
    pub const UNIMPLEMENTED: i32 = 12;
    /// INTERNAL
    pub const INTERNAL: i32 = 13;
}

/// An error that ends the stream (or refuses a request): a gRPC code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// google.rpc.Code value.
    pub code: i32,
    /// For the client.
    pub message: String,
}

impl Refusal {
    fn new(code: i32, message: impl Into<String>) -> Refusal {
        Refusal {
            code,
            message: message.into(),
        }
    }
}

/// An arbitration update to send on a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// The stream to send it on.
    pub stream: StreamId,
    /// The message.
    pub update: MasterArbitrationUpdate,
}

/// A 128-bit election id.
pub fn election(id: Option<&Uint128>) -> u128 {
    id.map_or(0, |u| (u128::from(u.high) << 64) | u128::from(u.low))
}

fn to_uint128(v: u128) -> Uint128 {
    Uint128 {
        high: (v >> 64) as u64,
        low: v as u64,
    }
}

/// The streams of one role.
#[derive(Debug, Default)]
struct RoleState {
    /// The role's configuration as the first stream gave it (encoded Any).
    config: Option<(String, Vec<u8>)>,
    /// What the config allows.
    access: Access,
    /// Election id → stream, highest last.
    by_election: BTreeMap<u128, StreamId>,
}

impl RoleState {
    fn primary(&self) -> Option<(u128, StreamId)> {
        self.by_election.iter().next_back().map(|(e, s)| (*e, *s))
    }
}

/// What the arbiter knows of one stream.
#[derive(Debug, Clone)]
struct Member {
    role: String,
    election: u128,
    role_msg: Option<Role>,
}

/// The arbitration state of one device.
#[derive(Debug)]
pub struct Arbiter {
    device_id: u64,
    roles: HashMap<String, RoleState>,
    members: HashMap<StreamId, Member>,
}

/// The role name of an arbitration message ("" for the default role).
#[allow(deprecated)] // the numeric role id of P4Runtime 1.0 clients
pub fn role_name(role: Option<&Role>) -> String {
    match role {
        None => String::new(),
        Some(r) if !r.name.is_empty() => r.name.clone(),
        // the deprecated numeric id, for old clients
        Some(r) if r.id != 0 => format!("#{}", r.id),
        Some(_) => String::new(),
    }
}

fn role_config(role: Option<&Role>) -> Option<(String, Vec<u8>)> {
    role.and_then(|r| r.config.as_ref())
        .map(|a| (a.type_url.clone(), a.value.clone()))
}

impl Arbiter {
    /// The arbiter of device `device_id`.
    pub fn new(device_id: u64) -> Arbiter {
        Arbiter {
            device_id,
            roles: HashMap::new(),
            members: HashMap::new(),
        }
    }

    /// The device id this arbiter serves.
    pub fn device_id(&self) -> u64 {
        self.device_id
    }

    /// Handles an arbitration message of `stream`; returns the updates to send, or
    /// the error that ends the stream.
    pub fn arbitrate(
        &mut self,
        stream: StreamId,
        msg: &MasterArbitrationUpdate,
    ) -> Result<Vec<Notice>, Refusal> {
        let id = election(msg.election_id.as_ref());
        let role = role_name(msg.role.as_ref());
        if msg.device_id != self.device_id {
            return Err(if self.members.contains_key(&stream) {
                Refusal::new(
                    code::FAILED_PRECONDITION,
                    format!(
                        "Invalid device id {}: this stream arbitrates for device {}",
                        msg.device_id, self.device_id
                    ),
                )
            } else {
                Refusal::new(
                    code::NOT_FOUND,
                    format!(
                        "Unknown device id {} (this switch is device {})",
                        msg.device_id, self.device_id
                    ),
                )
            });
        }
        if let Some(m) = self.members.get(&stream) {
            if m.role != role {
                return Err(Refusal::new(
                    code::FAILED_PRECONDITION,
                    format!(
                        "A stream cannot change its role (from '{}' to '{role}')",
                        m.role
                    ),
                ));
            }
            return self.change_election(stream, id);
        }
        if self.members.len() >= MAX_STREAMS {
            return Err(Refusal::new(
                code::RESOURCE_EXHAUSTED,
                format!("Too many connections (at most {MAX_STREAMS})"),
            ));
        }
        let config = role_config(msg.role.as_ref());
        let new_role = self
            .roles
            .get(&role)
            .is_none_or(|s| s.by_election.is_empty());
        let access = if new_role {
            self.access_of(&role, msg.role.as_ref())?
        } else {
            Access::Full // the role's own is kept
        };
        let state = self.roles.entry(role.clone()).or_default();
        if state.by_election.contains_key(&id) {
            return Err(Refusal::new(
                code::INVALID_ARGUMENT,
                "Election id already exists",
            ));
        }
        if !state.by_election.is_empty() && state.config != config {
            return Err(Refusal::new(
                code::INVALID_ARGUMENT,
                format!("Role '{role}' config differs from its other clients'"),
            ));
        }
        if state.by_election.is_empty() {
            state.config = config;
            state.access = access;
        }
        let before = state.primary().map(|p| p.1);
        state.by_election.insert(id, stream);
        self.members.insert(
            stream,
            Member {
                role: role.clone(),
                election: id,
                role_msg: msg.role.clone(),
            },
        );
        Ok(self.notices_after(&role, before, stream))
    }

    /// The access a new role's config gives, checked against the other roles'.
    fn access_of(&self, role: &str, msg: Option<&Role>) -> Result<Access, Refusal> {
        let Some(any) = msg.and_then(|r| r.config.as_ref()) else {
            return Ok(Access::Full);
        };
        if role.is_empty() {
            return Err(Refusal::new(
                code::INVALID_ARGUMENT,
                "the default role (no role name) has full pipeline access and takes no role config",
            ));
        }
        let scope = Scope::from_any(any)
            .map_err(|e| Refusal::new(code::INVALID_ARGUMENT, format!("role '{role}': {e}")))?;
        for (other, st) in &self.roles {
            if other == role || st.by_election.is_empty() {
                continue;
            }
            if let Access::Scoped(o) = &st.access
                && let Some(why) = scope.conflict(role, o, other)
            {
                return Err(Refusal::new(code::INVALID_ARGUMENT, why));
            }
        }
        Ok(Access::Scoped(Arc::new(scope)))
    }

    fn change_election(&mut self, stream: StreamId, id: u128) -> Result<Vec<Notice>, Refusal> {
        let Some(m) = self.members.get(&stream).cloned() else {
            return Ok(vec![]);
        };
        let Some(state) = self.roles.get_mut(&m.role) else {
            return Ok(vec![]);
        };
        if m.election != id && state.by_election.contains_key(&id) {
            return Err(Refusal::new(
                code::INVALID_ARGUMENT,
                "New election id already exists",
            ));
        }
        let before = state.primary().map(|p| p.1);
        state.by_election.remove(&m.election);
        state.by_election.insert(id, stream);
        if let Some(mm) = self.members.get_mut(&stream) {
            mm.election = id;
        }
        Ok(self.notices_after(&m.role, before, stream))
    }

    /// Forgets a stream (it ended); returns the updates to send to the others.
    pub fn leave(&mut self, stream: StreamId) -> Vec<Notice> {
        let Some(m) = self.members.remove(&stream) else {
            return vec![];
        };
        let Some(state) = self.roles.get_mut(&m.role) else {
            return vec![];
        };
        let before = state.primary().map(|p| p.1);
        state.by_election.remove(&m.election);
        if state.by_election.is_empty() {
            self.roles.remove(&m.role);
            return vec![];
        }
        if before == Some(stream) {
            self.notify_all(&m.role)
        } else {
            vec![]
        }
    }

    fn notices_after(&self, role: &str, before: Option<StreamId>, stream: StreamId) -> Vec<Notice> {
        let after = self.roles.get(role).and_then(|s| s.primary()).map(|p| p.1);
        if after != before {
            self.notify_all(role)
        } else {
            self.notify_one(role, stream).into_iter().collect()
        }
    }

    fn notify_all(&self, role: &str) -> Vec<Notice> {
        let Some(state) = self.roles.get(role) else {
            return vec![];
        };
        state
            .by_election
            .values()
            .rev()
            .filter_map(|s| self.notify_one(role, *s))
            .collect()
    }

    fn notify_one(&self, role: &str, stream: StreamId) -> Option<Notice> {
        let state = self.roles.get(role)?;
        let (primary_id, primary) = state.primary()?;
        let m = self.members.get(&stream)?;
        let status = if primary == stream {
            RpcStatus {
                code: code::OK,
                message: "Is primary".into(),
                details: vec![],
            }
        } else {
            RpcStatus {
                code: code::ALREADY_EXISTS,
                message: "Is backup".into(),
                details: vec![],
            }
        };
        Some(Notice {
            stream,
            update: MasterArbitrationUpdate {
                device_id: self.device_id,
                role: m.role_msg.clone(),
                election_id: Some(to_uint128(primary_id)),
                status: Some(status),
            },
        })
    }

    /// Whether a request of `role` carrying `election_id` may write.
    ///
    /// With no stream at all for the role, a request without an election id is
    /// accepted (as PI does, for tools such as grpc_cli); one with an election id is
    /// not (`PERMISSION_DENIED` "Not primary").
    pub fn check_primary(&self, role: &str, election_id: Option<&Uint128>) -> Result<(), Refusal> {
        let denied = || Refusal::new(code::PERMISSION_DENIED, "Not primary");
        match self.roles.get(role).and_then(|s| s.primary()) {
            None if election_id.is_none() && self.roles.is_empty() => Ok(()),
            None => Err(denied()),
            Some((id, _)) if election_id.is_some() && election(election_id) == id => Ok(()),
            Some(_) => Err(denied()),
        }
    }

    /// The primary stream of every role (packet-ins, digests and idle timeout
    /// notifications go to them).
    pub fn primaries(&self) -> Vec<(String, StreamId)> {
        let mut v: Vec<(String, StreamId)> = self
            .roles
            .iter()
            .filter_map(|(r, s)| s.primary().map(|p| (r.clone(), p.1)))
            .collect();
        v.sort();
        v
    }

    /// The primary stream of every role with what its role may see.
    pub fn primaries_with_access(&self) -> Vec<(StreamId, Access)> {
        let mut v: Vec<(String, StreamId, Access)> = self
            .roles
            .iter()
            .filter_map(|(r, s)| s.primary().map(|p| (r.clone(), p.1, s.access.clone())))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v.into_iter().map(|(_, s, a)| (s, a)).collect()
    }

    /// What the clients of `role` may do: what its config allows while it has
    /// streams; full access for the default role and roles without a config (or
    /// without streams).
    pub fn access(&self, role: &str) -> Access {
        self.roles
            .get(role)
            .map_or(Access::Full, |s| s.access.clone())
    }

    /// Whether `stream` is the primary of its role.
    pub fn is_primary_stream(&self, stream: StreamId) -> bool {
        self.members
            .get(&stream)
            .and_then(|m| self.roles.get(&m.role))
            .and_then(|s| s.primary())
            .is_some_and(|p| p.1 == stream)
    }

    /// The role of a stream that joined.
    pub fn stream_role(&self, stream: StreamId) -> Option<&str> {
        self.members.get(&stream).map(|m| m.role.as_str())
    }

    /// The role configuration the role's clients gave (type URL and bytes).
    pub fn role_config(&self, role: &str) -> Option<&(String, Vec<u8>)> {
        self.roles.get(role).and_then(|s| s.config.as_ref())
    }

    /// Streams that joined.
    pub fn stream_count(&self) -> usize {
        self.members.len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn arb(dev: u64, id: u128, role: Option<&str>) -> MasterArbitrationUpdate {
        MasterArbitrationUpdate {
            device_id: dev,
            role: role.map(|r| Role {
                name: r.into(),
                ..Default::default()
            }),
            election_id: Some(to_uint128(id)),
            status: None,
        }
    }

    fn summary(n: &[Notice]) -> Vec<(StreamId, i32, u128)> {
        n.iter()
            .map(|n| {
                (
                    n.stream,
                    n.update.status.as_ref().unwrap().code,
                    election(n.update.election_id.as_ref()),
                )
            })
            .collect()
    }

    #[test]
    fn primary_backup_and_failover() {
        let mut a = Arbiter::new(1);
        assert_eq!(
            summary(&a.arbitrate(10, &arb(1, 5, None)).unwrap()),
            vec![(10, 0, 5)]
        );
        // a backup joins: only it is told
        assert_eq!(
            summary(&a.arbitrate(11, &arb(1, 3, None)).unwrap()),
            vec![(11, 6, 5)]
        );
        // a higher id joins: everyone is told
        assert_eq!(
            summary(&a.arbitrate(12, &arb(1, 9, None)).unwrap()),
            vec![(12, 0, 9), (10, 6, 9), (11, 6, 9)]
        );
        assert!(a.check_primary("", Some(&to_uint128(9))).is_ok());
        assert_eq!(
            a.check_primary("", Some(&to_uint128(5))).unwrap_err().code,
            code::PERMISSION_DENIED
        );
        // duplicate id
        assert_eq!(
            a.arbitrate(13, &arb(1, 9, None)).unwrap_err().code,
            code::INVALID_ARGUMENT
        );
        // the primary leaves: the next highest takes over
        assert_eq!(summary(&a.leave(12)), vec![(10, 0, 5), (11, 6, 5)]);
        // a backup leaves: nobody is told
        assert!(a.leave(11).is_empty());
        assert_eq!(a.primaries(), vec![(String::new(), 10)]);
    }

    #[test]
    fn election_change_device_and_roles() {
        let mut a = Arbiter::new(0);
        assert_eq!(
            a.arbitrate(1, &arb(7, 1, None)).unwrap_err().code,
            code::NOT_FOUND
        );
        a.arbitrate(1, &arb(0, 1, None)).unwrap();
        a.arbitrate(2, &arb(0, 2, None)).unwrap();
        // the backup raises its id above the primary's
        assert_eq!(
            summary(&a.arbitrate(1, &arb(0, 3, None)).unwrap()),
            vec![(1, 0, 3), (2, 6, 3)]
        );
        assert_eq!(
            a.arbitrate(1, &arb(9, 3, None)).unwrap_err().code,
            code::FAILED_PRECONDITION
        );
        assert_eq!(
            a.arbitrate(1, &arb(0, 3, Some("other"))).unwrap_err().code,
            code::FAILED_PRECONDITION
        );
        // another role arbitrates on its own
        assert_eq!(
            summary(&a.arbitrate(3, &arb(0, 1, Some("r"))).unwrap()),
            vec![(3, 0, 1)]
        );
        assert!(a.check_primary("r", Some(&to_uint128(1))).is_ok());
        assert!(a.check_primary("", Some(&to_uint128(1))).is_err());
        assert_eq!(a.primaries().len(), 2);
    }

    #[test]
    fn no_stream_accepts_requests_without_election_id() {
        let a = Arbiter::new(0);
        assert!(a.check_primary("", None).is_ok());
        assert!(a.check_primary("", Some(&to_uint128(1))).is_err());
    }

    fn arb_cfg(id: u128, role: &str, ex: &[u32], sh: &[u32]) -> MasterArbitrationUpdate {
        use prost::Message;
        let c = crate::role::P4RoleConfig {
            exclusive_p4_ids: ex.to_vec(),
            shared_p4_ids: sh.to_vec(),
            ..Default::default()
        };
        let mut m = arb(0, id, Some(role));
        if let Some(r) = m.role.as_mut() {
            r.config = Some(prost_types::Any {
                type_url: "type.googleapis.com/stratum.P4RoleConfig".into(),
                value: c.encode_to_vec(),
            });
        }
        m
    }

    #[test]
    fn role_configs() {
        let mut a = Arbiter::new(0);
        a.arbitrate(1, &arb_cfg(1, "l2", &[10, 11], &[20])).unwrap();
        // the same config again, another client: a backup
        assert_eq!(
            summary(&a.arbitrate(2, &arb_cfg(0, "l2", &[10, 11], &[20])).unwrap()),
            vec![(2, 6, 1)]
        );
        // another config for the same role
        assert_eq!(
            a.arbitrate(3, &arb_cfg(2, "l2", &[10], &[]))
                .unwrap_err()
                .code,
            code::INVALID_ARGUMENT
        );
        // another role sharing 20 and holding 30: fine; claiming 10: refused
        a.arbitrate(4, &arb_cfg(1, "acl", &[30], &[20])).unwrap();
        let e = a.arbitrate(5, &arb_cfg(1, "bad", &[], &[10])).unwrap_err();
        assert_eq!(e.code, code::INVALID_ARGUMENT);
        assert!(
            e.message.contains("exclusive to role 'l2'"),
            "{}",
            e.message
        );
        // a config on the default role
        assert_eq!(
            a.arbitrate(6, &arb_cfg(1, "", &[], &[])).unwrap_err().code,
            code::INVALID_ARGUMENT
        );
        assert!(a.access("l2").allows(10) && !a.access("l2").allows(30));
        assert!(a.access("acl").allows(20) && !a.access("acl").allows(10));
        assert!(a.access("").is_full() && a.access("nobody").is_full());
        assert_eq!(a.primaries_with_access().len(), 2);
        // once every client of l2 is gone, its ids are free for another role
        a.leave(1);
        a.leave(2);
        assert!(a.access("l2").is_full());
        a.arbitrate(7, &arb_cfg(1, "l2b", &[10], &[])).unwrap();
    }

    #[test]
    fn stream_limit() {
        let mut a = Arbiter::new(0);
        for i in 0..MAX_STREAMS as u64 {
            a.arbitrate(i, &arb(0, u128::from(i), None)).unwrap();
        }
        assert_eq!(
            a.arbitrate(99, &arb(0, 99, None)).unwrap_err().code,
            code::RESOURCE_EXHAUSTED
        );
    }
}
