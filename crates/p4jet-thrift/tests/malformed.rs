//! Malformed input against a running server: random, truncated and
//! oversized frames. Each must yield a `TApplicationException` or a closed
//! connection, never a panic, never a call into the API; the server keeps
//! serving other and later connections.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::{CLOCK_US, recorded, shared, start};
use p4jet_runtime::testing::Call;
use p4jet_thrift::protocol::*;
use p4jet_thrift::{ServerConfig, ServerHandle, ThriftClient};

/// Sends `bytes` on a new connection, half-closes it and returns everything
/// the server sends until it closes (bounded by a timeout).
fn poke(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // The server may close before reading everything (that is allowed).
    let _ = s.write_all(bytes);
    let _ = s.shutdown(Shutdown::Write);
    let mut out = Vec::new();
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("no close within {:?}: {e}", start.elapsed()),
        }
    }
    out
}

/// Every message in a response must be a TApplicationException of one of
/// the expected kinds; returns their kinds.
fn exceptions_in(mut bytes: &[u8]) -> Vec<i32> {
    let mut kinds = Vec::new();
    while !bytes.is_empty() {
        let mut d = Decoder::new(bytes, Limits::default());
        let h = d.read_message_begin().unwrap().unwrap();
        let body = d.read_struct().unwrap();
        assert_eq!(h.kind, MessageType::Exception, "{h:?} {body:?}");
        let ex = ApplicationException::from_struct(&body);
        assert!(
            [
                app_error::UNKNOWN_METHOD,
                app_error::PROTOCOL_ERROR,
                app_error::INVALID_MESSAGE_TYPE
            ]
            .contains(&ex.kind),
            "{ex}"
        );
        kinds.push(ex.kind);
        bytes = d.get_ref();
    }
    kinds
}

/// The server still answers a well-formed client.
fn healthy(addr: SocketAddr) {
    let mut c = ThriftClient::connect(addr).unwrap();
    assert_eq!(c.get_time_elapsed_us(), Ok(CLOCK_US as i64));
    assert_eq!(c.bm_mt_get_num_entries("IngressImpl.acl"), Ok(0));
}

/// The model operations recorded, by name (`write` for any write).
fn names(calls: &[Call]) -> Vec<String> {
    calls
        .iter()
        .map(|c| match c {
            Call::Other(s) => s.split('(').next().unwrap().to_string(),
            _ => "write".to_string(),
        })
        .collect()
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| (self.next() >> 32) as u8).collect()
    }
}

fn strict_header(name: &str) -> Vec<u8> {
    let mut h = vec![0x80, 0x01, 0x00, 0x01];
    h.extend_from_slice(&(name.len() as u32).to_be_bytes());
    h.extend_from_slice(name.as_bytes());
    h.extend_from_slice(&7u32.to_be_bytes());
    h
}

#[test]
fn random_frames() {
    let (mock, api) = shared(recorded("p4rt_switch"));
    let server = start(api);
    let addr = server.local_addr();
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let mut replies = 0;
    for i in 0..300 {
        let len = (rng.next() % 300) as usize;
        let mut frame = match i % 4 {
            // Pure noise.
            0 => rng.bytes(len),
            // Noise behind a valid header for a method that does not exist.
            1 => [strict_header("standard:bm_nosuch"), rng.bytes(len)].concat(),
            // Noise behind a valid header whose type byte is random.
            2 => {
                let mut h = strict_header("simple_switch:nosuch");
                h[3] = (rng.next() % 8) as u8;
                [h, rng.bytes(len)].concat()
            }
            // An old-style header with a random length word.
            _ => [rng.bytes(4), rng.bytes(len)].concat(),
        };
        if i % 4 == 3 {
            frame[0] &= 0x7f;
        }
        let out = poke(addr, &frame);
        replies += exceptions_in(&out).len();
        if i % 50 == 0 {
            healthy(addr);
        }
    }
    println!("{replies} exception replies to 300 random frames");
    healthy(addr);
    // No garbage ever reached the runtime: only the health checks did.
    let calls = names(&mock.lock().unwrap().take());
    assert!(
        calls.iter().all(|c| c == "clock" || c == "entry_count"),
        "{calls:?}"
    );
    server.stop().unwrap();
}

fn valid_frames() -> Vec<Vec<u8>> {
    let add = Struct::new()
        .with(1, Value::I32(0))
        .with(2, Value::string("IngressImpl.dmac"))
        .with(
            3,
            Value::list(
                TType::Struct,
                vec![Value::Struct(Struct::new().with(1, Value::I32(0)).with(
                    2,
                    Value::Struct(Struct::new().with(1, Value::Binary(vec![1, 2, 3, 4, 5, 6]))),
                ))],
            ),
        )
        .with(4, Value::string("IngressImpl.forward"))
        .with(
            5,
            Value::list(TType::String, vec![Value::Binary(vec![0, 3])]),
        )
        .with(6, Value::Struct(Struct::new().with(1, Value::I32(0))));
    let mirror = Struct::new()
        .with(1, Value::I32(1))
        .with(2, Value::Struct(Struct::new().with(1, Value::I32(2))));
    let rates = Struct::new()
        .with(1, Value::I32(0))
        .with(2, Value::string("IngressImpl.port_meter"))
        .with(
            3,
            Value::list(
                TType::Struct,
                vec![
                    Value::Struct(
                        Struct::new()
                            .with(1, Value::Double(0.5))
                            .with(2, Value::I32(10)),
                    );
                    2
                ],
            ),
        );
    vec![
        encode_message("standard:bm_mt_add_entry", MessageType::Call, 1, &add),
        encode_message(
            "simple_switch:mirroring_session_add",
            MessageType::Call,
            2,
            &mirror,
        ),
        encode_message(
            "standard:bm_meter_array_set_rates",
            MessageType::Call,
            3,
            &rates,
        ),
    ]
}

#[test]
fn truncated_frames() {
    let (mock, api) = shared(recorded("p4rt_switch"));
    let server = start(api);
    let addr = server.local_addr();
    for frame in valid_frames() {
        for cut in 0..frame.len() {
            let out = poke(addr, &frame[..cut]);
            assert!(out.is_empty(), "reply to a frame cut at {cut}: {out:02x?}");
        }
        assert!(mock.lock().unwrap().take().is_empty());
        // The whole frame is a valid call, answered with a reply.
        let out = poke(addr, &frame);
        let mut d = Decoder::new(&out[..], Limits::default());
        assert_eq!(
            d.read_message_begin().unwrap().unwrap().kind,
            MessageType::Reply
        );
        assert_eq!(mock.lock().unwrap().take().len(), 1);
    }
    healthy(addr);
    server.stop().unwrap();
}

#[test]
fn oversized_and_invalid_frames() {
    let (mock, api) = shared(recorded("p4rt_switch"));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let config = ServerConfig {
        limits: Limits {
            max_message_len: 1 << 20,
            ..Limits::default()
        },
        poll_interval: Duration::from_millis(20),
        stall_timeout: Duration::from_secs(2),
        ..Default::default()
    };
    let server = ServerHandle::spawn(listener, api, config).unwrap();
    let addr = server.local_addr();
    let call = |body: &[u8]| {
        [
            strict_header("standard:bm_mt_get_num_entries"),
            body.to_vec(),
        ]
        .concat()
    };
    let protocol_error = |frame: &[u8]| {
        let out = poke(addr, frame);
        assert_eq!(
            exceptions_in(&out),
            vec![app_error::PROTOCOL_ERROR],
            "{out:02x?}"
        );
    };

    // Header: absurd name length, bad version: closed without a reply.
    assert!(poke(addr, &[0x80, 0x01, 0x00, 0x01, 0x7f, 0xff, 0xff, 0xff]).is_empty());
    assert!(poke(addr, &[0x7f, 0xff, 0xff, 0xff, 1, 2, 3]).is_empty());
    assert!(poke(addr, &[0x80, 0x02, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0]).is_empty());
    // String of 2 GiB announced, list of 2^31 elements, negative sizes.
    protocol_error(&call(&[0x0b, 0x00, 0x02, 0x7f, 0xff, 0xff, 0xff]));
    protocol_error(&call(&[0x0f, 0x00, 0x03, 0x0c, 0x7f, 0xff, 0xff, 0xff]));
    protocol_error(&call(&[
        0x0d, 0x00, 0x03, 0x0b, 0x0b, 0x7f, 0xff, 0xff, 0xff,
    ]));
    protocol_error(&call(&[0x0b, 0x00, 0x02, 0xff, 0xff, 0xff, 0xff]));
    protocol_error(&call(&[0x0f, 0x00, 0x03, 0x08, 0x80, 0x00, 0x00, 0x00]));
    // Invalid field and element types.
    protocol_error(&call(&[0x07, 0x00, 0x01]));
    protocol_error(&call(&[0x0f, 0x00, 0x03, 0x01, 0, 0, 0, 1]));
    // Nesting 200 structs deep.
    let mut deep = Vec::new();
    for _ in 0..200 {
        deep.extend_from_slice(&[0x0c, 0x00, 0x01]);
    }
    protocol_error(&call(&deep));
    // A 2 MiB message against a 1 MiB limit (sent for real).
    let big = Struct::new()
        .with(1, Value::I32(0))
        .with(2, Value::Binary(vec![b'x'; 2 << 20]));
    protocol_error(&encode_message(
        "standard:bm_mt_get_num_entries",
        MessageType::Call,
        1,
        &big,
    ));

    // A 60 MB string announced: over the message limit, refused at once
    // (nothing is allocated for it).
    protocol_error(&call(&[0x0b, 0x00, 0x02, 0x03, 0x93, 0x87, 0x00, b'a']));
    // 900 kB announced (within limits) but never sent: the connection
    // stalls and is closed after the stall timeout; meanwhile others are
    // served.
    let mut stalled = TcpStream::connect(addr).unwrap();
    stalled
        .write_all(&call(&[0x0b, 0x00, 0x02, 0x00, 0x0d, 0xbb, 0xa0, b'a']))
        .unwrap();
    healthy(addr);
    stalled
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let t0 = Instant::now();
    let mut buf = [0u8; 16];
    assert!(matches!(stalled.read(&mut buf), Ok(0) | Err(_)));
    assert!(t0.elapsed() < Duration::from_secs(9));

    healthy(addr);
    let calls = names(&mock.lock().unwrap().take());
    assert_eq!(
        calls,
        ["clock", "entry_count", "clock", "entry_count"],
        "only the health checks"
    );
    server.stop().unwrap();
}

#[test]
fn garbage_after_a_good_call_only_affects_that_connection() {
    let (mock, api) = shared(recorded("p4rt_switch"));
    let server = start(api);
    let addr = server.local_addr();
    let mut client = ThriftClient::connect(addr).unwrap();
    let frame = &valid_frames()[1];
    // One good call, then garbage, on one connection: one reply, then an
    // exception (the garbage parses as an old-style header for an unknown
    // method) or a close.
    let out = poke(
        addr,
        &[
            frame.as_slice(),
            &[0, 0, 0, 3, b'x', b'y', b'z', 1, 0, 0, 0, 1, 0xff],
        ]
        .concat(),
    );
    let mut d = Decoder::new(&out[..], Limits::default());
    assert_eq!(
        d.read_message_begin().unwrap().unwrap().kind,
        MessageType::Reply
    );
    d.read_struct().unwrap();
    let rest = d.get_ref().to_vec();
    exceptions_in(&rest);
    // The good call took effect; the other connection is unaffected.
    assert_eq!(client.mirroring_mapping_get_egress_port(1), Ok(2));
    let calls = mock.lock().unwrap().take();
    assert!(
        matches!(&calls[0], Call::Write(u, _) if matches!(u[..], [p4jet_runtime::Update::WriteCloneSession { .. }])),
        "{calls:?}"
    );
    assert_eq!(names(&calls[1..]), ["clone_session"]);
    server.stop().unwrap();
}
