//! P4Runtime writes and reads while a worker forwards (issue 17, item 4).
//!
//! In one process: the switch behind the mutex the Thrift and gRPC servers share, the
//! P4Runtime server on loopback, a forwarding thread with its own `Worker` replaying
//! frames from memory, and a tonic client (the generated `P4RuntimeClient`) that
//!
//! 1. pushes `tests/corpus/bench/l2_large` (one exact table of 1M entries),
//! 2. installs 1,000 entries the traffic hits, then starts the traffic,
//! 3. writes 100,000 entries in batches of 1,000 (keys the traffic does not use),
//! 4. reads the table back (101,000 entries, streamed in responses the client's
//!    default 4 MiB limit accepts).
//!
//! Every frame must leave on the port its entry names: forwarding never waits for
//! the control plane. Prints the write and read times and the worker's longest
//! step; docs/p4runtime.md quotes them (release build: `cargo test --profile ci -p
//! p4jet --test p4rt_writes -- --nocapture`). A debug build writes 10,000 entries.
//!
//! [`read_of_a_million_entries_is_streamed`]: 1M entries (written through the runtime
//! model) read over gRPC by a client with the default 4 MiB message limit.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::corpus_json;
use p4jet_p4rt::proto::p4::config::v1 as cfg;
use p4jet_p4rt::proto::p4::v1 as pb;
use p4jet_p4rt::proto::p4::v1::p4_runtime_client::P4RuntimeClient;
use p4jet_p4rt::{Device, ServeOptions, SharedRuntime};
use p4jet_switch::{Switch, SwitchConfig, Worker};
use tokio_stream::StreamExt;
use tonic::transport::Channel;

const TABLE_ID: u32 = 45595255;
const FORWARD_ID: u32 = 33244565;
const DROP_ID: u32 = 17676690;
const BATCH: usize = 32;

/// The P4Info of l2_large (as its .p4info.txtpb says).
fn p4info() -> cfg::P4Info {
    let pre = |id: u32, name: &str, alias: &str| {
        Some(cfg::Preamble {
            id,
            name: name.into(),
            alias: alias.into(),
            ..Default::default()
        })
    };
    cfg::P4Info {
        pkg_info: Some(cfg::PkgInfo {
            arch: "v1model".into(),
            ..Default::default()
        }),
        tables: vec![cfg::Table {
            preamble: pre(TABLE_ID, "IngressImpl.dmac", "dmac"),
            match_fields: vec![cfg::MatchField {
                id: 1,
                name: "hdr.ethernet.dst_addr".into(),
                bitwidth: 48,
                r#match: Some(cfg::match_field::Match::MatchType(
                    cfg::match_field::MatchType::Exact as i32,
                )),
                ..Default::default()
            }],
            action_refs: vec![
                cfg::ActionRef {
                    id: FORWARD_ID,
                    ..Default::default()
                },
                cfg::ActionRef {
                    id: DROP_ID,
                    ..Default::default()
                },
            ],
            size: 1 << 20,
            ..Default::default()
        }],
        actions: vec![
            cfg::Action {
                preamble: pre(FORWARD_ID, "IngressImpl.forward", "forward"),
                params: vec![cfg::action::Param {
                    id: 1,
                    name: "port".into(),
                    bitwidth: 9,
                    ..Default::default()
                }],
            },
            cfg::Action {
                preamble: pre(DROP_ID, "IngressImpl.drop", "drop"),
                params: vec![],
            },
        ],
        ..Default::default()
    }
}

fn mac(class: u8, i: u32) -> [u8; 6] {
    let b = i.to_be_bytes();
    [class, 0, b[0], b[1], b[2], b[3]]
}

fn entry(class: u8, i: u32, port: u16) -> pb::Update {
    pb::Update {
        r#type: pb::update::Type::Insert as i32,
        entity: Some(pb::Entity {
            entity: Some(pb::entity::Entity::TableEntry(pb::TableEntry {
                table_id: TABLE_ID,
                r#match: vec![pb::FieldMatch {
                    field_id: 1,
                    field_match_type: Some(pb::field_match::FieldMatchType::Exact(
                        pb::field_match::Exact {
                            value: mac(class, i).to_vec(),
                        },
                    )),
                }],
                action: Some(pb::TableAction {
                    r#type: Some(pb::table_action::Type::Action(pb::Action {
                        action_id: FORWARD_ID,
                        params: vec![pb::action::Param {
                            param_id: 1,
                            value: port.to_be_bytes().to_vec(),
                        }],
                    })),
                }),
                ..Default::default()
            })),
        }),
    }
}

fn write(updates: Vec<pb::Update>) -> pb::WriteRequest {
    pb::WriteRequest {
        device_id: 1,
        election_id: Some(pb::Uint128 { high: 0, low: 1 }),
        updates,
        ..Default::default()
    }
}

/// What the forwarding thread saw.
#[derive(Default, Debug)]
struct Seen {
    injected: u64,
    sent: u64,
    wrong: u64,
    longest_step: Duration,
}

/// Replays frames to the keys 0..nkeys of class 0xee until `stop`; key k must
/// leave on port k % 4.
fn forward(mut w: Worker, nkeys: u32, stop: Arc<AtomicBool>) -> Seen {
    let mut s = Seen::default();
    let mut k = 0u32;
    while !stop.load(Ordering::Acquire) {
        for _ in 0..BATCH {
            let mut f = mac(0xee, k).to_vec();
            f.extend_from_slice(&[0, 0, 0, 0, 0, 1, 0x88, 0xb5]);
            f.resize(60, 0);
            w.inject(0, &f);
            s.injected += 1;
            k = (k + 1) % nkeys;
        }
        let t = Instant::now();
        w.run_until_idle(&mut |port, f| {
            s.sent += 1;
            let key = u32::from_be_bytes([f[2], f[3], f[4], f[5]]);
            if port != key % 4 {
                s.wrong += 1;
            }
        });
        s.longest_step = s.longest_step.max(t.elapsed());
    }
    s
}

struct Setup {
    sw: Arc<Mutex<Switch>>,
    _server: p4jet_p4rt::ServerHandle,
    client: P4RuntimeClient<Channel>,
    _arb: tokio::sync::mpsc::Sender<pb::StreamMessageRequest>,
}

async fn setup() -> Setup {
    let json = std::fs::read_to_string(corpus_json("l2_large")).unwrap();
    let sw = Arc::new(Mutex::new(
        Switch::new(&json, SwitchConfig::default()).unwrap(),
    ));
    let rt: SharedRuntime = sw.clone();
    let dev = Arc::new(Device::new(1, rt, None));
    let server = p4jet_p4rt::spawn(dev, "127.0.0.1:0", ServeOptions { tls: None }).unwrap();
    let ch = Channel::from_shared(format!("http://{}", server.local_addr()))
        .unwrap()
        .connect()
        .await
        .unwrap();
    // the default 4 MiB receive limit of gRPC clients
    let mut client = P4RuntimeClient::new(ch);
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let mut stream = client
        .stream_channel(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    tx.send(pb::StreamMessageRequest {
        update: Some(pb::stream_message_request::Update::Arbitration(
            pb::MasterArbitrationUpdate {
                device_id: 1,
                election_id: Some(pb::Uint128 { high: 0, low: 1 }),
                ..Default::default()
            },
        )),
    })
    .await
    .unwrap();
    stream.next().await.unwrap().unwrap();
    tokio::spawn(async move { while stream.next().await.is_some() {} });
    client
        .set_forwarding_pipeline_config(pb::SetForwardingPipelineConfigRequest {
            device_id: 1,
            election_id: Some(pb::Uint128 { high: 0, low: 1 }),
            action: 3,
            config: Some(pb::ForwardingPipelineConfig {
                p4info: Some(p4info()),
                p4_device_config: json.into_bytes(),
                cookie: None,
            }),
            ..Default::default()
        })
        .await
        .unwrap();
    Setup {
        sw,
        _server: server,
        client,
        _arb: tx,
    }
}

/// Reads the whole table; returns (entries, responses, largest response in bytes).
async fn read_all(client: &mut P4RuntimeClient<Channel>) -> (usize, usize, usize) {
    use prost::Message;
    let mut s = client
        .read(pb::ReadRequest {
            device_id: 1,
            entities: vec![pb::Entity {
                entity: Some(pb::entity::Entity::TableEntry(pb::TableEntry {
                    table_id: TABLE_ID,
                    ..Default::default()
                })),
            }],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let (mut n, mut responses, mut largest) = (0, 0, 0);
    while let Some(r) = s.next().await {
        let r = r.unwrap();
        responses += 1;
        largest = largest.max(r.encoded_len());
        n += r.entities.len();
    }
    (n, responses, largest)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p4runtime_writes_while_forwarding() {
    let total: u32 = std::env::var("P4JET_P4RT_WRITES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) {
            10_000
        } else {
            100_000
        });
    let mut s = setup().await;
    // the entries the traffic hits
    let traffic_keys = 1000u32;
    s.client
        .write(write(
            (0..traffic_keys)
                .map(|k| entry(0xee, k, (k % 4) as u16))
                .collect(),
        ))
        .await
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let w = s.sw.lock().unwrap().new_worker();
    let st = stop.clone();
    let fwd = std::thread::spawn(move || forward(w, traffic_keys, st));
    std::thread::sleep(Duration::from_millis(200));

    let t = Instant::now();
    let mut i = 0u32;
    while i < total {
        let n = 1000.min(total - i);
        s.client
            .write(write((i..i + n).map(|k| entry(0x02, k, 1)).collect()))
            .await
            .unwrap();
        i += n;
    }
    let write_time = t.elapsed();
    let t = Instant::now();
    let (n, responses, largest) = read_all(&mut s.client).await;
    let read_time = t.elapsed();
    std::thread::sleep(Duration::from_millis(100));
    stop.store(true, Ordering::Release);
    let seen = fwd.join().unwrap();

    eprintln!(
        "p4rt_writes: {total} entries in batches of 1000 written in {:.3} s ({:.0} entries/s); \
         {n} read back in {:.3} s ({responses} responses, largest {largest} bytes); \
         worker: {} frames in, {} out, {} mis-forwarded, longest step {:?}",
        write_time.as_secs_f64(),
        f64::from(total) / write_time.as_secs_f64(),
        read_time.as_secs_f64(),
        seen.injected,
        seen.sent,
        seen.wrong,
        seen.longest_step
    );
    assert_eq!(n, (total + traffic_keys) as usize);
    assert!(largest < 4 << 20);
    assert!(seen.injected > 0);
    assert_eq!(seen.injected, seen.sent, "frames lost while writing");
    assert_eq!(seen.wrong, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_of_a_million_entries_is_streamed() {
    if cfg!(debug_assertions) {
        common::skipped("SKIPPED: 1M entries: run with --profile ci or --release");
        return;
    }
    let mut s = setup().await;
    {
        use p4jet_runtime::{ActionCall, EntryAction, FieldMatch, MatchKey, NewEntry, Runtime};
        let mut sw = s.sw.lock().unwrap();
        let schema = sw.schema().unwrap();
        let t = schema.table_by_name("IngressImpl.dmac").unwrap();
        let fwd = schema.action_by_name("IngressImpl.forward").unwrap();
        for chunk in 0..100u32 {
            let ups = (chunk * 10_000..(chunk + 1) * 10_000)
                .map(|k| p4jet_runtime::Update::AddEntry {
                    table: t,
                    entry: NewEntry::new(
                        MatchKey::new(vec![FieldMatch::Exact(mac(0x03, k).to_vec())]),
                        EntryAction::Direct(ActionCall::new(fwd, vec![vec![0, 1]])),
                    ),
                })
                .collect();
            let r = sw.write(ups, p4jet_runtime::Atomicity::ContinueOnError);
            assert!(r.is_ok(), "{:?}", r.first_error());
        }
    }
    let t = Instant::now();
    let (n, responses, largest) = read_all(&mut s.client).await;
    eprintln!(
        "p4rt_writes: 1,000,000 entries read in {:.3} s: {responses} responses, largest {largest} bytes",
        t.elapsed().as_secs_f64()
    );
    assert_eq!(n, 1_000_000);
    assert!(largest < 4 << 20);
}
