//! bmv2's Thrift runtime API for p4jet: the binary protocol ([`protocol`]), the IDL
//! types ([`types`]) and method catalogue ([`codec`]), the services as an adapter
//! over the runtime model ([`service`]: `standard`, `simple_pre_lag`,
//! `simple_switch`), a multiplexing server that serves any
//! [`p4jet_runtime::Runtime`] to the stock `simple_switch_CLI`, p4-utils and p4c's
//! STF driver ([`server`]), and a client of any bmv2-compatible switch ([`client`])
//! that implements the runtime model itself ([`remote`]).
//!
//! Written from the public IDL (`standard.thrift`, `simple_pre_lag.thrift`,
//! `simple_pre.thrift`, `simple_switch.thrift`) and the Thrift binary
//! protocol and multiplexing specifications. See `docs/thrift.md`.
#![forbid(unsafe_code)]

pub mod client;
pub mod codec;
pub mod protocol;
pub mod remote;
pub mod server;
pub mod service;
pub mod types;

pub use client::{PreService, ThriftClient};
pub use protocol::Limits;
pub use server::{ServerConfig, ServerHandle, SharedRuntime, Shutdown, serve, serve_with};
pub use service::Bmv2;
