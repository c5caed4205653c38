//! The forwarding loop shared by the examples: receive a batch on one port,
//! hand each frame straight to the other port's send_batch (one copy), kick.

#![allow(dead_code)] // each example uses part of this

use std::io;

use p4jet_io::Port;

/// Counters of one direction.
#[derive(Default, Clone, Copy, Debug)]
pub struct DirStats {
    pub forwarded: u64,
    pub dropped: u64,
}

/// Forwards up to `batch` frames from `src` to `dst` without waiting.
/// Returns how many frames were received.
pub fn forward(
    src: &mut dyn Port,
    dst: &mut dyn Port,
    batch: usize,
    st: &mut DirStats,
) -> io::Result<usize> {
    let mut err = None;
    let n = src.recv_batch(batch, None, &mut |f| match dst.send_batch(&[f]) {
        Ok(1) => st.forwarded += 1,
        Ok(_) => st.dropped += 1,
        Err(e) => err = Some(e),
    })?;
    if let Some(e) = err {
        return Err(e);
    }
    if n > 0 {
        dst.flush()?;
    }
    Ok(n)
}

/// Waits until one of the ports may have frames, at most `ms` milliseconds.
pub fn wait_any(a: &dyn Port, b: &dyn Port, ms: i32) {
    let mut fds: Vec<libc::pollfd> = [a.poll_fd(), b.poll_fd()]
        .into_iter()
        .flatten()
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `fds` is a valid pollfd array of the given length.
    unsafe {
        libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms);
    }
}
