//! Fuzz campaigns against p4jet that build and run on stable Rust: seeded
//! generators and mutators (in the spirit of property-based testing) drive the
//! switch in process, with a panic catcher per case, a watchdog for hangs and
//! resident-memory readings. Targets: frames through every corpus program
//! ([`frames`]), mutated p4c JSON through the loader ([`json`]), the
//! simple_switch_CLI command language ([`cli`]), Thrift messages against the
//! runtime API ([`thrift`]) and P4Runtime messages against the P4Runtime device and
//! its gRPC server ([`p4rt`]). `p4jet-fuzz` runs long campaigns; the crate's tests run
//! bounded ones and replay the saved regressions. See docs/reliability.md.
#![forbid(unsafe_code)]

pub mod cli;
pub mod corpus;
pub mod frames;
pub mod harness;
pub mod json;
pub mod p4rt;
pub mod thrift;
