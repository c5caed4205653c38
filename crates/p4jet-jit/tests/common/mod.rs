//! Helpers shared by the jit crate's integration tests (each test binary uses some).
#![allow(dead_code)]

use std::path::PathBuf;

use p4jet_engine::{Engine, EngineConfig, EngineKind, Pkt};

/// True (and says so) when Cranelift does not support this host: the test is skipped.
pub fn jit_skipped() -> bool {
    if p4jet_jit::supported() {
        return false;
    }
    eprintln!("skipped: Cranelift does not support this host");
    true
}

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

/// Every corpus program's JSON.
pub fn corpus() -> Vec<PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    let mut paths = vec![];
    for e in std::fs::read_dir(&root).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            for f in std::fs::read_dir(&p).into_iter().flatten().flatten() {
                if f.path().extension().is_some_and(|x| x == "json") {
                    paths.push(f.path());
                }
            }
        }
    }
    paths.sort();
    assert!(paths.len() >= 20, "corpus not found: {paths:?}");
    paths
}

/// A seeded xorshift generator.
pub fn rng(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// A random frame: Ethernet with IPv4 (TCP or UDP), ARP or random bytes, random
/// contents, 14 to 160 bytes.
pub fn random_frame(rnd: &mut impl FnMut() -> u64) -> Vec<u8> {
    let n = 14 + (rnd() % 147) as usize;
    let mut f: Vec<u8> = (0..n).map(|_| rnd() as u8).collect();
    match rnd() % 4 {
        0 | 1 if n >= 34 => {
            f[12] = 0x08;
            f[13] = 0x00;
            f[14] = 0x45;
            f[23] = if rnd().is_multiple_of(2) { 6 } else { 17 };
        }
        2 => {
            f[12] = 0x08;
            f[13] = 0x06;
        }
        _ => {}
    }
    f
}

/// `json` loaded for the engine `kind` (compiled and attached for [`EngineKind::Jit`]).
pub fn engine(json: &str, kind: EngineKind) -> Engine {
    let mut e = p4jet_engine::load(
        json,
        EngineConfig {
            engine: kind,
            ..EngineConfig::default()
        },
    )
    .unwrap();
    if kind == EngineKind::Jit {
        p4jet_jit::attach(&mut e).unwrap();
    }
    e
}

/// Writes a correct IPv4 header checksum into the 20-byte header at `f[14..34]`.
pub fn set_ipv4_checksum(f: &mut [u8]) {
    f[24..26].copy_from_slice(&[0, 0]);
    let sum: u32 = f[14..34]
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = (sum & 0xffff) + (sum >> 16);
    f[24..26].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

/// Asserts that two engines' scratches counted the same lookups and hits per table
/// (`what(t)` names table `t` in the message).
pub fn assert_same_table_counts(
    a: &p4jet_engine::Scratch,
    b: &p4jet_engine::Scratch,
    what: impl Fn(usize) -> String,
) {
    let (sa, sb) = (a.table_stats(), b.table_stats());
    for t in 0..sa.len().max(sb.len()) {
        let x = sa.get(t).copied().unwrap_or_default();
        let y = sb.get(t).copied().unwrap_or_default();
        assert_eq!((x.lookups, x.hits), (y.lookups, y.hits), "{}", what(t));
    }
}
