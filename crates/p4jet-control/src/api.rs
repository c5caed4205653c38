//! The bmv2 runtime API as a Rust trait.
//!
//! [`RuntimeApi`] mirrors the three Thrift services that bmv2 `simple_switch`
//! serves and that the stock `simple_switch_CLI`, p4c's STF driver and
//! p4-utils use: `standard` (tables, action profiles, counters, meters,
//! registers, parser value sets, learning, configuration, device manager),
//! `simple_pre_lag` (the multicast packet replication engine) and
//! `simple_switch` (mirroring sessions, egress queues, clock).
//!
//! Shapes follow the Thrift IDL: method names are the RPC names, match keys
//! are [`BmMatchParam`]s whose values are big-endian byte strings of
//! `ceil(width / 8)` bytes, action data is one byte string per action
//! parameter, and every Thrift exception is its own error type whose code
//! enum has the IDL's variant names and numbers (a Thrift server sends
//! [`TableOperationErrorCode::code`] on the wire; `simple_switch_CLI` prints
//! [`TableOperationErrorCode::name`]).
//!
//! Conventions:
//! * Names are the fully qualified JSON names (`IngressImpl.dmac`): clients
//!   resolve suffixes before calling.
//! * The Thrift `cxt_id` argument is not part of the trait: simple_switch has
//!   a single context (0), and a Thrift server should treat any other value
//!   as an invalid name for the resource concerned.
//! * Every method returns [`ApiResult`]: either the declared Thrift exception
//!   ([`ApiError::Exception`]) or an [`ApiError::Internal`] failure that a
//!   Thrift server reports as a `TApplicationException` (and a remote client
//!   uses for transport errors). Methods without a declared exception use
//!   [`Infallible`] as the exception type.
//! * Where the IDL uses a signed type only because Thrift has no unsigned
//!   ones (CRC parameters, counter values, burst sizes), the trait uses the
//!   unsigned type with the same bits; the Thrift layer converts with `as`.

use std::collections::BTreeMap;
use std::convert::Infallible;
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

/// Result of a runtime API call: `E` is the Thrift exception the RPC declares.
pub type ApiResult<T, E = Infallible> = Result<T, ApiError<E>>;

/// Failure of a runtime API call.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiError<E> {
    /// The Thrift exception declared by the RPC (e.g. [`InvalidTableOperation`]).
    Exception(E),
    /// Anything else: a bug, an unsupported call, or (for a remote client) a
    /// transport error. A Thrift server answers with a `TApplicationException`.
    Internal(String),
}

impl<E> From<E> for ApiError<E> {
    fn from(e: E) -> Self {
        ApiError::Exception(e)
    }
}

impl<E: fmt::Display> fmt::Display for ApiError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::Exception(e) => e.fmt(f),
            ApiError::Internal(msg) => f.write_str(msg),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for ApiError<E> {}

/// What every Thrift exception of the runtime API provides.
pub trait ThriftException: fmt::Display + fmt::Debug {
    /// IDL name of the error code (`DUPLICATE_ENTRY`).
    fn code_name(&self) -> &'static str;
    /// Wire number of the error code.
    fn code_value(&self) -> i32;
}

/// RPCs that declare no exception.
impl ThriftException for Infallible {
    fn code_name(&self) -> &'static str {
        match *self {}
    }

    fn code_value(&self) -> i32 {
        match *self {}
    }
}

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

/// Defines a Thrift exception `{ 1: Code code }` whose Display is the line
/// simple_switch_CLI prints for it.
macro_rules! thrift_exception {
    ($(#[$meta:meta])* $name:ident($code:ident), $msg:expr) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name {
            /// The error code.
            pub code: $code,
        }

        impl $name {
            /// An exception with this code.
            pub fn new(code: $code) -> Self {
                $name { code }
            }
        }

        impl From<$code> for $name {
            fn from(code: $code) -> Self {
                $name { code }
            }
        }

        impl From<$code> for ApiError<$name> {
            fn from(code: $code) -> Self {
                ApiError::Exception($name { code })
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{} ({})", $msg, self.code.name())
            }
        }

        impl std::error::Error for $name {}

        impl ThriftException for $name {
            fn code_name(&self) -> &'static str {
                self.code.name()
            }

            fn code_value(&self) -> i32 {
                self.code.code()
            }
        }
    };
}

thrift_enum! {
    /// `BmMatchParamType`.
    BmMatchParamType { EXACT = 0, LPM = 1, TERNARY = 2, VALID = 3, RANGE = 4 }
}

thrift_enum! {
    /// `TableOperationErrorCode` (exception [`InvalidTableOperation`]; also used
    /// by the action profile RPCs).
    TableOperationErrorCode {
        TABLE_FULL = 1,
        INVALID_HANDLE = 2,
        EXPIRED_HANDLE = 3,
        COUNTERS_DISABLED = 4,
        METERS_DISABLED = 5,
        AGEING_DISABLED = 6,
        INVALID_TABLE_NAME = 7,
        INVALID_ACTION_NAME = 8,
        WRONG_TABLE_TYPE = 9,
        INVALID_MBR_HANDLE = 10,
        MBR_STILL_USED = 11,
        MBR_ALREADY_IN_GRP = 12,
        MBR_NOT_IN_GRP = 13,
        INVALID_GRP_HANDLE = 14,
        GRP_STILL_USED = 15,
        EMPTY_GRP = 16,
        DUPLICATE_ENTRY = 17,
        BAD_MATCH_KEY = 18,
        INVALID_METER_OPERATION = 19,
        DEFAULT_ACTION_IS_CONST = 20,
        DEFAULT_ENTRY_IS_CONST = 21,
        NO_DEFAULT_ENTRY = 22,
        INVALID_ACTION_PROFILE_NAME = 23,
        NO_ACTION_PROFILE_SELECTION = 24,
        IMMUTABLE_TABLE_ENTRIES = 25,
        BAD_ACTION_DATA = 26,
        ERROR = 100,
    }
}

thrift_enum! {
    /// `CounterOperationErrorCode`.
    CounterOperationErrorCode { INVALID_COUNTER_NAME = 1, INVALID_INDEX = 2, ERROR = 3 }
}

thrift_enum! {
    /// `SwapOperationErrorCode`.
    SwapOperationErrorCode { CONFIG_SWAP_DISABLED = 1, ONGOING_SWAP = 2, NO_ONGOING_SWAP = 3 }
}

thrift_enum! {
    /// `MeterOperationErrorCode`.
    MeterOperationErrorCode {
        INVALID_METER_NAME = 1,
        INVALID_INDEX = 2,
        BAD_RATES_LIST = 3,
        INVALID_INFO_RATE_VALUE = 4,
        INVALID_BURST_SIZE_VALUE = 5,
        ERROR = 6,
    }
}

thrift_enum! {
    /// `RegisterOperationErrorCode`.
    RegisterOperationErrorCode { INVALID_REGISTER_NAME = 1, INVALID_INDEX = 2, ERROR = 3 }
}

thrift_enum! {
    /// `ParseVSetOperationErrorCode`.
    ParseVSetOperationErrorCode { INVALID_PARSE_VSET_NAME = 1, ERROR = 2 }
}

thrift_enum! {
    /// `LearnOperationErrorCode`.
    LearnOperationErrorCode { INVALID_LIST_ID = 1, INVALID_LIST_NAME = 2, ERROR = 3 }
}

thrift_enum! {
    /// `DevMgrErrorCode`.
    DevMgrErrorCode { ERROR = 1 }
}

thrift_enum! {
    /// `CrcErrorCode`.
    CrcErrorCode { INVALID_CALCULATION_NAME = 1, WRONG_TYPE_CALCULATION = 2, INVALID_CONFIG = 3 }
}

thrift_enum! {
    /// `ToeplitzHashErrorCode`.
    ToeplitzHashErrorCode { INVALID_CALCULATION_NAME = 1, WRONG_TYPE_CALCULATION = 2, INVALID_KEY = 3 }
}

thrift_enum! {
    /// `BmActionEntryType` (the tag of [`BmActionEntry`]).
    BmActionEntryType { NONE = 0, ACTION_DATA = 1, MBR_HANDLE = 2, GRP_HANDLE = 3 }
}

thrift_enum! {
    /// `BmResourceType` (for [`RuntimeApi::bm_get_id_from_name`]).
    BmResourceType {
        MATCH_TABLE = 0,
        ACTION_PROFILE = 1,
        COUNTER = 2,
        METER = 3,
        REGISTER = 4,
        LEARNING_LIST = 5,
    }
}

thrift_enum! {
    /// `IdLookupErrorCode`.
    IdLookupErrorCode { INVALID_RESOURCE_TYPE = 0, INVALID_RESOURCE_NAME = 1 }
}

thrift_enum! {
    /// `McOperationErrorCode` of the `simple_pre_lag` service.
    McOperationErrorCode {
        TABLE_FULL = 1,
        INVALID_MGID = 2,
        INVALID_MGRP_HANDLE = 3,
        INVALID_L1_HANDLE = 4,
        ERROR = 5,
    }
}

thrift_enum! {
    /// `MirroringOperationErrorCode` of the `simple_switch` service.
    MirroringOperationErrorCode { SESSION_NOT_FOUND = 1 }
}

thrift_exception!(
    /// `InvalidTableOperation`: match tables and action profiles.
    InvalidTableOperation(TableOperationErrorCode),
    "Invalid table operation"
);
thrift_exception!(
    /// `InvalidCounterOperation`: counter arrays.
    InvalidCounterOperation(CounterOperationErrorCode),
    "Invalid counter operation"
);
thrift_exception!(
    /// `InvalidSwapOperation`: configuration swap.
    InvalidSwapOperation(SwapOperationErrorCode),
    "Invalid swap operation"
);
thrift_exception!(
    /// `InvalidMeterOperation`: meter arrays.
    InvalidMeterOperation(MeterOperationErrorCode),
    "Invalid meter operation"
);
thrift_exception!(
    /// `InvalidRegisterOperation`: register arrays.
    InvalidRegisterOperation(RegisterOperationErrorCode),
    "Invalid register operation"
);
thrift_exception!(
    /// `InvalidParseVSetOperation`: parser value sets.
    InvalidParseVSetOperation(ParseVSetOperationErrorCode),
    "Invalid parser value set operation"
);
thrift_exception!(
    /// `InvalidLearnOperation`: learning acks and settings.
    InvalidLearnOperation(LearnOperationErrorCode),
    "Invalid learn operation"
);
thrift_exception!(
    /// `InvalidDevMgrOperation`: port management.
    InvalidDevMgrOperation(DevMgrErrorCode),
    "Invalid device manager operation"
);
thrift_exception!(
    /// `InvalidCrcOperation`: custom CRC parameters.
    InvalidCrcOperation(CrcErrorCode),
    "Invalid crc operation"
);
thrift_exception!(
    /// `InvalidToeplitzHashOperation`: Toeplitz hash key.
    InvalidToeplitzHashOperation(ToeplitzHashErrorCode),
    "Invalid Toeplitz hash operation"
);
thrift_exception!(
    /// `InvalidIdLookup`: [`RuntimeApi::bm_get_id_from_name`].
    InvalidIdLookup(IdLookupErrorCode),
    "Invalid id lookup"
);
thrift_exception!(
    /// `InvalidMcOperation` of `simple_pre_lag` (simple_switch_CLI calls it a
    /// "PRE operation").
    InvalidMcOperation(McOperationErrorCode),
    "Invalid PRE operation"
);
thrift_exception!(
    /// `InvalidMirroringOperation` of `simple_switch`.
    InvalidMirroringOperation(MirroringOperationErrorCode),
    "Invalid mirroring operation"
);

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

/// One entry of [`RuntimeApi::bm_mt_add_entries`]: the arguments of one
/// `bm_mt_add_entry` call, owned so that the switch can keep the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BmAddEntryRequest<'a> {
    /// Table (full name).
    pub table_name: &'a str,
    /// Match key.
    pub match_key: Vec<BmMatchParam>,
    /// Action (full name).
    pub action_name: &'a str,
    /// Action data, one byte string per parameter.
    pub action_data: Vec<Vec<u8>>,
    /// Options.
    pub options: BmAddEntryOptions,
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

/// `BmConfig` (answer of [`RuntimeApi::bm_mgmt_get_info`]).
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

/// `DevMgrPortInfo` (answer of [`RuntimeApi::bm_dev_mgr_show_ports`]).
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

/// The bmv2 runtime API (Thrift services `standard`, `simple_pre_lag` and
/// `simple_switch`), one method per RPC, named like the RPC.
///
/// The switch implements it; the Thrift server decodes wire calls into it;
/// [`crate::cli::Cli`] drives it from simple_switch_CLI commands.
pub trait RuntimeApi {
    // ---------------------------------------------------------------------
    // standard: match tables (direct and indirect)

    /// Number of entries of a table (direct or indirect; the default entry
    /// does not count).
    fn bm_mt_get_num_entries(&mut self, table_name: &str) -> ApiResult<i64, InvalidTableOperation>;

    /// Removes all entries; also resets the default entry if asked
    /// (simple_switch_CLI's `table_clear` does not).
    fn bm_mt_clear_entries(
        &mut self,
        table_name: &str,
        reset_default_entry: bool,
    ) -> ApiResult<(), InvalidTableOperation>;

    /// Adds an entry to a direct table; returns its handle.
    fn bm_mt_add_entry(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        action_name: &str,
        action_data: &[Vec<u8>],
        options: BmAddEntryOptions,
    ) -> ApiResult<BmEntryHandle, InvalidTableOperation>;

    /// Adds entries to direct tables, in order; one result per entry, each
    /// exactly what `bm_mt_add_entry` with the same arguments would return at
    /// that point of the sequence (a refused entry changes nothing and the
    /// following ones are still added). Not an RPC: bulk loaders (commands
    /// files) use it so that the switch can apply many entries at once (p4jet
    /// publishes them together, so a reader sees all or none of them). The
    /// default calls `bm_mt_add_entry` for each entry.
    fn bm_mt_add_entries(
        &mut self,
        entries: Vec<BmAddEntryRequest<'_>>,
    ) -> Vec<ApiResult<BmEntryHandle, InvalidTableOperation>> {
        entries
            .into_iter()
            .map(|e| {
                self.bm_mt_add_entry(
                    e.table_name,
                    &e.match_key,
                    e.action_name,
                    &e.action_data,
                    e.options,
                )
            })
            .collect()
    }

    /// A hint that about `additional` entries are about to be added to this
    /// table (a bulk load), so that the switch can size the table once. Not an
    /// RPC; changes nothing visible. The default does nothing.
    fn bm_mt_reserve_entries(&mut self, table_name: &str, additional: usize) {
        let _ = (table_name, additional);
    }

    /// Sets the default action of a direct table.
    fn bm_mt_set_default_action(
        &mut self,
        table_name: &str,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> ApiResult<(), InvalidTableOperation>;

    /// Restores the default entry of the JSON (`default_entry`).
    fn bm_mt_reset_default_entry(
        &mut self,
        table_name: &str,
    ) -> ApiResult<(), InvalidTableOperation>;

    /// Deletes an entry of a direct table.
    fn bm_mt_delete_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> ApiResult<(), InvalidTableOperation>;

    /// Changes the action of an entry of a direct table.
    fn bm_mt_modify_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> ApiResult<(), InvalidTableOperation>;

    /// Sets the ageing timeout of an entry of a direct table.
    fn bm_mt_set_entry_ttl(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        timeout_ms: i32,
    ) -> ApiResult<(), InvalidTableOperation>;

    // ---------------------------------------------------------------------
    // standard: action profiles

    /// Creates a member; returns its handle.
    fn bm_mt_act_prof_add_member(
        &mut self,
        act_prof_name: &str,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> ApiResult<BmMemberHandle, InvalidTableOperation>;

    /// Deletes a member.
    fn bm_mt_act_prof_delete_member(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
    ) -> ApiResult<(), InvalidTableOperation>;

    /// Changes the action of a member.
    fn bm_mt_act_prof_modify_member(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> ApiResult<(), InvalidTableOperation>;

    /// Creates a group (action selectors only); returns its handle.
    fn bm_mt_act_prof_create_group(
        &mut self,
        act_prof_name: &str,
    ) -> ApiResult<BmGroupHandle, InvalidTableOperation>;

    /// Deletes a group.
    fn bm_mt_act_prof_delete_group(
        &mut self,
        act_prof_name: &str,
        grp_handle: BmGroupHandle,
    ) -> ApiResult<(), InvalidTableOperation>;

    /// Adds a member to a group.
    fn bm_mt_act_prof_add_member_to_group(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
        grp_handle: BmGroupHandle,
    ) -> ApiResult<(), InvalidTableOperation>;

    /// Removes a member from a group.
    fn bm_mt_act_prof_remove_member_from_group(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
        grp_handle: BmGroupHandle,
    ) -> ApiResult<(), InvalidTableOperation>;

    /// All members.
    fn bm_mt_act_prof_get_members(
        &mut self,
        act_prof_name: &str,
    ) -> ApiResult<Vec<BmMtActProfMember>, InvalidTableOperation>;

    /// One member.
    fn bm_mt_act_prof_get_member(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
    ) -> ApiResult<BmMtActProfMember, InvalidTableOperation>;

    /// All groups.
    fn bm_mt_act_prof_get_groups(
        &mut self,
        act_prof_name: &str,
    ) -> ApiResult<Vec<BmMtActProfGroup>, InvalidTableOperation>;

    /// One group.
    fn bm_mt_act_prof_get_group(
        &mut self,
        act_prof_name: &str,
        grp_handle: BmGroupHandle,
    ) -> ApiResult<BmMtActProfGroup, InvalidTableOperation>;

    // ---------------------------------------------------------------------
    // standard: indirect tables (action profile) and indirect_ws (selector)

    /// Adds an entry pointing to a member; returns its handle.
    fn bm_mt_indirect_add_entry(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        mbr_handle: BmMemberHandle,
        options: BmAddEntryOptions,
    ) -> ApiResult<BmEntryHandle, InvalidTableOperation>;

    /// Points an entry to another member.
    fn bm_mt_indirect_modify_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        mbr_handle: BmMemberHandle,
    ) -> ApiResult<(), InvalidTableOperation>;

    /// Deletes an entry of an indirect table.
    fn bm_mt_indirect_delete_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> ApiResult<(), InvalidTableOperation>;

    /// Sets the ageing timeout of an entry of an indirect table.
    fn bm_mt_indirect_set_entry_ttl(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        timeout_ms: i32,
    ) -> ApiResult<(), InvalidTableOperation>;

    /// Makes a member the default entry.
    fn bm_mt_indirect_set_default_member(
        &mut self,
        table_name: &str,
        mbr_handle: BmMemberHandle,
    ) -> ApiResult<(), InvalidTableOperation>;

    /// Removes the default entry of an indirect table.
    fn bm_mt_indirect_reset_default_entry(
        &mut self,
        table_name: &str,
    ) -> ApiResult<(), InvalidTableOperation>;

    /// Adds an entry pointing to a group; returns its handle.
    fn bm_mt_indirect_ws_add_entry(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        grp_handle: BmGroupHandle,
        options: BmAddEntryOptions,
    ) -> ApiResult<BmEntryHandle, InvalidTableOperation>;

    /// Points an entry to another group.
    fn bm_mt_indirect_ws_modify_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        grp_handle: BmGroupHandle,
    ) -> ApiResult<(), InvalidTableOperation>;

    /// Makes a group the default entry.
    fn bm_mt_indirect_ws_set_default_group(
        &mut self,
        table_name: &str,
        grp_handle: BmGroupHandle,
    ) -> ApiResult<(), InvalidTableOperation>;

    // ---------------------------------------------------------------------
    // standard: direct counters and meters (addressed by entry handle)

    /// Reads the direct counter of an entry.
    fn bm_mt_read_counter(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> ApiResult<BmCounterValue, InvalidTableOperation>;

    /// Resets the direct counters of all entries of a table.
    fn bm_mt_reset_counters(&mut self, table_name: &str) -> ApiResult<(), InvalidTableOperation>;

    /// Writes the direct counter of an entry.
    fn bm_mt_write_counter(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        value: BmCounterValue,
    ) -> ApiResult<(), InvalidTableOperation>;

    /// Configures the direct meter of an entry (committed rate first).
    fn bm_mt_set_meter_rates(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        rates: &[BmMeterRateConfig],
    ) -> ApiResult<(), InvalidTableOperation>;

    /// Reads the direct meter configuration of an entry.
    fn bm_mt_get_meter_rates(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> ApiResult<Vec<BmMeterRateConfig>, InvalidTableOperation>;

    // ---------------------------------------------------------------------
    // standard: reading entries

    /// All entries of a table (any table type), in handle order.
    fn bm_mt_get_entries(
        &mut self,
        table_name: &str,
    ) -> ApiResult<Vec<BmMtEntry>, InvalidTableOperation>;

    /// One entry.
    fn bm_mt_get_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> ApiResult<BmMtEntry, InvalidTableOperation>;

    /// The default entry ([`BmActionEntry::None`] if there is none).
    fn bm_mt_get_default_entry(
        &mut self,
        table_name: &str,
    ) -> ApiResult<BmActionEntry, InvalidTableOperation>;

    /// The entry with exactly this key (and priority, for ternary/range
    /// tables); an empty key means the default entry.
    fn bm_mt_get_entry_from_key(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        options: BmAddEntryOptions,
    ) -> ApiResult<BmMtEntry, InvalidTableOperation>;

    // ---------------------------------------------------------------------
    // standard: counter arrays

    /// Reads one cell of a counter array.
    fn bm_counter_read(
        &mut self,
        counter_name: &str,
        index: i32,
    ) -> ApiResult<BmCounterValue, InvalidCounterOperation>;

    /// Resets every cell of a counter array.
    fn bm_counter_reset_all(
        &mut self,
        counter_name: &str,
    ) -> ApiResult<(), InvalidCounterOperation>;

    /// Writes one cell of a counter array.
    fn bm_counter_write(
        &mut self,
        counter_name: &str,
        index: i32,
        value: BmCounterValue,
    ) -> ApiResult<(), InvalidCounterOperation>;

    // ---------------------------------------------------------------------
    // standard: learning

    /// Acknowledges some samples of a learning buffer.
    fn bm_learning_ack(
        &mut self,
        list_id: BmLearningListId,
        buffer_id: BmLearningBufferId,
        sample_ids: &[BmLearningSampleId],
    ) -> ApiResult<(), InvalidLearnOperation>;

    /// Acknowledges a whole learning buffer.
    fn bm_learning_ack_buffer(
        &mut self,
        list_id: BmLearningListId,
        buffer_id: BmLearningBufferId,
    ) -> ApiResult<(), InvalidLearnOperation>;

    /// Sets the flush timeout of a learn list.
    fn bm_learning_set_timeout(
        &mut self,
        list_id: BmLearningListId,
        timeout_ms: i32,
    ) -> ApiResult<(), InvalidLearnOperation>;

    /// Sets the maximum number of samples per message of a learn list.
    fn bm_learning_set_buffer_size(
        &mut self,
        list_id: BmLearningListId,
        nb_samples: i32,
    ) -> ApiResult<(), InvalidLearnOperation>;

    // ---------------------------------------------------------------------
    // p4jet extension: learning notifications (service `p4jet`, not in bmv2)

    /// The latest learning notifications the switch sent (at most `count`; all it keeps
    /// when `count` <= 0) of the learn list `list_name` (all lists when empty), one line
    /// each, then the samples still waiting to be sent. bmv2 publishes notifications on
    /// a nanomsg socket only; p4jet logs them and keeps the latest for this call
    /// (`digest_dump` in the CLI). Runtimes that keep none answer with an internal error.
    fn p4jet_learning_dump(
        &mut self,
        list_name: &str,
        count: i32,
    ) -> ApiResult<String, InvalidLearnOperation> {
        let _ = (list_name, count);
        Err(ApiError::Internal(
            "p4jet_learning_dump: this runtime keeps no learning notifications".into(),
        ))
    }

    // ---------------------------------------------------------------------
    // standard: configuration swap

    /// Loads a new JSON configuration, to be activated by
    /// [`RuntimeApi::bm_swap_configs`] (requires `--enable-swap`).
    fn bm_load_new_config(&mut self, config_str: &str) -> ApiResult<(), InvalidSwapOperation>;

    /// Activates the configuration loaded by [`RuntimeApi::bm_load_new_config`].
    fn bm_swap_configs(&mut self) -> ApiResult<(), InvalidSwapOperation>;

    // ---------------------------------------------------------------------
    // standard: meter arrays

    /// Configures every meter of an array.
    fn bm_meter_array_set_rates(
        &mut self,
        meter_array_name: &str,
        rates: &[BmMeterRateConfig],
    ) -> ApiResult<(), InvalidMeterOperation>;

    /// Configures one meter of an array (committed rate first).
    fn bm_meter_set_rates(
        &mut self,
        meter_array_name: &str,
        index: i32,
        rates: &[BmMeterRateConfig],
    ) -> ApiResult<(), InvalidMeterOperation>;

    /// Reads the configuration of one meter.
    fn bm_meter_get_rates(
        &mut self,
        meter_array_name: &str,
        index: i32,
    ) -> ApiResult<Vec<BmMeterRateConfig>, InvalidMeterOperation>;

    // ---------------------------------------------------------------------
    // standard: register arrays

    /// Reads one register cell.
    fn bm_register_read(
        &mut self,
        register_array_name: &str,
        index: i32,
    ) -> ApiResult<BmRegisterValue, InvalidRegisterOperation>;

    /// Reads every cell of a register array.
    fn bm_register_read_all(
        &mut self,
        register_array_name: &str,
    ) -> ApiResult<Vec<BmRegisterValue>, InvalidRegisterOperation>;

    /// Writes one register cell (the value is truncated to the register width).
    fn bm_register_write(
        &mut self,
        register_array_name: &str,
        index: i32,
        value: BmRegisterValue,
    ) -> ApiResult<(), InvalidRegisterOperation>;

    /// Writes cells `start_index..=end_index`.
    fn bm_register_write_range(
        &mut self,
        register_array_name: &str,
        start_index: i32,
        end_index: i32,
        value: BmRegisterValue,
    ) -> ApiResult<(), InvalidRegisterOperation>;

    /// Sets every cell of a register array to 0.
    fn bm_register_reset(
        &mut self,
        register_array_name: &str,
    ) -> ApiResult<(), InvalidRegisterOperation>;

    // ---------------------------------------------------------------------
    // standard: parser value sets

    /// Adds a value (no error if already present).
    fn bm_parse_vset_add(
        &mut self,
        parse_vset_name: &str,
        value: &[u8],
    ) -> ApiResult<(), InvalidParseVSetOperation>;

    /// Removes a value (no error if absent).
    fn bm_parse_vset_remove(
        &mut self,
        parse_vset_name: &str,
        value: &[u8],
    ) -> ApiResult<(), InvalidParseVSetOperation>;

    /// All values, in no particular order.
    fn bm_parse_vset_get(
        &mut self,
        parse_vset_name: &str,
    ) -> ApiResult<Vec<BmParseVSetValue>, InvalidParseVSetOperation>;

    /// Removes every value.
    fn bm_parse_vset_clear(
        &mut self,
        parse_vset_name: &str,
    ) -> ApiResult<(), InvalidParseVSetOperation>;

    // ---------------------------------------------------------------------
    // standard: device manager

    /// Adds a port (`pcap_path` may be empty).
    fn bm_dev_mgr_add_port(
        &mut self,
        iface_name: &str,
        port_num: i32,
        pcap_path: &str,
    ) -> ApiResult<(), InvalidDevMgrOperation>;

    /// Removes a port.
    fn bm_dev_mgr_remove_port(&mut self, port_num: i32) -> ApiResult<(), InvalidDevMgrOperation>;

    /// Lists the ports.
    fn bm_dev_mgr_show_ports(&mut self) -> ApiResult<Vec<DevMgrPortInfo>, InvalidDevMgrOperation>;

    // ---------------------------------------------------------------------
    // standard: management

    /// Basic information about the switch.
    fn bm_mgmt_get_info(&mut self) -> ApiResult<BmConfig>;

    /// Sets the parameters of a `crc16_custom` calculation.
    fn bm_set_crc16_custom_parameters(
        &mut self,
        calc_name: &str,
        crc16_config: BmCrc16Config,
    ) -> ApiResult<(), InvalidCrcOperation>;

    /// Sets the parameters of a `crc32_custom` calculation.
    fn bm_set_crc32_custom_parameters(
        &mut self,
        calc_name: &str,
        crc32_config: BmCrc32Config,
    ) -> ApiResult<(), InvalidCrcOperation>;

    /// Sets the key of a `toeplitz` calculation (a multiple of 4 bytes).
    fn bm_set_toeplitz_hash_key(
        &mut self,
        calc_name: &str,
        key: &[u8],
    ) -> ApiResult<(), InvalidToeplitzHashOperation>;

    /// Clears all run-time state (entries, registers, counters, meters, PRE,
    /// mirroring, ...) but keeps the configuration.
    fn bm_reset_state(&mut self) -> ApiResult<()>;

    /// The JSON configuration in use.
    fn bm_get_config(&mut self) -> ApiResult<String>;

    /// MD5 digest (16 bytes) of the JSON configuration in use.
    fn bm_get_config_md5(&mut self) -> ApiResult<Vec<u8>>;

    /// The JSON id of a named resource.
    fn bm_get_id_from_name(
        &mut self,
        resource_type: BmResourceType,
        resource_name: &str,
    ) -> ApiResult<i32, InvalidIdLookup>;

    /// The run-time state as text (for `--restore-state`).
    fn bm_serialize_state(&mut self) -> ApiResult<String>;

    // ---------------------------------------------------------------------
    // simple_pre_lag: packet replication engine

    /// Creates multicast group `mgrp`; returns its handle (equal to `mgrp`).
    fn bm_mc_mgrp_create(
        &mut self,
        mgrp: BmMcMgrp,
    ) -> ApiResult<BmMcMgrpHandle, InvalidMcOperation>;

    /// Destroys a multicast group.
    fn bm_mc_mgrp_destroy(
        &mut self,
        mgrp_handle: BmMcMgrpHandle,
    ) -> ApiResult<(), InvalidMcOperation>;

    /// Creates a node `(rid, ports, lags)`; returns its handle.
    fn bm_mc_node_create(
        &mut self,
        rid: BmMcRid,
        port_map: &str,
        lag_map: &str,
    ) -> ApiResult<BmMcL1Handle, InvalidMcOperation>;

    /// Adds a node to a group (a node belongs to at most one group).
    fn bm_mc_node_associate(
        &mut self,
        mgrp_handle: BmMcMgrpHandle,
        l1_handle: BmMcL1Handle,
    ) -> ApiResult<(), InvalidMcOperation>;

    /// Removes a node from a group.
    fn bm_mc_node_dissociate(
        &mut self,
        mgrp_handle: BmMcMgrpHandle,
        l1_handle: BmMcL1Handle,
    ) -> ApiResult<(), InvalidMcOperation>;

    /// Destroys a node.
    fn bm_mc_node_destroy(&mut self, l1_handle: BmMcL1Handle) -> ApiResult<(), InvalidMcOperation>;

    /// Replaces the ports and LAGs of a node.
    fn bm_mc_node_update(
        &mut self,
        l1_handle: BmMcL1Handle,
        port_map: &str,
        lag_map: &str,
    ) -> ApiResult<(), InvalidMcOperation>;

    /// Sets the member ports of a LAG.
    fn bm_mc_set_lag_membership(
        &mut self,
        lag_index: BmMcLagIndex,
        port_map: &str,
    ) -> ApiResult<(), InvalidMcOperation>;

    /// The PRE state as JSON: `{"mgrps": [{"id", "l1_handles"}], "l1_handles":
    /// [{"handle", "rid", "l2_handle"}], "l2_handles": [{"handle", "ports",
    /// "lags"}], "lags": [{"id", "ports"}]}`.
    fn bm_mc_get_entries(&mut self) -> ApiResult<String, InvalidMcOperation>;

    // ---------------------------------------------------------------------
    // simple_switch

    /// Configures mirroring session `mirror_id` (0..32767).
    fn mirroring_session_add(
        &mut self,
        mirror_id: i32,
        config: MirroringSessionConfig,
    ) -> ApiResult<(), InvalidMirroringOperation>;

    /// Deletes a mirroring session.
    fn mirroring_session_delete(
        &mut self,
        mirror_id: i32,
    ) -> ApiResult<(), InvalidMirroringOperation>;

    /// Reads a mirroring session.
    fn mirroring_session_get(
        &mut self,
        mirror_id: i32,
    ) -> ApiResult<MirroringSessionConfig, InvalidMirroringOperation>;

    /// Deprecated RPC: session to a port. Returns 0.
    fn mirroring_mapping_add(&mut self, mirror_id: i32, egress_port: i32) -> ApiResult<i32> {
        let config = MirroringSessionConfig {
            port: Some(egress_port),
            mgid: None,
        };
        match self.mirroring_session_add(mirror_id, config) {
            Ok(()) => Ok(0),
            Err(ApiError::Exception(_)) => Ok(1),
            Err(ApiError::Internal(msg)) => Err(ApiError::Internal(msg)),
        }
    }

    /// Deprecated RPC: returns 0 if the session existed, 1 otherwise.
    fn mirroring_mapping_delete(&mut self, mirror_id: i32) -> ApiResult<i32> {
        match self.mirroring_session_delete(mirror_id) {
            Ok(()) => Ok(0),
            Err(ApiError::Exception(_)) => Ok(1),
            Err(ApiError::Internal(msg)) => Err(ApiError::Internal(msg)),
        }
    }

    /// Deprecated RPC: the session's port, or -1.
    fn mirroring_mapping_get_egress_port(&mut self, mirror_id: i32) -> ApiResult<i32> {
        match self.mirroring_session_get(mirror_id) {
            Ok(config) => Ok(config.port.unwrap_or(-1)),
            Err(ApiError::Exception(_)) => Ok(-1),
            Err(ApiError::Internal(msg)) => Err(ApiError::Internal(msg)),
        }
    }

    /// Depth (packets) of every priority queue of one egress port; returns 0.
    fn set_egress_queue_depth(&mut self, port_num: i32, depth_pkts: i32) -> ApiResult<i32>;

    /// Depth of one priority queue of one egress port; returns 0.
    fn set_egress_priority_queue_depth(
        &mut self,
        port_num: i32,
        priority: i32,
        depth_pkts: i32,
    ) -> ApiResult<i32>;

    /// Depth of every egress queue; returns 0.
    fn set_all_egress_queue_depths(&mut self, depth_pkts: i32) -> ApiResult<i32>;

    /// Rate (packets per second) of every priority queue of one port; returns 0.
    fn set_egress_queue_rate(&mut self, port_num: i32, rate_pps: i64) -> ApiResult<i32>;

    /// Rate of one priority queue of one port; returns 0.
    fn set_egress_priority_queue_rate(
        &mut self,
        port_num: i32,
        priority: i32,
        rate_pps: i64,
    ) -> ApiResult<i32>;

    /// Rate of every egress queue; returns 0.
    fn set_all_egress_queue_rates(&mut self, rate_pps: i64) -> ApiResult<i32>;

    /// Microseconds since the switch started.
    fn get_time_elapsed_us(&mut self) -> ApiResult<i64>;

    /// Microseconds since the switch clock's epoch.
    fn get_time_since_epoch_us(&mut self) -> ApiResult<i64>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_follow_the_idl() {
        assert_eq!(TableOperationErrorCode::DUPLICATE_ENTRY.code(), 17);
        assert_eq!(TableOperationErrorCode::ERROR.code(), 100);
        assert_eq!(
            TableOperationErrorCode::from_code(25),
            Some(TableOperationErrorCode::IMMUTABLE_TABLE_ENTRIES)
        );
        assert_eq!(TableOperationErrorCode::from_code(27), None);
        assert_eq!(TableOperationErrorCode::ALL.len(), 27);
        assert_eq!(MeterOperationErrorCode::ERROR.code(), 6);
        assert_eq!(IdLookupErrorCode::INVALID_RESOURCE_TYPE.code(), 0);
        assert_eq!(McOperationErrorCode::INVALID_L1_HANDLE.code(), 4);
        assert_eq!(BmMatchParamType::RANGE.code(), 4);
        for code in TableOperationErrorCode::ALL {
            assert_eq!(TableOperationErrorCode::from_code(code.code()), Some(*code));
        }
    }

    #[test]
    fn exceptions_print_like_simple_switch_cli() {
        let e = InvalidTableOperation::new(TableOperationErrorCode::DUPLICATE_ENTRY);
        assert_eq!(e.to_string(), "Invalid table operation (DUPLICATE_ENTRY)");
        let e: ApiError<InvalidMcOperation> = McOperationErrorCode::INVALID_MGID.into();
        assert_eq!(e.to_string(), "Invalid PRE operation (INVALID_MGID)");
        let e = InvalidMirroringOperation::new(MirroringOperationErrorCode::SESSION_NOT_FOUND);
        assert_eq!(
            e.to_string(),
            "Invalid mirroring operation (SESSION_NOT_FOUND)"
        );
    }

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
}
