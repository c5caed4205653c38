//! bmv2's error codes, exactly as its Thrift IDL (`standard.thrift`,
//! `simple_pre_lag.thrift`, `simple_switch.thrift`) defines them.
//!
//! A [`crate::RuntimeError`] carries the precise code simple_switch would answer
//! ([`Bmv2Code`]) wherever one exists, so that the Thrift adapter sends the same
//! exception and `simple_switch_CLI` prints the same line
//! (`Invalid table operation (DUPLICATE_ENTRY)`).

use std::fmt;

use crate::error::{ErrorKind, RuntimeError};

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
    /// `TableOperationErrorCode` (exception `InvalidTableOperation`: match tables,
    /// action profiles, direct counters and meters).
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

/// The bmv2 exception (by its IDL family) and code of a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bmv2Code {
    /// `InvalidTableOperation`.
    Table(TableOperationErrorCode),
    /// `InvalidCounterOperation`.
    Counter(CounterOperationErrorCode),
    /// `InvalidSwapOperation`.
    Swap(SwapOperationErrorCode),
    /// `InvalidMeterOperation`.
    Meter(MeterOperationErrorCode),
    /// `InvalidRegisterOperation`.
    Register(RegisterOperationErrorCode),
    /// `InvalidParseVSetOperation`.
    ParseVSet(ParseVSetOperationErrorCode),
    /// `InvalidLearnOperation`.
    Learn(LearnOperationErrorCode),
    /// `InvalidDevMgrOperation`.
    DevMgr(DevMgrErrorCode),
    /// `InvalidCrcOperation`.
    Crc(CrcErrorCode),
    /// `InvalidToeplitzHashOperation`.
    Toeplitz(ToeplitzHashErrorCode),
    /// `InvalidIdLookup`.
    IdLookup(IdLookupErrorCode),
    /// `InvalidMcOperation` (`simple_pre_lag`).
    Mc(McOperationErrorCode),
    /// `InvalidMirroringOperation` (`simple_switch`).
    Mirroring(MirroringOperationErrorCode),
}

impl Bmv2Code {
    /// The wire number of the code.
    pub fn code(self) -> i32 {
        match self {
            Bmv2Code::Table(c) => c.code(),
            Bmv2Code::Counter(c) => c.code(),
            Bmv2Code::Swap(c) => c.code(),
            Bmv2Code::Meter(c) => c.code(),
            Bmv2Code::Register(c) => c.code(),
            Bmv2Code::ParseVSet(c) => c.code(),
            Bmv2Code::Learn(c) => c.code(),
            Bmv2Code::DevMgr(c) => c.code(),
            Bmv2Code::Crc(c) => c.code(),
            Bmv2Code::Toeplitz(c) => c.code(),
            Bmv2Code::IdLookup(c) => c.code(),
            Bmv2Code::Mc(c) => c.code(),
            Bmv2Code::Mirroring(c) => c.code(),
        }
    }

    /// The IDL name of the code (`DUPLICATE_ENTRY`).
    pub fn name(self) -> &'static str {
        match self {
            Bmv2Code::Table(c) => c.name(),
            Bmv2Code::Counter(c) => c.name(),
            Bmv2Code::Swap(c) => c.name(),
            Bmv2Code::Meter(c) => c.name(),
            Bmv2Code::Register(c) => c.name(),
            Bmv2Code::ParseVSet(c) => c.name(),
            Bmv2Code::Learn(c) => c.name(),
            Bmv2Code::DevMgr(c) => c.name(),
            Bmv2Code::Crc(c) => c.name(),
            Bmv2Code::Toeplitz(c) => c.name(),
            Bmv2Code::IdLookup(c) => c.name(),
            Bmv2Code::Mc(c) => c.name(),
            Bmv2Code::Mirroring(c) => c.name(),
        }
    }

    /// The [`ErrorKind`] of a failure simple_switch reports with this code (what a
    /// client of a remote bmv2 makes of its exceptions).
    pub fn kind(self) -> ErrorKind {
        use TableOperationErrorCode as T;
        match self {
            Bmv2Code::Table(c) => match c {
                T::TABLE_FULL => ErrorKind::ResourceExhausted,
                T::INVALID_HANDLE
                | T::EXPIRED_HANDLE
                | T::INVALID_TABLE_NAME
                | T::INVALID_ACTION_NAME
                | T::INVALID_MBR_HANDLE
                | T::INVALID_GRP_HANDLE
                | T::MBR_NOT_IN_GRP
                | T::NO_DEFAULT_ENTRY
                | T::INVALID_ACTION_PROFILE_NAME => ErrorKind::NotFound,
                T::DUPLICATE_ENTRY | T::MBR_ALREADY_IN_GRP => ErrorKind::AlreadyExists,
                T::MBR_STILL_USED | T::GRP_STILL_USED | T::EMPTY_GRP => {
                    ErrorKind::FailedPrecondition
                }
                T::DEFAULT_ACTION_IS_CONST
                | T::DEFAULT_ENTRY_IS_CONST
                | T::IMMUTABLE_TABLE_ENTRIES => ErrorKind::PermissionDenied,
                T::COUNTERS_DISABLED
                | T::METERS_DISABLED
                | T::AGEING_DISABLED
                | T::WRONG_TABLE_TYPE
                | T::BAD_MATCH_KEY
                | T::INVALID_METER_OPERATION
                | T::NO_ACTION_PROFILE_SELECTION
                | T::BAD_ACTION_DATA => ErrorKind::InvalidArgument,
                T::ERROR => ErrorKind::Internal,
            },
            Bmv2Code::Counter(c) => match c {
                CounterOperationErrorCode::INVALID_COUNTER_NAME => ErrorKind::NotFound,
                CounterOperationErrorCode::INVALID_INDEX => ErrorKind::OutOfRange,
                CounterOperationErrorCode::ERROR => ErrorKind::Internal,
            },
            Bmv2Code::Swap(c) => match c {
                SwapOperationErrorCode::CONFIG_SWAP_DISABLED => ErrorKind::Unimplemented,
                _ => ErrorKind::FailedPrecondition,
            },
            Bmv2Code::Meter(c) => match c {
                MeterOperationErrorCode::INVALID_METER_NAME => ErrorKind::NotFound,
                MeterOperationErrorCode::INVALID_INDEX => ErrorKind::OutOfRange,
                MeterOperationErrorCode::ERROR => ErrorKind::Internal,
                _ => ErrorKind::InvalidArgument,
            },
            Bmv2Code::Register(c) => match c {
                RegisterOperationErrorCode::INVALID_REGISTER_NAME => ErrorKind::NotFound,
                RegisterOperationErrorCode::INVALID_INDEX => ErrorKind::OutOfRange,
                RegisterOperationErrorCode::ERROR => ErrorKind::Internal,
            },
            Bmv2Code::ParseVSet(c) => match c {
                ParseVSetOperationErrorCode::INVALID_PARSE_VSET_NAME => ErrorKind::NotFound,
                ParseVSetOperationErrorCode::ERROR => ErrorKind::InvalidArgument,
            },
            Bmv2Code::Learn(c) => match c {
                LearnOperationErrorCode::ERROR => ErrorKind::Internal,
                _ => ErrorKind::NotFound,
            },
            Bmv2Code::DevMgr(_) => ErrorKind::InvalidArgument,
            Bmv2Code::Crc(c) => match c {
                CrcErrorCode::INVALID_CALCULATION_NAME => ErrorKind::NotFound,
                _ => ErrorKind::InvalidArgument,
            },
            Bmv2Code::Toeplitz(c) => match c {
                ToeplitzHashErrorCode::INVALID_CALCULATION_NAME => ErrorKind::NotFound,
                _ => ErrorKind::InvalidArgument,
            },
            Bmv2Code::IdLookup(c) => match c {
                IdLookupErrorCode::INVALID_RESOURCE_TYPE => ErrorKind::InvalidArgument,
                IdLookupErrorCode::INVALID_RESOURCE_NAME => ErrorKind::NotFound,
            },
            Bmv2Code::Mc(c) => match c {
                McOperationErrorCode::TABLE_FULL => ErrorKind::ResourceExhausted,
                McOperationErrorCode::ERROR => ErrorKind::FailedPrecondition,
                _ => ErrorKind::NotFound,
            },
            Bmv2Code::Mirroring(_) => ErrorKind::NotFound,
        }
    }

    /// A [`RuntimeError`] of this code's kind (see [`Bmv2Code::kind`]).
    pub fn error(self, message: impl Into<String>) -> RuntimeError {
        RuntimeError::new(self.kind(), message).with_bmv2(self)
    }

    /// What simple_switch_CLI prints before the code: the exception's meaning
    /// (`Invalid table operation`).
    pub fn exception_text(self) -> &'static str {
        match self {
            Bmv2Code::Table(_) => "Invalid table operation",
            Bmv2Code::Counter(_) => "Invalid counter operation",
            Bmv2Code::Swap(_) => "Invalid swap operation",
            Bmv2Code::Meter(_) => "Invalid meter operation",
            Bmv2Code::Register(_) => "Invalid register operation",
            Bmv2Code::ParseVSet(_) => "Invalid parser value set operation",
            Bmv2Code::Learn(_) => "Invalid learn operation",
            Bmv2Code::DevMgr(_) => "Invalid device manager operation",
            Bmv2Code::Crc(_) => "Invalid crc operation",
            Bmv2Code::Toeplitz(_) => "Invalid Toeplitz hash operation",
            Bmv2Code::IdLookup(_) => "Invalid id lookup",
            Bmv2Code::Mc(_) => "Invalid PRE operation",
            Bmv2Code::Mirroring(_) => "Invalid mirroring operation",
        }
    }
}

impl fmt::Display for Bmv2Code {
    /// The line simple_switch_CLI prints: `Invalid table operation (DUPLICATE_ENTRY)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.exception_text(), self.name())
    }
}

macro_rules! from_code {
    ($($t:ident => $v:ident),+ $(,)?) => {
        $(impl From<$t> for Bmv2Code {
            fn from(c: $t) -> Self {
                Bmv2Code::$v(c)
            }
        })+
    };
}

from_code!(
    TableOperationErrorCode => Table,
    CounterOperationErrorCode => Counter,
    SwapOperationErrorCode => Swap,
    MeterOperationErrorCode => Meter,
    RegisterOperationErrorCode => Register,
    ParseVSetOperationErrorCode => ParseVSet,
    LearnOperationErrorCode => Learn,
    DevMgrErrorCode => DevMgr,
    CrcErrorCode => Crc,
    ToeplitzHashErrorCode => Toeplitz,
    IdLookupErrorCode => IdLookup,
    McOperationErrorCode => Mc,
    MirroringOperationErrorCode => Mirroring,
);

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
        for code in TableOperationErrorCode::ALL {
            assert_eq!(TableOperationErrorCode::from_code(code.code()), Some(*code));
        }
    }

    #[test]
    fn codes_print_like_simple_switch_cli() {
        let c: Bmv2Code = TableOperationErrorCode::DUPLICATE_ENTRY.into();
        assert_eq!(c.to_string(), "Invalid table operation (DUPLICATE_ENTRY)");
        let c: Bmv2Code = McOperationErrorCode::INVALID_MGID.into();
        assert_eq!(c.to_string(), "Invalid PRE operation (INVALID_MGID)");
        let c: Bmv2Code = MirroringOperationErrorCode::SESSION_NOT_FOUND.into();
        assert_eq!(
            c.to_string(),
            "Invalid mirroring operation (SESSION_NOT_FOUND)"
        );
        assert_eq!(c.code(), 1);
    }
}
