//! `open_port`: from a simple_switch style `-i PORT@IFACE` spec to a port,
//! choosing the backend and saying why.

use std::io;
use std::path::PathBuf;

use crate::pcap::{PcapFilePort, PcapRecorder};
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
        Backend::AfXdp => {
            let p = AfXdpPort::open(iface, &opts.af_xdp)?;
            let r = format!("{} (AF_XDP forced)", p.description());
            (Box::new(p), r)
        }
        Backend::AfPacket => {
            let p = AfPacketPort::open(iface, &opts.af_packet)?;
            let r = format!("{} (AF_PACKET forced)", p.description());
            (Box::new(p), r)
        }
        Backend::Auto => match AfXdpPort::open(iface, &opts.af_xdp) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
