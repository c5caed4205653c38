//! Thrift messages against the runtime API: calls of every method of bmv2's services
//! with typed arguments (names from the program, plausible and random values, match
//! keys of every kind), re-encoded with p4jet-thrift's encoder, then byte-damaged in
//! part; each buffer is decoded and dispatched as the server does, but without the
//! server's own panic guard, so that a panic anywhere below is seen. A slice goes over
//! TCP to a running server, which must keep answering.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use p4jet_switch::Switch;
use p4jet_thrift::codec::{METHODS, match_param};
use p4jet_thrift::protocol::{Decoder, Limits, MessageType, Struct, TType, Value, encode_message};
use p4jet_thrift::server::resolve;
use p4jet_thrift::service::dispatch;
use p4jet_thrift::types::BmMatchParam;
use p4jet_thrift::{ServerConfig, ServerHandle, SharedRuntime};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::corpus::CorpusProgram;
use crate::harness::{Report, Watchdog, Wire, damage, guarded, held_clock, rss_kib, save_crash};

/// Methods never called: they touch ports (interfaces of this machine).
const SKIP: &[&str] = &["bm_dev_mgr_add_port", "bm_dev_mgr_remove_port"];

fn bytes(rng: &mut StdRng) -> Vec<u8> {
    let n = [0usize, 1, 2, 4, 6, 16, rng.gen_range(0..40)][rng.gen_range(0..7)];
    (0..n).map(|_| rng.r#gen()).collect()
}

fn match_params(rng: &mut StdRng) -> Value {
    let n = rng.gen_range(0..4);
    let items = (0..n)
        .map(|_| {
            let p = match rng.gen_range(0..5) {
                0 => BmMatchParam::Exact { key: bytes(rng) },
                1 => BmMatchParam::Lpm {
                    key: bytes(rng),
                    prefix_length: rng.gen_range(-2..200),
                },
                2 => BmMatchParam::Ternary {
                    key: bytes(rng),
                    mask: bytes(rng),
                },
                3 => BmMatchParam::Valid { key: rng.r#gen() },
                _ => BmMatchParam::Range {
                    start: bytes(rng),
                    end: bytes(rng),
                },
            };
            Value::Struct(match_param(&p))
        })
        .collect();
    Value::List {
        elem: TType::Struct,
        items,
    }
}

fn value(rng: &mut StdRng, ty: TType, name: &str, names: &[String], depth: u32) -> Value {
    match ty {
        TType::Bool => Value::Bool(rng.r#gen()),
        TType::Byte => Value::Byte(rng.r#gen()),
        TType::Double => Value::Double([0.0, 1.0, -1.0, 1e-9, 1e12, f64::NAN][rng.gen_range(0..6)]),
        TType::I16 => Value::I16(rng.r#gen()),
        TType::I32 => Value::I32(match rng.gen_range(0..4) {
            0 => rng.r#gen(),
            1 => -1,
            _ => rng.gen_range(0..16),
        }),
        TType::I64 => Value::I64(match rng.gen_range(0..3) {
            0 => rng.r#gen(),
            _ => rng.gen_range(0..64),
        }),
        TType::String => {
            if !names.is_empty() && rng.gen_bool(0.7) {
                Value::Binary(names[rng.gen_range(0..names.len())].clone().into_bytes())
            } else {
                Value::Binary(bytes(rng))
            }
        }
        TType::Struct if depth < 3 => {
            let mut s = Struct::new();
            for id in 1..=rng.gen_range(0..6) {
                let t = [
                    TType::I32,
                    TType::String,
                    TType::Bool,
                    TType::I64,
                    TType::Struct,
                ][rng.gen_range(0..5)];
                s = s.with(id, value(rng, t, "", names, depth + 1));
            }
            Value::Struct(s)
        }
        TType::List if name.contains("match_key") || rng.gen_bool(0.3) => match_params(rng),
        TType::List if depth < 3 => {
            let elem = [TType::String, TType::I32, TType::I64, TType::Struct][rng.gen_range(0..4)];
            let items = (0..rng.gen_range(0..5))
                .map(|_| value(rng, elem, "", names, depth + 1))
                .collect();
            Value::List { elem, items }
        }
        TType::Map => Value::Map {
            key: TType::String,
            value: TType::I32,
            entries: vec![],
        },
        _ => Value::I32(0),
    }
}

/// One encoded call of a random method.
pub fn call(rng: &mut StdRng, names: &[String], seq: i32) -> Vec<u8> {
    let m = loop {
        let m = &METHODS[rng.gen_range(0..METHODS.len())];
        if !SKIP.contains(&m.name) {
            break m;
        }
    };
    let mut args = Struct::new();
    for (id, name, ty) in m.args {
        if rng.gen_range(0..20) == 0 {
            continue; // a missing argument
        }
        let ty = if rng.gen_range(0..30) == 0 {
            TType::String
        } else {
            *ty
        };
        args = args.with(*id, value(rng, ty, name, names, 0));
    }
    let full = if rng.gen_bool(0.8) {
        format!("{}:{}", m.service.name(), m.name)
    } else {
        m.name.to_string()
    };
    encode_message(&full, MessageType::Call, seq, &args)
}

/// Decodes every message of `buf` and dispatches the calls; returns how many were
/// dispatched.
pub fn decode_and_dispatch(sw: &mut Switch, buf: &[u8]) -> usize {
    let mut dec = Decoder::new(buf, Limits::default());
    let mut n = 0;
    while let Ok(Some(h)) = dec.read_message_begin() {
        let Ok(args) = dec.read_struct() else { break };
        if h.kind != MessageType::Call && h.kind != MessageType::Oneway {
            continue;
        }
        if let Ok(spec) = resolve(&h.name) {
            if SKIP.contains(&spec.name) {
                continue;
            }
            let _ = dispatch(sw, spec, &args);
            n += 1;
        }
    }
    n
}

fn names_of(p: &CorpusProgram) -> Vec<String> {
    let mut names: Vec<String> = vec![];
    for t in &p.info.tables {
        names.push(t.name.clone());
        names.extend(t.actions.iter().map(|a| a.name.clone()));
        if let Some((prof, _)) = &t.profile {
            names.push(prof.clone());
        }
        if let Some(c) = &t.direct_counter {
            names.push(c.clone());
        }
    }
    names.extend(p.info.counters.iter().map(|c| c.0.clone()));
    names.extend(p.info.registers.iter().map(|r| r.0.clone()));
    names
}

/// A valid call that must always be answered: `bm_mt_get_num_entries` of some table
/// (or an unknown one).
fn probe(sw_names: &[String], seq: i32) -> Vec<u8> {
    let t = sw_names.first().cloned().unwrap_or_default();
    let args = Struct::new()
        .with(1, Value::I32(0))
        .with(2, Value::Binary(t.into_bytes()));
    encode_message(
        "standard:bm_mt_get_num_entries",
        MessageType::Call,
        seq,
        &args,
    )
}

fn exchange(addr: std::net::SocketAddr, bytes: &[u8], want_reply: bool) -> Result<bool, String> {
    let mut s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let _ = s.write_all(bytes);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut out = vec![];
    let _ = s.read_to_end(&mut out);
    if !want_reply {
        return Ok(true);
    }
    let mut dec = Decoder::new(&out[..], Limits::default());
    match dec.read_message_begin() {
        Ok(Some(h)) => Ok(h.kind == MessageType::Reply),
        _ => Ok(false),
    }
}

/// Runs `messages` buffers in process and about one in a hundred over TCP.
pub fn campaign(
    programs: &[CorpusProgram],
    messages: u64,
    seed: u64,
    crashes: &Path,
    hang_limit: Duration,
) -> Report {
    let mut rep = Report {
        target: "thrift".into(),
        unit: "messages",
        ..Report::default()
    };
    let dog = Watchdog::start("thrift", crashes, hang_limit);
    let start = Instant::now();
    let n = programs.len().max(1) as u64;
    let (mut dispatched, mut over_tcp) = (0u64, 0u64);
    for (pi, p) in programs.iter().enumerate() {
        // equal shares, rounded so that they add up to `messages`
        let per = messages * (pi as u64 + 1) / n - messages * pi as u64 / n;
        let mut rng = StdRng::seed_from_u64(seed ^ (pi as u64).wrapping_mul(0x2545_F491));
        let Ok(mut sw) = Switch::new(&p.json, held_clock()) else {
            continue;
        };
        let names = names_of(p);
        // a server with its own switch for the TCP slice
        let server = Switch::new(&p.json, held_clock()).ok().and_then(|s| {
            let api: SharedRuntime = Arc::new(Mutex::new(s));
            let l = TcpListener::bind("127.0.0.1:0").ok()?;
            ServerHandle::spawn(l, api, ServerConfig::default()).ok()
        });
        let mut done = 0u64;
        while done < per {
            let mut buf = vec![];
            for k in 0..rng.gen_range(1..=3) {
                buf.extend(call(&mut rng, &names, k));
            }
            if rng.gen_range(0..3) == 0 {
                damage(&mut buf, &mut rng, Wire::Thrift);
            }
            dog.case(&buf);
            match guarded(|| decode_and_dispatch(&mut sw, &buf)) {
                Ok(n) => dispatched += n as u64,
                Err(msg) => {
                    let path = save_crash(crashes, "thrift", rep.panics.len(), &buf);
                    rep.panics
                        .push(format!("{}: {msg} ({})", p.name, path.display()));
                    match Switch::new(&p.json, held_clock()) {
                        Ok(s) => sw = s,
                        Err(_) => break,
                    }
                }
            }
            if let Some(srv) = &server
                && rng.gen_range(0..100) == 0
            {
                over_tcp += 1;
                let addr = srv.local_addr();
                let _ = exchange(addr, &buf, false);
                match exchange(addr, &probe(&names, 7), true) {
                    Ok(true) => {}
                    other => {
                        let path = save_crash(crashes, "thrift-tcp", rep.panics.len(), &buf);
                        rep.panics.push(format!(
                            "{}: the server stopped answering after a message ({other:?}, {})",
                            p.name,
                            path.display()
                        ));
                    }
                }
            }
            done += 1;
            rep.cases += 1;
            if rep.rss_warm_kib == 0 && rep.cases >= messages / 10 {
                rep.rss_warm_kib = rss_kib();
            }
        }
        if let Some(srv) = server {
            let _ = srv.stop();
        }
    }
    rep.rss_end_kib = rss_kib();
    rep.seconds = start.elapsed().as_secs_f64();
    rep.notes.push(format!(
        "{dispatched} calls dispatched, {over_tcp} buffers over TCP"
    ));
    rep
}
