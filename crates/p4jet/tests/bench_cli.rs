//! `p4jet gen` then `p4jet bench --json` end to end: the JSON object has the fields the
//! issue names with sane values (the trace's packets all forwarded, a null program
//! measured in the same run, per-stage times, latency), the batch and sub-batch flags
//! reach the report, and a bad flag is refused with a message naming it.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::process::Command;

use common::{corpus_json, p4jet, tmpdir};

fn gen_l2(dir: &std::path::Path) {
    let out = Command::new(p4jet())
        .args([
            "gen",
            "l2",
            "--entries",
            "100",
            "--flows",
            "50",
            "--packets",
            "2000",
        ])
        .arg("--out")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "gen: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn bench(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    Command::new(p4jet())
        .arg("bench")
        .arg(corpus_json("basic_l2"))
        .arg("--commands")
        .arg(dir.join("commands.txt"))
        .arg("--trace")
        .arg(dir.join("trace.pcap"))
        .args(["--seconds", "0.2", "--json"])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn bench_json_reports_the_run() {
    let dir = tmpdir("bench-json");
    gen_l2(&dir);
    let out = bench(&dir, &["--batch", "16", "--sub-batch", "8"]);
    assert!(
        out.status.success(),
        "bench: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let num = |k: &str| {
        v[k].as_f64()
            .unwrap_or_else(|| panic!("no number `{k}` in {v}"))
    };
    assert!(num("pps") > 0.0 && num("null_pps") > 0.0, "{v}");
    assert!(num("ns_per_packet") > 0.0, "{v}");
    // pps and ns_per_packet describe the same run
    let product = num("pps") * num("ns_per_packet");
    assert!((product - 1e9).abs() < 1e7, "pps x ns = {product}");
    assert!(
        (num("ratio_to_null") - num("pps") / num("null_pps")).abs() < 1e-6,
        "{v}"
    );
    assert_eq!(num("workers"), 1.0);
    assert_eq!(num("batch"), 16.0);
    assert_eq!(num("sub_batch"), 8.0);
    assert_eq!(num("frames"), 2000.0);
    assert_eq!(num("table_entries"), 100.0);
    // every generated frame hits an entry and is forwarded
    assert!(num("forwarded_fraction") > 0.999, "{v}");
    assert!(num("packets") >= 2000.0, "{v}");
    // per-stage times of the instrumented run: every stage present, none negative
    let stages = v["stage_ns_per_packet"].as_object().unwrap();
    for k in ["parse", "ingress", "tm", "egress", "deparse+tx", "rx+io"] {
        let ns = stages[k].as_f64().unwrap_or(-1.0);
        assert!(ns >= 0.0 && ns.is_finite(), "stage {k}: {stages:?}");
    }
    assert!(stages.values().filter_map(|x| x.as_f64()).sum::<f64>() > 0.0);
    // latency histogram of the timed run
    let lat = &v["latency"];
    let l = |k: &str| lat[k].as_f64().unwrap();
    assert!(l("samples") > 0.0 && l("p50_us") <= l("p99_us") && l("p99_us") <= l("max_us"));
}

#[test]
fn bench_refuses_a_bad_sub_batch() {
    let dir = tmpdir("bench-bad");
    gen_l2(&dir);
    for bad in ["0", "65", "x"] {
        let out = bench(&dir, &["--sub-batch", bad]);
        assert!(!out.status.success(), "--sub-batch {bad} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--sub-batch"), "{err}");
    }
}
