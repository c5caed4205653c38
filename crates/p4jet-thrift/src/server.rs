//! The Thrift server: decodes calls of the `standard`, `simple_pre_lag`,
//! `simple_pre` and `simple_switch` services, runs them on a [`Runtime`] through
//! the service adapter ([`crate::service`]) and encodes the replies.
//!
//! Transport is what bmv2 serves and the Python client uses: a plain TCP
//! byte stream (`TBufferedTransport` only buffers, it adds no framing)
//! carrying binary-protocol messages, one thread per connection.

use std::io::{self, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use p4jet_runtime::Runtime;

use crate::codec::{MethodSpec, Service, method_spec};
use crate::protocol::{
    ApplicationException, DecodeError, Decoder, Limits, MessageType, Struct, app_error,
    encode_message,
};

/// The runtime as shared by the connections.
pub type SharedRuntime = Arc<Mutex<dyn Runtime + Send>>;

/// A shutdown flag shared between a server and whoever stops it.
#[derive(Debug, Clone, Default)]
pub struct Shutdown(Arc<AtomicBool>);

impl Shutdown {
    /// A flag that is not triggered.
    pub fn new() -> Self {
        Shutdown::default()
    }

    /// Asks the server (and its connections) to stop.
    pub fn trigger(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether [`Shutdown::trigger`] was called.
    pub fn is_triggered(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Server tuning.
#[derive(Debug, Clone, Copy)]
pub struct ServerConfig {
    /// Decoding limits for requests.
    pub limits: Limits,
    /// Connections served at once; further ones are accepted and closed.
    pub max_connections: usize,
    /// How often blocked accepts and reads look at the shutdown flag.
    pub poll_interval: Duration,
    /// A connection that stops sending in the middle of a message for this
    /// long is closed. Idle connections between messages are kept.
    pub stall_timeout: Duration,
    /// Replies that cannot be written within this time close the connection.
    pub write_timeout: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            limits: Limits::default(),
            max_connections: 64,
            poll_interval: Duration::from_millis(100),
            stall_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
        }
    }
}

/// Serves the runtime API on `listener` until `shutdown` is triggered, with
/// the default [`ServerConfig`]. Returns after every connection thread has
/// ended.
pub fn serve(listener: TcpListener, api: SharedRuntime, shutdown: Shutdown) -> io::Result<()> {
    serve_with(listener, api, shutdown, ServerConfig::default())
}

/// [`serve`] with an explicit configuration.
pub fn serve_with(
    listener: TcpListener,
    api: SharedRuntime,
    shutdown: Shutdown,
    config: ServerConfig,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let active = Arc::new(AtomicUsize::new(0));
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    while !shutdown.is_triggered() {
        match listener.accept() {
            Ok((stream, _peer)) => {
                workers.retain(|w| !w.is_finished());
                if active.load(Ordering::SeqCst) >= config.max_connections {
                    drop(stream);
                    continue;
                }
                active.fetch_add(1, Ordering::SeqCst);
                let api = Arc::clone(&api);
                let shutdown = shutdown.clone();
                let active2 = Arc::clone(&active);
                let spawned = thread::Builder::new()
                    .name("p4jet-thrift-conn".into())
                    .spawn(move || {
                        // Errors only end this connection.
                        let _ = serve_connection(stream, &api, &shutdown, &config);
                        active2.fetch_sub(1, Ordering::SeqCst);
                    });
                match spawned {
                    Ok(h) => workers.push(h),
                    Err(_) => {
                        active.fetch_sub(1, Ordering::SeqCst);
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                thread::sleep(config.poll_interval.min(Duration::from_millis(20)));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_transient_accept_error(&e) => {
                thread::sleep(config.poll_interval);
            }
            Err(e) => {
                shutdown.trigger();
                join_all(workers);
                return Err(e);
            }
        }
    }
    join_all(workers);
    Ok(())
}

fn is_transient_accept_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::TimedOut
            | io::ErrorKind::OutOfMemory
    ) || matches!(e.raw_os_error(), Some(23 | 24 | 105)) // ENFILE, EMFILE, ENOBUFS
}

fn join_all(workers: Vec<JoinHandle<()>>) {
    for w in workers {
        let _ = w.join();
    }
}

/// A server running on its own thread.
pub struct ServerHandle {
    addr: SocketAddr,
    shutdown: Shutdown,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl ServerHandle {
    /// Starts [`serve_with`] on a new thread.
    pub fn spawn(
        listener: TcpListener,
        api: SharedRuntime,
        config: ServerConfig,
    ) -> io::Result<Self> {
        let addr = listener.local_addr()?;
        let shutdown = Shutdown::new();
        let s2 = shutdown.clone();
        let thread = thread::Builder::new()
            .name("p4jet-thrift".into())
            .spawn(move || serve_with(listener, api, s2, config))?;
        Ok(ServerHandle {
            addr,
            shutdown,
            thread: Some(thread),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's shutdown flag.
    pub fn shutdown_flag(&self) -> Shutdown {
        self.shutdown.clone()
    }

    /// Stops the server and waits for it.
    pub fn stop(mut self) -> io::Result<()> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> io::Result<()> {
        self.shutdown.trigger();
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("server thread panicked"))),
            None => Ok(()),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        let _ = self.stop_inner();
    }
}

/// The socket as seen by the decoder: read timeouts are turned into
/// retries, except when the server shuts down or a message stalls.
struct PatientStream {
    stream: TcpStream,
    shutdown: Shutdown,
    stall_timeout: Duration,
    mid_message: bool,
}

impl Read for PatientStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let start = Instant::now();
        loop {
            match self.stream.read(buf) {
                Ok(n) => return Ok(n),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) =>
                {
                    if self.shutdown.is_triggered() {
                        return Err(io::Error::other("server shutting down"));
                    }
                    if self.mid_message && start.elapsed() >= self.stall_timeout {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "peer stalled in the middle of a message",
                        ));
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}

fn serve_connection(
    stream: TcpStream,
    api: &SharedRuntime,
    shutdown: &Shutdown,
    config: &ServerConfig,
) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(config.poll_interval.max(Duration::from_millis(1))))?;
    stream.set_write_timeout(Some(config.write_timeout))?;
    let mut writer = stream.try_clone()?;
    let reader = BufReader::new(PatientStream {
        stream,
        shutdown: shutdown.clone(),
        stall_timeout: config.stall_timeout,
        mid_message: false,
    });
    let mut dec = Decoder::new(reader, config.limits);
    loop {
        // Between messages the peer may stay idle for as long as it likes.
        let idle = dec.get_ref().buffer().is_empty();
        dec.get_mut().get_mut().mid_message = !idle;
        let header = match dec.read_message_begin() {
            Ok(Some(h)) => h,
            Ok(None) => return Ok(()),
            Err(_) => return Ok(()), // unparseable header: nothing to answer to
        };
        dec.get_mut().get_mut().mid_message = true;
        let args = match dec.read_struct() {
            Ok(a) => a,
            Err(DecodeError::Io(_)) => return Ok(()),
            Err(e) => {
                // The stream cannot be resynchronised: answer, then close.
                let ex = ApplicationException::new(app_error::PROTOCOL_ERROR, e.to_string());
                let (_, method) = split_name(&header.name);
                let _ = writer.write_all(&encode_message(
                    method,
                    MessageType::Exception,
                    header.seqid,
                    &ex.to_struct(),
                ));
                linger_close(&writer, dec.get_mut());
                return Ok(());
            }
        };
        let (_, method) = split_name(&header.name);
        let reply = match header.kind {
            MessageType::Call | MessageType::Oneway => handle_call(api, &header.name, &args),
            _ => Err(ApplicationException::new(
                app_error::INVALID_MESSAGE_TYPE,
                format!("expected a call, got {:?}", header.kind),
            )),
        };
        if header.kind == MessageType::Oneway {
            continue;
        }
        let bytes = match reply {
            Ok(result) => encode_message(method, MessageType::Reply, header.seqid, &result),
            Err(ex) => encode_message(
                method,
                MessageType::Exception,
                header.seqid,
                &ex.to_struct(),
            ),
        };
        writer.write_all(&bytes)?;
        writer.flush()?;
    }
}

/// Closes our side after an error reply, then discards what the peer is
/// still sending for a short, bounded while: closing a socket with unread
/// input makes the kernel send a reset, which can destroy the reply before
/// the peer reads it.
fn linger_close(writer: &TcpStream, reader: &mut BufReader<PatientStream>) {
    let _ = writer.shutdown(std::net::Shutdown::Write);
    let inner = reader.get_mut();
    inner.mid_message = true;
    inner.stall_timeout = Duration::from_millis(500);
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut scratch = [0u8; 16 << 10];
    let mut total = 0usize;
    while Instant::now() < deadline && total < (64 << 20) {
        match reader.read(&mut scratch) {
            Ok(0) | Err(_) => break,
            Ok(n) => total += n,
        }
    }
}

fn split_name(name: &str) -> (Option<&str>, &str) {
    match name.split_once(':') {
        Some((svc, m)) => (Some(svc), m),
        None => (None, name),
    }
}

/// Resolves a (possibly multiplexed) method name against the catalogue. An
/// un-prefixed name is looked up in `standard`, `simple_pre_lag` and
/// `simple_switch`, in that order.
pub fn resolve(name: &str) -> Result<&'static MethodSpec, ApplicationException> {
    let (svc, method) = split_name(name);
    match svc {
        Some(svc) => {
            let service = Service::from_name(svc).ok_or_else(|| {
                ApplicationException::new(
                    app_error::UNKNOWN_METHOD,
                    format!("Unknown service: {svc}"),
                )
            })?;
            method_spec(service, method)
        }
        None => Service::ALL.iter().find_map(|&s| method_spec(s, method)),
    }
    .ok_or_else(|| {
        ApplicationException::new(
            app_error::UNKNOWN_METHOD,
            format!("Invalid method name: '{method}'"),
        )
    })
}

fn handle_call(
    api: &SharedRuntime,
    name: &str,
    args: &Struct,
) -> Result<Struct, ApplicationException> {
    let spec = resolve(name)?;
    let mut guard = match api.lock() {
        Ok(g) => g,
        // A handler panicked earlier; the state is whatever it left, as with
        // an exception in bmv2. Keep serving.
        Err(poisoned) => poisoned.into_inner(),
    };
    let rt: &mut (dyn Runtime + Send) = &mut *guard;
    match catch_unwind(AssertUnwindSafe(|| {
        crate::service::dispatch(rt, spec, args)
    })) {
        Ok(r) => r,
        Err(_) => Err(ApplicationException::new(
            app_error::INTERNAL_ERROR,
            format!("Internal error processing {}", spec.name),
        )),
    }
}
