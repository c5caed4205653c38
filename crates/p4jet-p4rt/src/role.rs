//! Role configs: what the clients of a role may touch (P4Runtime 1.5 "Role
//! Config").
//!
//! The specification leaves the format of `Role.config` (a `google.protobuf.Any`)
//! to the target. p4jet accepts Stratum's `stratum.P4RoleConfig`, the one scheme
//! P4Runtime servers share today (Stratum, IPDK), so that controllers written for
//! them work unchanged:
//!
//! | field | number | p4jet |
//! |---|---|---|
//! | `repeated uint32 exclusive_p4_ids` | 1 | P4Info ids only this role may write (no other role may name them) |
//! | `repeated uint32 shared_p4_ids` | 2 | P4Info ids this role may write, as may other roles that name them shared |
//! | `PacketFilter packet_in_filter` (`uint32 metadata_id = 1; bytes value = 2`) | 3 | only PacketIns whose `packet_in` metadata `metadata_id` equals `value` |
//! | `bool receives_packet_ins` | 4 | whether the role's primary gets PacketIns at all |
//! | `bool can_push_pipeline` | 5 | whether the role's primary may SetForwardingPipelineConfig |
//!
//! A role with a config writes and reads only the entities its ids name (a table,
//! an action profile, a counter, meter, register, value set or digest; a direct
//! counter or meter through its own id or its table's), receives only the digest
//! lists and idle-timeout notifications of those, and none of the packet
//! replication engine (which has no P4Info id). A role without a config, and the
//! default role (no name, which takes no config), has full pipeline access.

use std::collections::BTreeSet;
use std::sync::Arc;

use prost::Message;

use crate::bytestring::canonical;
use crate::proto::p4::v1::PacketMetadata;

/// The message name in `Any.type_url` (after the last `/`).
pub const ROLE_CONFIG_TYPE: &str = "stratum.P4RoleConfig";

/// `stratum.P4RoleConfig` on the wire.
#[derive(Clone, PartialEq, Message)]
pub struct P4RoleConfig {
    /// P4Info ids only this role may write.
    #[prost(uint32, repeated, tag = "1")]
    pub exclusive_p4_ids: Vec<u32>,
    /// P4Info ids this role shares with other roles.
    #[prost(uint32, repeated, tag = "2")]
    pub shared_p4_ids: Vec<u32>,
    /// Which PacketIns the role receives.
    #[prost(message, optional, tag = "3")]
    pub packet_in_filter: Option<PacketFilter>,
    /// Whether the role receives PacketIns.
    #[prost(bool, tag = "4")]
    pub receives_packet_ins: bool,
    /// Whether the role may set the forwarding pipeline.
    #[prost(bool, tag = "5")]
    pub can_push_pipeline: bool,
}

/// `stratum.P4RoleConfig.PacketFilter`.
#[derive(Clone, PartialEq, Message)]
pub struct PacketFilter {
    /// A `packet_in` controller metadata id.
    #[prost(uint32, tag = "1")]
    pub metadata_id: u32,
    /// The value it must have.
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

/// What a role with a config may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    exclusive: BTreeSet<u32>,
    shared: BTreeSet<u32>,
    /// (metadata id, canonical value)
    packet_in_filter: Option<(u32, Vec<u8>)>,
    receives_packet_ins: bool,
    can_push_pipeline: bool,
}

impl Scope {
    /// The scope of a `Role.config`; an error names what is wrong with it.
    pub fn from_any(any: &prost_types::Any) -> Result<Scope, String> {
        let name = any.type_url.rsplit('/').next().unwrap_or_default();
        if name != ROLE_CONFIG_TYPE {
            return Err(format!(
                "unsupported role config type '{}': p4jet accepts {ROLE_CONFIG_TYPE} \
                 (type_url type.googleapis.com/{ROLE_CONFIG_TYPE})",
                any.type_url
            ));
        }
        let c = P4RoleConfig::decode(any.value.as_slice())
            .map_err(|e| format!("malformed {ROLE_CONFIG_TYPE}: {e}"))?;
        let exclusive: BTreeSet<u32> = c.exclusive_p4_ids.iter().copied().collect();
        let shared: BTreeSet<u32> = c.shared_p4_ids.iter().copied().collect();
        if let Some(id) = exclusive.intersection(&shared).next() {
            return Err(format!(
                "role config names P4 id {id} both exclusive and shared"
            ));
        }
        if exclusive.contains(&0) || shared.contains(&0) {
            return Err("role config names P4 id 0 (no object has it)".into());
        }
        Ok(Scope {
            exclusive,
            shared,
            packet_in_filter: c
                .packet_in_filter
                .map(|f| (f.metadata_id, canonical(&f.value))),
            receives_packet_ins: c.receives_packet_ins,
            can_push_pipeline: c.can_push_pipeline,
        })
    }

    /// Whether the role may write and read the object with this P4Info id.
    pub fn allows(&self, id: u32) -> bool {
        self.exclusive.contains(&id) || self.shared.contains(&id)
    }

    /// Why role `me` (this scope) and role `other` cannot both hold their configs:
    /// an id one of them holds exclusively that the other names at all.
    pub fn conflict(&self, me: &str, other: &Scope, other_name: &str) -> Option<String> {
        let clash = |a: &Scope, b: &Scope| a.exclusive.iter().find(|id| b.allows(**id)).copied();
        if let Some(id) = clash(self, other) {
            return Some(format!(
                "P4 id {id} is exclusive to role '{me}' in its config, but role '{other_name}' \
                 names it too"
            ));
        }
        clash(other, self).map(|id| {
            format!(
                "P4 id {id} is exclusive to role '{other_name}', but the config of role '{me}' \
                 names it too"
            )
        })
    }
}

/// What the clients of a role may do.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Access {
    /// Everything (the default role, or a role without a config).
    #[default]
    Full,
    /// What its config allows.
    Scoped(Arc<Scope>),
}

impl Access {
    /// Whether the role may write and read the object with this P4Info id.
    pub fn allows(&self, id: u32) -> bool {
        match self {
            Access::Full => true,
            Access::Scoped(s) => s.allows(id),
        }
    }

    /// Whether the role has full pipeline access (it may touch what has no P4Info
    /// id: the packet replication engine).
    pub fn is_full(&self) -> bool {
        matches!(self, Access::Full)
    }

    /// Whether the role may set the forwarding pipeline.
    pub fn may_push_pipeline(&self) -> bool {
        match self {
            Access::Full => true,
            Access::Scoped(s) => s.can_push_pipeline,
        }
    }

    /// Whether the role receives a PacketIn with this metadata.
    pub fn receives_packet_in(&self, metadata: &[PacketMetadata]) -> bool {
        match self {
            Access::Full => true,
            Access::Scoped(s) if !s.receives_packet_ins => false,
            Access::Scoped(s) => match &s.packet_in_filter {
                None => true,
                Some((id, value)) => metadata
                    .iter()
                    .any(|m| m.metadata_id == *id && canonical(&m.value) == *value),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    pub(crate) fn any(c: &P4RoleConfig) -> prost_types::Any {
        prost_types::Any {
            type_url: format!("type.googleapis.com/{ROLE_CONFIG_TYPE}"),
            value: c.encode_to_vec(),
        }
    }

    #[test]
    fn scope_of_a_config() {
        let c = P4RoleConfig {
            exclusive_p4_ids: vec![10, 11],
            shared_p4_ids: vec![20],
            packet_in_filter: Some(PacketFilter {
                metadata_id: 1,
                value: vec![0, 1],
            }),
            receives_packet_ins: true,
            can_push_pipeline: false,
        };
        let s = Scope::from_any(&any(&c)).unwrap();
        assert!(s.allows(10) && s.allows(20) && !s.allows(30));
        let a = Access::Scoped(Arc::new(s));
        assert!(!a.may_push_pipeline() && !a.is_full());
        let md = |v: &[u8]| {
            vec![PacketMetadata {
                metadata_id: 1,
                value: v.to_vec(),
            }]
        };
        // the filter compares canonical bytestrings
        assert!(a.receives_packet_in(&md(&[1])));
        assert!(a.receives_packet_in(&md(&[0, 0, 1])));
        assert!(!a.receives_packet_in(&md(&[2])));
        assert!(!a.receives_packet_in(&[]));
        assert!(Access::Full.receives_packet_in(&[]) && Access::Full.allows(30));
        // no packet-ins at all
        let quiet = Scope::from_any(&any(&P4RoleConfig::default())).unwrap();
        assert!(!Access::Scoped(Arc::new(quiet)).receives_packet_in(&md(&[1])));
    }

    #[test]
    fn bad_configs() {
        let mut a = any(&P4RoleConfig::default());
        a.type_url = "type.googleapis.com/acme.Role".into();
        assert!(Scope::from_any(&a).unwrap_err().contains("unsupported"));
        let a = prost_types::Any {
            type_url: ROLE_CONFIG_TYPE.into(),
            value: vec![0x0a, 0xff],
        };
        assert!(Scope::from_any(&a).unwrap_err().contains("malformed"));
        let both = P4RoleConfig {
            exclusive_p4_ids: vec![5],
            shared_p4_ids: vec![5],
            ..Default::default()
        };
        assert!(Scope::from_any(&any(&both)).is_err());
    }

    #[test]
    fn conflicts() {
        let s = |ex: &[u32], sh: &[u32]| {
            Scope::from_any(&any(&P4RoleConfig {
                exclusive_p4_ids: ex.to_vec(),
                shared_p4_ids: sh.to_vec(),
                ..Default::default()
            }))
            .unwrap()
        };
        assert!(s(&[1], &[3]).conflict("a", &s(&[2], &[3]), "b").is_none());
        assert!(s(&[1], &[]).conflict("a", &s(&[], &[1]), "b").is_some());
        assert!(s(&[], &[2]).conflict("a", &s(&[2], &[]), "b").is_some());
        assert!(s(&[1], &[]).conflict("a", &s(&[1], &[]), "b").is_some());
    }
}
