//! `p4jet cli`: simple_switch_CLI as a Rust client of bmv2's Thrift runtime API.
//!
//! Works against `p4jet run` or bmv2 itself. Interactive on a terminal (line editing,
//! history in `~/.p4jet_cli_history`, completion of command names and of the program's
//! table, action, counter, register, meter, action-profile and value-set names); reads
//! commands from standard input otherwise, printing what simple_switch_CLI prints, and
//! then exits with status 1 if any command failed.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use md5::{Digest as _, Md5};
use std::sync::Arc;

use p4jet_control::cli::Cli;
use p4jet_runtime::schema::ObjectKind;
use p4jet_runtime::{Runtime, Schema};
use p4jet_thrift::ThriftClient;
use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};

/// simple_switch_CLI's prompt.
pub const PROMPT: &str = "RuntimeCmd: ";

/// `p4jet cli` options (simple_switch_CLI's).
#[derive(Args, Debug)]
pub struct CliArgs {
    /// Thrift server port of the switch.
    #[arg(long = "thrift-port", default_value_t = 9090)]
    pub thrift_port: u16,
    /// Thrift server address of the switch.
    #[arg(long = "thrift-ip", default_value = "localhost")]
    pub thrift_ip: String,
    /// The program's JSON (default: fetched from the switch with bm_get_config).
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Packet replication engine (accepted for compatibility; p4jet serves both).
    #[arg(long = "pre", value_name = "PRE", hide = true)]
    pub pre: Option<String>,
}

/// `p4jet cli`.
pub fn main(a: CliArgs) -> Result<ExitCode, String> {
    let mut out = std::io::stdout();
    let addr = format!("{}:{}", a.thrift_ip, a.thrift_port);
    let mut client = match ThriftClient::connect(addr.as_str()) {
        Ok(c) => c,
        Err(_) => {
            let _ = write!(
                out,
                "Could not connect to thrift client on port {}\n\
                 Make sure the switch is running and that you have the right port\n",
                a.thrift_port
            );
            return Ok(ExitCode::from(1));
        }
    };
    let json = match &a.json {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("reading {}: {e}", path.display()))?;
            if let Ok(md5) = client.bm_get_config_md5()
                && md5 != Md5::digest(text.as_bytes()).as_slice()
            {
                let _ = writeln!(
                    out,
                    "**********\n\
                     The JSON config you provided does not match the one on the switch\n\
                     **********"
                );
            }
            text
        }
        None => {
            let _ = writeln!(out, "Obtaining JSON from switch...");
            match client.bm_get_config() {
                Ok(j) => {
                    let _ = writeln!(out, "Done");
                    j
                }
                Err(_) => {
                    let _ = writeln!(out, "Error when requesting JSON config from switch");
                    return Ok(ExitCode::from(1));
                }
            }
        }
    };
    let mut cli = Cli::new(&json).map_err(|e| e.to_string())?;
    // the client addresses the switch by the names of this program
    client.set_schema(Some(cli.schema().clone()));
    let _ = writeln!(out, "Control utility for runtime P4 table manipulation");
    let _ = out.flush();
    if std::io::stdin().is_terminal() {
        interactive(&mut cli, &mut client)
    } else {
        let failed = script(&mut cli, &mut client, std::io::stdin().lock(), &mut out)?;
        Ok(if failed {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        })
    }
}

/// Runs commands read from `input` as simple_switch_CLI does when its input is
/// piped (the prompt before every command, one more at the end); returns whether a
/// command failed.
pub fn script(
    cli: &mut Cli,
    api: &mut dyn Runtime,
    input: impl BufRead,
    out: &mut dyn Write,
) -> Result<bool, String> {
    let mut failed = false;
    for line in input.lines() {
        let line = line.map_err(|e| format!("reading commands: {e}"))?;
        let _ = write!(out, "{PROMPT}");
        let cmd = line.trim();
        if cmd.is_empty() || cmd.starts_with('#') {
            continue;
        }
        if cmd == "EOF" {
            let _ = writeln!(out);
            return Ok(failed);
        }
        match cli.execute(api, cmd) {
            Ok(text) => {
                let _ = write!(out, "{text}");
            }
            Err(e) => {
                failed = true;
                let _ = write!(out, "{}", e.printed());
            }
        }
        let _ = out.flush();
    }
    let _ = writeln!(out, "{PROMPT}");
    let _ = out.flush();
    Ok(failed)
}

fn history_path() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".p4jet_cli_history"))
}

fn interactive(cli: &mut Cli, api: &mut dyn Runtime) -> Result<ExitCode, String> {
    let mut rl: Editor<CliHelper, DefaultHistory> =
        Editor::new().map_err(|e| format!("terminal: {e}"))?;
    rl.set_helper(Some(CliHelper::new(cli.schema())));
    let history = history_path();
    if let Some(h) = &history {
        let _ = rl.load_history(h);
    }
    let mut out = std::io::stdout();
    loop {
        match rl.readline(PROMPT) {
            Ok(line) => {
                let cmd = line.trim();
                if cmd.is_empty() {
                    continue;
                }
                let _ = rl.add_history_entry(cmd);
                if cmd == "EOF" {
                    let _ = writeln!(out);
                    break;
                }
                match cli.execute(api, cmd) {
                    Ok(text) => {
                        let _ = write!(out, "{text}");
                    }
                    Err(e) => {
                        let _ = write!(out, "{}", e.printed());
                    }
                }
                let _ = out.flush();
                if let Some(h) = rl.helper_mut() {
                    h.update(cli.schema());
                }
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => {
                let _ = writeln!(out);
                break;
            }
            Err(e) => return Err(format!("terminal: {e}")),
        }
    }
    if let Some(h) = &history {
        let _ = rl.save_history(h);
    }
    Ok(ExitCode::SUCCESS)
}

/// What the first argument of a command names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arg1 {
    Table,
    Counter,
    Register,
    Meter,
    ActProf,
    ParseVSet,
    File,
    Nothing,
}

fn arg1_kind(cmd: &str) -> Arg1 {
    match cmd {
        "load_new_config_file" | "write_config_to_file" | "serialize_state" => Arg1::File,
        "show_tables" | "show_actions" | "show_pvs" => Arg1::Nothing,
        c if c.starts_with("table_") => Arg1::Table,
        c if c.starts_with("counter_") => Arg1::Counter,
        c if c.starts_with("register_") => Arg1::Register,
        c if c.starts_with("meter_") => Arg1::Meter,
        c if c.starts_with("act_prof_") => Arg1::ActProf,
        c if c.starts_with("pvs_") => Arg1::ParseVSet,
        _ => Arg1::Nothing,
    }
}

/// Commands whose second argument is an action of the table named first.
fn arg2_is_action(cmd: &str) -> bool {
    matches!(cmd, "table_add" | "table_set_default" | "table_modify")
}

/// Line completion for `p4jet cli`.
pub struct CliHelper {
    schema: Arc<Schema>,
    files: FilenameCompleter,
}

impl CliHelper {
    fn new(s: &Arc<Schema>) -> CliHelper {
        CliHelper {
            schema: s.clone(),
            files: FilenameCompleter::new(),
        }
    }

    fn update(&mut self, s: &Arc<Schema>) {
        self.schema = s.clone();
    }

    /// Candidates for the word being typed (`words` are the complete words before it).
    pub fn candidates(&self, words: &[&str], prefix: &str) -> Vec<String> {
        let p = &*self.schema;
        let names = |it: &mut dyn Iterator<Item = &String>| it.cloned().collect::<Vec<String>>();
        let names: Vec<String> = match words {
            [] => Cli::command_names().into_iter().map(String::from).collect(),
            [cmd] => match arg1_kind(cmd) {
                Arg1::Table => names(&mut p.tables.iter().map(|t| &t.name)),
                Arg1::Counter => names(&mut p.counters.iter().map(|t| &t.name)),
                Arg1::Register => names(&mut p.registers.iter().map(|t| &t.name)),
                Arg1::Meter => names(&mut p.meters.iter().map(|t| &t.name)),
                Arg1::ActProf => names(&mut p.profiles.iter().map(|t| &t.name)),
                Arg1::ParseVSet => names(&mut p.value_sets.iter().map(|t| &t.name)),
                Arg1::File | Arg1::Nothing => vec![],
            },
            [cmd, table] if arg2_is_action(cmd) => p
                .table_by_name(table)
                .or_else(|| {
                    // a unique dotted suffix names the table too
                    p.resolve(ObjectKind::Table, table)
                        .and_then(|n| p.table_by_name(n))
                })
                .and_then(|t| p.table(t))
                .map(|t| t.actions.iter().map(|a| p.action_name(*a)).collect())
                .unwrap_or_default(),
            _ => vec![],
        };
        // full names and their dotted suffixes (`IngressImpl.dmac`, `dmac`), as the
        // CLI accepts both
        let mut v: Vec<String> = names
            .iter()
            .flat_map(|n| {
                n.match_indices('.')
                    .map(|(i, _)| &n[i + 1..])
                    .chain(std::iter::once(n.as_str()))
            })
            .filter(|n| !n.is_empty() && n.starts_with(prefix))
            .map(String::from)
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

impl Completer for CliHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let head = &line[..pos];
        let start = head.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let words: Vec<&str> = head[..start].split_whitespace().collect();
        if words.len() == 1 && arg1_kind(words[0]) == Arg1::File {
            return self.files.complete(line, pos, ctx);
        }
        let c = self
            .candidates(&words, &head[start..])
            .into_iter()
            .map(|n| Pair {
                display: n.clone(),
                replacement: format!("{n} "),
            })
            .collect();
        Ok((start, c))
    }
}

impl Hinter for CliHelper {
    type Hint = String;
}

impl Highlighter for CliHelper {}

impl Validator for CliHelper {}

impl Helper for CliHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    fn helper() -> CliHelper {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/corpus/basic_l2/basic_l2.json"
        );
        let json = std::fs::read_to_string(path).unwrap_or_default();
        CliHelper::new(
            &Cli::new(&json)
                .map(|c| c.schema().clone())
                .unwrap_or_default(),
        )
    }

    #[test]
    fn completes_commands_tables_and_actions() {
        let h = helper();
        assert!(
            h.candidates(&[], "table_a")
                .contains(&"table_add".to_string())
        );
        let tables = h.candidates(&["table_add"], "");
        assert!(tables.iter().any(|t| t.ends_with("dmac")), "{tables:?}");
        let t = tables
            .iter()
            .find(|t| t.ends_with("dmac"))
            .cloned()
            .unwrap_or_default();
        let acts = h.candidates(&["table_add", &t], "");
        assert!(acts.iter().any(|a| a.ends_with("forward")), "{acts:?}");
        let short = h.candidates(&["table_add", "dmac"], "");
        assert_eq!(acts, short);
        assert!(h.candidates(&["table_add", &t, "x"], "").is_empty());
        assert_eq!(h.candidates(&["table_add"], "dm"), vec!["dmac".to_string()]);
        assert_eq!(
            h.candidates(&["table_add", "dmac"], "fo"),
            vec!["forward".to_string()]
        );
    }
}
