//! `p4jet model` and `p4jet bench --suite --quick` end to end: a quick calibration
//! writes a profile, the model predicts a corpus program from it, `bench --batch auto`
//! reports the batch the model chose, and the suite's report is a page whose every SVG
//! plot is well-formed XML with data points.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::process::Command;

use common::{corpus_json, p4jet, quick_profile, tmpdir};

fn ok(out: &std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn model_calibrates_predicts_and_chooses_the_batch() {
    let dir = tmpdir("model");
    let prof = dir.join("profile.json");
    quick_profile(&prof);
    let p: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&prof).unwrap()).unwrap();
    for k in [
        "null_ns",
        "header_ns",
        "call_ns",
        "checksum_ns",
        "move_ns",
        "lpm_probe_ns",
        "inject_ns",
    ] {
        let v = p[k].as_f64().unwrap();
        assert!(v.is_finite() && v >= 0.0, "{k}: {p}");
    }
    assert!(p["null_ns"].as_f64().unwrap() > 0.0);
    let kinds: Vec<&str> = p["lookups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["exact", "lpm", "lpm_wide", "ternary"]);

    // a prediction for the router with the generator's tables
    let g = dir.join("v4");
    let out = Command::new(p4jet())
        .args([
            "gen",
            "ipv4",
            "--entries",
            "1000",
            "--packets",
            "2000",
            "--out",
        ])
        .arg(&g)
        .output()
        .unwrap();
    ok(&out, "gen");
    let out = Command::new(p4jet())
        .arg("model")
        .arg(corpus_json("simple_router"))
        .arg("--commands")
        .arg(g.join("commands.txt"))
        .arg("--trace")
        .arg(g.join("trace.pcap"))
        .arg("--profile")
        .arg(&prof)
        .arg("--json")
        .output()
        .unwrap();
    ok(&out, "model");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &v["features"];
    assert_eq!(f["parsed_headers"], 2, "{v}");
    assert_eq!(f["keyed_tables"], 3, "ipv4_lpm, neighbor, smac: {v}");
    assert_eq!(f["checksums_updated"], 1, "{v}");
    let pr = &v["prediction"];
    let ns = pr["ns_per_packet"].as_f64().unwrap();
    assert!(ns > p["null_ns"].as_f64().unwrap(), "{v}");
    assert!(["cpu", "memory", "io"].contains(&pr["binding"].as_str().unwrap()));
    let stages: f64 = pr["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[1].as_f64().unwrap())
        .sum();
    assert!((stages - ns).abs() < 1e-6 * ns, "stages add up: {v}");

    // simple_router's routes are a 32-bit LPM (the DIR array: no probes); the IPv6
    // router's are wide: a binary search over the loaded entries' prefix lengths
    let tables = f["tables"].as_array().unwrap();
    assert!(tables.iter().all(|t| t["lpm_probes"] == 0), "{v}");
    let g6 = dir.join("v6");
    let out = Command::new(p4jet())
        .args([
            "gen",
            "ipv6",
            "--entries",
            "100",
            "--packets",
            "200",
            "--out",
        ])
        .arg(&g6)
        .output()
        .unwrap();
    ok(&out, "gen ipv6");
    let cmds = std::fs::read_to_string(g6.join("commands.txt")).unwrap();
    let lengths: std::collections::BTreeSet<&str> = cmds
        .lines()
        .filter(|l| l.contains("IngressImpl.routes"))
        .filter_map(|l| l.split_whitespace().nth(3)?.split_once('/').map(|x| x.1))
        .collect();
    assert!(lengths.len() > 1, "{cmds}");
    let out = Command::new(p4jet())
        .arg("model")
        .arg(corpus_json("ipv6_router"))
        .arg("--commands")
        .arg(g6.join("commands.txt"))
        .arg("--profile")
        .arg(&prof)
        .arg("--json")
        .output()
        .unwrap();
    ok(&out, "model ipv6");
    let v6: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let routes = v6["features"]["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "IngressImpl.routes")
        .unwrap()
        .clone();
    // ceil(log2(lengths + 1)) probes
    let want = (usize::BITS - lengths.len().leading_zeros()) as u64;
    assert_eq!(
        routes["lpm_probes"],
        want,
        "{} lengths: {v6}",
        lengths.len()
    );

    // bench --batch auto takes the model's batch and says so
    let out = Command::new(p4jet())
        .arg("bench")
        .arg(corpus_json("simple_router"))
        .arg("--commands")
        .arg(g.join("commands.txt"))
        .arg("--trace")
        .arg(g.join("trace.pcap"))
        .args([
            "--seconds",
            "0.1",
            "--json",
            "--batch",
            "auto",
            "--sub-batch",
            "auto",
        ])
        .arg("--profile")
        .arg(&prof)
        .output()
        .unwrap();
    ok(&out, "bench --batch auto");
    let b: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(b["batch_auto"], true);
    assert_eq!(b["batch"], pr["batch"], "{b}");
    assert_eq!(b["sub_batch"], pr["sub_batch"], "{b}");
    assert!(b["forwarded_fraction"].as_f64().unwrap() > 0.99, "{b}");

    // without a profile, auto is an error naming the fix
    let out = Command::new(p4jet())
        .arg("bench")
        .arg(corpus_json("simple_router"))
        .arg("--trace")
        .arg(g.join("trace.pcap"))
        .args(["--seconds", "0.1", "--batch", "auto", "--profile"])
        .arg(dir.join("missing.json"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--calibrate"));
}

#[test]
fn quick_suite_renders_a_report_with_data_in_every_plot() {
    let dir = tmpdir("suite");
    let out = Command::new(p4jet())
        .args(["bench", "--suite", "--quick", "--seconds", "0.05", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    ok(&out, "bench --suite --quick");
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("suite.json")).unwrap()).unwrap();
    let ucs = d["usecases"].as_array().unwrap();
    let names: Vec<&str> = ucs.iter().map(|u| u["usecase"].as_str().unwrap()).collect();
    assert_eq!(names, ["l2", "ipv4", "ipv6", "vxlan", "bng"]);
    for u in ucs {
        for r in u["table_sizes"].as_array().unwrap() {
            let m = r["measured_cpu_ns_per_packet"].as_f64().unwrap();
            let p = r["predicted"]["ns_per_packet"].as_f64().unwrap();
            assert!(m > 0.0 && p > 0.0, "{r}");
        }
        assert!(
            u["auto_vs_best"]["auto_throughput_over_best"]
                .as_f64()
                .unwrap()
                > 0.0
        );
    }
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    let mut plots = 0;
    let mut rest = html.as_str();
    while let Some(at) = rest.find("<svg") {
        let end = rest[at..].find("</svg>").unwrap() + at + "</svg>".len();
        let svg = &rest[at..end];
        let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{e}: {svg}"));
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        let title = root
            .descendants()
            .find(|n| n.has_tag_name("text"))
            .and_then(|n| n.text())
            .unwrap_or("")
            .to_string();
        // data points carry a <title> tooltip; legend dots do not
        let points = root
            .descendants()
            .filter(|n| n.has_tag_name("circle") && n.children().any(|c| c.has_tag_name("title")))
            .count();
        assert!(points > 0, "plot `{title}` has no data");
        plots += 1;
        rest = &rest[end..];
    }
    assert!(plots >= 8, "{plots} plots");
}
