//! p4jet's runtime model: one model of everything a control plane does to a running
//! P4 program, under every front end.
//!
//! The simple_switch_CLI language, bmv2's Thrift services and P4Runtime all do the
//! same things — add table entries, program action selectors, read counters, write
//! registers, configure multicast groups and clone sessions, take digests, swap the
//! program — in different words. This crate says them once:
//!
//! * [`Schema`] ([`schema`]): the program model. What the control plane can see of a
//!   program — tables with their key fields, actions with their parameters, action
//!   profiles, counters, meters, registers, digests, value sets, with their JSON ids —
//!   built from the lowered program, never by reading the JSON again. A P4Info is
//!   joined to it by name ([`p4info`]).
//! * [`ids`]: every object is addressed by a typed id (`TableId`, `ActionId`,
//!   `MemberId`, `EntryHandle`, ...), never by a string. Names belong to front ends.
//! * [`Update`] ([`update`]): every write as data, applied alone or in a batch with
//!   an [`Atomicity`] (continue on error, rollback on error, dataplane atomic).
//!   Values read and written are in [`entity`].
//! * [`RuntimeError`] ([`error`]): one error type with a kind, a message naming what
//!   and where, and the precise bmv2 code ([`bmv2`]) where simple_switch has one.
//! * [`Runtime`]: the trait every front end drives. The switch implements it
//!   (`p4jet_switch::Switch`), so does the Thrift client (a remote simple_switch or
//!   p4jet), and the shared test double wraps any of them ([`testing`], feature
//!   `testing`).
//!
//! The crate does no I/O and reads no clock.
//!
//! # How a front end uses it
//!
//! 1. Get the program model: `let schema = rt.schema().ok_or_else(RuntimeError::no_pipeline)?;`
//! 2. Turn its request into ids: names with [`Schema::table_by_name`] (exact) or
//!    [`Schema::resolve`] (simple_switch_CLI's unique suffixes), P4Info ids with a
//!    [`p4info::P4InfoJoin`]; actions with [`schema::Table::action_named`] or
//!    [`p4info::P4InfoJoin::table_action`].
//! 3. Build [`Update`]s and [`Runtime::apply`] or [`Runtime::write`] them; read with
//!    the typed reads ([`Runtime::table_entries`] pages through big tables).
//! 4. Turn [`RuntimeError`]s into its own errors: the kind (P4Runtime status codes),
//!    or the bmv2 exception ([`RuntimeError::bmv2`], Thrift and the CLI).
//!
//! ```
//! use p4jet_runtime::*;
//!
//! fn add_forward(rt: &mut dyn Runtime, mac: [u8; 6], port: u16) -> Result<EntryHandle> {
//!     let schema = rt.schema().ok_or_else(RuntimeError::no_pipeline)?;
//!     let t = schema
//!         .table_by_name("IngressImpl.dmac")
//!         .ok_or_else(|| RuntimeError::not_found("no table IngressImpl.dmac"))?;
//!     let table = schema.table(t).ok_or_else(|| RuntimeError::internal("schema"))?;
//!     let forward = table
//!         .action_named(&schema, "IngressImpl.forward")
//!         .ok_or_else(|| RuntimeError::invalid("dmac has no action forward"))?;
//!     let key = MatchKey::new(vec![FieldMatch::Exact(mac.to_vec())]);
//!     let call = ActionCall::new(forward, vec![port.to_be_bytes().to_vec()]);
//!     let applied = rt.apply(Update::add_direct(t, key, call))?;
//!     applied.entry().ok_or_else(|| RuntimeError::internal("no handle"))
//! }
//! ```
//!
//! See `crates/p4jet-runtime/README.md` and `docs/architecture.md`.
#![forbid(unsafe_code)]

pub mod bmv2;
pub mod entity;
pub mod error;
pub mod ids;
pub mod p4info;
mod runtime;
pub mod schema;
#[cfg(feature = "testing")]
pub mod testing;
pub mod update;

pub use entity::*;
pub use error::{ErrorKind, NO_PIPELINE_MESSAGE, Result, RuntimeError};
pub use ids::*;
pub use runtime::{PipelineAction, PipelineConfig, PipelineInfo, Runtime, all_entries};
pub use schema::Schema;
pub use update::{Applied, Atomicity, BatchResult, Update, WriteMode};
