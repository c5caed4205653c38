//! bmv2's notification socket for p4jet: simple_switch publishes learning digests
//! (`LEA|`), ageing (`AGE|`) and port status (`PRT|`) messages on a nanomsg PUB
//! socket (`--notifications-addr`, by default `ipc:///tmp/bmv2-<device id>-notifications.ipc`),
//! and controllers subscribe there with `nnpy` or libnanomsg.
//!
//! [`sp`] speaks the scalability-protocol wire format of PUB and SUB sockets over
//! `ipc://` and `tcp://` in safe Rust (the subset a publisher needs: header exchange,
//! framing, per-subscriber queues that drop rather than block); [`msg`] encodes and
//! decodes the messages. Written from the nanomsg transport specifications and bmv2's
//! documented header layouts; checked against libnanomsg (`nnpy`) and against
//! bmv2's own bytes (tests in `crates/p4jet/tests/notifications.rs`).
#![forbid(unsafe_code)]

pub mod msg;
pub mod sp;

pub use msg::{Ageing, Learn, Notification, PortStatus};
pub use sp::{Publisher, Subscriber};
