//! `p4jet bench --suite`: the MACSAD use cases (L2, IPv4, IPv6, VXLAN gateway, BNG)
//! measured over table sizes, frame sizes, batch sizes (with the model's `auto`), queue
//! sizes and workers, next to the performance model's prediction; writes `suite.json` and
//! a self-contained `index.html` with SVG plots.
//!
//! The suite calibrates the model first, in the same run (unless `--profile` names a
//! profile), so that predictions and measurements share the machine's state. Measured
//! figures are CPU ns per packet of the forwarding thread (what a core costs, steadier
//! than wall time on a shared machine) and wall Mpps; ratios are measured/predicted.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use p4jet_gen::{FrameSize, GenOptions, UseCase, Variant};
use p4jet_switch::SwitchConfig;
use serde_json::{Value, json};

use crate::bench::{BenchArgs, Setup, measure_parallel};
use crate::model::{self, BatchArg, Features, Profile};
use crate::report::{Plot, Section, Series};
use crate::run::Mode;

/// A use case of the suite.
struct Case {
    name: &'static str,
    usecase: UseCase,
    variant: Variant,
    /// Main-table entries measured (the middle one is used for the other sweeps).
    sizes: Vec<usize>,
}

fn cases(quick: bool) -> Vec<Case> {
    let s = |full: &[usize], q: &[usize]| if quick { q.to_vec() } else { full.to_vec() };
    vec![
        Case {
            name: "L2 (basic_l2 / l2_large)",
            usecase: UseCase::L2,
            variant: Variant::Large,
            sizes: s(&[100, 10_000, 1_000_000], &[100, 1000]),
        },
        Case {
            name: "IPv4 (router_large)",
            usecase: UseCase::Ipv4,
            variant: Variant::Large,
            sizes: s(&[100, 10_000, 1_000_000], &[100, 1000]),
        },
        Case {
            name: "IPv6 (ipv6_router)",
            usecase: UseCase::Ipv6,
            variant: Variant::Base,
            sizes: s(&[100, 300, 1000], &[100]),
        },
        Case {
            name: "VXLAN gateway (in and out)",
            usecase: UseCase::Vxlan,
            variant: Variant::Base,
            sizes: s(&[100, 300, 1000], &[100]),
        },
        Case {
            name: "BNG (up and down)",
            usecase: UseCase::Bng,
            variant: Variant::Base,
            sizes: s(&[100, 1000, 4000], &[100]),
        },
    ]
}

/// The program of a use case: relative to the current directory, else to the source tree.
fn program_path(rel: &str) -> PathBuf {
    let here = PathBuf::from(rel);
    if here.exists() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

struct Point {
    ns_cpu: f64,
    pps: f64,
    lat_mean_us: f64,
    lat_p99_us: f64,
    cdf: Vec<(f64, f64)>,
    predicted: model::Prediction,
    batch: usize,
    sub_batch: usize,
}

struct Runner<'a> {
    profile: &'a Profile,
    secs: f64,
    packets: usize,
    engine: p4jet_engine::EngineKind,
    done: usize,
    total: usize,
}

impl Runner<'_> {
    fn progress(&mut self, what: &str) {
        self.done += 1;
        let w = 30;
        let filled = (self.done * w / self.total.max(1)).min(w);
        eprint!(
            "\r[{}{}] {}/{} {what:<50}",
            "#".repeat(filled),
            ".".repeat(w - filled),
            self.done,
            self.total
        );
        let _ = std::io::stderr().flush();
    }

    /// Generates, loads and measures one configuration.
    #[allow(clippy::too_many_arguments)]
    fn point(
        &mut self,
        c: &Case,
        entries: usize,
        size: FrameSize,
        batch: BatchArg,
        workers: usize,
        queue: Option<usize>,
        what: &str,
    ) -> Result<Point, String> {
        self.progress(&format!("{} {what}", c.usecase.name()));
        let opts = GenOptions {
            entries,
            flows: entries.clamp(1, 16_384),
            size,
            packets: self.packets,
            variant: c.variant,
            ..GenOptions::default()
        };
        let g = p4jet_gen::generate(c.usecase, &opts)?;
        let rel = c.usecase.program(c.variant)?;
        let path = program_path(rel);
        let json =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let bytes =
            g.frames.iter().map(|f| f.len()).sum::<usize>() as f64 / g.frames.len().max(1) as f64;
        let cfg = SwitchConfig {
            engine: self.engine,
            ..SwitchConfig::default()
        };
        let sw = model::load_switch(&json, cfg.clone(), &g.commands)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let paths = crate::paths::PathStats::measure(
            &json,
            |s| model::apply_commands(s, &g.commands),
            &g.frames,
            p4jet_gen::TRACE_PORT,
            crate::paths::SAMPLE,
        )
        .map_err(|e| format!("{}: {e}", path.display()))?;
        let f = Features::of(
            &sw,
            Some(self.profile),
            bytes,
            Some(model::trace_flows(&g.frames)),
            Some(&paths),
        );
        let pred = model::predict(&f, self.profile, batch, queue);
        let sw = if pred.batch != cfg.batch || pred.sub_batch != cfg.sub_batch {
            model::load_switch(
                &json,
                SwitchConfig {
                    batch: pred.batch,
                    sub_batch: pred.sub_batch,
                    ..cfg
                },
                &g.commands,
            )?
        } else {
            sw
        };
        let setup = Setup {
            port: p4jet_gen::TRACE_PORT,
            batch: pred.batch,
            secs: self.secs,
            queue: queue.unwrap_or(pred.batch),
            progress: false,
            stages: false,
        };
        let m = measure_parallel(&sw, &g.frames, &setup, workers, Mode::Rtc, workers > 1);
        let h = &m.latency;
        let cdf = (1..=99)
            .map(|q| {
                (
                    h.quantile_ns(q as f64 / 100.0) as f64 / 1000.0,
                    q as f64 / 100.0,
                )
            })
            .collect();
        Ok(Point {
            ns_cpu: m.cpu_per_packet(),
            pps: m.pps(),
            lat_mean_us: h.mean_ns() / 1000.0,
            lat_p99_us: h.quantile_ns(0.99) as f64 / 1000.0,
            cdf,
            batch: pred.batch,
            sub_batch: pred.sub_batch,
            predicted: pred,
        })
    }
}

fn point_json(p: &Point) -> Value {
    json!({
        "batch": p.batch,
        "sub_batch": p.sub_batch,
        "measured_cpu_ns_per_packet": p.ns_cpu,
        "measured_mpps_per_core": 1000.0 / p.ns_cpu.max(1e-9),
        "measured_wall_mpps": p.pps / 1e6,
        "measured_latency_mean_us": p.lat_mean_us,
        "measured_latency_p99_us": p.lat_p99_us,
        "predicted": p.predicted,
        "ratio_measured_to_predicted": p.ns_cpu / p.predicted.ns_per_packet.max(1e-9),
        "latency_ratio_measured_to_predicted": p.lat_mean_us / p.predicted.latency_mean_us.max(1e-9),
    })
}

/// Runs the suite and writes `DIR/suite.json` and `DIR/index.html`.
pub fn main(a: &BenchArgs) -> Result<ExitCode, String> {
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("p4jet-report"));
    let quick = a.quick;
    let secs = if quick {
        a.seconds.min(0.1)
    } else {
        a.seconds.min(1.0)
    };
    let profile = match &a.model_profile {
        Some(p) => model::load_profile(p)?,
        None => {
            eprintln!("p4jet bench --suite: calibrating the model first (same run) ...");
            model::calibrate(a.engine, if quick { 0.05 } else { 0.5 }, quick, !quick)?
        }
    };
    let data = run(&profile, secs, quick, a.engine, a.workers)?;
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let jpath = out.join("suite.json");
    std::fs::write(
        &jpath,
        serde_json::to_string_pretty(&data).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("{}: {e}", jpath.display()))?;
    let hpath = out.join("index.html");
    std::fs::write(&hpath, render(&data)).map_err(|e| format!("{}: {e}", hpath.display()))?;
    eprintln!();
    print_summary(&data);
    println!("wrote {} and {}", jpath.display(), hpath.display());
    Ok(ExitCode::SUCCESS)
}

/// Runs every point; the JSON of the results.
pub fn run(
    profile: &Profile,
    secs: f64,
    quick: bool,
    engine: p4jet_engine::EngineKind,
    workers_arg: usize,
) -> Result<Value, String> {
    let cs = cases(quick);
    let frames: Vec<FrameSize> = if quick {
        vec![
            FrameSize::Fixed(64),
            FrameSize::Fixed(1518),
            FrameSize::imix(),
        ]
    } else {
        vec![
            FrameSize::Fixed(64),
            FrameSize::Fixed(256),
            FrameSize::Fixed(512),
            FrameSize::Fixed(1024),
            FrameSize::Fixed(1518),
            FrameSize::imix(),
        ]
    };
    let batches: Vec<usize> = if quick {
        vec![8, 32]
    } else {
        vec![4, 8, 16, 32, 64, 128, 256]
    };
    let queues: Vec<usize> = if quick {
        vec![32, 256]
    } else {
        vec![32, 128, 512, 2048]
    };
    let max_workers = if quick {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .max(workers_arg)
    };
    let total = cs.iter().map(|c| c.sizes.len()).sum::<usize>()
        + cs.len() * (frames.len() + batches.len() + 1 + queues.len() + max_workers);
    let mut r = Runner {
        profile,
        secs,
        packets: if quick { 2048 } else { 16_384 },
        engine,
        done: 0,
        total,
    };
    let load0 = crate::bench::load_average();
    let mut out = vec![];
    for c in &cs {
        let mid = c.sizes[c.sizes.len() / 2];
        let b32 = BatchArg::Fixed(32);
        let mut sizes = vec![];
        let mut cdf = vec![];
        for &n in &c.sizes {
            let p = r.point(
                c,
                n,
                FrameSize::Fixed(64),
                b32,
                1,
                None,
                &format!("{n} entries"),
            )?;
            if n == mid {
                cdf = p.cdf.clone();
            }
            let mut j = point_json(&p);
            j["entries"] = json!(n);
            sizes.push(j);
        }
        let mut pkts = vec![];
        for fs in &frames {
            let label = match fs {
                FrameSize::Fixed(n) => n.to_string(),
                FrameSize::Mix(_) => "imix".into(),
            };
            let p = r.point(c, mid, fs.clone(), b32, 1, None, &format!("{label} B"))?;
            let mut j = point_json(&p);
            j["frame"] = json!(label);
            j["frame_bytes"] = json!(p.predicted.frame_bytes);
            pkts.push(j);
        }
        let mut bs = vec![];
        for &b in &batches {
            let p = r.point(
                c,
                mid,
                FrameSize::Fixed(64),
                BatchArg::Fixed(b),
                1,
                None,
                &format!("batch {b}"),
            )?;
            bs.push(point_json(&p));
        }
        let p = r.point(
            c,
            mid,
            FrameSize::Fixed(64),
            BatchArg::Auto,
            1,
            None,
            "batch auto",
        )?;
        let auto = point_json(&p);
        let best = bs
            .iter()
            .filter_map(|j| {
                j["measured_cpu_ns_per_packet"]
                    .as_f64()
                    .map(|ns| (ns, j["batch"].clone()))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0));
        let auto_vs_best = best.as_ref().map(|(ns, b)| {
            json!({
                "best_fixed_batch": b,
                "best_fixed_cpu_ns_per_packet": ns,
                "auto_cpu_ns_per_packet": p.ns_cpu,
                "auto_throughput_over_best": ns / p.ns_cpu.max(1e-9),
            })
        });
        let mut qs = vec![];
        for &q in &queues {
            let p = r.point(
                c,
                mid,
                FrameSize::Fixed(64),
                b32,
                1,
                Some(q),
                &format!("queue {q}"),
            )?;
            let mut j = point_json(&p);
            j["queue"] = json!(q);
            qs.push(j);
        }
        let mut ws = vec![];
        for w in 1..=max_workers {
            let p = r.point(
                c,
                mid,
                FrameSize::Fixed(64),
                b32,
                w,
                None,
                &format!("{w} workers"),
            )?;
            let mut j = point_json(&p);
            j["workers"] = json!(w);
            ws.push(j);
        }
        out.push(json!({
            "name": c.name,
            "usecase": c.usecase.name(),
            "program": c.usecase.program(c.variant)?,
            "middle_entries": mid,
            "table_sizes": sizes,
            "frame_sizes": pkts,
            "batches": bs,
            "auto": auto,
            "auto_vs_best": auto_vs_best,
            "queues": qs,
            "workers": ws,
            "latency_cdf_us": cdf,
        }));
    }
    let load1 = crate::bench::load_average();
    Ok(json!({
        "engine": engine.name(),
        "quick": quick,
        "seconds_per_point": secs,
        "load_average_start": load0,
        "load_average_end": load1,
        "profile": profile,
        "usecases": out,
    }))
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or(f64::NAN)
}

fn series(name: &str, rows: &Value, x: &str, y: impl Fn(&Value) -> f64) -> Series {
    Series {
        name: name.into(),
        points: rows
            .as_array()
            .map(|a| a.iter().map(|r| (f(r, x), y(r))).collect())
            .unwrap_or_default(),
    }
}

fn pred_ns(r: &Value) -> f64 {
    r["predicted"]["ns_per_packet"].as_f64().unwrap_or(f64::NAN)
}

/// The HTML report of a suite's JSON.
pub fn render(d: &Value) -> String {
    let mut secs = vec![];
    let empty = vec![];
    let ucs = d["usecases"].as_array().unwrap_or(&empty);
    // validation table and predicted-vs-measured scatter
    let mut table = vec![vec![
        "use case".to_string(),
        "entries".into(),
        "predicted ns/pkt".into(),
        "measured ns/pkt (CPU)".into(),
        "measured / predicted".into(),
        "binds".into(),
        "dominant stage".into(),
        "latency predicted / measured (us)".into(),
    ]];
    let mut scatter = vec![];
    for u in ucs {
        let mut s = Series {
            name: u["usecase"].as_str().unwrap_or("?").into(),
            points: vec![],
        };
        for r in u["table_sizes"].as_array().unwrap_or(&empty) {
            let (p, m) = (pred_ns(r), f(r, "measured_cpu_ns_per_packet"));
            s.points.push((1000.0 / p, 1000.0 / m));
            table.push(vec![
                u["usecase"].as_str().unwrap_or("?").into(),
                r["entries"].to_string(),
                format!("{p:.1}"),
                format!("{m:.1}"),
                format!("{:.2}", m / p),
                r["predicted"]["binding"].as_str().unwrap_or("").into(),
                r["predicted"]["dominant_stage"]
                    .as_str()
                    .unwrap_or("")
                    .into(),
                format!(
                    "{:.2} / {:.2}",
                    r["predicted"]["latency_mean_us"]
                        .as_f64()
                        .unwrap_or(f64::NAN),
                    f(r, "measured_latency_mean_us")
                ),
            ]);
        }
        scatter.push(s);
    }
    secs.push(Section {
        heading: "Predicted against measured".into(),
        text: "One worker, 64-byte frames, batch 32. Mpps per core = 1000 / CPU ns per packet of the forwarding thread; the dashed line is y = x.".into(),
        plots: vec![Plot {
            title: "Mpps per core: measured against predicted".into(),
            x_label: "predicted Mpps per core".into(),
            y_label: "measured Mpps per core".into(),
            log_x: false,
            scatter: true,
            diagonal: true,
            series: scatter,
        }],
        table,
    });
    let mpps = |r: &Value| 1000.0 / f(r, "measured_cpu_ns_per_packet");
    let pmpps = |r: &Value| 1000.0 / pred_ns(r);
    let plot = |title: &str, xl: &str, yl: &str, log_x: bool, series: Vec<Series>| Plot {
        title: title.into(),
        x_label: xl.into(),
        y_label: yl.into(),
        log_x,
        scatter: false,
        diagonal: false,
        series,
    };
    let all = |key: &str, x: &str, y: &dyn Fn(&Value) -> f64| -> Vec<Series> {
        ucs.iter()
            .map(|u| series(u["usecase"].as_str().unwrap_or("?"), &u[key], x, y))
            .collect()
    };
    let mut ts = all("table_sizes", "entries", &mpps);
    ts.extend(ucs.iter().map(|u| {
        series(
            &format!("{} (model)", u["usecase"].as_str().unwrap_or("?")),
            &u["table_sizes"],
            "entries",
            pmpps,
        )
    }));
    secs.push(Section {
        heading: "Throughput against table size".into(),
        text: "Main-table entries (log scale); traffic hits entries drawn uniformly (up to 16,384 flows).".into(),
        plots: vec![plot("Mpps per core against entries", "entries", "Mpps per core", true, ts)],
        table: vec![],
    });
    secs.push(Section {
        heading: "Throughput against frame size".into(),
        text: "Middle table size; IMIX (64:7, 594:4, 1514:1) is plotted at its average size."
            .into(),
        plots: vec![
            plot(
                "Mpps per core against frame bytes",
                "frame bytes",
                "Mpps per core",
                false,
                all("frame_sizes", "frame_bytes", &mpps),
            ),
            plot(
                "Gbit/s per core against frame bytes",
                "frame bytes",
                "Gbit/s per core",
                false,
                all("frame_sizes", "frame_bytes", &|r| {
                    mpps(r) * f(r, "frame_bytes") * 8.0 / 1000.0
                }),
            ),
        ],
        table: vec![],
    });
    let mut auto_table = vec![vec![
        "use case".to_string(),
        "auto batch / sub-batch".into(),
        "auto ns/pkt".into(),
        "best fixed batch".into(),
        "best ns/pkt".into(),
        "auto throughput / best".into(),
    ]];
    for u in ucs {
        let a = &u["auto_vs_best"];
        auto_table.push(vec![
            u["usecase"].as_str().unwrap_or("?").into(),
            format!("{} / {}", u["auto"]["batch"], u["auto"]["sub_batch"]),
            format!("{:.1}", f(a, "auto_cpu_ns_per_packet")),
            a["best_fixed_batch"].to_string(),
            format!("{:.1}", f(a, "best_fixed_cpu_ns_per_packet")),
            format!("{:.3}", f(a, "auto_throughput_over_best")),
        ]);
    }
    secs.push(Section {
        heading: "Batch size, and --batch auto".into(),
        text: "Middle table size, 64-byte frames, the queue one batch. The table compares the model's choice with the best fixed batch of the sweep.".into(),
        plots: vec![plot("Mpps per core against batch", "packets per batch", "Mpps per core", true, all("batches", "batch", &mpps))],
        table: auto_table,
    });
    secs.push(Section {
        heading: "Latency".into(),
        text: "Injection to transmission, per packet, with one batch queued (CDF at the middle table size) and against the queue in front of the worker.".into(),
        plots: vec![
            Plot {
                title: "Latency CDF".into(),
                x_label: "latency (us)".into(),
                y_label: "fraction of packets".into(),
                log_x: false,
                scatter: false,
                diagonal: false,
                series: ucs
                    .iter()
                    .map(|u| Series {
                        name: u["usecase"].as_str().unwrap_or("?").into(),
                        points: u["latency_cdf_us"]
                            .as_array()
                            .map(|a| {
                                a.iter()
                                    .filter_map(|p| Some((p[0].as_f64()?, p[1].as_f64()?)))
                                    .collect()
                            })
                            .unwrap_or_default(),
                    })
                    .collect(),
            },
            plot("Mean latency against queue size", "packets queued", "mean latency (us)", true, all("queues", "queue", &|r| f(r, "measured_latency_mean_us"))),
            plot("Throughput against queue size", "packets queued", "Mpps per core", true, all("queues", "queue", &mpps)),
        ],
        table: vec![],
    });
    secs.push(Section {
        heading: "Workers".into(),
        text: "Run-to-completion workers pinned to CPUs, the trace spread by flow hash; wall-clock Mpps of all workers together.".into(),
        plots: vec![plot("Mpps against workers", "workers", "Mpps (wall, total)", false, all("workers", "workers", &|r| f(r, "measured_wall_mpps")))],
        table: vec![],
    });
    let p = &d["profile"];
    let mut prof = vec![vec!["calibration point".to_string(), "ns/packet".into()]];
    for pt in p["points"].as_array().unwrap_or(&empty) {
        prof.push(vec![
            pt[0].as_str().unwrap_or("").into(),
            format!("{:.1}", pt[1].as_f64().unwrap_or(f64::NAN)),
        ]);
    }
    secs.push(Section {
        heading: "Calibration".into(),
        text: format!(
            "Engine {}, CPU {}. Load average {} at the start, {} at the end of the suite.",
            d["engine"].as_str().unwrap_or("?"),
            p["cpu"].as_str().unwrap_or("?"),
            d["load_average_start"],
            d["load_average_end"]
        ),
        plots: vec![],
        table: prof,
    });
    crate::report::html(
        "p4jet use-case report",
        &format!(
            "p4jet bench --suite{}: the MACSAD use cases, {} s per point, measured next to the performance model (p4jet model) calibrated in the same run.",
            if d["quick"].as_bool().unwrap_or(false) {
                " --quick"
            } else {
                ""
            },
            d["seconds_per_point"]
        ),
        &secs,
    )
}

fn print_summary(d: &Value) {
    let empty = vec![];
    println!(
        "{:<8} {:>9} {:>10} {:>10} {:>7} {:>8}",
        "usecase", "entries", "pred ns", "meas ns", "ratio", "binds"
    );
    for u in d["usecases"].as_array().unwrap_or(&empty) {
        for r in u["table_sizes"].as_array().unwrap_or(&empty) {
            println!(
                "{:<8} {:>9} {:>10.1} {:>10.1} {:>7.2} {:>8}",
                u["usecase"].as_str().unwrap_or("?"),
                r["entries"],
                pred_ns(r),
                f(r, "measured_cpu_ns_per_packet"),
                f(r, "ratio_measured_to_predicted"),
                r["predicted"]["binding"].as_str().unwrap_or("")
            );
        }
        let a = &u["auto_vs_best"];
        println!(
            "  batch auto {} (sub-batch {}): {:.3} of the best fixed batch ({})",
            u["auto"]["batch"],
            u["auto"]["sub_batch"],
            f(a, "auto_throughput_over_best"),
            a["best_fixed_batch"]
        );
    }
}
