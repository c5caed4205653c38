//! Frames through every corpus program: valid by construction, mutated, truncated,
//! corpus STF packets mutated, random bytes, on random ports, with the program's own
//! table entries plus random ones, and table churn between batches. No panic, no
//! hang, every packet accounted for (nothing left pending), memory flat.

use std::path::Path;
use std::time::{Duration, Instant};

use p4jet_control::cli::Cli;
use p4jet_diff::generate::{EntryOptions, Pools, entries, mutate, random_frame, valid_frame};
use p4jet_runtime::Schema;
use p4jet_switch::{Switch, SwitchConfig};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::corpus::CorpusProgram;
use crate::harness::{Report, Watchdog, guarded, rss_kib, save_crash};

/// Serialises a batch (port u32, length u32, bytes) for a crash file.
fn encode_batch(batch: &[(u32, Vec<u8>)]) -> Vec<u8> {
    let mut out = vec![];
    for (p, f) in batch {
        out.extend_from_slice(&p.to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(f);
    }
    out
}

/// The batch of a crash file.
pub fn decode_batch(mut b: &[u8]) -> Vec<(u32, Vec<u8>)> {
    let mut out = vec![];
    while b.len() >= 8 {
        let p = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let n = u32::from_le_bytes([b[4], b[5], b[6], b[7]]) as usize;
        if b.len() < 8 + n {
            break;
        }
        out.push((p, b[8..8 + n].to_vec()));
        b = &b[8 + n..];
    }
    out
}

/// A switch loaded with the program, its corpus entries and random ones.
fn setup(p: &CorpusProgram, rng: &mut StdRng) -> Result<(Switch, Cli, Vec<String>), String> {
    let mut sw = Switch::new(&p.json, SwitchConfig::default())?;
    let schema = Schema::shared_from_json(&p.json).map_err(|e| e.to_string())?;
    let mut cli = Cli::from_schema(schema);
    let pools = Pools::new(&p.info, rng);
    let random = entries(&p.info, &pools, rng, &EntryOptions::default());
    for c in p.commands.iter().chain(&random) {
        let _ = cli.execute(&mut sw, c);
    }
    Ok((sw, cli, random))
}

/// Runs `frames` frames through each program of `programs` (split evenly).
pub fn campaign(
    programs: &[CorpusProgram],
    frames: u64,
    seed: u64,
    crashes: &Path,
    hang_limit: Duration,
) -> Report {
    let mut rep = Report {
        target: "frames".into(),
        unit: "frames",
        ..Report::default()
    };
    let dog = Watchdog::start("frames", crashes, hang_limit);
    let start = Instant::now();
    let per = frames / programs.len().max(1) as u64;
    let mut leftover = 0u64;
    for (pi, p) in programs.iter().enumerate() {
        let mut rng = StdRng::seed_from_u64(seed ^ (pi as u64).wrapping_mul(0x9E37_79B9));
        let Ok((mut sw, mut cli, churn)) = setup(p, &mut rng) else {
            rep.notes.push(format!("{}: does not load", p.name));
            continue;
        };
        let pools = Pools::new(&p.info, &mut rng);
        let base: Vec<Vec<u8>> = (0..1024)
            .map(|_| valid_frame(&p.info, &pools, &mut rng))
            .collect();
        let mut done = 0u64;
        let mut batch: Vec<(u32, Vec<u8>)> = Vec::with_capacity(64);
        let mut sent = 0u64;
        let mut warm = 0u64;
        while done < per {
            batch.clear();
            let n = 64.min(per - done) as usize;
            for _ in 0..n {
                let r = rng.gen_range(0..100);
                let f = if r < 35 {
                    base[rng.gen_range(0..base.len())].clone()
                } else if r < 65 {
                    mutate(&base[rng.gen_range(0..base.len())], &p.seeds, &mut rng)
                } else if r < 75 {
                    let b = &base[rng.gen_range(0..base.len())];
                    b[..rng.gen_range(0..=b.len())].to_vec()
                } else if r < 90 && !p.seeds.is_empty() {
                    mutate(&p.seeds[rng.gen_range(0..p.seeds.len())], &base, &mut rng)
                } else {
                    random_frame(&mut rng)
                };
                batch.push((rng.gen_range(0..8), f));
            }
            dog.case(&encode_batch(&batch));
            let r = guarded(|| {
                for (port, f) in &batch {
                    sw.inject(*port, f);
                }
                let mut out = 0u64;
                sw.run_until_idle(&mut |_, _| out += 1);
                (out, sw.worker.pending())
            });
            match r {
                Ok((out, pending)) => {
                    sent += out;
                    if pending != 0 {
                        let path = save_crash(
                            crashes,
                            &format!("frames-{}", p.name),
                            rep.panics.len(),
                            &encode_batch(&batch),
                        );
                        rep.panics.push(format!(
                            "{}: {pending} packet(s) left pending after run_until_idle ({})",
                            p.name,
                            path.display()
                        ));
                    }
                }
                Err(msg) => {
                    let path = save_crash(
                        crashes,
                        &format!("frames-{}", p.name),
                        rep.panics.len(),
                        &encode_batch(&batch),
                    );
                    rep.panics
                        .push(format!("{}: {msg} ({})", p.name, path.display()));
                    // the switch may be in any state: start again
                    match setup(p, &mut rng) {
                        Ok((s, c, _)) => {
                            sw = s;
                            cli = c;
                        }
                        Err(_) => break,
                    }
                }
            }
            // a controller: learning notifications taken and acknowledged, as p4jet run
            // publishes them and p4-utils acknowledges them (without acks the learning
            // filter keeps every distinct sample, in bmv2 as in p4jet)
            if rng.gen_range(0..16) == 0 {
                let _ = guarded(|| {
                    sw.take_digests();
                    sw.ack_digests();
                });
            }
            // table churn: now and then an entry goes or comes back
            if rng.gen_range(0..32) == 0 && !churn.is_empty() {
                let c = &churn[rng.gen_range(0..churn.len())];
                let _ = guarded(|| cli.execute(&mut sw, c));
                if let Some(t) = c
                    .strip_prefix("table_add ")
                    .and_then(|r| r.split_whitespace().next())
                {
                    let del = format!("table_delete {t} {}", rng.gen_range(0..8));
                    let _ = guarded(|| cli.execute(&mut sw, &del));
                }
            }
            done += n as u64;
            rep.cases += n as u64;
            if warm == 0 && done >= per / 10 {
                warm = rss_kib();
            }
        }
        // memory of this program's run: once warm (a tenth of its frames) and at the
        // end; the report keeps the program that grew most
        let end = rss_kib();
        if warm > 0
            && end.saturating_sub(warm) * 1000 / warm.max(1)
                >= rep.rss_end_kib.saturating_sub(rep.rss_warm_kib) * 1000 / rep.rss_warm_kib.max(1)
        {
            rep.rss_warm_kib = warm;
            rep.rss_end_kib = end;
        }
        leftover += sent;
    }
    rep.seconds = start.elapsed().as_secs_f64();
    rep.notes.push(format!("{leftover} frames sent out"));
    rep
}
