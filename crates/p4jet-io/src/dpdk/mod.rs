//! DPDK ports (feature `dpdk`): any ethdev DPDK can probe, named by its devargs
//! (`net_null0`, `net_ring0`, `net_tap0,iface=dtap0`, `net_af_packet0,iface=veth0`,
//! `net_memif0,role=server`, a PCI address bound to vfio-pci, ...).
//!
//! * The EAL starts once per process, at the first DPDK port, with
//!   [`DEFAULT_EAL_ARGS`] (no hugepages, nothing on disk, one lcore) unless
//!   [`DpdkOptions::eal`] gives other arguments. The calling thread's CPU affinity is
//!   kept (the EAL would pin it to its main lcore). Devices are hot-plugged
//!   (`rte_dev_probe`) when opened, unless the EAL already probed them (PCI devices
//!   bound to vfio-pci, `--vdev` in the EAL arguments).
//! * A device is configured once, with one rx/tx queue pair per worker
//!   ([`DpdkOptions::queues`]) and RSS over IP/TCP/UDP when there are several (the
//!   symmetric key with [`DpdkOptions::symmetric_rss`]); each [`DpdkPort`] owns one
//!   queue pair. The device is stopped and closed when its last port is dropped.
//! * Frames are not copied: a received one-segment mbuf *is* the packet buffer
//!   ([`Port::recv_bufs`], a port buffer of kind `dpdk mbuf`); the switch parses,
//!   processes and deparses the frame in it, and [`Port::send_buf`] on any DPDK port
//!   transmits it as itself (bursts of up to 256, sent at `flush`). Frames in other
//!   buffers (from other port kinds, clones) are copied into a fresh mbuf
//!   ([`Port::send_batch`]); chained mbufs are copied into a heap buffer on receive.
//! * DPDK ports are polled: [`Port::busy_polls`] is true, and `poll_fd` is None.

mod ffi;

use std::io;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use p4jet_buf::PacketBuf;

use crate::{Port, PortKind, PortStats};

/// EAL arguments used when none are given: no hugepages (memory from anonymous
/// mappings), no files under /var/run/dpdk, no telemetry socket, 512 MiB of memory,
/// notices and worse in the log. p4jet adds `-l CPU` (the first CPU it may run on) when
/// the arguments have no core list, and to the defaults the PCI devices to probe
/// (`-a DEVARGS` each, see [`DpdkOptions::pci`]) or `--no-pci`.
pub const DEFAULT_EAL_ARGS: &str = "--no-huge --no-shconf --no-telemetry -m 512 --log-level=notice";

/// The default EAL arguments for ports whose PCI devices are `pci`.
pub fn default_eal_args(pci: &[String]) -> String {
    let mut a = DEFAULT_EAL_ARGS.to_string();
    if pci.is_empty() {
        a.push_str(" --no-pci");
    }
    for d in pci {
        a.push_str(" -a ");
        a.push_str(d.strip_prefix("pci:").unwrap_or(d));
    }
    a
}

/// Options of a DPDK port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DpdkOptions {
    /// EAL arguments (split on whitespace) instead of [`DEFAULT_EAL_ARGS`]; only the
    /// first DPDK port of the process starts the EAL.
    pub eal: Option<String>,
    /// Devargs of the PCI devices among all DPDK ports the process will open: with the
    /// default arguments the EAL probes those and no other PCI device.
    pub pci: Vec<String>,
    /// Queue pairs the device is configured with (one per worker).
    pub queues: u16,
    /// Receive descriptors per queue (the driver may adjust it).
    pub rx_desc: u16,
    /// Transmit descriptors per queue.
    pub tx_desc: u16,
    /// RSS with the symmetric key (0x6d5a repeated): both directions of a flow on one
    /// queue.
    pub symmetric_rss: bool,
}

impl Default for DpdkOptions {
    fn default() -> Self {
        DpdkOptions {
            eal: None,
            pci: vec![],
            queues: 1,
            rx_desc: 1024,
            tx_desc: 1024,
            symmetric_rss: false,
        }
    }
}

static EAL: OnceLock<Result<String, String>> = OnceLock::new();

/// Starts the EAL if it is not running; returns the arguments it runs with.
pub fn init_eal(args: Option<&str>) -> io::Result<String> {
    let r = EAL.get_or_init(|| {
        let defaults = default_eal_args(&[]);
        let given = args.unwrap_or(&defaults);
        let mut argv: Vec<String> = vec!["p4jet".into()];
        argv.extend(given.split_whitespace().map(str::to_string));
        let has_cores = argv
            .iter()
            .any(|a| a == "-l" || a == "-c" || a.starts_with("--lcores") || a.starts_with("-l"));
        let saved = crate::affinity::allowed_cpus().ok();
        if !has_cores {
            let first = saved.as_ref().and_then(|c| c.first().copied()).unwrap_or(0);
            argv.push("-l".into());
            argv.push(first.to_string());
        }
        let r = ffi::eal_init(&argv);
        // rte_eal_init pins the calling thread to its main lcore: give it back the CPUs
        // it had, so threads it starts later are not all on one CPU
        if let Some(cpus) = &saved {
            let _ = crate::affinity::set_current_cpus(cpus);
        }
        r.map(|()| argv[1..].join(" "))
            .map_err(|e| format!("starting the DPDK EAL with `{}`: {e}", argv[1..].join(" ")))
    });
    match r {
        Ok(a) => Ok(a.clone()),
        Err(e) => Err(io::Error::other(e.clone())),
    }
}

std::thread_local! {
    static REGISTERED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Gives the calling (non-EAL) thread an lcore id, once: mempool caches are per lcore.
fn register_thread() {
    REGISTERED.with(|r| {
        if !r.get() {
            // without an lcore id the thread still works, only without mbuf caches
            let _ = ffi::thread_register();
            r.set(true);
        }
    });
}

/// One configured, started ethdev.
struct Device {
    port_id: u16,
    name: String,
    driver: String,
    queues: u16,
    rx_desc: u16,
    tx_desc: u16,
    rss_hf: u64,
    // retired after the port is closed (see Drop)
    pool: Option<ffi::Pool>,
}

impl Drop for Device {
    fn drop(&mut self) {
        // the registry's entry is dead now; open_device replaces it (no lock here: the
        // last port may be dropped while open_device holds it)
        ffi::dev_close(self.port_id);
        if let Some(pool) = self.pool.take() {
            retire_pool(pool);
        }
    }
}

/// Pools of closed devices whose mbufs are not all back yet.
static RETIRED: Mutex<Vec<ffi::Pool>> = Mutex::new(Vec::new());

/// Pools of closed devices still waiting for mbufs held elsewhere (in the switch's
/// queues, on another device's transmit stage).
pub fn retired_pools() -> usize {
    RETIRED.lock().unwrap_or_else(|p| p.into_inner()).len()
}

/// Frees `pool` once every mbuf of it has come back. Packets carried through the switch
/// keep their mbufs after the device that received them is gone (a port removed while
/// they wait in a queue); freeing the pool under them would make their release write
/// into freed memory. Such a pool waits in [`RETIRED`] and is freed by a later call,
/// once its last mbuf came home (or at exit).
fn retire_pool(pool: ffi::Pool) {
    let mut r = RETIRED.lock().unwrap_or_else(|p| p.into_inner());
    r.push(pool);
    // dropping a Pool frees it
    r.retain(|p| p.in_use() > 0);
}

static DEVICES: Mutex<Vec<(String, Weak<Device>)>> = Mutex::new(Vec::new());
static POOL_SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// The ethdev name DPDK gives the device of `devargs`: the part before the first comma,
/// with PCI addresses in full form (`0000:` domain).
fn device_name(devargs: &str) -> String {
    let name = devargs.split(',').next().unwrap_or(devargs).trim();
    let name = name.strip_prefix("pci:").unwrap_or(name);
    let b = name.as_bytes();
    // BB:DD.F
    if b.len() == 7 && b[2] == b':' && b[5] == b'.' {
        return format!("0000:{name}");
    }
    name.to_string()
}

fn open_device(devargs: &str, o: &DpdkOptions) -> io::Result<Arc<Device>> {
    let name = device_name(devargs);
    if name.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "empty DPDK devargs (e.g. net_null0, net_tap0,iface=dtap0, 0000:01:00.0)",
        ));
    }
    let mut devs = DEVICES.lock().unwrap_or_else(|p| p.into_inner());
    devs.retain(|(_, d)| d.strong_count() > 0);
    if let Some(d) = devs
        .iter()
        .find(|(n, _)| *n == name)
        .and_then(|(_, d)| d.upgrade())
    {
        if d.queues != o.queues {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{name} is already open with {} queue pair(s), not {}",
                    d.queues, o.queues
                ),
            ));
        }
        return Ok(d);
    }
    let err = |what: &str, e: String| io::Error::other(format!("DPDK {devargs}: {what}: {e}"));
    let port_id = ffi::dev_attach(devargs, &name).map_err(|e| err("probing", e))?;
    let info = ffi::dev_info(port_id).map_err(|e| err("device info", e))?;
    let nq = o.queues.max(1);
    if info.max_rx_queues < nq || info.max_tx_queues < nq {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "DPDK {devargs} ({}): {} rx / {} tx queues at most, {nq} needed \
                 (one queue pair per worker)",
                info.driver, info.max_rx_queues, info.max_tx_queues
            ),
        ));
    }
    // every descriptor may hold an mbuf, plus bursts and per-lcore caches in flight,
    // plus the received mbufs the switch holds between receive and transmit (its
    // queues and batches)
    // (about 2.3 KB each: 31 MB for one queue pair with the default descriptors)
    let n = u32::from(nq) * (u32::from(o.rx_desc) + u32::from(o.tx_desc) + 2 * 256)
        + 2048
        + MBUFS_IN_SWITCH;
    let seq = POOL_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let pool = ffi::Pool::new(&format!("p4jet_mb{seq}"), n, 256, info.socket)
        .map_err(|e| err("mbuf pool", e))?;
    let s = ffi::dev_setup(port_id, nq, o.rx_desc, o.tx_desc, &pool, o.symmetric_rss)
        .map_err(|e| err("configuring", e))?;
    let d = Arc::new(Device {
        port_id,
        name: name.clone(),
        driver: info.driver,
        queues: nq,
        rx_desc: s.rx_desc,
        tx_desc: s.tx_desc,
        rss_hf: s.rss_hf,
        pool: Some(pool),
    });
    devs.push((name, Arc::downgrade(&d)));
    Ok(d)
}

/// One rx/tx queue pair of a DPDK ethdev, owned by one worker.
pub struct DpdkPort {
    queue: u16,
    name: String,
    eal: String,
    rx: ffi::RxBurst,
    /// Received mbufs carried through the switch, waiting to be transmitted.
    tx: ffi::TxStage,
    scratch: Vec<u8>,
    stats: PortStats,
    // last: the bursts above give their mbufs back before the device may close
    dev: Arc<Device>,
}

impl DpdkPort {
    /// Opens queue pair `queue` of the device `devargs` (probed and configured by the
    /// first port opened on it, with `opts.queues` queue pairs).
    pub fn open(devargs: &str, opts: &DpdkOptions, queue: u16) -> io::Result<DpdkPort> {
        let eal = match &opts.eal {
            Some(a) => init_eal(Some(a))?,
            None => {
                let mut pci = opts.pci.clone();
                if crate::open::dpdk_is_pci(devargs) && !pci.iter().any(|p| p == devargs) {
                    pci.push(devargs.to_string());
                }
                init_eal(Some(&default_eal_args(&pci)))?
            }
        };
        if queue >= opts.queues.max(1) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("DPDK {devargs}: queue {queue} of {}", opts.queues),
            ));
        }
        let dev = open_device(devargs, opts)?;
        Ok(DpdkPort {
            name: dev.name.clone(),
            dev,
            queue,
            eal,
            rx: ffi::RxBurst::new(),
            tx: ffi::TxStage::new(),
            scratch: vec![],
            stats: PortStats::default(),
        })
    }

    /// One line for start-up logs.
    pub fn description(&self) -> String {
        let d = &self.dev;
        format!(
            "DPDK {} (driver {}, ethdev {}): queue {} of {}, {} rx / {} tx descriptors{}, EAL `{}`",
            d.name,
            d.driver,
            d.port_id,
            self.queue,
            d.queues,
            d.rx_desc,
            d.tx_desc,
            if d.rss_hf != 0 {
                format!(", RSS 0x{:x}", d.rss_hf)
            } else {
                String::new()
            },
            self.eal
        )
    }

    /// The queue pair this port uses.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// The device's own counters (all queues), as DPDK reports them.
    pub fn device_stats(&self) -> io::Result<DeviceStats> {
        let s = ffi::stats(self.dev.port_id).map_err(io::Error::other)?;
        Ok(DeviceStats {
            rx_packets: s.ipackets,
            tx_packets: s.opackets,
            rx_bytes: s.ibytes,
            tx_bytes: s.obytes,
            rx_missed: s.imissed,
            rx_errors: s.ierrors,
            tx_errors: s.oerrors,
            rx_nombuf: s.rx_nombuf,
        })
    }
}

/// `rte_eth_stats` of a device (every queue).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    /// Frames received.
    pub rx_packets: u64,
    /// Frames sent.
    pub tx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Frames the device dropped because the rx queue was full (`imissed`).
    pub rx_missed: u64,
    /// Erroneous frames received (`ierrors`).
    pub rx_errors: u64,
    /// Frames the device failed to send (`oerrors`).
    pub tx_errors: u64,
    /// Receive buffer allocation failures (`rx_nombuf`).
    pub rx_nombuf: u64,
}

impl Port for DpdkPort {
    fn recv_batch(
        &mut self,
        max: usize,
        timeout: Option<Duration>,
        f: &mut dyn FnMut(&[u8]),
    ) -> io::Result<usize> {
        register_thread();
        let deadline = timeout.filter(|d| !d.is_zero()).map(|d| Instant::now() + d);
        let mut n = self.rx.rx(self.dev.port_id, self.queue, max);
        while n == 0 && deadline.is_some_and(|d| Instant::now() < d) {
            std::thread::yield_now();
            n = self.rx.rx(self.dev.port_id, self.queue, max);
        }
        let mut got = 0;
        for i in 0..n {
            match self.rx.frame(i, &mut self.scratch) {
                Some(fr) => {
                    self.stats.rx_packets += 1;
                    self.stats.rx_bytes += fr.len() as u64;
                    got += 1;
                    f(fr);
                }
                None => self.stats.rx_errors += 1,
            }
        }
        self.rx.free();
        Ok(got)
    }

    fn send_batch(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        register_thread();
        // mbufs staged before these frames leave first
        self.send_staged();
        // a live device always has its pool (it is taken only when the device drops)
        let Some(pool) = self.dev.pool.as_ref() else {
            return Ok(0);
        };
        let mut done = 0;
        while done < frames.len() {
            let chunk = &frames[done..frames.len().min(done + ffi::BURST)];
            let (n, big) = ffi::tx_copy(self.dev.port_id, self.queue, pool, chunk);
            let sent = n - big as usize;
            self.stats.tx_packets += sent as u64;
            self.stats.tx_dropped += u64::from(big);
            // bytes: of the frames sent (the too-big ones are few; count them apart)
            self.stats.tx_bytes += chunk[..n]
                .iter()
                .map(|f| f.len() as u64)
                .filter(|&l| l <= MAX_MBUF_FRAME)
                .sum::<u64>();
            done += n;
            if n < chunk.len() {
                break;
            }
        }
        Ok(done)
    }

    fn flush(&mut self) -> io::Result<()> {
        // copied frames went to the device in send_batch; carried mbufs go now
        self.send_staged();
        Ok(())
    }

    fn tx_pending(&self) -> bool {
        !self.tx.is_empty()
    }

    fn moves_buffers(&self) -> bool {
        true
    }

    fn recv_bufs(&mut self, max: usize, out: &mut Vec<PacketBuf>) -> io::Result<usize> {
        register_thread();
        let burst = self.rx.rx(self.dev.port_id, self.queue, max);
        if burst == 0 {
            return Ok(0);
        }
        let (n, bytes) = self.rx.take_bufs(out);
        self.stats.rx_packets += n as u64;
        self.stats.rx_bytes += bytes;
        // a chain that could not be read is not handed over
        self.stats.rx_errors += (burst - n) as u64;
        Ok(n)
    }

    /// An mbuf received by any DPDK port is transmitted as itself, with the frame
    /// where the switch left it in its buffer; other buffers are copied into a new
    /// mbuf ([`Port::send_batch`]).
    fn send_buf(&mut self, buf: PacketBuf) -> Result<(), PacketBuf> {
        register_thread();
        self.stage(buf)
    }

    /// [`DpdkPort::send_buf`] for a batch, the thread registered once.
    fn send_bufs(&mut self, bufs: &mut Vec<PacketBuf>) -> usize {
        register_thread();
        crate::send_each(bufs, |b| self.stage(b))
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> PortKind {
        PortKind::Dpdk
    }

    /// This queue's frames; the device's drops and errors (every queue) on queue 0's
    /// port only, so that summing the ports of all workers counts them once.
    fn stats(&self) -> PortStats {
        let mut s = self.stats;
        if self.queue == 0
            && let Ok(d) = self.device_stats()
        {
            s.rx_dropped += d.rx_missed + d.rx_nombuf;
            s.rx_errors += d.rx_errors;
            s.tx_errors += d.tx_errors;
        }
        s
    }

    fn busy_polls(&self) -> bool {
        true
    }
}

/// Received mbufs a device's pool holds for the switch besides its descriptors: the
/// packets waiting in the switch's queues and batches. When they are all in use, the
/// device counts what it cannot receive in `rx_nombuf`.
const MBUFS_IN_SWITCH: u32 = 8192;

/// Largest frame one mbuf of the default size holds (RTE_MBUF_DEFAULT_DATAROOM).
const MAX_MBUF_FRAME: u64 = 2048;

impl DpdkPort {
    /// Stages `buf`'s mbuf for transmission, or copies a buffer that is not an mbuf;
    /// gives it back when the staging and the device's ring are full.
    #[inline]
    fn stage(&mut self, buf: PacketBuf) -> Result<(), PacketBuf> {
        if buf.buf.port_buffer_handle(&ffi::MBUF).is_none() {
            return crate::send_copy(self, buf);
        }
        if self.tx.is_full() {
            self.send_staged();
            if self.tx.is_full() {
                return Err(buf);
            }
        }
        match buf.into_port_buffer(&ffi::MBUF) {
            Ok((h, start, end)) => {
                if !self.tx.push(h, start, end) {
                    self.stats.tx_dropped += 1;
                }
                Ok(())
            }
            Err(buf) => crate::send_copy(self, buf),
        }
    }

    /// Transmits the staged mbufs the device takes now.
    fn send_staged(&mut self) {
        let (n, bytes) = self.tx.send(self.dev.port_id, self.queue);
        self.stats.tx_packets += n as u64;
        self.stats.tx_bytes += bytes;
        self.stats.tx_in_place += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names() {
        assert_eq!(device_name("net_null0"), "net_null0");
        assert_eq!(device_name("net_tap0,iface=dtap0"), "net_tap0");
        assert_eq!(device_name("01:00.0"), "0000:01:00.0");
        assert_eq!(device_name("pci:0000:01:00.1"), "0000:01:00.1");
        assert_eq!(device_name("0000:01:00.1,rxq=2"), "0000:01:00.1");
    }
}
