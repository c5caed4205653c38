//! The CPU port's two queues between the forwarding threads and the gRPC server.
//!
//! simple_switch_grpc's `--cpu-port N` is a port with no interface behind it:
//! frames the pipeline sends to port N become PacketIn messages, and PacketOut
//! messages enter the pipeline as frames received on port N. [`CpuChannel`] holds
//! the frames in between, in two bounded lock-free queues, so neither side ever
//! waits for the other:
//!
//! * **to the switch** (PacketOut frames): the server pushes; when the queue is full
//!   the PacketOut is refused with a `RESOURCE_EXHAUSTED` stream error (a client
//!   that floods packet-outs cannot grow the switch's memory). A forwarding thread
//!   pops them in its receive step; [`CpuChannel::wake_fd`] becomes readable when
//!   frames wait, so an idle thread that polls its ports wakes at once.
//! * **from the switch** (PacketIn frames): a forwarding thread pushes in its
//!   transmit step, never blocking: when the queue is full the frame is dropped and
//!   counted. The server is woken ([`CpuChannel::wait_packet_in`]) and turns the
//!   frames into PacketIn messages for the primary clients.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam::queue::ArrayQueue;

/// Frames each queue holds at most.
pub const DEFAULT_CAPACITY: usize = 4096;

/// Counters of a [`CpuChannel`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuStats {
    /// PacketOut frames queued for the switch.
    pub packet_out: u64,
    /// PacketOut frames refused because the queue was full.
    pub packet_out_refused: u64,
    /// Frames the switch sent to the CPU port.
    pub packet_in: u64,
    /// Of those, dropped because the server had not taken the earlier ones.
    pub packet_in_dropped: u64,
}

/// The CPU port's queues (shared by the server and every forwarding thread).
pub struct CpuChannel {
    port: u32,
    to_switch: ArrayQueue<Vec<u8>>,
    from_switch: ArrayQueue<Vec<u8>>,
    packet_in_ready: tokio::sync::Notify,
    wake_tx: Mutex<UnixStream>,
    wake_rx: UnixStream,
    packet_out: AtomicU64,
    packet_out_refused: AtomicU64,
    packet_in: AtomicU64,
    packet_in_dropped: AtomicU64,
}

impl std::fmt::Debug for CpuChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuChannel")
            .field("port", &self.port)
            .field("stats", &self.stats())
            .finish()
    }
}

impl CpuChannel {
    /// Queues for CPU port `port`, each holding at most `capacity` frames.
    pub fn new(port: u32, capacity: usize) -> std::io::Result<CpuChannel> {
        let (wake_tx, wake_rx) = UnixStream::pair()?;
        wake_tx.set_nonblocking(true)?;
        wake_rx.set_nonblocking(true)?;
        Ok(CpuChannel {
            port,
            to_switch: ArrayQueue::new(capacity.max(1)),
            from_switch: ArrayQueue::new(capacity.max(1)),
            packet_in_ready: tokio::sync::Notify::new(),
            wake_tx: Mutex::new(wake_tx),
            wake_rx,
            packet_out: AtomicU64::new(0),
            packet_out_refused: AtomicU64::new(0),
            packet_in: AtomicU64::new(0),
            packet_in_dropped: AtomicU64::new(0),
        })
    }

    /// The CPU port number.
    pub fn port(&self) -> u32 {
        self.port
    }

    // ------------------------------------------------------------ server side

    /// Queues a PacketOut frame; false (and nothing queued) when the queue is full.
    pub fn send_to_switch(&self, frame: Vec<u8>) -> bool {
        if self.to_switch.push(frame).is_err() {
            self.packet_out_refused.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        self.packet_out.fetch_add(1, Ordering::Relaxed);
        // one byte wakes a polling thread; a full socket buffer already wakes it
        if let Ok(mut w) = self.wake_tx.lock() {
            let _ = w.write(&[1]);
        }
        true
    }

    /// The next frame the switch sent to the CPU port.
    pub fn take_packet_in(&self) -> Option<Vec<u8>> {
        self.from_switch.pop()
    }

    /// Waits until the switch sent a frame to the CPU port (returns at once if one
    /// waits already, or arrived since the last wait).
    pub async fn wait_packet_in(&self) {
        if !self.from_switch.is_empty() {
            return;
        }
        self.packet_in_ready.notified().await;
    }

    // ------------------------------------------------------------ switch side

    /// Calls `f` for up to `max` PacketOut frames; returns how many.
    pub fn recv(&self, max: usize, f: &mut dyn FnMut(&[u8])) -> usize {
        // clear the wake-ups first: a frame queued after this is seen now or wakes
        // the next poll
        let mut scratch = [0u8; 256];
        loop {
            match (&self.wake_rx).read(&mut scratch) {
                Ok(n) if n == scratch.len() => continue,
                Ok(_) => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let mut n = 0;
        while n < max {
            let Some(frame) = self.to_switch.pop() else {
                break;
            };
            f(&frame);
            n += 1;
        }
        n
    }

    /// Hands a frame the pipeline sent to the CPU port to the server; false when it
    /// was dropped (the server is behind).
    pub fn send_from_switch(&self, frame: &[u8]) -> bool {
        self.packet_in.fetch_add(1, Ordering::Relaxed);
        let ok = self.from_switch.push(frame.to_vec()).is_ok();
        if !ok {
            self.packet_in_dropped.fetch_add(1, Ordering::Relaxed);
        }
        self.packet_in_ready.notify_one();
        ok
    }

    /// Readable while PacketOut frames may wait.
    pub fn wake_fd(&self) -> RawFd {
        self.wake_rx.as_raw_fd()
    }

    /// Counters.
    pub fn stats(&self) -> CpuStats {
        CpuStats {
            packet_out: self.packet_out.load(Ordering::Relaxed),
            packet_out_refused: self.packet_out_refused.load(Ordering::Relaxed),
            packet_in: self.packet_in.load(Ordering::Relaxed),
            packet_in_dropped: self.packet_in_dropped.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn bounded_both_ways() {
        let c = CpuChannel::new(255, 2).unwrap();
        assert!(c.send_to_switch(vec![1]));
        assert!(c.send_to_switch(vec![2]));
        assert!(!c.send_to_switch(vec![3]));
        let mut got = vec![];
        assert_eq!(c.recv(8, &mut |f| got.push(f.to_vec())), 2);
        assert_eq!(got, vec![vec![1], vec![2]]);
        assert!(c.send_from_switch(&[9]));
        assert!(c.send_from_switch(&[8]));
        assert!(!c.send_from_switch(&[7]));
        assert_eq!(c.take_packet_in(), Some(vec![9]));
        let s = c.stats();
        assert_eq!((s.packet_out, s.packet_out_refused), (2, 1));
        assert_eq!((s.packet_in, s.packet_in_dropped), (3, 1));
    }
}
