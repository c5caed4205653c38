//! The eBPF side of AF_XDP without libbpf: an XSKMAP, a five-instruction XDP
//! program that redirects each frame to the socket of its receive queue, and
//! its attachment to an interface (a bpf link, or netlink on old kernels).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::sys::ctx;

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_MAP_DELETE_ELEM: libc::c_long = 3;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
const BPF_FUNC_REDIRECT_MAP: i32 = 51;
const BPF_PSEUDO_MAP_FD: u8 = 1;
const XDP_PASS: i32 = 2;

/// `XDP_FLAGS_SKB_MODE`: generic XDP, after the skb is built (works everywhere).
pub(crate) const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
/// `XDP_FLAGS_DRV_MODE`: native XDP in the driver.
pub(crate) const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;
const XDP_FLAGS_UPDATE_IF_NOEXIST: u32 = 1 << 0;

/// `union bpf_attr` as 144 zeroed bytes, written by field offset.
#[repr(C, align(8))]
struct Attr([u8; 144]);

impl Attr {
    fn new() -> Attr {
        Attr([0; 144])
    }
    fn u32(&mut self, off: usize, v: u32) -> &mut Self {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, off: usize, v: u64) -> &mut Self {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
}

fn bpf(cmd: libc::c_long, attr: &mut Attr) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a valid, 8-aligned 144-byte bpf_attr; pointers stored
    // in it (set by callers) point to live buffers for the call's duration.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.0.as_mut_ptr(), attr.0.len()) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn owned(fd: libc::c_long) -> OwnedFd {
    // SAFETY: the bpf syscall returned a fresh fd that nobody else owns.
    unsafe { OwnedFd::from_raw_fd(fd as RawFd) }
}

/// Creates an XSKMAP with `entries` slots (one per receive queue).
pub(crate) fn create_xskmap(entries: u32) -> io::Result<OwnedFd> {
    let mut a = Attr::new();
    a.u32(0, BPF_MAP_TYPE_XSKMAP)
        .u32(4, 4)
        .u32(8, 4)
        .u32(12, entries.max(1));
    a.0[28..28 + 9].copy_from_slice(b"p4jet_xsk");
    bpf(BPF_MAP_CREATE, &mut a)
        .map(owned)
        .map_err(|e| ctx(e, "bpf(BPF_MAP_CREATE, XSKMAP)"))
}

/// Sets `map[key] = fd`.
pub(crate) fn map_set(map: &OwnedFd, key: u32, fd: RawFd) -> io::Result<()> {
    let k = key;
    let v = fd as u32;
    let mut a = Attr::new();
    a.u32(0, map.as_raw_fd() as u32)
        .u64(8, &k as *const u32 as u64)
        .u64(16, &v as *const u32 as u64)
        .u64(24, 0);
    bpf(BPF_MAP_UPDATE_ELEM, &mut a)
        .map(|_| ())
        .map_err(|e| ctx(e, "bpf(BPF_MAP_UPDATE_ELEM)"))
}

/// Removes `map[key]`.
pub(crate) fn map_delete(map: &OwnedFd, key: u32) -> io::Result<()> {
    let k = key;
    let mut a = Attr::new();
    a.u32(0, map.as_raw_fd() as u32)
        .u64(8, &k as *const u32 as u64);
    bpf(BPF_MAP_DELETE_ELEM, &mut a).map(|_| ())
}

/// One eBPF instruction (`struct bpf_insn`).
fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> u64 {
    let mut b = [0u8; 8];
    b[0] = code;
    b[1] = (dst & 0xf) | (src << 4);
    b[2..4].copy_from_slice(&off.to_le_bytes());
    b[4..8].copy_from_slice(&imm.to_le_bytes());
    u64::from_le_bytes(b)
}

/// The program, equivalent to
/// `return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);`
/// (frames of queues without a socket go on to the kernel stack).
fn redirect_program(map_fd: RawFd) -> [u64; 6] {
    [
        // r2 = *(u32 *)(r1 + offsetof(struct xdp_md, rx_queue_index))
        insn(0x61, 2, 1, 16, 0),
        // r1 = map (ld_imm64 with a map fd, two slots)
        insn(0x18, 1, BPF_PSEUDO_MAP_FD, 0, map_fd),
        insn(0, 0, 0, 0, 0),
        // r3 = XDP_PASS (default action when the slot is empty)
        insn(0xb7, 3, 0, 0, XDP_PASS),
        // call bpf_redirect_map
        insn(0x85, 0, 0, 0, BPF_FUNC_REDIRECT_MAP),
        // exit
        insn(0x95, 0, 0, 0, 0),
    ]
}

/// Loads the redirect program bound to `map`. On a verifier error the
/// verifier's log is in the message.
pub(crate) fn load_redirect_prog(map: &OwnedFd) -> io::Result<OwnedFd> {
    let prog = redirect_program(map.as_raw_fd());
    let license = b"Dual MIT/GPL\0";
    let mut log = vec![0u8; 8192];
    let mut a = Attr::new();
    a.u32(0, BPF_PROG_TYPE_XDP)
        .u32(4, prog.len() as u32)
        .u64(8, prog.as_ptr() as u64)
        .u64(16, license.as_ptr() as u64)
        .u32(24, 1)
        .u32(28, log.len() as u32)
        .u64(32, log.as_mut_ptr() as u64)
        .u32(68, BPF_XDP);
    a.0[48..48 + 9].copy_from_slice(b"p4jet_xsk");
    match bpf(BPF_PROG_LOAD, &mut a) {
        Ok(fd) => Ok(owned(fd)),
        Err(e) => {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]);
            Err(ctx(
                e,
                format_args!(
                    "bpf(BPF_PROG_LOAD) of the XSK redirect program: {}",
                    text.trim()
                ),
            ))
        }
    }
}

/// How a program is attached; detached when dropped.
pub(crate) enum Attachment {
    /// A bpf link (kernel >= 5.9): closing the fd detaches, even if we crash.
    Link { _fd: OwnedFd },
    /// Attached with netlink (older kernels): detached in Drop.
    Netlink { ifindex: u32, flags: u32 },
}

impl Drop for Attachment {
    fn drop(&mut self) {
        if let Attachment::Netlink { ifindex, flags } = *self {
            let _ = netlink_set_xdp(ifindex, -1, flags & !XDP_FLAGS_UPDATE_IF_NOEXIST);
        }
    }
}

/// Attaches `prog` to `ifindex` in the mode given by `flags` (SKB or DRV).
pub(crate) fn attach(prog: &OwnedFd, ifindex: u32, flags: u32) -> io::Result<Attachment> {
    let mut a = Attr::new();
    a.u32(0, prog.as_raw_fd() as u32)
        .u32(4, ifindex)
        .u32(8, BPF_XDP)
        .u32(12, flags);
    match bpf(BPF_LINK_CREATE, &mut a) {
        Ok(fd) => Ok(Attachment::Link { _fd: owned(fd) }),
        // No bpf links for XDP (kernel < 5.9): netlink, refusing to replace
        // a program someone else attached.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) && !link_supported() => {
            netlink_set_xdp(
                ifindex,
                prog.as_raw_fd(),
                flags | XDP_FLAGS_UPDATE_IF_NOEXIST,
            )?;
            Ok(Attachment::Netlink { ifindex, flags })
        }
        Err(e) => Err(e),
    }
}

/// Whether the kernel has bpf links for XDP: from its version (5.9+).
fn link_supported() -> bool {
    // SAFETY: utsname is plain old data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return true;
    }
    let rel: String = u
        .release
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8 as char)
        .collect();
    let mut it = rel
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse::<u32>().ok());
    let (maj, min) = (it.next().unwrap_or(0), it.next().unwrap_or(0));
    (maj, min) >= (5, 9)
}

/// RTM_SETLINK with IFLA_XDP { IFLA_XDP_FD = fd, IFLA_XDP_FLAGS = flags }.
fn netlink_set_xdp(ifindex: u32, fd: RawFd, flags: u32) -> io::Result<()> {
    const IFLA_XDP: u16 = 43;
    const IFLA_XDP_FD: u16 = 1;
    const IFLA_XDP_FLAGS: u16 = 3;
    const NLA_F_NESTED: u16 = 1 << 15;
    let sock = crate::sys::socket(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_ROUTE)?;
    let mut msg: Vec<u8> = Vec::with_capacity(64);
    let total: u32 = 16 + 16 + 4 + 8 + 8;
    // nlmsghdr
    msg.extend_from_slice(&total.to_ne_bytes());
    msg.extend_from_slice(&libc::RTM_SETLINK.to_ne_bytes());
    msg.extend_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16).to_ne_bytes());
    msg.extend_from_slice(&1u32.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    // ifinfomsg
    msg.extend_from_slice(&[libc::AF_UNSPEC as u8, 0, 0, 0]);
    msg.extend_from_slice(&(ifindex as i32).to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    // IFLA_XDP (nested)
    msg.extend_from_slice(&20u16.to_ne_bytes());
    msg.extend_from_slice(&(IFLA_XDP | NLA_F_NESTED).to_ne_bytes());
    msg.extend_from_slice(&8u16.to_ne_bytes());
    msg.extend_from_slice(&IFLA_XDP_FD.to_ne_bytes());
    msg.extend_from_slice(&fd.to_ne_bytes());
    msg.extend_from_slice(&8u16.to_ne_bytes());
    msg.extend_from_slice(&IFLA_XDP_FLAGS.to_ne_bytes());
    msg.extend_from_slice(&flags.to_ne_bytes());
    // SAFETY: sockaddr_nl is plain old data; zero = the kernel.
    let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    sa.nl_family = libc::AF_NETLINK as u16;
    // SAFETY: valid buffer and address for the call.
    let r = unsafe {
        libc::sendto(
            sock.as_raw_fd(),
            msg.as_ptr().cast(),
            msg.len(),
            0,
            (&sa as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as u32,
        )
    };
    if r < 0 {
        return Err(ctx(
            io::Error::last_os_error(),
            "netlink RTM_SETLINK IFLA_XDP",
        ));
    }
    let mut buf = [0u8; 4096];
    // SAFETY: valid buffer.
    let n = unsafe { libc::recv(sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n < 0 {
        return Err(ctx(io::Error::last_os_error(), "netlink ack"));
    }
    let n = n as usize;
    // nlmsghdr(16) then, for NLMSG_ERROR, the errno (negative, 0 = ack).
    if n >= 20 && u16::from_ne_bytes([buf[4], buf[5]]) == libc::NLMSG_ERROR as u16 {
        let err = i32::from_ne_bytes([buf[16], buf[17], buf[18], buf[19]]);
        if err != 0 {
            return Err(ctx(io::Error::from_raw_os_error(-err), "netlink IFLA_XDP"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instruction_encoding() {
        // ldxw r2, [r1+16]: 61 12 1000 00000000
        assert_eq!(
            insn(0x61, 2, 1, 16, 0).to_le_bytes(),
            [0x61, 0x12, 0x10, 0, 0, 0, 0, 0]
        );
        // lddw r1, map fd 7: 18 11 0000 07000000
        assert_eq!(
            insn(0x18, 1, 1, 0, 7).to_le_bytes(),
            [0x18, 0x11, 0, 0, 7, 0, 0, 0]
        );
        assert_eq!(redirect_program(3).len(), 6);
    }
}
