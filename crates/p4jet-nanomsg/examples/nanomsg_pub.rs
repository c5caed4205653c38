//! Publishes a few learning messages on ADDR once a subscriber is there:
//! `cargo run -p p4jet-nanomsg --example nanomsg_pub -- ipc:///tmp/x.ipc`.
use std::time::{Duration, Instant};

use p4jet_nanomsg::{Learn, Publisher};

fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "ipc:///tmp/p4jet-example.ipc".into());
    let p = match Publisher::bind(&addr) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let start = Instant::now();
    while p.subscribers() == 0 && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    for i in 0..3u64 {
        let m = Learn {
            switch_id: 7,
            cxt_id: 0,
            list_id: 1,
            buffer_id: i,
            samples: vec![vec![0, 0, 0, 0, 0, 0xaa, 0, i as u8]],
        };
        p.send(&m.encode());
    }
    std::thread::sleep(Duration::from_millis(300));
}
