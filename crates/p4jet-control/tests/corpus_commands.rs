//! Every `*.commands` file of the corpus runs through the CLI without error, and every
//! corpus STF test passes with its control-plane statements going through the CLI.
#![allow(clippy::unwrap_used)]

mod common;

use common::{corpus_dir, corpus_json, corpus_programs, switch_for};
use p4jet_runtime::testing::Recorder;
use std::collections::BTreeMap;

use p4jet_control::cli::Cli;

#[test]
fn every_commands_file_runs_without_error() {
    let mut files = 0;
    let mut commands = 0;
    for program in corpus_programs() {
        let path = corpus_dir()
            .join(&program)
            .join(format!("{program}.commands"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let json = corpus_json(&program);
        let mut cli = Cli::new(&json).expect("JSON loads");
        let mut rt = Recorder::new(switch_for(&json));
        let outcome = cli.run_script(&mut rt, &text);
        let errors: Vec<String> = outcome.errors.iter().map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {:?}", path.display(), errors);
        // line by line on a fresh switch: every command reaches the switch
        let mut cli = Cli::new(&json).expect("JSON loads");
        let mut rt = Recorder::new(switch_for(&json));
        let mut n = 0;
        for line in text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            rt.take();
            cli.execute(&mut rt, line)
                .unwrap_or_else(|e| panic!("{program}: {line}: {}", e.printed()));
            assert!(!rt.calls.is_empty(), "{program}: {line} made no call");
            n += 1;
        }
        files += 1;
        commands += n;
    }
    assert!(files >= 20, "only {files} commands files found");
    assert!(commands > 100);
}

#[test]
fn every_corpus_json_loads() {
    let programs = corpus_programs();
    assert!(programs.len() >= 22);
    for program in programs {
        let cli = Cli::new(&corpus_json(&program)).unwrap_or_else(|e| panic!("{program}: {e}"));
        assert!(!cli.schema().tables.is_empty(), "{program}");
    }
}

/// Every corpus `.commands` file runs through the CLI on the switch without an error.
#[test]
fn corpus_command_files_run_through_the_cli_on_a_switch() {
    let dir = format!("{}/../../tests/corpus", env!("CARGO_MANIFEST_DIR"));
    let mut ran = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        let Some(name) = p.file_name().and_then(|n| n.to_str()).map(str::to_string) else {
            continue;
        };
        let cmds = p.join(format!("{name}.commands"));
        let Ok(text) = std::fs::read_to_string(&cmds) else {
            continue;
        };
        let json = std::fs::read_to_string(p.join(format!("{name}.json"))).unwrap();
        let mut sw = switch_for(&json);
        let mut cli = p4jet_control::cli::Cli::new(&json).unwrap();
        let outcome = cli.run_script(&mut sw, &text);
        assert!(!outcome.failed(), "{name}: {outcome:?}");
        ran += 1;
    }
    assert!(ran >= 20, "only {ran} command files found");
}

/// Runs one STF file (corpus extensions included) through the CLI and the switch, as the
/// corpus's strict runner did (ports 0..7 open). Returns the problems found.
fn run_stf(json: &str, text: &str) -> Vec<String> {
    use p4jet_control::stf::*;
    let program = p4jet_runtime::Schema::shared_from_json(json).unwrap();
    let stmts = match parse_stf(text, &program, &StfOptions { extensions: true }) {
        Ok(s) => s,
        Err(errs) => return errs.iter().map(|e| e.to_string()).collect(),
    };
    let mut sw = switch_for(json);
    let mut cli = p4jet_control::cli::Cli::from_schema(program);
    let mut actual: BTreeMap<u32, Vec<Vec<u8>>> = BTreeMap::new();
    let mut names: BTreeMap<String, i32> = BTreeMap::new();
    let mut problems = vec![];
    for s in &stmts {
        match &s.kind {
            StfKind::Cli {
                command,
                entry_name,
            } => match cli.execute(&mut sw, command) {
                Ok(out) => {
                    if let (Some(n), Some(h)) = (entry_name, added_entry_handle(&out)) {
                        names.insert(n.clone(), h);
                    }
                }
                Err(e) => problems.push(format!("line {}: `{command}`: {}", s.line, e.printed())),
            },
            StfKind::Packet { port, data } => {
                sw.inject(*port, data);
                sw.run_until_idle(&mut |p, f| actual.entry(p).or_default().push(f.to_vec()));
            }
            StfKind::CheckCounter(c) => {
                let idx = match &c.index {
                    CounterIndex::Number(n) => *n as i32,
                    CounterIndex::Entry(n) => match names.get(n) {
                        Some(h) => *h,
                        None => {
                            problems.push(format!("line {}: no entry named {n}", s.line));
                            continue;
                        }
                    },
                };
                let mut b = p4jet_thrift::Bmv2::new(&mut sw);
                let v = match &c.direct_table {
                    Some(t) => b.bm_mt_read_counter(t, idx).map_err(|e| e.to_string()),
                    None => b
                        .bm_counter_read(&c.counter, idx)
                        .map_err(|e| e.to_string()),
                };
                match v {
                    Ok(v) => {
                        let ok = match c.kind {
                            Some(CounterKind::Bytes) => c.op.holds(v.bytes, c.value),
                            Some(CounterKind::Packets) => c.op.holds(v.packets, c.value),
                            None => c.op.holds(v.packets, c.value) && c.op.holds(v.bytes, c.value),
                        };
                        if !ok {
                            problems.push(format!("line {}: counter {v:?}", s.line));
                        }
                    }
                    Err(e) => problems.push(format!("line {}: {e}", s.line)),
                }
            }
            _ => {}
        }
    }
    let exp = Expectations::from_statements(&stmts);
    let cmp = compare(&exp, &actual, CompareOptions { strict_ports: true });
    if !cmp.passed() {
        problems.push(cmp.to_string());
    }
    let digests: Vec<(i64, Vec<u8>)> = sw
        .digests
        .lock()
        .unwrap()
        .history
        .iter()
        .map(|d| (i64::from(d.list_id), d.sample.clone()))
        .collect();
    if !exp.digests.is_empty() {
        for p in compare_digests(&exp.digests, &digests) {
            problems.push(format!("digest: {p:?}"));
        }
    }
    problems
}

/// Every corpus STF test (plain and extension) passes with its control-plane statements
/// going through the CLI, the bmv2 services and the runtime model of a switch.
#[test]
fn corpus_stf_tests_pass_through_the_cli_and_the_runtime_model() {
    let dir = format!("{}/../../tests/corpus", env!("CARGO_MANIFEST_DIR"));
    let mut failures = vec![];
    let mut ran = 0;
    let mut progs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    progs.sort();
    for p in progs {
        let Some(name) = p.file_name().and_then(|n| n.to_str()).map(str::to_string) else {
            continue;
        };
        let Ok(json) = std::fs::read_to_string(p.join(format!("{name}.json"))) else {
            continue;
        };
        for sub in ["tests", "tests/ext"] {
            let Ok(rd) = std::fs::read_dir(p.join(sub)) else {
                continue;
            };
            let mut files: Vec<_> = rd.map(|e| e.unwrap().path()).collect();
            files.sort();
            for f in files {
                if f.extension().and_then(|e| e.to_str()) != Some("stf") {
                    continue;
                }
                let text = std::fs::read_to_string(&f).unwrap();
                let problems = run_stf(&json, &text);
                ran += 1;
                if !problems.is_empty() {
                    failures.push(format!("{}:\n  {}", f.display(), problems.join("\n  ")));
                }
            }
        }
    }
    assert!(ran >= 80, "only {ran} STF files found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The CLI on a remote switch — the runtime model over Thrift (`p4jet cli`: a
/// [`p4jet_thrift::ThriftClient`] as the runtime) — prints exactly what it prints on
/// the switch in memory: every line of every corpus `.commands` file, then a dump of
/// every table, the PRE and each learn list.
#[test]
fn the_cli_prints_the_same_on_a_remote_switch() {
    use std::sync::{Arc, Mutex};
    let mut lines = 0;
    for program in corpus_programs() {
        let path = corpus_dir()
            .join(&program)
            .join(format!("{program}.commands"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let json = corpus_json(&program);
        let mut local = switch_for(&json);
        let remote: p4jet_thrift::SharedRuntime = Arc::new(Mutex::new(switch_for(&json)));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let server =
            p4jet_thrift::ServerHandle::spawn(listener, remote, Default::default()).unwrap();
        let mut client = p4jet_thrift::ThriftClient::connect(server.local_addr()).unwrap();
        client.fetch_schema().unwrap();
        let mut cli = Cli::from_runtime(&mut client).unwrap();
        let mut local_cli = Cli::new(&json).unwrap();
        let printed = |r: Result<String, p4jet_control::cli::CliError>| match r {
            Ok(s) => s,
            Err(e) => format!("error: {}", e.printed()),
        };
        let schema = cli.schema().clone();
        let dumps = schema
            .tables
            .iter()
            .filter(|t| !t.name.starts_with("tbl_"))
            .map(|t| format!("table_dump {}", t.name))
            .chain(["mc_dump".to_string(), "show_ports".to_string()]);
        let script: Vec<String> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(String::from)
            .chain(dumps)
            .collect();
        for line in &script {
            let want = printed(local_cli.execute(&mut local, line));
            let got = printed(cli.execute(&mut client, line));
            assert_eq!(got, want, "{program}: {line}");
            lines += 1;
        }
        server.stop().unwrap();
    }
    assert!(lines > 200, "{lines}");
}
