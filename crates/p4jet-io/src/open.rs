//! `open_port`: from a simple_switch style `-i PORT@IFACE` spec to a port,
//! choosing the backend and saying why.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use crate::pcap::{PcapFilePort, PcapRecorder};
use crate::xdp::UmemSlot;
use crate::{AfPacketOptions, AfPacketPort, AfXdpOptions, AfXdpPort, Port, TapPort};

/// Which kind of port to open for an interface.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Backend {
    /// AF_XDP when the kernel and interface allow it, else AF_PACKET.
    #[default]
    Auto,
    /// AF_XDP or fail.
    AfXdp,
    /// AF_PACKET.
    AfPacket,
    /// A TAP device named after the interface (created if missing).
    Tap,
    /// simple_switch `--use-files`: `DIR/IFACE_in.pcap` / `DIR/IFACE_out.pcap`.
    PcapFiles(PathBuf),
}

/// Options of [`open_port`].
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// Backend choice (default: auto).
    pub backend: Backend,
    /// Options used if AF_XDP is opened.
    pub af_xdp: AfXdpOptions,
    /// Options used if AF_PACKET is opened.
    pub af_packet: AfPacketOptions,
    /// simple_switch `--pcap DIR`: record every port's rx/tx into DIR.
    pub record_dir: Option<PathBuf>,
    /// The UMEM slot of the worker the port is for: AF_XDP ports opened with the
    /// same slot share one UMEM (and so forward without copying). None: each
    /// AF_XDP port has a UMEM of its own.
    pub umem: Option<Arc<UmemSlot>>,
    /// Used by `PORT@dpdk:DEVARGS` ports.
    pub dpdk: DpdkOpenOptions,
}

/// Options of `PORT@dpdk:DEVARGS` ports (defined without the `dpdk` feature too, so
/// that callers need no feature gates; opening such a port then fails with a message).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DpdkOpenOptions {
    /// EAL arguments instead of the defaults (no hugepages, in memory); see
    /// `dpdk::DEFAULT_EAL_ARGS`.
    pub eal: Option<String>,
    /// RSS with the symmetric key when a device has several queues.
    pub symmetric_rss: bool,
    /// The devargs of every DPDK port that is a PCI device (see [`dpdk_is_pci`]): with
    /// the default EAL arguments, the EAL probes these (`-a DEVARGS`) and no other PCI
    /// device; with none, it does not scan the PCI bus (`--no-pci`).
    pub pci: Vec<String>,
}

/// The devargs of a `dpdk:DEVARGS` interface name.
pub fn dpdk_devargs(iface: &str) -> Option<&str> {
    iface.strip_prefix("dpdk:")
}

/// Whether DPDK devargs name a PCI device (`0000:01:00.0`, `01:00.0`, `pci:...`,
/// with or without `,key=value` arguments) rather than a virtual device.
pub fn dpdk_is_pci(devargs: &str) -> bool {
    let name = devargs.split(',').next().unwrap_or_default().trim();
    if name.starts_with("pci:") {
        return true;
    }
    let b = name.as_bytes();
    let bdf = |b: &[u8]| {
        b.len() == 7
            && b[2] == b':'
            && b[5] == b'.'
            && b.iter()
                .enumerate()
                .all(|(i, c)| i == 2 || i == 5 || c.is_ascii_hexdigit())
    };
    bdf(b)
        || (b.len() == 12
            && b[4] == b':'
            && b[..4].iter().all(u8::is_ascii_hexdigit)
            && bdf(&b[5..]))
}

/// Opens queue pair `worker` of `workers` of a DPDK device.
#[cfg(feature = "dpdk")]
fn open_dpdk(
    devargs: &str,
    opts: &OpenOptions,
    worker: usize,
    workers: usize,
) -> io::Result<(Box<dyn Port>, String)> {
    let o = crate::dpdk::DpdkOptions {
        eal: opts.dpdk.eal.clone(),
        queues: u16::try_from(workers.max(1)).map_err(|_| io::Error::other("too many workers"))?,
        symmetric_rss: opts.dpdk.symmetric_rss,
        pci: opts.dpdk.pci.clone(),
        ..Default::default()
    };
    let q = u16::try_from(worker).map_err(|_| io::Error::other("too many workers"))?;
    let p = crate::dpdk::DpdkPort::open(devargs, &o, q)?;
    let r = p.description();
    Ok((Box::new(p), r))
}

#[cfg(not(feature = "dpdk"))]
fn open_dpdk(
    devargs: &str,
    _opts: &OpenOptions,
    _worker: usize,
    _workers: usize,
) -> io::Result<(Box<dyn Port>, String)> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "dpdk:{devargs}: this p4jet was built without DPDK ports \
             (build with `--features dpdk`; needs libdpdk-dev)"
        ),
    ))
}

fn open_xdp(iface: &str, opts: &OpenOptions, queues: Option<&[u32]>) -> io::Result<AfXdpPort> {
    match (&opts.umem, queues) {
        (Some(slot), q) => AfXdpPort::open_shared(iface, &opts.af_xdp, q, slot),
        (None, Some(q)) => AfXdpPort::open_queues(iface, &opts.af_xdp, q),
        (None, None) => AfXdpPort::open(iface, &opts.af_xdp),
    }
}

/// A port opened by [`open_port`].
pub struct OpenedPort {
    /// The switch port number (the `PORT` of `PORT@IFACE`).
    pub port_num: u32,
    /// The port.
    pub port: Box<dyn Port>,
    /// Human-readable account of what was opened and why, for start-up logs.
    pub reason: String,
}

/// Parses `PORT@IFACE`.
pub fn parse_spec(spec: &str) -> io::Result<(u32, &str)> {
    let bad = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface spec {spec:?}: expected PORT@IFACE, e.g. 1@veth0"),
        )
    };
    let (num, iface) = spec.split_once('@').ok_or_else(bad)?;
    let num: u32 = num.trim().parse().map_err(|_| bad())?;
    if iface.is_empty() {
        return Err(bad());
    }
    Ok((num, iface))
}

/// Opens `-i PORT@IFACE`. With [`Backend::Auto`], tries AF_XDP first and
/// falls back to AF_PACKET, the reason saying why. Ports are opened in the
/// order of the calls (which matters for pcap FIFOs).
pub fn open_port(spec: &str, opts: &OpenOptions) -> io::Result<OpenedPort> {
    let (port_num, iface) = parse_spec(spec)?;
    let (port, reason): (Box<dyn Port>, String) = match &opts.backend {
        // an explicit `dpdk:` wins over the backend choice (not over pcap files)
        b if !matches!(b, Backend::PcapFiles(_)) && dpdk_devargs(iface).is_some() => {
            open_dpdk(dpdk_devargs(iface).unwrap_or_default(), opts, 0, 1)?
        }
        Backend::AfXdp => {
            let p = open_xdp(iface, opts, None)?;
            let r = format!("{} (AF_XDP forced)", p.description());
            (Box::new(p), r)
        }
        Backend::AfPacket => {
            let p = AfPacketPort::open(iface, &opts.af_packet)?;
            let r = format!("{} (AF_PACKET forced)", p.description());
            (Box::new(p), r)
        }
        Backend::Auto => match open_xdp(iface, opts, None) {
            Ok(p) => {
                let r = format!("{} (auto: AF_XDP available)", p.description());
                (Box::new(p), r)
            }
            Err(xdp_err) => {
                let p = AfPacketPort::open(iface, &opts.af_packet).map_err(|e| {
                    io::Error::new(e.kind(), format!("{e}; AF_XDP also failed: {xdp_err}"))
                })?;
                let r = format!("{} (auto: AF_XDP unavailable: {xdp_err})", p.description());
                (Box::new(p), r)
            }
        },
        Backend::Tap => {
            let p = TapPort::open(iface, true)?;
            (Box::new(p), format!("TAP device {iface}"))
        }
        Backend::PcapFiles(dir) => {
            let p = PcapFilePort::use_files(dir, iface)?;
            let r = format!(
                "pcap files: reading {}{}, writing {}",
                p.input_path()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                if p.input_is_fifo() { " (FIFO)" } else { "" },
                p.output_path()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            );
            (Box::new(p), r)
        }
    };
    let (port, reason): (Box<dyn Port>, String) = match &opts.record_dir {
        Some(dir) => {
            let r = format!(
                "{reason}; recording to {}/{iface}_{{in,out}}.pcap",
                dir.display()
            );
            (Box::new(PcapRecorder::new(port, dir)?), r)
        }
        None => (port, reason),
    };
    Ok(OpenedPort {
        port_num,
        port,
        reason: format!("port {port_num}@{iface}: {reason}"),
    })
}

/// Opens `-i PORT@IFACE` for worker `worker` of `workers`: each worker calls it and
/// gets its own port on the interface, and together they receive every frame once,
/// each flow on one worker.
///
/// * One worker: [`open_port`].
/// * Several, [`Backend::Auto`] or [`Backend::AfXdp`]: when the interface has at least
///   `workers` receive queues, AF_XDP on the queues `q` with `q % workers == worker`
///   (the NIC's RSS keeps a flow on one queue). Otherwise, or if AF_XDP fails, `Auto`
///   falls back to AF_PACKET; `AfXdp` fails.
/// * AF_PACKET (forced or as the fallback): a socket per worker in the hash
///   `PACKET_FANOUT` group `fanout_group`, which must be the same for all workers of
///   this interface and differ between interfaces (and from other processes'
///   groups in the namespace).
///
/// The reason says what was chosen and why, e.g. `veth0 has 1 receive queue for
/// 2 workers`. TAP and pcap files cannot be shared by several workers.
pub fn open_worker_port(
    spec: &str,
    opts: &OpenOptions,
    worker: usize,
    workers: usize,
    fanout_group: u16,
) -> io::Result<OpenedPort> {
    if workers <= 1 {
        return open_port(spec, opts);
    }
    let (port_num, iface) = parse_spec(spec)?;
    let w = format!("worker {worker}/{workers}");
    let fanout = |why: String| -> io::Result<(Box<dyn Port>, String)> {
        let o = AfPacketOptions {
            fanout: Some(crate::Fanout {
                group_id: fanout_group,
                defrag: false,
            }),
            ..opts.af_packet.clone()
        };
        let p = AfPacketPort::open(iface, &o)?;
        let r = format!("{}, {w} ({why})", p.description());
        Ok((Box::new(p), r))
    };
    let (port, reason): (Box<dyn Port>, String) = match &opts.backend {
        b if !matches!(b, Backend::PcapFiles(_)) && dpdk_devargs(iface).is_some() => {
            let (p, r) = open_dpdk(
                dpdk_devargs(iface).unwrap_or_default(),
                opts,
                worker,
                workers,
            )?;
            (p, format!("{r}, {w}"))
        }
        Backend::Auto | Backend::AfXdp => {
            let nq = crate::rx_queue_count(iface)?;
            let mine: Vec<u32> = (0..nq)
                .filter(|q| *q as usize % workers == worker)
                .collect();
            let forced = opts.backend == Backend::AfXdp;
            if (nq as usize) < workers {
                let why = format!(
                    "{iface} has {nq} receive queue{} for {workers} workers: \
                     one AF_XDP queue per worker is impossible",
                    if nq == 1 { "" } else { "s" }
                );
                if forced {
                    return Err(io::Error::new(io::ErrorKind::InvalidInput, why));
                }
                fanout(format!("auto: {why}"))?
            } else {
                match open_xdp(iface, opts, Some(&mine)) {
                    Ok(p) => {
                        let r = format!(
                            "{}, {w} ({}: {iface} has {nq} receive queues)",
                            p.description(),
                            if forced { "AF_XDP forced" } else { "auto" }
                        );
                        (Box::new(p), r)
                    }
                    Err(e) if forced => return Err(e),
                    Err(e) => fanout(format!("auto: AF_XDP unavailable: {e}"))?,
                }
            }
        }
        Backend::AfPacket => fanout("AF_PACKET forced".into())?,
        Backend::Tap | Backend::PcapFiles(_) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{spec}: TAP devices and pcap files serve one worker only"),
            ));
        }
    };
    let (port, reason): (Box<dyn Port>, String) = match &opts.record_dir {
        Some(dir) => {
            let r = format!("{reason}; recording is per worker: only worker 0 records");
            if worker == 0 {
                (Box::new(PcapRecorder::new(port, dir)?), r)
            } else {
                (port, r)
            }
        }
        None => (port, reason),
    };
    Ok(OpenedPort {
        port_num,
        port,
        reason: format!("port {port_num}@{iface}: {reason}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dpdk_devargs_kinds() {
        assert_eq!(dpdk_devargs("dpdk:net_null0"), Some("net_null0"));
        assert_eq!(dpdk_devargs("veth0"), None);
        for pci in [
            "0000:01:00.0",
            "01:00.1",
            "0000:af:1f.7,rxq=2",
            "pci:0000:01:00.0",
        ] {
            assert!(dpdk_is_pci(pci), "{pci}");
        }
        for vdev in [
            "net_null0",
            "net_tap0,iface=dtap0",
            "net_af_packet0,iface=eth0",
            "0:1.2",
        ] {
            assert!(!dpdk_is_pci(vdev), "{vdev}");
        }
    }

    #[test]
    fn spec_parsing() {
        assert_eq!(parse_spec("1@veth0").unwrap(), (1, "veth0"));
        assert_eq!(parse_spec("511@pcap3").unwrap(), (511, "pcap3"));
        for bad in ["veth0", "x@veth0", "1@", "@veth0", "-1@a"] {
            let e = parse_spec(bad).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad}");
        }
    }
}
