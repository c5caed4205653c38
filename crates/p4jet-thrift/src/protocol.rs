//! The Thrift binary protocol, written from the public specification
//! (`doc/specs/thrift-binary-protocol.md` of Apache Thrift).
//!
//! Values are carried as a small dynamic tree ([`Value`], [`Struct`]): the
//! decoder reads any well-formed Thrift value without knowing the IDL, under
//! [`Limits`], and the typed layer ([`crate::codec`]) picks fields by id.
//!
//! Wire summary (all integers big-endian, two's complement):
//! * message header, strict: `i32 0x8001_0000 | type`, `string name`,
//!   `i32 seqid`; old (non-strict) form, accepted when reading: `i32 len`
//!   (non-negative), `len` name bytes, `i8 type`, `i32 seqid`;
//! * struct: fields `i8 type, i16 id, value`, closed by a `0` type byte;
//! * bool: one byte (any non-zero reads as true); byte/i16/i32/i64: 1/2/4/8
//!   bytes; double: the 8 bytes of the IEEE 754 value;
//! * string and binary: `i32 length` then the bytes;
//! * list and set: `i8 element type, i32 count`, elements;
//!   map: `i8 key type, i8 value type, i32 count`, key/value pairs.

use std::fmt;
use std::io::{self, Read};

/// Strict message header version (`VERSION_1`).
pub const VERSION_1: u32 = 0x8001_0000;
/// Mask selecting the version bits of a strict header.
pub const VERSION_MASK: u32 = 0xffff_0000;

/// Thrift wire types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum TType {
    /// End of a struct's fields.
    Stop = 0,
    /// Never on the wire as a value.
    Void = 1,
    /// `bool`.
    Bool = 2,
    /// `byte` / `i8`.
    Byte = 3,
    /// `double`.
    Double = 4,
    /// `i16`.
    I16 = 6,
    /// `i32` (also enums).
    I32 = 8,
    /// `i64`.
    I64 = 10,
    /// `string` and `binary`.
    String = 11,
    /// `struct`, `exception`.
    Struct = 12,
    /// `map`.
    Map = 13,
    /// `set`.
    Set = 14,
    /// `list`.
    List = 15,
}

impl TType {
    /// The type for a wire byte (only types that can carry a value, plus
    /// [`TType::Stop`]).
    pub fn from_u8(b: u8) -> Option<TType> {
        Some(match b {
            0 => TType::Stop,
            2 => TType::Bool,
            3 => TType::Byte,
            4 => TType::Double,
            6 => TType::I16,
            8 => TType::I32,
            10 => TType::I64,
            11 => TType::String,
            12 => TType::Struct,
            13 => TType::Map,
            14 => TType::Set,
            15 => TType::List,
            _ => return None,
        })
    }
}

/// Thrift message types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MessageType {
    /// A call expecting a reply.
    Call = 1,
    /// A reply (result struct).
    Reply = 2,
    /// A `TApplicationException`.
    Exception = 3,
    /// A call without reply.
    Oneway = 4,
}

impl MessageType {
    /// The message type for a wire byte.
    pub fn from_u8(b: u8) -> Option<MessageType> {
        Some(match b {
            1 => MessageType::Call,
            2 => MessageType::Reply,
            3 => MessageType::Exception,
            4 => MessageType::Oneway,
            _ => return None,
        })
    }
}

/// A decoded Thrift value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `bool`.
    Bool(bool),
    /// `byte`.
    Byte(i8),
    /// `double`.
    Double(f64),
    /// `i16`.
    I16(i16),
    /// `i32` (and enums).
    I32(i32),
    /// `i64`.
    I64(i64),
    /// `string` or `binary` (the wire does not distinguish them).
    Binary(Vec<u8>),
    /// `struct` or `exception`.
    Struct(Struct),
    /// `map`: key and value types are kept so that empty maps re-encode
    /// exactly.
    Map {
        /// Key type.
        key: TType,
        /// Value type.
        value: TType,
        /// Entries in wire order.
        entries: Vec<(Value, Value)>,
    },
    /// `set`.
    Set {
        /// Element type.
        elem: TType,
        /// Elements in wire order.
        items: Vec<Value>,
    },
    /// `list`.
    List {
        /// Element type.
        elem: TType,
        /// Elements in wire order.
        items: Vec<Value>,
    },
}

impl Value {
    /// The wire type of the value.
    pub fn ttype(&self) -> TType {
        match self {
            Value::Bool(_) => TType::Bool,
            Value::Byte(_) => TType::Byte,
            Value::Double(_) => TType::Double,
            Value::I16(_) => TType::I16,
            Value::I32(_) => TType::I32,
            Value::I64(_) => TType::I64,
            Value::Binary(_) => TType::String,
            Value::Struct(_) => TType::Struct,
            Value::Map { .. } => TType::Map,
            Value::Set { .. } => TType::Set,
            Value::List { .. } => TType::List,
        }
    }

    /// A `string` value.
    pub fn string(s: &str) -> Value {
        Value::Binary(s.as_bytes().to_vec())
    }

    /// A `list` of elements of type `elem`.
    pub fn list(elem: TType, items: Vec<Value>) -> Value {
        Value::List { elem, items }
    }

    /// The bool, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The i16, if this is one.
    pub fn as_i16(&self) -> Option<i16> {
        match *self {
            Value::I16(v) => Some(v),
            _ => None,
        }
    }

    /// The i32, if this is one.
    pub fn as_i32(&self) -> Option<i32> {
        match *self {
            Value::I32(v) => Some(v),
            _ => None,
        }
    }

    /// The i64, if this is one.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::I64(v) => Some(v),
            _ => None,
        }
    }

    /// The double, if this is one.
    pub fn as_double(&self) -> Option<f64> {
        match *self {
            Value::Double(v) => Some(v),
            _ => None,
        }
    }

    /// The bytes of a string/binary value.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Binary(b) => Some(b),
            _ => None,
        }
    }

    /// A string value as text (invalid UTF-8 is replaced, as it can never
    /// name anything).
    pub fn as_string(&self) -> Option<String> {
        self.as_bytes()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }

    /// The struct, if this is one.
    pub fn as_struct(&self) -> Option<&Struct> {
        match self {
            Value::Struct(s) => Some(s),
            _ => None,
        }
    }

    /// The elements of a list whose element type is `elem`.
    pub fn as_list_of(&self, elem: TType) -> Option<&[Value]> {
        match self {
            Value::List { elem: e, items } if *e == elem => Some(items),
            _ => None,
        }
    }
}

/// A struct: fields in wire order. Lookups take the last field with an id,
/// as generated Thrift code does when an id is repeated.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Struct {
    /// `(field id, value)` pairs in wire order.
    pub fields: Vec<(i16, Value)>,
}

impl Struct {
    /// An empty struct.
    pub fn new() -> Self {
        Struct::default()
    }

    /// Builder: appends field `id`.
    #[must_use]
    pub fn with(mut self, id: i16, value: Value) -> Self {
        self.fields.push((id, value));
        self
    }

    /// Builder: appends field `id` if `value` is set (optional fields).
    #[must_use]
    pub fn with_opt(mut self, id: i16, value: Option<Value>) -> Self {
        if let Some(v) = value {
            self.fields.push((id, v));
        }
        self
    }

    /// The value of field `id`.
    pub fn get(&self, id: i16) -> Option<&Value> {
        self.fields
            .iter()
            .rev()
            .find(|(i, _)| *i == id)
            .map(|(_, v)| v)
    }
}

/// Bounds applied while decoding, so that a garbage length cannot make the
/// decoder allocate (or wait for) more than this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest string or binary, in bytes.
    pub max_string_len: usize,
    /// Most elements in one list, set or map.
    pub max_container_len: usize,
    /// Most bytes in one message (header included).
    pub max_message_len: usize,
    /// Deepest nesting of structs and containers.
    pub max_depth: usize,
    /// Longest method name in a message header.
    pub max_name_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_string_len: 64 << 20,
            max_container_len: 1 << 20,
            max_message_len: 128 << 20,
            max_depth: 64,
            max_name_len: 1024,
        }
    }
}

/// A decoding failure.
#[derive(Debug)]
pub enum DecodeError {
    /// The transport failed or ended in the middle of a value.
    Io(io::Error),
    /// The bytes are not a valid Thrift encoding (bad version, unknown type,
    /// negative length, ...).
    Invalid(String),
    /// A length, count, depth or the message size exceeds [`Limits`].
    Limit(String),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Io(e) => write!(f, "transport error: {e}"),
            DecodeError::Invalid(m) => write!(f, "invalid data: {m}"),
            DecodeError::Limit(m) => write!(f, "size limit exceeded: {m}"),
        }
    }
}

impl std::error::Error for DecodeError {}

impl From<io::Error> for DecodeError {
    fn from(e: io::Error) -> Self {
        DecodeError::Io(e)
    }
}

/// A message header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageHeader {
    /// Method name (with a `service:` prefix when multiplexed).
    pub name: String,
    /// Message type.
    pub kind: MessageType,
    /// Sequence id, echoed in the reply.
    pub seqid: i32,
}

// ---------------------------------------------------------------------------
// Encoding

/// Appends a strict message header.
pub fn write_message_begin(out: &mut Vec<u8>, name: &str, kind: MessageType, seqid: i32) {
    out.extend_from_slice(&(VERSION_1 | kind as u32).to_be_bytes());
    write_bytes(out, name.as_bytes());
    out.extend_from_slice(&seqid.to_be_bytes());
}

/// Appends a string/binary value (length prefix, then the bytes).
pub fn write_bytes(out: &mut Vec<u8>, b: &[u8]) {
    // Lengths beyond i32 cannot be represented; they never occur for the
    // values this crate builds, and truncating would corrupt the stream, so
    // saturate (the peer will then reject the message as too long).
    let len = i32::try_from(b.len()).unwrap_or(i32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(b);
}

fn write_len(out: &mut Vec<u8>, n: usize) {
    let len = i32::try_from(n).unwrap_or(i32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
}

/// Appends a value (without field header).
pub fn write_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Bool(b) => out.push(u8::from(*b)),
        Value::Byte(b) => out.extend_from_slice(&b.to_be_bytes()),
        Value::Double(d) => out.extend_from_slice(&d.to_bits().to_be_bytes()),
        Value::I16(i) => out.extend_from_slice(&i.to_be_bytes()),
        Value::I32(i) => out.extend_from_slice(&i.to_be_bytes()),
        Value::I64(i) => out.extend_from_slice(&i.to_be_bytes()),
        Value::Binary(b) => write_bytes(out, b),
        Value::Struct(s) => write_struct(out, s),
        Value::Map {
            key,
            value,
            entries,
        } => {
            out.push(*key as u8);
            out.push(*value as u8);
            write_len(out, entries.len());
            for (k, v) in entries {
                write_value(out, k);
                write_value(out, v);
            }
        }
        Value::Set { elem, items } | Value::List { elem, items } => {
            out.push(*elem as u8);
            write_len(out, items.len());
            for item in items {
                write_value(out, item);
            }
        }
    }
}

/// Appends a struct: each field as `type, id, value`, then the stop byte.
pub fn write_struct(out: &mut Vec<u8>, s: &Struct) {
    for (id, v) in &s.fields {
        out.push(v.ttype() as u8);
        out.extend_from_slice(&id.to_be_bytes());
        write_value(out, v);
    }
    out.push(TType::Stop as u8);
}

/// A whole message: strict header and body struct.
pub fn encode_message(name: &str, kind: MessageType, seqid: i32, body: &Struct) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    write_message_begin(&mut out, name, kind, seqid);
    write_struct(&mut out, body);
    out
}

// ---------------------------------------------------------------------------
// Decoding

/// Reads Thrift values from a byte stream, enforcing [`Limits`]. The byte
/// budget of [`Limits::max_message_len`] restarts at each message header.
pub struct Decoder<R> {
    inner: R,
    limits: Limits,
    consumed: usize,
}

impl<R: Read> Decoder<R> {
    /// A decoder over `inner`.
    pub fn new(inner: R, limits: Limits) -> Self {
        Decoder {
            inner,
            limits,
            consumed: 0,
        }
    }

    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The underlying reader, mutably.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// Bytes consumed since the current message began.
    pub fn consumed(&self) -> usize {
        self.consumed
    }

    fn account(&mut self, n: usize) -> Result<(), DecodeError> {
        let total = self.consumed.saturating_add(n);
        if total > self.limits.max_message_len {
            return Err(DecodeError::Limit(format!(
                "message longer than {} bytes",
                self.limits.max_message_len
            )));
        }
        self.consumed = total;
        Ok(())
    }

    fn read_array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        self.account(N)?;
        let mut buf = [0u8; N];
        self.inner.read_exact(&mut buf)?;
        Ok(buf)
    }

    fn read_u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.read_array::<1>()?[0])
    }

    fn read_i16(&mut self) -> Result<i16, DecodeError> {
        Ok(i16::from_be_bytes(self.read_array()?))
    }

    fn read_i32(&mut self) -> Result<i32, DecodeError> {
        Ok(i32::from_be_bytes(self.read_array()?))
    }

    fn read_i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_be_bytes(self.read_array()?))
    }

    fn read_size(&mut self, limit: usize, what: &str) -> Result<usize, DecodeError> {
        let n = self.read_i32()?;
        let n = usize::try_from(n)
            .map_err(|_| DecodeError::Invalid(format!("negative {what} length {n}")))?;
        if n > limit {
            return Err(DecodeError::Limit(format!(
                "{what} length {n} exceeds {limit}"
            )));
        }
        Ok(n)
    }

    /// Reads `n` bytes without trusting `n` for the allocation: the buffer
    /// grows with the bytes actually received.
    fn read_exact_vec(&mut self, n: usize) -> Result<Vec<u8>, DecodeError> {
        self.account(n)?;
        let mut buf = Vec::with_capacity(n.min(64 << 10));
        let got = (&mut self.inner).take(n as u64).read_to_end(&mut buf)?;
        if got != n {
            return Err(DecodeError::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "stream ended inside a string",
            )));
        }
        Ok(buf)
    }

    fn read_type(&mut self) -> Result<TType, DecodeError> {
        let b = self.read_u8()?;
        match TType::from_u8(b) {
            Some(TType::Stop) | None => Err(DecodeError::Invalid(format!("invalid type {b}"))),
            Some(t) => Ok(t),
        }
    }

    /// Reads a message header. Returns `Ok(None)` if the stream ends cleanly
    /// before the first byte. Resets the message byte budget.
    pub fn read_message_begin(&mut self) -> Result<Option<MessageHeader>, DecodeError> {
        self.consumed = 0;
        let mut first = [0u8; 1];
        loop {
            match self.inner.read(&mut first) {
                Ok(0) => return Ok(None),
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.consumed = 1;
        let mut rest = [0u8; 3];
        self.account(3)?;
        self.inner.read_exact(&mut rest)?;
        let word = u32::from_be_bytes([first[0], rest[0], rest[1], rest[2]]);
        let (name, kind_byte) = if word & 0x8000_0000 != 0 {
            if word & VERSION_MASK != VERSION_1 {
                return Err(DecodeError::Invalid(format!(
                    "bad version in message header: {word:#010x}"
                )));
            }
            let name = self.read_name()?;
            (name, (word & 0xff) as u8)
        } else {
            // Old, non-strict header: the first word is the name length.
            let n = word as usize;
            if n > self.limits.max_name_len {
                return Err(DecodeError::Limit(format!(
                    "method name length {n} exceeds {}",
                    self.limits.max_name_len
                )));
            }
            let name = self.read_exact_vec(n)?;
            (String::from_utf8_lossy(&name).into_owned(), self.read_u8()?)
        };
        let kind = MessageType::from_u8(kind_byte)
            .ok_or_else(|| DecodeError::Invalid(format!("invalid message type {kind_byte}")))?;
        let seqid = self.read_i32()?;
        Ok(Some(MessageHeader { name, kind, seqid }))
    }

    fn read_name(&mut self) -> Result<String, DecodeError> {
        let n = self.read_size(self.limits.max_name_len, "method name")?;
        let b = self.read_exact_vec(n)?;
        Ok(String::from_utf8_lossy(&b).into_owned())
    }

    /// Reads a struct (the body of a message).
    pub fn read_struct(&mut self) -> Result<Struct, DecodeError> {
        self.read_struct_at(1)
    }

    fn check_depth(&self, depth: usize) -> Result<(), DecodeError> {
        if depth > self.limits.max_depth {
            return Err(DecodeError::Limit(format!(
                "nesting deeper than {}",
                self.limits.max_depth
            )));
        }
        Ok(())
    }

    fn read_struct_at(&mut self, depth: usize) -> Result<Struct, DecodeError> {
        self.check_depth(depth)?;
        let mut s = Struct::new();
        loop {
            let b = self.read_u8()?;
            let t = match TType::from_u8(b) {
                Some(TType::Stop) => return Ok(s),
                Some(t) => t,
                None => return Err(DecodeError::Invalid(format!("invalid field type {b}"))),
            };
            let id = self.read_i16()?;
            let v = self.read_value_at(t, depth + 1)?;
            if s.fields.len() >= self.limits.max_container_len {
                return Err(DecodeError::Limit("too many struct fields".into()));
            }
            s.fields.push((id, v));
        }
    }

    /// Reads one value of type `t`.
    pub fn read_value(&mut self, t: TType) -> Result<Value, DecodeError> {
        self.read_value_at(t, 1)
    }

    fn read_value_at(&mut self, t: TType, depth: usize) -> Result<Value, DecodeError> {
        Ok(match t {
            TType::Stop | TType::Void => {
                return Err(DecodeError::Invalid(format!("{t:?} is not a value type")));
            }
            TType::Bool => Value::Bool(self.read_u8()? != 0),
            TType::Byte => Value::Byte(i8::from_be_bytes(self.read_array()?)),
            TType::Double => Value::Double(f64::from_bits(u64::from_be_bytes(self.read_array()?))),
            TType::I16 => Value::I16(self.read_i16()?),
            TType::I32 => Value::I32(self.read_i32()?),
            TType::I64 => Value::I64(self.read_i64()?),
            TType::String => {
                let n = self.read_size(self.limits.max_string_len, "string")?;
                Value::Binary(self.read_exact_vec(n)?)
            }
            TType::Struct => Value::Struct(self.read_struct_at(depth)?),
            TType::Map => {
                self.check_depth(depth)?;
                let key = self.read_type()?;
                let value = self.read_type()?;
                let n = self.read_size(self.limits.max_container_len, "map")?;
                let mut entries = Vec::with_capacity(n.min(1024));
                for _ in 0..n {
                    let k = self.read_value_at(key, depth + 1)?;
                    let v = self.read_value_at(value, depth + 1)?;
                    entries.push((k, v));
                }
                Value::Map {
                    key,
                    value,
                    entries,
                }
            }
            TType::Set | TType::List => {
                self.check_depth(depth)?;
                let elem = self.read_type()?;
                let n = self.read_size(self.limits.max_container_len, "list")?;
                let mut items = Vec::with_capacity(n.min(1024));
                for _ in 0..n {
                    items.push(self.read_value_at(elem, depth + 1)?);
                }
                if t == TType::Set {
                    Value::Set { elem, items }
                } else {
                    Value::List { elem, items }
                }
            }
        })
    }
}

/// Decodes one whole message from a byte slice (trailing bytes are an
/// error).
pub fn decode_message(
    bytes: &[u8],
    limits: Limits,
) -> Result<(MessageHeader, Struct), DecodeError> {
    let mut d = Decoder::new(bytes, limits);
    let header = d.read_message_begin()?.ok_or_else(|| {
        DecodeError::Io(io::Error::new(io::ErrorKind::UnexpectedEof, "empty input"))
    })?;
    let body = d.read_struct()?;
    if !d.get_ref().is_empty() {
        return Err(DecodeError::Invalid(format!(
            "{} trailing bytes after the message",
            d.get_ref().len()
        )));
    }
    Ok((header, body))
}

// ---------------------------------------------------------------------------
// TApplicationException

/// `TApplicationException` types.
pub mod app_error {
    /// Unknown.
    pub const UNKNOWN: i32 = 0;
    /// The method (or service) does not exist.
    pub const UNKNOWN_METHOD: i32 = 1;
    /// The message type is not a call.
    pub const INVALID_MESSAGE_TYPE: i32 = 2;
    /// The reply names another method.
    pub const WRONG_METHOD_NAME: i32 = 3;
    /// The reply has another sequence id.
    pub const BAD_SEQUENCE_ID: i32 = 4;
    /// The reply has no result.
    pub const MISSING_RESULT: i32 = 5;
    /// The handler failed.
    pub const INTERNAL_ERROR: i32 = 6;
    /// The request could not be decoded.
    pub const PROTOCOL_ERROR: i32 = 7;
}

/// A `TApplicationException`: `{1: string message, 2: i32 type}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplicationException {
    /// Human-readable message.
    pub message: String,
    /// One of [`app_error`].
    pub kind: i32,
}

impl ApplicationException {
    /// An exception of type `kind`.
    pub fn new(kind: i32, message: impl Into<String>) -> Self {
        ApplicationException {
            message: message.into(),
            kind,
        }
    }

    /// The wire struct.
    pub fn to_struct(&self) -> Struct {
        Struct::new()
            .with(1, Value::string(&self.message))
            .with(2, Value::I32(self.kind))
    }

    /// From the wire struct (missing fields read as empty / UNKNOWN).
    pub fn from_struct(s: &Struct) -> Self {
        ApplicationException {
            message: s.get(1).and_then(Value::as_string).unwrap_or_default(),
            kind: s
                .get(2)
                .and_then(Value::as_i32)
                .unwrap_or(app_error::UNKNOWN),
        }
    }

    /// The name of the exception type.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            app_error::UNKNOWN_METHOD => "UNKNOWN_METHOD",
            app_error::INVALID_MESSAGE_TYPE => "INVALID_MESSAGE_TYPE",
            app_error::WRONG_METHOD_NAME => "WRONG_METHOD_NAME",
            app_error::BAD_SEQUENCE_ID => "BAD_SEQUENCE_ID",
            app_error::MISSING_RESULT => "MISSING_RESULT",
            app_error::INTERNAL_ERROR => "INTERNAL_ERROR",
            app_error::PROTOCOL_ERROR => "PROTOCOL_ERROR",
            _ => "UNKNOWN",
        }
    }
}

impl fmt::Display for ApplicationException {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TApplicationException({}): {}",
            self.kind_name(),
            self.message
        )
    }
}

impl std::error::Error for ApplicationException {}
