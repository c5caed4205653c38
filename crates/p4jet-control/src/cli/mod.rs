//! The `simple_switch_CLI` command language.
//!
//! [`Cli`] holds the program model ([`Schema`]) and executes one command line
//! at a time against a [`Runtime`] (the switch in this process, or a remote one
//! through `p4jet_thrift::ThriftClient`), returning what simple_switch_CLI would
//! print on its standard output. Like runtime_CLI.py, it resolves names itself
//! (unique dotted suffixes), parses values and asks the switch through bmv2's
//! services ([`p4jet_thrift::Bmv2`], the same adapter the Thrift server uses), so
//! that every answer is simple_switch's. A malformed command is rejected before any
//! call that changes state is made.
//!
//! The commands are one table ([`commands`]): name, help text and handler.
//!
//! Differences from simple_switch_CLI, all deliberate:
//! * Inputs on which the Python CLI crashes with a traceback (e.g. a bad
//!   `mc_node_destroy` handle, `table_modify` without parameters, a value
//!   that Thrift cannot encode) give an error message instead.
//! * `pvs_add`/`pvs_remove`/`counter_write` send the fully qualified name
//!   (the Python CLI sends the name as typed), and parser value set values
//!   have `ceil(width / 8)` bytes (the Python 3 CLI sends one byte too many).
//! * `table_indirect_add*` checks the number of key fields like `table_add`.
//! * `mc_dump` prints each LAG's own ports.
//! * Text the Python CLI writes to stderr (deprecation notices, "register
//!   index omitted") is not returned; an empty line does not repeat the
//!   previous command.

mod help;
mod values;

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::sync::Arc;

use p4jet_runtime::schema::{
    Action, ActionProfile, CalcAlgo, MatchKind, ObjectKind, Table, TableKind,
};
use p4jet_runtime::{Atomicity, Runtime, RuntimeError, Schema, Update};
use p4jet_thrift::Bmv2;
use p4jet_thrift::types::{
    BmActionEntry, BmAddEntryOptions, BmCounterValue, BmCrc16Config, BmCrc32Config, BmMatchParam,
    BmMeterRateConfig, BmMtActProfGroup, BmMtActProfMember, BmMtEntry, MirroringSessionConfig,
};
use serde_json::Value;

pub use values::parse_value;

use crate::py;

/// bmv2's services over the runtime.
fn bm(rt: &mut dyn Runtime) -> Bmv2<'_> {
    Bmv2::new(rt)
}

/// The match kind name simple_switch_CLI prints (p4c's `optional` is `ternary`).
pub(crate) fn kind_str(k: MatchKind) -> &'static str {
    match k {
        MatchKind::Optional => "ternary",
        k => k.as_str(),
    }
}

/// Whether entries of the table take a priority (its JSON match type is ternary or
/// range).
pub(crate) fn needs_priority(t: &Table) -> bool {
    matches!(
        t.match_type,
        MatchKind::Ternary | MatchKind::Range | MatchKind::Optional
    )
}

/// The prompt simple_switch_CLI shows.
pub const PROMPT: &str = "RuntimeCmd: ";
/// The banner simple_switch_CLI prints when it starts.
pub const INTRO: &str = "Control utility for runtime P4 table manipulation";

/// Why a command failed; [`fmt::Display`] gives the line simple_switch_CLI
/// prints for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CliErrorKind {
    /// A usage error (`Error: ...`).
    Usage(String),
    /// A bad match key (`Invalid match key: ...`).
    MatchKey(String),
    /// A bad action parameter (`Invalid runtime data: ...`).
    RuntimeData(String),
    /// The switch refused the call.
    Api {
        /// The printed message, e.g. `Invalid table operation (DUPLICATE_ENTRY)`.
        message: String,
        /// The IDL error code name (`DUPLICATE_ENTRY`); None for internal errors.
        code: Option<&'static str>,
    },
    /// Not a command (`*** Unknown syntax: ...`).
    UnknownSyntax(String),
}

impl fmt::Display for CliErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliErrorKind::Usage(m) => write!(f, "Error: {m}"),
            CliErrorKind::MatchKey(m) => write!(f, "Invalid match key: {m}"),
            CliErrorKind::RuntimeData(m) => write!(f, "Invalid runtime data: {m}"),
            CliErrorKind::Api { message, .. } => f.write_str(message),
            CliErrorKind::UnknownSyntax(line) => write!(f, "*** Unknown syntax: {line}"),
        }
    }
}

/// A failed command: what was printed before the failure, and the failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// Output printed before the error (e.g. `table_add` echoes the entry
    /// before calling the switch).
    pub output: String,
    /// The error.
    pub kind: CliErrorKind,
}

impl CliError {
    /// Everything simple_switch_CLI prints for this command: the partial
    /// output, then the error line.
    pub fn printed(&self) -> String {
        format!("{}{}\n", self.output, self.kind)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind.fmt(f)
    }
}

impl std::error::Error for CliError {}

/// One failed line of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// 1-based line number.
    pub line: usize,
    /// The command.
    pub command: String,
    /// The failure.
    pub error: CliError,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}: {}", self.line, self.command, self.error)
    }
}

/// Result of [`Cli::run_script`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScriptOutcome {
    /// Everything the commands printed, errors included, in order.
    pub output: String,
    /// The lines that failed.
    pub errors: Vec<ScriptError>,
}

impl ScriptOutcome {
    /// Whether any line failed.
    pub fn failed(&self) -> bool {
        !self.errors.is_empty()
    }
}

type R = Result<(), CliErrorKind>;

macro_rules! outln {
    ($out:expr) => {
        $out.push('\n')
    };
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

// after `outln!`, which it uses
mod commands;

fn usage(msg: impl Into<String>) -> CliErrorKind {
    CliErrorKind::Usage(msg.into())
}

fn exactly(args: &[&str], n: usize) -> R {
    if args.len() != n {
        return Err(usage(format!(
            "Wrong number of args, expected {} but got {}",
            n,
            args.len()
        )));
    }
    Ok(())
}

fn at_least(args: &[&str], n: usize) -> R {
    if args.len() < n {
        return Err(usage("Insufficient number of args"));
    }
    Ok(())
}

fn int_arg(arg: &str, what: &str) -> Result<i32, CliErrorKind> {
    py::int10_i32(arg).ok_or_else(|| usage(format!("Bad format for {what}")))
}

/// sswitch_CLI's `parse_int`.
fn parse_int(arg: &str, name: &str) -> Result<i32, CliErrorKind> {
    py::int10_i32(arg).ok_or_else(|| usage(format!("Bad format for {name}, expected integer")))
}

/// A failure of the switch as simple_switch_CLI prints it.
fn api_error(e: RuntimeError) -> CliErrorKind {
    CliErrorKind::Api {
        message: e.cli_line(),
        code: e.bmv2.map(|c| c.name()),
    }
}

fn call<T>(r: Result<T, RuntimeError>) -> Result<T, CliErrorKind> {
    r.map_err(api_error)
}

fn key_str(t: &Table) -> String {
    t.keys
        .iter()
        .map(|k| format!("{}({}, {})", k.cli_name(), kind_str(k.kind), k.width))
        .collect::<Vec<_>>()
        .join(",\t")
}

fn table_str(s: &Schema, t: &Table) -> String {
    let ap = t
        .kind
        .profile()
        .and_then(|p| s.profile(p))
        .map_or("None", |p| p.name.as_str());
    format!(
        "{} [implementation={}, mk={}]",
        py::ljust(&t.name, 30),
        ap,
        key_str(t)
    )
}

fn action_str(a: &Action) -> String {
    let rd = a
        .params
        .iter()
        .map(|p| format!("{}({})", p.name, p.width))
        .collect::<Vec<_>>()
        .join(",\t");
    format!("{} [{}]", py::ljust(&a.name, 30), rd)
}

fn action_data_str(data: &[Vec<u8>]) -> String {
    data.iter()
        .map(|d| py::hexstr(d))
        .collect::<Vec<_>>()
        .join(", ")
}

fn dump_action_entry(out: &mut String, e: &BmActionEntry) {
    match e {
        BmActionEntry::None => outln!(out, "EMPTY"),
        BmActionEntry::ActionData {
            action_name,
            action_data,
        } => outln!(
            out,
            "Action entry: {} - {}",
            action_name,
            action_data_str(action_data)
        ),
        BmActionEntry::MbrHandle(h) => outln!(out, "Index: member({h})"),
        BmActionEntry::GrpHandle(h) => outln!(out, "Index: group({h})"),
    }
}

fn dump_one_member(out: &mut String, m: &BmMtActProfMember) {
    outln!(out, "Dumping member {}", m.mbr_handle);
    outln!(
        out,
        "Action entry: {} - {}",
        m.action_name,
        action_data_str(&m.action_data)
    );
}

fn dump_one_group(out: &mut String, g: &BmMtActProfGroup) {
    outln!(out, "Dumping group {}", g.grp_handle);
    let members: Vec<String> = g.mbr_handles.iter().map(i32::to_string).collect();
    outln!(out, "Members: [{}]", members.join(", "));
}

fn dump_one_entry(out: &mut String, table: &Table, e: &BmMtEntry) {
    let w = table
        .keys
        .iter()
        .map(|k| k.cli_name().chars().count())
        .max()
        .unwrap_or(0)
        .max(20);
    outln!(out, "Dumping entry {}", py::hex(i64::from(e.entry_handle)));
    outln!(out, "Match key:");
    for (p, k) in e.match_key.iter().zip(&table.keys) {
        let t = p.param_type().name();
        outln!(
            out,
            "* {}: {}{}",
            py::ljust(&k.cli_name(), w),
            py::ljust(t, 10),
            values::match_param_dump(p)
        );
    }
    if let Some(p) = e.options.priority.filter(|p| *p >= 0) {
        outln!(out, "Priority: {p}");
    }
    dump_action_entry(out, &e.action_entry);
    if let Some(life) = e.life {
        outln!(
            out,
            "Life: {}ms since hit, timeout is {}ms",
            life.time_since_hit_ms,
            life.timeout_ms
        );
    }
}

/// A parsed `table_add`.
struct TableAdd<'p> {
    table: &'p Table,
    action: &'p Action,
    priority: i32,
    key: Vec<BmMatchParam>,
    data: Vec<Vec<u8>>,
}

/// The last table and action names resolved (as typed), so that a run of
/// `table_add` lines resolves them once.
#[derive(Default)]
struct NameCache<'p> {
    table: Option<(String, &'p Table)>,
    action: Option<(String, &'p Table, &'p Action)>,
}

/// Consecutive `table_add` lines of a script go to the switch together, at
/// most this many at a time.
const ADD_BATCH: usize = 4096;

/// A script adding at least this many entries to a table tells the switch
/// beforehand.
const RESERVE_MIN: usize = 1024;

/// The arguments of a `table_add` line as [`Cli::execute`] splits it, `None`
/// for other commands.
fn table_add_args(line: &str) -> Option<&str> {
    let split = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(line.len());
    let (cmd, rest) = line.split_at(split);
    (cmd == "table_add").then(|| rest.trim())
}

/// The simple_switch_CLI command interpreter.
#[derive(Debug, Clone)]
pub struct Cli {
    schema: Arc<Schema>,
    /// Refuse the commands that reach outside the switch (see [`Cli::sandboxed`]).
    sandboxed: bool,
}

/// Commands that run programs or write files on the machine the CLI runs on.
const OUTSIDE_COMMANDS: &[&str] = &["shell", "write_config_to_file", "serialize_state"];

impl Cli {
    /// A CLI for the program described by this bmv2 JSON.
    pub fn new(json: &str) -> Result<Cli, RuntimeError> {
        Ok(Cli {
            schema: Schema::shared_from_json(json)?,
            sandboxed: false,
        })
    }

    /// A CLI for a program model.
    pub fn from_schema(schema: Arc<Schema>) -> Cli {
        Cli {
            schema,
            sandboxed: false,
        }
    }

    /// This CLI, refusing the commands that reach outside the switch: `shell` (and its
    /// `!` shortcut), `write_config_to_file` and `serialize_state`. For callers that run
    /// command text nobody vetted (fuzzing, services relaying others' commands).
    pub fn sandboxed(mut self) -> Cli {
        self.sandboxed = true;
        self
    }

    /// A CLI for the program the switch runs (like simple_switch_CLI without
    /// `--json`: the program of the runtime).
    pub fn from_runtime(rt: &mut dyn Runtime) -> Result<Cli, RuntimeError> {
        match rt.schema() {
            Some(schema) => Ok(Cli::from_schema(schema)),
            None => {
                let json = rt.pipeline()?.json;
                Cli::new(&json)
            }
        }
    }

    /// The program model.
    pub fn schema(&self) -> &Arc<Schema> {
        &self.schema
    }

    /// Replaces the program model (after a configuration swap).
    pub fn set_schema(&mut self, schema: Arc<Schema>) {
        self.schema = schema;
    }

    /// Whether `name` is a simple_switch_CLI command.
    pub fn is_command(name: &str) -> bool {
        commands::find(name).is_some()
    }

    /// Names of all simple_switch_CLI commands, sorted.
    pub fn command_names() -> Vec<&'static str> {
        commands::names()
    }

    /// Runs one command line and returns what simple_switch_CLI prints on
    /// stdout (every line ends with a newline; silent commands print
    /// nothing). Blank lines do nothing. On failure, nothing that changes
    /// the switch state has been called unless the switch itself refused
    /// the call ([`CliErrorKind::Api`]).
    pub fn execute(&mut self, rt: &mut dyn Runtime, line: &str) -> Result<String, CliError> {
        let mut line = line.trim().to_string();
        if line.is_empty() {
            return Ok(String::new());
        }
        if let Some(rest) = line.strip_prefix('?') {
            line = format!("help {rest}");
        } else if let Some(rest) = line.strip_prefix('!') {
            line = format!("shell {rest}");
        }
        let split = line
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(line.len());
        let (cmd, rest) = line.split_at(split);
        let rest = rest.trim();
        let mut out = String::new();
        let result = if cmd.is_empty() || !Cli::is_command(cmd) {
            Err(CliErrorKind::UnknownSyntax(line.clone()))
        } else if self.sandboxed && OUTSIDE_COMMANDS.contains(&cmd) {
            Err(usage(format!("{cmd} is disabled in this CLI")))
        } else {
            self.dispatch(rt, cmd, rest, &mut out)
        };
        match result {
            Ok(()) => Ok(out),
            Err(kind) => Err(CliError { output: out, kind }),
        }
    }

    /// Runs a command file (`--commands FILE`): one command per line, blank
    /// lines and `#` comments skipped, every line run even after a failure
    /// (like piping the file into simple_switch_CLI).
    ///
    /// Consecutive `table_add` lines go to the switch together, as one batch of
    /// updates ([`Runtime::write`]), which gives the same entries, handles, output
    /// and errors as running them one by one.
    pub fn run_script(&mut self, rt: &mut dyn Runtime, text: &str) -> ScriptOutcome {
        self.run_script_with(rt, text, true)
    }

    /// [`Cli::run_script`] without the output of the lines that succeed
    /// (bulk loads nobody reads): `output` stays empty, the errors are the
    /// same (with what their lines printed before failing).
    pub fn run_script_quiet(&mut self, rt: &mut dyn Runtime, text: &str) -> ScriptOutcome {
        self.run_script_with(rt, text, false)
    }

    /// Tells the switch how many entries the script's `table_add` lines add
    /// to each table, when that is many ([`Update::ReserveEntries`]).
    fn reserve_entries(&self, rt: &mut dyn Runtime, text: &str) {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for raw in text.lines() {
            if let Some(table) =
                table_add_args(raw.trim()).and_then(|rest| rest.split_whitespace().next())
            {
                *counts.entry(table).or_default() += 1;
            }
        }
        let hints: Vec<Update> = counts
            .into_iter()
            .filter(|(_, n)| *n >= RESERVE_MIN)
            .filter_map(|(name, n)| {
                let t = self.find_table(name)?;
                Some(Update::ReserveEntries {
                    table: t.id,
                    additional: n,
                })
            })
            .collect();
        if !hints.is_empty() {
            // a hint: its failure changes nothing
            let _ = rt.write(hints, Atomicity::ContinueOnError);
        }
    }

    fn run_script_with(&mut self, rt: &mut dyn Runtime, text: &str, output: bool) -> ScriptOutcome {
        let mut outcome = ScriptOutcome::default();
        self.reserve_entries(rt, text);
        let mut adds: Vec<(usize, &str, &str)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(rest) = table_add_args(line) {
                adds.push((i + 1, line, rest));
                if adds.len() >= ADD_BATCH {
                    self.add_batch(rt, &adds, output, &mut outcome);
                    adds.clear();
                }
                continue;
            }
            if !adds.is_empty() {
                self.add_batch(rt, &adds, output, &mut outcome);
                adds.clear();
            }
            match self.execute(rt, line) {
                Ok(out) => {
                    if output {
                        outcome.output.push_str(&out);
                    }
                }
                Err(error) => {
                    if output {
                        outcome.output.push_str(&error.printed());
                    }
                    outcome.errors.push(ScriptError {
                        line: i + 1,
                        command: line.to_string(),
                        error,
                    });
                }
            }
        }
        if !adds.is_empty() {
            self.add_batch(rt, &adds, output, &mut outcome);
        }
        outcome
    }

    /// Runs command `cmd` with its arguments.
    fn dispatch(&mut self, rt: &mut dyn Runtime, cmd: &str, rest: &str, out: &mut String) -> R {
        match commands::find(cmd) {
            Some(c) => {
                let args: Vec<&str> = rest.split_whitespace().collect();
                (c.run)(self, rt, &args, rest, out)
            }
            None => Err(CliErrorKind::UnknownSyntax(
                format!("{cmd} {rest}").trim().to_string(),
            )),
        }
    }

    // ---------------------------------------------------------------------
    // lookups

    /// The object of this kind that `name` names (a unique dotted suffix), by index.
    fn find(&self, kind: ObjectKind, name: &str) -> Option<usize> {
        let full = self.schema.resolve(kind, name)?;
        self.schema.index_of(kind, full).map(|i| i as usize)
    }

    fn find_table(&self, name: &str) -> Option<&Table> {
        self.schema.tables.get(self.find(ObjectKind::Table, name)?)
    }

    fn table(&self, name: &str) -> Result<Table, CliErrorKind> {
        self.find_table(name)
            .cloned()
            .ok_or_else(|| usage(format!("Invalid table name ({name})")))
    }

    fn act_prof(&self, name: &str) -> Result<ActionProfile, CliErrorKind> {
        self.find(ObjectKind::Profile, name)
            .and_then(|i| self.schema.profiles.get(i))
            .cloned()
            .ok_or_else(|| usage(format!("Invalid action profile name ({name})")))
    }

    /// runtime_CLI's `get_action`: a unique suffix among all actions, which
    /// must be one of `allowed` (the action of that name in the list).
    fn action_in(&self, name: &str, allowed: &[p4jet_runtime::ActionId]) -> Option<Action> {
        self.action_ref_in(name, allowed).cloned()
    }

    fn action_ref_in(&self, name: &str, allowed: &[p4jet_runtime::ActionId]) -> Option<&Action> {
        let full = self.schema.resolve(ObjectKind::Action, name)?;
        allowed
            .iter()
            .filter_map(|a| self.schema.action(*a))
            .find(|a| a.name == full)
    }

    fn table_action(
        &self,
        table: &Table,
        table_name: &str,
        action_name: &str,
    ) -> Result<Action, CliErrorKind> {
        self.action_in(action_name, &table.actions)
            .ok_or_else(|| usage(format!("Table {table_name} has no action {action_name}")))
    }

    fn runtime_data(&self, action: &Action, params: &[&str]) -> Result<Vec<Vec<u8>>, CliErrorKind> {
        if params.len() != action.params.len() {
            return Err(usage(format!(
                "Action {} needs {} parameters",
                action.name,
                action.params.len()
            )));
        }
        values::parse_runtime_data(action, params)
    }

    // ---------------------------------------------------------------------
    // program information

    fn shell(&self, rest: &str, out: &mut String) -> R {
        let result = std::process::Command::new("sh")
            .arg("-c")
            .arg(rest)
            .output();
        match result {
            Ok(o) => {
                outln!(out, "{}", String::from_utf8_lossy(&o.stdout));
                Ok(())
            }
            Err(e) => Err(usage(format!("cannot run shell command: {e}"))),
        }
    }

    fn show_tables(&self, a: &[&str], out: &mut String) -> R {
        exactly(a, 0)?;
        let mut tables: Vec<&Table> = self.schema.tables.iter().collect();
        tables.sort_by(|a, b| a.name.cmp(&b.name));
        for t in tables {
            outln!(out, "{}", table_str(&self.schema, t));
        }
        Ok(())
    }

    fn show_actions(&self, a: &[&str], out: &mut String) -> R {
        exactly(a, 0)?;
        for act in self.actions_by_name(self.schema.actions.iter().map(|a| a.id)) {
            outln!(out, "{}", action_str(act));
        }
        Ok(())
    }

    /// Actions sorted by name, one per name (p4c copies some per use).
    fn actions_by_name(&self, ids: impl Iterator<Item = p4jet_runtime::ActionId>) -> Vec<&Action> {
        let mut v: Vec<&Action> = ids.filter_map(|a| self.schema.action(a)).collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v.dedup_by(|a, b| a.name == b.name);
        v
    }

    fn print_table_actions(&self, t: &Table, out: &mut String) {
        for act in self.actions_by_name(t.actions.iter().copied()) {
            outln!(out, "{}", action_str(act));
        }
    }

    fn table_show_actions(&self, a: &[&str], out: &mut String) -> R {
        exactly(a, 1)?;
        let t = self.table(a[0])?;
        self.print_table_actions(&t, out);
        Ok(())
    }

    fn table_info(&self, a: &[&str], out: &mut String) -> R {
        exactly(a, 1)?;
        let t = self.table(a[0])?;
        outln!(out, "{}", table_str(&self.schema, &t));
        outln!(out, "{}", "*".repeat(80));
        self.print_table_actions(&t, out);
        Ok(())
    }

    fn show_pvs(&self, a: &[&str], out: &mut String) -> R {
        exactly(a, 0)?;
        let mut sets: Vec<_> = self.schema.value_sets.iter().collect();
        sets.sort_by(|a, b| a.name.cmp(&b.name));
        for v in sets {
            outln!(
                out,
                "{} [compressed bitwidth:{}]",
                py::ljust(&v.name, 30),
                v.width
            );
        }
        Ok(())
    }

    // ---------------------------------------------------------------------
    // direct tables

    fn table_set_default(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        at_least(a, 2)?;
        let (table_name, action_name) = (a[0], a[1]);
        let table = self.table(table_name)?;
        let action = self.table_action(&table, table_name, action_name)?;
        if a.len() - 2 != action.params.len() {
            return Err(usage(format!(
                "Action {} needs {} parameters",
                action_name,
                action.params.len()
            )));
        }
        let data = values::parse_runtime_data(&action, &a[2..])?;
        outln!(out, "Setting default action of {table_name}");
        outln!(out, "{} {}", py::ljust("action:", 20), action_name);
        outln!(
            out,
            "{} {}",
            py::ljust("runtime data:", 20),
            data.iter()
                .map(|d| py::printable_bytes(d))
                .collect::<Vec<_>>()
                .join("\t")
        );
        call(bm(rt).bm_mt_set_default_action(&table.name, &action.name, &data))
    }

    fn table_reset_default(&self, rt: &mut dyn Runtime, a: &[&str]) -> R {
        exactly(a, 1)?;
        let table = self.table(a[0])?;
        call(bm(rt).bm_mt_reset_default_entry(&table.name))
    }

    fn table_num_entries(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 1)?;
        let table = self.table(a[0])?;
        let n = call(bm(rt).bm_mt_get_num_entries(&table.name))?;
        outln!(out, "{n}");
        Ok(())
    }

    fn table_clear(&self, rt: &mut dyn Runtime, a: &[&str]) -> R {
        exactly(a, 1)?;
        let table = self.table(a[0])?;
        call(bm(rt).bm_mt_clear_entries(&table.name, false))
    }

    /// Pops the priority of ternary/range tables (0 for the others).
    fn pop_priority(table: &Table, args: &mut Vec<&str>) -> Result<i32, CliErrorKind> {
        if !needs_priority(table) {
            return Ok(0);
        }
        args.pop().and_then(py::int10_i32).ok_or_else(|| {
            usage("Table is ternary, but could not extract a valid priority from args")
        })
    }

    /// Parses `table_add`'s arguments (simple_switch_CLI's checks, in its
    /// order); `names` caches the last table and action resolved.
    fn parse_table_add<'p>(
        &'p self,
        a: &[&str],
        names: &mut NameCache<'p>,
    ) -> Result<TableAdd<'p>, CliErrorKind> {
        at_least(a, 3)?;
        let (table_name, action_name) = (a[0], a[1]);
        let table = match &names.table {
            Some((n, t)) if n == table_name => *t,
            _ => {
                let t = self
                    .find_table(table_name)
                    .ok_or_else(|| usage(format!("Invalid table name ({table_name})")))?;
                names.table = Some((table_name.to_string(), t));
                t
            }
        };
        let action = match &names.action {
            Some((n, t, act)) if n == action_name && std::ptr::eq(*t, table) => *act,
            _ => {
                let act = self
                    .action_ref_in(action_name, &table.actions)
                    .ok_or_else(|| {
                        usage(format!("Table {table_name} has no action {action_name}"))
                    })?;
                names.action = Some((action_name.to_string(), table, act));
                act
            }
        };
        // like pop_priority: ternary/range tables take the last argument
        let (priority, args) = if needs_priority(table) {
            match a.split_last() {
                Some((last, init)) => match py::int10_i32(last) {
                    Some(p) => (p, init),
                    None => return Err(Self::bad_priority()),
                },
                None => return Err(Self::bad_priority()),
            }
        } else {
            (0, a)
        };
        // Like runtime_CLI: without "=>", the last argument is dropped.
        let rest = &args[2..];
        let (keys, params): (&[&str], &[&str]) = match rest.iter().position(|x| *x == "=>") {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (&rest[..rest.len().saturating_sub(1)], &[]),
        };
        if keys.len() != table.keys.len() {
            return Err(usage(format!(
                "Table {} needs {} key fields",
                table_name,
                table.keys.len()
            )));
        }
        let data = self.runtime_data(action, params)?;
        let key = values::parse_match_key(table, keys)?;
        Ok(TableAdd {
            table,
            action,
            priority,
            key,
            data,
        })
    }

    fn bad_priority() -> CliErrorKind {
        usage("Table is ternary, but could not extract a valid priority from args")
    }

    /// What `table_add` prints before it calls the switch.
    fn echo_table_add(out: &mut String, add: &TableAdd<'_>, table_name: &str, action_name: &str) {
        outln!(
            out,
            "Adding entry to {} match table {}",
            kind_str(add.table.match_type),
            table_name
        );
        // py::ljust(.., 20) of the labels, then a space
        out.push_str("match key:           ");
        for (i, k) in add.key.iter().enumerate() {
            if i > 0 {
                out.push('\t');
            }
            values::push_match_param(out, k);
        }
        out.push('\n');
        out.push_str("action:              ");
        out.push_str(action_name);
        out.push('\n');
        out.push_str("runtime data:        ");
        for (i, d) in add.data.iter().enumerate() {
            if i > 0 {
                out.push('\t');
            }
            py::push_printable_bytes(out, d);
        }
        out.push('\n');
    }

    fn table_add(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        let mut names = NameCache::default();
        let add = self.parse_table_add(a, &mut names)?;
        Self::echo_table_add(out, &add, a[0], a[1]);
        let options = BmAddEntryOptions {
            priority: Some(add.priority),
        };
        let handle = call(bm(rt).bm_mt_add_entry(
            &add.table.name,
            &add.key,
            &add.action.name,
            &add.data,
            options,
        ))?;
        outln!(out, "Entry has been added with handle {handle}");
        Ok(())
    }

    /// The update a parsed `table_add` makes (as `bm_mt_add_entry` would).
    fn add_update(add: TableAdd<'_>) -> Result<Update, RuntimeError> {
        if !matches!(add.table.kind, TableKind::Direct) {
            return Err(p4jet_runtime::bmv2::Bmv2Code::Table(
                p4jet_runtime::bmv2::TableOperationErrorCode::WRONG_TABLE_TYPE,
            )
            .error(format!("table {} is not a direct table", add.table.name)));
        }
        let key = p4jet_thrift::service::key_from_bm_owned(add.key, add.priority);
        let call = p4jet_runtime::ActionCall::new(add.action.id, add.data);
        Ok(Update::add_direct(add.table.id, key, call))
    }

    /// Runs consecutive `table_add` lines of a script (line number, command,
    /// arguments) with one [`Runtime::write`] batch (one publication): the same
    /// entries, handles, output and errors as running them one by one, as
    /// parsing a line does not depend on the switch and a line that fails
    /// to parse calls nothing. With `output` false, only failed lines get
    /// their output (in their [`CliError`]).
    fn add_batch(
        &self,
        rt: &mut dyn Runtime,
        lines: &[(usize, &str, &str)],
        output: bool,
        outcome: &mut ScriptOutcome,
    ) {
        let mut names = NameCache::default();
        let mut args: Vec<&str> = Vec::new();
        // per line: the echo (empty without output) and whether it goes to the
        // switch, or why it failed to parse
        let mut parsed: Vec<Result<(String, Option<RuntimeError>), CliErrorKind>> =
            Vec::with_capacity(lines.len());
        let mut updates = Vec::with_capacity(lines.len());
        for (_, _, rest) in lines {
            args.clear();
            args.extend(rest.split_whitespace());
            match self.parse_table_add(&args, &mut names) {
                Ok(add) => {
                    let mut echo = String::new();
                    if output {
                        Self::echo_table_add(&mut echo, &add, args[0], args[1]);
                    }
                    match Self::add_update(add) {
                        Ok(u) => {
                            updates.push(u);
                            parsed.push(Ok((echo, None)));
                        }
                        Err(e) => parsed.push(Ok((echo, Some(e)))),
                    }
                }
                Err(kind) => parsed.push(Err(kind)),
            }
        }
        let mut results = if updates.is_empty() {
            Vec::new()
        } else {
            rt.write(updates, Atomicity::ContinueOnError).results
        }
        .into_iter();
        for ((line, command, rest), p) in lines.iter().zip(parsed) {
            let error = match p {
                Err(kind) => CliError {
                    output: String::new(),
                    kind,
                },
                Ok((mut echo, refused)) => {
                    let result = match refused {
                        Some(e) => Err(e),
                        None => match results.next() {
                            Some(r) => r.and_then(|a| {
                                a.entry().map(|h| h.0 as i32).ok_or_else(|| {
                                    RuntimeError::internal("the switch gave no entry handle")
                                })
                            }),
                            None => Err(RuntimeError::internal(
                                "the switch returned no result for this entry",
                            )),
                        },
                    };
                    match call(result) {
                        Ok(handle) => {
                            if output {
                                outcome.output.push_str(&echo);
                                outln!(outcome.output, "Entry has been added with handle {handle}");
                            }
                            continue;
                        }
                        Err(kind) => {
                            if !output {
                                // parsed before: parse again for the echo
                                args.clear();
                                args.extend(rest.split_whitespace());
                                if let Ok(add) = self.parse_table_add(&args, &mut names) {
                                    Self::echo_table_add(&mut echo, &add, args[0], args[1]);
                                }
                            }
                            CliError { output: echo, kind }
                        }
                    }
                }
            };
            if output {
                outcome.output.push_str(&error.printed());
            }
            outcome.errors.push(ScriptError {
                line: *line,
                command: command.to_string(),
                error,
            });
        }
    }

    fn table_set_timeout(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 3)?;
        let table = self.table(a[0])?;
        if !table.support_timeout {
            return Err(usage(format!(
                "Table {} does not support entry timeouts",
                a[0]
            )));
        }
        let handle = int_arg(a[1], "entry handle")?;
        let timeout = int_arg(a[2], "timeout")?;
        outln!(out, "Setting a {timeout} ms timeout for entry {handle}");
        call(bm(rt).bm_mt_set_entry_ttl(&table.name, handle, timeout))
    }

    fn table_modify(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        at_least(a, 3)?;
        let (table_name, action_name) = (a[0], a[1]);
        let table = self.table(table_name)?;
        let action = self.table_action(&table, table_name, action_name)?;
        let handle = int_arg(a[2], "entry handle")?;
        let params = if a.get(3) == Some(&"=>") {
            &a[4..]
        } else {
            &a[3..]
        };
        let data = self.runtime_data(&action, params)?;
        outln!(
            out,
            "Modifying entry {} for {} match table {}",
            handle,
            kind_str(table.match_type),
            table_name
        );
        call(bm(rt).bm_mt_modify_entry(&table.name, handle, &action.name, &data))
    }

    fn table_delete(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 2)?;
        let table = self.table(a[0])?;
        let handle = int_arg(a[1], "entry handle")?;
        outln!(out, "Deleting entry {} from {}", handle, a[0]);
        call(bm(rt).bm_mt_delete_entry(&table.name, handle))
    }

    // ---------------------------------------------------------------------
    // action profiles and indirect tables

    fn check_indirect(table: &Table) -> R {
        if table.kind == TableKind::Direct {
            return Err(usage("Cannot run this command on non-indirect table"));
        }
        Ok(())
    }

    fn check_indirect_ws(table: &Table) -> R {
        if !matches!(table.kind, TableKind::IndirectWs(_)) {
            return Err(usage(
                "Cannot run this command on non-indirect table, or on indirect table with no selector",
            ));
        }
        Ok(())
    }

    fn check_act_prof_ws(ap: &ActionProfile) -> R {
        if !ap.with_selector {
            return Err(usage(
                "Cannot run this command on an action profile without selector",
            ));
        }
        Ok(())
    }

    fn act_prof_action(
        &self,
        ap: &ActionProfile,
        ap_name: &str,
        action_name: &str,
    ) -> Result<Action, CliErrorKind> {
        self.action_in(action_name, &ap.actions).ok_or_else(|| {
            usage(format!(
                "Action profile '{ap_name}' has no action '{action_name}'"
            ))
        })
    }

    fn act_prof_create_member(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        at_least(a, 2)?;
        let ap = self.act_prof(a[0])?;
        let action = self.act_prof_action(&ap, a[0], a[1])?;
        let data = self.runtime_data(&action, &a[2..])?;
        let h = call(bm(rt).bm_mt_act_prof_add_member(&ap.name, &action.name, &data))?;
        outln!(out, "Member has been created with handle {h}");
        Ok(())
    }

    fn act_prof_delete_member(&self, rt: &mut dyn Runtime, a: &[&str]) -> R {
        exactly(a, 2)?;
        let ap = self.act_prof(a[0])?;
        let mbr = int_arg(a[1], "member handle")?;
        call(bm(rt).bm_mt_act_prof_delete_member(&ap.name, mbr))
    }

    fn act_prof_modify_member(&self, rt: &mut dyn Runtime, a: &[&str]) -> R {
        at_least(a, 3)?;
        let ap = self.act_prof(a[0])?;
        let action = self.act_prof_action(&ap, a[0], a[1])?;
        let mbr = int_arg(a[2], "member handle")?;
        let params = if a.get(3) == Some(&"=>") {
            &a[4..]
        } else {
            &a[3..]
        };
        let data = self.runtime_data(&action, params)?;
        call(bm(rt).bm_mt_act_prof_modify_member(&ap.name, mbr, &action.name, &data))
    }

    fn table_indirect_add(
        &self,
        rt: &mut dyn Runtime,
        a: &[&str],
        out: &mut String,
        ws: bool,
    ) -> R {
        at_least(a, 2)?;
        let table = self.table(a[0])?;
        if ws {
            Self::check_indirect_ws(&table)?;
        } else {
            Self::check_indirect(&table)?;
        }
        let mut args = a.to_vec();
        let priority = Self::pop_priority(&table, &mut args)?;
        let Some(i) = args.iter().skip(1).position(|x| *x == "=>").map(|i| i + 1) else {
            return Err(usage("Invalid arguments, could not find handle"));
        };
        if args.len() != i + 2 {
            return Err(usage("Invalid arguments, could not find handle"));
        }
        let keys = &args[1..i];
        let handle = int_arg(args[i + 1], "handle")?;
        if keys.len() != table.keys.len() {
            return Err(usage(format!(
                "Table {} needs {} key fields",
                a[0],
                table.keys.len()
            )));
        }
        let key = values::parse_match_key(&table, keys)?;
        outln!(out, "Adding entry to indirect match table {}", table.name);
        let options = BmAddEntryOptions {
            priority: Some(priority),
        };
        let h = if ws {
            call(bm(rt).bm_mt_indirect_ws_add_entry(&table.name, &key, handle, options))?
        } else {
            call(bm(rt).bm_mt_indirect_add_entry(&table.name, &key, handle, options))?
        };
        outln!(out, "Entry has been added with handle {h}");
        Ok(())
    }

    fn table_indirect_delete(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 2)?;
        let table = self.table(a[0])?;
        Self::check_indirect(&table)?;
        let handle = int_arg(a[1], "entry handle")?;
        outln!(out, "Deleting entry {} from {}", handle, a[0]);
        call(bm(rt).bm_mt_indirect_delete_entry(&table.name, handle))
    }

    fn table_indirect_set_default(&self, rt: &mut dyn Runtime, a: &[&str], ws: bool) -> R {
        exactly(a, 2)?;
        let table = self.table(a[0])?;
        if ws {
            Self::check_indirect_ws(&table)?;
        } else {
            Self::check_indirect(&table)?;
        }
        let handle = int_arg(a[1], "handle")?;
        if ws {
            call(bm(rt).bm_mt_indirect_ws_set_default_group(&table.name, handle))
        } else {
            call(bm(rt).bm_mt_indirect_set_default_member(&table.name, handle))
        }
    }

    fn table_indirect_reset_default(&self, rt: &mut dyn Runtime, a: &[&str]) -> R {
        exactly(a, 1)?;
        let table = self.table(a[0])?;
        call(bm(rt).bm_mt_indirect_reset_default_entry(&table.name))
    }

    fn act_prof_create_group(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 1)?;
        let ap = self.act_prof(a[0])?;
        Self::check_act_prof_ws(&ap)?;
        let h = call(bm(rt).bm_mt_act_prof_create_group(&ap.name))?;
        outln!(out, "Group has been created with handle {h}");
        Ok(())
    }

    fn act_prof_delete_group(&self, rt: &mut dyn Runtime, a: &[&str]) -> R {
        exactly(a, 2)?;
        let ap = self.act_prof(a[0])?;
        Self::check_act_prof_ws(&ap)?;
        let grp = int_arg(a[1], "group handle")?;
        call(bm(rt).bm_mt_act_prof_delete_group(&ap.name, grp))
    }

    fn act_prof_member_group(&self, rt: &mut dyn Runtime, a: &[&str], add: bool) -> R {
        exactly(a, 3)?;
        let ap = self.act_prof(a[0])?;
        Self::check_act_prof_ws(&ap)?;
        let mbr = int_arg(a[1], "member handle")?;
        let grp = int_arg(a[2], "group handle")?;
        if add {
            call(bm(rt).bm_mt_act_prof_add_member_to_group(&ap.name, mbr, grp))
        } else {
            call(bm(rt).bm_mt_act_prof_remove_member_from_group(&ap.name, mbr, grp))
        }
    }

    /// The legacy `table_indirect_*` / `table_dump_member|group` commands:
    /// the table's action profile replaces the table name.
    fn legacy(
        &mut self,
        rt: &mut dyn Runtime,
        a: &[&str],
        out: &mut String,
        substitute: &str,
        with_selection: bool,
        strict: bool,
    ) -> R {
        at_least(a, 1)?;
        let table = self.table(a[0])?;
        if with_selection {
            Self::check_indirect_ws(&table)?;
        } else {
            Self::check_indirect(&table)?;
        }
        let Some(ap) = table.kind.profile().and_then(|p| self.schema.profile(p)) else {
            return Err(usage("Cannot run this command on non-indirect table"));
        };
        let (ap_name, ref_cnt) = (ap.name.clone(), ap.tables.len());
        if strict && ref_cnt > 1 {
            return Err(usage(
                "Legacy command does not work with shared action profiles",
            ));
        }
        let mut args = a.to_vec();
        args[0] = &ap_name;
        self.dispatch(rt, substitute, &args.join(" "), out)
    }

    fn act_prof_dump_member(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 2)?;
        let ap = self.act_prof(a[0])?;
        let mbr = int_arg(a[1], "member handle")?;
        let m = call(bm(rt).bm_mt_act_prof_get_member(&ap.name, mbr))?;
        dump_one_member(out, &m);
        Ok(())
    }

    fn act_prof_dump_group(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 2)?;
        let ap = self.act_prof(a[0])?;
        let grp = int_arg(a[1], "group handle")?;
        let g = call(bm(rt).bm_mt_act_prof_get_group(&ap.name, grp))?;
        dump_one_group(out, &g);
        Ok(())
    }

    fn dump_act_prof(rt: &mut dyn Runtime, ap: &ActionProfile, out: &mut String) -> R {
        let members = call(bm(rt).bm_mt_act_prof_get_members(&ap.name))?;
        outln!(out, "==========");
        outln!(out, "MEMBERS");
        for m in &members {
            outln!(out, "**********");
            dump_one_member(out, m);
        }
        if ap.with_selector {
            let groups = call(bm(rt).bm_mt_act_prof_get_groups(&ap.name))?;
            outln!(out, "==========");
            outln!(out, "GROUPS");
            for g in &groups {
                outln!(out, "**********");
                dump_one_group(out, g);
            }
        }
        Ok(())
    }

    fn act_prof_dump(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 1)?;
        let ap = self.act_prof(a[0])?;
        Self::dump_act_prof(rt, &ap, out)
    }

    // ---------------------------------------------------------------------
    // dumps

    fn table_dump_entry(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 2)?;
        let table = self.table(a[0])?;
        let handle = int_arg(a[1], "entry handle")?;
        let e = call(bm(rt).bm_mt_get_entry(&table.name, handle))?;
        dump_one_entry(out, &table, &e);
        Ok(())
    }

    fn table_dump(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 1)?;
        let table = self.table(a[0])?;
        let entries = call(bm(rt).bm_mt_get_entries(&table.name))?;
        outln!(out, "==========");
        outln!(out, "TABLE ENTRIES");
        for e in &entries {
            outln!(out, "**********");
            dump_one_entry(out, &table, e);
        }
        if let Some(ap) = table.kind.profile().and_then(|p| self.schema.profile(p)) {
            Self::dump_act_prof(rt, ap, out)?;
        }
        let default = call(bm(rt).bm_mt_get_default_entry(&table.name))?;
        outln!(out, "==========");
        outln!(out, "Dumping default entry");
        dump_action_entry(out, &default);
        outln!(out, "==========");
        Ok(())
    }

    fn table_dump_entry_from_key(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        at_least(a, 1)?;
        let table = self.table(a[0])?;
        let mut args = a.to_vec();
        let priority = Self::pop_priority(&table, &mut args)?;
        let keys = &args[1..];
        if keys.len() != table.keys.len() {
            return Err(usage(format!(
                "Table {} needs {} key fields",
                a[0],
                table.keys.len()
            )));
        }
        let key = values::parse_match_key(&table, keys)?;
        let options = BmAddEntryOptions {
            priority: Some(priority),
        };
        let e = call(bm(rt).bm_mt_get_entry_from_key(&table.name, &key, options))?;
        dump_one_entry(out, &table, &e);
        Ok(())
    }

    // ---------------------------------------------------------------------
    // multicast

    fn mgrp(s: &str) -> Result<i32, CliErrorKind> {
        py::int10_i32(s).ok_or_else(|| usage("Bad format for multicast group id"))
    }

    fn node_handle(s: &str) -> Result<i32, CliErrorKind> {
        py::int10_i32(s).ok_or_else(|| usage("Bad format for node handle"))
    }

    fn ports_to_port_map(ports: &[&str], description: &str) -> Result<String, CliErrorKind> {
        let mut nums = Vec::with_capacity(ports.len());
        for p in ports {
            match py::int10_i64(p) {
                Some(n) if (0..=i64::from(u16::MAX) * 16).contains(&n) => nums.push(n as u32),
                _ => return Err(usage(format!("'{p}' is not a valid {description} number"))),
            }
        }
        nums.sort_unstable();
        if let Some(w) = nums.windows(2).find(|w| w[0] == w[1]) {
            return Err(usage(format!(
                "Found duplicate {} number '{}'",
                description, w[0]
            )));
        }
        Ok(p4jet_thrift::types::ports_to_port_map(&nums))
    }

    fn ports_and_lags(args: &[&str]) -> Result<(String, String), CliErrorKind> {
        // args[0] is the rid or node handle; ports run up to an optional "|".
        let bar = args
            .iter()
            .skip(1)
            .position(|x| *x == "|")
            .map_or(args.len(), |i| i + 1);
        let ports = args.get(1..bar).unwrap_or(&[]);
        let lags = args.get(bar + 1..).unwrap_or(&[]);
        Ok((
            Self::ports_to_port_map(ports, "port")?,
            Self::ports_to_port_map(lags, "lag")?,
        ))
    }

    fn mc_mgrp(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String, create: bool) -> R {
        exactly(a, 1)?;
        let mgrp = Self::mgrp(a[0])?;
        if create {
            outln!(out, "Creating multicast group {mgrp}");
            call(bm(rt).bm_mc_mgrp_create(mgrp)).map(|_| ())
        } else {
            outln!(out, "Destroying multicast group {mgrp}");
            call(bm(rt).bm_mc_mgrp_destroy(mgrp))
        }
    }

    fn mc_node_create(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        at_least(a, 1)?;
        let rid = py::int10_i32(a[0]).ok_or_else(|| usage("Bad format for rid"))?;
        let (ports, lags) = Self::ports_and_lags(a)?;
        outln!(
            out,
            "Creating node with rid {rid} , port map {ports} and lag map {lags}"
        );
        let h = call(bm(rt).bm_mc_node_create(rid, &ports, &lags))?;
        outln!(out, "node was created with handle {h}");
        Ok(())
    }

    fn mc_node_update(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        at_least(a, 2)?;
        let h = Self::node_handle(a[0])?;
        let (ports, lags) = Self::ports_and_lags(a)?;
        outln!(
            out,
            "Updating node {h} with port map {ports} and lag map {lags}"
        );
        call(bm(rt).bm_mc_node_update(h, &ports, &lags))
    }

    fn mc_node_associate(
        &self,
        rt: &mut dyn Runtime,
        a: &[&str],
        out: &mut String,
        assoc: bool,
    ) -> R {
        exactly(a, 2)?;
        let mgrp = Self::mgrp(a[0])?;
        let h = Self::node_handle(a[1])?;
        if assoc {
            outln!(out, "Associating node {h} to multicast group {mgrp}");
            call(bm(rt).bm_mc_node_associate(mgrp, h))
        } else {
            outln!(out, "Dissociating node {h} from multicast group {mgrp}");
            call(bm(rt).bm_mc_node_dissociate(mgrp, h))
        }
    }

    fn mc_node_destroy(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 1)?;
        let h = Self::node_handle(a[0])?;
        outln!(out, "Destroying node {h}");
        call(bm(rt).bm_mc_node_destroy(h))
    }

    fn mc_set_lag_membership(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        at_least(a, 2)?;
        let lag = py::int10_i64(a[0])
            .and_then(|v| i16::try_from(v).ok())
            .ok_or_else(|| usage("Bad format for lag index"))?;
        let ports = Self::ports_to_port_map(&a[1..], "lag")?;
        outln!(out, "Setting lag membership: {lag} <- {ports}");
        call(bm(rt).bm_mc_set_lag_membership(lag, &ports))
    }

    fn mc_dump(&self, rt: &mut dyn Runtime, out: &mut String) -> R {
        let text = call(bm(rt).bm_mc_get_entries())?;
        let Ok(json) = serde_json::from_str::<Value>(&text) else {
            outln!(out, "Exception when retrieving MC entries");
            return Ok(());
        };
        let list = |v: &Value, k: &str| -> Vec<Value> {
            v.get(k)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let join = |v: &Value| -> String {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default()
        };
        let l1: Vec<Value> = list(&json, "l1_handles");
        let l2: Vec<Value> = list(&json, "l2_handles");
        outln!(out, "==========");
        outln!(out, "MC ENTRIES");
        for mgrp in list(&json, "mgrps") {
            outln!(out, "**********");
            outln!(
                out,
                "mgrp({})",
                mgrp.get("id").map(Value::to_string).unwrap_or_default()
            );
            for h in list(&mgrp, "l1_handles") {
                let node = l1.iter().find(|n| n.get("handle") == Some(&h));
                let rid = node
                    .and_then(|n| n.get("rid"))
                    .map(Value::to_string)
                    .unwrap_or_default();
                let l2h = node.and_then(|n| n.get("l2_handle"));
                let l2e = l2.iter().find(|n| l2h.is_some() && n.get("handle") == l2h);
                let ports = l2e
                    .and_then(|e| e.get("ports"))
                    .map(join)
                    .unwrap_or_default();
                let lags = l2e
                    .and_then(|e| e.get("lags"))
                    .map(join)
                    .unwrap_or_default();
                outln!(
                    out,
                    "  -> (L1h={h}, rid={rid}) -> (ports=[{ports}], lags=[{lags}])"
                );
            }
        }
        outln!(out, "==========");
        outln!(out, "LAGS");
        if json.get("lags").is_some() {
            for lag in list(&json, "lags") {
                let id = lag.get("id").map(Value::to_string).unwrap_or_default();
                let ports = lag.get("ports").map(join).unwrap_or_default();
                outln!(out, "lag({id}) -> ports=[{ports}]");
            }
        } else {
            outln!(out, "None for this PRE type");
        }
        outln!(out, "==========");
        Ok(())
    }

    // ---------------------------------------------------------------------
    // configuration

    fn load_new_config_file(&mut self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 1)?;
        let path = std::path::Path::new(a[0]);
        if !path.is_file() {
            return Err(usage("Not a valid filename"));
        }
        outln!(out, "Loading new Json config");
        let text = std::fs::read_to_string(path).map_err(|_| usage("Not a valid filename"))?;
        if serde_json::from_str::<Value>(&text).is_err() {
            return Err(usage("Not a valid JSON file"));
        }
        let schema = Schema::shared_from_json(&text).map_err(|e| usage(e.to_string()))?;
        call(bm(rt).bm_load_new_config(&text))?;
        // Like simple_switch_CLI, the CLI switches to the new program at once.
        self.schema = schema;
        Ok(())
    }

    fn write_config_to_file(&self, rt: &mut dyn Runtime, a: &[&str]) -> R {
        exactly(a, 1)?;
        let json = call(bm(rt).bm_get_config())?;
        std::fs::write(a[0], json).map_err(|e| usage(format!("cannot write {}: {}", a[0], e)))
    }

    fn serialize_state(&self, rt: &mut dyn Runtime, a: &[&str]) -> R {
        exactly(a, 1)?;
        let state = call(bm(rt).bm_serialize_state())?;
        std::fs::write(a[0], state).map_err(|e| usage(format!("cannot write {}: {}", a[0], e)))
    }

    fn switch_info(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 0)?;
        let info = call(bm(rt).bm_mgmt_get_info())?;
        let opt = |s: &Option<String>| s.clone().unwrap_or_else(|| "None".to_string());
        let rows = [
            ("device_id", info.device_id.to_string()),
            ("thrift_port", info.thrift_port.to_string()),
            ("notifications_socket", opt(&info.notifications_socket)),
            ("elogger_socket", opt(&info.elogger_socket)),
            ("debugger_socket", opt(&info.debugger_socket)),
        ];
        let w = 5 + rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        for (n, v) in rows {
            outln!(out, "{}: {}", py::ljust(n, w), v);
        }
        Ok(())
    }

    fn port_add(&self, rt: &mut dyn Runtime, a: &[&str]) -> R {
        at_least(a, 2)?;
        let port = py::int10_i32(a[1])
            .ok_or_else(|| usage("Bad format for port_num, must be an integer"))?;
        let pcap = a.get(2).copied().unwrap_or("");
        call(bm(rt).bm_dev_mgr_add_port(a[0], port, pcap))
    }

    fn port_remove(&self, rt: &mut dyn Runtime, a: &[&str]) -> R {
        exactly(a, 1)?;
        let port = py::int10_i32(a[0])
            .ok_or_else(|| usage("Bad format for port_num, must be an integer"))?;
        call(bm(rt).bm_dev_mgr_remove_port(port))
    }

    fn show_ports(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 0)?;
        let ports = call(bm(rt).bm_dev_mgr_show_ports())?;
        outln!(
            out,
            "{}{}{}extra info",
            py::center("port #", 10),
            py::center("iface name", 20),
            py::center("status", 10)
        );
        outln!(out, "{}", "=".repeat(50));
        for p in ports {
            let status = if p.is_up { "UP" } else { "DOWN" };
            let extra = p
                .extra
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("; ");
            outln!(
                out,
                "{}{}{}{}",
                py::center(&p.port_num.to_string(), 10),
                py::center(&p.iface_name, 20),
                py::center(status, 10),
                extra
            );
        }
        Ok(())
    }

    fn set_crc_parameters(&self, rt: &mut dyn Runtime, a: &[&str], width: u32) -> R {
        exactly(a, 6)?;
        let name = a[0];
        let algo = if width == 16 {
            CalcAlgo::Crc16Custom
        } else {
            CalcAlgo::Crc32Custom
        };
        if !self
            .schema
            .calculations
            .iter()
            .any(|c| c.name == name && c.algo == algo)
        {
            return Err(usage(format!("Invalid crc{width}_custom name ({name})")));
        }
        // runtime_CLI's hex_to_i16 / hex_to_i32: int(x, 0), at most `width`
        // bits; the bit pattern is what matters.
        let num = |s: &str| -> Result<u32, CliErrorKind> {
            let v = py::parse_int0(s)
                .and_then(|v| v.to_i64())
                .ok_or_else(|| usage(format!("Bad format for {s}, expected integer")))?;
            let max = (1i64 << width) - 1;
            if v > max {
                return Err(usage(format!("Integer cannot fit within {width} bits")));
            }
            if v < -(1i64 << (width - 1)) {
                return Err(usage(format!("Integer cannot fit within {width} bits")));
            }
            Ok((v & max) as u32)
        };
        let flag = |s: &str| -> Result<bool, CliErrorKind> {
            match s {
                "true" | "True" => Ok(true),
                "false" | "False" => Ok(false),
                _ => py::parse_int0(s)
                    .map(|v| !v.is_zero())
                    .ok_or_else(|| usage("Invalid bool parameter")),
            }
        };
        let (poly, init, xor) = (num(a[1])?, num(a[2])?, num(a[3])?);
        let (refl_data, refl_rem) = (flag(a[4])?, flag(a[5])?);
        if width == 16 {
            let config = BmCrc16Config {
                polynomial: poly as u16,
                initial_remainder: init as u16,
                final_xor_value: xor as u16,
                data_reflected: refl_data,
                remainder_reflected: refl_rem,
            };
            call(bm(rt).bm_set_crc16_custom_parameters(name, config))
        } else {
            let config = BmCrc32Config {
                polynomial: poly,
                initial_remainder: init,
                final_xor_value: xor,
                data_reflected: refl_data,
                remainder_reflected: refl_rem,
            };
            call(bm(rt).bm_set_crc32_custom_parameters(name, config))
        }
    }

    fn set_toeplitz_hash_key(&self, rt: &mut dyn Runtime, a: &[&str]) -> R {
        exactly(a, 2)?;
        let s = a[1].as_bytes();
        if !s.len().is_multiple_of(2) || !s.iter().all(u8::is_ascii_hexdigit) {
            return Err(usage("Toeplitz hash key must be a hex string"));
        }
        let key: Vec<u8> = s
            .chunks(2)
            .map(|c| {
                let hi = (c[0] as char).to_digit(16).unwrap_or(0);
                let lo = (c[1] as char).to_digit(16).unwrap_or(0);
                (hi * 16 + lo) as u8
            })
            .collect();
        if !key.len().is_multiple_of(4) {
            return Err(usage(
                "Toeplitz hash key must be a multiple of 4 bytes in length",
            ));
        }
        call(bm(rt).bm_set_toeplitz_hash_key(a[0], &key))
    }

    // ---------------------------------------------------------------------
    // counters, meters, registers, value sets

    fn meter_rates(
        rates: &[&str],
        rate_count: usize,
    ) -> Result<Vec<BmMeterRateConfig>, CliErrorKind> {
        if rates.len() != rate_count {
            return Err(usage(format!(
                "Invalid number of rates, expected {} but got {}",
                rate_count,
                rates.len()
            )));
        }
        rates
            .iter()
            .map(|r| {
                let parts: Vec<&str> = r.split(':').collect();
                let [rate, burst] = parts[..] else {
                    return Err(usage("Error while parsing rates"));
                };
                let units_per_micros =
                    py::parse_float(rate).ok_or_else(|| usage("Error while parsing rates"))?;
                let burst_size = py::int10_i64(burst)
                    .and_then(|b| u32::try_from(b).ok())
                    .ok_or_else(|| usage("Error while parsing rates"))?;
                Ok(BmMeterRateConfig {
                    units_per_micros,
                    burst_size,
                })
            })
            .collect()
    }

    fn meter(&self, name: &str) -> Result<p4jet_runtime::schema::Meter, CliErrorKind> {
        self.find(ObjectKind::Meter, name)
            .and_then(|i| self.schema.meters.get(i))
            .cloned()
            .ok_or_else(|| usage(format!("Invalid meter name ({name})")))
    }

    /// The name of the table of a direct counter or meter.
    fn binding(&self, t: Option<p4jet_runtime::TableId>) -> Option<String> {
        t.and_then(|t| self.schema.table(t)).map(|t| t.name.clone())
    }

    fn meter_array_set_rates(&self, rt: &mut dyn Runtime, a: &[&str]) -> R {
        at_least(a, 1)?;
        let meter = self.meter(a[0])?;
        let rates = Self::meter_rates(&a[1..], meter.rate_count as usize)?;
        call(bm(rt).bm_meter_array_set_rates(&meter.name, &rates))
    }

    fn meter_set_rates(&self, rt: &mut dyn Runtime, a: &[&str]) -> R {
        at_least(a, 2)?;
        let meter = self.meter(a[0])?;
        let index = int_arg(a[1], "index")?;
        let rates = Self::meter_rates(&a[2..], meter.rate_count as usize)?;
        match &self.binding(meter.direct_table) {
            Some(table) => call(bm(rt).bm_mt_set_meter_rates(table, index, &rates)),
            None => call(bm(rt).bm_meter_set_rates(&meter.name, index, &rates)),
        }
    }

    fn meter_get_rates(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 2)?;
        let meter = self.meter(a[0])?;
        let index = int_arg(a[1], "index")?;
        let rates = match &self.binding(meter.direct_table) {
            Some(table) => call(bm(rt).bm_mt_get_meter_rates(table, index))?,
            None => call(bm(rt).bm_meter_get_rates(&meter.name, index))?,
        };
        if rates.len() != meter.rate_count as usize {
            outln!(
                out,
                "WARNING: expected {} rates but only received {}",
                meter.rate_count,
                rates.len()
            );
        }
        for (i, r) in rates.iter().enumerate() {
            outln!(
                out,
                "{}: info rate = {}, burst size = {}",
                i,
                py::float_repr(r.units_per_micros),
                r.burst_size
            );
        }
        Ok(())
    }

    fn counter(&self, name: &str) -> Result<p4jet_runtime::schema::Counter, CliErrorKind> {
        self.find(ObjectKind::Counter, name)
            .and_then(|i| self.schema.counters.get(i))
            .cloned()
            .ok_or_else(|| usage(format!("Invalid counter name ({name})")))
    }

    fn counter_read(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 2)?;
        let counter = self.counter(a[0])?;
        let index = int_arg(a[1], "index")?;
        let value = match &self.binding(counter.direct_table) {
            Some(table) => {
                outln!(out, "this is the direct counter for table {table}");
                call(bm(rt).bm_mt_read_counter(table, index))?
            }
            None => call(bm(rt).bm_counter_read(&counter.name, index))?,
        };
        outln!(
            out,
            "{}[{}]= ({} bytes, {} packets)",
            a[0],
            index,
            value.bytes as i64,
            value.packets as i64
        );
        Ok(())
    }

    fn counter_write(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 4)?;
        let counter = self.counter(a[0])?;
        let index = int_arg(a[1], "index")?;
        let packets = py::int10_i64(a[2]).ok_or_else(|| usage("Bad format for packets"))?;
        let bytes = py::int10_i64(a[3]).ok_or_else(|| usage("Bad format for bytes"))?;
        // Thrift carries i64; bmv2 reads the bits as unsigned.
        let value = BmCounterValue {
            bytes: bytes as u64,
            packets: packets as u64,
        };
        match &self.binding(counter.direct_table) {
            Some(table) => {
                outln!(out, "writing to direct counter for table {table}");
                call(bm(rt).bm_mt_write_counter(table, index, value))?;
            }
            None => call(bm(rt).bm_counter_write(&counter.name, index, value))?,
        }
        outln!(out, "{}[{}] has been updated", a[0], index);
        Ok(())
    }

    fn counter_reset(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 1)?;
        let counter = self.counter(a[0])?;
        match &self.binding(counter.direct_table) {
            Some(table) => {
                outln!(out, "this is the direct counter for table {table}");
                call(bm(rt).bm_mt_reset_counters(table))
            }
            None => call(bm(rt).bm_counter_reset_all(&counter.name)),
        }
    }

    fn register(&self, name: &str) -> Result<p4jet_runtime::schema::Register, CliErrorKind> {
        self.find(ObjectKind::Register, name)
            .and_then(|i| self.schema.registers.get(i))
            .cloned()
            .ok_or_else(|| usage(format!("Invalid register name ({name})")))
    }

    fn register_read(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        at_least(a, 1)?;
        let reg = self.register(a[0])?;
        if a.len() > 1 {
            exactly(a, 2)?;
            let index = int_arg(a[1], "index")?;
            let v = call(bm(rt).bm_register_read(&reg.name, index))?;
            outln!(out, "{}[{}]= {}", a[0], index, v);
        } else {
            let values = call(bm(rt).bm_register_read_all(&reg.name))?;
            let values: Vec<String> = values.iter().map(i64::to_string).collect();
            outln!(out, "{}= {}", a[0], values.join(", "));
        }
        Ok(())
    }

    fn register_write(&self, rt: &mut dyn Runtime, a: &[&str]) -> R {
        exactly(a, 3)?;
        let reg = self.register(a[0])?;
        let index = int_arg(a[1], "index")?;
        let value =
            py::int10_i64(a[2]).ok_or_else(|| usage("Bad format for value, must be an integer"))?;
        call(bm(rt).bm_register_write(&reg.name, index, value))
    }

    fn register_reset(&self, rt: &mut dyn Runtime, a: &[&str]) -> R {
        exactly(a, 1)?;
        let reg = self.register(a[0])?;
        call(bm(rt).bm_register_reset(&reg.name))
    }

    fn learn_list(&self, name: &str) -> Result<&p4jet_runtime::schema::Digest, CliErrorKind> {
        self.schema
            .digest_by_name(name)
            .and_then(|d| self.schema.digest(d))
            .ok_or_else(|| usage(format!("Invalid learn list name ({name})")))
    }

    /// `digest_dump [<learn list> [<count>]]` (p4jet): the switch's latest learning
    /// notifications, then the samples waiting to be sent.
    fn digest_dump(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        if a.len() > 2 {
            return Err(usage(format!(
                "Wrong number of args, expected at most 2 but got {}",
                a.len()
            )));
        }
        let name = match a.first() {
            Some(n) => self.learn_list(n)?.name.clone(),
            None => String::new(),
        };
        let count = match a.get(1) {
            Some(c) => match parse_int(c, "count")? {
                n if n > 0 => n,
                _ => return Err(usage("count must be positive")),
            },
            None => 0,
        };
        let text = call(bm(rt).p4jet_learning_dump(&name, count))?;
        out.push_str(&text);
        Ok(())
    }

    /// `digest_ack <learn list> <buffer id>` (p4jet): `bm_learning_ack_buffer`, so
    /// that the buffer's samples pass the learning filter again.
    fn digest_ack(&self, rt: &mut dyn Runtime, a: &[&str]) -> R {
        exactly(a, 2)?;
        let list = self.learn_list(a[0])?;
        let id = i32::try_from(list.json_id)
            .map_err(|_| usage(format!("learn list id {} out of range", list.json_id)))?;
        let buffer = py::parse_int(a[1], 10)
            .and_then(|v| v.to_i64())
            .ok_or_else(|| usage("Bad format for buffer id, expected integer"))?;
        call(bm(rt).bm_learning_ack_buffer(id, buffer))
    }

    fn pvs(&self, name: &str) -> Result<p4jet_runtime::schema::ValueSet, CliErrorKind> {
        self.find(ObjectKind::ValueSet, name)
            .and_then(|i| self.schema.value_sets.get(i))
            .cloned()
            .ok_or_else(|| usage(format!("Invalid parser value set name ({name})")))
    }

    fn pvs_add_remove(&self, rt: &mut dyn Runtime, a: &[&str], add: bool) -> R {
        exactly(a, 2)?;
        let pvs = self.pvs(a[0])?;
        let v = values::parse_pvs_value(a[1], pvs.width).map_err(usage)?;
        if add {
            call(bm(rt).bm_parse_vset_add(&pvs.name, &v))
        } else {
            call(bm(rt).bm_parse_vset_remove(&pvs.name, &v))
        }
    }

    fn pvs_get(&self, rt: &mut dyn Runtime, a: &[&str], out: &mut String) -> R {
        exactly(a, 1)?;
        let pvs = self.pvs(a[0])?;
        for v in call(bm(rt).bm_parse_vset_get(&pvs.name))? {
            outln!(out, "{}", py::hexstr(&v));
        }
        Ok(())
    }

    fn pvs_clear(&self, rt: &mut dyn Runtime, a: &[&str]) -> R {
        exactly(a, 1)?;
        let pvs = self.pvs(a[0])?;
        call(bm(rt).bm_parse_vset_clear(&pvs.name))
    }

    // ---------------------------------------------------------------------
    // simple_switch

    fn set_queue(&self, rt: &mut dyn Runtime, a: &[&str], depth: bool) -> R {
        at_least(a, 1)?;
        let what = if depth { "nb_pkts" } else { "rate_pps" };
        let v = parse_int(a[0], what)?;
        match a.len() {
            1 => {
                if depth {
                    call(bm(rt).set_all_egress_queue_depths(v))?;
                } else {
                    call(bm(rt).set_all_egress_queue_rates(i64::from(v)))?;
                }
            }
            2 => {
                let port = parse_int(a[1], "egress_port")?;
                if depth {
                    call(bm(rt).set_egress_queue_depth(port, v))?;
                } else {
                    call(bm(rt).set_egress_queue_rate(port, i64::from(v)))?;
                }
            }
            _ => {
                let port = parse_int(a[1], "egress_port")?;
                let prio = parse_int(a[2], "priority")?;
                if depth {
                    call(bm(rt).set_egress_priority_queue_depth(port, prio, v))?;
                } else {
                    call(bm(rt).set_egress_priority_queue_rate(port, prio, i64::from(v)))?;
                }
            }
        }
        Ok(())
    }

    fn mirroring_add(&self, rt: &mut dyn Runtime, a: &[&str], mc: bool) -> R {
        exactly(a, 2)?;
        let id = parse_int(a[0], "mirror_id")?;
        let config = if mc {
            MirroringSessionConfig {
                port: None,
                mgid: Some(parse_int(a[1], "mgrp")?),
            }
        } else {
            MirroringSessionConfig {
                port: Some(parse_int(a[1], "egress_port")?),
                mgid: None,
            }
        };
        call(bm(rt).mirroring_session_add(id, config))
    }
}

/// Parses a match key for `table` from simple_switch_CLI key syntax
/// (`v`, `v/len`, `v&&&mask`, `lo->hi`, `0|1`), one string per key field.
pub fn parse_match_key(table: &Table, fields: &[&str]) -> Result<Vec<BmMatchParam>, CliErrorKind> {
    if fields.len() != table.keys.len() {
        return Err(usage(format!(
            "Table {} needs {} key fields",
            table.name,
            table.keys.len()
        )));
    }
    values::parse_match_key(table, fields)
}
