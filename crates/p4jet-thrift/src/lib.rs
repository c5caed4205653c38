//! bmv2's Thrift runtime API for p4jet: the binary protocol ([`protocol`]),
//! the IDL structs and method catalogue ([`codec`]), a multiplexing server
//! that serves a [`p4jet_control::api::RuntimeApi`] to the stock
//! `simple_switch_CLI`, p4-utils and p4c's STF driver ([`server`]), and a
//! client that implements `RuntimeApi` against any bmv2-compatible switch
//! ([`client`]).
//!
//! Written from the public IDL (`standard.thrift`, `simple_pre_lag.thrift`,
//! `simple_pre.thrift`, `simple_switch.thrift`) and the Thrift binary
//! protocol and multiplexing specifications. See `docs/thrift.md`.
#![forbid(unsafe_code)]

pub mod client;
pub mod codec;
pub mod protocol;
pub mod server;

pub use client::{PreService, ThriftClient};
pub use protocol::Limits;
pub use server::{ServerConfig, ServerHandle, SharedApi, Shutdown, serve, serve_with};
