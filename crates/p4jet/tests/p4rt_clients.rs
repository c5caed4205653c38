//! p4jet as `simple_switch_grpc` driven by the real P4Runtime clients, installed by
//! the tests into venvs under the cargo target dir:
//!
//! * the raw suite (`tests/p4rt/raw_suite.py`, PyPI `p4runtime` + `grpcio`):
//!   arbitration, pipeline config, every entity, atomicity modes, wildcard reads,
//!   every error case, packet I/O and a packet-out flood;
//! * a p4runtime-shell session (`tests/p4rt/shell_session.py`);
//! * a finsy controller that learns MAC addresses from digests
//!   (`tests/p4rt/finsy_learning.py`), with frames sent through pcap FIFO ports.
//!
//! The switch starts with `--no-p4` and FIFO pcap ports; the clients push
//! `tests/corpus/p4rt_switch`. Without Python venv/pip or PyPI the tests print
//! `SKIPPED: ...`; `P4JET_REQUIRE_P4RT=1` makes that a failure.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{GrpcSwitch, corpus_file, finsy_venv, p4rt_script, p4rt_venv, run_with_input, tmpdir};

fn p4info() -> String {
    corpus_file("p4rt_switch/p4rt_switch.p4info.txtpb")
        .display()
        .to_string()
}

fn json() -> String {
    corpus_file("p4rt_switch/p4rt_switch.json")
        .display()
        .to_string()
}

/// Runs a script with the venv's python; asserts it exits 0; returns its output.
fn run_script(bin: &std::path::Path, args: &[String], what: &str, sw: &GrpcSwitch) -> String {
    let mut cmd = Command::new(bin.join("python3"));
    cmd.args(args);
    let (out, err, st) = run_with_input(&mut cmd, "");
    eprintln!("{what} stdout:\n{out}\n{what} stderr:\n{err}");
    assert!(
        st.success(),
        "{what} failed ({st}); switch stderr:\n{}",
        sw.run.stderr()
    );
    out
}

#[test]
fn raw_grpc_suite() {
    let Some(bin) = p4rt_venv() else { return };
    let dir = tmpdir("p4rt-raw");
    let sw = GrpcSwitch::start(&dir, &[0, 1, 2, 3], &[]);
    let out = run_script(
        &bin,
        &[
            p4rt_script("raw_suite.py").display().to_string(),
            sw.addr(),
            sw.device_id.to_string(),
            p4info(),
            json(),
            corpus_file("basic_l2/basic_l2.json").display().to_string(),
            dir.join("obs.json").display().to_string(),
            "--check".into(),
        ],
        "raw_suite.py",
        &sw,
    );
    assert!(out.contains(" passed, 0 failed"), "{out}");
    // still serving after everything the suite threw at it
    assert!(std::net::TcpStream::connect(sw.addr()).is_ok());
}

#[test]
fn p4runtime_shell_session() {
    let Some(bin) = p4rt_venv() else { return };
    let dir = tmpdir("p4rt-shell");
    let sw = GrpcSwitch::start(&dir, &[0, 1, 2, 3], &[]);
    let out = run_script(
        &bin,
        &[
            p4rt_script("shell_session.py").display().to_string(),
            sw.addr(),
            sw.device_id.to_string(),
            p4info(),
            json(),
            dir.display().to_string(),
        ],
        "shell_session.py",
        &sw,
    );
    assert!(out.contains(" passed, 0 failed"), "{out}");
}

fn eth(dst: u64, src: u64, ty: u16) -> Vec<u8> {
    let mut f = dst.to_be_bytes()[2..].to_vec();
    f.extend_from_slice(&src.to_be_bytes()[2..]);
    f.extend_from_slice(&ty.to_be_bytes());
    f.extend_from_slice(&[0x5a; 46]);
    f
}

#[test]
fn finsy_learns_mac_addresses_from_digests() {
    let Some(bin) = finsy_venv() else { return };
    let dir = tmpdir("p4rt-finsy");
    let mut sw = GrpcSwitch::start(&dir, &[0, 1, 2, 3], &[]);
    let mut child = Command::new(bin.join("python3"))
        .arg(p4rt_script("finsy_learning.py"))
        .args([
            sw.addr(),
            sw.device_id.to_string(),
            p4info(),
            json(),
            "00:00:00:00:00:a1,00:00:00:00:00:a2".into(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let mut lines = vec![];
    let err_file = dir.join("stderr.txt");
    let wait_for = |what: &str, lines: &mut Vec<String>| {
        let start = Instant::now();
        while !lines.iter().any(|l| l.starts_with(what)) {
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "finsy did not print {what}: {lines:?}; switch stderr:\n{}",
                std::fs::read_to_string(&err_file).unwrap_or_default()
            );
            if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
                lines.push(l);
            }
        }
    };
    wait_for("READY", &mut lines);
    // two hosts speak: flooded (multicast group 1), and learnt from the digests
    sw.run.send(1, &eth(0xffff_ffff_ffff, 0xa1, 0x88b5));
    sw.run.send(2, &eth(0xffff_ffff_ffff, 0xa2, 0x88b5));
    wait_for("DMAC", &mut lines);
    let st = child.wait().unwrap();
    let mut err = String::new();
    use std::io::Read;
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    assert!(st.success(), "finsy exited {st}: {lines:?}\n{err}");
    assert!(
        lines.iter().any(|l| l == "LEARNT 00:00:00:00:00:a1 1"),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l == "LEARNT 00:00:00:00:00:a2 2"),
        "{lines:?}"
    );
    assert!(lines.iter().any(|l| l == "DMAC 2"), "{lines:?}");
    // a frame to a learnt address now goes to its port only
    let before: Vec<usize> = (0..4).map(|p| sw.run.output(p).len()).collect();
    let f = eth(0xa1, 0xa2, 0x88b5);
    sw.run.send(2, &f);
    let outs = sw.run.wait_outputs(&[(1, before[1] + 1)]);
    assert_eq!(outs[0].last(), Some(&f));
    std::thread::sleep(Duration::from_millis(200));
    for p in [0, 2, 3] {
        assert_eq!(sw.run.output(p).len(), before[p as usize], "port {p}");
    }
}

/// Roles with role configs (`tests/p4rt/roles.py`): per-role primaries, scoped
/// writes and reads, who may push the pipeline, and which primary gets which
/// PacketIn, DigestList and idle timeout notification for two frames sent here.
#[test]
fn roles_and_role_configs() {
    let Some(bin) = p4rt_venv() else { return };
    let dir = tmpdir("p4rt-roles");
    let mut sw = GrpcSwitch::start(&dir, &[0, 1, 2, 3], &[]);
    let mut child = Command::new(bin.join("python3"))
        .arg(p4rt_script("roles.py"))
        .args([sw.addr(), sw.device_id.to_string(), p4info(), json()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let mut lines: Vec<String> = vec![];
    let start = Instant::now();
    while !lines.iter().any(|l| l == "READY") {
        if let Some(st) = child.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            let _ = child.stderr.take().unwrap().read_to_string(&mut err);
            panic!("roles.py exited {st} before READY: {lines:?}\n{err}");
        }
        assert!(start.elapsed() < Duration::from_secs(120), "{lines:?}");
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
            lines.push(l);
        }
    }
    // new source MACs (learn digests) to 0xcc, which role l2 sends to the CPU
    sw.run.send(1, &eth(0xcc, 0xa1, 0x88b5));
    sw.run.send(2, &eth(0xcc, 0xa2, 0x88b5));
    let st = child.wait().unwrap();
    lines.extend(rx.try_iter());
    let mut err = String::new();
    use std::io::Read;
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    eprintln!("roles.py:\n{}\n{err}", lines.join("\n"));
    assert!(
        st.success()
            && lines
                .last()
                .is_some_and(|l| l.ends_with(" passed, 0 failed")),
        "roles.py failed ({st}); switch stderr:\n{}",
        sw.run.stderr()
    );
}

/// `--grpc-server-ssl` with a certificate, then also `--grpc-server-cacert` and
/// `--grpc-server-with-client-auth`: a grpcio client over TLS (with and without a
/// client certificate) and over plain text.
#[test]
fn tls_flags() {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let Some(bin) = p4rt_venv() else { return };
    let dir = tmpdir("p4rt-tls");
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    // distinct names: OpenSSL takes a certificate whose issuer is its subject for a
    // self-signed one
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "p4jet test CA");
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    for (name, sans) in [
        ("server", vec!["localhost"]),
        ("client", vec!["controller"]),
    ] {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, format!("p4jet test {name}"));
        let cert = params.signed_by(&key, &ca).unwrap();
        std::fs::write(dir.join(format!("{name}.pem")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
    }
    let script = dir.join("caps.py");
    std::fs::write(
        &script,
        r#"import sys, grpc
from p4.v1 import p4runtime_pb2 as pb, p4runtime_pb2_grpc as pbg
addr, d, mode = sys.argv[1:4]
rd = lambda f: open(f"{d}/{f}", "rb").read()
if mode == "plain":
    ch = grpc.insecure_channel(addr)
else:
    kw = {"root_certificates": rd("ca.pem")}
    if mode == "cert":
        kw.update(private_key=rd("client.key"), certificate_chain=rd("client.pem"))
    ch = grpc.secure_channel(addr, grpc.ssl_channel_credentials(**kw),
                             options=(("grpc.ssl_target_name_override", "localhost"),))
try:
    print(pbg.P4RuntimeStub(ch).Capabilities(pb.CapabilitiesRequest(), timeout=10).p4runtime_api_version)
except grpc.RpcError as e:
    print("ERROR", e.code().name)
"#,
    )
    .unwrap();
    let caps = |sw: &GrpcSwitch, mode: &str| {
        let mut cmd = Command::new(bin.join("python3"));
        cmd.arg(&script).arg(sw.addr()).arg(&dir).arg(mode);
        run_with_input(&mut cmd, "").0.trim().to_string()
    };
    let f = |n: &str| dir.join(n).display().to_string();
    let (cert, key, cacert) = (f("server.pem"), f("server.key"), f("ca.pem"));
    for client_auth in [false, true] {
        let sub = dir.join(format!("auth-{client_auth}"));
        std::fs::create_dir_all(&sub).unwrap();
        let mut target = vec![
            "--grpc-server-ssl",
            "--grpc-server-cert",
            &cert,
            "--grpc-server-key",
            &key,
            "--grpc-server-cacert",
            &cacert,
        ];
        if client_auth {
            target.push("--grpc-server-with-client-auth");
        }
        let sw = GrpcSwitch::start_with(&sub, &[], &[], &target);
        let t = Instant::now();
        while !sw.run.stderr().contains("Server listening") && t.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(sw.run.stderr().contains("(TLS)"), "{}", sw.run.stderr());
        assert_eq!(caps(&sw, "cert"), "1.5.0");
        let anon = caps(&sw, "anon");
        if client_auth {
            assert!(anon.starts_with("ERROR"), "{anon}");
        } else {
            assert_eq!(anon, "1.5.0");
        }
        assert!(caps(&sw, "plain").starts_with("ERROR"));
    }
}
