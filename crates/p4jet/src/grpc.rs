//! The P4Runtime server of `p4jet run` (simple_switch_grpc's gRPC side).
//!
//! Started after the ports are open, just before forwarding starts, so that a
//! launcher polling the gRPC port (Mininet's `simple_switch_grpc` wrappers do) finds
//! it only when the switch is ready. The server drives the same switch as the
//! Thrift server, through the runtime model.

use std::sync::{Arc, Mutex};

use p4jet_p4rt::{CpuChannel, Device, ServeOptions, ServerHandle, SharedRuntime, TlsFiles};
use p4jet_switch::Switch;

use crate::run::{RunArgs, TargetOptions};

/// simple_switch_grpc's default address (it listens on every interface; p4jet on
/// loopback unless `--grpc-server-addr` says otherwise).
pub(crate) const DEFAULT_ADDR: &str = "127.0.0.1:9559";

/// Whether `p4jet run` serves P4Runtime.
pub(crate) fn wanted(a: &RunArgs, t: &TargetOptions) -> bool {
    a.p4runtime || a.no_p4 || t.wants_grpc()
}

/// The CPU port's queues, when `--cpu-port` is given.
pub(crate) fn cpu_channel(t: &TargetOptions) -> Result<Option<Arc<CpuChannel>>, String> {
    t.cpu_port
        .map(|p| {
            CpuChannel::new(p, p4jet_p4rt::cpu::DEFAULT_CAPACITY)
                .map(Arc::new)
                .map_err(|e| format!("--cpu-port {p}: {e}"))
        })
        .transpose()
}

fn tls(t: &TargetOptions) -> Result<Option<TlsFiles>, String> {
    if !t.grpc_server_ssl {
        if t.grpc_server_cert.is_some() || t.grpc_server_key.is_some() {
            eprintln!(
                "p4jet: --grpc-server-cert/--grpc-server-key without --grpc-server-ssl: \
                 serving plain text (as simple_switch_grpc)"
            );
        }
        return Ok(None);
    }
    let cert = t
        .grpc_server_cert
        .clone()
        .ok_or("--grpc-server-ssl needs --grpc-server-cert")?;
    let key = t
        .grpc_server_key
        .clone()
        .ok_or("--grpc-server-ssl needs --grpc-server-key")?;
    Ok(Some(TlsFiles {
        cert,
        key,
        ca: t.grpc_server_cacert.clone(),
        client_auth: t.grpc_server_with_client_auth,
    }))
}

/// Starts the server; prints where it listens.
pub(crate) fn start(
    sw: &Arc<Mutex<Switch>>,
    a: &RunArgs,
    t: &TargetOptions,
    cpu: Option<Arc<CpuChannel>>,
) -> Result<ServerHandle, String> {
    let runtime: SharedRuntime = sw.clone();
    let dev = Arc::new(Device::new(u64::from(a.device_id), runtime, cpu));
    let addr = t.grpc_server_addr.as_deref().unwrap_or(DEFAULT_ADDR);
    let opts = ServeOptions { tls: tls(t)? };
    let secure = opts.tls.is_some();
    let h = p4jet_p4rt::spawn(dev, addr, opts)?;
    eprintln!(
        "Server listening on {}{}",
        h.local_addr(),
        if secure { " (TLS)" } else { "" }
    );
    Ok(h)
}
