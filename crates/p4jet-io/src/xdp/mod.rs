//! AF_XDP port, with raw syscalls (no libbpf).
//!
//! Per interface, one XSKMAP and one XDP program (`bpf_redirect_map(&xsks,
//! rx_queue_index, XDP_PASS)`) are attached, shared by every [`AfXdpPort`] of
//! this process on that interface, and detached when the last one is dropped
//! (a bpf link: the kernel detaches even if the process dies).
//!
//! Per receive queue, one XDP socket with its own UMEM (fill, completion, rx
//! and tx rings, all mmapped). A port covers every receive queue of the
//! interface by default, or one queue (`AfXdpOptions::queue`) so that N
//! workers can each own one. Frames of queues without a socket go to the
//! kernel stack.
//!
//! Modes: native XDP (`DRV`) where the driver has it, else generic (`SKB`);
//! zero-copy where the driver allows it (auto, or forced), else copy mode.
//! Fill and completion rings are handled in batches; `need_wakeup` is used so
//! syscalls are made only when the kernel asks for them.

mod bpf;

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use crate::sys::{self, Mmap, ctx, cvt, getsockopt, setsockopt};
use crate::{Port, PortKind, PortStats};
use p4jet_buf::{Frame, FrameRegion, PacketBuf};

/// Where the XDP program runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdpMode {
    /// Native (driver) mode if the driver supports it, else generic.
    Auto,
    /// Generic XDP (`XDP_FLAGS_SKB_MODE`): every driver, slower, copy mode only.
    Skb,
    /// Native XDP (`XDP_FLAGS_DRV_MODE`): fails if the driver lacks it.
    Drv,
}

/// Zero-copy policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZeroCopy {
    /// Zero-copy when the driver allows it, else copy mode.
    Auto,
    /// Zero-copy or fail.
    Force,
    /// Always copy mode.
    Off,
}

/// Options of an [`AfXdpPort`].
#[derive(Clone, Debug)]
pub struct AfXdpOptions {
    /// XDP attach mode. Default `Auto`.
    pub mode: XdpMode,
    /// Zero-copy policy. Default `Auto`.
    pub zero_copy: ZeroCopy,
    /// Receive queue to bind; `None` = all queues of the interface. Default None.
    pub queue: Option<u32>,
    /// UMEM frame (chunk) size: 2048 or 4096; 0 = from the MTU. Default 0.
    pub frame_size: u32,
    /// Frames per queue for reception (= fill and rx ring size, power of two).
    /// Default 2048.
    pub rx_frames: u32,
    /// Frames per queue for transmission (= tx and completion ring size,
    /// power of two). Default 2048.
    pub tx_frames: u32,
    /// Use `XDP_USE_NEED_WAKEUP`. Default true.
    pub need_wakeup: bool,
    /// Bring the interface up if it is down. Default false.
    pub set_up: bool,
}

impl Default for AfXdpOptions {
    fn default() -> Self {
        AfXdpOptions {
            mode: XdpMode::Auto,
            zero_copy: ZeroCopy::Auto,
            queue: None,
            frame_size: 0,
            rx_frames: 2048,
            tx_frames: 2048,
            need_wakeup: true,
            set_up: false,
        }
    }
}

/// The program and map attached to one interface.
struct XdpAttachment {
    map: OwnedFd,
    // Field order: detach (drop the attachment) before closing the program.
    _attachment: bpf::Attachment,
    _prog: OwnedFd,
    drv_mode: bool,
    map_entries: u32,
}

type Registry = Mutex<Vec<((u64, u32), Weak<XdpAttachment>)>>;
static REGISTRY: Registry = Mutex::new(Vec::new());

/// Network namespace identity of the calling thread (inode of its ns file).
fn netns_id() -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/thread-self/ns/net")
        .map(|m| m.ino())
        .unwrap_or(0)
}

/// Gets the attachment for `ifindex`, creating it if this process has none.
fn attachment(
    ifindex: u32,
    iface: &str,
    queues: u32,
    mode: XdpMode,
) -> io::Result<Arc<XdpAttachment>> {
    let key = (netns_id(), ifindex);
    let mut reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
    reg.retain(|(_, w)| w.strong_count() > 0);
    if let Some(a) = reg
        .iter()
        .find(|(k, _)| *k == key)
        .and_then(|(_, w)| w.upgrade())
    {
        if mode == XdpMode::Drv && !a.drv_mode {
            return Err(io::Error::other(format!(
                "{iface} already has p4jet's XDP program in SKB mode"
            )));
        }
        return Ok(a);
    }
    let map = bpf::create_xskmap(queues)?;
    let prog = bpf::load_redirect_prog(&map)?;
    let (attachment, drv) = match mode {
        XdpMode::Skb => (bpf::attach(&prog, ifindex, bpf::XDP_FLAGS_SKB_MODE), false),
        XdpMode::Drv => (bpf::attach(&prog, ifindex, bpf::XDP_FLAGS_DRV_MODE), true),
        XdpMode::Auto => match bpf::attach(&prog, ifindex, bpf::XDP_FLAGS_DRV_MODE) {
            Ok(a) => (Ok(a), true),
            Err(e)
                if e.raw_os_error() == Some(libc::EBUSY)
                    || e.raw_os_error() == Some(libc::EEXIST) =>
            {
                (Err(e), true)
            }
            Err(_) => (bpf::attach(&prog, ifindex, bpf::XDP_FLAGS_SKB_MODE), false),
        },
    };
    let attachment = attachment.map_err(|e| {
        let hint = match e.raw_os_error() {
            Some(libc::EBUSY) | Some(libc::EEXIST) => " (another XDP program is attached to it)",
            _ => "",
        };
        ctx(
            e,
            format_args!(
                "attaching XDP ({} mode) to {iface}{hint}",
                if drv { "native" } else { "generic" }
            ),
        )
    })?;
    let a = Arc::new(XdpAttachment {
        map,
        _attachment: attachment,
        _prog: prog,
        drv_mode: drv,
        map_entries: queues,
    });
    reg.push((key, Arc::downgrade(&a)));
    Ok(a)
}

/// One mmapped AF_XDP ring.
struct Ring {
    _map: Mmap,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    desc: *mut u8,
    mask: u32,
    size: u32,
    /// Producer rings: our producer index; consumer rings: our consumer index.
    local: u32,
    /// Producer rings: last seen consumer + size; consumer rings: last seen producer.
    cached: u32,
}

impl Ring {
    fn map(
        fd: RawFd,
        off: &libc::xdp_ring_offset,
        pgoff: u64,
        size: u32,
        entry: usize,
    ) -> io::Result<Ring> {
        let len = off.desc as usize + size as usize * entry;
        let m = Mmap::map(Some(fd), len, pgoff as i64, libc::MAP_POPULATE)?;
        // SAFETY: the offsets come from XDP_MMAP_OFFSETS for this mapping.
        let (producer, consumer, flags, desc) = unsafe {
            (
                m.ptr
                    .add(off.producer as usize)
                    .cast::<AtomicU32>()
                    .cast_const(),
                m.ptr
                    .add(off.consumer as usize)
                    .cast::<AtomicU32>()
                    .cast_const(),
                m.ptr
                    .add(off.flags as usize)
                    .cast::<AtomicU32>()
                    .cast_const(),
                m.ptr.add(off.desc as usize),
            )
        };
        Ok(Ring {
            _map: m,
            producer,
            consumer,
            flags,
            desc,
            mask: size - 1,
            size,
            local: 0,
            cached: 0,
        })
    }

    fn prod(&self) -> &AtomicU32 {
        // SAFETY: points into the mapping we own, aligned by the kernel.
        unsafe { &*self.producer }
    }
    fn cons(&self) -> &AtomicU32 {
        // SAFETY: as prod.
        unsafe { &*self.consumer }
    }
    fn needs_wakeup(&self) -> bool {
        // SAFETY: as prod.
        unsafe { &*self.flags }.load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0
    }

    /// Producer ring: free slots (at most `want`).
    fn free(&mut self, want: u32) -> u32 {
        let mut free = self.cached.wrapping_sub(self.local);
        if free < want {
            self.cached = self.cons().load(Ordering::Acquire).wrapping_add(self.size);
            free = self.cached.wrapping_sub(self.local);
        }
        free.min(want)
    }
    /// Producer ring: publish everything written so far.
    fn submit(&self) {
        self.prod().store(self.local, Ordering::Release);
    }
    /// Consumer ring: entries available (at most `want`).
    fn available(&mut self, want: u32) -> u32 {
        let mut n = self.cached.wrapping_sub(self.local);
        if n == 0 {
            self.cached = self.prod().load(Ordering::Acquire);
            n = self.cached.wrapping_sub(self.local);
        }
        n.min(want)
    }
    /// Consumer ring: give back what we read.
    fn release(&self) {
        self.cons().store(self.local, Ordering::Release);
    }
    /// Entry `i` (ring index, masked here) as a pointer.
    fn entry(&self, i: u32, size: usize) -> *mut u8 {
        // SAFETY: masked index < size entries of `size` bytes in the mapping.
        unsafe { self.desc.add((i & self.mask) as usize * size) }
    }
    /// Producer ring: entries the kernel has not consumed yet.
    fn outstanding(&self) -> u32 {
        self.local.wrapping_sub(self.cons().load(Ordering::Acquire))
    }
}

const DESC: usize = std::mem::size_of::<libc::xdp_desc>();

/// A UMEM: a [`FrameRegion`] registered with AF_XDP. The AF_XDP ports of one
/// worker share one (each socket binds with `XDP_SHARED_UMEM` to the first socket
/// still open, with its own fill and completion rings), and the packets they
/// receive are buffers in its chunks ([`Port::recv_bufs`]): a frame forwarded from
/// one of these ports to another is transmitted from the chunk it arrived in.
pub struct Umem {
    region: Arc<FrameRegion>,
    /// Bound sockets using this UMEM: (id, fd). A new socket shares the UMEM of
    /// the first; with none, it registers the region again.
    members: Mutex<Vec<(u64, RawFd, bool)>>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for Umem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Umem({:?})", self.region)
    }
}

impl Umem {
    /// Maps a UMEM of `frames` chunks of `frame_size` bytes (2048 or 4096).
    pub fn new(frame_size: u32, frames: u32) -> io::Result<Arc<Umem>> {
        if frame_size != 2048 && frame_size != 4096 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("UMEM frame size {frame_size}: must be 2048 or 4096"),
            ));
        }
        let region = FrameRegion::new(frame_size, frames).map_err(|e| ctx(e, "UMEM"))?;
        Ok(Arc::new(Umem {
            region,
            members: Mutex::new(vec![]),
            next_id: AtomicU64::new(1),
        }))
    }

    /// The frames.
    pub fn region(&self) -> &Arc<FrameRegion> {
        &self.region
    }

    /// Bytes per frame.
    pub fn frame_size(&self) -> u32 {
        self.region.chunk_size()
    }

    fn members(&self) -> std::sync::MutexGuard<'_, Vec<(u64, RawFd, bool)>> {
        self.members.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The UMEM of one worker, made when its first AF_XDP port opens (with that
/// port's frame size) and shared by the ports opened after it.
#[derive(Debug)]
pub struct UmemSlot {
    frames: u32,
    umem: Mutex<Option<Arc<Umem>>>,
}

impl UmemSlot {
    /// A slot whose UMEM will have `frames` frames.
    pub fn new(frames: u32) -> Arc<UmemSlot> {
        Arc::new(UmemSlot {
            frames: frames.max(256),
            umem: Mutex::new(None),
        })
    }

    /// The UMEM, made now with `frame_size` if there is none yet.
    pub fn get(&self, frame_size: u32) -> io::Result<Arc<Umem>> {
        let mut g = self.umem.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(u) = &*g {
            return Ok(u.clone());
        }
        let u = Umem::new(frame_size, self.frames)?;
        *g = Some(u.clone());
        Ok(u)
    }
}

/// Chunks of a UMEM that one socket gave the kernel (fill and tx rings), one bit
/// each. A descriptor the kernel returns is only taken back if its bit is set, so
/// no chunk can ever be owned twice. Dropped after the socket is closed: the
/// chunks go back to the region (copy mode; in zero-copy mode the driver may still
/// write them until it tears the queue down, so they are left unused).
struct KernelChunks {
    region: Arc<FrameRegion>,
    bits: Vec<u64>,
    release_on_drop: bool,
}

impl KernelChunks {
    fn new(region: Arc<FrameRegion>) -> KernelChunks {
        let words = (region.count() as usize).div_ceil(64);
        KernelChunks {
            region,
            bits: vec![0; words],
            release_on_drop: true,
        }
    }

    /// Records that chunk `idx` now belongs to the kernel.
    #[inline]
    fn give(&mut self, idx: u32) {
        self.bits[idx as usize / 64] |= 1 << (idx % 64);
    }

    /// Takes chunk `idx` back from the kernel; false if it was not the kernel's.
    #[inline]
    fn take_back(&mut self, idx: u32) -> bool {
        let w = &mut self.bits[idx as usize / 64];
        let m = 1 << (idx % 64);
        let had = *w & m != 0;
        *w &= !m;
        had
    }
}

impl Drop for KernelChunks {
    fn drop(&mut self) {
        if !self.release_on_drop {
            return;
        }
        for (w, bits) in self.bits.iter().enumerate() {
            let mut b = *bits;
            while b != 0 {
                let idx = w as u32 * 64 + b.trailing_zeros();
                b &= b - 1;
                // SAFETY: the socket that had these chunks is closed (this value is
                // the last field of `Xsk` and the fd is dropped before it), and in
                // copy mode the kernel only touches a socket's chunks while it is
                // bound; so nothing uses them any more.
                unsafe { self.region.release_raw(idx) };
            }
        }
    }
}

/// One XDP socket bound to one queue, on a (possibly shared) UMEM.
struct Xsk {
    // Field order is drop order: rings unmapped, socket closed, then the
    // chunks the kernel held are returned.
    fill: Ring,
    comp: Ring,
    rx: Ring,
    tx: Ring,
    fd: OwnedFd,
    umem: Arc<Umem>,
    id: u64,
    queue: u32,
    frame_size: u32,
    zero_copy: bool,
    need_wakeup: bool,
    kernel: KernelChunks,
}

// SAFETY: the raw pointers point into mappings owned by this value; nothing
// else refers to them, so moving the value to another thread is sound.
unsafe impl Send for Xsk {}

impl Xsk {
    fn open(
        ifindex: u32,
        queue: u32,
        opts: &AfXdpOptions,
        umem: &Arc<Umem>,
        bind_flags: u16,
    ) -> io::Result<Xsk> {
        let fd =
            sys::socket(libc::AF_XDP, libc::SOCK_RAW, 0).map_err(|e| ctx(e, "socket(AF_XDP)"))?;
        let raw = fd.as_raw_fd();
        let region = umem.region.clone();
        let frame_size = region.chunk_size();
        let rx_n = opts.rx_frames.max(64).next_power_of_two();
        let tx_n = opts.tx_frames.max(64).next_power_of_two();
        // Held while binding, so that the socket shared with cannot close meanwhile.
        let mut members = umem.members();
        let share_with = members.first().map(|m| m.1);
        let need_wakeup = members.first().map_or(opts.need_wakeup, |m| m.2);
        if share_with.is_none() {
            let reg = libc::xdp_umem_reg {
                addr: region.base() as u64,
                len: region.len() as u64,
                chunk_size: frame_size,
                headroom: 0,
                flags: 0,
                tx_metadata_len: 0,
            };
            setsockopt(raw, libc::SOL_XDP, libc::XDP_UMEM_REG, &reg)
                .map_err(|e| ctx(e, "XDP_UMEM_REG"))?;
        }
        setsockopt(raw, libc::SOL_XDP, libc::XDP_UMEM_FILL_RING, &rx_n)
            .map_err(|e| ctx(e, "XDP_UMEM_FILL_RING"))?;
        setsockopt(raw, libc::SOL_XDP, libc::XDP_UMEM_COMPLETION_RING, &tx_n)
            .map_err(|e| ctx(e, "XDP_UMEM_COMPLETION_RING"))?;
        setsockopt(raw, libc::SOL_XDP, libc::XDP_RX_RING, &rx_n)
            .map_err(|e| ctx(e, "XDP_RX_RING"))?;
        setsockopt(raw, libc::SOL_XDP, libc::XDP_TX_RING, &tx_n)
            .map_err(|e| ctx(e, "XDP_TX_RING"))?;
        // SAFETY: plain old data.
        let mut off: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
        let got = getsockopt(raw, libc::SOL_XDP, libc::XDP_MMAP_OFFSETS, &mut off)
            .map_err(|e| ctx(e, "XDP_MMAP_OFFSETS"))?;
        if got != std::mem::size_of::<libc::xdp_mmap_offsets>() {
            return Err(io::Error::other(
                "kernel too old: no ring flags in XDP_MMAP_OFFSETS (need >= 5.4)",
            ));
        }
        let mut fill = Ring::map(raw, &off.fr, libc::XDP_UMEM_PGOFF_FILL_RING, rx_n, 8)
            .map_err(|e| ctx(e, "fill ring mmap"))?;
        let comp = Ring::map(raw, &off.cr, libc::XDP_UMEM_PGOFF_COMPLETION_RING, tx_n, 8)
            .map_err(|e| ctx(e, "completion ring mmap"))?;
        let rx = Ring::map(raw, &off.rx, libc::XDP_PGOFF_RX_RING as u64, rx_n, DESC)
            .map_err(|e| ctx(e, "rx ring mmap"))?;
        let mut tx = Ring::map(raw, &off.tx, libc::XDP_PGOFF_TX_RING as u64, tx_n, DESC)
            .map_err(|e| ctx(e, "tx ring mmap"))?;
        tx.cached = tx.size;
        fill.cached = fill.size;
        let mut kernel = KernelChunks::new(region.clone());
        // Fill the fill ring before bind (the chunks go back if bind fails:
        // `kernel` is dropped with the unbound socket).
        Self::refill_ring(&mut fill, &region, &mut kernel);

        // Sockets sharing a UMEM take their mode from the socket shared with: the
        // kernel refuses mode flags on them.
        let flags = match share_with {
            Some(_) => libc::XDP_SHARED_UMEM,
            None => {
                bind_flags
                    | if need_wakeup {
                        libc::XDP_USE_NEED_WAKEUP
                    } else {
                        0
                    }
            }
        };
        let sa = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: flags,
            sxdp_ifindex: ifindex,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: share_with.map_or(0, |f| f as u32),
        };
        // A queue freed by a socket closed just before is released by the
        // kernel asynchronously: retry EBUSY for a short while.
        let deadline = Instant::now() + Duration::from_millis(1000);
        loop {
            // SAFETY: valid sockaddr_xdp of the given size.
            let r = cvt(unsafe {
                libc::bind(
                    raw,
                    (&sa as *const libc::sockaddr_xdp).cast(),
                    std::mem::size_of::<libc::sockaddr_xdp>() as u32,
                )
            });
            match r {
                Ok(_) => break,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    return Err(ctx(
                        e,
                        format_args!(
                            "bind AF_XDP to queue {queue} (another AF_XDP socket owns it?)"
                        ),
                    ));
                }
                Err(e) => {
                    return Err(ctx(
                        e,
                        format_args!(
                            "bind AF_XDP to queue {queue}{}",
                            if share_with.is_some() {
                                " sharing the worker's UMEM"
                            } else {
                                ""
                            }
                        ),
                    ));
                }
            }
        }
        let mut xo = libc::xdp_options { flags: 0 };
        let zero_copy = getsockopt(raw, libc::SOL_XDP, libc::XDP_OPTIONS, &mut xo).is_ok()
            && xo.flags & libc::XDP_OPTIONS_ZEROCOPY != 0;
        kernel.release_on_drop = !zero_copy;
        let id = umem.next_id.fetch_add(1, Ordering::Relaxed);
        members.push((id, raw, need_wakeup));
        drop(members);
        Ok(Xsk {
            fill,
            comp,
            rx,
            tx,
            fd,
            umem: umem.clone(),
            id,
            queue,
            frame_size,
            zero_copy,
            // a shared socket has the need_wakeup setting of the socket shared with
            need_wakeup,
            kernel,
        })
    }

    /// Puts free chunks of the region into the fill ring, as many as fit.
    fn refill_ring(fill: &mut Ring, region: &FrameRegion, kernel: &mut KernelChunks) {
        let room = fill.free(fill.size);
        let mut k = 0;
        while k < room {
            let Some(idx) = region.take_raw() else {
                break;
            };
            kernel.give(idx);
            let e = fill.entry(fill.local.wrapping_add(k), 8);
            // SAFETY: fill entries are u64 slots inside the ring.
            unsafe { e.cast::<u64>().write(region.offset_of(idx)) };
            k += 1;
        }
        if k > 0 {
            fill.local = fill.local.wrapping_add(k);
            fill.submit();
        }
    }

    fn wake_rx(&self) {
        if self.need_wakeup && self.fill.needs_wakeup() {
            let _ = sys::poll_one(self.fd.as_raw_fd(), libc::POLLIN, Duration::ZERO);
        }
    }

    /// Reads rx descriptor `i` of the next batch: (chunk, offset in chunk, length)
    /// if it names a chunk this socket gave the kernel.
    fn rx_desc(&mut self, i: u32) -> Option<(u32, usize, usize)> {
        let d = self.rx.entry(self.rx.local.wrapping_add(i), DESC);
        // SAFETY: rx entries are xdp_desc written by the kernel.
        let desc = unsafe { d.cast::<libc::xdp_desc>().read() };
        let region = &self.umem.region;
        let idx = region.chunk_of(desc.addr)?;
        if !self.kernel.take_back(idx) {
            return None;
        }
        let off = (desc.addr - region.offset_of(idx)) as usize;
        let len = desc.len as usize;
        if off + len > self.frame_size as usize {
            // cannot happen for a well-behaved kernel; the chunk is ours again
            // SAFETY: taken back from the kernel just above.
            unsafe { region.release_raw(idx) };
            return None;
        }
        Some((idx, off, len))
    }

    /// Takes up to `max` received frames back from the kernel, each as its chunk
    /// with the frame's offset and length; tops the fill ring up again from the
    /// region's free chunks. Returns how many.
    fn recv_frames(
        &mut self,
        max: u32,
        stats: &mut PortStats,
        f: &mut dyn FnMut(Frame, usize, usize),
    ) -> u32 {
        let n = self.rx.available(max);
        if n > 0 {
            let region = self.umem.region.clone();
            for i in 0..n {
                let Some((idx, off, len)) = self.rx_desc(i) else {
                    continue;
                };
                // SAFETY: chunk `idx` came back from the kernel through the rx ring
                // (its bit was set, see rx_desc) and is owned by the new Frame alone.
                let frame = unsafe { region.frame_from_raw(idx) };
                stats.rx_packets += 1;
                stats.rx_bytes += len as u64;
                f(frame, off, len);
            }
            self.rx.local = self.rx.local.wrapping_add(n);
            self.rx.release();
        }
        Self::refill_ring(&mut self.fill, &self.umem.region, &mut self.kernel);
        // the kernel may wait for fill-ring entries and a wakeup
        self.wake_rx();
        n
    }

    /// Delivers up to `max` received frames as slices (their chunks go back to the
    /// free list at once, and so to the fill ring); returns how many.
    fn recv(&mut self, max: u32, f: &mut dyn FnMut(&[u8]), stats: &mut PortStats) -> u32 {
        self.recv_frames(max, stats, &mut |fr, off, len| f(&fr[off..off + len]))
    }

    /// Appends up to `max` received frames to `out` as buffers in their chunks;
    /// returns how many.
    fn recv_bufs(&mut self, max: u32, out: &mut Vec<PacketBuf>, stats: &mut PortStats) -> u32 {
        self.recv_frames(max, stats, &mut |fr, off, len| {
            out.push(PacketBuf::in_frame(fr, off, off + len))
        })
    }

    /// Returns completed tx chunks to the region.
    fn reclaim(&mut self) {
        let n = self.comp.available(self.comp.size);
        for i in 0..n {
            let e = self.comp.entry(self.comp.local.wrapping_add(i), 8);
            // SAFETY: completion entries are u64 frame addresses.
            let addr = unsafe { e.cast::<u64>().read() };
            if let Some(idx) = self.umem.region.chunk_of(addr)
                && self.kernel.take_back(idx)
            {
                // SAFETY: the kernel completed the transmission from this chunk
                // and gave it back; it was ours before (its bit was set).
                unsafe { self.umem.region.release_raw(idx) };
            }
        }
        self.comp.local = self.comp.local.wrapping_add(n);
        if n > 0 {
            self.comp.release();
        }
    }

    fn push_tx_desc(&mut self, addr: u64, len: usize) {
        let d = self.tx.entry(self.tx.local, DESC);
        let desc = libc::xdp_desc {
            addr,
            len: len as u32,
            options: 0,
        };
        // SAFETY: tx entries are xdp_desc slots inside the ring.
        unsafe { d.cast::<libc::xdp_desc>().write(desc) };
        self.tx.local = self.tx.local.wrapping_add(1);
    }

    /// Queues a copy of one frame in a free chunk; false if no chunk or ring slot
    /// is free. The caller checked frame.len() <= frame_size.
    fn queue_tx(&mut self, frame: &[u8]) -> bool {
        if self.tx.free(1) == 0 {
            return false;
        }
        let Some(mut chunk) = self.umem.region.take() else {
            return false;
        };
        chunk[..frame.len()].copy_from_slice(frame);
        let idx = chunk.into_raw();
        self.kernel.give(idx);
        self.push_tx_desc(self.umem.region.offset_of(idx), frame.len());
        true
    }

    /// Queues `chunk[start..start + len]`, a chunk of this socket's UMEM, without
    /// copying. The caller checked that the tx ring has a free slot.
    fn queue_tx_in_place(&mut self, chunk: Frame, start: usize, len: usize) {
        let idx = chunk.into_raw();
        self.kernel.give(idx);
        self.push_tx_desc(self.umem.region.offset_of(idx) + start as u64, len);
    }

    /// Kicks the kernel until the tx ring is drained (copy mode sends at most
    /// a small batch per syscall) or the kernel says "later".
    fn kick(&mut self) -> io::Result<()> {
        self.tx.submit();
        let mut rounds = self.tx.outstanding() / 16 + 4;
        while self.tx.outstanding() > 0 && rounds > 0 {
            rounds -= 1;
            if !self.need_wakeup || self.tx.needs_wakeup() {
                if let Err(e) = sys::kick_tx(&self.fd) {
                    match e.raw_os_error() {
                        Some(libc::EAGAIN) | Some(libc::EBUSY) | Some(libc::ENOBUFS)
                        | Some(libc::EINTR) => {}
                        Some(libc::ENETDOWN) | Some(libc::ENXIO) => return Err(e),
                        _ => return Err(e),
                    }
                }
            } else if self.zero_copy {
                break;
            }
            self.reclaim();
        }
        self.reclaim();
        Ok(())
    }
}

impl Drop for Xsk {
    fn drop(&mut self) {
        // no socket may share this UMEM through our fd once it is closed
        self.umem.members().retain(|m| m.0 != self.id);
    }
}

/// An AF_XDP port: one XDP socket per bound receive queue.
pub struct AfXdpPort {
    name: String,
    // Sockets before the attachment: their map slots are cleared in Drop,
    // then the program is detached when the last port of the interface goes.
    xsks: Vec<Xsk>,
    attach: Arc<XdpAttachment>,
    umem: Arc<Umem>,
    on_slot: bool,
    next_rx: usize,
    max_tx: usize,
    stats: PortStats,
    description: String,
}

impl AfXdpPort {
    /// Opens interface `iface` with `opts`.
    pub fn open(iface: &str, opts: &AfXdpOptions) -> io::Result<AfXdpPort> {
        Self::open_inner(iface, opts, None, None)
            .map_err(|e| ctx(e, format_args!("AF_XDP on {iface}")))
    }

    /// Opens `iface` on the UMEM of `slot` (made by the first port opened on it),
    /// shared with the other ports opened on the same slot: frames received on one
    /// of them are sent from their chunk on another. `queues`: as
    /// [`AfXdpPort::open_queues`], or `None` for `opts.queue` / every queue. Falls
    /// back to a UMEM of its own (and says so in the description) if the kernel
    /// refuses to share, or the slot's frames are smaller than this interface needs.
    pub fn open_shared(
        iface: &str,
        opts: &AfXdpOptions,
        queues: Option<&[u32]>,
        slot: &UmemSlot,
    ) -> io::Result<AfXdpPort> {
        if queues.is_some_and(|q| q.is_empty()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("AF_XDP on {iface}: no queue given"),
            ));
        }
        Self::open_inner(iface, opts, queues, Some(slot))
            .map_err(|e| ctx(e, format_args!("AF_XDP on {iface}")))
    }

    /// Opens `iface` on the receive queues `queues` only (one worker's share of a
    /// multi-queue interface; `opts.queue` is ignored).
    pub fn open_queues(iface: &str, opts: &AfXdpOptions, queues: &[u32]) -> io::Result<AfXdpPort> {
        if queues.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("AF_XDP on {iface}: no queue given"),
            ));
        }
        Self::open_inner(iface, opts, Some(queues), None)
            .map_err(|e| ctx(e, format_args!("AF_XDP on {iface}")))
    }

    fn open_inner(
        iface: &str,
        opts: &AfXdpOptions,
        only: Option<&[u32]>,
        slot: Option<&UmemSlot>,
    ) -> io::Result<AfXdpPort> {
        let probe = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
        if opts.set_up {
            sys::set_up(probe.as_raw_fd(), iface)?;
        }
        let ifindex = sys::ifindex(iface)?;
        let mtu = sys::mtu(probe.as_raw_fd(), iface)?;
        let nq = sys::rx_queue_count(probe.as_raw_fd(), iface);
        let wanted = match only {
            Some(qs) => qs.to_vec(),
            None => opts.queue.map(|q| vec![q]).unwrap_or_default(),
        };
        if let Some(q) = wanted.iter().find(|q| **q >= nq) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("queue {q} does not exist ({nq} receive queues)"),
            ));
        }
        let queues: Vec<u32> = match opts.queue {
            _ if only.is_some() => wanted,
            Some(q) if q >= nq => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("queue {q} does not exist ({nq} receive queues)"),
                ));
            }
            Some(q) => vec![q],
            None => (0..nq).collect(),
        };
        let frame_size = match opts.frame_size {
            0 if mtu + 14 + 8 + 256 <= 2048 => 2048,
            0 => 4096,
            n => n.next_power_of_two().clamp(2048, 4096),
        };
        if mtu + 14 + 8 + 256 > frame_size {
            return Err(io::Error::other(format!(
                "MTU {mtu} too large for {frame_size}-byte UMEM frames (jumbo frames need multi-buffer AF_XDP, not supported)"
            )));
        }
        let attach = attachment(ifindex, iface, nq, opts.mode)?;
        let rx_n = opts.rx_frames.max(64).next_power_of_two();
        let tx_n = opts.tx_frames.max(64).next_power_of_two();
        // Own UMEM: every queue's fill and tx rings, plus room for the frames the
        // switch holds (queued packets) so that the fill rings stay full.
        let own = || {
            Umem::new(
                frame_size,
                queues.len() as u32 * (rx_n + tx_n) + 4096.max(rx_n),
            )
        };
        let (umem, mut umem_note) = match slot {
            Some(sl) => {
                let u = sl.get(frame_size)?;
                if u.frame_size() >= frame_size {
                    (u, None)
                } else {
                    (
                        own()?,
                        Some(format!(
                            "own UMEM: the worker's has {} B frames, {iface} needs {frame_size}",
                            u.frame_size()
                        )),
                    )
                }
            }
            None => (own()?, None),
        };
        let open_all = |umem: &Arc<Umem>| -> io::Result<Vec<Xsk>> {
            let mut xsks = Vec::new();
            for &q in &queues {
                let xsk = match (opts.zero_copy, attach.drv_mode) {
                    (ZeroCopy::Off, _) | (ZeroCopy::Auto, false) => {
                        Xsk::open(ifindex, q, opts, umem, libc::XDP_COPY)?
                    }
                    (ZeroCopy::Force, _) => {
                        let x = Xsk::open(ifindex, q, opts, umem, libc::XDP_ZEROCOPY)
                            .map_err(|e| ctx(e, "zero-copy forced but refused"))?;
                        if !x.zero_copy {
                            return Err(io::Error::other(
                                "zero-copy forced, but the shared UMEM is in copy mode",
                            ));
                        }
                        x
                    }
                    (ZeroCopy::Auto, true) => {
                        match Xsk::open(ifindex, q, opts, umem, libc::XDP_ZEROCOPY) {
                            Ok(x) => x,
                            Err(_) => Xsk::open(ifindex, q, opts, umem, libc::XDP_COPY)?,
                        }
                    }
                };
                bpf::map_set(&attach.map, q, xsk.fd.as_raw_fd())?;
                xsks.push(xsk);
            }
            Ok(xsks)
        };
        let (umem, xsks) = match open_all(&umem) {
            Ok(x) => (umem, x),
            Err(e) if slot.is_some() && umem_note.is_none() => {
                let u = own()?;
                let x = open_all(&u)?;
                umem_note = Some(format!("own UMEM: sharing the worker's failed: {e}"));
                (u, x)
            }
            Err(e) => return Err(e),
        };
        let frame_size = umem.frame_size();
        let zc = xsks.iter().all(|x| x.zero_copy);
        let description = format!(
            "AF_XDP on {iface}: {} XDP, {}, queue{} {}, {} B frames, {}+{} frames/queue{}",
            if attach.drv_mode {
                "native"
            } else {
                "generic (skb)"
            },
            if zc { "zero-copy" } else { "copy mode" },
            if queues.len() == 1 { "" } else { "s" },
            queues
                .iter()
                .map(|q| q.to_string())
                .collect::<Vec<_>>()
                .join(","),
            frame_size,
            opts.rx_frames.max(64).next_power_of_two(),
            opts.tx_frames.max(64).next_power_of_two(),
            if xsks.first().is_some_and(|x| x.need_wakeup) {
                ", need_wakeup"
            } else {
                ""
            },
        );
        let description = match (&umem_note, slot) {
            (Some(n), _) => format!("{description}, {n}"),
            (None, Some(_)) => format!(
                "{description}, UMEM of {} frames shared by the worker's AF_XDP ports",
                umem.region().count()
            ),
            (None, None) => format!(
                "{description}, own UMEM of {} frames",
                umem.region().count()
            ),
        };
        let max_tx = (frame_size as usize).min(mtu as usize + 18);
        Ok(AfXdpPort {
            name: iface.to_string(),
            xsks,
            attach,
            umem,
            on_slot: slot.is_some() && umem_note.is_none(),
            next_rx: 0,
            max_tx,
            stats: PortStats::default(),
            description,
        })
    }

    /// What was set up, for start-up logs.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Whether every socket runs in zero-copy mode.
    pub fn is_zero_copy(&self) -> bool {
        self.xsks.iter().all(|x| x.zero_copy)
    }

    /// Whether the XDP program runs in native (driver) mode.
    pub fn is_native(&self) -> bool {
        self.attach.drv_mode
    }

    /// The receive queues this port owns.
    pub fn queues(&self) -> Vec<u32> {
        self.xsks.iter().map(|x| x.queue).collect()
    }

    /// Largest frame `send_batch` accepts.
    pub fn max_tx_frame(&self) -> usize {
        self.max_tx
    }

    fn recv_all(&mut self, max: usize, f: &mut dyn FnMut(&[u8])) -> usize {
        self.recv_round(max, |x, want, st| x.recv(want, f, st))
    }

    /// Receives from the sockets in turn (starting one further each call) until
    /// `max` frames; `one(socket, want, stats)` receives from one socket.
    fn recv_round(
        &mut self,
        max: usize,
        mut one: impl FnMut(&mut Xsk, u32, &mut PortStats) -> u32,
    ) -> usize {
        let mut n = 0usize;
        let k = self.xsks.len();
        for i in 0..k {
            if n >= max {
                break;
            }
            let idx = (self.next_rx + i) % k;
            let want = (max - n).min(u32::MAX as usize) as u32;
            n += one(&mut self.xsks[idx], want, &mut self.stats) as usize;
        }
        self.next_rx = (self.next_rx + 1) % k.max(1);
        n
    }

    /// The UMEM this port's sockets use.
    pub fn umem(&self) -> &Arc<Umem> {
        &self.umem
    }

    /// Whether the port uses the UMEM of the slot it was opened on (false for a
    /// port with a UMEM of its own).
    pub fn shares_umem(&self) -> bool {
        self.on_slot
    }
}

impl Port for AfXdpPort {
    fn recv_batch(
        &mut self,
        max: usize,
        timeout: Option<Duration>,
        f: &mut dyn FnMut(&[u8]),
    ) -> io::Result<usize> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let n = self.recv_all(max, f);
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
            let mut pfds: Vec<libc::pollfd> = self
                .xsks
                .iter()
                .map(|x| libc::pollfd {
                    fd: x.fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
            // SAFETY: `pfds` is a valid pollfd array of the given length.
            let r = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(ctx(e, format_args!("AF_XDP poll on {}", self.name)));
                }
            } else if r == 0 {
                return Ok(0);
            }
        }
    }

    fn send_batch(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        let Some(xsk) = self.xsks.first_mut() else {
            return Ok(0);
        };
        xsk.reclaim();
        let mut kicked = false;
        for (i, fr) in frames.iter().enumerate() {
            if !crate::afpacket::sendable(self.max_tx, fr) {
                self.stats.tx_dropped += 1;
                continue;
            }
            if !xsk.queue_tx(fr) {
                if kicked {
                    return Ok(i);
                }
                kicked = true;
                xsk.kick()?;
                if !xsk.queue_tx(fr) {
                    return Ok(i);
                }
            }
            self.stats.tx_packets += 1;
            self.stats.tx_bytes += fr.len() as u64;
        }
        Ok(frames.len())
    }

    fn moves_buffers(&self) -> bool {
        true
    }

    fn recv_bufs(&mut self, max: usize, out: &mut Vec<PacketBuf>) -> io::Result<usize> {
        Ok(self.recv_round(max, |x, want, st| x.recv_bufs(want, out, st)))
    }

    fn send_buf(&mut self, buf: PacketBuf) -> Result<(), PacketBuf> {
        let ours = buf
            .buf
            .frame()
            .is_some_and(|f| Arc::ptr_eq(f.region(), self.umem.region()));
        if !ours {
            return crate::send_copy(self, buf);
        }
        if !crate::afpacket::sendable(self.max_tx, buf.data()) {
            self.stats.tx_dropped += 1;
            return Ok(());
        }
        let Some(xsk) = self.xsks.first_mut() else {
            return Err(buf);
        };
        if xsk.tx.free(1) == 0 {
            // ring full: hand what is queued to the kernel, then look again
            if xsk.kick().is_err() {
                // the interface is gone or down: `flush` reports the error
                self.stats.tx_dropped += 1;
                return Ok(());
            }
            if xsk.tx.free(1) == 0 {
                return Err(buf);
            }
        }
        let (chunk, start, end) = buf.into_frame()?;
        xsk.queue_tx_in_place(chunk, start, end - start);
        self.stats.tx_packets += 1;
        self.stats.tx_bytes += (end - start) as u64;
        self.stats.tx_in_place += 1;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        for x in &mut self.xsks {
            if x.tx.local != x.tx.prod().load(Ordering::Relaxed) || x.tx.outstanding() > 0 {
                x.kick()
                    .map_err(|e| ctx(e, format_args!("AF_XDP tx on {}", self.name)))?;
            }
        }
        Ok(())
    }

    /// Descriptors of a transmit ring not submitted or not consumed by the kernel
    /// yet.
    fn tx_pending(&self) -> bool {
        self.xsks
            .iter()
            .any(|x| x.tx.local != x.tx.prod().load(Ordering::Relaxed) || x.tx.outstanding() > 0)
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> PortKind {
        PortKind::AfXdp
    }

    fn stats(&self) -> PortStats {
        let mut s = self.stats;
        for x in &self.xsks {
            // SAFETY: plain old data.
            let mut st: libc::xdp_statistics = unsafe { std::mem::zeroed() };
            if getsockopt(
                x.fd.as_raw_fd(),
                libc::SOL_XDP,
                libc::XDP_STATISTICS,
                &mut st,
            )
            .is_ok()
            {
                s.rx_dropped += st.rx_dropped + st.rx_ring_full;
                s.tx_dropped += st.tx_invalid_descs;
            }
        }
        s
    }

    fn poll_fd(&self) -> Option<RawFd> {
        self.xsks.first().map(|x| x.fd.as_raw_fd())
    }
}

impl Drop for AfXdpPort {
    fn drop(&mut self) {
        let _ = self.flush();
        for x in &self.xsks {
            if x.queue < self.attach.map_entries {
                let _ = bpf::map_delete(&self.attach.map, x.queue);
            }
        }
    }
}
