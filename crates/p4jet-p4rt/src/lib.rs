//! P4Runtime 1.5 for p4jet: a gRPC server (tonic, schema compiled with protox)
//! that makes `p4jet run` a drop-in for bmv2's `simple_switch_grpc`.
//!
//! | module | what |
//! |---|---|
//! | [`proto`] | the schema: `p4.v1`, `p4.config.v1`, `p4.tmp`, `google.rpc` |
//! | [`arbitration`] | primary / backup election per role (sans-I/O) |
//! | [`role`] | role configs: what a role may write, read and receive |
//! | [`bytestring`] | P4Runtime bytestrings: widths, canonical form |
//! | [`packet_io`] | `@controller_header` packet_in / packet_out codec |
//! | [`device_config`] | the bmv2 JSON inside `p4_device_config` |
//! | [`metadata`] | the controller's metadata on table entries and multicast groups |
//! | [`cpu`] | the CPU port's queues between forwarding threads and the server |
//! | [`stream`] | StreamChannel sessions |
//! | [`translate`] | P4Runtime entities ⇄ the runtime model ([`p4jet_runtime`]) |
//! | [`device`] | one device: every RPC as a thin adapter over the model |
//! | [`status`] | gRPC statuses with per-update `p4.v1.Error` details |
//! | [`server`] | the tonic service, TLS, [`spawn`] |
#![forbid(unsafe_code)]

pub mod arbitration;
pub mod bytestring;
pub mod cpu;
pub mod device;
pub mod device_config;
pub mod metadata;
pub mod packet_io;
pub mod proto;
pub mod role;
pub mod server;
pub mod status;
pub mod stream;
pub mod translate;

pub use cpu::CpuChannel;
pub use device::{Device, SharedRuntime};
pub use server::{ServeOptions, ServerHandle, TlsFiles, spawn};
