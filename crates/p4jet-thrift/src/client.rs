//! A Thrift client of bmv2's services over TCP, speaking to any bmv2-compatible
//! switch (p4jet or bmv2 `simple_switch` itself) the way the Python
//! `simple_switch_CLI` does: binary protocol, multiplexed service names, no
//! framing.
//!
//! [`ThriftClient`] has one method per RPC, named like the RPC, with the IDL's types
//! (the same as [`crate::service::Bmv2`]'s), and implements the runtime model
//! ([`p4jet_runtime::Runtime`], in [`crate::remote`]) on top of them.
//!
//! A declared exception is returned as a [`RuntimeError`] carrying its bmv2 code.
//! Transport failures, malformed replies and `TApplicationException`s are
//! [`p4jet_runtime::ErrorKind::Internal`] errors without code. After such a failure
//! the connection is dropped (its byte stream may be out of step) and the next call
//! opens a new one; the failed call itself is never retried.

use std::io::{self, BufReader, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use p4jet_runtime::RuntimeError;

use crate::service::Rpc;
use crate::types::*;

use crate::codec::{self, Fields, Service};
use crate::protocol::{
    ApplicationException, Decoder, Limits, MessageType, Struct, TType, Value, encode_message,
};

/// Which packet replication engine service the client talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PreService {
    /// `simple_pre_lag` (what simple_switch serves and its CLI uses).
    #[default]
    SimplePreLag,
    /// `simple_pre` (no LAGs: LAG maps must be empty).
    SimplePre,
}

struct Conn {
    writer: TcpStream,
    dec: Decoder<BufReader<TcpStream>>,
}

/// A runtime API client over a TCP connection.
pub struct ThriftClient {
    addr: SocketAddr,
    conn: Option<Conn>,
    seqid: i32,
    limits: Limits,
    timeout: Option<Duration>,
    pre: PreService,
    /// The model of the switch's program (for the [`p4jet_runtime::Runtime`] operations).
    pub(crate) schema: Option<std::sync::Arc<p4jet_runtime::Schema>>,
    /// Digest configurations set through this client (bmv2 has no getter).
    pub(crate) digest_configs:
        std::collections::HashMap<p4jet_runtime::DigestId, p4jet_runtime::DigestConfig>,
}

impl std::fmt::Debug for ThriftClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThriftClient")
            .field("addr", &self.addr)
            .field("connected", &self.conn.is_some())
            .field("pre", &self.pre)
            .finish()
    }
}

type Res<T> = Result<T, String>;

impl ThriftClient {
    /// Connects to a switch's Thrift port (the first address that accepts).
    pub fn connect(addr: impl ToSocketAddrs) -> io::Result<Self> {
        let mut last = None;
        for a in addr.to_socket_addrs()? {
            let mut c = ThriftClient {
                addr: a,
                conn: None,
                seqid: 0,
                limits: Limits::default(),
                timeout: None,
                pre: PreService::default(),
                schema: None,
                digest_configs: Default::default(),
            };
            match c.open() {
                Ok(()) => return Ok(c),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "no address to connect to")
        }))
    }

    /// The switch's address.
    pub fn peer_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Gives up on a reply after this long (`None`: wait forever, the
    /// default; a config swap or a large dump can take a while).
    pub fn set_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.timeout = timeout;
        if let Some(c) = &self.conn {
            c.writer.set_read_timeout(timeout)?;
            c.writer.set_write_timeout(timeout)?;
        }
        Ok(())
    }

    /// Decoding limits for replies.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
        self.conn = None;
    }

    /// Selects the PRE service (default `simple_pre_lag`).
    pub fn set_pre_service(&mut self, pre: PreService) {
        self.pre = pre;
    }

    fn open(&mut self) -> io::Result<()> {
        let stream = match self.timeout {
            Some(t) => TcpStream::connect_timeout(&self.addr, t)?,
            None => TcpStream::connect(self.addr)?,
        };
        stream.set_nodelay(true)?;
        stream.set_read_timeout(self.timeout)?;
        stream.set_write_timeout(self.timeout)?;
        let reader = BufReader::new(stream.try_clone()?);
        self.conn = Some(Conn {
            writer: stream,
            dec: Decoder::new(reader, self.limits),
        });
        Ok(())
    }

    /// Sends one call and returns the result struct of its reply.
    fn call(&mut self, service: Service, method: &str, args: Struct) -> Res<Struct> {
        let r = self.call_inner(service, method, &args);
        if let Err(CallError::Transport(_)) = &r {
            self.conn = None;
        }
        r.map_err(|e| match e {
            CallError::Transport(m) => format!("{}:{method}: {m}", service.name()),
            CallError::App(ex) => format!("{}:{method}: {ex}", service.name()),
        })
    }

    fn call_inner(
        &mut self,
        service: Service,
        method: &str,
        args: &Struct,
    ) -> Result<Struct, CallError> {
        if self.conn.is_none() {
            self.open().map_err(|e| {
                CallError::Transport(format!("cannot connect to {}: {e}", self.addr))
            })?;
        }
        self.seqid = self.seqid.wrapping_add(1);
        let seqid = self.seqid;
        let name = format!("{}:{method}", service.name());
        let bytes = encode_message(&name, MessageType::Call, seqid, args);
        let Some(conn) = self.conn.as_mut() else {
            return Err(CallError::Transport("not connected".into()));
        };
        conn.writer
            .write_all(&bytes)
            .and_then(|()| conn.writer.flush())
            .map_err(|e| CallError::Transport(format!("send failed: {e}")))?;
        let header = conn
            .dec
            .read_message_begin()
            .map_err(|e| CallError::Transport(format!("bad reply: {e}")))?
            .ok_or_else(|| CallError::Transport("connection closed by the switch".into()))?;
        let body = conn
            .dec
            .read_struct()
            .map_err(|e| CallError::Transport(format!("bad reply: {e}")))?;
        if header.seqid != seqid {
            return Err(CallError::Transport(format!(
                "reply has sequence id {}, expected {seqid}",
                header.seqid
            )));
        }
        // Servers answer with the bare method name (bmv2, via the
        // multiplexed processor); accept the prefixed form too.
        if header.name != method && header.name != name {
            return Err(CallError::Transport(format!(
                "reply is for method '{}'",
                header.name
            )));
        }
        match header.kind {
            MessageType::Reply => Ok(body),
            MessageType::Exception => Err(CallError::App(ApplicationException::from_struct(&body))),
            k => Err(CallError::Transport(format!(
                "unexpected message type {k:?}"
            ))),
        }
    }
}

enum CallError {
    Transport(String),
    App(ApplicationException),
}

// ---------------------------------------------------------------------------
// Result decoding

/// The declared exception (field 1), if the reply carries one.
fn exception(service: Service, res: &Struct, method: &str) -> Option<RuntimeError> {
    let exc = res.get(1)?;
    let code = exc
        .as_struct()
        .and_then(|s| s.get(1))
        .and_then(Value::as_i32);
    let declared = codec::method_spec(service, method).and_then(|m| m.exception);
    Some(
        match code
            .zip(declared)
            .and_then(|(c, e)| crate::service::code_of(e, c))
        {
            Some(c) => c.error(format!("{method}: {c}")),
            None => RuntimeError::internal(format!(
                "{method}: reply carries an exception with unknown code {code:?}"
            )),
        },
    )
}

fn decode<T>(
    service: Service,
    r: Res<Struct>,
    method: &str,
    f: impl FnOnce(&Value) -> Option<T>,
) -> Rpc<T> {
    let res = r.map_err(RuntimeError::internal)?;
    if let Some(e) = exception(service, &res, method) {
        return Err(e);
    }
    match res.get(0) {
        Some(v) => f(v).ok_or_else(|| {
            RuntimeError::internal(format!("{method}: reply has a result of the wrong type"))
        }),
        None => Err(RuntimeError::internal(format!(
            "{method}: MISSING_RESULT (reply has neither result nor exception)"
        ))),
    }
}

fn decode_void(service: Service, r: Res<Struct>, method: &str) -> Rpc<()> {
    let res = r.map_err(RuntimeError::internal)?;
    match exception(service, &res, method) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn as_struct<T>(f: impl FnOnce(Fields<'_>) -> T) -> impl FnOnce(&Value) -> Option<T> {
    move |v| v.as_struct().map(|s| f(Fields(s)))
}

fn as_struct_list<T>(f: impl Fn(Fields<'_>) -> Option<T>) -> impl FnOnce(&Value) -> Option<Vec<T>> {
    move |v| {
        v.as_list_of(TType::Struct)?
            .iter()
            .map(|i| i.as_struct().and_then(|s| f(Fields(s))))
            .collect()
    }
}

fn entry(f: Fields<'_>) -> Option<BmMtEntry> {
    codec::mt_entry_from(f).ok()
}

// ---------------------------------------------------------------------------
// Argument building

const CXT: Value = Value::I32(0);

fn args() -> Struct {
    Struct::new()
}

/// Arguments starting with `1: cxt_id = 0, 2: name`.
fn named(name: &str) -> Struct {
    args().with(1, CXT).with(2, Value::string(name))
}

fn opts(o: BmAddEntryOptions) -> Value {
    Value::Struct(codec::add_entry_options(o))
}

const STD: Service = Service::Standard;
const SSW: Service = Service::SimpleSwitch;

macro_rules! void_call {
    ($self:ident, $svc:expr, $m:literal, $args:expr) => {{
        let svc = $svc;
        decode_void(svc, $self.call(svc, $m, $args), $m)
    }};
}

macro_rules! value_call {
    ($self:ident, $svc:expr, $m:literal, $args:expr, $f:expr) => {{
        let svc = $svc;
        decode(svc, $self.call(svc, $m, $args), $m, $f)
    }};
}

impl ThriftClient {
    fn pre_service(&self) -> Service {
        match self.pre {
            PreService::SimplePreLag => Service::SimplePreLag,
            PreService::SimplePre => Service::SimplePre,
        }
    }

    /// Node maps for the configured PRE service.
    fn node_args(&self, first: (i16, Value), port_map: &str, lag_map: &str) -> Res<Struct> {
        let s = args()
            .with(1, CXT)
            .with(first.0, first.1)
            .with(3, Value::string(port_map));
        match self.pre {
            PreService::SimplePreLag => Ok(s.with(4, Value::string(lag_map))),
            PreService::SimplePre if lag_map.chars().all(|c| c == '0') => Ok(s),
            PreService::SimplePre => {
                Err("simple_pre has no LAGs: the LAG map must be empty".into())
            }
        }
    }
}

/// One method per RPC (see [`crate::service::Bmv2`] for what each does).
#[allow(clippy::too_many_lines, missing_docs)]
impl ThriftClient {
    pub fn bm_mt_get_num_entries(&mut self, table_name: &str) -> Rpc<i64> {
        value_call!(
            self,
            STD,
            "bm_mt_get_num_entries",
            named(table_name),
            Value::as_i64
        )
    }

    pub fn bm_mt_clear_entries(&mut self, table_name: &str, reset_default_entry: bool) -> Rpc<()> {
        let a = named(table_name).with(3, Value::Bool(reset_default_entry));
        void_call!(self, STD, "bm_mt_clear_entries", a)
    }

    pub fn bm_mt_add_entry(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        action_name: &str,
        action_data: &[Vec<u8>],
        options: BmAddEntryOptions,
    ) -> Rpc<BmEntryHandle> {
        let a = named(table_name)
            .with(3, codec::match_key(match_key))
            .with(4, Value::string(action_name))
            .with(5, codec::binary_list(action_data))
            .with(6, opts(options));
        value_call!(self, STD, "bm_mt_add_entry", a, Value::as_i32)
    }

    pub fn bm_mt_set_default_action(
        &mut self,
        table_name: &str,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> Rpc<()> {
        let a = named(table_name)
            .with(3, Value::string(action_name))
            .with(4, codec::binary_list(action_data));
        void_call!(self, STD, "bm_mt_set_default_action", a)
    }

    pub fn bm_mt_reset_default_entry(&mut self, table_name: &str) -> Rpc<()> {
        void_call!(self, STD, "bm_mt_reset_default_entry", named(table_name))
    }

    pub fn bm_mt_delete_entry(&mut self, table_name: &str, entry_handle: BmEntryHandle) -> Rpc<()> {
        let a = named(table_name).with(3, Value::I32(entry_handle));
        void_call!(self, STD, "bm_mt_delete_entry", a)
    }

    pub fn bm_mt_modify_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> Rpc<()> {
        let a = named(table_name)
            .with(3, Value::I32(entry_handle))
            .with(4, Value::string(action_name))
            .with(5, codec::binary_list(action_data));
        void_call!(self, STD, "bm_mt_modify_entry", a)
    }

    pub fn bm_mt_set_entry_ttl(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        timeout_ms: i32,
    ) -> Rpc<()> {
        let a = named(table_name)
            .with(3, Value::I32(entry_handle))
            .with(4, Value::I32(timeout_ms));
        void_call!(self, STD, "bm_mt_set_entry_ttl", a)
    }

    pub fn bm_mt_act_prof_add_member(
        &mut self,
        act_prof_name: &str,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> Rpc<BmMemberHandle> {
        let a = named(act_prof_name)
            .with(3, Value::string(action_name))
            .with(4, codec::binary_list(action_data));
        value_call!(self, STD, "bm_mt_act_prof_add_member", a, Value::as_i32)
    }

    pub fn bm_mt_act_prof_delete_member(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
    ) -> Rpc<()> {
        let a = named(act_prof_name).with(3, Value::I32(mbr_handle));
        void_call!(self, STD, "bm_mt_act_prof_delete_member", a)
    }

    pub fn bm_mt_act_prof_modify_member(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
        action_name: &str,
        action_data: &[Vec<u8>],
    ) -> Rpc<()> {
        let a = named(act_prof_name)
            .with(3, Value::I32(mbr_handle))
            .with(4, Value::string(action_name))
            .with(5, codec::binary_list(action_data));
        void_call!(self, STD, "bm_mt_act_prof_modify_member", a)
    }

    pub fn bm_mt_act_prof_create_group(&mut self, act_prof_name: &str) -> Rpc<BmGroupHandle> {
        value_call!(
            self,
            STD,
            "bm_mt_act_prof_create_group",
            named(act_prof_name),
            Value::as_i32
        )
    }

    pub fn bm_mt_act_prof_delete_group(
        &mut self,
        act_prof_name: &str,
        grp_handle: BmGroupHandle,
    ) -> Rpc<()> {
        let a = named(act_prof_name).with(3, Value::I32(grp_handle));
        void_call!(self, STD, "bm_mt_act_prof_delete_group", a)
    }

    pub fn bm_mt_act_prof_add_member_to_group(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
        grp_handle: BmGroupHandle,
    ) -> Rpc<()> {
        let a = named(act_prof_name)
            .with(3, Value::I32(mbr_handle))
            .with(4, Value::I32(grp_handle));
        void_call!(self, STD, "bm_mt_act_prof_add_member_to_group", a)
    }

    pub fn bm_mt_act_prof_remove_member_from_group(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
        grp_handle: BmGroupHandle,
    ) -> Rpc<()> {
        let a = named(act_prof_name)
            .with(3, Value::I32(mbr_handle))
            .with(4, Value::I32(grp_handle));
        void_call!(self, STD, "bm_mt_act_prof_remove_member_from_group", a)
    }

    pub fn bm_mt_act_prof_get_members(
        &mut self,
        act_prof_name: &str,
    ) -> Rpc<Vec<BmMtActProfMember>> {
        value_call!(
            self,
            STD,
            "bm_mt_act_prof_get_members",
            named(act_prof_name),
            as_struct_list(|f| Some(codec::act_prof_member_from(f)))
        )
    }

    pub fn bm_mt_act_prof_get_member(
        &mut self,
        act_prof_name: &str,
        mbr_handle: BmMemberHandle,
    ) -> Rpc<BmMtActProfMember> {
        let a = named(act_prof_name).with(3, Value::I32(mbr_handle));
        value_call!(
            self,
            STD,
            "bm_mt_act_prof_get_member",
            a,
            as_struct(codec::act_prof_member_from)
        )
    }

    pub fn bm_mt_act_prof_get_groups(&mut self, act_prof_name: &str) -> Rpc<Vec<BmMtActProfGroup>> {
        value_call!(
            self,
            STD,
            "bm_mt_act_prof_get_groups",
            named(act_prof_name),
            as_struct_list(|f| Some(codec::act_prof_group_from(f)))
        )
    }

    pub fn bm_mt_act_prof_get_group(
        &mut self,
        act_prof_name: &str,
        grp_handle: BmGroupHandle,
    ) -> Rpc<BmMtActProfGroup> {
        let a = named(act_prof_name).with(3, Value::I32(grp_handle));
        value_call!(
            self,
            STD,
            "bm_mt_act_prof_get_group",
            a,
            as_struct(codec::act_prof_group_from)
        )
    }

    pub fn bm_mt_indirect_add_entry(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        mbr_handle: BmMemberHandle,
        options: BmAddEntryOptions,
    ) -> Rpc<BmEntryHandle> {
        let a = named(table_name)
            .with(3, codec::match_key(match_key))
            .with(4, Value::I32(mbr_handle))
            .with(5, opts(options));
        value_call!(self, STD, "bm_mt_indirect_add_entry", a, Value::as_i32)
    }

    pub fn bm_mt_indirect_modify_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        mbr_handle: BmMemberHandle,
    ) -> Rpc<()> {
        let a = named(table_name)
            .with(3, Value::I32(entry_handle))
            .with(4, Value::I32(mbr_handle));
        void_call!(self, STD, "bm_mt_indirect_modify_entry", a)
    }

    pub fn bm_mt_indirect_delete_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> Rpc<()> {
        let a = named(table_name).with(3, Value::I32(entry_handle));
        void_call!(self, STD, "bm_mt_indirect_delete_entry", a)
    }

    pub fn bm_mt_indirect_set_entry_ttl(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        timeout_ms: i32,
    ) -> Rpc<()> {
        let a = named(table_name)
            .with(3, Value::I32(entry_handle))
            .with(4, Value::I32(timeout_ms));
        void_call!(self, STD, "bm_mt_indirect_set_entry_ttl", a)
    }

    pub fn bm_mt_indirect_set_default_member(
        &mut self,
        table_name: &str,
        mbr_handle: BmMemberHandle,
    ) -> Rpc<()> {
        let a = named(table_name).with(3, Value::I32(mbr_handle));
        void_call!(self, STD, "bm_mt_indirect_set_default_member", a)
    }

    pub fn bm_mt_indirect_reset_default_entry(&mut self, table_name: &str) -> Rpc<()> {
        void_call!(
            self,
            STD,
            "bm_mt_indirect_reset_default_entry",
            named(table_name)
        )
    }

    pub fn bm_mt_indirect_ws_add_entry(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        grp_handle: BmGroupHandle,
        options: BmAddEntryOptions,
    ) -> Rpc<BmEntryHandle> {
        let a = named(table_name)
            .with(3, codec::match_key(match_key))
            .with(4, Value::I32(grp_handle))
            .with(5, opts(options));
        value_call!(self, STD, "bm_mt_indirect_ws_add_entry", a, Value::as_i32)
    }

    pub fn bm_mt_indirect_ws_modify_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        grp_handle: BmGroupHandle,
    ) -> Rpc<()> {
        let a = named(table_name)
            .with(3, Value::I32(entry_handle))
            .with(4, Value::I32(grp_handle));
        void_call!(self, STD, "bm_mt_indirect_ws_modify_entry", a)
    }

    pub fn bm_mt_indirect_ws_set_default_group(
        &mut self,
        table_name: &str,
        grp_handle: BmGroupHandle,
    ) -> Rpc<()> {
        let a = named(table_name).with(3, Value::I32(grp_handle));
        void_call!(self, STD, "bm_mt_indirect_ws_set_default_group", a)
    }

    pub fn bm_mt_read_counter(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> Rpc<BmCounterValue> {
        let a = named(table_name).with(3, Value::I32(entry_handle));
        value_call!(
            self,
            STD,
            "bm_mt_read_counter",
            a,
            as_struct(codec::counter_value_from)
        )
    }

    pub fn bm_mt_reset_counters(&mut self, table_name: &str) -> Rpc<()> {
        void_call!(self, STD, "bm_mt_reset_counters", named(table_name))
    }

    pub fn bm_mt_write_counter(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        value: BmCounterValue,
    ) -> Rpc<()> {
        let a = named(table_name)
            .with(3, Value::I32(entry_handle))
            .with(4, Value::Struct(codec::counter_value(value)));
        void_call!(self, STD, "bm_mt_write_counter", a)
    }

    pub fn bm_mt_set_meter_rates(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
        rates: &[BmMeterRateConfig],
    ) -> Rpc<()> {
        let a = named(table_name)
            .with(3, Value::I32(entry_handle))
            .with(4, codec::meter_rates(rates));
        void_call!(self, STD, "bm_mt_set_meter_rates", a)
    }

    pub fn bm_mt_get_meter_rates(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> Rpc<Vec<BmMeterRateConfig>> {
        let a = named(table_name).with(3, Value::I32(entry_handle));
        value_call!(
            self,
            STD,
            "bm_mt_get_meter_rates",
            a,
            as_struct_list(|f| Some(codec::meter_rate_from(f)))
        )
    }

    pub fn bm_mt_get_entries(&mut self, table_name: &str) -> Rpc<Vec<BmMtEntry>> {
        value_call!(
            self,
            STD,
            "bm_mt_get_entries",
            named(table_name),
            as_struct_list(entry)
        )
    }

    pub fn bm_mt_get_entry(
        &mut self,
        table_name: &str,
        entry_handle: BmEntryHandle,
    ) -> Rpc<BmMtEntry> {
        let a = named(table_name).with(3, Value::I32(entry_handle));
        value_call!(self, STD, "bm_mt_get_entry", a, |v: &Value| v
            .as_struct()
            .and_then(|s| entry(Fields(s))))
    }

    pub fn bm_mt_get_default_entry(&mut self, table_name: &str) -> Rpc<BmActionEntry> {
        value_call!(
            self,
            STD,
            "bm_mt_get_default_entry",
            named(table_name),
            |v: &Value| v
                .as_struct()
                .and_then(|s| codec::action_entry_from(Fields(s)).ok())
        )
    }

    pub fn bm_mt_get_entry_from_key(
        &mut self,
        table_name: &str,
        match_key: &[BmMatchParam],
        options: BmAddEntryOptions,
    ) -> Rpc<BmMtEntry> {
        let a = named(table_name)
            .with(3, codec::match_key(match_key))
            .with(4, opts(options));
        value_call!(self, STD, "bm_mt_get_entry_from_key", a, |v: &Value| v
            .as_struct()
            .and_then(|s| entry(Fields(s))))
    }

    pub fn bm_counter_read(&mut self, counter_name: &str, index: i32) -> Rpc<BmCounterValue> {
        let a = named(counter_name).with(3, Value::I32(index));
        value_call!(
            self,
            STD,
            "bm_counter_read",
            a,
            as_struct(codec::counter_value_from)
        )
    }

    pub fn bm_counter_reset_all(&mut self, counter_name: &str) -> Rpc<()> {
        void_call!(self, STD, "bm_counter_reset_all", named(counter_name))
    }

    pub fn bm_counter_write(
        &mut self,
        counter_name: &str,
        index: i32,
        value: BmCounterValue,
    ) -> Rpc<()> {
        let a = named(counter_name)
            .with(3, Value::I32(index))
            .with(4, Value::Struct(codec::counter_value(value)));
        void_call!(self, STD, "bm_counter_write", a)
    }

    pub fn bm_learning_ack(
        &mut self,
        list_id: BmLearningListId,
        buffer_id: BmLearningBufferId,
        sample_ids: &[BmLearningSampleId],
    ) -> Rpc<()> {
        let a = args()
            .with(1, CXT)
            .with(2, Value::I32(list_id))
            .with(3, Value::I64(buffer_id))
            .with(4, codec::i32_list(sample_ids));
        void_call!(self, STD, "bm_learning_ack", a)
    }

    pub fn bm_learning_ack_buffer(
        &mut self,
        list_id: BmLearningListId,
        buffer_id: BmLearningBufferId,
    ) -> Rpc<()> {
        let a = args()
            .with(1, CXT)
            .with(2, Value::I32(list_id))
            .with(3, Value::I64(buffer_id));
        void_call!(self, STD, "bm_learning_ack_buffer", a)
    }

    pub fn bm_learning_set_timeout(
        &mut self,
        list_id: BmLearningListId,
        timeout_ms: i32,
    ) -> Rpc<()> {
        let a = args()
            .with(1, CXT)
            .with(2, Value::I32(list_id))
            .with(3, Value::I32(timeout_ms));
        void_call!(self, STD, "bm_learning_set_timeout", a)
    }

    pub fn bm_learning_set_buffer_size(
        &mut self,
        list_id: BmLearningListId,
        nb_samples: i32,
    ) -> Rpc<()> {
        let a = args()
            .with(1, CXT)
            .with(2, Value::I32(list_id))
            .with(3, Value::I32(nb_samples));
        void_call!(self, STD, "bm_learning_set_buffer_size", a)
    }

    pub fn p4jet_learning_dump(&mut self, list_name: &str, count: i32) -> Rpc<String> {
        let a = args()
            .with(1, CXT)
            .with(2, Value::string(list_name))
            .with(3, Value::I32(count));
        value_call!(
            self,
            Service::P4jet,
            "p4jet_learning_dump",
            a,
            Value::as_string
        )
    }

    pub fn p4jet_packet_books(&mut self) -> Rpc<String> {
        value_call!(
            self,
            Service::P4jet,
            "p4jet_packet_books",
            args(),
            Value::as_string
        )
    }

    pub fn p4jet_workers(&mut self) -> Rpc<String> {
        value_call!(
            self,
            Service::P4jet,
            "p4jet_workers",
            args(),
            Value::as_string
        )
    }

    pub fn p4jet_set_workers(&mut self, count: i32) -> Rpc<()> {
        let a = args().with(1, Value::I32(count));
        void_call!(self, Service::P4jet, "p4jet_set_workers", a)
    }

    pub fn p4jet_digest_log(&mut self, list_name: &str, count: i32) -> Rpc<String> {
        let a = args()
            .with(1, CXT)
            .with(2, Value::string(list_name))
            .with(3, Value::I32(count));
        value_call!(
            self,
            Service::P4jet,
            "p4jet_digest_log",
            a,
            Value::as_string
        )
    }

    pub fn bm_load_new_config(&mut self, config_str: &str) -> Rpc<()> {
        let a = args().with(1, Value::string(config_str));
        void_call!(self, STD, "bm_load_new_config", a)
    }

    pub fn bm_swap_configs(&mut self) -> Rpc<()> {
        void_call!(self, STD, "bm_swap_configs", args())
    }

    pub fn bm_meter_array_set_rates(
        &mut self,
        meter_array_name: &str,
        rates: &[BmMeterRateConfig],
    ) -> Rpc<()> {
        let a = named(meter_array_name).with(3, codec::meter_rates(rates));
        void_call!(self, STD, "bm_meter_array_set_rates", a)
    }

    pub fn bm_meter_set_rates(
        &mut self,
        meter_array_name: &str,
        index: i32,
        rates: &[BmMeterRateConfig],
    ) -> Rpc<()> {
        let a = named(meter_array_name)
            .with(3, Value::I32(index))
            .with(4, codec::meter_rates(rates));
        void_call!(self, STD, "bm_meter_set_rates", a)
    }

    pub fn bm_meter_get_rates(
        &mut self,
        meter_array_name: &str,
        index: i32,
    ) -> Rpc<Vec<BmMeterRateConfig>> {
        let a = named(meter_array_name).with(3, Value::I32(index));
        value_call!(
            self,
            STD,
            "bm_meter_get_rates",
            a,
            as_struct_list(|f| Some(codec::meter_rate_from(f)))
        )
    }

    pub fn bm_register_read(
        &mut self,
        register_array_name: &str,
        index: i32,
    ) -> Rpc<BmRegisterValue> {
        let a = named(register_array_name).with(3, Value::I32(index));
        value_call!(self, STD, "bm_register_read", a, Value::as_i64)
    }

    pub fn bm_register_read_all(&mut self, register_array_name: &str) -> Rpc<Vec<BmRegisterValue>> {
        value_call!(
            self,
            STD,
            "bm_register_read_all",
            named(register_array_name),
            |v: &Value| {
                v.as_list_of(TType::I64)?
                    .iter()
                    .map(Value::as_i64)
                    .collect()
            }
        )
    }

    pub fn bm_register_write(
        &mut self,
        register_array_name: &str,
        index: i32,
        value: BmRegisterValue,
    ) -> Rpc<()> {
        let a = named(register_array_name)
            .with(3, Value::I32(index))
            .with(4, Value::I64(value));
        void_call!(self, STD, "bm_register_write", a)
    }

    pub fn bm_register_write_range(
        &mut self,
        register_array_name: &str,
        start_index: i32,
        end_index: i32,
        value: BmRegisterValue,
    ) -> Rpc<()> {
        let a = named(register_array_name)
            .with(3, Value::I32(start_index))
            .with(4, Value::I32(end_index))
            .with(5, Value::I64(value));
        void_call!(self, STD, "bm_register_write_range", a)
    }

    pub fn bm_register_reset(&mut self, register_array_name: &str) -> Rpc<()> {
        void_call!(self, STD, "bm_register_reset", named(register_array_name))
    }

    pub fn bm_parse_vset_add(&mut self, parse_vset_name: &str, value: &[u8]) -> Rpc<()> {
        let a = named(parse_vset_name).with(3, codec::binary(value));
        void_call!(self, STD, "bm_parse_vset_add", a)
    }

    pub fn bm_parse_vset_remove(&mut self, parse_vset_name: &str, value: &[u8]) -> Rpc<()> {
        let a = named(parse_vset_name).with(3, codec::binary(value));
        void_call!(self, STD, "bm_parse_vset_remove", a)
    }

    pub fn bm_parse_vset_get(&mut self, parse_vset_name: &str) -> Rpc<Vec<BmParseVSetValue>> {
        value_call!(
            self,
            STD,
            "bm_parse_vset_get",
            named(parse_vset_name),
            |v: &Value| {
                v.as_list_of(TType::String)?
                    .iter()
                    .map(|b| b.as_bytes().map(<[u8]>::to_vec))
                    .collect()
            }
        )
    }

    pub fn bm_parse_vset_clear(&mut self, parse_vset_name: &str) -> Rpc<()> {
        void_call!(self, STD, "bm_parse_vset_clear", named(parse_vset_name))
    }

    pub fn bm_dev_mgr_add_port(
        &mut self,
        iface_name: &str,
        port_num: i32,
        pcap_path: &str,
    ) -> Rpc<()> {
        let a = args()
            .with(1, Value::string(iface_name))
            .with(2, Value::I32(port_num))
            .with(3, Value::string(pcap_path));
        void_call!(self, STD, "bm_dev_mgr_add_port", a)
    }

    pub fn bm_dev_mgr_remove_port(&mut self, port_num: i32) -> Rpc<()> {
        let a = args().with(1, Value::I32(port_num));
        void_call!(self, STD, "bm_dev_mgr_remove_port", a)
    }

    pub fn bm_dev_mgr_show_ports(&mut self) -> Rpc<Vec<DevMgrPortInfo>> {
        value_call!(
            self,
            STD,
            "bm_dev_mgr_show_ports",
            args(),
            as_struct_list(|f| Some(codec::port_info_from(f)))
        )
    }

    pub fn bm_mgmt_get_info(&mut self) -> Rpc<BmConfig> {
        value_call!(
            self,
            STD,
            "bm_mgmt_get_info",
            args(),
            as_struct(codec::bm_config_from)
        )
    }

    pub fn bm_set_crc16_custom_parameters(
        &mut self,
        calc_name: &str,
        crc16_config: BmCrc16Config,
    ) -> Rpc<()> {
        let a = named(calc_name).with(3, Value::Struct(codec::crc16_config(crc16_config)));
        void_call!(self, STD, "bm_set_crc16_custom_parameters", a)
    }

    pub fn bm_set_crc32_custom_parameters(
        &mut self,
        calc_name: &str,
        crc32_config: BmCrc32Config,
    ) -> Rpc<()> {
        let a = named(calc_name).with(3, Value::Struct(codec::crc32_config(crc32_config)));
        void_call!(self, STD, "bm_set_crc32_custom_parameters", a)
    }

    pub fn bm_set_toeplitz_hash_key(&mut self, calc_name: &str, key: &[u8]) -> Rpc<()> {
        let a = named(calc_name).with(3, codec::binary(key));
        void_call!(self, STD, "bm_set_toeplitz_hash_key", a)
    }

    pub fn bm_reset_state(&mut self) -> Rpc<()> {
        void_call!(self, STD, "bm_reset_state", args())
    }

    pub fn bm_get_config(&mut self) -> Rpc<String> {
        value_call!(self, STD, "bm_get_config", args(), Value::as_string)
    }

    pub fn bm_get_config_md5(&mut self) -> Rpc<Vec<u8>> {
        value_call!(self, STD, "bm_get_config_md5", args(), |v: &Value| v
            .as_bytes()
            .map(<[u8]>::to_vec))
    }

    pub fn bm_get_id_from_name(
        &mut self,
        resource_type: BmResourceType,
        resource_name: &str,
    ) -> Rpc<i32> {
        let a = args()
            .with(1, CXT)
            .with(2, Value::I32(resource_type.code()))
            .with(3, Value::string(resource_name));
        value_call!(self, STD, "bm_get_id_from_name", a, Value::as_i32)
    }

    pub fn bm_serialize_state(&mut self) -> Rpc<String> {
        value_call!(self, STD, "bm_serialize_state", args(), Value::as_string)
    }

    // ------------------------------------------------------------ PRE

    pub fn bm_mc_mgrp_create(&mut self, mgrp: BmMcMgrp) -> Rpc<BmMcMgrpHandle> {
        let a = args().with(1, CXT).with(2, Value::I32(mgrp));
        let svc = self.pre_service();
        value_call!(self, svc, "bm_mc_mgrp_create", a, Value::as_i32)
    }

    pub fn bm_mc_mgrp_destroy(&mut self, mgrp_handle: BmMcMgrpHandle) -> Rpc<()> {
        let a = args().with(1, CXT).with(2, Value::I32(mgrp_handle));
        let svc = self.pre_service();
        void_call!(self, svc, "bm_mc_mgrp_destroy", a)
    }

    pub fn bm_mc_node_create(
        &mut self,
        rid: BmMcRid,
        port_map: &str,
        lag_map: &str,
    ) -> Rpc<BmMcL1Handle> {
        let a = self
            .node_args((2, Value::I32(rid)), port_map, lag_map)
            .map_err(RuntimeError::internal)?;
        let svc = self.pre_service();
        value_call!(self, svc, "bm_mc_node_create", a, Value::as_i32)
    }

    pub fn bm_mc_node_associate(
        &mut self,
        mgrp_handle: BmMcMgrpHandle,
        l1_handle: BmMcL1Handle,
    ) -> Rpc<()> {
        let a = args()
            .with(1, CXT)
            .with(2, Value::I32(mgrp_handle))
            .with(3, Value::I32(l1_handle));
        let svc = self.pre_service();
        void_call!(self, svc, "bm_mc_node_associate", a)
    }

    pub fn bm_mc_node_dissociate(
        &mut self,
        mgrp_handle: BmMcMgrpHandle,
        l1_handle: BmMcL1Handle,
    ) -> Rpc<()> {
        let a = args()
            .with(1, CXT)
            .with(2, Value::I32(mgrp_handle))
            .with(3, Value::I32(l1_handle));
        let svc = self.pre_service();
        void_call!(self, svc, "bm_mc_node_dissociate", a)
    }

    pub fn bm_mc_node_destroy(&mut self, l1_handle: BmMcL1Handle) -> Rpc<()> {
        let a = args().with(1, CXT).with(2, Value::I32(l1_handle));
        let svc = self.pre_service();
        void_call!(self, svc, "bm_mc_node_destroy", a)
    }

    pub fn bm_mc_node_update(
        &mut self,
        l1_handle: BmMcL1Handle,
        port_map: &str,
        lag_map: &str,
    ) -> Rpc<()> {
        let a = self
            .node_args((2, Value::I32(l1_handle)), port_map, lag_map)
            .map_err(RuntimeError::internal)?;
        let svc = self.pre_service();
        void_call!(self, svc, "bm_mc_node_update", a)
    }

    pub fn bm_mc_set_lag_membership(&mut self, lag_index: BmMcLagIndex, port_map: &str) -> Rpc<()> {
        if self.pre == PreService::SimplePre {
            return Err(RuntimeError::internal(
                "simple_pre has no LAGs (bm_mc_set_lag_membership)",
            ));
        }
        let a = args()
            .with(1, CXT)
            .with(2, Value::I16(lag_index))
            .with(3, Value::string(port_map));
        void_call!(self, Service::SimplePreLag, "bm_mc_set_lag_membership", a)
    }

    pub fn bm_mc_get_entries(&mut self) -> Rpc<String> {
        let a = args().with(1, CXT);
        let svc = self.pre_service();
        value_call!(self, svc, "bm_mc_get_entries", a, Value::as_string)
    }

    // ---------------------------------------------------- simple_switch

    pub fn mirroring_session_add(
        &mut self,
        mirror_id: i32,
        config: MirroringSessionConfig,
    ) -> Rpc<()> {
        let a = args()
            .with(1, Value::I32(mirror_id))
            .with(2, Value::Struct(codec::mirroring_config(config)));
        void_call!(self, SSW, "mirroring_session_add", a)
    }

    pub fn mirroring_session_delete(&mut self, mirror_id: i32) -> Rpc<()> {
        let a = args().with(1, Value::I32(mirror_id));
        void_call!(self, SSW, "mirroring_session_delete", a)
    }

    pub fn mirroring_session_get(&mut self, mirror_id: i32) -> Rpc<MirroringSessionConfig> {
        let a = args().with(1, Value::I32(mirror_id));
        value_call!(
            self,
            SSW,
            "mirroring_session_get",
            a,
            as_struct(codec::mirroring_config_from)
        )
    }

    pub fn mirroring_mapping_add(&mut self, mirror_id: i32, egress_port: i32) -> Rpc<i32> {
        let a = args()
            .with(1, Value::I32(mirror_id))
            .with(2, Value::I32(egress_port));
        value_call!(self, SSW, "mirroring_mapping_add", a, Value::as_i32)
    }

    pub fn mirroring_mapping_delete(&mut self, mirror_id: i32) -> Rpc<i32> {
        let a = args().with(1, Value::I32(mirror_id));
        value_call!(self, SSW, "mirroring_mapping_delete", a, Value::as_i32)
    }

    pub fn mirroring_mapping_get_egress_port(&mut self, mirror_id: i32) -> Rpc<i32> {
        let a = args().with(1, Value::I32(mirror_id));
        value_call!(
            self,
            SSW,
            "mirroring_mapping_get_egress_port",
            a,
            Value::as_i32
        )
    }

    pub fn set_egress_queue_depth(&mut self, port_num: i32, depth_pkts: i32) -> Rpc<i32> {
        let a = args()
            .with(1, Value::I32(port_num))
            .with(2, Value::I32(depth_pkts));
        value_call!(self, SSW, "set_egress_queue_depth", a, Value::as_i32)
    }

    pub fn set_egress_priority_queue_depth(
        &mut self,
        port_num: i32,
        priority: i32,
        depth_pkts: i32,
    ) -> Rpc<i32> {
        let a = args()
            .with(1, Value::I32(port_num))
            .with(2, Value::I32(priority))
            .with(3, Value::I32(depth_pkts));
        value_call!(
            self,
            SSW,
            "set_egress_priority_queue_depth",
            a,
            Value::as_i32
        )
    }

    pub fn set_all_egress_queue_depths(&mut self, depth_pkts: i32) -> Rpc<i32> {
        let a = args().with(1, Value::I32(depth_pkts));
        value_call!(self, SSW, "set_all_egress_queue_depths", a, Value::as_i32)
    }

    pub fn set_egress_queue_rate(&mut self, port_num: i32, rate_pps: i64) -> Rpc<i32> {
        let a = args()
            .with(1, Value::I32(port_num))
            .with(2, Value::I64(rate_pps));
        value_call!(self, SSW, "set_egress_queue_rate", a, Value::as_i32)
    }

    pub fn set_egress_priority_queue_rate(
        &mut self,
        port_num: i32,
        priority: i32,
        rate_pps: i64,
    ) -> Rpc<i32> {
        let a = args()
            .with(1, Value::I32(port_num))
            .with(2, Value::I32(priority))
            .with(3, Value::I64(rate_pps));
        value_call!(
            self,
            SSW,
            "set_egress_priority_queue_rate",
            a,
            Value::as_i32
        )
    }

    pub fn set_all_egress_queue_rates(&mut self, rate_pps: i64) -> Rpc<i32> {
        let a = args().with(1, Value::I64(rate_pps));
        value_call!(self, SSW, "set_all_egress_queue_rates", a, Value::as_i32)
    }

    pub fn get_time_elapsed_us(&mut self) -> Rpc<i64> {
        value_call!(self, SSW, "get_time_elapsed_us", args(), Value::as_i64)
    }

    pub fn get_time_since_epoch_us(&mut self) -> Rpc<i64> {
        value_call!(self, SSW, "get_time_since_epoch_us", args(), Value::as_i64)
    }
}
