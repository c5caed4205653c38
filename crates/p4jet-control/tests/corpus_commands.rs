//! Every `*.commands` file of the corpus runs through the CLI without error.

mod common;

use common::{MockApi, corpus_dir, corpus_json, corpus_programs};
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
        let mut cli = Cli::new(&corpus_json(&program)).expect("JSON loads");
        let mut api = MockApi::new();
        let outcome = cli.run_script(&mut api, &text);
        let errors: Vec<String> = outcome.errors.iter().map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {:?}", path.display(), errors);
        let n = text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.trim().starts_with('#'))
            .count();
        assert_eq!(api.calls.len(), n, "{program}: one call per command");
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
        assert!(!cli.program().tables.is_empty(), "{program}");
    }
}
