//! The only `unsafe` of the DPDK port: declarations of the C shim (`shim.c`, whose
//! structs these mirror field for field) and safe wrappers around them.

use std::ffi::{CStr, CString, c_char, c_int, c_uint};
use std::ptr::NonNull;

use p4jet_buf::{PacketBuf, PortBufferKind, Storage};

/// Packet buffers that are DPDK mbufs (one segment): the handle is the `rte_mbuf`.
pub(super) static MBUF: PortBufferKind = PortBufferKind {
    name: "dpdk mbuf",
    release: release_mbuf,
};

/// # Safety
/// `h` is an `rte_mbuf` owned by the caller, not used after this.
unsafe fn release_mbuf(h: NonNull<u8>) {
    // SAFETY: by the contract above; rte_pktmbuf_free may run on any thread.
    unsafe { p4j_free(h.as_ptr().cast()) }
}

/// An `rte_mbuf` (opaque).
#[repr(C)]
pub(super) struct Mbuf {
    _opaque: [u8; 0],
}

/// An `rte_mempool` (opaque).
#[repr(C)]
pub(super) struct Mempool {
    _opaque: [u8; 0],
}

#[repr(C)]
struct RawInfo {
    max_rx_queues: u16,
    max_tx_queues: u16,
    socket: i32,
    rss_offloads: u64,
    driver: [c_char; 64],
}

/// `rte_eth_stats`, the counters p4jet reports.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Stats {
    pub ipackets: u64,
    pub opackets: u64,
    pub ibytes: u64,
    pub obytes: u64,
    pub imissed: u64,
    pub ierrors: u64,
    pub oerrors: u64,
    pub rx_nombuf: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct TxFrame {
    data: *const u8,
    len: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct RxDesc {
    data: *const u8,
    data_len: u32,
    pkt_len: u32,
    buf: *mut u8,
    buf_len: u16,
    data_off: u16,
    nb_segs: u16,
    pad: u16,
}

unsafe extern "C" {
    fn p4j_errno() -> c_int;
    fn p4j_strerror(e: c_int) -> *const c_char;
    fn p4j_eal_init(argc: c_int, argv: *mut *mut c_char) -> c_int;
    fn p4j_thread_register() -> c_int;
    fn p4j_dev_attach(devargs: *const c_char, name: *const c_char, port: *mut u16) -> c_int;
    fn p4j_dev_info(port: u16, out: *mut RawInfo) -> c_int;
    fn p4j_pool_create(
        name: *const c_char,
        n: c_uint,
        cache: c_uint,
        socket: c_int,
    ) -> *mut Mempool;
    fn p4j_pool_free(mp: *mut Mempool);
    fn p4j_pool_in_use(mp: *const Mempool) -> c_uint;
    fn p4j_dev_setup(
        port: u16,
        nq: u16,
        rx_desc: *mut u16,
        tx_desc: *mut u16,
        mp: *mut Mempool,
        symmetric: c_int,
        rss_hf: *mut u64,
    ) -> c_int;
    fn p4j_dev_close(port: u16);
    fn p4j_stats(port: u16, out: *mut Stats) -> c_int;
    fn p4j_rx_burst(port: u16, q: u16, m: *mut *mut Mbuf, out: *mut RxDesc, n: u16) -> u16;
    fn p4j_mbuf_copy(m: *const Mbuf, dst: *mut u8, len: u32) -> c_int;
    fn p4j_free_bulk(m: *mut *mut Mbuf, n: c_uint);
    fn p4j_free(m: *mut Mbuf);
    fn p4j_tx_mbufs(
        port: u16,
        q: u16,
        m: *mut *mut Mbuf,
        off: *const u16,
        len: *const u16,
        n: u16,
    ) -> u16;
    fn p4j_tx_copy(
        port: u16,
        q: u16,
        mp: *mut Mempool,
        frames: *const TxFrame,
        n: u16,
        too_big: *mut u32,
    ) -> u16;
}

/// DPDK's message for error code `e` (negative or positive errno, or `rte_errno`).
pub(super) fn strerror(e: i32) -> String {
    // SAFETY: rte_strerror returns a pointer to a static or thread-local NUL-terminated
    // string, valid until the next call on this thread; we copy it at once.
    unsafe {
        let p = p4j_strerror(e);
        if p.is_null() {
            return format!("error {e}");
        }
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

fn last_error() -> String {
    // SAFETY: reads DPDK's thread-local rte_errno.
    strerror(unsafe { p4j_errno() })
}

/// `rte_eal_init` with `args` (args[0] is the program name).
pub(super) fn eal_init(args: &[String]) -> Result<(), String> {
    let owned: Vec<CString> = args
        .iter()
        .map(|a| CString::new(a.as_str()).map_err(|_| format!("EAL argument {a:?} has a NUL")))
        .collect::<Result<_, _>>()?;
    // rte_eal_init may permute argv and keeps pointers into it (not the strings'
    // ownership): both live for the rest of the process.
    let owned: &'static [CString] = Vec::leak(owned);
    let mut argv: Vec<*mut c_char> = owned.iter().map(|c| c.as_ptr().cast_mut()).collect();
    argv.push(std::ptr::null_mut());
    let argv: &'static mut [*mut c_char] = Vec::leak(argv);
    let argc = c_int::try_from(args.len()).map_err(|_| "too many EAL arguments".to_string())?;
    // SAFETY: argv holds argc valid NUL-terminated strings and a final NULL, leaked so
    // they outlive the EAL; the caller makes sure this runs once per process.
    let r = unsafe { p4j_eal_init(argc, argv.as_mut_ptr()) };
    if r < 0 {
        return Err(last_error());
    }
    Ok(())
}

/// Gives the calling thread an lcore id (per-lcore mempool caches) if it has none.
pub(super) fn thread_register() -> Result<(), String> {
    // SAFETY: called after rte_eal_init succeeded; registers the calling thread only.
    if unsafe { p4j_thread_register() } != 0 {
        return Err(last_error());
    }
    Ok(())
}

/// The ethdev port named `name`, probing `devargs` if it does not exist yet.
pub(super) fn dev_attach(devargs: &str, name: &str) -> Result<u16, String> {
    let d = CString::new(devargs).map_err(|_| "devargs contain a NUL".to_string())?;
    let n = CString::new(name).map_err(|_| "device name contains a NUL".to_string())?;
    let mut port = 0u16;
    // SAFETY: both strings are NUL-terminated and live across the call; `port` is a
    // valid out pointer.
    let r = unsafe { p4j_dev_attach(d.as_ptr(), n.as_ptr(), &mut port) };
    if r < 0 {
        return Err(strerror(r));
    }
    Ok(port)
}

/// What a device offers.
#[derive(Clone, Debug)]
pub(super) struct DevInfo {
    pub max_rx_queues: u16,
    pub max_tx_queues: u16,
    pub socket: i32,
    pub driver: String,
}

pub(super) fn dev_info(port: u16) -> Result<DevInfo, String> {
    let mut raw = RawInfo {
        max_rx_queues: 0,
        max_tx_queues: 0,
        socket: 0,
        rss_offloads: 0,
        driver: [0; 64],
    };
    // SAFETY: `raw` is a valid, writable RawInfo, the layout shim.c's p4j_info has.
    let r = unsafe { p4j_dev_info(port, &mut raw) };
    if r != 0 {
        return Err(strerror(r));
    }
    // SAFETY: the shim writes a NUL-terminated string (snprintf) into `driver`.
    let driver = unsafe { CStr::from_ptr(raw.driver.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    Ok(DevInfo {
        max_rx_queues: raw.max_rx_queues,
        max_tx_queues: raw.max_tx_queues,
        socket: raw.socket,
        driver,
    })
}

/// A packet mbuf pool, freed on drop (after the device using it is closed).
pub(super) struct Pool(NonNull<Mempool>);

// SAFETY: DPDK mempools are multi-producer/multi-consumer: any thread may allocate
// from and free into one.
unsafe impl Send for Pool {}
// SAFETY: as above; the pool pointer itself is never written after creation.
unsafe impl Sync for Pool {}

impl Pool {
    pub fn new(name: &str, n: u32, cache: u32, socket: i32) -> Result<Pool, String> {
        let c = CString::new(name).map_err(|_| "pool name contains a NUL".to_string())?;
        // SAFETY: `c` is NUL-terminated; the EAL is initialised by the caller.
        let p = unsafe { p4j_pool_create(c.as_ptr(), n, cache, socket) };
        NonNull::new(p)
            .map(Pool)
            .ok_or_else(|| format!("creating mbuf pool {name} ({n} mbufs): {}", last_error()))
    }
}

impl Pool {
    /// Mbufs of the pool that have not come back to it: held by the switch (carried
    /// packet buffers), a device queue or a transmit stage.
    pub fn in_use(&self) -> u32 {
        // SAFETY: the pool is alive (self); the count only reads its rings and caches.
        unsafe { p4j_pool_in_use(self.0.as_ptr()) }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // SAFETY: the pool was created by p4j_pool_create and is freed once; the
        // device that used it was closed first, and its owner drops it only once no
        // mbuf of it is out (`in_use() == 0`, see `retire_pool`), so nothing frees
        // into it later.
        unsafe { p4j_pool_free(self.0.as_ptr()) }
    }
}

/// What `dev_setup` settled on.
pub(super) struct Setup {
    pub rx_desc: u16,
    pub tx_desc: u16,
    pub rss_hf: u64,
}

/// Configures `nq` queue pairs on `port` with mbufs from `pool` and starts it.
pub(super) fn dev_setup(
    port: u16,
    nq: u16,
    rx_desc: u16,
    tx_desc: u16,
    pool: &Pool,
    symmetric: bool,
) -> Result<Setup, String> {
    let mut s = Setup {
        rx_desc,
        tx_desc,
        rss_hf: 0,
    };
    // SAFETY: valid out pointers; the pool outlives the device (see Pool::drop).
    let r = unsafe {
        p4j_dev_setup(
            port,
            nq,
            &mut s.rx_desc,
            &mut s.tx_desc,
            pool.0.as_ptr(),
            c_int::from(symmetric),
            &mut s.rss_hf,
        )
    };
    if r != 0 {
        return Err(strerror(r));
    }
    Ok(s)
}

/// Stops and closes `port`.
pub(super) fn dev_close(port: u16) {
    // SAFETY: no queue of the port is used any more (every DpdkPort of the device
    // is gone when the device is dropped).
    unsafe { p4j_dev_close(port) }
}

pub(super) fn stats(port: u16) -> Result<Stats, String> {
    let mut s = Stats::default();
    // SAFETY: `s` is a valid, writable Stats with shim.c's p4j_stats layout.
    let r = unsafe { p4j_stats(port, &mut s) };
    if r != 0 {
        return Err(strerror(r));
    }
    Ok(s)
}

/// Most frames moved per burst call.
pub(super) const BURST: usize = 256;

/// One receive burst: the mbufs and where their bytes are. Owned by one queue's port.
pub(super) struct RxBurst {
    mbufs: [*mut Mbuf; BURST],
    descs: [RxDesc; BURST],
    n: usize,
}

// SAFETY: the mbufs held between `rx` and `free` belong to this burst alone; DPDK
// lets any thread free an mbuf.
unsafe impl Send for RxBurst {}

impl RxBurst {
    pub fn new() -> RxBurst {
        RxBurst {
            mbufs: [std::ptr::null_mut(); BURST],
            descs: [RxDesc {
                data: std::ptr::null(),
                data_len: 0,
                pkt_len: 0,
                buf: std::ptr::null_mut(),
                buf_len: 0,
                data_off: 0,
                nb_segs: 0,
                pad: 0,
            }; BURST],
            n: 0,
        }
    }

    /// Receives up to `max` (≤ BURST) frames from queue `q` of `port`; frees the
    /// previous burst first.
    pub fn rx(&mut self, port: u16, q: u16, max: usize) -> usize {
        self.free();
        let max = max.min(BURST) as u16;
        // SAFETY: the arrays hold BURST entries ≥ max; the queue is used by this
        // thread only (one DpdkPort per queue, owned by one worker).
        let n = unsafe {
            p4j_rx_burst(
                port,
                q,
                self.mbufs.as_mut_ptr(),
                self.descs.as_mut_ptr(),
                max,
            )
        };
        self.n = usize::from(n);
        self.n
    }

    /// Frame `i` of the burst: in place when it is one segment, else copied into
    /// `scratch` (None if the chain cannot be read).
    pub fn frame<'a>(&'a self, i: usize, scratch: &'a mut Vec<u8>) -> Option<&'a [u8]> {
        let d = self.descs.get(i).filter(|_| i < self.n)?;
        if d.data_len == d.pkt_len {
            // SAFETY: the mbuf is held until `free`, which needs `&mut self`, so the
            // slice (data_len bytes at its data offset) stays valid while borrowed.
            return Some(unsafe { std::slice::from_raw_parts(d.data, d.data_len as usize) });
        }
        scratch.resize(d.pkt_len as usize, 0);
        // SAFETY: `scratch` has pkt_len writable bytes; the mbuf chain is held.
        let r = unsafe { p4j_mbuf_copy(self.mbufs[i], scratch.as_mut_ptr(), d.pkt_len) };
        (r == 0).then_some(scratch.as_slice())
    }

    /// Appends every frame of the burst to `out` as a packet buffer: a one-segment
    /// mbuf *is* the buffer (a [`MBUF`] port buffer, the frame where the device put
    /// it); a chain is copied into a heap buffer and freed. Returns the frames and
    /// bytes handed over.
    pub fn take_bufs(&mut self, out: &mut Vec<PacketBuf>) -> (usize, u64) {
        let n = std::mem::take(&mut self.n);
        let (mut got, mut bytes) = (0, 0);
        for i in 0..n {
            let d = self.descs[i];
            let m = self.mbufs[i];
            let one = d.nb_segs == 1 && d.data_len == d.pkt_len;
            match (NonNull::new(d.buf), NonNull::new(m.cast::<u8>())) {
                (Some(buf), Some(h)) if one => {
                    let start = usize::from(d.data_off);
                    let end = start + d.data_len as usize;
                    // SAFETY: the mbuf came from rx_burst and is owned by no one else;
                    // its buffer is buf_len bytes at buf_addr and is reached only
                    // through this storage until MBUF's release frees the mbuf (or
                    // `send_buf` takes it back to transmit it); mbufs may be freed
                    // from any thread.
                    let s = unsafe { Storage::port_buffer(buf, usize::from(d.buf_len), h, &MBUF) };
                    got += 1;
                    bytes += u64::from(d.data_len);
                    out.push(PacketBuf::in_storage(s, start, end));
                }
                _ => {
                    let mut p = PacketBuf::with_capacity(d.pkt_len as usize);
                    p.end = p.start + d.pkt_len as usize;
                    let at = p.start;
                    // SAFETY: p has pkt_len writable bytes from `at`; the mbuf chain
                    // is held until it is freed just below.
                    let r = unsafe { p4j_mbuf_copy(m, p.buf[at..].as_mut_ptr(), d.pkt_len) };
                    // SAFETY: m came from rx_burst and is freed once, here.
                    unsafe { p4j_free(m) };
                    if r == 0 {
                        got += 1;
                        bytes += u64::from(d.pkt_len);
                        out.push(p);
                    }
                }
            }
        }
        (got, bytes)
    }

    /// Returns the burst's mbufs to their pool.
    pub fn free(&mut self) {
        if self.n > 0 {
            // SAFETY: mbufs[..n] came from rx_burst and are freed exactly once.
            unsafe { p4j_free_bulk(self.mbufs.as_mut_ptr(), self.n as c_uint) };
            self.n = 0;
        }
    }
}

impl Drop for RxBurst {
    fn drop(&mut self) {
        self.free();
    }
}

/// Copies `frames` (≤ BURST) into mbufs of `pool` and transmits them on queue `q`:
/// returns (frames consumed, of which too big for one mbuf).
pub(super) fn tx_copy(port: u16, q: u16, pool: &Pool, frames: &[&[u8]]) -> (usize, u32) {
    let mut descs = [TxFrame {
        data: std::ptr::null(),
        len: 0,
    }; BURST];
    let n = frames.len().min(BURST);
    for (d, f) in descs.iter_mut().zip(&frames[..n]) {
        *d = TxFrame {
            data: f.as_ptr(),
            len: u32::try_from(f.len()).unwrap_or(u32::MAX),
        };
    }
    let mut too_big = 0u32;
    // SAFETY: descs[..n] point at frames that live across the call; the shim copies
    // them before returning. The queue is used by this thread only.
    let done = unsafe {
        p4j_tx_copy(
            port,
            q,
            pool.0.as_ptr(),
            descs.as_ptr(),
            n as u16,
            &mut too_big,
        )
    };
    (usize::from(done), too_big)
}

/// Mbufs waiting to be transmitted on one queue (carried through the switch, not
/// copied): each with the frame's offset and length in its buffer.
pub(super) struct TxStage {
    mbufs: [*mut Mbuf; BURST],
    off: [u16; BURST],
    len: [u16; BURST],
    n: usize,
}

// SAFETY: the staged mbufs belong to this stage alone until sent or freed; DPDK lets
// any thread transmit on a queue that one thread at a time uses, and free mbufs.
unsafe impl Send for TxStage {}

impl TxStage {
    pub fn new() -> TxStage {
        TxStage {
            mbufs: [std::ptr::null_mut(); BURST],
            off: [0; BURST],
            len: [0; BURST],
            n: 0,
        }
    }

    pub fn is_full(&self) -> bool {
        self.n == BURST
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Stages the mbuf of a buffer taken back from an [`MBUF`] storage with the
    /// frame at `start..end`; false (and the mbuf freed) if that does not fit the
    /// mbuf's 16-bit fields, which an mbuf's own buffer always does, or the stage is
    /// full, which the caller rules out with [`TxStage::is_full`] first.
    pub fn push(&mut self, h: NonNull<u8>, start: usize, end: usize) -> bool {
        let (Ok(off), Ok(len)) = (u16::try_from(start), u16::try_from(end - start)) else {
            // SAFETY: `h` is an mbuf the caller owns and gives up here.
            unsafe { release_mbuf(h) };
            return false;
        };
        // one bounds check: n read once, the three arrays of one length
        let n = self.n;
        debug_assert!(n < BURST);
        if n >= BURST {
            // SAFETY: `h` is an mbuf the caller owns and gives up here.
            unsafe { release_mbuf(h) };
            return false;
        }
        self.mbufs[n] = h.as_ptr().cast();
        self.off[n] = off;
        self.len[n] = len;
        self.n = n + 1;
        true
    }

    /// Transmits what is staged on queue `q` of `port`; returns (frames, bytes)
    /// sent. What the device does not take stays staged, in order.
    pub fn send(&mut self, port: u16, q: u16) -> (usize, u64) {
        if self.n == 0 {
            return (0, 0);
        }
        // SAFETY: mbufs[..n] are owned by the stage, off/len describe frames inside
        // their buffers; the queue is used by this thread only.
        let sent = usize::from(unsafe {
            p4j_tx_mbufs(
                port,
                q,
                self.mbufs.as_mut_ptr(),
                self.off.as_ptr(),
                self.len.as_ptr(),
                self.n as u16,
            )
        });
        let bytes = self.len[..sent].iter().map(|&l| u64::from(l)).sum();
        self.mbufs.copy_within(sent..self.n, 0);
        self.off.copy_within(sent..self.n, 0);
        self.len.copy_within(sent..self.n, 0);
        self.n -= sent;
        (sent, bytes)
    }
}

impl Drop for TxStage {
    fn drop(&mut self) {
        if self.n > 0 {
            // SAFETY: mbufs[..n] are owned by the stage and freed exactly once.
            unsafe { p4j_free_bulk(self.mbufs.as_mut_ptr(), self.n as c_uint) };
        }
    }
}
