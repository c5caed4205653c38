//! Helpers shared by the jit crate's integration tests.

use p4jet_engine::{Engine, Pkt};

/// The packets of `frames`, entering on port 1.
pub fn packets(e: &Engine, frames: &[Vec<u8>]) -> Vec<Pkt> {
    frames
        .iter()
        .map(|f| {
            let mut ctx = Box::new(e.new_ctx(f.len() + 512));
            ctx.pkt.set(f);
            ctx.reset(&e.prog);
            ctx.arch.port = 1;
            ctx
        })
        .collect()
}
