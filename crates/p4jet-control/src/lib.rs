//! The p4jet control plane: the bmv2 runtime API as a Rust trait ([`api`]),
//! the program description the control plane needs ([`program`]), the
//! `simple_switch_CLI` command language ([`cli`]) and p4c's STF test format
//! ([`stf`]).
#![forbid(unsafe_code)]

pub mod api;
pub mod cli;
pub mod program;
mod py;
pub mod stf;
