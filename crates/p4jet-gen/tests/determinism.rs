//! Same options and seed, same output; another seed, another output.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use p4jet_gen::{FrameSize, GenOptions, UseCase, generate, write_pcap};

#[test]
fn same_seed_same_output() {
    for u in UseCase::ALL {
        let opts = GenOptions {
            entries: 200,
            flows: 100,
            packets: 300,
            seed: 42,
            size: FrameSize::imix(),
            zipf: Some(0.9),
            miss_ratio: 0.1,
            ..GenOptions::default()
        };
        let a = generate(u, &opts).unwrap();
        let b = generate(u, &opts).unwrap();
        assert!(a == b, "{u}: two runs with one seed differ");
        let c = generate(u, &GenOptions { seed: 43, ..opts }).unwrap();
        assert!(
            a.frames != c.frames,
            "{u}: another seed gives the same frames"
        );
        // vxlan's tables are laid out by index; the others are drawn at random
        if u != UseCase::Vxlan {
            assert!(
                a.commands != c.commands,
                "{u}: another seed gives the same tables"
            );
        }
    }
}

#[test]
fn pcap_has_ethernet_linktype_and_increasing_timestamps() {
    let g = generate(
        UseCase::L2,
        &GenOptions {
            packets: 20,
            ..GenOptions::default()
        },
    )
    .unwrap();
    let dir = std::env::temp_dir().join(format!("p4jet-gen-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.pcap");
    write_pcap(&path, &g.frames).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let mut r = pcap_file::pcap::PcapReader::new(&bytes[..]).unwrap();
    assert_eq!(r.header().datalink, pcap_file::DataLink::ETHERNET);
    let mut last = std::time::Duration::ZERO;
    let mut n = 0;
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        assert!(p.timestamp > last);
        last = p.timestamp;
        assert_eq!(&p.data[..], &g.frames[n][..]);
        n += 1;
    }
    assert_eq!(n, 20);
    std::fs::remove_dir_all(&dir).unwrap();
}
