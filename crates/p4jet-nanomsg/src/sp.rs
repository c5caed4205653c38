//! The nanomsg scalability protocols (SP) wire format, as far as a PUB socket and its
//! SUB peers need it, over the `ipc://` (Unix domain stream socket) and `tcp://`
//! transports.
//!
//! Each side of a new connection first sends an 8-byte header: `0x00 'S' 'P' 0x00`, its
//! protocol id (16 bits, big-endian: PUB 32, SUB 33) and two reserved zero bytes, and
//! checks that the peer's protocol is the one it pairs with. Messages follow, each
//! framed by the transport: on `tcp://` a 64-bit big-endian length then the body; on
//! `ipc://` a one-byte message type (1, a normal message) before that length. In
//! nanomsg's PUB/SUB the subscriber filters topics itself: the publisher sends every
//! message to every subscriber and nothing flows back. A publisher never waits for a
//! slow subscriber: a message that does not fit in a subscriber's queue is dropped
//! for that subscriber, as nanomsg drops it.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Protocol id of PUB sockets.
pub const PROTO_PUB: u16 = 32;
/// Protocol id of SUB sockets.
pub const PROTO_SUB: u16 = 33;
/// Message type byte of the ipc transport for a normal message.
const IPC_MSG_NORMAL: u8 = 1;
/// Messages queued per subscriber before the publisher drops for it.
const QUEUE: usize = 4096;
/// Largest message a subscriber accepts (bmv2's notifications are small).
const MAX_MESSAGE: u64 = 64 << 20;

/// The 8-byte SP header for protocol `proto`.
pub fn header(proto: u16) -> [u8; 8] {
    let p = proto.to_be_bytes();
    [0, b'S', b'P', 0, p[0], p[1], 0, 0]
}

/// Checks a peer's header; returns its protocol id.
pub fn parse_header(h: &[u8; 8]) -> io::Result<u16> {
    if h[..4] != [0, b'S', b'P', 0] || h[6..] != [0, 0] {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not an SP header: {h:02x?}"),
        ));
    }
    Ok(u16::from_be_bytes([h[4], h[5]]))
}

/// A nanomsg address: `ipc://PATH` or `tcp://HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// A Unix domain socket at this path.
    Ipc(PathBuf),
    /// A TCP address.
    Tcp(String),
}

impl Address {
    /// Parses `ipc://PATH` (`ipc:///tmp/x.ipc` is the absolute path `/tmp/x.ipc`) or
    /// `tcp://HOST:PORT` (`*` as host means every interface).
    pub fn parse(s: &str) -> Result<Address, String> {
        if let Some(p) = s.strip_prefix("ipc://") {
            if p.is_empty() {
                return Err(format!("{s}: empty ipc path"));
            }
            Ok(Address::Ipc(PathBuf::from(p)))
        } else if let Some(a) = s.strip_prefix("tcp://") {
            let a = a.strip_prefix("*:").map(|p| format!("0.0.0.0:{p}"));
            let a = a.unwrap_or_else(|| s["tcp://".len()..].to_string());
            if !a.contains(':') {
                return Err(format!("{s}: tcp address without a port"));
            }
            Ok(Address::Tcp(a))
        } else {
            Err(format!(
                "{s}: unsupported nanomsg address (ipc://PATH or tcp://HOST:PORT)"
            ))
        }
    }

    fn framing(&self) -> Framing {
        match self {
            Address::Ipc(_) => Framing::Ipc,
            Address::Tcp(_) => Framing::Tcp,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Ipc,
    Tcp,
}

/// A connection of either transport.
enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }

    fn set_timeouts(&self, read: Option<Duration>, write: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => {
                s.set_read_timeout(read)?;
                s.set_write_timeout(write)
            }
            Stream::Tcp(s) => {
                s.set_read_timeout(read)?;
                s.set_write_timeout(write)
            }
        }
    }

    fn shutdown(&self) {
        let _ = match self {
            Stream::Unix(s) => s.shutdown(std::net::Shutdown::Both),
            Stream::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
        };
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
        }
    }
}

/// Writes one framed message.
fn write_frame(w: &mut impl Write, framing: Framing, msg: &[u8]) -> io::Result<()> {
    let mut head = Vec::with_capacity(9);
    if framing == Framing::Ipc {
        head.push(IPC_MSG_NORMAL);
    }
    head.extend_from_slice(&(msg.len() as u64).to_be_bytes());
    w.write_all(&head)?;
    w.write_all(msg)?;
    w.flush()
}

/// Reads one framed message (None at end of stream).
fn read_frame(r: &mut impl Read, framing: Framing) -> io::Result<Option<Vec<u8>>> {
    let mut first = [0u8; 1];
    // a signal delivered to the thread while it waits (EINTR) is not an error: wait on
    // (read_exact does the same for the rest of the frame)
    let got = loop {
        match r.read(&mut first) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => break other?,
        }
    };
    if got == 0 {
        return Ok(None);
    }
    let mut len = [0u8; 8];
    if framing == Framing::Ipc {
        if first[0] != IPC_MSG_NORMAL {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("unknown ipc message type {}", first[0]),
            ));
        }
        r.read_exact(&mut len)?;
    } else {
        len[0] = first[0];
        r.read_exact(&mut len[1..])?;
    }
    let n = u64::from_be_bytes(len);
    if n > MAX_MESSAGE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("message of {n} bytes"),
        ));
    }
    let mut body = vec![0u8; n as usize];
    r.read_exact(&mut body)?;
    Ok(Some(body))
}

/// One connected subscriber: a bounded queue drained by its writer thread.
struct Peer {
    tx: SyncSender<Arc<Vec<u8>>>,
    alive: Arc<AtomicBool>,
}

/// A bound PUB socket.
pub struct Publisher {
    address: Address,
    peers: Arc<Mutex<Vec<Peer>>>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
    dropped: Arc<std::sync::atomic::AtomicU64>,
}

enum Listener {
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
}

impl Listener {
    fn accept(&self) -> io::Result<Stream> {
        match self {
            Listener::Unix(l, _) => l.accept().map(|(s, _)| Stream::Unix(s)),
            Listener::Tcp(l) => l.accept().map(|(s, _)| Stream::Tcp(s)),
        }
    }
}

/// Binds a Unix socket at `path`, replacing a stale socket file nobody listens on
/// (as nanomsg does); a live one is an error.
fn bind_unix(path: &Path) -> io::Result<UnixListener> {
    match UnixListener::bind(path) {
        Ok(l) => Ok(l),
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
            if UnixStream::connect(path).is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!("{}: another process listens there", path.display()),
                ));
            }
            std::fs::remove_file(path)?;
            UnixListener::bind(path)
        }
        Err(e) => Err(e),
    }
}

impl Publisher {
    /// Binds a PUB socket to `addr` (`ipc://PATH` or `tcp://HOST:PORT`) and accepts
    /// subscribers in a background thread.
    pub fn bind(addr: &str) -> Result<Publisher, String> {
        let address = Address::parse(addr)?;
        let listener = match &address {
            Address::Ipc(p) => {
                Listener::Unix(bind_unix(p).map_err(|e| format!("{addr}: {e}"))?, p.clone())
            }
            Address::Tcp(a) => {
                let sa = a
                    .to_socket_addrs()
                    .map_err(|e| format!("{addr}: {e}"))?
                    .next()
                    .ok_or_else(|| format!("{addr}: no address"))?;
                Listener::Tcp(TcpListener::bind(sa).map_err(|e| format!("{addr}: {e}"))?)
            }
        };
        match &listener {
            Listener::Unix(l, _) => l.set_nonblocking(true),
            Listener::Tcp(l) => l.set_nonblocking(true),
        }
        .map_err(|e| format!("{addr}: {e}"))?;
        let peers: Arc<Mutex<Vec<Peer>>> = Arc::new(Mutex::new(vec![]));
        let stop = Arc::new(AtomicBool::new(false));
        let framing = address.framing();
        let (p2, s2) = (peers.clone(), stop.clone());
        let accept = std::thread::Builder::new()
            .name("nanomsg-pub".into())
            .spawn(move || accept_loop(listener, framing, p2, s2))
            .map_err(|e| format!("{addr}: {e}"))?;
        Ok(Publisher {
            address,
            peers,
            stop,
            accept: Some(accept),
            dropped: Arc::new(std::sync::atomic::AtomicU64::new(0)),
        })
    }

    /// The bound address.
    pub fn address(&self) -> &Address {
        &self.address
    }

    /// Subscribers connected now.
    pub fn subscribers(&self) -> usize {
        self.peers
            .lock()
            .map(|p| p.iter().filter(|x| x.alive.load(Ordering::Relaxed)).count())
            .unwrap_or(0)
    }

    /// Messages dropped for slow subscribers so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Sends `msg` to every subscriber without waiting (dropped for a subscriber
    /// whose queue is full; nobody connected, nobody gets it).
    pub fn send(&self, msg: &[u8]) {
        let Ok(mut peers) = self.peers.lock() else {
            return;
        };
        peers.retain(|p| p.alive.load(Ordering::Relaxed));
        if peers.is_empty() {
            return;
        }
        let m = Arc::new(msg.to_vec());
        for p in peers.iter() {
            match p.tx.try_send(m.clone()) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                }
                Err(TrySendError::Disconnected(_)) => p.alive.store(false, Ordering::Relaxed),
            }
        }
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Ok(mut p) = self.peers.lock() {
            p.clear(); // writer threads end when their queue closes
        }
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
        if let Address::Ipc(p) = &self.address {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn accept_loop(
    listener: Listener,
    framing: Framing,
    peers: Arc<Mutex<Vec<Peer>>>,
    stop: Arc<AtomicBool>,
) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok(s) => {
                let peers = peers.clone();
                // the handshake must not hold up other subscribers
                let _ = std::thread::Builder::new()
                    .name("nanomsg-peer".into())
                    .spawn(move || {
                        if let Some(p) = handshake(s, framing)
                            && let Ok(mut v) = peers.lock()
                        {
                            v.push(p);
                        }
                    });
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    if let Listener::Unix(_, p) = &listener {
        let _ = std::fs::remove_file(p);
    }
}

/// Exchanges headers with a new peer; a SUB peer gets a writer thread.
fn handshake(s: Stream, framing: Framing) -> Option<Peer> {
    let mut s = s;
    if let Stream::Unix(u) = &s {
        u.set_nonblocking(false).ok()?;
    }
    if let Stream::Tcp(t) = &s {
        t.set_nonblocking(false).ok()?;
        let _ = t.set_nodelay(true);
    }
    s.set_timeouts(Some(Duration::from_secs(5)), Some(Duration::from_secs(5)))
        .ok()?;
    s.write_all(&header(PROTO_PUB)).ok()?;
    let mut h = [0u8; 8];
    s.read_exact(&mut h).ok()?;
    if parse_header(&h).ok()? != PROTO_SUB {
        s.shutdown();
        return None;
    }
    let (tx, rx) = sync_channel::<Arc<Vec<u8>>>(QUEUE);
    let alive = Arc::new(AtomicBool::new(true));
    let mut reader = s.try_clone().ok()?;
    let a2 = alive.clone();
    // a subscriber sends nothing after its header: read (and drop) until it closes
    std::thread::Builder::new()
        .name("nanomsg-peer-rx".into())
        .spawn(move || {
            let _ = reader.set_timeouts(None, None);
            let mut buf = [0u8; 256];
            while matches!(reader.read(&mut buf), Ok(n) if n > 0) {}
            a2.store(false, Ordering::Relaxed);
            reader.shutdown();
        })
        .ok()?;
    let a3 = alive.clone();
    std::thread::Builder::new()
        .name("nanomsg-peer-tx".into())
        .spawn(move || writer(s, framing, rx, a3))
        .ok()?;
    Some(Peer { tx, alive })
}

fn writer(mut s: Stream, framing: Framing, rx: Receiver<Arc<Vec<u8>>>, alive: Arc<AtomicBool>) {
    let _ = s.set_timeouts(None, Some(Duration::from_secs(10)));
    for m in rx {
        if !alive.load(Ordering::Relaxed) || write_frame(&mut s, framing, &m).is_err() {
            break;
        }
    }
    alive.store(false, Ordering::Relaxed);
    s.shutdown();
}

/// A SUB socket connected to one publisher (every message; nanomsg subscribers filter
/// topics themselves).
pub struct Subscriber {
    stream: Stream,
    framing: Framing,
}

impl Subscriber {
    /// Connects to `addr` and exchanges headers.
    pub fn connect(addr: &str) -> Result<Subscriber, String> {
        let address = Address::parse(addr)?;
        let mut stream = match &address {
            Address::Ipc(p) => {
                Stream::Unix(UnixStream::connect(p).map_err(|e| format!("{addr}: {e}"))?)
            }
            Address::Tcp(a) => {
                Stream::Tcp(TcpStream::connect(a.as_str()).map_err(|e| format!("{addr}: {e}"))?)
            }
        };
        stream
            .set_timeouts(Some(Duration::from_secs(5)), Some(Duration::from_secs(5)))
            .map_err(|e| e.to_string())?;
        stream
            .write_all(&header(PROTO_SUB))
            .map_err(|e| format!("{addr}: {e}"))?;
        let mut h = [0u8; 8];
        stream
            .read_exact(&mut h)
            .map_err(|e| format!("{addr}: no SP header: {e}"))?;
        let proto = parse_header(&h).map_err(|e| format!("{addr}: {e}"))?;
        if proto != PROTO_PUB {
            return Err(format!("{addr}: the peer speaks protocol {proto}, not PUB"));
        }
        Ok(Subscriber {
            stream,
            framing: address.framing(),
        })
    }

    /// The next message, waiting at most `timeout` (None: it did not come).
    pub fn recv(&mut self, timeout: Duration) -> Result<Option<Vec<u8>>, String> {
        self.stream
            .set_timeouts(Some(timeout.max(Duration::from_millis(1))), None)
            .map_err(|e| e.to_string())?;
        match read_frame(&mut self.stream, self.framing) {
            Ok(Some(m)) => Ok(Some(m)),
            Ok(None) => Err("the publisher closed the connection".into()),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_and_addresses() {
        assert_eq!(header(PROTO_PUB), [0, b'S', b'P', 0, 0, 32, 0, 0]);
        assert_eq!(parse_header(&header(PROTO_SUB)).unwrap(), 33);
        assert!(parse_header(&[0, b'S', b'P', 1, 0, 32, 0, 0]).is_err());
        assert_eq!(
            Address::parse("ipc:///tmp/bmv2-0-notifications.ipc").unwrap(),
            Address::Ipc(PathBuf::from("/tmp/bmv2-0-notifications.ipc"))
        );
        assert_eq!(
            Address::parse("tcp://*:5555").unwrap(),
            Address::Tcp("0.0.0.0:5555".into())
        );
        assert!(Address::parse("inproc://x").is_err());
    }

    #[test]
    fn frames_round_trip() {
        for framing in [Framing::Ipc, Framing::Tcp] {
            let mut b = vec![];
            write_frame(&mut b, framing, b"LEA|abc").unwrap();
            write_frame(&mut b, framing, b"").unwrap();
            let mut r = &b[..];
            assert_eq!(read_frame(&mut r, framing).unwrap().unwrap(), b"LEA|abc");
            assert_eq!(read_frame(&mut r, framing).unwrap().unwrap(), b"");
            assert_eq!(read_frame(&mut r, framing).unwrap(), None);
        }
    }
}
