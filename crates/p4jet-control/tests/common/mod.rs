//! The CLI's test environment: a switch in memory (manual clock, no ports) or a null
//! runtime, wrapped in the shared recorder (`p4jet_runtime::testing`), and corpus
//! helpers.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use p4jet_control::cli::{Cli, CliError};
use p4jet_runtime::schema::ObjectKind;
use p4jet_runtime::testing::{Call, Null, Recorder};
use p4jet_runtime::{
    ActionCall, ActionId, EntryAction, EntryHandle, EntryRef, FieldMatch, MatchKey, NewEntry,
    Runtime, Schema, TableId, Update,
};
use p4jet_switch::{Switch, SwitchConfig};

/// The copy of the corpus inside the workspace.
pub fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus")
}

/// Program names of the corpus (directories holding NAME/NAME.json).
pub fn corpus_programs() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(corpus_dir())
        .expect("tests/corpus exists")
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.path()
                .join(format!("{}.json", e.file_name().to_string_lossy()))
                .is_file()
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The JSON text of a corpus program.
pub fn corpus_json(program: &str) -> String {
    std::fs::read_to_string(corpus_dir().join(program).join(format!("{program}.json")))
        .expect("json")
}

/// A switch in memory for a program (clock held at 0, swap enabled).
pub fn switch_for(json: &str) -> Switch {
    let cfg = SwitchConfig {
        manual_clock: Some(Arc::new(AtomicU64::new(0))),
        batch: 1,
        enable_swap: true,
        ..SwitchConfig::default()
    };
    Switch::new(json, cfg).expect("corpus JSON loads")
}

/// A CLI and the runtime it drives, recorded.
pub struct Env<R> {
    pub cli: Cli,
    pub rt: Recorder<R>,
    pub schema: Arc<Schema>,
}

/// The CLI against a real switch running `program`.
pub fn on_switch(program: &str) -> Env<Switch> {
    let json = corpus_json(program);
    let cli = Cli::new(&json).expect("corpus JSON loads");
    let schema = cli.schema().clone();
    Env {
        cli,
        rt: Recorder::new(switch_for(&json)),
        schema,
    }
}

/// The CLI against a runtime that accepts every write and answers empty reads (for
/// what a command asks, whatever the state).
pub fn on_null(program: &str) -> Env<Null> {
    let cli = Cli::new(&corpus_json(program)).expect("corpus JSON loads");
    let schema = cli.schema().clone();
    Env {
        rt: Recorder::new(Null::new(Some(schema.clone()))),
        cli,
        schema,
    }
}

impl<R: Runtime> Env<R> {
    /// Runs a command that must succeed; its output.
    pub fn ok(&mut self, line: &str) -> String {
        match self.cli.execute(&mut self.rt, line) {
            Ok(out) => out,
            Err(e) => panic!("{line}: unexpected error: {}", e.printed()),
        }
    }

    /// Runs a command that must fail.
    pub fn err(&mut self, line: &str) -> CliError {
        self.cli.execute(&mut self.rt, line).expect_err(line)
    }

    /// The updates written since the last take (and forgets every call).
    pub fn take(&mut self) -> Vec<Update> {
        self.rt.take_updates()
    }

    /// Every call since the last take, reads as `name(args)`, writes as
    /// `write(n updates)` (and forgets them).
    pub fn calls(&mut self) -> Vec<String> {
        self.rt
            .take()
            .into_iter()
            .map(|c| match c {
                Call::Other(s) => s,
                Call::Write(u, _) => format!("write({} updates)", u.len()),
                Call::SetPipeline(_) => "set_pipeline".into(),
            })
            .collect()
    }

    /// A table by its full name.
    pub fn t(&self, name: &str) -> TableId {
        self.schema.table_by_name(name).expect(name)
    }

    /// The action `name` (full name) of table `table`.
    pub fn a(&self, table: &str, name: &str) -> ActionId {
        let t = self.schema.table(self.t(table)).expect(table);
        t.action_named(&self.schema, name).expect(name)
    }

    /// The action `name` of the tables using profile `profile`.
    pub fn pa(&self, profile: &str, name: &str) -> ActionId {
        let p = self
            .schema
            .profile(self.schema.profile_by_name(profile).expect(profile))
            .expect(profile);
        p.action_named(&self.schema, name).expect(name)
    }

    /// The id of a named object of the schema.
    pub fn id(&self, kind: ObjectKind, name: &str) -> u32 {
        self.schema.index_of(kind, name).expect(name)
    }

    /// `table_add`'s update.
    pub fn add(
        &self,
        table: &str,
        key: Vec<FieldMatch>,
        action: &str,
        args: Vec<Vec<u8>>,
        priority: i32,
    ) -> Update {
        Update::AddEntry {
            table: self.t(table),
            entry: NewEntry::new(
                MatchKey::with_priority(key, priority),
                EntryAction::Direct(ActionCall::new(self.a(table, action), args)),
            ),
        }
    }

    /// An indirect entry's update.
    pub fn add_indirect(
        &self,
        table: &str,
        key: Vec<FieldMatch>,
        action: EntryAction,
        priority: i32,
    ) -> Update {
        Update::AddEntry {
            table: self.t(table),
            entry: NewEntry::new(MatchKey::with_priority(key, priority), action),
        }
    }
}

/// An entry by handle.
pub fn h(n: u32) -> EntryRef {
    EntryRef::Handle(EntryHandle(n))
}

pub fn ex(b: &[u8]) -> FieldMatch {
    FieldMatch::Exact(b.to_vec())
}

pub fn lpm(b: &[u8], l: u32) -> FieldMatch {
    FieldMatch::Lpm {
        value: b.to_vec(),
        prefix_len: l,
    }
}

pub fn tern(b: &[u8], m: &[u8]) -> FieldMatch {
    FieldMatch::Ternary {
        value: b.to_vec(),
        mask: m.to_vec(),
    }
}

pub fn range(a: &[u8], b: &[u8]) -> FieldMatch {
    FieldMatch::Range {
        low: a.to_vec(),
        high: b.to_vec(),
    }
}

/// Runs a command that must fail before calling anything; returns the error line.
pub fn rejected(cli: &mut Cli, line: &str) -> String {
    let mut rt = Recorder::new(Null::new(Some(cli.schema().clone())));
    let e = cli.execute(&mut rt, line).expect_err(line);
    assert!(
        rt.calls.is_empty(),
        "{line}: malformed command made calls {:?}",
        rt.calls
    );
    assert!(
        !matches!(e.kind, p4jet_control::cli::CliErrorKind::Api { .. }),
        "{line}: {e}"
    );
    e.to_string()
}
