//! What the servers under test serve: a real switch in memory (manual clock, no
//! ports) running a corpus program, wrapped in the runtime model's shared test double
//! ([`Recorder`]) so a test sees which model operations an RPC made and can make them
//! fail.
#![allow(dead_code)] // each test file uses a part

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use p4jet_runtime::testing::Recorder;
use p4jet_switch::{Switch, SwitchConfig};

/// The runtime behind a test server.
pub type Rt = Recorder<Switch>;

/// The switch clock of every test switch, in µs (`get_time_elapsed_us`).
pub const CLOCK_US: u64 = 123_456_789;

/// The JSON text of a corpus program.
pub fn corpus_json(program: &str) -> String {
    let path = format!(
        "{}/../../tests/corpus/{program}/{program}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A switch in memory running `json` (clock held at [`CLOCK_US`], swap enabled).
pub fn switch_for(json: &str) -> Switch {
    let cfg = SwitchConfig {
        manual_clock: Some(Arc::new(AtomicU64::new(CLOCK_US))),
        batch: 1,
        enable_swap: true,
        ..SwitchConfig::default()
    };
    Switch::new(json, cfg).expect("corpus JSON loads")
}

/// A recorded switch running a corpus program.
pub fn recorded(program: &str) -> Rt {
    Recorder::new(switch_for(&corpus_json(program)))
}

/// The runtime shared with a server, and a typed handle on it for the test.
pub fn shared(rt: Rt) -> (Arc<Mutex<Rt>>, p4jet_thrift::SharedRuntime) {
    let typed = Arc::new(Mutex::new(rt));
    let api: p4jet_thrift::SharedRuntime = typed.clone();
    (typed, api)
}

/// Starts a server for `api` on an ephemeral loopback port.
pub fn start(api: p4jet_thrift::SharedRuntime) -> p4jet_thrift::ServerHandle {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let config = p4jet_thrift::ServerConfig {
        poll_interval: std::time::Duration::from_millis(20),
        stall_timeout: std::time::Duration::from_secs(2),
        ..Default::default()
    };
    p4jet_thrift::ServerHandle::spawn(listener, api, config).unwrap()
}
