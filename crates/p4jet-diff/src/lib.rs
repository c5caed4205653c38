//! Differential testing of p4jet against the reference switch, bmv2 `simple_switch`:
//! both run the same program with the same table entries (sent by the stock
//! simple_switch_CLI) and the same frames (through pcap FIFOs, as p4c's STF driver
//! feeds them), and every output frame, port, counter and register is compared.
//! The same machinery writes STF tests whose expectations come from the reference.
#![forbid(unsafe_code)]

pub mod cli;
pub mod diff;
pub mod expect;
pub mod generate;
pub mod model;
pub mod pcap;
pub mod scenario;
pub mod switch;
pub mod zeroed;
