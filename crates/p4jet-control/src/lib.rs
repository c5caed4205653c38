//! p4jet's control-plane front ends besides Thrift: the `simple_switch_CLI` command
//! language ([`cli`]) and p4c's STF test format ([`stf`]), both adapters over the
//! runtime model ([`p4jet_runtime::Runtime`]).
#![forbid(unsafe_code)]

pub mod cli;
mod py;
pub mod stf;
