//! Shared helpers for the integration tests: a network namespace with a veth
//! pair (removed on drop, names unique per test), and a plain AF_PACKET socket
//! on the namespace side of the pair to play the outside world.
#![allow(dead_code)]

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Ethertype of test frames (IEEE local experimental 1).
pub const TEST_ETHERTYPE: u16 = 0x88b5;

/// True if the test can run; prints why not otherwise (never a silent pass).
pub fn can_run(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED {test}: needs root (network namespaces, veth, raw sockets)");
        return false;
    }
    if Command::new("ip").arg("-V").output().is_err() {
        eprintln!("SKIPPED {test}: the `ip` command (iproute2) is not installed");
        return false;
    }
    true
}

fn run(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{args:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A unique short name (interface names are at most 15 bytes).
pub fn unique(tag: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{tag}{}x{}",
        std::process::id() % 100_000,
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A namespace `ns` holding `peer`, veth-paired with `host` in the current
/// namespace. Both are up, IPv6 off (no autoconf noise). Dropping removes both.
pub struct VethNs {
    pub ns: String,
    pub host: String,
    pub peer: String,
}

impl VethNs {
    pub fn new(tag: &str) -> Result<VethNs, String> {
        Self::with_queues(tag, 1)
    }

    /// With `queues` rx and tx queues on each end.
    pub fn with_queues(tag: &str, queues: u32) -> Result<VethNs, String> {
        let id = unique(tag);
        let v = VethNs {
            ns: format!("p4jio-{id}"),
            host: format!("h{id}"),
            peer: format!("p{id}"),
        };
        run(&["ip", "netns", "add", &v.ns])?;
        let q = queues.to_string();
        #[rustfmt::skip]
        let add = ["ip", "link", "add", &v.host, "numtxqueues", &q, "numrxqueues", &q, "type", "veth",
            "peer", "name", &v.peer, "numtxqueues", &q, "numrxqueues", &q, "netns", &v.ns];
        if let Err(e) = run(&add) {
            let _ = run(&["ip", "netns", "del", &v.ns]);
            return Err(e);
        }
        let _ = run(&[
            "sysctl",
            "-qw",
            &format!("net.ipv6.conf.{}.disable_ipv6=1", v.host),
        ]);
        let _ = run(&[
            "ip",
            "netns",
            "exec",
            &v.ns,
            "sysctl",
            "-qw",
            &format!("net.ipv6.conf.{}.disable_ipv6=1", v.peer),
        ]);
        run(&["ip", "link", "set", &v.host, "up"])?;
        run(&["ip", "-n", &v.ns, "link", "set", &v.peer, "up"])?;
        run(&["ip", "-n", &v.ns, "link", "set", "lo", "up"])?;
        Ok(v)
    }

    /// A raw socket on the namespace end.
    pub fn peer_socket(&self) -> io::Result<RawSock> {
        RawSock::open(Some(&self.ns), &self.peer)
    }
}

impl Drop for VethNs {
    fn drop(&mut self) {
        let _ = run(&["ip", "link", "del", &self.host]);
        let _ = run(&["ip", "netns", "del", &self.ns]);
    }
}

/// A plain (non-mmapped) AF_PACKET socket bound to one interface, ignoring
/// its own outgoing frames.
pub struct RawSock {
    fd: OwnedFd,
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl RawSock {
    /// Opens the socket in namespace `ns` (None = current) on `iface`. A socket
    /// stays in the namespace it was created in, so a short-lived thread enters
    /// the namespace, creates it, and hands it back.
    pub fn open(ns: Option<&str>, iface: &str) -> io::Result<RawSock> {
        let ns = ns.map(str::to_string);
        let iface = iface.to_string();
        std::thread::spawn(move || -> io::Result<RawSock> {
            if let Some(ns) = ns {
                let f = File::open(format!("/run/netns/{ns}"))?;
                // SAFETY: setns on a valid namespace fd; affects this thread only.
                cvt(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) })?;
            }
            // SAFETY: plain syscall.
            let fd = cvt(unsafe {
                libc::socket(
                    libc::AF_PACKET,
                    libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                    (libc::ETH_P_ALL as u16).to_be() as i32,
                )
            })?;
            // SAFETY: fresh fd owned by nobody else.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            let c = std::ffi::CString::new(iface).map_err(io::Error::other)?;
            // SAFETY: valid C string.
            let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
            if idx == 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: plain old data.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
            sll.sll_ifindex = idx as i32;
            // SAFETY: valid sockaddr_ll of the given size.
            cvt(unsafe {
                libc::bind(
                    fd.as_raw_fd(),
                    (&sll as *const libc::sockaddr_ll).cast(),
                    std::mem::size_of::<libc::sockaddr_ll>() as u32,
                )
            })?;
            let one: libc::c_int = 1;
            // SAFETY: int option.
            cvt(unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_PACKET,
                    libc::PACKET_IGNORE_OUTGOING,
                    (&one as *const libc::c_int).cast(),
                    4,
                )
            })?;
            let big: libc::c_int = 8 << 20;
            // SAFETY: int option.
            unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_RCVBUFFORCE,
                    (&big as *const libc::c_int).cast(),
                    4,
                );
            }
            Ok(RawSock { fd })
        })
        .join()
        .map_err(|_| io::Error::other("socket thread panicked"))?
    }

    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: valid buffer.
        let r = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Receives frames accepted by `keep` until `want` were kept or `timeout`.
    /// The kernel strips a received VLAN tag into metadata; this socket asks
    /// for it (PACKET_AUXDATA) and puts it back.
    pub fn recv_until(
        &self,
        want: usize,
        timeout: Duration,
        keep: impl Fn(&[u8]) -> bool,
    ) -> Vec<Vec<u8>> {
        let one: libc::c_int = 1;
        // SAFETY: int option.
        unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_AUXDATA,
                (&one as *const libc::c_int).cast(),
                4,
            );
        }
        let deadline = Instant::now() + timeout;
        let mut out = Vec::new();
        let mut buf = vec![0u8; 65536];
        let mut cbuf = [0u64; 64];
        while out.len() < want {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let mut pfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let r = unsafe { libc::poll(&mut pfd, 1, left.as_millis().max(1) as i32) };
            if r <= 0 {
                continue;
            }
            let mut iov = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            // SAFETY: plain old data.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = cbuf.as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of_val(&cbuf);
            // SAFETY: msg points at valid buffers for the call.
            let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
            if n < 0 {
                continue;
            }
            let mut frame = buf[..n as usize].to_vec();
            // SAFETY: walking the control messages the kernel wrote into cbuf.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(&msg);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_PACKET && (*c).cmsg_type == libc::PACKET_AUXDATA
                    {
                        let aux = libc::CMSG_DATA(c)
                            .cast::<libc::tpacket_auxdata>()
                            .read_unaligned();
                        if aux.tp_status & libc::TP_STATUS_VLAN_VALID != 0 && frame.len() >= 12 {
                            let tpid = if aux.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                                aux.tp_vlan_tpid
                            } else {
                                0x8100
                            };
                            let mut tag = tpid.to_be_bytes().to_vec();
                            tag.extend_from_slice(&aux.tp_vlan_tci.to_be_bytes());
                            frame.splice(12..12, tag);
                        }
                    }
                    c = libc::CMSG_NXTHDR(&msg, c);
                }
            }
            if keep(&frame) {
                out.push(frame);
            }
        }
        out
    }
}

/// A test frame: unicast to 02:..:02 from 02:..:01, ethertype TEST_ETHERTYPE,
/// then `marker`, `seq`, and a pattern up to `len` bytes.
pub fn test_frame(marker: u32, seq: u32, len: usize) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01];
    f.extend_from_slice(&TEST_ETHERTYPE.to_be_bytes());
    f.extend_from_slice(&marker.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    while f.len() < len {
        f.push((f.len() as u32 ^ seq) as u8);
    }
    f
}

/// The same with an 802.1Q tag (VID `vid`) in front of the ethertype.
pub fn test_frame_vlan(marker: u32, seq: u32, len: usize, vid: u16) -> Vec<u8> {
    let mut f = test_frame(marker, seq, len);
    let tag = [0x81, 0x00, (vid >> 8) as u8 & 0x0f, vid as u8];
    f.splice(12..12, tag);
    f
}

/// Whether `f` is a test frame with `marker` (tagged or not).
pub fn has_marker(f: &[u8], marker: u32) -> bool {
    let m = marker.to_be_bytes();
    let off = if f.len() > 16 && f[12] == 0x81 && f[13] == 0 {
        4
    } else {
        0
    };
    f.len() >= 18 + off
        && f[12 + off..14 + off] == TEST_ETHERTYPE.to_be_bytes()
        && f[14 + off..18 + off] == m
}

/// The examples' traffic (the same frames `veth_gen` and `fwd_bench` send).
#[path = "../../examples/shared/gen.rs"]
mod traffic;

/// An IPv4/UDP frame (for fanout hashing) carrying `marker` in its payload: the
/// examples' UDP frame (`len` >= 42) with the marker after the UDP header and a byte
/// pattern after it.
pub fn udp_frame(marker: u32, sport: u16, len: usize) -> Vec<u8> {
    let mut f = traffic::udp_frame(sport, len);
    f.truncate(42);
    f.extend_from_slice(&marker.to_be_bytes());
    while f.len() < len {
        f.push(f.len() as u8);
    }
    f
}

/// Whether `f` is a udp_frame with `marker`.
pub fn udp_has_marker(f: &[u8], marker: u32) -> bool {
    f.len() >= 46 && f[12..14] == [0x08, 0x00] && f[23] == 17 && f[42..46] == marker.to_be_bytes()
}

/// A marker unique to this process and call.
pub fn marker() -> u32 {
    static N: AtomicU32 = AtomicU32::new(1);
    (std::process::id() << 12) ^ N.fetch_add(1, Ordering::Relaxed)
}

/// Compares frame lists without dumping megabytes on failure.
#[track_caller]
pub fn assert_frames_eq(got: &[Vec<u8>], want: &[Vec<u8>], what: &str) {
    let hex = |f: &[u8]| {
        f.iter()
            .take(24)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    if got.len() != want.len() {
        panic!(
            "{what}: got {} frames, want {}; first got: {:?}",
            got.len(),
            want.len(),
            got.first().map(|f| hex(f))
        );
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g != w {
            let at = g
                .iter()
                .zip(w.iter())
                .position(|(a, b)| a != b)
                .unwrap_or(g.len().min(w.len()));
            panic!(
                "{what}: frame {i} differs at byte {at} (len got {} want {}): got {}.. want {}..",
                g.len(),
                w.len(),
                hex(g),
                hex(w)
            );
        }
    }
}

/// Sends `[ok, untagged MTU+15 bytes, ok2, tagged MTU+18]` through `port` and
/// checks that the too-long untagged frame is dropped (counted) while the
/// others (including the tagged MTU+18 one) reach `peer`.
pub fn check_oversize_in_batch(port: &mut dyn p4jet_io::Port, peer: &RawSock, mtu: usize) {
    let m = marker();
    let ok = test_frame(m, 1, 100);
    let bad = test_frame(m, 2, mtu + 15);
    let ok2 = test_frame(m, 3, 200);
    let tagged_max = test_frame_vlan(m, 4, mtu + 14, 5);
    assert_eq!(tagged_max.len(), mtu + 18);
    let before = port.stats().tx_dropped;
    assert_eq!(port.send_batch(&[&ok, &bad, &ok2, &tagged_max]).unwrap(), 4);
    port.flush().unwrap();
    assert_eq!(port.stats().tx_dropped, before + 1);
    let got = peer.recv_until(3, Duration::from_secs(2), |f| has_marker(f, m));
    assert_frames_eq(&got, &[ok, ok2, tagged_max], "batch with an oversize frame");
}
