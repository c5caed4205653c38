//! AF_PACKET port: a TPACKET_V3 memory-mapped RX ring (block based: the kernel
//! fills blocks of frames, we walk a whole block per batch) and a TPACKET_V3
//! TX ring (fixed frames) kicked with one `sendto` per `flush`.
//!
//! Options: promiscuous mode, `PACKET_QDISC_BYPASS`, `PACKET_IGNORE_OUTGOING`
//! (so we do not receive our own transmissions), `PACKET_FANOUT` (hash) so
//! several workers can open the same interface with one group id and the
//! kernel spreads flows among them.
//!
//! Received VLAN tags: the kernel strips the outer 802.1Q/802.1ad tag into
//! metadata before packet sockets see the frame; it is put back in place so
//! the caller gets the frame as it was on the wire.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::sys::{self, Mmap, ctx, cvt, getsockopt, setsockopt};
use crate::{Port, PortKind, PortStats};

/// A `PACKET_FANOUT` group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fanout {
    /// Group id, shared by every socket of the group (per network namespace).
    pub group_id: u16,
    /// Reassemble IP fragments before hashing (`PACKET_FANOUT_FLAG_DEFRAG`), so
    /// all fragments of a datagram reach the same worker.
    pub defrag: bool,
}

/// Options of an [`AfPacketPort`].
#[derive(Clone, Debug)]
pub struct AfPacketOptions {
    /// Receive frames not addressed to the interface's MAC. Default true.
    pub promiscuous: bool,
    /// Send straight to the driver, skipping the qdisc (`PACKET_QDISC_BYPASS`).
    /// Default true.
    pub qdisc_bypass: bool,
    /// Do not receive frames sent on the interface, ours or anyone's
    /// (`PACKET_IGNORE_OUTGOING`). Default true.
    pub ignore_outgoing: bool,
    /// Join a hash fanout group. Default none.
    pub fanout: Option<Fanout>,
    /// RX ring block size in bytes (multiple of the page size). Default 256 KiB.
    pub rx_block_size: u32,
    /// Number of RX blocks. Default 32 (8 MiB of ring).
    pub rx_block_count: u32,
    /// Milliseconds after which the kernel hands over a partly filled block:
    /// the worst-case added latency at low rates. Default 1.
    pub rx_block_timeout_ms: u32,
    /// TX slot size in bytes (power of two, 0 = from the MTU). Default 0.
    pub tx_frame_size: u32,
    /// Number of TX slots. Default 2048.
    pub tx_frame_count: u32,
    /// Bring the interface up if it is down. Default false.
    pub set_up: bool,
}

impl Default for AfPacketOptions {
    fn default() -> Self {
        AfPacketOptions {
            promiscuous: true,
            qdisc_bypass: true,
            ignore_outgoing: true,
            fanout: None,
            rx_block_size: 256 * 1024,
            rx_block_count: 32,
            rx_block_timeout_ms: 1,
            tx_frame_size: 0,
            tx_frame_count: 2048,
            set_up: false,
        }
    }
}

// Offsets in struct tpacket_block_desc / tpacket_hdr_v1.
const BD_BLOCK_STATUS: usize = 8;
const BD_NUM_PKTS: usize = 12;
const BD_OFFSET_TO_FIRST_PKT: usize = 16;
// Offsets in struct tpacket3_hdr.
const H3_NEXT_OFFSET: usize = 0;
const H3_SNAPLEN: usize = 12;
const H3_LEN: usize = 16;
const H3_STATUS: usize = 20;
const H3_MAC: usize = 24;
const H3_VLAN_TCI: usize = 32;
const H3_VLAN_TPID: usize = 36;

/// Where we are inside the current RX block.
#[derive(Clone, Copy)]
struct BlockCursor {
    left: u32,
    offset: usize,
}

/// An AF_PACKET socket on one interface with memory-mapped RX and TX rings.
pub struct AfPacketPort {
    name: String,
    fd: OwnedFd,
    ring: Mmap,
    rx_block_size: usize,
    rx_block_count: usize,
    rx_block: usize,
    rx_cursor: Option<BlockCursor>,
    tx_base: usize,
    tx_frame_size: usize,
    tx_frame_count: usize,
    tx_data_off: usize,
    mtu: usize,
    tx_next: usize,
    tx_queued: usize,
    /// Frames taken back from the TX ring after a failed kick (see `reclaim_tx`).
    unsent: u64,
    /// The error of a kick that failed inside `send_batch`, for the next `flush`.
    tx_error: Option<io::Error>,
    vlan_scratch: Vec<u8>,
    stats: PortStats,
    kernel_drops: std::cell::Cell<u64>,
    description: String,
}

/// Whether the frame carries an 802.1Q / 802.1ad tag (the kernel allows 4
/// bytes over MTU + 14 for those).
pub(crate) fn is_vlan_tagged(fr: &[u8]) -> bool {
    fr.len() >= 18 && matches!([fr[12], fr[13]], [0x81, 0x00] | [0x88, 0xa8])
}

/// Whether `frame` can be sent on a port whose largest (VLAN-tagged) frame is
/// `max_tx` bytes: an Ethernet header, and untagged frames 4 bytes shorter.
pub(crate) fn sendable(max_tx: usize, frame: &[u8]) -> bool {
    let max = max_tx - 4 * usize::from(!is_vlan_tagged(frame));
    frame.len() >= 14 && frame.len() <= max
}

fn read_u32(p: *const u8, off: usize) -> u32 {
    // SAFETY: callers pass pointers inside the mapped ring, with `off` inside
    // the header they describe; unaligned read for safety.
    unsafe { p.add(off).cast::<u32>().read_unaligned() }
}

fn read_u16(p: *const u8, off: usize) -> u16 {
    // SAFETY: as read_u32.
    unsafe { p.add(off).cast::<u16>().read_unaligned() }
}

/// The status word shared with the kernel, as an atomic.
fn status_word<'a>(p: *mut u8, off: usize) -> &'a AtomicU32 {
    // SAFETY: status words in the ring are 4-byte aligned u32s that live as
    // long as the mapping, which outlives every use here (the port owns it).
    unsafe { &*(p.add(off).cast::<AtomicU32>()) }
}

impl AfPacketPort {
    /// Opens interface `iface` with `opts`.
    pub fn open(iface: &str, opts: &AfPacketOptions) -> io::Result<AfPacketPort> {
        Self::open_inner(iface, opts).map_err(|e| ctx(e, format_args!("AF_PACKET on {iface}")))
    }

    fn open_inner(iface: &str, opts: &AfPacketOptions) -> io::Result<AfPacketPort> {
        // Protocol 0: receive nothing until bind(), so the ring starts clean.
        let fd = sys::socket(libc::AF_PACKET, libc::SOCK_RAW, 0)?;
        let raw = fd.as_raw_fd();
        if opts.set_up {
            sys::set_up(raw, iface)?;
        }
        let ifindex = sys::ifindex(iface)?;
        let mtu = sys::mtu(raw, iface)?;

        let version: libc::c_int = libc::tpacket_versions::TPACKET_V3 as libc::c_int;
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_VERSION, &version)
            .map_err(|e| ctx(e, "PACKET_VERSION TPACKET_V3"))?;
        let mut hdrlen: libc::c_int = version;
        getsockopt(raw, libc::SOL_PACKET, libc::PACKET_HDRLEN, &mut hdrlen)
            .map_err(|e| ctx(e, "PACKET_HDRLEN"))?;
        // PACKET_HDRLEN gives sizeof(struct tpacket3_hdr); the kernel sends
        // from TPACKET_ALIGN(that) (its tp_hdrlen minus a sockaddr_ll).
        let tx_data_off = (hdrlen as usize).next_multiple_of(libc::TPACKET_ALIGNMENT);
        // Without PACKET_LOSS a frame the kernel rejects stays at the ring
        // head as WRONG_FORMAT and nothing after it is ever sent.
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_LOSS, &1 as &libc::c_int)
            .map_err(|e| ctx(e, "PACKET_LOSS"))?;
        if opts.qdisc_bypass {
            setsockopt(
                raw,
                libc::SOL_PACKET,
                libc::PACKET_QDISC_BYPASS,
                &1 as &libc::c_int,
            )
            .map_err(|e| ctx(e, "PACKET_QDISC_BYPASS"))?;
        }
        if opts.ignore_outgoing {
            setsockopt(
                raw,
                libc::SOL_PACKET,
                libc::PACKET_IGNORE_OUTGOING,
                &1 as &libc::c_int,
            )
            .map_err(|e| ctx(e, "PACKET_IGNORE_OUTGOING"))?;
        }

        // SAFETY: page size query, no pointers.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u32;
        let block_size = opts.rx_block_size.max(page).next_multiple_of(page);
        // Frame size only matters for the kernel's frame count check in V3.
        let rx_frame = 2048u32.min(block_size);
        let rx_req = libc::tpacket_req3 {
            tp_block_size: block_size,
            tp_block_nr: opts.rx_block_count.max(2),
            tp_frame_size: rx_frame,
            tp_frame_nr: (block_size / rx_frame) * opts.rx_block_count.max(2),
            tp_retire_blk_tov: opts.rx_block_timeout_ms.max(1),
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_RX_RING, &rx_req)
            .map_err(|e| ctx(e, "PACKET_RX_RING"))?;

        let tx_frame_size = if opts.tx_frame_size != 0 {
            opts.tx_frame_size.next_power_of_two()
        } else {
            // Ethernet header + two VLAN tags + slot header.
            (mtu + 14 + 8 + tx_data_off as u32)
                .next_power_of_two()
                .max(2048)
        };
        let tx_block = tx_frame_size.max(page) * 16;
        let tx_frames_per_block = tx_block / tx_frame_size;
        let tx_blocks = opts
            .tx_frame_count
            .max(tx_frames_per_block)
            .div_ceil(tx_frames_per_block);
        let tx_req = libc::tpacket_req3 {
            tp_block_size: tx_block,
            tp_block_nr: tx_blocks,
            tp_frame_size: tx_frame_size,
            tp_frame_nr: tx_blocks * tx_frames_per_block,
            tp_retire_blk_tov: 0,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_TX_RING, &tx_req)
            .map_err(|e| ctx(e, "PACKET_TX_RING"))?;

        let rx_len = block_size as usize * rx_req.tp_block_nr as usize;
        let tx_len = tx_block as usize * tx_blocks as usize;
        let ring = Mmap::map(Some(raw), rx_len + tx_len, 0, libc::MAP_POPULATE)
            .map_err(|e| ctx(e, "mmap of the packet rings"))?;

        // SAFETY: sockaddr_ll is plain old data.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: `sll` is a valid sockaddr_ll of the size passed.
        cvt(unsafe {
            libc::bind(
                raw,
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })
        .map_err(|e| ctx(e, "bind"))?;

        if opts.promiscuous {
            // SAFETY: packet_mreq is plain old data.
            let mut mreq: libc::packet_mreq = unsafe { std::mem::zeroed() };
            mreq.mr_ifindex = ifindex as i32;
            mreq.mr_type = libc::PACKET_MR_PROMISC as u16;
            setsockopt(raw, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)
                .map_err(|e| ctx(e, "PACKET_MR_PROMISC"))?;
        }

        let mut fanout_desc = String::new();
        if let Some(fo) = opts.fanout {
            let mut flags = 0;
            if fo.defrag {
                flags |= libc::PACKET_FANOUT_FLAG_DEFRAG;
            }
            let base = u32::from(fo.group_id) | (libc::PACKET_FANOUT_HASH << 16);
            // The per-socket IGNORE_OUTGOING does not apply to fanout groups
            // (they have their own hook): ask the group, if the kernel knows.
            let with_ign = base | ((flags | libc::PACKET_FANOUT_FLAG_IGNORE_OUTGOING) << 16);
            let plain = base | (flags << 16);
            let arg = if opts.ignore_outgoing {
                with_ign
            } else {
                plain
            };
            if let Err(e) = setsockopt(raw, libc::SOL_PACKET, libc::PACKET_FANOUT, &arg) {
                if arg != plain && e.raw_os_error() == Some(libc::EINVAL) {
                    setsockopt(raw, libc::SOL_PACKET, libc::PACKET_FANOUT, &plain)
                        .map_err(|e| ctx(e, "PACKET_FANOUT"))?;
                } else {
                    return Err(ctx(e, "PACKET_FANOUT"));
                }
            }
            fanout_desc = format!(", fanout hash group {}", fo.group_id);
        }

        let description = format!(
            "AF_PACKET TPACKET_V3 on {iface}: rx {} x {} KiB blocks ({} ms), tx {} x {} B slots{}{}{}",
            rx_req.tp_block_nr,
            block_size / 1024,
            rx_req.tp_retire_blk_tov,
            tx_req.tp_frame_nr,
            tx_frame_size,
            if opts.qdisc_bypass {
                ", qdisc bypass"
            } else {
                ""
            },
            if opts.promiscuous {
                ", promiscuous"
            } else {
                ""
            },
            fanout_desc,
        );
        Ok(AfPacketPort {
            name: iface.to_string(),
            fd,
            ring,
            rx_block_size: block_size as usize,
            rx_block_count: rx_req.tp_block_nr as usize,
            rx_block: 0,
            rx_cursor: None,
            tx_base: rx_len,
            tx_frame_size: tx_frame_size as usize,
            tx_frame_count: tx_req.tp_frame_nr as usize,
            tx_data_off,
            mtu: mtu as usize,
            tx_next: 0,
            tx_queued: 0,
            unsent: 0,
            tx_error: None,
            vlan_scratch: Vec::with_capacity(tx_frame_size as usize + 8),
            stats: PortStats::default(),
            kernel_drops: std::cell::Cell::new(0),
            description,
        })
    }

    /// What was set up, for start-up logs.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Largest frame `send_batch` accepts: MTU + Ethernet header + one VLAN
    /// tag (an untagged frame may be 4 bytes shorter), within a TX slot.
    pub fn max_tx_frame(&self) -> usize {
        (self.tx_frame_size - self.tx_data_off).min(self.mtu + 18)
    }

    fn block_ptr(&self, i: usize) -> *mut u8 {
        // SAFETY: i < rx_block_count, so the offset is inside the RX part of
        // the mapping.
        unsafe { self.ring.ptr.add(i * self.rx_block_size) }
    }

    fn tx_slot(&self, i: usize) -> *mut u8 {
        // SAFETY: i < tx_frame_count, so the slot is inside the TX part of the
        // mapping (frames never straddle blocks: block = 16 * frame size or a
        // page multiple of it).
        unsafe { self.ring.ptr.add(self.tx_base + i * self.tx_frame_size) }
    }

    /// After a kick that failed outright, marks every frame still waiting in the TX
    /// ring (`SEND_REQUEST`) free again and returns how many there were; they are
    /// taken off the sent counters. No kernel code works on the ring outside our
    /// `sendto`, so the slots are ours once it has returned.
    fn reclaim_tx(&mut self) -> u64 {
        let mut n = 0;
        for i in 0..self.tx_frame_count {
            let status = status_word(self.tx_slot(i), H3_STATUS);
            if status.load(Ordering::Acquire) == libc::TP_STATUS_SEND_REQUEST {
                let len = self.tx_len(i);
                status.store(libc::TP_STATUS_AVAILABLE, Ordering::Release);
                n += 1;
                self.stats.tx_packets = self.stats.tx_packets.saturating_sub(1);
                self.stats.tx_bytes = self.stats.tx_bytes.saturating_sub(len as u64);
                self.stats.tx_errors += 1;
            }
        }
        n
    }

    /// The frame length written into TX slot `i`.
    fn tx_len(&self, i: usize) -> u32 {
        // SAFETY: i < tx_frame_count (callers), so the header is inside the ring's
        // TX part; the length word was written by `send_batch`.
        unsafe { self.tx_slot(i).add(H3_LEN).cast::<u32>().read_unaligned() }
    }

    /// Delivers frames from ready blocks; returns how many.
    fn drain_blocks(&mut self, max: usize, f: &mut dyn FnMut(&[u8])) -> usize {
        let mut n = 0;
        while n < max {
            let block = self.block_ptr(self.rx_block);
            let status = status_word(block, BD_BLOCK_STATUS);
            let mut cur = match self.rx_cursor {
                Some(c) => c,
                None => {
                    if status.load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
                        break;
                    }
                    BlockCursor {
                        left: read_u32(block, BD_NUM_PKTS),
                        offset: read_u32(block, BD_OFFSET_TO_FIRST_PKT) as usize,
                    }
                }
            };
            while cur.left > 0 && n < max {
                // SAFETY: offsets come from the kernel and stay inside the
                // block (offset_to_first_pkt / tp_next_offset).
                let hdr = unsafe { block.add(cur.offset) };
                let snap = read_u32(hdr, H3_SNAPLEN) as usize;
                let mac = read_u16(hdr, H3_MAC) as usize;
                let st = read_u32(hdr, H3_STATUS);
                // SAFETY: tp_mac + tp_snaplen bytes after the header are the
                // frame, inside the block.
                let data = unsafe { std::slice::from_raw_parts(hdr.add(mac), snap) };
                let wire_len;
                if st & libc::TP_STATUS_VLAN_VALID != 0 && snap >= 12 {
                    let tci = read_u32(hdr, H3_VLAN_TCI) as u16;
                    let tpid = if st & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                        read_u16(hdr, H3_VLAN_TPID)
                    } else {
                        0x8100
                    };
                    let s = &mut self.vlan_scratch;
                    s.clear();
                    s.extend_from_slice(&data[..12]);
                    s.extend_from_slice(&tpid.to_be_bytes());
                    s.extend_from_slice(&tci.to_be_bytes());
                    s.extend_from_slice(&data[12..]);
                    wire_len = s.len();
                    f(s);
                } else {
                    wire_len = snap;
                    f(data);
                }
                self.stats.rx_packets += 1;
                self.stats.rx_bytes += wire_len as u64;
                n += 1;
                cur.left -= 1;
                cur.offset += read_u32(hdr, H3_NEXT_OFFSET) as usize;
            }
            if cur.left == 0 {
                status.store(libc::TP_STATUS_KERNEL, Ordering::Release);
                self.rx_block = (self.rx_block + 1) % self.rx_block_count;
                self.rx_cursor = None;
            } else {
                self.rx_cursor = Some(cur);
            }
        }
        n
    }
}

impl Port for AfPacketPort {
    fn recv_batch(
        &mut self,
        max: usize,
        timeout: Option<Duration>,
        f: &mut dyn FnMut(&[u8]),
    ) -> io::Result<usize> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let n = self.drain_blocks(max, f);
            if n > 0 || max == 0 {
                return Ok(n);
            }
            let Some(deadline) = deadline else {
                return Ok(0);
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(0);
            }
            let rev = sys::poll_one(self.fd.as_raw_fd(), libc::POLLIN | libc::POLLERR, left)?;
            if rev & libc::POLLERR != 0 {
                // Pending socket error (e.g. the interface went away).
                let mut err: libc::c_int = 0;
                getsockopt(
                    self.fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_ERROR,
                    &mut err,
                )?;
                if err != 0 {
                    return Err(ctx(
                        io::Error::from_raw_os_error(err),
                        format_args!("AF_PACKET on {}", self.name),
                    ));
                }
            }
            if rev == 0 {
                return Ok(0);
            }
        }
    }

    fn send_batch(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        let max_len = self.max_tx_frame();
        let mut kicked = false;
        for (i, fr) in frames.iter().enumerate() {
            if !sendable(max_len, fr) {
                self.stats.tx_dropped += 1;
                continue;
            }
            let slot = self.tx_slot(self.tx_next);
            let status = status_word(slot, H3_STATUS);
            let mut st = status.load(Ordering::Acquire);
            if st == libc::TP_STATUS_SEND_REQUEST || st == libc::TP_STATUS_SENDING {
                // Ring full: hand what we queued to the kernel once, then look again.
                if !kicked {
                    kicked = true;
                    if let Err(e) = self.flush() {
                        // the ring was taken back (counted in `unsent`): these i
                        // frames were accepted, the caller sees the error on flush
                        self.tx_error = Some(e);
                        return Ok(i);
                    }
                    st = status.load(Ordering::Acquire);
                }
                if st == libc::TP_STATUS_SEND_REQUEST || st == libc::TP_STATUS_SENDING {
                    return Ok(i);
                }
            }
            if st & libc::TP_STATUS_WRONG_FORMAT != 0 {
                self.stats.tx_dropped += 1;
            }
            // SAFETY: the slot is ours (status AVAILABLE); the data area
            // starts at tx_data_off and max_len bytes fit in the slot.
            unsafe {
                std::ptr::copy_nonoverlapping(fr.as_ptr(), slot.add(self.tx_data_off), fr.len());
                slot.add(H3_NEXT_OFFSET).cast::<u32>().write_unaligned(0);
                slot.add(H3_LEN)
                    .cast::<u32>()
                    .write_unaligned(fr.len() as u32);
                slot.add(H3_SNAPLEN)
                    .cast::<u32>()
                    .write_unaligned(fr.len() as u32);
            }
            status.store(libc::TP_STATUS_SEND_REQUEST, Ordering::Release);
            self.tx_next = (self.tx_next + 1) % self.tx_frame_count;
            self.tx_queued += 1;
            self.stats.tx_packets += 1;
            self.stats.tx_bytes += fr.len() as u64;
        }
        Ok(frames.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if let Some(e) = self.tx_error.take() {
            return Err(e);
        }
        if self.tx_queued == 0 {
            return Ok(());
        }
        self.tx_queued = 0;
        match sys::kick_tx(&self.fd) {
            Ok(()) => Ok(()),
            // The device queue is full or busy: frames stay in the ring and
            // go with the next kick.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EAGAIN)
                        | Some(libc::ENOBUFS)
                        | Some(libc::EBUSY)
                        | Some(libc::EINTR)
                ) =>
            {
                self.tx_queued = 1;
                Ok(())
            }
            Err(e) => {
                // the kernel took none of the queued frames (the interface went
                // away, ...): they would sit in the ring as sent, so take them back
                let n = self.reclaim_tx();
                self.unsent += n;
                Err(ctx(e, format_args!("AF_PACKET tx on {}", self.name)))
            }
        }
    }

    fn take_unsent(&mut self) -> u64 {
        std::mem::take(&mut self.unsent)
    }

    /// Frames in the transmit ring not handed to the kernel yet (the last kick found
    /// the device busy). A kick that succeeded has sent every frame of the ring
    /// (`tpacket_snd` transmits them before it returns).
    fn tx_pending(&self) -> bool {
        self.tx_queued > 0
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> PortKind {
        PortKind::AfPacket
    }

    fn stats(&self) -> PortStats {
        // PACKET_STATISTICS resets the kernel's counters on read: accumulate.
        let mut st = libc::tpacket_stats_v3 {
            tp_packets: 0,
            tp_drops: 0,
            tp_freeze_q_cnt: 0,
        };
        if getsockopt(
            self.fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            &mut st,
        )
        .is_ok()
        {
            self.kernel_drops
                .set(self.kernel_drops.get() + u64::from(st.tp_drops));
        }
        PortStats {
            rx_dropped: self.kernel_drops.get(),
            ..self.stats
        }
    }

    fn poll_fd(&self) -> Option<RawFd> {
        Some(self.fd.as_raw_fd())
    }
}

impl Drop for AfPacketPort {
    fn drop(&mut self) {
        // Give queued frames a last chance to leave.
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tpacket3_layout_matches_offsets() {
        use super::*;
        assert_eq!(std::mem::size_of::<libc::tpacket3_hdr>(), 48);
        assert_eq!(
            std::mem::offset_of!(libc::tpacket3_hdr, tp_status),
            H3_STATUS
        );
        assert_eq!(std::mem::offset_of!(libc::tpacket3_hdr, tp_mac), H3_MAC);
        assert_eq!(
            std::mem::offset_of!(libc::tpacket3_hdr, tp_snaplen),
            H3_SNAPLEN
        );
        assert_eq!(std::mem::offset_of!(libc::tpacket3_hdr, tp_len), H3_LEN);
        assert_eq!(
            std::mem::offset_of!(libc::tpacket_block_desc, hdr) + 4,
            BD_NUM_PKTS
        );
    }
}
