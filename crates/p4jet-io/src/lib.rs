//! Batch packet I/O for p4jet. This crate knows nothing about P4: it moves
//! Ethernet frames between the switch and the outside world, a batch at a time.
//!
//! # The API
//!
//! Every port type implements [`Port`]:
//!
//! ```text
//! pub trait Port: Send {
//!     fn recv_batch(&mut self, max: usize, timeout: Option<Duration>,
//!                   f: &mut dyn FnMut(&[u8])) -> io::Result<usize>;
//!     fn send_batch(&mut self, frames: &[&[u8]]) -> io::Result<usize>;
//!     fn flush(&mut self) -> io::Result<()>;
//!     fn name(&self) -> &str;
//!     fn kind(&self) -> PortKind;
//!     fn stats(&self) -> PortStats;
//!     fn is_exhausted(&self) -> bool { false }      // pcap input at EOF
//!     fn poll_fd(&self) -> Option<RawFd> { None }   // to wait on many ports
//!     // moving packet buffers instead of copying bytes (AF_XDP, DPDK):
//!     fn moves_buffers(&self) -> bool { false }
//!     fn recv_bufs(&mut self, max: usize, out: &mut Vec<PacketBuf>) -> io::Result<usize>;
//!     fn send_buf(&mut self, buf: PacketBuf) -> Result<(), PacketBuf>;
//!     fn send_bufs(&mut self, bufs: &mut Vec<PacketBuf>) -> usize;
//! }
//! ```
//!
//! * `recv_batch` calls `f` once per received frame, at most `max` times, and
//!   returns how many frames it delivered. The slice points into the port's own
//!   memory (a kernel ring, a UMEM, a read buffer) and is only valid during the
//!   call: copy it into your own pooled buffer. Nothing is allocated per packet.
//!   `timeout`: `None` (or zero) polls without blocking; `Some(d)` waits at most
//!   `d` for the *first* frame, then returns what is ready without waiting more.
//! * `send_batch` queues frames and returns `n`: `frames[..n]` were consumed
//!   (queued, or dropped because they cannot be sent at all, e.g. larger than a
//!   ring slot, which counts in [`PortStats::tx_dropped`]); `frames[n..]` were not
//!   taken because the transmit ring is full: retry after `flush`, or drop.
//!   Frames are copied before `send_batch` returns.
//! * Ports whose [`Port::moves_buffers`] is true (AF_XDP, DPDK) also move whole
//!   [`PacketBuf`]s: `recv_bufs` hands out buffers that *are* the UMEM chunks the
//!   kernel received into, and `send_buf` transmits a buffer from its chunk when
//!   the chunk belongs to the port's UMEM ([`xdp::Umem`], shared by a worker's
//!   AF_XDP ports; `send_bufs` does it for a batch in one call), so a frame
//!   forwarded between such ports is never copied in user space. Other buffers are
//!   copied into a free chunk. DPDK ports (feature `dpdk`) do the same with mbufs:
//!   `recv_bufs` hands out the received mbuf as a port buffer and `send_buf` on any
//!   DPDK port transmits it as itself. The defaults (for the other port types) copy,
//!   and allocate per packet: callers use `recv_batch`/`send_batch` for ports that do
//!   not move buffers.
//! * `flush` hands queued frames to the kernel: one `sendto` for AF_PACKET, a
//!   few for AF_XDP copy mode (the kernel sends at most 32 frames per call), a
//!   no-op for pcap files (they are written per batch) and TAP (written in
//!   `send_batch`). Call it once per batch, after the last `send_batch`.
//! * [`Port::is_exhausted`] is true once a pcap input reached its end (EOF on a
//!   file, all writers gone on a FIFO) and every frame was delivered. Live
//!   ports never exhaust.
//!
//! Port types and their extra methods:
//!
//! | type | module | for |
//! |---|---|---|
//! | [`PcapFilePort`] | [`pcap`] | simple_switch `--use-files`: `NAME_in.pcap` in, `NAME_out.pcap` out; FIFOs opened in call order; `peek()` gives the next timestamp (merge inputs like bmv2) |
//! | [`PcapRecorder`] | [`pcap`] | `--pcap DIR`: wraps any port and records its rx/tx |
//! | [`AfPacketPort`] | [`afpacket`] | TPACKET_V3 rx ring, V3 tx ring, fanout, qdisc bypass; `description()`, `max_tx_frame()` |
//! | [`AfXdpPort`] | [`xdp`] | AF_XDP sockets with a built-in XSKMAP redirect program; `description()`, `is_native()`, `is_zero_copy()`, `queues()` |
//! | [`TapPort`] | [`tap`] | a TAP device (`/dev/net/tun`, `IFF_TAP | IFF_NO_PI`) |
//! | `DpdkPort` | `dpdk` (feature `dpdk`) | a queue pair of a DPDK ethdev (vdev or PCI), named by devargs: `-i PORT@dpdk:DEVARGS` |
//!
//! [`open_port`]`(spec, &OpenOptions)` opens `-i PORT@IFACE` style ports
//! ([`Backend::Auto`]: AF_XDP when it can, else AF_PACKET; or forced; or pcap
//! files; optional recording) and returns an [`OpenedPort`] with the port
//! number, the boxed port and a one-line reason to print at start-up.
//!
//! Threading: a port is `Send`, not shared: one worker owns it. For several
//! workers on one interface, open one port each: AF_PACKET with the same
//! [`Fanout`] group, or AF_XDP with one queue each ([`AfXdpOptions::queue`],
//! [`AfXdpPort::open_queues`]); [`open_worker_port`] makes that choice and says
//! why. [`affinity`] pins threads to CPUs; [`wait_readable`] waits for any of
//! several ports.
//!
//! Errors are `std::io::Error`s whose message names the file or interface
//! concerned; malformed pcap input gives `ErrorKind::InvalidData` carrying a
//! [`pcap::PcapFormatError`] (file, byte offset, reason).

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

pub use p4jet_buf::{Frame, FrameRegion, PacketBuf};

pub mod affinity;
pub mod afpacket;
#[cfg(feature = "dpdk")]
pub mod dpdk;
mod open;
pub mod pcap;
mod sys;
pub mod tap;
pub mod xdp;

pub use afpacket::{AfPacketOptions, AfPacketPort, Fanout};
#[cfg(feature = "dpdk")]
pub use dpdk::DpdkPort;
pub use open::{
    Backend, DpdkOpenOptions, OpenOptions, OpenedPort, dpdk_devargs, dpdk_is_pci, open_port,
    open_worker_port,
};
pub use pcap::{PcapFilePort, PcapRecorder};
pub use tap::TapPort;
pub use xdp::{AfXdpOptions, AfXdpPort, Umem, UmemSlot, XdpMode, ZeroCopy};

/// Waits until one of `fds` (from [`Port::poll_fd`]) is readable or `timeout`
/// passes; returns whether one is. For a thread that serves several ports: poll
/// them all without blocking, then wait here for any.
pub fn wait_readable(fds: &[RawFd], timeout: Duration) -> io::Result<bool> {
    if fds.is_empty() {
        std::thread::sleep(timeout);
        return Ok(false);
    }
    sys::poll_many(fds, timeout)
}

/// Number of receive queues of interface `iface` (ethtool channels; 1 when the
/// driver does not say).
pub fn rx_queue_count(iface: &str) -> io::Result<u32> {
    let probe = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
    sys::ifindex(iface)?;
    Ok(sys::rx_queue_count(
        std::os::fd::AsRawFd::as_raw_fd(&probe),
        iface,
    ))
}

/// Which kind of port this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PortKind {
    /// pcap files (or FIFOs), simple_switch `--use-files`.
    PcapFile,
    /// An AF_PACKET socket with memory-mapped rings.
    AfPacket,
    /// An AF_XDP socket.
    AfXdp,
    /// A TAP device.
    Tap,
    /// A queue pair of a DPDK ethdev.
    Dpdk,
    /// A port inside the process with no interface behind it (simple_switch_grpc's
    /// `--cpu-port`: frames go to and come from the P4Runtime server).
    Cpu,
}

impl std::fmt::Display for PortKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PortKind::PcapFile => "pcap-file",
            PortKind::AfPacket => "af_packet",
            PortKind::AfXdp => "af_xdp",
            PortKind::Tap => "tap",
            PortKind::Dpdk => "dpdk",
            PortKind::Cpu => "cpu",
        })
    }
}

/// Counters of one port since it was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Frames delivered by `recv_batch`.
    pub rx_packets: u64,
    /// Bytes of those frames.
    pub rx_bytes: u64,
    /// Frames the kernel dropped before we could read them (ring full), where
    /// the kernel tells us.
    pub rx_dropped: u64,
    /// Frames queued for transmission.
    pub tx_packets: u64,
    /// Bytes of those frames.
    pub tx_bytes: u64,
    /// Frames given to `send_batch` that could not be sent (too large, or
    /// rejected by the kernel).
    pub tx_dropped: u64,
    /// Frames transmitted from the chunk they were received in (no user-space
    /// copy; AF_XDP ports sharing a UMEM).
    pub tx_in_place: u64,
    /// Erroneous frames the device received, or received frames that could not be
    /// read (DPDK: `ierrors`).
    pub rx_errors: u64,
    /// Frames the device failed to send (DPDK: `oerrors`).
    pub tx_errors: u64,
}

/// A source and sink of Ethernet frames, used in batches. See the crate docs.
pub trait Port: Send {
    /// Receive up to `max` frames; calls `f(frame_bytes)` for each; returns
    /// how many. Never blocks longer than `timeout` (`None` = non-blocking
    /// poll). The slice is only valid during the call.
    fn recv_batch(
        &mut self,
        max: usize,
        timeout: Option<Duration>,
        f: &mut dyn FnMut(&[u8]),
    ) -> io::Result<usize>;

    /// Queue frames for transmission; returns how many were consumed (a
    /// prefix of `frames`).
    fn send_batch(&mut self, frames: &[&[u8]]) -> io::Result<usize>;

    /// Hand queued frames to the kernel / write buffered data.
    fn flush(&mut self) -> io::Result<()>;

    /// Frames `send_batch` accepted that the port discarded later without sending
    /// them (a transmit ring whose interface went away), since the last call; the
    /// caller counts them as lost. 0 unless overridden.
    fn take_unsent(&mut self) -> u64 {
        0
    }

    /// Whether frames queued for transmission have not all been taken by the kernel
    /// or device yet (a transmit ring not kicked, or descriptors not completed): a
    /// thread handing its ports to another waits, flushing, until this is false, so
    /// that nothing it sent can leave after what the other sends. False unless
    /// overridden (ports whose `flush` sends everything synchronously).
    fn tx_pending(&self) -> bool {
        false
    }

    /// The interface or file base name this port was opened on.
    fn name(&self) -> &str;

    /// The port type.
    fn kind(&self) -> PortKind;

    /// Counters since the port was opened.
    fn stats(&self) -> PortStats;

    /// True once a finite input (pcap file, FIFO) has ended and every frame in
    /// it was delivered. Always false for live ports.
    fn is_exhausted(&self) -> bool {
        false
    }

    /// A file descriptor that becomes readable (`POLLIN`) when `recv_batch`
    /// may have frames, for callers that wait on several ports at once.
    fn poll_fd(&self) -> Option<RawFd> {
        None
    }

    /// Whether this port is polled without ever blocking (DPDK): a thread serving it
    /// should not sleep when a poll finds nothing. False unless overridden.
    fn busy_polls(&self) -> bool {
        false
    }

    /// Whether this port moves [`PacketBuf`]s in and out without copying
    /// ([`Port::recv_bufs`], [`Port::send_buf`]); false unless overridden.
    fn moves_buffers(&self) -> bool {
        false
    }

    /// Receives up to `max` frames without blocking, each as a buffer the caller
    /// now owns, appended to `out`; returns how many. The default copies each frame
    /// into a new heap buffer (it allocates: use `recv_batch` for ports that do not
    /// move buffers).
    fn recv_bufs(&mut self, max: usize, out: &mut Vec<PacketBuf>) -> io::Result<usize> {
        self.recv_batch(max, None, &mut |fr| {
            let mut b = PacketBuf::with_capacity(fr.len());
            b.set(fr);
            out.push(b)
        })
    }

    /// Queues one frame for transmission, taking its buffer; gives the buffer back
    /// when the transmit ring is full (retry after `flush`, or drop it). The default
    /// copies it with `send_batch`.
    fn send_buf(&mut self, buf: PacketBuf) -> Result<(), PacketBuf> {
        send_copy(self, buf)
    }

    /// [`Port::send_buf`] for the buffers of `bufs` in order, in one call: the
    /// buffers taken are removed from the front of `bufs`, and their number
    /// returned; what is left was not taken because the transmit ring is full
    /// (retry after `flush`, or drop it).
    fn send_bufs(&mut self, bufs: &mut Vec<PacketBuf>) -> usize {
        send_each(bufs, |b| self.send_buf(b))
    }
}

/// The loop of [`Port::send_bufs`]: `send` takes the buffers of `bufs` from the
/// front, by value, until it gives one back (left at the front of `bufs`, with the
/// rest after it); returns how many it took.
#[inline]
pub fn send_each(
    bufs: &mut Vec<PacketBuf>,
    mut send: impl FnMut(PacketBuf) -> Result<(), PacketBuf>,
) -> usize {
    let mut n = 0;
    let mut it = bufs.drain(..);
    for b in it.by_ref() {
        if let Err(b) = send(b) {
            // the ring is full (rare): what is left goes back, in order
            let mut rest = Vec::with_capacity(it.len() + 1);
            rest.push(b);
            rest.extend(it);
            bufs.append(&mut rest);
            return n;
        }
        n += 1;
    }
    n
}

/// Sends a copy of `buf`'s frame with `send_batch`: `Err(buf)` when the port did not
/// take it (ring full). [`Port::send_buf`] of ports that do not move buffers.
pub fn send_copy<P: Port + ?Sized>(port: &mut P, buf: PacketBuf) -> Result<(), PacketBuf> {
    match port.send_batch(&[buf.data()]) {
        Ok(1) => Ok(()),
        _ => Err(buf),
    }
}

impl<P: Port + ?Sized> Port for Box<P> {
    fn recv_batch(
        &mut self,
        max: usize,
        timeout: Option<Duration>,
        f: &mut dyn FnMut(&[u8]),
    ) -> io::Result<usize> {
        (**self).recv_batch(max, timeout, f)
    }
    fn send_batch(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        (**self).send_batch(frames)
    }
    fn flush(&mut self) -> io::Result<()> {
        (**self).flush()
    }
    fn take_unsent(&mut self) -> u64 {
        (**self).take_unsent()
    }
    fn tx_pending(&self) -> bool {
        (**self).tx_pending()
    }
    fn name(&self) -> &str {
        (**self).name()
    }
    fn kind(&self) -> PortKind {
        (**self).kind()
    }
    fn stats(&self) -> PortStats {
        (**self).stats()
    }
    fn is_exhausted(&self) -> bool {
        (**self).is_exhausted()
    }
    fn poll_fd(&self) -> Option<RawFd> {
        (**self).poll_fd()
    }
    fn busy_polls(&self) -> bool {
        (**self).busy_polls()
    }
    fn moves_buffers(&self) -> bool {
        (**self).moves_buffers()
    }
    fn recv_bufs(&mut self, max: usize, out: &mut Vec<PacketBuf>) -> io::Result<usize> {
        (**self).recv_bufs(max, out)
    }
    fn send_buf(&mut self, buf: PacketBuf) -> Result<(), PacketBuf> {
        (**self).send_buf(buf)
    }
    fn send_bufs(&mut self, bufs: &mut Vec<PacketBuf>) -> usize {
        (**self).send_bufs(bufs)
    }
}
