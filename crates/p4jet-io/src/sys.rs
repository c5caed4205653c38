//! Small wrappers over libc used by the port implementations.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// Turns a `-1` return into the current `errno`.
pub(crate) fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Adds `what` in front of an error's message, keeping its kind.
pub(crate) fn ctx(e: io::Error, what: impl std::fmt::Display) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// An owned socket.
pub(crate) fn socket(
    domain: libc::c_int,
    ty: libc::c_int,
    proto: libc::c_int,
) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall, no pointers.
    let fd = cvt(unsafe { libc::socket(domain, ty | libc::SOCK_CLOEXEC, proto) })?;
    // SAFETY: `fd` was just returned by socket() and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `setsockopt` with a value of type `T`.
pub(crate) fn setsockopt<T>(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    val: &T,
) -> io::Result<()> {
    // SAFETY: `val` is a valid reference to a `T` of the given size for the
    // duration of the call; the kernel only reads it.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (val as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// `getsockopt` into a value of type `T`; returns the length the kernel wrote.
pub(crate) fn getsockopt<T>(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    val: &mut T,
) -> io::Result<usize> {
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `val` is valid for writes of `len` bytes; the kernel writes at
    // most `len` bytes and updates `len`.
    cvt(unsafe { libc::getsockopt(fd, level, name, (val as *mut T).cast(), &mut len) })?;
    Ok(len as usize)
}

/// Milliseconds for poll(2): rounds up so that a short timeout still waits.
fn poll_ms(timeout: Duration) -> libc::c_int {
    let ms = timeout.as_micros().div_ceil(1000);
    ms.min(i32::MAX as u128) as libc::c_int
}

/// Waits until `fd` has one of `events` or `timeout` passes. Returns the
/// revents (0 on timeout). EINTR is retried with the remaining time.
pub(crate) fn poll_one(
    fd: RawFd,
    events: libc::c_short,
    timeout: Duration,
) -> io::Result<libc::c_short> {
    let deadline = Instant::now() + timeout;
    loop {
        let mut pfd = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        // SAFETY: `pfd` is a valid pollfd array of length 1.
        let r = unsafe { libc::poll(&mut pfd, 1, poll_ms(left)) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        return Ok(if r == 0 { 0 } else { pfd.revents });
    }
}

/// Waits until one of `fds` is readable (or has an error) or `timeout` passes.
/// Returns whether one is. EINTR is retried with the remaining time.
pub(crate) fn poll_many(fds: &[RawFd], timeout: Duration) -> io::Result<bool> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        // SAFETY: `pfds` is a valid pollfd array of the given length.
        let r = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, poll_ms(left)) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        return Ok(r > 0);
    }
}

/// Interface index of `name` (in the calling thread's network namespace).
pub(crate) fn ifindex(name: &str) -> io::Result<u32> {
    let c = CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name has a NUL"))?;
    // SAFETY: `c` is a valid NUL-terminated string.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        Err(ctx(
            io::Error::last_os_error(),
            format_args!("interface {name}"),
        ))
    } else {
        Ok(idx)
    }
}

/// An `ifreq` with `name` filled in.
pub(crate) fn ifreq(name: &str) -> io::Result<libc::ifreq> {
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name {name:?} (1..15 bytes)"),
        ));
    }
    for (d, s) in req.ifr_name.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    Ok(req)
}

/// MTU of interface `name`, asked through socket `fd` (so in its namespace).
pub(crate) fn mtu(fd: RawFd, name: &str) -> io::Result<u32> {
    let mut req = ifreq(name)?;
    // SAFETY: SIOCGIFMTU reads the name and writes ifru_mtu inside `req`.
    cvt(unsafe { libc::ioctl(fd, libc::SIOCGIFMTU, &mut req) })
        .map_err(|e| ctx(e, format_args!("SIOCGIFMTU {name}")))?;
    // SAFETY: the kernel filled the mtu member of the union.
    Ok(unsafe { req.ifr_ifru.ifru_mtu } as u32)
}

/// Interface flags (IFF_UP, ...).
pub(crate) fn if_flags(fd: RawFd, name: &str) -> io::Result<libc::c_short> {
    let mut req = ifreq(name)?;
    // SAFETY: SIOCGIFFLAGS reads the name and writes ifru_flags inside `req`.
    cvt(unsafe { libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req) })
        .map_err(|e| ctx(e, format_args!("SIOCGIFFLAGS {name}")))?;
    // SAFETY: the kernel filled the flags member of the union.
    Ok(unsafe { req.ifr_ifru.ifru_flags })
}

/// Sets IFF_UP on interface `name`.
pub(crate) fn set_up(fd: RawFd, name: &str) -> io::Result<()> {
    let flags = if_flags(fd, name)?;
    if flags & libc::IFF_UP as libc::c_short != 0 {
        return Ok(());
    }
    let mut req = ifreq(name)?;
    req.ifr_ifru.ifru_flags = flags | libc::IFF_UP as libc::c_short;
    // SAFETY: SIOCSIFFLAGS reads name and flags from `req`.
    cvt(unsafe { libc::ioctl(fd, libc::SIOCSIFFLAGS, &req) })
        .map_err(|e| ctx(e, format_args!("SIOCSIFFLAGS {name}")))?;
    Ok(())
}

/// Number of receive queues of `name` (rx + combined channels, from ethtool),
/// 1 if the driver does not say.
pub(crate) fn rx_queue_count(fd: RawFd, name: &str) -> u32 {
    #[repr(C)]
    #[derive(Default)]
    struct EthtoolChannels {
        cmd: u32,
        max_rx: u32,
        max_tx: u32,
        max_other: u32,
        max_combined: u32,
        rx_count: u32,
        tx_count: u32,
        other_count: u32,
        combined_count: u32,
    }
    const ETHTOOL_GCHANNELS: u32 = 0x3c;
    let Ok(mut req) = ifreq(name) else { return 1 };
    let mut ch = EthtoolChannels {
        cmd: ETHTOOL_GCHANNELS,
        ..Default::default()
    };
    req.ifr_ifru.ifru_data = (&mut ch as *mut EthtoolChannels).cast();
    // SAFETY: SIOCETHTOOL with GCHANNELS writes an ethtool_channels into the
    // buffer `ifru_data` points to, which is `ch` and outlives the call.
    let r = unsafe { libc::ioctl(fd, libc::SIOCETHTOOL, &mut req) };
    if r < 0 {
        return 1;
    }
    (ch.rx_count + ch.combined_count).max(1)
}

/// Anonymous or file-backed shared memory mapping, unmapped on drop.
pub(crate) struct Mmap {
    pub(crate) ptr: *mut u8,
    pub(crate) len: usize,
}

// SAFETY: the mapping is owned by this value only; moving it between threads
// is fine, concurrent access is governed by the owner (`&mut` for writes).
unsafe impl Send for Mmap {}

impl Mmap {
    /// mmap(NULL, len, RW, MAP_SHARED|flags, fd, off).
    pub(crate) fn map(
        fd: Option<RawFd>,
        len: usize,
        off: i64,
        flags: libc::c_int,
    ) -> io::Result<Mmap> {
        let (fd, share) = match fd {
            Some(fd) => (fd, libc::MAP_SHARED),
            None => (-1, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS),
        };
        // SAFETY: asking the kernel for a fresh mapping (addr NULL), no
        // existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                share | flags,
                fd,
                off as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mmap { ptr: p.cast(), len })
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: ptr/len describe a mapping we own and nobody uses after drop.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// `MADV_POPULATE_READ` (Linux 5.14; not in the libc crate yet).
const MADV_POPULATE_READ: libc::c_int = 22;

/// A regular file mapped whole and read-only (`MAP_SHARED`, `PROT_READ`), unmapped
/// on drop: the pcap reader parses records where they lie in the page cache.
///
/// The usual caveat of mapped files holds: if another process truncates the file while
/// it is mapped, touching the lost pages raises `SIGBUS`.
pub(crate) struct MappedFile {
    ptr: *const u8,
    len: usize,
}

// SAFETY: the mapping is owned by this value only and never written through; moving
// it to another thread is fine.
unsafe impl Send for MappedFile {}
// SAFETY: the mapping is read-only (`PROT_READ`): threads sharing it only read it or
// ask the kernel to map its pages in (`populate`), which changes no memory.
unsafe impl Sync for MappedFile {}

impl MappedFile {
    /// Maps the first `len` bytes (`len > 0`) of the file open on `fd` for reading.
    pub(crate) fn map(fd: RawFd, len: usize) -> io::Result<MappedFile> {
        if len == 0 {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        // SAFETY: asking the kernel for a fresh read-only mapping (addr NULL) of a file
        // descriptor we hold; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: advice on the mapping just made; failure only loses the hint.
        unsafe {
            libc::madvise(p, len, libc::MADV_SEQUENTIAL);
        }
        Ok(MappedFile {
            ptr: p.cast::<u8>().cast_const(),
            len,
        })
    }

    /// The mapped bytes.
    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: ptr/len describe a live read-only mapping owned by self (unmapped
        // only on drop, after every borrow of self ended); any byte value is a valid
        // u8. Pages of a file truncated meanwhile by another process fault with
        // SIGBUS (documented), they are never invalid memory for Rust.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Maps the pages of `range` in now (`MADV_POPULATE_READ`) instead of one page
    /// fault per few pages as they are read; false if the kernel does not do it.
    pub(crate) fn populate(&self, range: std::ops::Range<usize>) -> bool {
        const PAGE: usize = 4096;
        let start = range.start / PAGE * PAGE;
        let end = range.end.min(self.len);
        if start >= end {
            return true;
        }
        // SAFETY: advice on a page-aligned sub-range of our own mapping; it changes no
        // memory contents.
        let r = unsafe {
            libc::madvise(
                self.ptr.add(start).cast_mut().cast(),
                end - start,
                MADV_POPULATE_READ,
            )
        };
        r == 0
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        // SAFETY: ptr/len describe a mapping we own and nobody uses after drop.
        unsafe {
            libc::munmap(self.ptr.cast_mut().cast(), self.len);
        }
    }
}

/// Makes the calling thread a batch thread (`SCHED_BATCH`) for the I/O helpers that
/// run beside a forwarding thread (pcap writers and readers): woken by it, they do not
/// preempt it on its CPU (the kernel's wake-up preemption skips batch threads) but wait
/// for a CPU of their own. Failure only loses the hint.
pub(crate) fn be_batch_thread() {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler(2) with pid 0 changes the calling thread's policy
    // only; `p` is a valid parameter block for SCHED_BATCH (priority 0).
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_BATCH, &p);
    }
}

/// `sendto(fd, NULL, 0, MSG_DONTWAIT, NULL, 0)`: the "kick" of mmapped TX rings.
pub(crate) fn kick_tx(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: zero-length send without buffers or address.
    let r = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            std::ptr::null(),
            0,
            libc::MSG_DONTWAIT,
            std::ptr::null(),
            0,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Wall-clock time since the Unix epoch, for pcap timestamps.
pub(crate) fn now_since_epoch() -> Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}
