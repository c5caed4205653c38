//! A configuration swap under traffic with the JIT: `load_new_config` compiles the new
//! program on the calling (control) thread while a worker keeps forwarding with the
//! old program's code; after `swap_configs` the worker runs the new, compiled program.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use p4jet_control::cli::Cli;
use p4jet_engine::EngineKind;
use p4jet_switch::{Switch, SwitchConfig};

fn corpus(name: &str) -> String {
    let p = format!(
        "{}/../../tests/corpus/{name}/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(p).unwrap()
}

/// An Ethernet frame to 00:00:00:00:00:02.
fn frame(seq: u32) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend(seq.to_be_bytes());
    f.resize(64, 0);
    f
}

#[test]
fn a_swap_compiles_off_the_forwarding_thread() {
    if !p4jet_jit::supported() {
        eprintln!("skipped: Cranelift does not generate code for this host");
        return;
    }
    let json = corpus("basic_l2");
    let cfg = SwitchConfig {
        enable_swap: true,
        engine: EngineKind::Jit,
        ..SwitchConfig::default()
    };
    let mut sw = Switch::new(&json, cfg).unwrap();
    assert!(sw.engine.native().is_some(), "the program is compiled");
    let mut cli = Cli::new(&json).unwrap();
    cli.execute(
        &mut sw,
        "table_add IngressImpl.dmac forward 00:00:00:00:00:02 => 1",
    )
    .unwrap();
    let mut w = sw.new_worker();
    let stop = AtomicBool::new(false);
    let sent = AtomicU64::new(0);
    let generation = AtomicU64::new(0);
    let (during, load_time, gen_seen) = std::thread::scope(|s| {
        let (stop, sent, generation) = (&stop, &sent, &generation);
        let h = s.spawn(move || {
            let mut seq = 0u32;
            while !stop.load(Ordering::Acquire) {
                for _ in 0..16 {
                    w.inject(0, &frame(seq));
                    seq += 1;
                }
                w.run_until_idle(&mut |_, _| {
                    sent.fetch_add(1, Ordering::Relaxed);
                });
                generation.store(w.generation(), Ordering::Release);
            }
            w.generation()
        });
        while sent.load(Ordering::Relaxed) < 1000 {
            std::thread::yield_now();
        }
        // the new program compiles here, on this thread
        let before = sent.load(Ordering::Relaxed);
        let t0 = Instant::now();
        sw.load_new_config(&corpus("vxlan_gateway")).unwrap();
        let load_time = t0.elapsed();
        let during = sent.load(Ordering::Relaxed) - before;
        assert!(sw.engine.native().is_some(), "the new program is compiled");
        sw.swap_configs().unwrap();
        // the worker moves to it between batches
        while generation.load(Ordering::Acquire) < 1 {
            std::thread::yield_now();
        }
        stop.store(true, Ordering::Release);
        (during, load_time, h.join().unwrap())
    });
    eprintln!(
        "load_new_config (with compilation) took {load_time:?}; {during} packets forwarded meanwhile"
    );
    // forwarding went on while the new program was loaded and compiled
    assert!(
        during > 0,
        "forwarding stalled during the load ({load_time:?})"
    );
    assert_eq!(gen_seen, 1, "the worker runs the swapped-in program");
}
