//! The Thrift server: decodes calls of the `standard`, `simple_pre_lag`,
//! `simple_pre` and `simple_switch` services, runs them on a [`RuntimeApi`]
//! and encodes the replies.
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

use p4jet_control::api::*;

use crate::codec::{self, Fields, MethodSpec, Service, method_spec};
use crate::protocol::{
    ApplicationException, DecodeError, Decoder, Limits, MessageType, Struct, TType, Value,
    app_error, encode_message,
};

/// The runtime API as shared by the connections.
pub type SharedApi = Arc<Mutex<dyn RuntimeApi + Send>>;

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
pub fn serve(listener: TcpListener, api: SharedApi, shutdown: Shutdown) -> io::Result<()> {
    serve_with(listener, api, shutdown, ServerConfig::default())
}

/// [`serve`] with an explicit configuration.
pub fn serve_with(
    listener: TcpListener,
    api: SharedApi,
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
    pub fn spawn(listener: TcpListener, api: SharedApi, config: ServerConfig) -> io::Result<Self> {
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
    api: &SharedApi,
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

fn handle_call(api: &SharedApi, name: &str, args: &Struct) -> Result<Struct, ApplicationException> {
    let spec = resolve(name)?;
    let mut guard = match api.lock() {
        Ok(g) => g,
        // A handler panicked earlier; the state is whatever it left, as with
        // an exception in bmv2. Keep serving.
        Err(poisoned) => poisoned.into_inner(),
    };
    let api: &mut (dyn RuntimeApi + Send) = &mut *guard;
    match catch_unwind(AssertUnwindSafe(|| {
        dispatch(api, spec.service, spec.name, args)
    })) {
        Ok(r) => r,
        Err(_) => Err(ApplicationException::new(
            app_error::INTERNAL_ERROR,
            format!("Internal error processing {}", spec.name),
        )),
    }
}

// ---------------------------------------------------------------------------
// Dispatch

type Reply = Result<Struct, ApplicationException>;

fn exception_reply(code: i32) -> Reply {
    Ok(Struct::new().with(1, Value::Struct(codec::exception_struct(code))))
}

fn internal(msg: String) -> ApplicationException {
    ApplicationException::new(app_error::INTERNAL_ERROR, msg)
}

/// A result struct: success as field 0, the declared exception as field 1.
fn ret<T, E: ThriftException>(r: ApiResult<T, E>, f: impl FnOnce(T) -> Value) -> Reply {
    match r {
        Ok(v) => Ok(Struct::new().with(0, f(v))),
        Err(ApiError::Exception(e)) => exception_reply(e.code_value()),
        Err(ApiError::Internal(msg)) => Err(internal(msg)),
    }
}

fn ret_void<E: ThriftException>(r: ApiResult<(), E>) -> Reply {
    match r {
        Ok(()) => Ok(Struct::new()),
        Err(ApiError::Exception(e)) => exception_reply(e.code_value()),
        Err(ApiError::Internal(msg)) => Err(internal(msg)),
    }
}

/// `cxt_id` (field 1) must be 0: simple_switch has one context. Any other
/// value is treated as an invalid name for the resource concerned.
macro_rules! cxt {
    ($a:expr, $code:expr) => {
        if $a.i32(1) != 0 {
            return exception_reply($code.code());
        }
    };
}

/// Decodes a match key argument; a key that does not fit the IDL is
/// reported as `BAD_MATCH_KEY` (bmv2 would assert).
macro_rules! key {
    ($a:expr, $id:expr) => {
        match codec::match_key_from($a, $id) {
            Ok(k) => k,
            Err(_) => return exception_reply(TableOperationErrorCode::BAD_MATCH_KEY.code()),
        }
    };
}

fn options(a: Fields<'_>, id: i16) -> BmAddEntryOptions {
    codec::add_entry_options_from(a.strukt(id))
}

/// Entries as the stock simple_switch_CLI needs them: it compares
/// `options.priority >= 0`, which fails in Python 3 when the priority is
/// unset, so an unset priority is sent as -1 (what bmv2 sends for exact and
/// LPM entries).
fn entry_for_wire(mut e: BmMtEntry) -> Value {
    if e.options.priority.is_none() {
        e.options.priority = Some(-1);
    }
    Value::Struct(codec::mt_entry(&e))
}

fn structs<T>(items: Vec<T>, f: impl Fn(&T) -> Struct) -> Value {
    codec::struct_list(&items, f)
}

/// Runs one decoded call on `api` and builds its result struct.
pub fn dispatch(
    api: &mut dyn RuntimeApi,
    service: Service,
    method: &str,
    args: &Struct,
) -> Result<Struct, ApplicationException> {
    let a = Fields(args);
    match service {
        Service::Standard => dispatch_standard(api, method, a),
        Service::SimplePreLag | Service::SimplePre => {
            dispatch_pre(api, method, a, service == Service::SimplePreLag)
        }
        Service::SimpleSwitch => dispatch_sswitch(api, method, a),
        Service::P4jet => match method {
            "p4jet_learning_dump" => {
                cxt!(a, LearnOperationErrorCode::INVALID_LIST_ID);
                ret(api.p4jet_learning_dump(&a.string(2), a.i32(3)), |s| {
                    Value::string(&s)
                })
            }
            _ => unknown(method),
        },
    }
}

fn unknown(method: &str) -> Reply {
    Err(ApplicationException::new(
        app_error::UNKNOWN_METHOD,
        format!("Invalid method name: '{method}'"),
    ))
}

#[allow(clippy::too_many_lines)]
fn dispatch_standard(api: &mut dyn RuntimeApi, method: &str, a: Fields<'_>) -> Reply {
    use TableOperationErrorCode as T;
    let table = || a.string(2);
    match method {
        // ------------------------------------------------------- tables
        "bm_mt_get_num_entries" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret(api.bm_mt_get_num_entries(&table()), Value::I64)
        }
        "bm_mt_clear_entries" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(api.bm_mt_clear_entries(&table(), a.bool(3)))
        }
        "bm_mt_add_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            let key = key!(a, 3);
            ret(
                api.bm_mt_add_entry(
                    &table(),
                    &key,
                    &a.string(4),
                    &a.binary_list(5),
                    options(a, 6),
                ),
                Value::I32,
            )
        }
        "bm_mt_set_default_action" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(api.bm_mt_set_default_action(&table(), &a.string(3), &a.binary_list(4)))
        }
        "bm_mt_reset_default_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(api.bm_mt_reset_default_entry(&table()))
        }
        "bm_mt_delete_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(api.bm_mt_delete_entry(&table(), a.i32(3)))
        }
        "bm_mt_modify_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(api.bm_mt_modify_entry(&table(), a.i32(3), &a.string(4), &a.binary_list(5)))
        }
        "bm_mt_set_entry_ttl" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(api.bm_mt_set_entry_ttl(&table(), a.i32(3), a.i32(4)))
        }
        // ---------------------------------------------- action profiles
        "bm_mt_act_prof_add_member" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret(
                api.bm_mt_act_prof_add_member(&a.string(2), &a.string(3), &a.binary_list(4)),
                Value::I32,
            )
        }
        "bm_mt_act_prof_delete_member" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret_void(api.bm_mt_act_prof_delete_member(&a.string(2), a.i32(3)))
        }
        "bm_mt_act_prof_modify_member" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret_void(api.bm_mt_act_prof_modify_member(
                &a.string(2),
                a.i32(3),
                &a.string(4),
                &a.binary_list(5),
            ))
        }
        "bm_mt_act_prof_create_group" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret(api.bm_mt_act_prof_create_group(&a.string(2)), Value::I32)
        }
        "bm_mt_act_prof_delete_group" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret_void(api.bm_mt_act_prof_delete_group(&a.string(2), a.i32(3)))
        }
        "bm_mt_act_prof_add_member_to_group" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret_void(api.bm_mt_act_prof_add_member_to_group(&a.string(2), a.i32(3), a.i32(4)))
        }
        "bm_mt_act_prof_remove_member_from_group" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret_void(api.bm_mt_act_prof_remove_member_from_group(&a.string(2), a.i32(3), a.i32(4)))
        }
        "bm_mt_act_prof_get_members" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret(api.bm_mt_act_prof_get_members(&a.string(2)), |m| {
                structs(m, codec::act_prof_member)
            })
        }
        "bm_mt_act_prof_get_member" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret(api.bm_mt_act_prof_get_member(&a.string(2), a.i32(3)), |m| {
                Value::Struct(codec::act_prof_member(&m))
            })
        }
        "bm_mt_act_prof_get_groups" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret(api.bm_mt_act_prof_get_groups(&a.string(2)), |g| {
                structs(g, codec::act_prof_group)
            })
        }
        "bm_mt_act_prof_get_group" => {
            cxt!(a, T::INVALID_ACTION_PROFILE_NAME);
            ret(api.bm_mt_act_prof_get_group(&a.string(2), a.i32(3)), |g| {
                Value::Struct(codec::act_prof_group(&g))
            })
        }
        // ---------------------------------------------- indirect tables
        "bm_mt_indirect_add_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            let key = key!(a, 3);
            ret(
                api.bm_mt_indirect_add_entry(&table(), &key, a.i32(4), options(a, 5)),
                Value::I32,
            )
        }
        "bm_mt_indirect_modify_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(api.bm_mt_indirect_modify_entry(&table(), a.i32(3), a.i32(4)))
        }
        "bm_mt_indirect_delete_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(api.bm_mt_indirect_delete_entry(&table(), a.i32(3)))
        }
        "bm_mt_indirect_set_entry_ttl" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(api.bm_mt_indirect_set_entry_ttl(&table(), a.i32(3), a.i32(4)))
        }
        "bm_mt_indirect_set_default_member" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(api.bm_mt_indirect_set_default_member(&table(), a.i32(3)))
        }
        "bm_mt_indirect_reset_default_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(api.bm_mt_indirect_reset_default_entry(&table()))
        }
        "bm_mt_indirect_ws_add_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            let key = key!(a, 3);
            ret(
                api.bm_mt_indirect_ws_add_entry(&table(), &key, a.i32(4), options(a, 5)),
                Value::I32,
            )
        }
        "bm_mt_indirect_ws_modify_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(api.bm_mt_indirect_ws_modify_entry(&table(), a.i32(3), a.i32(4)))
        }
        "bm_mt_indirect_ws_set_default_group" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(api.bm_mt_indirect_ws_set_default_group(&table(), a.i32(3)))
        }
        // -------------------------------------- direct counters / meters
        "bm_mt_read_counter" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret(api.bm_mt_read_counter(&table(), a.i32(3)), |c| {
                Value::Struct(codec::counter_value(c))
            })
        }
        "bm_mt_reset_counters" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret_void(api.bm_mt_reset_counters(&table()))
        }
        "bm_mt_write_counter" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            let value = codec::counter_value_from(a.strukt(4));
            ret_void(api.bm_mt_write_counter(&table(), a.i32(3), value))
        }
        "bm_mt_set_meter_rates" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            let rates = codec::meter_rates_from(a, 4);
            ret_void(api.bm_mt_set_meter_rates(&table(), a.i32(3), &rates))
        }
        "bm_mt_get_meter_rates" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret(api.bm_mt_get_meter_rates(&table(), a.i32(3)), |r| {
                codec::meter_rates(&r)
            })
        }
        // ------------------------------------------------ reading entries
        "bm_mt_get_entries" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret(api.bm_mt_get_entries(&table()), |entries| {
                Value::list(
                    TType::Struct,
                    entries.into_iter().map(entry_for_wire).collect(),
                )
            })
        }
        "bm_mt_get_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret(api.bm_mt_get_entry(&table(), a.i32(3)), entry_for_wire)
        }
        "bm_mt_get_default_entry" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            ret(api.bm_mt_get_default_entry(&table()), |e| {
                Value::Struct(codec::action_entry(&e))
            })
        }
        "bm_mt_get_entry_from_key" => {
            cxt!(a, T::INVALID_TABLE_NAME);
            let key = key!(a, 3);
            ret(
                api.bm_mt_get_entry_from_key(&table(), &key, options(a, 4)),
                entry_for_wire,
            )
        }
        // ------------------------------------------------------ counters
        "bm_counter_read" => {
            cxt!(a, CounterOperationErrorCode::INVALID_COUNTER_NAME);
            ret(api.bm_counter_read(&a.string(2), a.i32(3)), |c| {
                Value::Struct(codec::counter_value(c))
            })
        }
        "bm_counter_reset_all" => {
            cxt!(a, CounterOperationErrorCode::INVALID_COUNTER_NAME);
            ret_void(api.bm_counter_reset_all(&a.string(2)))
        }
        "bm_counter_write" => {
            cxt!(a, CounterOperationErrorCode::INVALID_COUNTER_NAME);
            let value = codec::counter_value_from(a.strukt(4));
            ret_void(api.bm_counter_write(&a.string(2), a.i32(3), value))
        }
        // ------------------------------------------------------ learning
        "bm_learning_ack" => {
            cxt!(a, LearnOperationErrorCode::INVALID_LIST_ID);
            ret_void(api.bm_learning_ack(a.i32(2), a.i64(3), &a.i32_list(4)))
        }
        "bm_learning_ack_buffer" => {
            cxt!(a, LearnOperationErrorCode::INVALID_LIST_ID);
            ret_void(api.bm_learning_ack_buffer(a.i32(2), a.i64(3)))
        }
        "bm_learning_set_timeout" => {
            cxt!(a, LearnOperationErrorCode::INVALID_LIST_ID);
            ret_void(api.bm_learning_set_timeout(a.i32(2), a.i32(3)))
        }
        "bm_learning_set_buffer_size" => {
            cxt!(a, LearnOperationErrorCode::INVALID_LIST_ID);
            ret_void(api.bm_learning_set_buffer_size(a.i32(2), a.i32(3)))
        }
        // ---------------------------------------------------------- swap
        "bm_load_new_config" => ret_void(api.bm_load_new_config(&a.string(1))),
        "bm_swap_configs" => ret_void(api.bm_swap_configs()),
        // -------------------------------------------------------- meters
        "bm_meter_array_set_rates" => {
            cxt!(a, MeterOperationErrorCode::INVALID_METER_NAME);
            let rates = codec::meter_rates_from(a, 3);
            ret_void(api.bm_meter_array_set_rates(&a.string(2), &rates))
        }
        "bm_meter_set_rates" => {
            cxt!(a, MeterOperationErrorCode::INVALID_METER_NAME);
            let rates = codec::meter_rates_from(a, 4);
            ret_void(api.bm_meter_set_rates(&a.string(2), a.i32(3), &rates))
        }
        "bm_meter_get_rates" => {
            cxt!(a, MeterOperationErrorCode::INVALID_METER_NAME);
            ret(api.bm_meter_get_rates(&a.string(2), a.i32(3)), |r| {
                codec::meter_rates(&r)
            })
        }
        // ----------------------------------------------------- registers
        "bm_register_read" => {
            cxt!(a, RegisterOperationErrorCode::INVALID_REGISTER_NAME);
            ret(api.bm_register_read(&a.string(2), a.i32(3)), Value::I64)
        }
        "bm_register_read_all" => {
            cxt!(a, RegisterOperationErrorCode::INVALID_REGISTER_NAME);
            ret(api.bm_register_read_all(&a.string(2)), |v| {
                codec::i64_list(&v)
            })
        }
        "bm_register_write" => {
            cxt!(a, RegisterOperationErrorCode::INVALID_REGISTER_NAME);
            ret_void(api.bm_register_write(&a.string(2), a.i32(3), a.i64(4)))
        }
        "bm_register_write_range" => {
            cxt!(a, RegisterOperationErrorCode::INVALID_REGISTER_NAME);
            ret_void(api.bm_register_write_range(&a.string(2), a.i32(3), a.i32(4), a.i64(5)))
        }
        "bm_register_reset" => {
            cxt!(a, RegisterOperationErrorCode::INVALID_REGISTER_NAME);
            ret_void(api.bm_register_reset(&a.string(2)))
        }
        // --------------------------------------------- parser value sets
        "bm_parse_vset_add" => {
            cxt!(a, ParseVSetOperationErrorCode::INVALID_PARSE_VSET_NAME);
            ret_void(api.bm_parse_vset_add(&a.string(2), &a.binary(3)))
        }
        "bm_parse_vset_remove" => {
            cxt!(a, ParseVSetOperationErrorCode::INVALID_PARSE_VSET_NAME);
            ret_void(api.bm_parse_vset_remove(&a.string(2), &a.binary(3)))
        }
        "bm_parse_vset_get" => {
            cxt!(a, ParseVSetOperationErrorCode::INVALID_PARSE_VSET_NAME);
            ret(api.bm_parse_vset_get(&a.string(2)), |v| {
                codec::binary_list(&v)
            })
        }
        "bm_parse_vset_clear" => {
            cxt!(a, ParseVSetOperationErrorCode::INVALID_PARSE_VSET_NAME);
            ret_void(api.bm_parse_vset_clear(&a.string(2)))
        }
        // ------------------------------------------------ device manager
        "bm_dev_mgr_add_port" => {
            ret_void(api.bm_dev_mgr_add_port(&a.string(1), a.i32(2), &a.string(3)))
        }
        "bm_dev_mgr_remove_port" => ret_void(api.bm_dev_mgr_remove_port(a.i32(1))),
        "bm_dev_mgr_show_ports" => ret(api.bm_dev_mgr_show_ports(), |p| {
            structs(p, codec::port_info)
        }),
        // ---------------------------------------------------- management
        "bm_mgmt_get_info" => ret(api.bm_mgmt_get_info(), |c| {
            Value::Struct(codec::bm_config(&c))
        }),
        "bm_set_crc16_custom_parameters" => {
            cxt!(a, CrcErrorCode::INVALID_CALCULATION_NAME);
            let cfg = codec::crc16_config_from(a.strukt(3));
            ret_void(api.bm_set_crc16_custom_parameters(&a.string(2), cfg))
        }
        "bm_set_crc32_custom_parameters" => {
            cxt!(a, CrcErrorCode::INVALID_CALCULATION_NAME);
            let cfg = codec::crc32_config_from(a.strukt(3));
            ret_void(api.bm_set_crc32_custom_parameters(&a.string(2), cfg))
        }
        "bm_set_toeplitz_hash_key" => {
            cxt!(a, ToeplitzHashErrorCode::INVALID_CALCULATION_NAME);
            ret_void(api.bm_set_toeplitz_hash_key(&a.string(2), &a.binary(3)))
        }
        "bm_reset_state" => ret_void(api.bm_reset_state()),
        "bm_get_config" => ret(api.bm_get_config(), |s| Value::string(&s)),
        "bm_get_config_md5" => ret(api.bm_get_config_md5(), Value::Binary),
        "bm_get_id_from_name" => {
            cxt!(a, IdLookupErrorCode::INVALID_RESOURCE_NAME);
            let Some(ty) = BmResourceType::from_code(a.i32(2)) else {
                return exception_reply(IdLookupErrorCode::INVALID_RESOURCE_TYPE.code());
            };
            ret(api.bm_get_id_from_name(ty, &a.string(3)), Value::I32)
        }
        "bm_serialize_state" => ret(api.bm_serialize_state(), |s| Value::string(&s)),
        _ => unknown(method),
    }
}

fn dispatch_pre(api: &mut dyn RuntimeApi, method: &str, a: Fields<'_>, lag: bool) -> Reply {
    cxt!(a, McOperationErrorCode::ERROR);
    // simple_pre has no LAGs: its node calls carry no LAG map.
    let lag_map = |id| if lag { a.string(id) } else { String::new() };
    match method {
        "bm_mc_mgrp_create" => ret(api.bm_mc_mgrp_create(a.i32(2)), Value::I32),
        "bm_mc_mgrp_destroy" => ret_void(api.bm_mc_mgrp_destroy(a.i32(2))),
        "bm_mc_node_create" => ret(
            api.bm_mc_node_create(a.i32(2), &a.string(3), &lag_map(4)),
            Value::I32,
        ),
        "bm_mc_node_associate" => ret_void(api.bm_mc_node_associate(a.i32(2), a.i32(3))),
        "bm_mc_node_dissociate" => ret_void(api.bm_mc_node_dissociate(a.i32(2), a.i32(3))),
        "bm_mc_node_destroy" => ret_void(api.bm_mc_node_destroy(a.i32(2))),
        "bm_mc_node_update" => ret_void(api.bm_mc_node_update(a.i32(2), &a.string(3), &lag_map(4))),
        "bm_mc_set_lag_membership" if lag => {
            ret_void(api.bm_mc_set_lag_membership(a.i16(2), &a.string(3)))
        }
        "bm_mc_get_entries" => ret(api.bm_mc_get_entries(), |s| Value::string(&s)),
        _ => unknown(method),
    }
}

fn dispatch_sswitch(api: &mut dyn RuntimeApi, method: &str, a: Fields<'_>) -> Reply {
    match method {
        "mirroring_mapping_add" => ret(api.mirroring_mapping_add(a.i32(1), a.i32(2)), Value::I32),
        "mirroring_mapping_delete" => ret(api.mirroring_mapping_delete(a.i32(1)), Value::I32),
        "mirroring_mapping_get_egress_port" => {
            ret(api.mirroring_mapping_get_egress_port(a.i32(1)), Value::I32)
        }
        "mirroring_session_add" => {
            let cfg = codec::mirroring_config_from(a.strukt(2));
            ret_void(api.mirroring_session_add(a.i32(1), cfg))
        }
        "mirroring_session_delete" => ret_void(api.mirroring_session_delete(a.i32(1))),
        "mirroring_session_get" => ret(api.mirroring_session_get(a.i32(1)), |c| {
            Value::Struct(codec::mirroring_config(c))
        }),
        "set_egress_priority_queue_depth" => ret(
            api.set_egress_priority_queue_depth(a.i32(1), a.i32(2), a.i32(3)),
            Value::I32,
        ),
        "set_egress_queue_depth" => ret(api.set_egress_queue_depth(a.i32(1), a.i32(2)), Value::I32),
        "set_all_egress_queue_depths" => ret(api.set_all_egress_queue_depths(a.i32(1)), Value::I32),
        "set_egress_priority_queue_rate" => ret(
            api.set_egress_priority_queue_rate(a.i32(1), a.i32(2), a.i64(3)),
            Value::I32,
        ),
        "set_egress_queue_rate" => ret(api.set_egress_queue_rate(a.i32(1), a.i64(2)), Value::I32),
        "set_all_egress_queue_rates" => ret(api.set_all_egress_queue_rates(a.i64(1)), Value::I32),
        "get_time_elapsed_us" => ret(api.get_time_elapsed_us(), Value::I64),
        "get_time_since_epoch_us" => ret(api.get_time_since_epoch_us(), Value::I64),
        _ => unknown(method),
    }
}
