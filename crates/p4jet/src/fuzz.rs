//! `p4jet fuzz`: the three engines side by side on random traffic.
//!
//! For each program, three switches load it, one per engine (`reference`: the plain
//! reading of the program; `interp`: the fused plan interpreted; `jit`: compiled).
//! They get the same control plane: the program's `.commands` file, random entries in
//! every table (random keys of each match kind, random actions and action data, action
//! profile members and selector groups), random defaults, multicast groups and mirror
//! sessions. Then the same frames, in batches of random sizes: the program's STF
//! packets, random frames, and mutations of both (bytes changed, truncated, extended,
//! EtherTypes and IP protocols set), on random ports, with the clock moving by random
//! steps. After every batch the frames each switch sent (port and bytes, in order) must
//! be equal; at the end of each program also the port counters, every counter cell,
//! every register cell and the digests sent.
//!
//! A difference stops the run with the program, the batch, the frames that went in and
//! what came out of each engine, and the command that reproduces it (the run is a
//! function of the seed). CI runs a bounded slice (`crates/p4jet/tests/fuzz.rs`); a long
//! run is `p4jet fuzz --packets 10000000`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use clap::Args;
use p4jet_engine::state::{EntryAction, EntryValue, McNode, MirrorSession, Op, OpResult, Pre};
use p4jet_engine::{Engine, EngineKind};
use p4jet_ir::{ActionCall, MatchKind, TableKind};
use p4jet_switch::{Switch, SwitchConfig};
use p4jet_tables::{FieldMatch, MatchKey};

/// `p4jet fuzz` options.
#[derive(Args, Debug)]
pub struct FuzzArgs {
    /// Programs (bmv2 JSON); default: every program of the corpus directory.
    pub programs: Vec<PathBuf>,
    /// The corpus directory (programs with their `.commands` and STF tests).
    #[arg(long = "corpus", default_value = "tests/corpus")]
    pub corpus: PathBuf,
    /// Frames in all, spread over the programs.
    #[arg(long = "packets", default_value_t = 100_000)]
    pub packets: u64,
    /// Random seed (the run is a function of it).
    #[arg(long = "seed", default_value_t = 1)]
    pub seed: u64,
    /// Most frames injected before the switches run (their batch is up to 64).
    #[arg(long = "batch-max", default_value_t = 80)]
    pub batch_max: usize,
    /// Random entries added to each table.
    #[arg(long = "entries", default_value_t = 48)]
    pub entries: usize,
}

/// A xorshift generator (the run must be reproducible from the seed alone).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// The engines compared, the reference first.
const ENGINES: [EngineKind; 3] = [EngineKind::Reference, EngineKind::Interp, EngineKind::Jit];

/// `p4jet fuzz`.
pub fn main(a: FuzzArgs) -> Result<ExitCode, String> {
    let programs = if a.programs.is_empty() {
        corpus_programs(&a.corpus)?
    } else {
        a.programs.clone()
    };
    if programs.is_empty() {
        return Err(format!("no programs in {}", a.corpus.display()));
    }
    let per = (a.packets / programs.len() as u64).max(1);
    let t0 = Instant::now();
    let mut total = 0u64;
    for (i, prog) in programs.iter().enumerate() {
        let seed = a.seed ^ (0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i as u64 + 1));
        match fuzz_program(prog, &a, seed.max(1), per) {
            Ok((n, out)) => {
                total += n;
                println!("ok   {} ({n} frames in, {out} out)", prog.display());
            }
            Err(report) => {
                println!("DIFF {}\n{report}", prog.display());
                println!(
                    "reproduce: p4jet fuzz {} --seed {} --packets {} --batch-max {} --entries {}",
                    prog.display(),
                    a.seed,
                    per,
                    a.batch_max,
                    a.entries
                );
                return Ok(ExitCode::from(1));
            }
        }
    }
    println!(
        "{} programs, {total} frames through 3 engines, no difference ({:.1} s)",
        programs.len(),
        t0.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// Every program of the corpus: `DIR/NAME/NAME.json` and `DIR/bench/*.json`.
fn corpus_programs(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = vec![];
    let rd = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for d in rd.flatten() {
        let p = d.path();
        if !p.is_dir() {
            continue;
        }
        let name = d.file_name().to_string_lossy().to_string();
        let json = p.join(format!("{name}.json"));
        if json.is_file() {
            out.push(json);
        }
        if name == "bench" {
            for f in std::fs::read_dir(&p).into_iter().flatten().flatten() {
                if f.path().extension().is_some_and(|x| x == "json") {
                    out.push(f.path());
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The three switches of one program, with their clocks.
struct Three {
    sw: Vec<Switch>,
    clocks: Vec<Arc<AtomicU64>>,
}

impl Three {
    fn apply(&mut self, op: &Op) -> Vec<OpResult> {
        self.sw.iter_mut().map(|s| s.apply(op.clone())).collect()
    }
}

/// Fuzzes one program with `n` frames; the frames in and out, or the report of a
/// difference.
fn fuzz_program(path: &Path, a: &FuzzArgs, seed: u64, n: u64) -> Result<(u64, u64), String> {
    let json = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut rng = Rng(seed);
    let mut three = Three {
        sw: vec![],
        clocks: vec![],
    };
    for engine in ENGINES {
        let clock = Arc::new(AtomicU64::new(1_000));
        let cfg = SwitchConfig {
            manual_clock: Some(clock.clone()),
            batch: 64,
            engine,
            ..SwitchConfig::default()
        };
        let sw = Switch::new(&json, cfg).map_err(|e| format!("loading ({engine}): {e}"))?;
        three.sw.push(sw);
        three.clocks.push(clock);
    }
    // the program's own commands, then random state
    let commands = commands_of(path);
    for sw in &mut three.sw {
        if let Some(c) = &commands {
            crate::run::apply_commands_quiet(sw, std::slice::from_ref(c))
                .map_err(|e| format!("commands: {e}"))?;
        }
    }
    let seeds = seed_frames(path);
    let observed = observe(&three.sw[0].engine, &seeds, &mut rng);
    random_state(&mut three, &mut rng, a.entries, &observed)?;
    let mut sent = 0u64;
    let mut out_frames = 0u64;
    let mut round = 0u64;
    while sent < n {
        round += 1;
        let k = 1 + rng.below(a.batch_max.max(1) as u64);
        let k = k.min(n - sent);
        let frames: Vec<(u32, Vec<u8>)> = (0..k).map(|_| frame(&mut rng, &seeds)).collect();
        let step = rng.below(50);
        let mut outs: Vec<Vec<(u32, Vec<u8>)>> = vec![];
        for (sw, clock) in three.sw.iter_mut().zip(&three.clocks) {
            clock.fetch_add(step, Ordering::Relaxed);
            for (port, f) in &frames {
                sw.inject(*port, f);
            }
            let mut out = vec![];
            sw.run_until_idle(&mut |p, d| out.push((p, d.to_vec())));
            outs.push(out);
        }
        out_frames += outs[0].len() as u64;
        if let Some(report) = compare_frames(&outs) {
            return Err(format!(
                "round {round}: frames differ\n{report}\ninput:\n{}",
                show_frames(&frames)
            ));
        }
        sent += k;
    }
    compare_state(&three)?;
    Ok((sent, out_frames))
}

/// The `.commands` file next to a program (`NAME/NAME.commands`; a benchmark
/// variant's: that of the program it scales up, whose tables it shares).
fn commands_of(path: &Path) -> Option<PathBuf> {
    let c = path.with_extension("commands");
    if c.is_file() {
        return Some(c);
    }
    let like = scaled(path)?;
    let c = path
        .parent()?
        .parent()?
        .join(like)
        .join(format!("{like}.commands"));
    c.is_file().then_some(c)
}

/// The corpus program a benchmark variant scales up (tests/corpus/bench/README.md).
fn scaled(path: &Path) -> Option<&'static str> {
    if path.parent()?.file_name().is_none_or(|d| d != "bench") {
        return None;
    }
    match path.file_stem()?.to_str()? {
        "l2_large" => Some("basic_l2"),
        "router_large" => Some("simple_router"),
        "acl_large" => Some("acl_firewall"),
        _ => None,
    }
}

/// Random entries, defaults, members and groups, multicast groups and mirror sessions.
fn random_state(
    three: &mut Three,
    rng: &mut Rng,
    per_table: usize,
    observed: &[p4jet_engine::Phv],
) -> Result<(), String> {
    let e: Arc<Engine> = three.sw[0].engine.clone();
    let p = &*e.prog;
    // multicast groups 1..=4 and mirror sessions 1..=4 to random ports
    let mut pre = Pre::default();
    for g in 1..=4u32 {
        let ports: Vec<u32> = {
            let mut v: Vec<u32> = (0..8).filter(|_| rng.chance(40)).collect();
            v.dedup();
            v
        };
        pre.nodes.insert(
            g,
            McNode {
                rid: rng.below(100) as u16,
                ports,
                lags: vec![],
                group: Some(g),
            },
        );
        pre.groups.insert(g, vec![g]);
    }
    three.apply(&Op::SetPre(pre));
    for id in 1..=4u32 {
        let session = MirrorSession {
            port: Some(rng.below(8) as u32),
            mgid: rng.chance(20).then_some(1),
            // some sessions truncate their clones (the same for every engine: the
            // worker cuts them, but the cut must fall on the same bytes)
            truncate: if rng.chance(25) {
                14 + rng.below(50) as u32
            } else {
                0
            },
            ..MirrorSession::default()
        };
        three.apply(&Op::SetMirror {
            id,
            session: Some(session),
        });
    }
    // profile members (one per action of a table that uses the profile) and groups
    let mut members: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let mut groups: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (pi, prof) in p.action_profiles.iter().enumerate() {
        let Some(t) = prof.tables.first().and_then(|t| p.tables.get(*t as usize)) else {
            continue;
        };
        for _ in 0..8 {
            let call = random_call(p, &t.actions, rng);
            let r = three.apply(&Op::AddMember {
                profile: pi as u32,
                id: None,
                call,
            });
            if let OpResult::Handle(h) = r[0] {
                members.entry(pi as u32).or_default().push(h);
            }
        }
        if prof.selector.is_some() {
            for _ in 0..2 {
                let r = three.apply(&Op::AddGroup {
                    profile: pi as u32,
                    id: None,
                });
                if let OpResult::Handle(g) = r[0] {
                    for m in members.get(&(pi as u32)).cloned().unwrap_or_default() {
                        if rng.chance(50) {
                            three.apply(&Op::AddToGroup {
                                profile: pi as u32,
                                member: m,
                                group: g,
                            });
                        }
                    }
                    groups.entry(pi as u32).or_default().push(g);
                }
            }
        }
    }
    for (ti, t) in p.tables.iter().enumerate() {
        let table = ti as u32;
        if t.const_entries.is_some() || t.actions.is_empty() {
            continue;
        }
        let prof = t.action_profile;
        let action = |rng: &mut Rng| -> Option<EntryAction> {
            match (t.kind, prof) {
                (TableKind::Simple, _) | (_, None) => {
                    Some(EntryAction::Direct(random_call(p, &t.actions, rng)))
                }
                (kind, Some(pi)) => {
                    let gs = groups.get(&pi).filter(|g| !g.is_empty());
                    match (kind, gs) {
                        (TableKind::IndirectWs, Some(g)) if rng.chance(40) => {
                            Some(EntryAction::Group(g[rng.below(g.len() as u64) as usize]))
                        }
                        _ => {
                            let ms = members.get(&pi)?;
                            Some(EntryAction::Member(ms[rng.below(ms.len() as u64) as usize]))
                        }
                    }
                }
            }
        };
        let ternary = t.keys.iter().any(|k| {
            matches!(
                k.kind,
                MatchKind::Ternary | MatchKind::Range | MatchKind::Optional
            )
        });
        for _ in 0..per_table {
            let Some(act) = action(rng) else { break };
            // half the keys from the headers of frames the switches will see
            let seen = (!observed.is_empty() && rng.chance(50))
                .then(|| &observed[rng.below(observed.len() as u64) as usize]);
            let key = MatchKey {
                fields: t
                    .keys
                    .iter()
                    .map(|k| {
                        let v = seen.and_then(|phv| key_value(p, k, phv));
                        random_match(k.kind, k.width, v, rng)
                    })
                    .collect(),
                priority: if ternary {
                    rng.below(1000) as i32 + 1
                } else {
                    -1
                },
            };
            let key = p4jet_engine::state::fix_valid_keys(&t.keys, key);
            let r = three.apply(&Op::AddEntry {
                table,
                key,
                value: EntryValue {
                    action: act,
                    timeout_ms: 0,
                },
            });
            if r.iter().any(|x| x != &r[0]) {
                return Err(format!(
                    "table {}: the engines' control states disagree: {r:?}",
                    t.name
                ));
            }
            if std::env::var_os("P4JET_FUZZ_VERBOSE").is_some()
                && !matches!(r[0], OpResult::Handle(_) | OpResult::Ok)
            {
                eprintln!("table {}: {:?}", t.name, r[0]);
            }
        }
        if !t.default_action_const && !t.default_entry_const && rng.chance(50) {
            let act = action(rng);
            three.apply(&Op::SetDefault { table, action: act });
        }
    }
    Ok(())
}

/// A random call of one of `actions`, its data masked to each parameter's width.
fn random_call(p: &p4jet_ir::Program, actions: &[u32], rng: &mut Rng) -> ActionCall {
    let a = actions[rng.below(actions.len() as u64) as usize];
    let act = &p.actions[a as usize];
    let mut data = vec![];
    for (_, w) in &act.params {
        let nb = w.div_ceil(8) as usize;
        let mut v = rng.bytes(nb);
        // small values now and then (ports, indexes that hit)
        if rng.chance(50) && nb > 0 {
            v.iter_mut().for_each(|b| *b = 0);
            v[nb - 1] = rng.below(8) as u8;
        }
        let extra = nb as u32 * 8 - w;
        if let Some(first) = v.first_mut()
            && extra > 0
        {
            *first &= 0xff >> extra;
        }
        data.extend(v);
    }
    ActionCall {
        action: a,
        data: data.into(),
    }
}

/// The PHVs of some frames parsed by `e` (keys to put in tables).
fn observe(e: &Engine, seeds: &[(u32, Vec<u8>)], rng: &mut Rng) -> Vec<p4jet_engine::Phv> {
    let Ok(cs) = e.new_control_state() else {
        return vec![];
    };
    let mut sc = p4jet_engine::Scratch::default();
    let mut out = vec![];
    for i in 0..64 {
        let (port, f) = match seeds.get(i) {
            Some(s) => s.clone(),
            None => frame(rng, seeds),
        };
        let mut ctx = Box::new(e.new_ctx(f.len() + 512));
        ctx.pkt.set(&f);
        ctx.arch.port = port;
        e.begin_ingress(&mut ctx, 0);
        let mut one = [ctx];
        e.parse_interp(&cs, &mut one, &mut sc);
        let [ctx] = one;
        out.push(ctx.phv);
    }
    out
}

/// Table key element `k`'s value in `phv` (big-endian, its width), when it is a field.
fn key_value(
    p: &p4jet_ir::Program,
    k: &p4jet_ir::TableKey,
    phv: &p4jet_engine::Phv,
) -> Option<Vec<u8>> {
    let p4jet_ir::KeySource::Field(p4jet_ir::FieldRef::Static(f)) = &k.source else {
        return None;
    };
    let loc = p.fields.get(*f as usize)?.loc;
    let v = phv.read_big(loc).to_bytes_be();
    let nb = k.width.div_ceil(8) as usize;
    let mut out = vec![0u8; nb.saturating_sub(v.len())];
    out.extend_from_slice(&v[v.len().saturating_sub(nb)..]);
    Some(out)
}

/// A random match of `kind` on a `width`-bit key element (built around `seen`, a value
/// a frame carries, when given).
fn random_match(kind: MatchKind, width: u32, seen: Option<Vec<u8>>, rng: &mut Rng) -> FieldMatch {
    let nb = width.div_ceil(8) as usize;
    let mask_to_width = |mut v: Vec<u8>| {
        let extra = nb as u32 * 8 - width;
        if let Some(first) = v.first_mut()
            && extra > 0
        {
            *first &= 0xff >> extra;
        }
        v
    };
    let value = |rng: &mut Rng| {
        if let Some(v) = &seen {
            return mask_to_width(v.clone());
        }
        let mut v = rng.bytes(nb);
        if rng.chance(40) {
            // values the frames carry: small numbers
            v.iter_mut().for_each(|b| *b = 0);
            if let Some(l) = v.last_mut() {
                *l = rng.below(20) as u8;
            }
        }
        mask_to_width(v)
    };
    match kind {
        MatchKind::Exact => FieldMatch::Exact(value(rng)),
        MatchKind::Valid => FieldMatch::Exact(vec![rng.below(2) as u8]),
        MatchKind::Lpm => {
            let prefix_len = rng.below(u64::from(width) + 1) as u32;
            let mut v = value(rng);
            // host bits zero
            for (i, b) in v.iter_mut().enumerate() {
                let lead = (nb as u32 * 8 - width) as usize;
                for bit in 0..8 {
                    let pos = i * 8 + bit;
                    if pos >= lead + prefix_len as usize {
                        *b &= !(0x80 >> bit);
                    }
                }
            }
            FieldMatch::Lpm {
                value: v,
                prefix_len,
            }
        }
        MatchKind::Ternary | MatchKind::Optional => {
            let mask = if rng.chance(20) {
                vec![0; nb]
            } else {
                mask_to_width(rng.bytes(nb))
            };
            let v: Vec<u8> = value(rng).iter().zip(&mask).map(|(a, m)| a & m).collect();
            FieldMatch::Ternary { value: v, mask }
        }
        MatchKind::Range => {
            let (a, b) = (value(rng), value(rng));
            let (low, high) = if a <= b { (a, b) } else { (b, a) };
            FieldMatch::Range { low, high }
        }
    }
}

/// The `packet` frames of the program's STF tests (a benchmark variant's: those of the
/// program it scales up).
fn seed_frames(path: &Path) -> Vec<(u32, Vec<u8>)> {
    let mut out = vec![];
    let Some(mut dir) = path.parent().map(Path::to_path_buf) else {
        return out;
    };
    if let (Some(like), Some(root)) = (scaled(path), dir.parent()) {
        dir = root.join(like);
    }
    let dir = dir.as_path();
    for sub in ["tests", "tests/ext"] {
        for f in std::fs::read_dir(dir.join(sub))
            .into_iter()
            .flatten()
            .flatten()
        {
            if f.path().extension().is_none_or(|x| x != "stf") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(f.path()) else {
                continue;
            };
            for line in text.lines() {
                let mut w = line.split_whitespace();
                if w.next() != Some("packet") {
                    continue;
                }
                let Some(port) = w.next().and_then(|p| p.parse::<u32>().ok()) else {
                    continue;
                };
                let hex: String = w.collect::<Vec<_>>().concat();
                if !hex.len().is_multiple_of(2) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    continue;
                }
                let bytes: Vec<u8> = (0..hex.len())
                    .step_by(2)
                    .filter_map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
                    .collect();
                out.push((port, bytes));
            }
        }
    }
    out
}

/// A random frame: a seed (STF packet) as is or mutated, or a random one.
fn frame(rng: &mut Rng, seeds: &[(u32, Vec<u8>)]) -> (u32, Vec<u8>) {
    let random_port = rng.below(8) as u32;
    let (port, mut f) = if !seeds.is_empty() && rng.chance(85) {
        let (p, f) = &seeds[rng.below(seeds.len() as u64) as usize];
        (if rng.chance(70) { *p } else { random_port }, f.clone())
    } else {
        (random_port, synthetic(rng))
    };
    match rng.below(10) {
        // as is
        0..=2 => {}
        // a few bytes changed
        3..=5 => {
            for _ in 0..1 + rng.below(4) {
                if !f.is_empty() {
                    let i = rng.below(f.len().min(96) as u64) as usize;
                    f[i] = rng.next() as u8;
                }
            }
        }
        // truncated
        6 => {
            let n = rng.below(f.len() as u64 + 1) as usize;
            f.truncate(n);
        }
        // extended
        7 => {
            let n = rng.below(64) as usize;
            f.extend(rng.bytes(n));
        }
        // a header type or protocol set
        8 => {
            let types: [[u8; 2]; 5] = [[8, 0], [0x86, 0xdd], [0x81, 0], [0x88, 0x47], [8, 6]];
            if f.len() >= 14 {
                let t = types[rng.below(5) as usize];
                f[12..14].copy_from_slice(&t);
            }
            if f.len() >= 24 {
                f[23] = [6u8, 17, 1, 47, 4][rng.below(5) as usize];
            }
        }
        // a field near the front set to a small value
        _ => {
            if f.len() > 2 {
                let i = rng.below(f.len().min(64) as u64 - 1) as usize;
                f[i] = 0;
                f[i + 1] = rng.below(16) as u8;
            }
        }
    }
    (port, f)
}

/// A random Ethernet frame, mostly IPv4 with TCP or UDP.
fn synthetic(rng: &mut Rng) -> Vec<u8> {
    let mut f = rng.bytes(12);
    if rng.chance(80) {
        f.extend([8, 0]);
        let total = 20 + 20 + rng.below(40) as u16;
        f.extend([0x45, 0]);
        f.extend(total.to_be_bytes());
        f.extend(rng.bytes(4));
        f.push(1 + rng.below(64) as u8);
        f.push(if rng.chance(50) { 6 } else { 17 });
        f.extend([0, 0]);
        f.extend(rng.bytes(8));
        f.extend(rng.bytes(total as usize - 20));
    } else {
        let n = 2 + rng.below(80) as usize;
        f.extend(rng.bytes(n));
    }
    f
}

/// The first difference between the engines' outputs, if any.
fn compare_frames(outs: &[Vec<(u32, Vec<u8>)>]) -> Option<String> {
    let base = &outs[0];
    for (k, o) in outs.iter().enumerate().skip(1) {
        if o != base {
            let i = base.iter().zip(o).position(|(a, b)| a != b);
            return Some(format!(
                "{} sent {} frames, {} sent {}; first difference at frame {}\n{}:\n{}{}:\n{}",
                ENGINES[0],
                base.len(),
                ENGINES[k],
                o.len(),
                i.map_or("(one is a prefix of the other)".to_string(), |i| i
                    .to_string()),
                ENGINES[0],
                show_frames(base),
                ENGINES[k],
                show_frames(o)
            ));
        }
    }
    None
}

fn show_frames(fs: &[(u32, Vec<u8>)]) -> String {
    let mut s = String::new();
    for (p, f) in fs.iter().take(40) {
        let hex: String = f.iter().map(|b| format!("{b:02x}")).collect();
        s.push_str(&format!("  port {p}: {hex}\n"));
    }
    if fs.len() > 40 {
        s.push_str(&format!("  ... {} more\n", fs.len() - 40));
    }
    s
}

/// Port counters, counters, registers and digests of the three switches.
fn compare_state(three: &Three) -> Result<(), String> {
    let snap = |sw: &Switch| -> Vec<String> {
        let mut v = vec![];
        v.push(format!("ports {:?}", sw.worker.core.ports));
        let ex = &sw.externs;
        for (i, c) in ex.counters.iter().enumerate() {
            let cells: Vec<(u64, u64)> = c.iter().map(|x| x.read()).collect();
            v.push(format!("counter {i} {cells:?}"));
        }
        for (i, c) in ex.direct_counters.iter().enumerate() {
            if let Some(c) = c {
                let cells: Vec<(u64, u64)> = c
                    .iter()
                    .map(|x| x.read())
                    .filter(|x| *x != (0, 0))
                    .collect();
                v.push(format!("direct counter {i} {cells:?}"));
            }
        }
        for (i, r) in ex.registers.iter().enumerate() {
            let cells: Vec<String> = (0..r.len().min(4096))
                .filter_map(|j| r.read(j).map(|x| x.to_string()))
                .collect();
            v.push(format!("register {i} {cells:?}"));
        }
        if let Ok(d) = sw.digests.lock() {
            v.push(format!("digests {:?}", d.history));
        }
        v
    };
    let base = snap(&three.sw[0]);
    for (k, sw) in three.sw.iter().enumerate().skip(1) {
        let o = snap(sw);
        if let Some((a, b)) = base.iter().zip(&o).find(|(a, b)| a != b) {
            return Err(format!(
                "state differs\n{}: {a}\n{}: {b}",
                ENGINES[0], ENGINES[k]
            ));
        }
    }
    Ok(())
}
