//! Learning notifications on the nanomsg socket (`--notifications-addr`), as bmv2
//! publishes them: received by a subscriber written against bmv2's documented format
//! (p4jet-nanomsg's SUB socket, and `nnpy` over libnanomsg, the one p4-utils uses),
//! acknowledged over Thrift as controllers do, and byte for byte the messages the
//! reference simple_switch publishes for the same program and frames.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use p4jet_nanomsg::{Learn, Notification, Subscriber};

/// l2_learning's learn list: the source MAC (6 bytes) and the ingress port (2 bytes).
const SAMPLE: usize = 8;

fn frame(src_last: u8) -> Vec<u8> {
    let mut f = unhex("FFFFFFFFFFFF0000000000000806");
    f[11] = src_last;
    f.extend_from_slice(&[0x5a; 46]);
    f
}

fn sample(src_last: u8, port: u8) -> Vec<u8> {
    vec![0, 0, 0, 0, 0, src_last, 0, port]
}

/// Connects (retrying while the switch starts) to `addr`.
fn subscribe(addr: &str) -> Subscriber {
    let start = Instant::now();
    loop {
        match Subscriber::connect(addr) {
            Ok(s) => return s,
            Err(e) => {
                assert!(start.elapsed() < Duration::from_secs(20), "{addr}: {e}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// Learning messages received within `wait` (other notifications skipped).
fn learn_messages(sub: &mut Subscriber, want_samples: usize, wait: Duration) -> Vec<Learn> {
    let start = Instant::now();
    let mut out: Vec<Learn> = vec![];
    while out.iter().map(|m| m.samples.len()).sum::<usize>() < want_samples
        && start.elapsed() < wait
    {
        if let Some(m) = sub.recv(Duration::from_millis(100)).unwrap() {
            match Notification::decode(&m, |_| SAMPLE).unwrap() {
                Notification::Learn(l) => out.push(l),
                other => eprintln!("notification: {other:?}"),
            }
        }
    }
    out
}

#[test]
fn digests_are_published_and_acknowledged_like_bmv2() {
    let dir = tmpdir("notify");
    let addr = format!("ipc://{}/n.ipc", dir.display());
    let mut sw = Running::start(
        &dir,
        &corpus_json("l2_learning"),
        &[0, 1, 2, 3],
        &["--notifications-addr", &addr][..],
    );
    let mut sub = subscribe(&addr);
    // the subscription is in place once the switch accepted it: give it a moment
    std::thread::sleep(Duration::from_millis(100));
    // unknown sources are learned (a digest each); the same source again is filtered
    sw.send(0, &frame(0xa1));
    sw.send(1, &frame(0xa2));
    sw.send(0, &frame(0xa1));
    sw.send(2, &frame(0xa3));
    let msgs = learn_messages(&mut sub, 3, Duration::from_secs(5));
    let samples: Vec<Vec<u8>> = msgs.iter().flat_map(|m| m.samples.clone()).collect();
    assert_eq!(
        samples,
        vec![sample(0xa1, 0), sample(0xa2, 1), sample(0xa3, 2)],
        "{msgs:?}"
    );
    for m in &msgs {
        assert_eq!((m.switch_id, m.cxt_id, m.list_id), (0, 0, 1));
    }
    // not acknowledged: bmv2's learning filter keeps the same sample out
    sw.send(0, &frame(0xa1));
    assert!(learn_messages(&mut sub, 1, Duration::from_millis(1500)).is_empty());
    // the controller acknowledges every buffer: a1 may be learned again
    let mut c = p4jet_thrift::ThriftClient::connect(("127.0.0.1", sw.thrift_port)).unwrap();
    for m in &msgs {
        c.bm_learning_ack_buffer(m.list_id, m.buffer_id as i64)
            .unwrap();
    }
    sw.send(0, &frame(0xa1));
    let again = learn_messages(&mut sub, 1, Duration::from_secs(5));
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].samples, vec![sample(0xa1, 0)]);
    assert!(again[0].buffer_id > msgs.last().unwrap().buffer_id);
    assert!(sw.stop().success());
}

#[test]
fn nnpy_subscriber_receives_p4jet_digests() {
    let venv = match python_venv("nnpy-venv", &["nnpy"], "import nnpy") {
        Ok(v) => v,
        Err(e) => {
            let msg = format!(
                "SKIPPED: nnpy is not available (it builds against Debian's libnanomsg-dev): {e}"
            );
            if std::env::var_os("P4JET_REQUIRE_NNPY").is_some() {
                panic!("{msg}");
            }
            return skipped(&msg);
        }
    };
    let dir = tmpdir("notify-nnpy");
    let addr = format!("ipc://{}/n.ipc", dir.display());
    let mut sw = Running::start(
        &dir,
        &corpus_json("l2_learning"),
        &[0, 1],
        &["--notifications-addr", &addr][..],
    );
    // the subscriber as p4-utils writes it: nnpy SUB, subscribe to everything,
    // unpack the 32-byte header with struct "<iQiiQi"
    let script = format!(
        r#"
import nnpy, struct
s = nnpy.Socket(nnpy.AF_SP, nnpy.SUB)
s.connect("{addr}")
s.setsockopt(nnpy.SUB, nnpy.SUB_SUBSCRIBE, '')
s.setsockopt(nnpy.SOL_SOCKET, nnpy.RCVTIMEO, 8000)
open("{ready}", "w").close()
m = s.recv()
topic, dev, cxt, lst, buf, n = struct.unpack("<iQiiQi", m[:32])
print(m[:4].decode(), dev, cxt, lst, buf, n, m[32:].hex())
"#,
        ready = dir.join("ready").display()
    );
    let child = Command::new(venv.join("python3"))
        .arg("-c")
        .arg(&script)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !dir.join("ready").exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "nnpy did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // nanomsg connects in the background: let it
    std::thread::sleep(Duration::from_millis(300));
    sw.send(1, &frame(0xb7));
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.trim(), "LEA| 0 0 1 0 1 0000000000b70001");
    assert!(sw.stop().success());
}

/// The reference simple_switch and p4jet, the same program and frames: the learning
/// messages are the same bytes.
#[test]
fn same_bytes_as_the_reference() {
    let Some(shared) = shared_dir() else {
        return skipped("SKIPPED: ../shared is absent (no reference simple_switch)");
    };
    let bmv2 = shared.join("reference/bin/simple_switch");
    if !bmv2.is_file() {
        return skipped("SKIPPED: no reference simple_switch in ../shared/reference");
    }
    let mut seen = vec![];
    for (name, spec) in [
        ("bmv2", p4jet_diff::switch::SwitchSpec::bmv2(&bmv2)),
        (
            "p4jet",
            p4jet_diff::switch::SwitchSpec::p4jet(std::path::Path::new(p4jet())),
        ),
    ] {
        let dir = tmpdir(&format!("notify-ref-{name}"));
        let mut sw = p4jet_diff::switch::Running::start(
            &spec,
            &dir,
            &corpus_json("l2_learning"),
            &[0, 1, 2],
            9,
            &[],
        )
        .unwrap();
        let addr = format!(
            "ipc://{}",
            p4jet_diff::switch::notifications_path(&dir)
                .unwrap()
                .display()
        );
        let mut sub = subscribe(&addr);
        std::thread::sleep(Duration::from_millis(300));
        sw.send(&[
            (0, frame(0xc1)),
            (1, frame(0xc2)),
            (0, frame(0xc1)),
            (2, frame(0xc3)),
        ])
        .unwrap();
        sw.close_all_inputs().unwrap();
        let msgs = learn_messages(&mut sub, 3, Duration::from_secs(10));
        sw.stop().unwrap();
        seen.push((name, msgs.iter().map(Learn::encode).collect::<Vec<_>>()));
    }
    let (b, p) = (&seen[0].1, &seen[1].1);
    let show = |v: &Vec<Vec<u8>>| v.iter().map(|m| hex(m)).collect::<Vec<_>>().join("\n  ");
    assert!(!b.is_empty(), "bmv2 published nothing");
    assert_eq!(b, p, "bmv2:\n  {}\np4jet:\n  {}", show(b), show(p));
}

/// Ageing notifications (`AGE|`), as bmv2's ageing monitor sends them: a sweep a second
/// lists the entries of a `support_timeout` table idle longer than their TTL, leaving out
/// the ones the previous sweep listed, so an idle entry comes back every other sweep;
/// entries without a TTL, and deleted entries, never appear.
#[test]
fn idle_entries_are_published_as_ageing_notifications() {
    use p4jet_thrift::types::{BmAddEntryOptions, BmMatchParam};
    let dir = tmpdir("ageing");
    let addr = format!("ipc://{}/n.ipc", dir.display());
    let mut sw = Running::start(
        &dir,
        &corpus_json("p4rt_switch"),
        &[0, 1],
        &["--notifications-addr", &addr][..],
    );
    let mut c = p4jet_thrift::ThriftClient::connect(("127.0.0.1", sw.thrift_port)).unwrap();
    let mut add = |mac: u8| {
        c.bm_mt_add_entry(
            "IngressImpl.smac",
            &[BmMatchParam::Exact {
                key: vec![0, 0, 0, 0, 0, mac],
            }],
            "NoAction",
            &[],
            BmAddEntryOptions::default(),
        )
        .unwrap()
    };
    let aged = add(0x01);
    let kept = add(0x02);
    c.bm_mt_set_entry_ttl("IngressImpl.smac", aged, 300)
        .unwrap();
    let mut sub = subscribe(&addr);
    let table_id = {
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(corpus_json("p4rt_switch")).unwrap())
                .unwrap();
        let tables = json["pipelines"][0]["tables"].as_array().unwrap().clone();
        tables
            .iter()
            .find(|t| t["name"] == "IngressImpl.smac")
            .unwrap()["id"]
            .as_i64()
            .unwrap() as i32
    };
    // collect for 4.5 s: the idle entry shows up at every other one-second sweep
    let start = Instant::now();
    let mut seen: Vec<(Duration, p4jet_nanomsg::Ageing)> = vec![];
    while start.elapsed() < Duration::from_millis(4500) {
        if let Some(m) = sub.recv(Duration::from_millis(100)).unwrap()
            && let Notification::Ageing(a) = Notification::decode(&m, |_| 0).unwrap()
        {
            seen.push((start.elapsed(), a));
        }
    }
    assert!(seen.len() >= 2, "{seen:?}");
    for (_, a) in &seen {
        assert_eq!((a.switch_id, a.cxt_id, a.table_id), (0, 0, table_id));
        assert_eq!(a.handles, vec![aged as u32], "{seen:?}");
        assert!(!a.handles.contains(&(kept as u32)));
    }
    for w in seen.windows(2) {
        assert_eq!(w[1].1.buffer_id, w[0].1.buffer_id + 1);
        let gap = w[1].0 - w[0].0;
        assert!(
            gap >= Duration::from_millis(1500) && gap <= Duration::from_millis(2600),
            "reported again after {gap:?}: {seen:?}"
        );
    }
    // a deleted entry is not reported any more
    c.bm_mt_delete_entry("IngressImpl.smac", aged).unwrap();
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(2500) {
        if let Some(m) = sub.recv(Duration::from_millis(100)).unwrap() {
            assert!(
                !matches!(
                    Notification::decode(&m, |_| 0).unwrap(),
                    Notification::Ageing(_)
                ),
                "ageing notification after the entry was deleted"
            );
        }
    }
    assert!(sw.stop().success());
}

/// The reference simple_switch and p4jet, the same entries and TTLs: the first ageing
/// notification has the same header bytes (topic, device 9, context, buffer id, the
/// table's JSON id), and the entries reported are the same handles (both idle entries
/// come in one message unless a sweep falls between their expiries, milliseconds apart).
#[test]
fn ageing_same_bytes_as_the_reference() {
    use p4jet_thrift::types::{BmAddEntryOptions, BmMatchParam};
    let Some(shared) = shared_dir() else {
        return skipped("SKIPPED: ../shared is absent (no reference simple_switch)");
    };
    let bmv2 = shared.join("reference/bin/simple_switch");
    if !bmv2.is_file() {
        return skipped("SKIPPED: no reference simple_switch in ../shared/reference");
    }
    let mut seen = vec![];
    for (name, spec) in [
        ("bmv2", p4jet_diff::switch::SwitchSpec::bmv2(&bmv2)),
        (
            "p4jet",
            p4jet_diff::switch::SwitchSpec::p4jet(std::path::Path::new(p4jet())),
        ),
    ] {
        let dir = tmpdir(&format!("ageing-ref-{name}"));
        let mut sw = p4jet_diff::switch::Running::start(
            &spec,
            &dir,
            &corpus_json("p4rt_switch"),
            &[0, 1],
            9,
            &[],
        )
        .unwrap();
        let addr = format!(
            "ipc://{}",
            p4jet_diff::switch::notifications_path(&dir)
                .unwrap()
                .display()
        );
        let mut sub = subscribe(&addr);
        let mut c = p4jet_thrift::ThriftClient::connect(("127.0.0.1", sw.thrift_port)).unwrap();
        for mac in 1..=3u8 {
            let h = c
                .bm_mt_add_entry(
                    "IngressImpl.smac",
                    &[BmMatchParam::Exact {
                        key: vec![0, 0, 0, 0, 0, mac],
                    }],
                    "NoAction",
                    &[],
                    BmAddEntryOptions::default(),
                )
                .unwrap();
            // the second entry has no TTL
            if mac != 2 {
                c.bm_mt_set_entry_ttl("IngressImpl.smac", h, 200).unwrap();
            }
        }
        let start = Instant::now();
        let mut header = None;
        let mut handles = std::collections::BTreeSet::new();
        while handles.len() < 2 && start.elapsed() < Duration::from_secs(5) {
            if let Some(m) = sub.recv(Duration::from_millis(100)).unwrap()
                && let Notification::Ageing(a) = Notification::decode(&m, |_| 0).unwrap()
            {
                header.get_or_insert_with(|| hex(&m[..28]));
                handles.extend(a.handles);
            }
        }
        sw.stop().unwrap();
        seen.push((name, header, handles));
    }
    assert!(seen[0].1.is_some(), "bmv2 published no ageing notification");
    assert_eq!(
        seen[0].1, seen[1].1,
        "first message header: bmv2 against p4jet"
    );
    assert_eq!(seen[0].2, seen[1].2, "handles: bmv2 against p4jet");
}
