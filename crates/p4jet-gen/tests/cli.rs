//! The command-line arguments and `main`.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use clap::Parser;
use p4jet_gen::{FrameSize, GenArgs, UseCase, Variant};

#[derive(Parser)]
struct Cmd {
    #[command(flatten)]
    args: GenArgs,
}

fn parse(args: &[&str]) -> Result<GenArgs, clap::Error> {
    Cmd::try_parse_from(std::iter::once("gen").chain(args.iter().copied())).map(|c| c.args)
}

#[test]
fn arguments() {
    let a = parse(&[
        "acl",
        "--entries",
        "5000",
        "--flows",
        "64",
        "--size",
        "imix",
        "--packets",
        "99",
        "--seed",
        "3",
        "--out",
        "/tmp/x",
        "--program-variant",
        "large",
        "--zipf",
        "1.2",
        "--miss-ratio",
        "0.1",
    ])
    .unwrap();
    assert_eq!(a.usecase, UseCase::Acl);
    let o = a.options();
    assert_eq!((o.entries, o.flows, o.packets, o.seed), (5000, 64, 99, 3));
    assert_eq!(o.size, FrameSize::imix());
    assert_eq!(o.variant, Variant::Large);
    assert_eq!(o.zipf, Some(1.2));
    assert_eq!(o.miss_ratio, 0.1);

    let d = parse(&["l2", "--out", "d"]).unwrap().options();
    assert_eq!(d, p4jet_gen::GenOptions::default());

    let m = parse(&["l2", "--out", "d", "--size", "64:3,1514:1"]).unwrap();
    assert_eq!(m.size, FrameSize::Mix(vec![(64, 3), (1514, 1)]));
    assert!(parse(&["l2", "--out", "d", "--size", "60"]).is_err());
    assert!(parse(&["l2", "--out", "d", "--size", "big"]).is_err());
    assert!(parse(&["l3", "--out", "d"]).is_err());
    assert!(parse(&["l2"]).is_err(), "--out is required");
}

#[test]
fn main_writes_the_trace_and_the_commands() {
    let dir = std::env::temp_dir().join(format!("p4jet-gen-main-{}", std::process::id()));
    let out = dir.to_string_lossy().to_string();
    let args = parse(&[
        "bng",
        "--entries",
        "50",
        "--flows",
        "40",
        "--packets",
        "30",
        "--out",
        &out,
    ])
    .unwrap();
    assert_eq!(
        p4jet_gen::main(args).unwrap(),
        std::process::ExitCode::SUCCESS
    );
    let cmds = std::fs::read_to_string(dir.join("commands.txt")).unwrap();
    assert_eq!(
        cmds.lines()
            .filter(|l| l.starts_with("table_add IngressImpl.subscriber "))
            .count(),
        50
    );
    assert_eq!(
        cmds.lines()
            .filter(|l| l.starts_with("table_add IngressImpl.snat "))
            .count(),
        40
    );
    let pcap = std::fs::read(dir.join("trace.pcap")).unwrap();
    let mut r = pcap_file::pcap::PcapReader::new(&pcap[..]).unwrap();
    let mut n = 0;
    while let Some(p) = r.next_packet() {
        p.unwrap();
        n += 1;
    }
    assert_eq!(n, 30);
    std::fs::remove_dir_all(&dir).unwrap();
    let bad = parse(&["vxlan", "--program-variant", "large", "--out", &out]).unwrap();
    assert!(
        p4jet_gen::main(bad)
            .unwrap_err()
            .contains("no large program variant")
    );
}
