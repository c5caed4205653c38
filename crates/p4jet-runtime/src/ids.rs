//! Typed ids: what every operation addresses objects by.
//!
//! Program objects (tables, actions, profiles, counters, meters, registers, digests,
//! value sets, calculations) are numbered densely in the order of the bmv2 JSON, the
//! same order as the lowered program (`p4jet_ir::Program`): `TableId(3)` is
//! `schema.tables[3]`. The JSON's own `id` of each object, and its P4Info id once a
//! P4Info is joined ([`crate::p4info`]), are attributes of the object in the
//! [`crate::Schema`], not its address.
//!
//! Run-time objects are numbered by the switch ([`EntryHandle`], bmv2's entry handle)
//! or by whoever creates them (member and group ids, multicast group ids, clone
//! session ids: chosen by a P4Runtime controller, or allocated by the switch, lowest
//! free first, as bmv2 does, when the request leaves them open).

use std::fmt;

macro_rules! id {
    ($(#[$meta:meta])* $name:ident, $what:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub u32);

        impl $name {
            /// The position in its list.
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($what, " {}"), self.0)
            }
        }

        impl From<u32> for $name {
            fn from(v: u32) -> Self {
                $name(v)
            }
        }
    };
}

id!(
    /// A match table (index into [`crate::Schema::tables`]).
    TableId,
    "table"
);
id!(
    /// An action (index into [`crate::Schema::actions`]). The JSON may hold several
    /// actions of one name (p4c copies `NoAction` per use): each has its own id.
    ActionId,
    "action"
);
id!(
    /// An action profile or selector (index into [`crate::Schema::profiles`]).
    ProfileId,
    "action profile"
);
id!(
    /// A counter array, direct or indexed (index into [`crate::Schema::counters`]).
    CounterId,
    "counter"
);
id!(
    /// A meter array, direct or indexed (index into [`crate::Schema::meters`]).
    MeterId,
    "meter"
);
id!(
    /// A register array (index into [`crate::Schema::registers`]).
    RegisterId,
    "register"
);
id!(
    /// A learn list / digest (index into [`crate::Schema::digests`]).
    DigestId,
    "digest"
);
id!(
    /// A parser value set (index into [`crate::Schema::value_sets`]).
    ValueSetId,
    "value set"
);
id!(
    /// A named hash calculation (index into [`crate::Schema::calculations`]).
    CalcId,
    "calculation"
);
id!(
    /// A table entry: bmv2's entry handle, `(version << 24) | slot`. A handle names
    /// one entry for as long as it lives; a slot reused later has another version.
    EntryHandle,
    "entry"
);
id!(
    /// An action profile member (bmv2's member handle, or a P4Runtime member id).
    MemberId,
    "member"
);
id!(
    /// An action selector group (bmv2's group handle, or a P4Runtime group id).
    GroupId,
    "group"
);
id!(
    /// A multicast node of bmv2's PRE (an "L1 handle").
    McNodeHandle,
    "multicast node"
);

/// A multicast group id (`mgid`, `standard_metadata.mcast_grp`).
pub type McGroupId = u32;
/// A clone (mirroring) session id (`clone(CloneType, session)`).
pub type SessionId = u32;
/// A port number.
pub type PortId = u32;

impl EntryHandle {
    /// The slot of the handle (its low 24 bits): where its direct counter and meter
    /// cells live.
    #[inline]
    pub fn slot(self) -> u32 {
        self.0 & 0x00ff_ffff
    }
}
