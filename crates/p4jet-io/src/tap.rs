//! TAP port (`/dev/net/tun`, `IFF_TAP | IFF_NO_PI`), for quick experiments:
//! the switch appears to the host as an Ethernet interface. Frames the host
//! sends on the interface are received here; frames sent here appear as
//! received on the interface. One `read`/`write` per frame.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::time::{Duration, Instant};

use crate::sys::{self, ctx, cvt};
use crate::{Port, PortKind, PortStats};

/// A TAP device opened (or created) by name.
pub struct TapPort {
    name: String,
    file: File,
    buf: Vec<u8>,
    stats: PortStats,
}

impl TapPort {
    /// Opens TAP device `name`, creating it if it does not exist (it then
    /// lives until the port is dropped). With `set_up`, brings the interface
    /// up.
    pub fn open(name: &str, set_up: bool) -> io::Result<TapPort> {
        Self::open_inner(name, set_up).map_err(|e| ctx(e, format_args!("TAP {name}")))
    }

    fn open_inner(name: &str, set_up: bool) -> io::Result<TapPort> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/net/tun")
            .map_err(|e| ctx(e, "/dev/net/tun"))?;
        let mut req = sys::ifreq(name)?;
        req.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads the name and flags from `req` and writes the
        // final name back into it.
        cvt(unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, &mut req) })
            .map_err(|e| ctx(e, "TUNSETIFF"))?;
        if set_up {
            let s = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
            sys::set_up(s.as_raw_fd(), name)?;
        }
        Ok(TapPort {
            name: name.to_string(),
            file,
            buf: vec![0; 65536 + 64],
            stats: PortStats::default(),
        })
    }
}

impl Port for TapPort {
    fn recv_batch(
        &mut self,
        max: usize,
        timeout: Option<Duration>,
        f: &mut dyn FnMut(&[u8]),
    ) -> io::Result<usize> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut n = 0;
        while n < max {
            match self.file.read(&mut self.buf) {
                Ok(len) => {
                    f(&self.buf[..len]);
                    self.stats.rx_packets += 1;
                    self.stats.rx_bytes += len as u64;
                    n += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if n > 0 {
                        break;
                    }
                    let Some(d) = deadline else { break };
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero()
                        || sys::poll_one(self.file.as_raw_fd(), libc::POLLIN, left)? == 0
                    {
                        break;
                    }
                }
                Err(e) => return Err(ctx(e, format_args!("TAP {} read", self.name))),
            }
        }
        Ok(n)
    }

    fn send_batch(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        for (i, fr) in frames.iter().enumerate() {
            match self.file.write(fr) {
                Ok(_) => {
                    self.stats.tx_packets += 1;
                    self.stats.tx_bytes += fr.len() as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(i),
                // Interface down, frame too big...: drop this frame only.
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EIO) | Some(libc::EINVAL) | Some(libc::EMSGSIZE)
                    ) =>
                {
                    self.stats.tx_dropped += 1
                }
                Err(e) => return Err(ctx(e, format_args!("TAP {} write", self.name))),
            }
        }
        Ok(frames.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> PortKind {
        PortKind::Tap
    }

    fn stats(&self) -> PortStats {
        self.stats
    }

    fn poll_fd(&self) -> Option<RawFd> {
        Some(self.file.as_raw_fd())
    }
}
