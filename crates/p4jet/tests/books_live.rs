//! The packet books of a running switch: `--metrics-addr` serves them in the
//! Prometheus text format (every line checked against the format), `p4jet_packet_books`
//! over Thrift gives them as JSON, and the exit summary balances, with program drops
//! and frames to a port the switch does not have among them.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::*;
use p4jet_thrift::types::{BmAddEntryOptions, BmMatchParam};

fn scrape(port: u16, path: &str) -> (String, String) {
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut s = String::new();
    c.read_to_string(&mut s).unwrap();
    let (head, body) = s.split_once("\r\n\r\n").unwrap();
    (head.to_string(), body.to_string())
}

/// A strict check of the text exposition format: `# HELP`/`# TYPE` lines, samples
/// `name{label="value",...} number` with a TYPE before them; returns the samples.
fn parse_exposition(text: &str) -> Vec<(String, f64)> {
    let mut typed = std::collections::HashSet::new();
    let mut out = vec![];
    assert!(text.ends_with('\n'));
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("# TYPE ") {
            let mut p = rest.split(' ');
            let name = p.next().unwrap();
            let kind = p.next().unwrap();
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{l}");
            assert!(typed.insert(name.to_string()), "TYPE twice: {l}");
            continue;
        }
        if l.starts_with("# HELP ") {
            continue;
        }
        let (series, value) = l.rsplit_once(' ').unwrap_or_else(|| panic!("{l}"));
        let v: f64 = value.parse().unwrap_or_else(|_| panic!("value of {l}"));
        let name = series.split('{').next().unwrap();
        // a histogram's samples: NAME_bucket{le=..}, NAME_sum, NAME_count
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|f| typed.contains(*f)))
            .unwrap_or(name);
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "{l}"
        );
        assert!(typed.contains(family), "no TYPE before {l}");
        let labels = &series[name.len()..];
        if !labels.is_empty() {
            let inner = labels
                .strip_prefix('{')
                .and_then(|x| x.strip_suffix('}'))
                .unwrap_or_else(|| panic!("{l}"));
            for kv in inner.split("\",") {
                let (k, v) = kv.split_once("=\"").unwrap_or_else(|| panic!("{l}"));
                assert!(k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
                assert!(!v.trim_end_matches('"').contains('"'), "{l}");
            }
        }
        out.push((series.to_string(), v));
    }
    out
}

fn sample(s: &[(String, f64)], series: &str) -> f64 {
    s.iter()
        .find(|(k, _)| k == series)
        .map(|x| x.1)
        .unwrap_or(0.0)
}

#[test]
fn metrics_and_packet_books_of_a_running_switch() {
    books_of_a_running_switch("jit");
}

/// The same with the interpreter: its table applies are counted too.
#[test]
fn metrics_and_packet_books_with_the_interpreter() {
    books_of_a_running_switch("interp");
}

fn books_of_a_running_switch(engine: &str) {
    let dir = tmpdir(&format!("books-live-{engine}"));
    let metrics = free_port();
    let maddr = format!("127.0.0.1:{metrics}");
    let mut sw = Running::start(
        &dir,
        &corpus_json("basic_l2"),
        &[0, 1],
        &["--metrics-addr", &maddr, "--engine", engine],
    );
    let mut c = p4jet_thrift::ThriftClient::connect(("127.0.0.1", sw.thrift_port)).unwrap();
    let key = |mac: u8| {
        vec![BmMatchParam::Exact {
            key: vec![0, 0, 0, 0, 0, mac],
        }]
    };
    let fwd = |c: &mut p4jet_thrift::ThriftClient, mac: u8, port: u8| {
        c.bm_mt_add_entry(
            "IngressImpl.dmac",
            &key(mac),
            "IngressImpl.forward",
            &[vec![0, port]],
            BmAddEntryOptions::default(),
        )
        .unwrap();
    };
    fwd(&mut c, 0x11, 1);
    // port 7 does not exist: simple_switch drops such frames; counted as no_such_port
    fwd(&mut c, 0x17, 7);
    let frame = |mac: u8| {
        let mut f = unhex(&format!("0000000000{mac:02x}000000000010 0800"));
        f.resize(64, 0x5a);
        f
    };
    let (fwd1, to7, miss) = (30u64, 5u64, 7u64);
    for _ in 0..fwd1 {
        sw.send(0, &frame(0x11));
    }
    for _ in 0..to7 {
        sw.send(0, &frame(0x17));
    }
    // no entry: basic_l2's default action drops
    for _ in 0..miss {
        sw.send(0, &frame(0x99));
    }
    let total = fwd1 + to7 + miss;
    // the threads publish once a second
    let start = Instant::now();
    let samples = loop {
        let (head, body) = scrape(metrics, "/metrics");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(head.contains("text/plain; version=0.0.4"), "{head}");
        let s = parse_exposition(&body);
        if sample(&s, "p4jet_port_rx_packets_total{port=\"0\"}") as u64 == total
            && sample(&s, "p4jet_queued_packets") == 0.0
        {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "metrics never showed {total} received:\n{body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(
        sample(&samples, "p4jet_port_tx_packets_total{port=\"1\"}") as u64,
        fwd1
    );
    assert_eq!(
        sample(
            &samples,
            "p4jet_port_dropped_packets_total{port=\"7\",reason=\"no_such_port\"}"
        ) as u64,
        to7
    );
    assert_eq!(
        sample(
            &samples,
            "p4jet_dropped_packets_total{reason=\"ingress_program\"}"
        ) as u64,
        miss
    );
    assert_eq!(sample(&samples, "p4jet_books_balanced"), 1.0);
    // every packet that left the pipeline for a port has a latency (also those for
    // port 7, dropped when sent), and the buckets are cumulative
    assert_eq!(
        sample(&samples, "p4jet_latency_seconds_count") as u64,
        fwd1 + to7
    );
    assert_eq!(
        sample(&samples, "p4jet_latency_seconds_bucket{le=\"+Inf\"}") as u64,
        fwd1 + to7
    );
    let buckets: Vec<f64> = samples
        .iter()
        .filter(|(k, _)| k.starts_with("p4jet_latency_seconds_bucket{"))
        .map(|x| x.1)
        .collect();
    assert!(buckets.len() > 10 && buckets.windows(2).all(|w| w[0] <= w[1]));
    assert!(sample(&samples, "p4jet_latency_seconds_sum") > 0.0);
    // basic_l2's one table: every frame looked up, the ones with an entry hit
    assert_eq!(
        sample(
            &samples,
            "p4jet_table_lookups_total{table=\"IngressImpl.dmac\"}"
        ) as u64,
        total
    );
    assert_eq!(
        sample(
            &samples,
            "p4jet_table_hits_total{table=\"IngressImpl.dmac\"}"
        ) as u64,
        fwd1 + to7
    );
    assert!(
        sample(
            &samples,
            "p4jet_worker_polls_total{thread=\"worker 0\",state=\"busy\"}"
        ) > 0.0
    );
    assert!(scrape(metrics, "/nope").0.starts_with("HTTP/1.1 404"));

    // the same over Thrift (p4jet's service), as JSON
    let j: serde_json::Value = serde_json::from_str(&c.p4jet_packet_books().unwrap()).unwrap();
    let t = &j["total"];
    assert_eq!(t["received"], total);
    assert_eq!(t["sent"], fwd1);
    assert_eq!(t["dropped"], to7 + miss);
    assert_eq!(t["balanced"], true);
    assert_eq!(t["drops"]["no_such_port"], to7);
    assert_eq!(j["threads"][0]["name"], "worker 0");
    assert_eq!(j["latency"]["packets"], fwd1 + to7);
    assert_eq!(j["tables"]["IngressImpl.dmac"]["lookups"], total);
    assert_eq!(j["tables"]["IngressImpl.dmac"]["hits"], fwd1 + to7);
    let p99 = j["latency"]["p99_us"].as_f64().unwrap();
    assert!(p99 > 0.0 && p99 <= j["latency"]["max_us"].as_f64().unwrap());

    assert!(sw.stop().success(), "{}", sw.stderr());
    let err = sw.stderr();
    let line = err
        .lines()
        .find(|l| l.contains("p4jet: packets: "))
        .unwrap_or_else(|| panic!("no books in:\n{err}"));
    assert_eq!(
        line,
        format!(
            "p4jet: packets: received {total} + copies 0 = sent {fwd1} + dropped {} + queued 0",
            to7 + miss
        )
    );
    assert!(
        err.contains(&format!(
            "drops by reason: ingress_program {miss}, no_such_port {to7}"
        )),
        "{err}"
    );
}
