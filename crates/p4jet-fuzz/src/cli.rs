//! The command language (simple_switch_CLI syntax) against a switch: generated
//! commands, the same with tokens replaced, swapped, cut or duplicated, every command
//! name with random arguments, and garbage. Every line must give an answer or a clear
//! error, never a panic; frames keep flowing through the state the commands built.

use std::path::Path;
use std::time::{Duration, Instant};

use p4jet_control::cli::Cli;
use p4jet_diff::generate::{EntryOptions, Pools, entries, random_frame};
use p4jet_runtime::Schema;
use p4jet_switch::Switch;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::corpus::CorpusProgram;
use crate::harness::{Report, Watchdog, guarded, held_clock, rss_kib, save_crash};

/// Commands never generated: they run shell commands or write files.
const UNSAFE: &[&str] = &["shell", "write_config_to_file", "serialize_state"];

fn token(rng: &mut StdRng, names: &[String]) -> String {
    match rng.gen_range(0..14) {
        0 => String::new(),
        1 => "=>".into(),
        2 => ["&&&", "->", "/", ":", "::", ".", "|", "-", "--"][rng.gen_range(0..9)].into(),
        3 => format!("{}", rng.r#gen::<i64>()),
        4 => format!("0x{:x}", rng.r#gen::<u128>() >> rng.gen_range(0..128)),
        5 => format!("{}", rng.gen_range(-2i32..600)),
        6 => format!(
            "{}.{}.{}.{}",
            rng.gen_range(0..300),
            rng.r#gen::<u8>(),
            rng.r#gen::<u8>(),
            rng.r#gen::<u8>()
        ),
        7 => "00:11:22:33:44:55".into(),
        8 => "::1".into(),
        9 => format!("{}&&&{}", rng.gen_range(0..300), rng.gen_range(0..300)),
        10 => format!("{}->{}", rng.gen_range(0..300), rng.gen_range(0..300)),
        11 if !names.is_empty() => names[rng.gen_range(0..names.len())].clone(),
        12 => (0..rng.gen_range(1..12))
            .map(|_| rng.gen_range(0x21u8..0x7f) as char)
            .collect(),
        _ => format!("{}/{}", rng.gen_range(0..1u64 << 40), rng.gen_range(0..200)),
    }
}

fn mutate_line(line: &str, rng: &mut StdRng, names: &[String]) -> String {
    let mut t: Vec<String> = line.split_whitespace().map(String::from).collect();
    for _ in 0..rng.gen_range(1..=3) {
        let n = t.len();
        match rng.gen_range(0..6) {
            0 if n > 1 => {
                let i = rng.gen_range(1..n);
                t[i] = token(rng, names);
            }
            1 if n > 1 => {
                t.truncate(rng.gen_range(1..n));
            }
            2 => t.push(token(rng, names)),
            3 if n > 2 => {
                let (i, j) = (rng.gen_range(1..n), rng.gen_range(1..n));
                t.swap(i, j);
            }
            4 if n > 1 => {
                let i = rng.gen_range(1..n);
                let x = t[i].clone();
                t.insert(i, x);
            }
            _ => {
                let i = rng.gen_range(0..=n);
                t.insert(i, token(rng, names));
            }
        }
    }
    t.join(" ")
}

/// Runs `commands` command lines, spread over the programs.
pub fn campaign(
    programs: &[CorpusProgram],
    commands: u64,
    seed: u64,
    crashes: &Path,
    hang_limit: Duration,
) -> Report {
    let mut rep = Report {
        target: "cli".into(),
        unit: "commands",
        ..Report::default()
    };
    let dog = Watchdog::start("cli", crashes, hang_limit);
    let start = Instant::now();
    let per = commands / programs.len().max(1) as u64;
    let cmd_names: Vec<&str> = Cli::command_names()
        .into_iter()
        .filter(|c| !UNSAFE.contains(c))
        .collect();
    let (mut ok, mut err) = (0u64, 0u64);
    for (pi, p) in programs.iter().enumerate() {
        let mut rng = StdRng::seed_from_u64(seed ^ (pi as u64).wrapping_mul(0x51_7CC1));
        let Ok(mut sw) = Switch::new(&p.json, held_clock()) else {
            continue;
        };
        let Ok(schema) = Schema::shared_from_json(&p.json) else {
            continue;
        };
        let mut cli = Cli::from_schema(schema).sandboxed();
        let mut names: Vec<String> = vec![];
        for t in &p.info.tables {
            names.push(t.name.clone());
            names.extend(t.actions.iter().map(|a| a.name.clone()));
            if let Some((prof, _)) = &t.profile {
                names.push(prof.clone());
            }
        }
        names.extend(p.info.counters.iter().map(|c| c.0.clone()));
        names.extend(p.info.registers.iter().map(|r| r.0.clone()));
        let mut valid: Vec<String> = p.commands.clone();
        let mut done = 0u64;
        while done < per {
            if valid.len() < 16 || rng.gen_range(0..2000) == 0 {
                let pools = Pools::new(&p.info, &mut rng);
                valid = entries(&p.info, &pools, &mut rng, &EntryOptions::default());
                valid.extend(p.commands.iter().cloned());
            }
            let r = rng.gen_range(0..100);
            let line = if r < 40 && !valid.is_empty() {
                valid[rng.gen_range(0..valid.len())].clone()
            } else if r < 75 && !valid.is_empty() {
                mutate_line(&valid[rng.gen_range(0..valid.len())], &mut rng, &names)
            } else if r < 95 {
                let c = cmd_names[rng.gen_range(0..cmd_names.len())];
                let args: Vec<String> = (0..rng.gen_range(0..7))
                    .map(|_| token(&mut rng, &names))
                    .collect();
                format!("{c} {}", args.join(" "))
            } else {
                let b: Vec<u8> = (0..rng.gen_range(0..80)).map(|_| rng.r#gen()).collect();
                String::from_utf8_lossy(&b).into_owned()
            };
            if UNSAFE.iter().any(|u| line.trim_start().starts_with(u)) {
                continue;
            }
            dog.case(line.as_bytes());
            match guarded(|| cli.execute(&mut sw, &line)) {
                Ok(Ok(_)) => ok += 1,
                Ok(Err(e)) => {
                    err += 1;
                    if e.printed().trim().is_empty() {
                        rep.panics
                            .push(format!("{}: `{line}`: an empty error", p.name));
                    }
                }
                Err(msg) => {
                    let path = save_crash(crashes, "cli", rep.panics.len(), line.as_bytes());
                    rep.panics
                        .push(format!("{}: `{line}`: {msg} ({})", p.name, path.display()));
                }
            }
            // frames through whatever the commands built
            if rng.gen_range(0..64) == 0 {
                let frames: Vec<Vec<u8>> = (0..8)
                    .map(|_| {
                        if !p.seeds.is_empty() && rng.gen_bool(0.8) {
                            p.seeds[rng.gen_range(0..p.seeds.len())].clone()
                        } else {
                            random_frame(&mut rng)
                        }
                    })
                    .collect();
                let r = guarded(|| {
                    for (i, f) in frames.iter().enumerate() {
                        sw.inject(i as u32 % 8, f);
                    }
                    sw.run_until_idle(&mut |_, _| {});
                });
                if let Err(msg) = r {
                    rep.panics
                        .push(format!("{}: frames after `{line}`: {msg}", p.name));
                }
            }
            done += 1;
            rep.cases += 1;
            if rep.rss_warm_kib == 0 && rep.cases >= commands / 10 {
                rep.rss_warm_kib = rss_kib();
            }
        }
    }
    rep.rss_end_kib = rss_kib();
    rep.seconds = start.elapsed().as_secs_f64();
    rep.notes
        .push(format!("{ok} answered, {err} refused with an error"));
    rep
}
