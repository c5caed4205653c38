//! Every use case: the generated commands load without error into the
//! program they are for, and the switch forwards the generated frames
//! (drops exactly the requested misses).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use p4jet_control::cli::Cli;
use p4jet_gen::{FrameSize, GenOptions, Generated, TRACE_PORT, UseCase, Variant, generate};
use p4jet_switch::{Switch, SwitchConfig};

fn program_json(u: UseCase, v: Variant) -> String {
    let rel = u.program(v).unwrap();
    let path = format!("{}/../../{rel}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Loads the commands, injects every frame on its own, and returns per frame
/// the number of frames sent and the ports.
fn run(u: UseCase, v: Variant, g: &Generated) -> Vec<Vec<(u32, Vec<u8>)>> {
    let json = program_json(u, v);
    let mut sw = Switch::new(&json, SwitchConfig::default()).unwrap();
    let mut cli = Cli::new(&json).unwrap();
    let outcome = cli.run_script(&mut sw, &g.commands);
    assert!(
        outcome.errors.is_empty(),
        "{u}: {} command errors, first: {}",
        outcome.errors.len(),
        outcome.errors[0]
    );
    g.frames
        .iter()
        .map(|f| {
            sw.inject(TRACE_PORT, f);
            let mut out = Vec::new();
            sw.run_until_idle(&mut |port, bytes| out.push((port, bytes.to_vec())));
            out
        })
        .collect()
}

fn ipv4_header_ok(h: &[u8]) -> bool {
    let mut sum = 0u32;
    for c in h[..20].chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

/// Frames are well-formed Ethernet with valid outer IPv4 checksums and lengths.
fn check_frames(u: UseCase, g: &Generated, min: usize) {
    for f in &g.frames {
        assert!(f.len() >= min, "{u}: frame of {} bytes", f.len());
        etherparse::SlicedPacket::from_ethernet(f).unwrap_or_else(|e| panic!("{u}: {e:?}"));
        if f[12..14] == [0x08, 0x00] {
            assert!(ipv4_header_ok(&f[14..34]), "{u}: bad IPv4 checksum");
            assert_eq!(
                usize::from(u16::from_be_bytes([f[16], f[17]])),
                f.len() - 14
            );
            assert!(f[22] > 1, "{u}: TTL");
        }
    }
}

fn check(u: UseCase, v: Variant, opts: &GenOptions) -> Generated {
    let g = generate(u, opts).unwrap_or_else(|e| panic!("{u}: {e}"));
    assert_eq!(g.frames.len(), opts.packets);
    assert_eq!(g.forwarded.len(), opts.packets);
    check_frames(u, &g, 64);
    let out = run(u, v, &g);
    let hits = g.forwarded.iter().filter(|f| **f).count();
    let mut ok = 0;
    let mut bad = Vec::new();
    for (i, (o, fwd)) in out.iter().zip(&g.forwarded).enumerate() {
        if *fwd {
            if o.len() == 1 && o[0].0 < opts.ports {
                ok += 1;
            } else if bad.len() < 5 {
                bad.push(format!(
                    "frame {i} ({:02x?}) -> {:?}",
                    &g.frames[i][..g.frames[i].len().min(80)],
                    o.iter().map(|x| x.0).collect::<Vec<_>>()
                ));
            }
        } else {
            assert!(o.is_empty(), "{u}: miss frame {i} was forwarded");
        }
    }
    assert!(
        ok as f64 >= 0.99 * hits as f64,
        "{u}: {ok} of {hits} forwarded\n{}\n{}",
        bad.join("\n"),
        g.description
    );
    eprintln!(
        "{u} ({v:?}): {ok}/{hits} forwarded, {} misses dropped",
        opts.packets - hits
    );
    g
}

fn small() -> GenOptions {
    GenOptions {
        entries: 300,
        flows: 200,
        packets: 600,
        seed: 7,
        ..GenOptions::default()
    }
}

#[test]
fn l2_forwards() {
    check(UseCase::L2, Variant::Base, &small());
}

#[test]
fn ipv4_forwards_with_ttl_and_checksum() {
    let g = check(UseCase::Ipv4, Variant::Base, &small());
    let out = run(UseCase::Ipv4, Variant::Base, &g);
    for (i, o) in out.iter().enumerate() {
        let f = &o[0].1;
        assert_eq!(f[22], g.frames[i][22] - 1, "TTL decremented");
        assert!(ipv4_header_ok(&f[14..34]));
        assert_eq!(
            f[6..12],
            [0, 0xaa, 0, 0, 0, o[0].0 as u8],
            "smac of the egress port"
        );
    }
}

#[test]
fn ipv6_forwards() {
    check(UseCase::Ipv6, Variant::Base, &small());
}

#[test]
fn acl_forwards() {
    check(UseCase::Acl, Variant::Base, &small());
}

#[test]
fn vxlan_forwards_both_directions() {
    let g = check(UseCase::Vxlan, Variant::Base, &small());
    let decap = g
        .frames
        .iter()
        .filter(|f| f.len() > 40 && f[23] == 17 && f[36..38] == [0x12, 0xb5])
        .count();
    assert!(decap > 200 && decap < 400, "{decap} VXLAN frames of 600");
}

#[test]
fn bng_forwards_both_directions() {
    let g = check(UseCase::Bng, Variant::Base, &small());
    let up = g.frames.iter().filter(|f| f[23] == 47).count();
    assert!(up > 200 && up < 400, "{up} GRE frames of 600");
}

#[test]
fn misses_are_dropped() {
    let opts = GenOptions {
        miss_ratio: 0.25,
        ..small()
    };
    for u in UseCase::ALL {
        let g = check(u, Variant::Base, &opts);
        assert_eq!(g.forwarded.iter().filter(|f| !**f).count(), 150, "{u}");
    }
}

#[test]
fn imix_zipf_and_many_ports() {
    let opts = GenOptions {
        size: FrameSize::imix(),
        zipf: Some(1.1),
        ports: 8,
        next_hops: 32,
        ..small()
    };
    for u in UseCase::ALL {
        let g = check(u, Variant::Base, &opts);
        let sizes: std::collections::BTreeSet<usize> = g.frames.iter().map(|f| f.len()).collect();
        assert!(
            sizes.contains(&594) && sizes.contains(&1514),
            "{u}: {sizes:?}"
        );
    }
}

#[test]
fn large_variants_take_more_entries() {
    let opts = GenOptions {
        entries: 3000,
        next_hops: 300,
        variant: Variant::Large,
        packets: 400,
        ..small()
    };
    for u in [UseCase::L2, UseCase::Ipv4, UseCase::Acl] {
        assert!(
            generate(
                u,
                &GenOptions {
                    variant: Variant::Base,
                    ..opts.clone()
                }
            )
            .is_err()
        );
        check(u, Variant::Large, &opts);
    }
    assert!(generate(UseCase::Bng, &opts).is_err());
}

/// `max_size` of a table in the program's JSON.
fn max_size(u: UseCase, v: Variant, table: &str) -> usize {
    let j: serde_json::Value = serde_json::from_str(&program_json(u, v)).unwrap();
    j["pipelines"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["tables"].as_array().unwrap())
        .find(|t| t["name"] == table)
        .and_then(|t| t["max_size"].as_u64())
        .unwrap_or_else(|| panic!("{table}")) as usize
}

#[test]
fn table_size_limits_are_those_of_the_programs() {
    let opts = GenOptions {
        packets: 50,
        ..GenOptions::default()
    };
    let main_table = |u| match u {
        UseCase::L2 => "IngressImpl.dmac",
        UseCase::Ipv4 => "IngressImpl.ipv4_lpm",
        UseCase::Ipv6 => "IngressImpl.routes",
        UseCase::Acl => "IngressImpl.acl",
        UseCase::Vxlan => "IngressImpl.service_vip",
        UseCase::Bng => "IngressImpl.subscriber",
    };
    for u in UseCase::ALL {
        let max = max_size(u, Variant::Base, main_table(u));
        // the switch takes a full table
        check(
            u,
            Variant::Base,
            &GenOptions {
                entries: max,
                ..opts.clone()
            },
        );
        assert!(
            generate(
                u,
                &GenOptions {
                    entries: max + 1,
                    ..opts.clone()
                }
            )
            .is_err(),
            "{u}"
        );
    }
    // large variants: refused past the size (filling 1M entries is left to benchmarks)
    for u in [UseCase::L2, UseCase::Ipv4, UseCase::Acl] {
        let max = max_size(u, Variant::Large, main_table(u));
        let large = GenOptions {
            variant: Variant::Large,
            entries: max + 1,
            ..opts.clone()
        };
        let e = generate(u, &large).unwrap_err();
        assert!(e.contains(&format!("({max} entries")), "{u}: {e}");
    }
    let nb = max_size(UseCase::Ipv4, Variant::Base, "IngressImpl.neighbor");
    check(
        UseCase::Ipv4,
        Variant::Base,
        &GenOptions {
            next_hops: nb,
            ..opts.clone()
        },
    );
    assert!(
        generate(
            UseCase::Ipv4,
            &GenOptions {
                next_hops: nb + 1,
                ..opts.clone()
            }
        )
        .is_err()
    );
    let nat = max_size(UseCase::Bng, Variant::Base, "IngressImpl.snat");
    check(
        UseCase::Bng,
        Variant::Base,
        &GenOptions {
            flows: nat,
            ..opts.clone()
        },
    );
    assert!(
        generate(
            UseCase::Bng,
            &GenOptions {
                flows: nat + 1,
                ..opts
            }
        )
        .is_err()
    );
}

/// ClassBench profiles: every frame is forwarded or dropped exactly as the
/// generator's own evaluation of the rules says (best priority, port ranges
/// written as ternary prefixes, src_port_filter), on both program variants
/// and for all three kinds of traffic.
#[test]
fn acl_profiles_forward_as_their_rules_decide() {
    use p4jet_gen::{AclProfile, Traffic};
    for (p, v) in [
        (AclProfile::Acl1, Variant::Large),
        (AclProfile::Fw1, Variant::Large),
        (AclProfile::Ipc1, Variant::Base),
    ] {
        for t in [Traffic::Flows, Traffic::Random, Traffic::Locality] {
            let opts = GenOptions {
                entries: 600,
                flows: 100,
                packets: 500,
                seed: 11,
                variant: v,
                acl_profile: Some(p),
                traffic: t,
                ..GenOptions::default()
            };
            let g = check(UseCase::Acl, v, &opts);
            let fwd = g.forwarded.iter().filter(|f| **f).count();
            // small rule sets may have no catch-all: random headers then all miss
            assert!(
                fwd > 0 || t == Traffic::Random,
                "{p:?} {t:?}: {fwd} forwarded"
            );
            assert!(
                g.commands
                    .lines()
                    .filter(|l| l.contains("IngressImpl.acl "))
                    .count()
                    == 600
            );
        }
    }
    let bad = generate(
        UseCase::Acl,
        &GenOptions {
            acl_profile: Some(AclProfile::Acl1),
            miss_ratio: 0.1,
            ..GenOptions::default()
        },
    );
    assert!(bad.is_err());
    let bad = generate(
        UseCase::L2,
        &GenOptions {
            traffic: Traffic::Random,
            ..GenOptions::default()
        },
    );
    assert!(bad.is_err());
}
