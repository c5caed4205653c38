//! STF test files, as p4c's bmv2 STF driver (bmv2stf.py over the grammar of
//! tools/stf) understands them, plus the corpus extensions.
//!
//! [`parse_stf`] turns a file into [`StfStatement`]s. Control-plane
//! statements come out already translated into simple_switch_CLI command
//! lines (using the program JSON for key match kinds and widths, like
//! bmv2stf.py), so a runner only feeds them to [`crate::cli::Cli`]; packets
//! and expectations come out decoded. [`compare`] checks the frames a switch
//! sent against the expectations.
//!
//! Translation of `add TABLE [PRIO] KEY:VALUE ... ACTION(ARG:VALUE, ...)`:
//! * TABLE and ACTION: the full JSON name, a unique dotted suffix, or a
//!   unique string suffix (bmv2stf.py's `endswith`). The command uses the
//!   fully qualified names.
//! * KEY: the key's `name` in the JSON (the P4 expression) or a dotted suffix
//!   of it; `$N` stands for `[N]`; `.valid`/`$valid$` as in bmv2stf.py.
//!   Keys not listed get bmv2stf.py's defaults (`0`, `0/0`, `0&&&0`).
//! * Values: exact keys and action arguments are passed as written (decimal
//!   or hex). lpm: `0x0A01****` → `0x0A010000/16` (4 bits per hex digit, 1
//!   per binary digit, `*` digits are not counted), `v/len` as is. ternary:
//!   `*` digits give mask 0, other digits all ones (`0x0A**` →
//!   `0x0A00&&&0xFF00`).
//! * PRIO: ternary tables get `10000 - PRIO` (STF: larger wins; bmv2:
//!   smaller wins), exactly as bmv2stf.py; other tables ignore it.
//!
//! Extensions over bmv2stf.py (which fails on these): decimal lpm values
//! (`v/width`), decimal ternary values (full mask), `v/len` on ternary keys
//! (prefix mask), range keys (`v` → `v->v`, `*` digits → the covered
//! interval, `v/len` → the prefix's interval; unlisted → the whole range)
//! and priorities on range tables (`10000 - PRIO` as well); `mc_node_update`
//! is passed to the CLI instead of being dropped.
//!
//! Other statements: `setdefault TABLE ACTION(ARGS)` → `table_set_default`;
//! `packet PORT HEX`; `expect PORT [HEX with * nibbles][$]` (no data: any
//! number of frames on that port); `no_packet`; `check_counter
//! NAME(INDEX) [packets|bytes OP N]` with OP one of `== != < <= > >=`;
//! `wait`; `remove all`; `expect_digest LIST_ID HEX`; and CLI lines passed
//! through verbatim: the bmv2 driver's set (`mirroring_*`, `mc_mgrp_create`,
//! `mc_node_create|update|associate`, `counter_read|write`,
//! `register_read|write|reset`, `meter_get_rates`, `meter_set_rates`,
//! `meter_array_set_rates`) and, with [`StfOptions::extensions`], any other
//! simple_switch_CLI command except `shell`.

mod compare;

use std::fmt;

pub use compare::{
    CompareOptions, CompareReport, DigestProblem, Expectations, FrameDiff, PortExpectation,
    Problem, compare, compare_digests,
};

use crate::cli::Cli;
use p4jet_runtime::Schema as Program;
use p4jet_runtime::schema::{Action, KeyField, MatchKind, ObjectKind, Table};

/// One statement of an STF file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StfStatement {
    /// 1-based line number in the file.
    pub line: usize,
    /// What to do.
    pub kind: StfKind,
}

/// What a statement does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StfKind {
    /// A simple_switch_CLI command: a translated `add`/`setdefault`, or a
    /// CLI line passed through.
    Cli {
        /// The command line.
        command: String,
        /// `add ... = NAME`: the name the test gives the entry, without a leading `$` (its handle
        /// is in the `Entry has been added with handle N` output, see
        /// [`added_entry_handle`]).
        entry_name: Option<String>,
    },
    /// Inject a frame.
    Packet {
        /// Ingress port.
        port: u32,
        /// Frame bytes.
        data: Vec<u8>,
    },
    /// Expect a frame on a port (`frame` None: any number of frames,
    /// unchecked).
    Expect {
        /// Egress port.
        port: u32,
        /// Expected contents.
        frame: Option<ExpectedFrame>,
    },
    /// `no_packet` (parsed; the bmv2 driver cannot use it).
    NoPacket,
    /// `expect_digest LIST_ID HEX`: the next digest sample sent.
    ExpectDigest {
        /// Learn list id.
        list_id: i64,
        /// The sample (each field padded to whole bytes).
        data: Vec<u8>,
    },
    /// `check_counter`.
    CheckCounter(CounterCheck),
    /// `wait`: let the switch process what was sent so far.
    Wait,
    /// `remove all` (parsed; the bmv2 driver ignores it).
    RemoveAll,
}

/// A frame expectation: nibbles (None = `*`) and whether the length must be
/// exact (`$`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExpectedFrame {
    /// Expected nibbles, most significant first; None matches anything.
    pub nibbles: Vec<Option<u8>>,
    /// The frame must not be longer than the expectation.
    pub exact_length: bool,
}

impl ExpectedFrame {
    /// Parses STF expect data: hex digits, `*` and an optional final `$`
    /// (whitespace ignored).
    pub fn parse(text: &str) -> Result<ExpectedFrame, String> {
        let mut nibbles = Vec::new();
        let mut exact_length = false;
        for c in text.chars().filter(|c| !c.is_whitespace()) {
            if exact_length {
                return Err("'$' must end the expected data".into());
            }
            match c {
                '*' => nibbles.push(None),
                '$' => exact_length = true,
                c => match c.to_digit(16) {
                    Some(d) => nibbles.push(Some(d as u8)),
                    None => return Err(format!("invalid character '{c}' in expected data")),
                },
            }
        }
        Ok(ExpectedFrame {
            nibbles,
            exact_length,
        })
    }

    /// Whether `frame` matches (p4c's `compare_pkt`).
    pub fn matches(&self, frame: &[u8]) -> bool {
        compare::frame_diff(self, frame).is_none()
    }
}

impl fmt::Display for ExpectedFrame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for n in &self.nibbles {
            match n {
                Some(d) => write!(f, "{d:X}")?,
                None => f.write_str("*")?,
            }
        }
        if self.exact_length {
            f.write_str("$")?;
        }
        Ok(())
    }
}

/// Which count `check_counter` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CounterKind {
    /// `packets`
    Packets,
    /// `bytes`
    Bytes,
}

/// Comparison operator of `check_counter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    /// `actual OP expected`.
    pub fn holds(self, actual: u64, expected: u64) -> bool {
        match self {
            CmpOp::Eq => actual == expected,
            CmpOp::Ne => actual != expected,
            CmpOp::Lt => actual < expected,
            CmpOp::Le => actual <= expected,
            CmpOp::Gt => actual > expected,
            CmpOp::Ge => actual >= expected,
        }
    }

    /// The STF spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// Index of a `check_counter`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CounterIndex {
    /// A number: the array index, or the entry handle for direct counters.
    Number(u64),
    /// The name given to an entry by `add ... = NAME` (direct counters), without a leading `$`.
    Entry(String),
}

/// A `check_counter NAME(INDEX) [packets|bytes OP VALUE]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CounterCheck {
    /// Fully qualified counter name.
    pub counter: String,
    /// For a direct counter, its table (the index is an entry handle).
    pub direct_table: Option<String>,
    /// Index.
    pub index: CounterIndex,
    /// The count compared; None when the statement has no condition
    /// (p4c's grammar then means `== 0`, without saying which count).
    pub kind: Option<CounterKind>,
    /// Operator.
    pub op: CmpOp,
    /// Right-hand side.
    pub value: u64,
    /// `counter_read NAME INDEX` for a numeric index.
    pub read_command: Option<String>,
}

/// Parser options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StfOptions {
    /// Accept the corpus extensions (any CLI command as a statement,
    /// `expect_digest`); with false, only what p4c's bmv2 driver accepts.
    pub extensions: bool,
}

impl Default for StfOptions {
    fn default() -> Self {
        StfOptions { extensions: true }
    }
}

/// An error in an STF file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StfError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for StfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for StfError {}

/// CLI commands p4c's bmv2 driver passes through.
const BMV2_DIRECT_COMMANDS: &[&str] = &[
    "mirroring_add",
    "mirroring_add_mc",
    "mirroring_delete",
    "mirroring_get",
    "mc_mgrp_create",
    "mc_node_create",
    "mc_node_update",
    "mc_node_associate",
    "counter_read",
    "counter_write",
    "register_read",
    "register_write",
    "register_reset",
    "meter_get_rates",
    "meter_set_rates",
    "meter_array_set_rates",
];

/// The entry handle in `table_add`/`table_indirect_add*` output.
pub fn added_entry_handle(cli_output: &str) -> Option<i32> {
    cli_output
        .lines()
        .find_map(|l| l.strip_prefix("Entry has been added with handle "))
        .and_then(|h| h.trim().parse().ok())
}

/// Parses and translates an STF file for `program`. Returns every error
/// found (one per bad line) if any.
pub fn parse_stf(
    text: &str,
    program: &Program,
    options: &StfOptions,
) -> Result<Vec<StfStatement>, Vec<StfError>> {
    let mut statements = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        match parse_line(content, program, options) {
            Ok(Some(kind)) => statements.push(StfStatement { line, kind }),
            Ok(None) => {}
            Err(message) => errors.push(StfError { line, message }),
        }
    }
    if errors.is_empty() {
        Ok(statements)
    } else {
        Err(errors)
    }
}

fn parse_line(
    content: &str,
    program: &Program,
    options: &StfOptions,
) -> Result<Option<StfKind>, String> {
    let (word, rest) = match content.split_once(char::is_whitespace) {
        Some((w, r)) => (w, r.trim()),
        None => (content, ""),
    };
    let keyword = word.to_ascii_lowercase();
    match keyword.as_str() {
        "add" => translate_add(rest, program).map(Some),
        "setdefault" => translate_setdefault(rest, program).map(Some),
        "packet" => {
            let (port, data) = split_port(rest)?;
            let data = parse_hex_bytes(data)?;
            Ok(Some(StfKind::Packet { port, data }))
        }
        "expect" => {
            let (port, data) = split_port(rest)?;
            let frame = if data.is_empty() {
                None
            } else {
                Some(ExpectedFrame::parse(data)?)
            };
            Ok(Some(StfKind::Expect { port, frame }))
        }
        "no_packet" => no_args(rest, StfKind::NoPacket),
        "wait" => no_args(rest, StfKind::Wait),
        "remove" => {
            if rest.eq_ignore_ascii_case("all") {
                Ok(Some(StfKind::RemoveAll))
            } else {
                Err(format!("unsupported remove statement: remove {rest}"))
            }
        }
        "check_counter" => {
            translate_check_counter(rest, program).map(|c| Some(StfKind::CheckCounter(c)))
        }
        "expect_digest" if options.extensions => {
            let (id, data) = match rest.split_once(char::is_whitespace) {
                Some((id, d)) => (id, d),
                None => (rest, ""),
            };
            let list_id = id
                .parse::<i64>()
                .map_err(|_| format!("invalid learn list id '{id}'"))?;
            let data = parse_hex_bytes(data)?;
            Ok(Some(StfKind::ExpectDigest { list_id, data }))
        }
        _ => {
            let direct = BMV2_DIRECT_COMMANDS.contains(&keyword.as_str());
            let cli_ext = options.extensions && word != "shell" && Cli::is_command(word);
            if direct || cli_ext {
                let cmd = if direct { keyword.as_str() } else { word };
                let command = if rest.is_empty() {
                    cmd.to_string()
                } else {
                    format!(
                        "{cmd} {}",
                        rest.split_whitespace().collect::<Vec<_>>().join(" ")
                    )
                };
                Ok(Some(StfKind::Cli {
                    command,
                    entry_name: None,
                }))
            } else {
                Err(format!("unknown statement '{word}'"))
            }
        }
    }
}

fn no_args(rest: &str, kind: StfKind) -> Result<Option<StfKind>, String> {
    if rest.is_empty() {
        Ok(Some(kind))
    } else {
        Err(format!("unexpected text '{rest}'"))
    }
}

fn split_port(rest: &str) -> Result<(u32, &str), String> {
    let (port, data) = match rest.split_once(char::is_whitespace) {
        Some((p, d)) => (p, d.trim()),
        None => (rest, ""),
    };
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("invalid port '{port}'"));
    }
    let port = port
        .parse::<u32>()
        .map_err(|_| format!("invalid port '{port}'"))?;
    Ok((port, data))
}

fn parse_hex_bytes(text: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = text
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| {
            c.to_digit(16)
                .map(|d| d as u8)
                .ok_or_else(|| format!("invalid character '{c}' in packet data"))
        })
        .collect::<Result<_, _>>()?;
    if !digits.len().is_multiple_of(2) {
        return Err("packet data has an odd number of hex digits".into());
    }
    Ok(digits.chunks(2).map(|c| (c[0] << 4) | c[1]).collect())
}

// -------------------------------------------------------------------------
// Tokens of add / setdefault / check_counter

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Num(String),
    Punct(&'static str),
}

fn tokenize(s: &str) -> Result<Vec<Tok>, String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let two = s.get(i..i + 2).unwrap_or("");
        if let Some(p) = ["==", "!=", "<=", ">="].into_iter().find(|p| *p == two) {
            out.push(Tok::Punct(p));
            i += 2;
            continue;
        }
        if let Some(p) = [":", ",", "(", ")", "[", "]", ".", "/", "=", "<", ">"]
            .into_iter()
            .find(|p| p.as_bytes()[0] == c)
        {
            out.push(Tok::Punct(p));
            i += 1;
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            let lower = two.to_ascii_lowercase();
            let allowed: fn(u8) -> bool = match lower.as_str() {
                "0x" => |d| d.is_ascii_hexdigit() || d == b'*',
                "0b" => |d| matches!(d, b'0' | b'1' | b'*'),
                "0o" => |d| matches!(d, b'0'..=b'7' | b'*'),
                _ => |d| d.is_ascii_digit(),
            };
            if matches!(lower.as_str(), "0x" | "0b" | "0o") {
                i += 2;
            }
            while i < b.len() && allowed(b[i]) {
                i += 1;
            }
            if i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                return Err(format!("invalid number '{}'", &s[start..=i]));
            }
            out.push(Tok::Num(s[start..i].to_string()));
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$') {
                i += 1;
            }
            out.push(Tok::Ident(s[start..i].to_string()));
            continue;
        }
        if c == b'"' {
            let Some(end) = s[i + 1..].find('"') else {
                return Err("unterminated quoted name".into());
            };
            out.push(Tok::Ident(s[i + 1..i + 1 + end].to_string()));
            i += end + 2;
            continue;
        }
        return Err(format!(
            "unexpected character '{}'",
            &s[i..].chars().next().unwrap_or(' ')
        ));
    }
    Ok(out)
}

struct Toks {
    toks: Vec<Tok>,
    pos: usize,
}

impl Toks {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn peek_at(&self, n: usize) -> Option<&Tok> {
        self.toks.get(self.pos + n)
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn at_end(&self) -> bool {
        self.pos >= self.toks.len()
    }

    fn punct(&mut self, p: &str) -> Result<(), String> {
        match self.next() {
            Some(Tok::Punct(q)) if q == p => Ok(()),
            Some(t) => Err(format!("expected '{p}', found {}", show(&t))),
            None => Err(format!("expected '{p}' at end of line")),
        }
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }

    fn number(&mut self) -> Result<String, String> {
        match self.next() {
            Some(Tok::Num(n)) => Ok(n),
            Some(t) => Err(format!("expected a number, found {}", show(&t))),
            None => Err("expected a number at end of line".into()),
        }
    }

    fn ident(&mut self) -> Result<String, String> {
        match self.next() {
            Some(Tok::Ident(n)) => Ok(n),
            Some(t) => Err(format!("expected a name, found {}", show(&t))),
            None => Err("expected a name at end of line".into()),
        }
    }

    /// `ID ('[' DEC ']')? ('.' ID ('[' DEC ']')?)*`
    fn qualified_name(&mut self) -> Result<String, String> {
        let mut name = self.ident()?;
        loop {
            if self.is_punct("[") {
                self.next();
                let n = self.number()?;
                self.punct("]")?;
                name = format!("{name}[{n}]");
            } else if self.is_punct(".") && matches!(self.peek_at(1), Some(Tok::Ident(_))) {
                self.next();
                name.push('.');
                name.push_str(&self.ident()?);
            } else {
                return Ok(name);
            }
        }
    }

    /// `'(' [ID ':' number (',' ID ':' number)*] ')'`
    fn action_args(&mut self) -> Result<Vec<(String, String)>, String> {
        self.punct("(")?;
        let mut args = Vec::new();
        if self.is_punct(")") {
            self.next();
            return Ok(args);
        }
        loop {
            let name = self.ident()?;
            self.punct(":")?;
            let value = self.number()?;
            args.push((name, value));
            if self.is_punct(",") {
                self.next();
                continue;
            }
            self.punct(")")?;
            return Ok(args);
        }
    }
}

fn show(t: &Tok) -> String {
    match t {
        Tok::Ident(s) | Tok::Num(s) => format!("'{s}'"),
        Tok::Punct(p) => format!("'{p}'"),
    }
}

// -------------------------------------------------------------------------
// Name resolution

/// bmv2stf.py's `tableByName`, plus dotted suffixes.
fn find_table<'p>(program: &'p Program, name: &str) -> Result<&'p Table, String> {
    let exact = program
        .table_by_name(name)
        .or_else(|| {
            program
                .resolve(ObjectKind::Table, name)
                .and_then(|n| program.table_by_name(n))
        })
        .and_then(|t| program.table(t));
    if let Some(t) = exact {
        return Ok(t);
    }
    let mut sorted: Vec<&Table> = program.tables.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut candidates = sorted.into_iter().filter(|t| t.name.ends_with(name));
    match (candidates.next(), candidates.next()) {
        (Some(t), None) => Ok(t),
        (Some(a), Some(b)) => Err(format!(
            "table name {name} is ambiguous between {} and {}",
            a.name, b.name
        )),
        _ => Err(format!("no table {name}")),
    }
}

/// bmv2stf.py's `actionByName` (among the table's actions), plus dotted suffixes.
fn find_action<'p>(program: &'p Program, table: &Table, name: &str) -> Result<&'p Action, String> {
    let mut actions: Vec<&Action> = table
        .actions
        .iter()
        .filter_map(|a| program.action(*a))
        .collect();
    actions.sort_by(|a, b| a.name.cmp(&b.name));
    actions.dedup_by(|a, b| a.name == b.name);
    if let Some(a) = actions.iter().find(|a| a.name == name) {
        return Ok(a);
    }
    let dotted = format!(".{name}");
    let by_dot: Vec<&&Action> = actions
        .iter()
        .filter(|a| a.name.ends_with(&dotted))
        .collect();
    if let [a] = by_dot[..] {
        return Ok(a);
    }
    let by_str: Vec<&&Action> = actions.iter().filter(|a| a.name.ends_with(name)).collect();
    match by_str[..] {
        [a] => Ok(a),
        [] => Err(format!("no action {name} in table {}", table.name)),
        _ => Err(format!("ambiguous action name {name} in {}", table.name)),
    }
}

/// `hdr.mpls$0.label` → `hdr.mpls[0].label`.
fn dollar_index(key: &str) -> String {
    let b = key.as_bytes();
    let mut out = String::with_capacity(key.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
            let start = i + 1;
            let mut j = start;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            out.push('[');
            out.push_str(&key[start..j]);
            out.push(']');
            i = j;
        } else {
            let ch = key[i..].chars().next().unwrap_or('?');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// bmv2stf.py's `TableKeyInstance.set` key lookup; returns the key index.
fn find_key(table: &Table, key: &str) -> Result<usize, String> {
    let key = dollar_index(key);
    let fields: Vec<&str> = table.keys.iter().map(|k| k.name.as_str()).collect();
    let pos = |name: &str| fields.iter().position(|f| *f == name);
    let direct = [
        Some(key.clone()),
        Some(format!("{key}$")),
        Some(format!("{key}.$valid$")),
        key.strip_suffix(".valid").map(|k| format!("{k}.$valid$")),
    ];
    for cand in direct.into_iter().flatten() {
        if let Some(i) = pos(&cand) {
            return Ok(i);
        }
    }
    let dotted = format!(".{key}");
    let dotted_dollar = format!(".{key}$");
    let mut found: Vec<usize> = fields
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            f.ends_with(&dotted)
                || f.ends_with(&dotted_dollar)
                || (key == "valid" && f.ends_with(".$valid$"))
        })
        .map(|(i, _)| i)
        .collect();
    if found.is_empty() && key == "valid" {
        found.extend(pos("$valid$"));
    }
    if found.is_empty() {
        // Not in bmv2stf.py: the JSON target name (`hdr.field`) or its suffix.
        found = table
            .keys
            .iter()
            .enumerate()
            .filter(|(_, k)| {
                let n = k.cli_name();
                n == key || n.ends_with(&dotted)
            })
            .map(|(i, _)| i)
            .collect();
    }
    match found[..] {
        [i] => Ok(i),
        [] => Err(format!(
            "unexpected key field {key} for table {}",
            table.name
        )),
        _ => Err(format!(
            "ambiguous key field {key} for table {}",
            table.name
        )),
    }
}

// -------------------------------------------------------------------------
// Values

/// A key value as written: `number` or `number/number`.
struct KeyValue {
    value: String,
    prefix_len: Option<String>,
}

fn base_prefix(v: &str) -> Option<(&'static str, u32, char)> {
    match v.get(..2).map(str::to_ascii_lowercase).as_deref() {
        Some("0x") => Some(("0x", 4, 'F')),
        Some("0b") => Some(("0b", 1, '1')),
        Some("0o") => Some(("0o", 3, '7')),
        _ => None,
    }
}

/// Hex string (`0x...`) of a byte string.
fn hex_of(bytes: &[u8]) -> String {
    let mut s = String::from("0x");
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    if bytes.is_empty() {
        s.push('0');
    }
    s
}

/// Bytes of a `width`-bit field with its top `len` bits set.
fn prefix_mask(width: u32, len: u32) -> Vec<u8> {
    let nbytes = width.div_ceil(8) as usize;
    let mut m = vec![0u8; nbytes];
    let offset = nbytes * 8 - width as usize;
    for bit in 0..len.min(width) as usize {
        let pos = offset + bit;
        m[pos / 8] |= 0x80 >> (pos % 8);
    }
    m
}

fn numeric(value: &str, width: u32) -> Result<Vec<u8>, String> {
    crate::cli::parse_value(value, width).map_err(|e| format!("{value}: {e}"))
}

fn parse_len(len: &str, width: u32) -> Result<u32, String> {
    match len.parse::<u32>() {
        Ok(l) if l <= width => Ok(l),
        _ => Err(format!(
            "invalid prefix length {len} for a {width}-bit field"
        )),
    }
}

fn translate_key_value(field: &KeyField, kv: &KeyValue) -> Result<String, String> {
    let v = kv.value.as_str();
    let width = field.width;
    match field.kind {
        MatchKind::Exact | MatchKind::Valid => {
            if kv.prefix_len.is_some() || v.contains('*') {
                return Err(format!(
                    "{}: '{}' is not a value for an {} key",
                    field.name,
                    v,
                    field.kind.as_str()
                ));
            }
            Ok(v.to_string())
        }
        MatchKind::Lpm => {
            if let Some(len) = &kv.prefix_len {
                if v.contains('*') {
                    return Err(format!("{v}/{len}: '*' digits and a prefix length"));
                }
                return Ok(format!("{v}/{len}"));
            }
            match base_prefix(v) {
                Some((prefix, bits, _)) => {
                    let body = &v[2..];
                    let digits = body.chars().filter(|c| *c != '*').count() as u32;
                    Ok(format!(
                        "{prefix}{}/{}",
                        body.replace('*', "0"),
                        digits * bits
                    ))
                }
                // bmv2stf.py produces a broken command here; a decimal value
                // is a full-length prefix.
                None => Ok(format!("{v}/{width}")),
            }
        }
        MatchKind::Ternary | MatchKind::Optional => {
            if let Some(len) = &kv.prefix_len {
                if v.contains('*') {
                    return Err(format!("{v}/{len}: '*' digits and a prefix length"));
                }
                let len = parse_len(len, width)?;
                return Ok(format!("{v}&&&{}", hex_of(&prefix_mask(width, len))));
            }
            match base_prefix(v) {
                Some((prefix, _, all)) => {
                    let body = &v[2..];
                    let value = body.replace('*', "0");
                    let mask: String = body
                        .chars()
                        .map(|c| if c == '*' { '0' } else { all })
                        .collect();
                    Ok(format!("{prefix}{value}&&&{prefix}{mask}"))
                }
                // bmv2stf.py rejects decimal ternary values; here they match exactly.
                None => Ok(format!("{v}&&&{}", hex_of(&prefix_mask(width, width)))),
            }
        }
        MatchKind::Range => {
            if let Some(len) = &kv.prefix_len {
                let len = parse_len(len, width)?;
                let value = numeric(v, width)?;
                let mask = prefix_mask(width, len);
                let full = prefix_mask(width, width);
                let lo: Vec<u8> = value.iter().zip(&mask).map(|(a, m)| a & m).collect();
                let hi: Vec<u8> = value
                    .iter()
                    .zip(&mask)
                    .zip(&full)
                    .map(|((a, m), f)| (a & m) | (!m & f))
                    .collect();
                return Ok(format!("{}->{}", hex_of(&lo), hex_of(&hi)));
            }
            match base_prefix(v) {
                Some((prefix, _, all)) if v.contains('*') => {
                    let body = &v[2..];
                    let hi: String = body
                        .chars()
                        .map(|c| if c == '*' { all } else { c })
                        .collect();
                    Ok(format!("{prefix}{}->{prefix}{hi}", body.replace('*', "0")))
                }
                _ => Ok(format!("{v}->{v}")),
            }
        }
    }
}

fn default_key_value(field: &KeyField) -> String {
    match field.kind {
        MatchKind::Exact | MatchKind::Valid => "0".into(),
        MatchKind::Lpm => "0/0".into(),
        MatchKind::Ternary | MatchKind::Optional => "0&&&0".into(),
        MatchKind::Range => format!("0->{}", hex_of(&prefix_mask(field.width, field.width))),
    }
}

fn action_values(action: &Action, args: &[(String, String)]) -> Result<Vec<String>, String> {
    for (k, _) in args {
        if !action.params.iter().any(|p| &p.name == k) {
            return Err(format!("unexpected action arg {k} for {}", action.name));
        }
    }
    action
        .params
        .iter()
        .map(|p| {
            let p = &p.name;
            args.iter()
                .rev()
                .find(|(k, _)| k == p)
                .map(|(_, v)| {
                    if v.contains('*') {
                        Err(format!("action arg {p}: '*' digits are not allowed"))
                    } else {
                        Ok(v.clone())
                    }
                })
                .unwrap_or_else(|| Err(format!("missing action arg {p} for {}", action.name)))
        })
        .collect()
}

fn translate_add(rest: &str, program: &Program) -> Result<StfKind, String> {
    let mut t = Toks {
        toks: tokenize(rest)?,
        pos: 0,
    };
    let table = find_table(program, &t.qualified_name()?)?;
    let prio = match t.peek() {
        Some(Tok::Num(n)) if n.bytes().all(|b| b.is_ascii_digit()) => {
            let n = n.clone();
            t.next();
            Some(n)
        }
        _ => None,
    };
    let mut keys: Vec<Option<String>> = vec![None; table.keys.len()];
    let (action, args) = loop {
        let name = t.qualified_name()?;
        if t.is_punct("(") {
            let action = find_action(program, table, &name)?;
            break (action, t.action_args()?);
        }
        t.punct(":")?;
        let value = t.number()?;
        let prefix_len = if t.is_punct("/") {
            t.next();
            Some(t.number()?)
        } else {
            None
        };
        let idx = find_key(table, &name)?;
        keys[idx] = Some(translate_key_value(
            &table.keys[idx],
            &KeyValue { value, prefix_len },
        )?);
    };
    let entry_name = if t.is_punct("=") {
        t.next();
        Some(entry_name_key(&t.ident()?))
    } else {
        None
    };
    if !t.at_end() {
        return Err(format!(
            "unexpected {} after the action",
            t.peek().map(show).unwrap_or_default()
        ));
    }
    let keys: Vec<String> = keys
        .into_iter()
        .zip(&table.keys)
        .map(|(v, f)| v.unwrap_or_else(|| default_key_value(f)))
        .collect();
    let values = action_values(action, &args)?;
    let mut command = format!("table_add {} {}", table.name, action.name);
    for k in &keys {
        command.push(' ');
        command.push_str(k);
    }
    command.push_str(" =>");
    for v in &values {
        command.push(' ');
        command.push_str(v);
    }
    if crate::cli::needs_priority(table) {
        let Some(p) = prio else {
            return Err(format!(
                "table {} has {} keys: a priority is required",
                table.name,
                crate::cli::kind_str(table.match_type)
            ));
        };
        let p: i64 = p.parse().map_err(|_| format!("invalid priority {p}"))?;
        command.push_str(&format!(" {}", 10000 - p));
    }
    Ok(StfKind::Cli {
        command,
        entry_name,
    })
}

fn translate_setdefault(rest: &str, program: &Program) -> Result<StfKind, String> {
    let mut t = Toks {
        toks: tokenize(rest)?,
        pos: 0,
    };
    let table = find_table(program, &t.qualified_name()?)?;
    let action = find_action(program, table, &t.qualified_name()?)?;
    let args = t.action_args()?;
    if !t.at_end() {
        return Err(format!(
            "unexpected {} after the action",
            t.peek().map(show).unwrap_or_default()
        ));
    }
    let values = action_values(action, &args)?;
    let mut command = format!("table_set_default {} {}", table.name, action.name);
    for v in &values {
        command.push(' ');
        command.push_str(v);
    }
    Ok(StfKind::Cli {
        command,
        entry_name: None,
    })
}

fn parse_u64(n: &str) -> Result<u64, String> {
    let lower = n.to_ascii_lowercase();
    let r = if let Some(h) = lower.strip_prefix("0x") {
        u64::from_str_radix(h, 16)
    } else if let Some(b) = lower.strip_prefix("0b") {
        u64::from_str_radix(b, 2)
    } else if let Some(o) = lower.strip_prefix("0o") {
        u64::from_str_radix(o, 8)
    } else {
        n.parse::<u64>()
    };
    r.map_err(|_| format!("invalid number {n}"))
}

/// `= A` and `= $A` name the same entry that `cnt($A)` and `cnt(A)` read: names are kept
/// without the `$`.
fn entry_name_key(id: &str) -> String {
    id.trim_start_matches('$').to_string()
}

fn translate_check_counter(rest: &str, program: &Program) -> Result<CounterCheck, String> {
    let mut t = Toks {
        toks: tokenize(rest)?,
        pos: 0,
    };
    let name = t.qualified_name()?;
    t.punct("(")?;
    let index = match t.next() {
        Some(Tok::Num(n)) => CounterIndex::Number(parse_u64(&n)?),
        Some(Tok::Ident(id)) => CounterIndex::Entry(entry_name_key(&id)),
        Some(tok) => return Err(format!("expected a counter index, found {}", show(&tok))),
        None => return Err("expected a counter index".into()),
    };
    t.punct(")")?;
    let (kind, op, value) = if t.at_end() {
        (None, CmpOp::Eq, 0)
    } else {
        let kind = match t.ident()?.to_ascii_lowercase().as_str() {
            "packets" => CounterKind::Packets,
            "bytes" => CounterKind::Bytes,
            other => return Err(format!("expected packets or bytes, found '{other}'")),
        };
        let op = match t.next() {
            Some(Tok::Punct("==")) => CmpOp::Eq,
            Some(Tok::Punct("!=")) => CmpOp::Ne,
            Some(Tok::Punct("<")) => CmpOp::Lt,
            Some(Tok::Punct("<=")) => CmpOp::Le,
            Some(Tok::Punct(">")) => CmpOp::Gt,
            Some(Tok::Punct(">=")) => CmpOp::Ge,
            _ => return Err("expected a comparison (== != < <= > >=)".into()),
        };
        let value = parse_u64(&t.number()?)?;
        if !t.at_end() {
            return Err("unexpected text after the count".into());
        }
        (Some(kind), op, value)
    };
    let resolved = program
        .resolve(ObjectKind::Counter, &name)
        .and_then(|n| program.counter_by_name(n))
        .and_then(|c| program.counter(c));
    let counter = match resolved {
        Some(c) => c,
        None => {
            let mut sorted: Vec<_> = program.counters.iter().collect();
            sorted.sort_by(|a, b| a.name.cmp(&b.name));
            let mut c = sorted.into_iter().filter(|c| c.name.ends_with(&name));
            match (c.next(), c.next()) {
                (Some(c), None) => c,
                (Some(_), Some(_)) => return Err(format!("ambiguous counter name {name}")),
                _ => return Err(format!("no counter {name}")),
            }
        }
    };
    let read_command = match &index {
        CounterIndex::Number(i) => Some(format!("counter_read {} {}", counter.name, i)),
        CounterIndex::Entry(_) => None,
    };
    Ok(CounterCheck {
        counter: counter.name.clone(),
        direct_table: counter
            .direct_table
            .and_then(|t| program.table(t))
            .map(|t| t.name.clone()),
        index,
        kind,
        op,
        value,
        read_command,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_indexes() {
        assert_eq!(prefix_mask(32, 8), vec![0xff, 0, 0, 0]);
        assert_eq!(prefix_mask(9, 1), vec![1, 0]);
        assert_eq!(prefix_mask(9, 9), vec![1, 0xff]);
        assert_eq!(prefix_mask(12, 4), vec![0x0f, 0]);
        assert_eq!(dollar_index("hdr.mpls$0.label"), "hdr.mpls[0].label");
        assert_eq!(dollar_index("a$1.b$22.c"), "a[1].b[22].c");
        assert_eq!(dollar_index("hdr.ipv4.$valid$"), "hdr.ipv4.$valid$");
        assert_eq!(
            added_entry_handle("x\nEntry has been added with handle 12\n"),
            Some(12)
        );
    }

    #[test]
    fn tokens() {
        let t =
            tokenize("acl 10 hdr.ipv4.dst_addr:0xC0A801** meta.f:0b***0**1* deny() = A").unwrap();
        assert_eq!(t[0], Tok::Ident("acl".into()));
        assert_eq!(t[1], Tok::Num("10".into()));
        assert!(t.contains(&Tok::Num("0xC0A801**".into())));
        assert!(t.contains(&Tok::Num("0b***0**1*".into())));
        assert!(tokenize("x:12ab").is_err());
    }

    #[test]
    fn expected_frames() {
        let f = ExpectedFrame::parse("0A b* $").unwrap();
        assert_eq!(f.nibbles, vec![Some(0), Some(10), Some(11), None]);
        assert!(f.exact_length);
        assert_eq!(f.to_string(), "0AB*$");
        assert!(ExpectedFrame::parse("0A$0").is_err());
        assert!(ExpectedFrame::parse("0G").is_err());
    }
}
