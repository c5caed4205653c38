//! `--metrics-addr`: the packet books in the Prometheus text exposition format
//! (version 0.0.4) on `GET /metrics`, served by a small HTTP/1.1 responder on its own
//! thread (one request per connection, then close).
//!
//! The figures are those the forwarding threads publish on the switch's board a few
//! times a second (see p4jet-switch's `accounting`): per port received, sent and
//! dropped by reason; copies, resubmissions and recirculations; packets still inside;
//! per forwarding thread its packets and busy and idle loop turns.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use p4jet_switch::{Board, DropReason};

/// The running endpoint.
pub(crate) struct Metrics {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// The address it listens on.
    pub addr: std::net::SocketAddr,
}

/// `ADDR` of `--metrics-addr`: `HOST:PORT`, or a bare port on 127.0.0.1.
pub(crate) fn parse_addr(s: &str) -> Result<String, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("--metrics-addr: empty address".into());
    }
    if s.parse::<u16>().is_ok() {
        return Ok(format!("127.0.0.1:{s}"));
    }
    Ok(s.to_string())
}

impl Metrics {
    /// Listens on `addr` and serves the books of `board`.
    pub fn start(addr: &str, board: Arc<Board>) -> Result<Metrics, String> {
        let l = TcpListener::bind(addr).map_err(|e| format!("--metrics-addr {addr}: {e}"))?;
        let local = l
            .local_addr()
            .map_err(|e| format!("--metrics-addr {addr}: {e}"))?;
        l.set_nonblocking(true)
            .map_err(|e| format!("--metrics-addr {addr}: {e}"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                while !st.load(Ordering::Relaxed) {
                    match l.accept() {
                        Ok((c, _)) => {
                            if let Err(e) = serve(c, &board) {
                                eprintln!("p4jet: metrics: {e}");
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        Err(e) => {
                            eprintln!("p4jet: metrics: accept: {e}");
                            std::thread::sleep(Duration::from_millis(100));
                        }
                    }
                }
            })
            .map_err(|e| format!("metrics thread: {e}"))?;
        Ok(Metrics {
            stop,
            thread: Some(thread),
            addr: local,
        })
    }
}

impl Drop for Metrics {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One request: `GET /metrics` gets the text, anything else 404 (or 405 for another
/// method).
fn serve(c: TcpStream, board: &Board) -> std::io::Result<()> {
    c.set_nonblocking(false)?;
    c.set_read_timeout(Some(Duration::from_secs(2)))?;
    c.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut r = BufReader::new(c.try_clone()?);
    let mut line = String::new();
    r.read_line(&mut line)?;
    // the headers, up to the blank line (bounded)
    let mut h = String::new();
    for _ in 0..100 {
        h.clear();
        if r.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    let (status, body, ctype) = match (method, path) {
        ("GET", "/metrics") => (
            "200 OK",
            render(board),
            "text/plain; version=0.0.4; charset=utf-8",
        ),
        ("GET", _) => ("404 Not Found", "not found\n".into(), "text/plain"),
        _ => ("405 Method Not Allowed", "only GET\n".into(), "text/plain"),
    };
    let mut c = c;
    write!(
        c,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    c.flush()
}

/// The exposition text of the board's books.
pub(crate) fn render(board: &Board) -> String {
    let threads = board.snapshot();
    let total = board.total().unwrap_or_default();
    let mut o = String::new();
    let family = |o: &mut String, name: &str, kind: &str, help: &str| {
        let _ = writeln!(o, "# HELP {name} {help}");
        let _ = writeln!(o, "# TYPE {name} {kind}");
    };
    family(
        &mut o,
        "p4jet_port_rx_packets_total",
        "counter",
        "Frames received on the port.",
    );
    for (i, p) in total.ports.iter().enumerate() {
        if p.rx > 0 || p.tx > 0 || p.dropped() > 0 {
            let _ = writeln!(o, "p4jet_port_rx_packets_total{{port=\"{i}\"}} {}", p.rx);
        }
    }
    family(
        &mut o,
        "p4jet_port_tx_packets_total",
        "counter",
        "Frames sent on the port.",
    );
    for (i, p) in total.ports.iter().enumerate() {
        if p.rx > 0 || p.tx > 0 || p.dropped() > 0 {
            let _ = writeln!(o, "p4jet_port_tx_packets_total{{port=\"{i}\"}} {}", p.tx);
        }
    }
    family(
        &mut o,
        "p4jet_port_dropped_packets_total",
        "counter",
        "Packets dropped, by port and reason (the port the packet was on when dropped).",
    );
    for (i, p) in total.ports.iter().enumerate() {
        for r in DropReason::ALL {
            let n = p.drops[r.index()];
            if n > 0 {
                let _ = writeln!(
                    o,
                    "p4jet_port_dropped_packets_total{{port=\"{i}\",reason=\"{}\"}} {n}",
                    r.name()
                );
            }
        }
    }
    family(
        &mut o,
        "p4jet_dropped_packets_total",
        "counter",
        "Packets dropped, by reason, over every port.",
    );
    let d = total.drops();
    for r in DropReason::ALL {
        let _ = writeln!(
            o,
            "p4jet_dropped_packets_total{{reason=\"{}\"}} {}",
            r.name(),
            d[r.index()]
        );
    }
    let a = &total.accounts;
    family(
        &mut o,
        "p4jet_copies_total",
        "counter",
        "Packets made beyond the received ones: clones, and replicas beyond the original.",
    );
    let _ = writeln!(o, "p4jet_copies_total{{kind=\"clone\"}} {}", a.clone_copies);
    let _ = writeln!(
        o,
        "p4jet_copies_total{{kind=\"multicast\"}} {}",
        a.multicast_copies
    );
    family(
        &mut o,
        "p4jet_passes_total",
        "counter",
        "Packets sent back to ingress.",
    );
    let _ = writeln!(
        o,
        "p4jet_passes_total{{kind=\"resubmit\"}} {}",
        a.resubmitted
    );
    let _ = writeln!(
        o,
        "p4jet_passes_total{{kind=\"recirculate\"}} {}",
        a.recirculated
    );
    family(
        &mut o,
        "p4jet_queued_packets",
        "gauge",
        "Packets inside the switch: waiting for ingress, resubmitted or recirculated, queued for egress.",
    );
    let _ = writeln!(o, "p4jet_queued_packets {}", total.queued);
    family(
        &mut o,
        "p4jet_books_balanced",
        "gauge",
        "1 when received + copies = sent + dropped + queued over the published books.",
    );
    let _ = writeln!(o, "p4jet_books_balanced {}", u8::from(total.holds()));
    family(
        &mut o,
        "p4jet_worker_packets_total",
        "counter",
        "Packets a forwarding thread received (rx) and sent (tx).",
    );
    for t in &threads {
        let n = esc(&t.name);
        let _ = writeln!(
            o,
            "p4jet_worker_packets_total{{thread=\"{n}\",direction=\"rx\"}} {}",
            t.balance.received()
        );
        let _ = writeln!(
            o,
            "p4jet_worker_packets_total{{thread=\"{n}\",direction=\"tx\"}} {}",
            t.balance.sent()
        );
    }
    family(
        &mut o,
        "p4jet_worker_polls_total",
        "counter",
        "Loop turns of a forwarding thread that found packets (busy) or none (idle).",
    );
    for t in &threads {
        let n = esc(&t.name);
        let _ = writeln!(
            o,
            "p4jet_worker_polls_total{{thread=\"{n}\",state=\"busy\"}} {}",
            t.busy_polls
        );
        let _ = writeln!(
            o,
            "p4jet_worker_polls_total{{thread=\"{n}\",state=\"idle\"}} {}",
            t.idle_polls
        );
    }
    let tables = board.tables();
    // (family, help, whether it counts hits or all lookups)
    let per_table = [
        (
            "p4jet_table_lookups_total",
            "Applies of the table to a packet since the program was loaded.",
            false,
        ),
        (
            "p4jet_table_hits_total",
            "Applies of the table that found an entry.",
            true,
        ),
    ];
    for (name, help, hits) in per_table {
        family(&mut o, name, "counter", help);
        for (table, s) in &tables {
            let v = if hits { s.hits } else { s.lookups };
            let _ = writeln!(o, "{name}{{table=\"{}\"}} {v}", esc(table));
        }
    }
    family(
        &mut o,
        "p4jet_latency_seconds",
        "histogram",
        "Packet latency from injection into the pipeline to transmission, since the start.",
    );
    let h = board.latency();
    for le in LATENCY_BOUNDS_NS {
        let _ = writeln!(
            o,
            "p4jet_latency_seconds_bucket{{le=\"{}\"}} {}",
            *le as f64 / 1e9,
            h.count_le(*le)
        );
    }
    let _ = writeln!(
        o,
        "p4jet_latency_seconds_bucket{{le=\"+Inf\"}} {}",
        h.count()
    );
    let _ = writeln!(o, "p4jet_latency_seconds_sum {}", h.sum_ns() as f64 / 1e9);
    let _ = writeln!(o, "p4jet_latency_seconds_count {}", h.count());
    o
}

/// Upper bounds of the latency histogram's buckets (ns): 1-2-5 steps from 1 µs to 1 s.
const LATENCY_BOUNDS_NS: &[u64] = &[
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
];

/// A label value escaped as the format says (backslash, quote, newline).
fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use p4jet_switch::{Balance, PortCounters, ThreadBooks};

    #[test]
    fn text_has_a_sample_per_port_reason_and_thread() {
        let b = Board::default();
        let mut bal = Balance::default();
        bal.ports.resize(3, PortCounters::default());
        bal.ports[1].rx = 5;
        bal.ports[2].tx = 3;
        bal.ports[2].drops[DropReason::QueueFull.index()] = 2;
        b.publish(
            0,
            ThreadBooks {
                name: "worker 0".into(),
                balance: bal,
                busy_polls: 4,
                idle_polls: 9,
                latency: {
                    let mut h = p4jet_switch::LatencyHist::default();
                    h.record_n(3_000, 2);
                    h.record(40_000_000);
                    h
                },
                tables: vec![(
                    "ingress.acl".into(),
                    p4jet_engine::TableStats {
                        lookups: 7,
                        hits: 3,
                    },
                )],
            },
        );
        let t = render(&b);
        assert!(
            t.contains("p4jet_port_rx_packets_total{port=\"1\"} 5\n"),
            "{t}"
        );
        assert!(
            t.contains("p4jet_port_dropped_packets_total{port=\"2\",reason=\"queue_full\"} 2\n")
        );
        assert!(t.contains("p4jet_dropped_packets_total{reason=\"queue_full\"} 2\n"));
        assert!(t.contains("p4jet_worker_polls_total{thread=\"worker 0\",state=\"idle\"} 9\n"));
        assert!(t.contains("p4jet_books_balanced 1\n"));
        assert!(
            t.contains("# TYPE p4jet_latency_seconds histogram\n"),
            "{t}"
        );
        assert!(
            t.contains("p4jet_latency_seconds_bucket{le=\"0.000002\"} 0\n"),
            "{t}"
        );
        assert!(
            t.contains("p4jet_latency_seconds_bucket{le=\"0.000005\"} 2\n"),
            "{t}"
        );
        assert!(
            t.contains("p4jet_latency_seconds_bucket{le=\"0.05\"} 3\n"),
            "{t}"
        );
        assert!(
            t.contains("p4jet_latency_seconds_bucket{le=\"+Inf\"} 3\n"),
            "{t}"
        );
        assert!(t.contains("p4jet_latency_seconds_count 3\n"), "{t}");
        assert!(t.contains("p4jet_table_lookups_total{table=\"ingress.acl\"} 7\n"));
        assert!(t.contains("p4jet_table_hits_total{table=\"ingress.acl\"} 3\n"));
        assert!(t.contains("p4jet_latency_seconds_sum 0.040006\n"), "{t}");
        assert!(
            !t.contains("port=\"0\""),
            "ports without traffic are left out"
        );
        assert_eq!(parse_addr("9200").unwrap(), "127.0.0.1:9200");
        assert_eq!(parse_addr("0.0.0.0:9200").unwrap(), "0.0.0.0:9200");
    }
}
