//! P4Runtime for p4jet.
#![forbid(unsafe_code)]

pub mod proto;
