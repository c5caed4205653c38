//! gRPC statuses the way P4Runtime clients read them.
//!
//! A failed Write answers `UNKNOWN` with a `google.rpc.Status` in the
//! `grpc-status-details-bin` trailer whose details hold one `p4.v1.Error` per update
//! of the batch, in order: `OK` for the updates that were applied, the error of
//! those that were not (p4runtime-shell, finsy and ONOS print them per update).

use prost::Message;
use tonic::{Code, Status};

use crate::arbitration::Refusal;
use crate::proto::google::rpc::Status as RpcStatus;
use crate::proto::p4::v1::Error as P4Error;

/// The error space p4jet reports in `p4.v1.Error.space`.
pub const ERROR_SPACE: &str = "p4jet";

/// The gRPC code of a google.rpc.Code value.
pub fn grpc_code(code: i32) -> Code {
    Code::from_i32(code)
}

/// A refusal as a gRPC status.
pub fn refusal(r: Refusal) -> Status {
    Status::new(grpc_code(r.code), r.message)
}

/// `FAILED_PRECONDITION` "No forwarding pipeline config set for this device" (the
/// text PI sends, which clients match).
pub fn no_pipeline() -> Status {
    Status::failed_precondition("No forwarding pipeline config set for this device")
}

/// The outcome of one update of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateOutcome {
    /// google.rpc.Code value (0: applied).
    pub code: i32,
    /// Why it failed.
    pub message: String,
}

impl UpdateOutcome {
    /// An applied update.
    pub fn ok() -> UpdateOutcome {
        UpdateOutcome {
            code: 0,
            message: String::new(),
        }
    }

    /// A failed update.
    pub fn err(code: i32, message: impl Into<String>) -> UpdateOutcome {
        UpdateOutcome {
            code,
            message: message.into(),
        }
    }
}

/// The answer to a Write whose updates had these outcomes: OK when all were
/// applied, else `UNKNOWN` with one `p4.v1.Error` per update in the details.
pub fn write_result(outcomes: &[UpdateOutcome]) -> Result<(), Status> {
    let failed = outcomes.iter().filter(|o| o.code != 0).count();
    if failed == 0 {
        return Ok(());
    }
    let details = outcomes
        .iter()
        .map(|o| {
            let e = P4Error {
                canonical_code: o.code,
                message: o.message.clone(),
                space: if o.code == 0 {
                    String::new()
                } else {
                    ERROR_SPACE.into()
                },
                code: 0,
                details: None,
            };
            prost_types::Any {
                type_url: "type.googleapis.com/p4.v1.Error".into(),
                value: e.encode_to_vec(),
            }
        })
        .collect();
    let first = outcomes
        .iter()
        .find(|o| o.code != 0)
        .map(|o| o.message.clone())
        .unwrap_or_default();
    let message = if failed == 1 {
        format!("Write failed: 1 of {} updates: {first}", outcomes.len())
    } else {
        format!(
            "Write failed: {failed} of {} updates (first: {first})",
            outcomes.len()
        )
    };
    let st = RpcStatus {
        code: Code::Unknown as i32,
        message: message.clone(),
        details,
    };
    Err(Status::with_details(
        Code::Unknown,
        message,
        st.encode_to_vec().into(),
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn write_errors_carry_one_detail_per_update() {
        assert!(write_result(&[UpdateOutcome::ok()]).is_ok());
        let st = write_result(&[
            UpdateOutcome::ok(),
            UpdateOutcome::err(6, "dup"),
            UpdateOutcome::ok(),
        ])
        .unwrap_err();
        assert_eq!(st.code(), Code::Unknown);
        let rs = RpcStatus::decode(st.details()).unwrap();
        assert_eq!(rs.details.len(), 3);
        let e = P4Error::decode(rs.details[1].value.as_slice()).unwrap();
        assert_eq!((e.canonical_code, e.message.as_str()), (6, "dup"));
        let ok = P4Error::decode(rs.details[0].value.as_slice()).unwrap();
        assert_eq!(ok.canonical_code, 0);
    }
}
