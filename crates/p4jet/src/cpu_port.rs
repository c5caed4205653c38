//! simple_switch_grpc's `--cpu-port N` as a [`Port`]: frames the pipeline sends to
//! port N go to the P4Runtime server (PacketIn), and PacketOut frames from the
//! server are received on port N. Every forwarding thread gets one, over the same
//! [`CpuChannel`]; the channel never blocks either side (see p4jet_p4rt::cpu).

use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::Duration;

use p4jet_io::{Port, PortKind, PortStats};
use p4jet_p4rt::CpuChannel;

/// One forwarding thread's handle on the CPU port.
pub(crate) struct CpuPort {
    chan: Arc<CpuChannel>,
    stats: PortStats,
}

impl CpuPort {
    pub(crate) fn new(chan: Arc<CpuChannel>) -> CpuPort {
        CpuPort {
            chan,
            stats: PortStats::default(),
        }
    }
}

impl Port for CpuPort {
    fn recv_batch(
        &mut self,
        max: usize,
        _timeout: Option<Duration>,
        f: &mut dyn FnMut(&[u8]),
    ) -> io::Result<usize> {
        let stats = &mut self.stats;
        Ok(self.chan.recv(max, &mut |frame| {
            stats.rx_packets += 1;
            stats.rx_bytes += frame.len() as u64;
            f(frame)
        }))
    }

    fn send_batch(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        for fr in frames {
            if self.chan.send_from_switch(fr) {
                self.stats.tx_packets += 1;
                self.stats.tx_bytes += fr.len() as u64;
            } else {
                self.stats.tx_dropped += 1;
            }
        }
        Ok(frames.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn name(&self) -> &str {
        "cpu"
    }

    fn kind(&self) -> PortKind {
        PortKind::Cpu
    }

    fn stats(&self) -> PortStats {
        self.stats
    }

    fn poll_fd(&self) -> Option<RawFd> {
        Some(self.chan.wake_fd())
    }
}
