//! The one error type of the runtime model.
//!
//! A [`RuntimeError`] says *what kind* of failure it is ([`ErrorKind`], close to the
//! gRPC status codes P4Runtime answers with), *what and where* in a message meant for
//! a person (`table IngressImpl.dmac: duplicate entry`), and, when simple_switch has
//! one, the precise bmv2 exception code ([`Bmv2Code`]) the Thrift adapter must send
//! and `simple_switch_CLI` prints.

use std::fmt;

use crate::bmv2::Bmv2Code;

/// What kind of failure an error is. Front ends map it onto their own codes
/// (P4Runtime: the gRPC status of the same name; Thrift: see [`RuntimeError::bmv2`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The object addressed does not exist (an entry, member, group, session,
    /// multicast group, a table id, ...).
    NotFound,
    /// The object to insert exists already (duplicate key, member id, session id).
    AlreadyExists,
    /// The request is malformed for the program: wrong key shape or width, wrong
    /// number of action parameters, an action the table does not have, ...
    InvalidArgument,
    /// An index past the end of an array (counter, meter, register cell).
    OutOfRange,
    /// A table, profile, group or the PRE is full.
    ResourceExhausted,
    /// The request is well formed but the state forbids it (a member still used,
    /// a swap already under way, an empty group as an entry's target, ...).
    FailedPrecondition,
    /// The program forbids it: a const table, a const default entry or action.
    PermissionDenied,
    /// No program is set (the switch started with `--no-p4` and none was pushed
    /// since). Every operation but setting a pipeline answers this
    /// ([`RuntimeError::no_pipeline`]). P4Runtime answers `FAILED_PRECONDITION`.
    NoPipeline,
    /// Not applied because another update of an all-or-nothing batch failed
    /// (see [`crate::Atomicity`]).
    Aborted,
    /// The runtime does not do this (e.g. a remote bmv2 has no P4Runtime-style
    /// multicast groups).
    Unimplemented,
    /// A bug, a lost connection, or state the runtime cannot read.
    Internal,
}

impl ErrorKind {
    /// A short lower-case name (`not found`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not found",
            ErrorKind::AlreadyExists => "already exists",
            ErrorKind::InvalidArgument => "invalid argument",
            ErrorKind::OutOfRange => "out of range",
            ErrorKind::ResourceExhausted => "resource exhausted",
            ErrorKind::FailedPrecondition => "failed precondition",
            ErrorKind::PermissionDenied => "permission denied",
            ErrorKind::NoPipeline => "no pipeline",
            ErrorKind::Aborted => "aborted",
            ErrorKind::Unimplemented => "unimplemented",
            ErrorKind::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The message of [`RuntimeError::no_pipeline`].
pub const NO_PIPELINE_MESSAGE: &str = "no forwarding pipeline is set: the switch drops every \
     packet until a program is pushed";

/// A failed runtime operation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RuntimeError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// What failed and where, for a person (`table IngressImpl.dmac: duplicate entry`).
    pub message: String,
    /// The exception simple_switch answers in this case, if it has one.
    pub bmv2: Option<Bmv2Code>,
}

/// Result of a runtime operation.
pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;

impl RuntimeError {
    /// An error of this kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        RuntimeError {
            kind,
            message: message.into(),
            bmv2: None,
        }
    }

    /// The same error carrying the bmv2 code simple_switch answers.
    pub fn with_bmv2(mut self, code: impl Into<Bmv2Code>) -> Self {
        self.bmv2 = Some(code.into());
        self
    }

    /// [`ErrorKind::NotFound`].
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    /// [`ErrorKind::AlreadyExists`].
    pub fn already_exists(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::AlreadyExists, message)
    }

    /// [`ErrorKind::InvalidArgument`].
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    /// [`ErrorKind::OutOfRange`].
    pub fn out_of_range(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::OutOfRange, message)
    }

    /// [`ErrorKind::ResourceExhausted`].
    pub fn exhausted(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::ResourceExhausted, message)
    }

    /// [`ErrorKind::FailedPrecondition`].
    pub fn precondition(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::FailedPrecondition, message)
    }

    /// [`ErrorKind::PermissionDenied`].
    pub fn denied(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::PermissionDenied, message)
    }

    /// [`ErrorKind::Unimplemented`].
    pub fn unimplemented(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unimplemented, message)
    }

    /// [`ErrorKind::Internal`].
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    /// [`ErrorKind::Aborted`]: update `index` of the batch was not applied because
    /// update `failed` failed.
    pub fn aborted(failed: usize) -> Self {
        Self::new(
            ErrorKind::Aborted,
            format!("not applied: update {failed} of the batch failed"),
        )
    }

    /// [`ErrorKind::NoPipeline`] with [`NO_PIPELINE_MESSAGE`].
    pub fn no_pipeline() -> Self {
        Self::new(ErrorKind::NoPipeline, NO_PIPELINE_MESSAGE)
    }

    /// Prefixes the message with where the failure happened
    /// (`table IngressImpl.dmac: ` + message).
    pub fn context(mut self, what: impl fmt::Display) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }

    /// The line simple_switch_CLI prints for this error: the bmv2 exception
    /// (`Invalid table operation (DUPLICATE_ENTRY)`) when there is one, else
    /// `Error: ` and the message (what it prints for a `TApplicationException`).
    pub fn cli_line(&self) -> String {
        match self.bmv2 {
            Some(code) => code.to_string(),
            None => format!("Error: {}", self.message),
        }
    }
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(code) = self.bmv2 {
            write!(f, " ({})", code.name())?;
        }
        Ok(())
    }
}

impl std::error::Error for RuntimeError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bmv2::TableOperationErrorCode;

    #[test]
    fn display_and_cli_line() {
        let e = RuntimeError::already_exists("table IngressImpl.dmac: duplicate entry")
            .with_bmv2(TableOperationErrorCode::DUPLICATE_ENTRY);
        assert_eq!(
            e.to_string(),
            "table IngressImpl.dmac: duplicate entry (DUPLICATE_ENTRY)"
        );
        assert_eq!(e.cli_line(), "Invalid table operation (DUPLICATE_ENTRY)");
        let e = RuntimeError::internal("connection lost");
        assert_eq!(e.cli_line(), "Error: connection lost");
        assert_eq!(RuntimeError::no_pipeline().kind, ErrorKind::NoPipeline);
    }
}
