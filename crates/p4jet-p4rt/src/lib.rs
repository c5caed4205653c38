//! P4Runtime 1.5 for p4jet: a gRPC server (tonic, schema compiled with protox)
//! that makes `p4jet run` a drop-in for bmv2's `simple_switch_grpc`.
//!
//! | module | what |
//! |---|---|
//! | [`proto`] | the schema: `p4.v1`, `p4.config.v1`, `p4.tmp`, `google.rpc` |
//! | [`arbitration`] | primary / backup election per role (sans-I/O) |
//! | [`bytestring`] | P4Runtime bytestrings: widths, canonical form |
//! | [`packet_io`] | `@controller_header` packet_in / packet_out codec |
//! | [`device_config`] | the bmv2 JSON inside `p4_device_config` |
#![forbid(unsafe_code)]

pub mod arbitration;
pub mod bytestring;
pub mod device_config;
pub mod packet_io;
pub mod proto;
