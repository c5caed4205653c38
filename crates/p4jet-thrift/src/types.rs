//! bmv2's Thrift IDL types as Rust: match parameters, entries, members, groups,
//! counter and meter values, configuration structs, port maps, and the enums that
//! tag them. The error codes are [`p4jet_runtime::bmv2`]'s.
//!
//! Shapes follow the IDL (`standard.thrift`, `simple_pre_lag.thrift`,
//! `simple_switch.thrift`): match keys are [`BmMatchParam`]s whose values are
//! big-endian byte strings of `ceil(width / 8)` bytes, action data is one byte string
//! per action parameter. Where the IDL uses a signed type only because Thrift has no
//! unsigned ones (CRC parameters, counter values, burst sizes), the Rust type is the
//! unsigned type with the same bits; the codec converts with `as`.

use std::collections::BTreeMap;
use std::fmt;

/// Handle of a match-table entry (`BmEntryHandle`).
pub type BmEntryHandle = i32;

/// Handle of an action-profile member (`BmMemberHandle`).
pub type BmMemberHandle = i32;

/// Handle of an action-selector group (`BmGroupHandle`).
pub type BmGroupHandle = i32;

/// Action data: one big-endian byte string per action parameter, each
/// `ceil(bitwidth / 8)` bytes long.
pub type BmActionData = Vec<Vec<u8>>;

/// A match key: one parameter per key field, in the table's key order.
pub type BmMatchParams = Vec<BmMatchParam>;

/// Learn list id (`learn_lists[].id` in the JSON).
pub type BmLearningListId = i32;

/// Learning buffer id (from the notification header).
pub type BmLearningBufferId = i64;

/// Sample index inside a learning buffer.
pub type BmLearningSampleId = i32;

/// Register cell value as carried by Thrift (bmv2 limits it to 64 bits).
pub type BmRegisterValue = i64;

/// A parser value set value: big-endian, `ceil(compressed_bitwidth / 8)` bytes.
pub type BmParseVSetValue = Vec<u8>;

/// Multicast group id (mgid).
pub type BmMcMgrp = i32;

/// Replication id of a multicast node (`egress_rid` of its copies).
pub type BmMcRid = i32;

/// Handle of a multicast group; in bmv2 it equals the mgid.
pub type BmMcMgrpHandle = i32;

/// Handle of a multicast (L1) node.
pub type BmMcL1Handle = i32;

/// LAG index.
pub type BmMcLagIndex = i16;

/// Port bitmap as a string of `'0'`/`'1'`, the last character being port 0
/// (see [`port_map_to_ports`] and [`ports_to_port_map`]).
pub type BmMcPortMap = String;

/// LAG bitmap, same encoding as [`BmMcPortMap`].
pub type BmMcLagMap = String;

/// Defines a Thrift enum: variant names and numbers exactly as in the IDL.
macro_rules! thrift_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $value:expr),+ $(,)? }) => {
        $(#[$meta])*
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(i32)]
        pub enum $name {
            $(
                #[allow(missing_docs)]
                $variant = $value,
            )+
        }

        impl $name {
            /// All variants, in IDL order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The number sent on the wire.
            pub fn code(self) -> i32 {
                self as i32
            }

            /// The variant with this wire number, if any.
            pub fn from_code(code: i32) -> Option<Self> {
                match code {
                    $(x if x == $value => Some($name::$variant),)+
                    _ => None,
                }
            }

            /// The IDL name of the variant (what simple_switch_CLI prints).
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => stringify!($variant),)+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

thrift_enum! {
    /// `BmMatchParamType`.
    BmMatchParamType { EXACT = 0, LPM = 1, TERNARY = 2, VALID = 3, RANGE = 4 }
}

thrift_enum! {
    /// `BmActionEntryType` (the tag of [`BmActionEntry`]).
    BmActionEntryType { NONE = 0, ACTION_DATA = 1, MBR_HANDLE = 2, GRP_HANDLE = 3 }
}

thrift_enum! {
    /// `BmResourceType` (for `bm_get_id_from_name`).
    BmResourceType {
        MATCH_TABLE = 0,
        ACTION_PROFILE = 1,
        COUNTER = 2,
        METER = 3,
        REGISTER = 4,
        LEARNING_LIST = 5,
    }
}

/// One field of a match key (`BmMatchParam`; the IDL's `type` tag plus the
/// one optional struct that is set). Byte strings are big-endian,
/// `ceil(field width / 8)` bytes; a `$valid$` or legacy `valid` key is
/// [`BmMatchParam::Valid`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BmMatchParam {
    /// `BmMatchParamExact`.
    Exact {
        /// Value.
        key: Vec<u8>,
    },
    /// `BmMatchParamLPM`.
    Lpm {
        /// Value (bits past the prefix are not required to be zero).
        key: Vec<u8>,
        /// Prefix length in bits.
        prefix_length: i32,
    },
    /// `BmMatchParamTernary` (the key is not pre-masked by the client).
    Ternary {
        /// Value.
        key: Vec<u8>,
        /// Mask.
        mask: Vec<u8>,
    },
    /// `BmMatchParamValid`.
    Valid {
        /// Whether the header must be valid.
        key: bool,
    },
    /// `BmMatchParamRange` (`end_` in the IDL; bounds inclusive).
    Range {
        /// Lower bound.
        start: Vec<u8>,
        /// Upper bound.
        end: Vec<u8>,
    },
}

impl BmMatchParam {
    /// The IDL type tag.
    pub fn param_type(&self) -> BmMatchParamType {
        match self {
            BmMatchParam::Exact { .. } => BmMatchParamType::EXACT,
            BmMatchParam::Lpm { .. } => BmMatchParamType::LPM,
            BmMatchParam::Ternary { .. } => BmMatchParamType::TERNARY,
            BmMatchParam::Valid { .. } => BmMatchParamType::VALID,
            BmMatchParam::Range { .. } => BmMatchParamType::RANGE,
        }
    }
}

/// `BmAddEntryOptions`. simple_switch_CLI always sets the priority: the
/// user's value for ternary/range tables, 0 otherwise. In bmv2 the
/// numerically smallest priority wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BmAddEntryOptions {
    /// Entry priority (optional in the IDL).
    pub priority: Option<i32>,
}

/// `BmCounterValue` (bmv2 counts both for every counter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BmCounterValue {
    /// Byte count (`i64` on the wire).
    pub bytes: u64,
    /// Packet count (`i64` on the wire).
    pub packets: u64,
}

/// `BmMeterRateConfig`: one rate of a (two-rate, three-color) meter.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BmMeterRateConfig {
    /// Information rate in units (packets or bytes) per microsecond.
    pub units_per_micros: f64,
    /// Burst size in units (`i32` on the wire).
    pub burst_size: u32,
}

/// `BmActionEntry`: what a table entry (or default entry) does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BmActionEntry {
    /// No action (only for a default entry that was never configured).
    None,
    /// A direct action with its data.
    ActionData {
        /// Fully qualified action name.
        action_name: String,
        /// Action data.
        action_data: BmActionData,
    },
    /// An action profile member (indirect tables).
    MbrHandle(BmMemberHandle),
    /// An action selector group (indirect tables with selector).
    GrpHandle(BmGroupHandle),
}

impl BmActionEntry {
    /// The IDL type tag.
    pub fn action_type(&self) -> BmActionEntryType {
        match self {
            BmActionEntry::None => BmActionEntryType::NONE,
            BmActionEntry::ActionData { .. } => BmActionEntryType::ACTION_DATA,
            BmActionEntry::MbrHandle(_) => BmActionEntryType::MBR_HANDLE,
            BmActionEntry::GrpHandle(_) => BmActionEntryType::GRP_HANDLE,
        }
    }
}

/// `BmMtEntryLife`: ageing information of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BmMtEntryLife {
    /// Configured timeout.
    pub timeout_ms: i32,
    /// Time since the entry was last hit.
    pub time_since_hit_ms: i32,
}

/// `BmMtEntry`: a table entry as returned by the get RPCs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BmMtEntry {
    /// The match key, one parameter per key field.
    pub match_key: BmMatchParams,
    /// bmv2 reports the stored priority; exact and LPM entries report -1,
    /// which simple_switch_CLI does not print.
    pub options: BmAddEntryOptions,
    /// The entry handle.
    pub entry_handle: BmEntryHandle,
    /// The action part.
    pub action_entry: BmActionEntry,
    /// Set for tables with `support_timeout`.
    pub life: Option<BmMtEntryLife>,
}

/// `BmMtActProfMember`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BmMtActProfMember {
    /// Member handle.
    pub mbr_handle: BmMemberHandle,
    /// Fully qualified action name.
    pub action_name: String,
    /// Action data.
    pub action_data: BmActionData,
}

/// `BmMtActProfGroup`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BmMtActProfGroup {
    /// Group handle.
    pub grp_handle: BmGroupHandle,
    /// Members of the group.
    pub mbr_handles: Vec<BmMemberHandle>,
}

/// `BmConfig` (answer of `bm_mgmt_get_info`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct BmConfig {
    /// `--device-id`.
    pub device_id: i64,
    /// `--thrift-port`.
    pub thrift_port: i32,
    /// Nanomsg address of the notifications socket, if any.
    pub notifications_socket: Option<String>,
    /// Nanomsg address of the event logger, if any.
    pub elogger_socket: Option<String>,
    /// Address of the debugger, if any.
    pub debugger_socket: Option<String>,
}

/// `DevMgrPortInfo` (answer of `bm_dev_mgr_show_ports`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct DevMgrPortInfo {
    /// Port number.
    pub port_num: i32,
    /// Interface name.
    pub iface_name: String,
    /// Link state.
    pub is_up: bool,
    /// Extra information (shown as `k=v; ...`).
    pub extra: BTreeMap<String, String>,
}

/// `BmCrc16Config` (`i16` fields on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BmCrc16Config {
    /// Polynomial (without the top bit).
    pub polynomial: u16,
    /// Initial remainder.
    pub initial_remainder: u16,
    /// Value XORed into the final remainder.
    pub final_xor_value: u16,
    /// Reflect each input byte.
    pub data_reflected: bool,
    /// Reflect the final remainder.
    pub remainder_reflected: bool,
}

/// `BmCrc32Config` (`i32` fields on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BmCrc32Config {
    /// Polynomial (without the top bit).
    pub polynomial: u32,
    /// Initial remainder.
    pub initial_remainder: u32,
    /// Value XORed into the final remainder.
    pub final_xor_value: u32,
    /// Reflect each input byte.
    pub data_reflected: bool,
    /// Reflect the final remainder.
    pub remainder_reflected: bool,
}

/// `MirroringSessionConfig` of `simple_switch`: where clones of a session go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MirroringSessionConfig {
    /// Egress port of the clones.
    pub port: Option<i32>,
    /// Multicast group of the clones.
    pub mgid: Option<i32>,
}

impl fmt::Display for MirroringSessionConfig {
    /// The Python repr simple_switch_CLI prints for `mirroring_get`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn opt(v: Option<i32>) -> String {
            v.map_or_else(|| "None".to_string(), |v| v.to_string())
        }
        write!(
            f,
            "MirroringSessionConfig(port={}, mgid={})",
            opt(self.port),
            opt(self.mgid)
        )
    }
}

/// Error of [`port_map_to_ports`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPortMap(pub String);

impl fmt::Display for BadPortMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid port map {:?}: only '0' and '1' are allowed",
            self.0
        )
    }
}

impl std::error::Error for BadPortMap {}

/// Decodes a `simple_pre_lag` port (or LAG) map: a string of `'0'` and `'1'`
/// whose last character is port 0. Returns the set ports in ascending order.
pub fn port_map_to_ports(map: &str) -> Result<Vec<u32>, BadPortMap> {
    let mut ports = Vec::new();
    for (port, c) in map.bytes().rev().enumerate() {
        match c {
            b'1' => ports.push(u32::try_from(port).map_err(|_| BadPortMap(map.to_string()))?),
            b'0' => {}
            _ => return Err(BadPortMap(map.to_string())),
        }
    }
    Ok(ports)
}

/// Encodes ports as a `simple_pre_lag` port map, as simple_switch_CLI does
/// (shortest string; empty for no port). Duplicates are merged.
pub fn ports_to_port_map(ports: &[u32]) -> String {
    let Some(&max) = ports.iter().max() else {
        return String::new();
    };
    let len = max as usize + 1;
    let mut bits = vec![b'0'; len];
    for &p in ports {
        bits[len - 1 - p as usize] = b'1';
    }
    bits.into_iter().map(char::from).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn port_maps() {
        assert_eq!(ports_to_port_map(&[0, 1, 2, 3]), "1111");
        assert_eq!(ports_to_port_map(&[1, 3]), "1010");
        assert_eq!(ports_to_port_map(&[]), "");
        assert_eq!(port_map_to_ports("1010").unwrap(), vec![1, 3]);
        assert_eq!(port_map_to_ports("").unwrap(), Vec::<u32>::new());
        assert!(port_map_to_ports("10x").is_err());
    }

    #[test]
    fn mirroring_config_repr() {
        let c = MirroringSessionConfig {
            port: Some(3),
            mgid: None,
        };
        assert_eq!(c.to_string(), "MirroringSessionConfig(port=3, mgid=None)");
    }

    #[test]
    fn enums_follow_the_idl() {
        assert_eq!(BmMatchParamType::RANGE.code(), 4);
        assert_eq!(
            BmResourceType::from_code(5),
            Some(BmResourceType::LEARNING_LIST)
        );
        assert_eq!(BmActionEntryType::GRP_HANDLE.name(), "GRP_HANDLE");
    }
}
