//! Packet buffers for p4jet.
//!
//! A [`PacketBuf`] holds one frame, `buf[start..end]`, with headroom in front for
//! pushed headers. Its [`Storage`] is one of
//!
//! * a heap buffer, recycled through the worker's context pool (pcap files,
//!   AF_PACKET, TAP and the in-memory benchmark),
//! * one [`Frame`] of a [`FrameRegion`]: a page-aligned memory region cut into
//!   equal chunks, on which AF_XDP registers its UMEM. A frame the kernel received
//!   into a chunk is parsed, processed and deparsed in that chunk and transmitted
//!   from it on any AF_XDP socket sharing the region: no copy between rx and tx;
//! * a [`PortBuffer`]: a buffer of a port's own allocator (a DPDK mbuf), released
//!   through that allocator when dropped, and transmitted as itself by a port of
//!   the same [`PortBufferKind`].
//!
//! The last two are *port-owned* ([`Storage::is_port_owned`]): the switch returns
//! them to their owner when a packet is dropped instead of keeping them in its pools.
//!
//! # Chunk ownership
//!
//! Each chunk of a region is owned by exactly one of: the region's free list, one
//! [`Frame`] value, or the kernel. The I/O code moves chunks to the kernel with
//! [`FrameRegion::take_raw`] / [`Frame::into_raw`] (fill and tx rings) and back with
//! [`FrameRegion::frame_from_raw`] (rx ring) or [`FrameRegion::release_raw`]
//! (completion ring); those two are `unsafe` because only the caller knows that the
//! kernel has finished with the chunk. Dropping a `Frame` returns its chunk to the
//! free list, so a frame dropped anywhere (a packet dropped by the program, a port
//! removed, a switch reconfigured) is never lost.
#![deny(missing_docs)]

use std::fmt;
use std::io;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Arc;

use crossbeam::queue::ArrayQueue;

/// Headroom reserved in front of every packet for encapsulation. AF_XDP places
/// received frames the same distance (`XDP_PACKET_HEADROOM`) into their chunk.
pub const HEADROOM: usize = 256;

/// A page-aligned memory region of `count` chunks of `chunk_size` bytes, with a
/// lock-free free list of chunk indices. Shared (`Arc`) by the ports whose UMEM it
/// is and by every [`Frame`] taken from it.
pub struct FrameRegion {
    base: NonNull<u8>,
    len: usize,
    chunk: u32,
    count: u32,
    free: ArrayQueue<u32>,
}

// SAFETY: the fields are immutable after construction and `ArrayQueue` is
// thread-safe. The memory itself is only reached through `Frame`s (at most one
// per chunk, by the ownership rule in the crate docs) or through raw chunk indices
// that the I/O code hands to the kernel; so sharing the region between threads
// never gives two threads access to the same chunk.
unsafe impl Send for FrameRegion {}
// SAFETY: as for Send.
unsafe impl Sync for FrameRegion {}

impl FrameRegion {
    /// Maps a region of `count` chunks of `chunk_size` bytes (a power of two, at
    /// least 512), all free.
    pub fn new(chunk_size: u32, count: u32) -> io::Result<Arc<FrameRegion>> {
        if !chunk_size.is_power_of_two() || chunk_size < 512 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("frame region: chunk size {chunk_size} is not a power of two >= 512"),
            ));
        }
        if count == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "frame region: zero chunks",
            ));
        }
        let len = (chunk_size as usize)
            .checked_mul(count as usize)
            .ok_or_else(|| io::Error::other("frame region: size overflows"))?;
        // SAFETY: asks the kernel for a fresh anonymous mapping (addr NULL); no
        // existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("frame region: mmap of {len} bytes: {e}"),
            ));
        }
        let base = NonNull::new(p.cast::<u8>())
            .ok_or_else(|| io::Error::other("frame region: mmap returned NULL"))?;
        let free = ArrayQueue::new(count as usize);
        for i in 0..count {
            let _ = free.push(i);
        }
        Ok(Arc::new(FrameRegion {
            base,
            len,
            chunk: chunk_size,
            count,
            free,
        }))
    }

    /// First byte of the region (what a UMEM registration needs).
    pub fn base(&self) -> *mut u8 {
        self.base.as_ptr()
    }

    /// Size of the region in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a region has at least one chunk.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Bytes per chunk.
    pub fn chunk_size(&self) -> u32 {
        self.chunk
    }

    /// Number of chunks.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Chunks on the free list now.
    pub fn free_count(&self) -> usize {
        self.free.len()
    }

    /// Takes a free chunk as a [`Frame`].
    pub fn take(self: &Arc<Self>) -> Option<Frame> {
        let idx = self.free.pop()?;
        Some(Frame {
            region: self.clone(),
            idx,
        })
    }

    /// Takes a free chunk and returns its index: the caller now owns it (to give it
    /// to the kernel) and must return it with [`FrameRegion::release_raw`] or turn
    /// it into a [`Frame`] with [`FrameRegion::frame_from_raw`].
    pub fn take_raw(&self) -> Option<u32> {
        self.free.pop()
    }

    /// Returns chunk `idx` to the free list.
    ///
    /// # Safety
    /// The caller owns chunk `idx` (it came from [`FrameRegion::take_raw`] or
    /// [`Frame::into_raw`] and was not returned since), and nobody, the kernel
    /// included, reads or writes it any more.
    pub unsafe fn release_raw(&self, idx: u32) {
        debug_assert!(idx < self.count);
        let _ = self.free.push(idx);
    }

    /// Wraps chunk `idx` in a [`Frame`].
    ///
    /// # Safety
    /// As for [`FrameRegion::release_raw`]: the caller owns the chunk and nobody
    /// else touches it from now on.
    pub unsafe fn frame_from_raw(self: &Arc<Self>, idx: u32) -> Frame {
        debug_assert!(idx < self.count);
        Frame {
            region: self.clone(),
            idx,
        }
    }

    /// Chunk index of a byte offset into the region, if the offset is inside it.
    pub fn chunk_of(&self, offset: u64) -> Option<u32> {
        let i = offset / u64::from(self.chunk);
        (i < u64::from(self.count)).then_some(i as u32)
    }

    /// Byte offset of chunk `idx` from the start of the region.
    pub fn offset_of(&self, idx: u32) -> u64 {
        u64::from(idx) * u64::from(self.chunk)
    }
}

impl Drop for FrameRegion {
    fn drop(&mut self) {
        // SAFETY: base/len describe the mapping made in `new`; the region is only
        // dropped when no Frame (each holds an Arc) and no port (same) uses it.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}

impl fmt::Debug for FrameRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameRegion")
            .field("chunk", &self.chunk)
            .field("count", &self.count)
            .field("free", &self.free.len())
            .finish()
    }
}

/// One chunk of a [`FrameRegion`], owned: dropping it returns the chunk.
pub struct Frame {
    region: Arc<FrameRegion>,
    idx: u32,
}

impl Frame {
    /// The chunk's index in its region.
    pub fn index(&self) -> u32 {
        self.idx
    }

    /// The region the chunk belongs to.
    pub fn region(&self) -> &Arc<FrameRegion> {
        &self.region
    }

    /// Gives up the chunk without returning it to the free list (the caller hands
    /// it to the kernel); returns its index.
    pub fn into_raw(self) -> u32 {
        let me = ManuallyDrop::new(self);
        // SAFETY: `me` is never used again and its Drop does not run, so the Arc
        // is dropped exactly once, here.
        drop(unsafe { std::ptr::read(&me.region) });
        me.idx
    }

    fn ptr(&self) -> *mut u8 {
        // SAFETY: idx < count (a Frame is only made from indices of this region),
        // so the offset is inside the mapping.
        unsafe {
            self.region
                .base
                .as_ptr()
                .add(self.idx as usize * self.region.chunk as usize)
        }
    }
}

impl Deref for Frame {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the chunk lies inside the live mapping (the Arc keeps it) and is
        // owned by this Frame alone, so no one writes it while it is borrowed.
        unsafe { std::slice::from_raw_parts(self.ptr(), self.region.chunk as usize) }
    }
}

impl DerefMut for Frame {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as for deref; `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(), self.region.chunk as usize) }
    }
}

impl Drop for Frame {
    fn drop(&mut self) {
        // cannot fail: the queue holds `count` slots and each index is in it at
        // most once (it is not there while this Frame owns it)
        let _ = self.region.free.push(self.idx);
    }
}

impl fmt::Debug for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Frame({})", self.idx)
    }
}

/// A kind of port-owned buffer: how to give one back to its allocator. Compared by
/// address, so each kind is one `static`.
#[derive(Debug)]
pub struct PortBufferKind {
    /// Name in debug output (`"dpdk mbuf"`).
    pub name: &'static str,
    /// Gives the buffer `handle` back to its allocator. Must be callable from any
    /// thread.
    pub release: unsafe fn(NonNull<u8>),
}

/// A buffer of a port's own allocator, identified by an opaque `handle` (for DPDK,
/// the `rte_mbuf`); released with its kind's `release` when dropped.
pub struct PortBuffer {
    handle: NonNull<u8>,
    kind: &'static PortBufferKind,
}

impl PortBuffer {
    /// The handle, if the buffer is of `kind`.
    pub fn handle(&self, kind: &'static PortBufferKind) -> Option<NonNull<u8>> {
        std::ptr::eq(self.kind, kind).then_some(self.handle)
    }
}

impl Drop for PortBuffer {
    fn drop(&mut self) {
        // SAFETY: the handle was given to `Storage::port_buffer`, whose contract says
        // it is owned by this value until released once, which happens here.
        unsafe { (self.kind.release)(self.handle) }
    }
}

/// Where a packet's bytes live: a heap vector, a region [`Frame`] or a
/// [`PortBuffer`]. A pointer and length to the bytes are kept next to the owner, so
/// reading them costs no branch.
pub struct Storage {
    ptr: NonNull<u8>,
    len: usize,
    owner: Owner,
}

enum Owner {
    Heap(Vec<u8>),
    Frame(Frame),
    Port(PortBuffer),
}

// SAFETY: `ptr` is a cached view of memory owned by `owner` (a Vec; a Frame, which
// is Send and Sync; or a port buffer, whose contract in `Storage::port_buffer`
// makes it movable between threads); it adds no sharing of its own.
unsafe impl Send for Storage {}
// SAFETY: as for Send; `&Storage` only gives shared reads.
unsafe impl Sync for Storage {}

impl Storage {
    /// Storage on the heap.
    pub fn heap(mut v: Vec<u8>) -> Storage {
        // A Vec's buffer does not move when the Vec does; it is only replaced by
        // `grow`, which takes the pointer again.
        let ptr = NonNull::new(v.as_mut_ptr()).unwrap_or(NonNull::dangling());
        Storage {
            ptr,
            len: v.len(),
            owner: Owner::Heap(v),
        }
    }

    /// Storage in a region chunk.
    pub fn in_frame(f: Frame) -> Storage {
        let ptr = NonNull::new(f.ptr()).unwrap_or(NonNull::dangling());
        Storage {
            ptr,
            len: f.len(),
            owner: Owner::Frame(f),
        }
    }

    /// Makes the storage at least `n` bytes long (new bytes zero). A frame too
    /// small for that moves to the heap (its chunk goes back to the region).
    #[inline]
    pub fn grow_to(&mut self, n: usize) {
        if self.len < n {
            self.grow(n);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, n: usize) {
        let mut v = std::mem::take(self).into_vec();
        v.resize(n, 0);
        *self = Storage::heap(v);
    }

    /// Storage in a buffer of a port's allocator: `len` bytes at `ptr`, given back
    /// with `kind.release(handle)` when dropped.
    ///
    /// # Safety
    /// `ptr..ptr + len` is valid for reads and writes and reached through nothing
    /// else until `handle` is released (by the drop of this storage, or by whoever
    /// takes it back with [`Storage::into_port_buffer`]); the buffer may be used and
    /// released from any thread.
    pub unsafe fn port_buffer(
        ptr: NonNull<u8>,
        len: usize,
        handle: NonNull<u8>,
        kind: &'static PortBufferKind,
    ) -> Storage {
        Storage {
            ptr,
            len,
            owner: Owner::Port(PortBuffer { handle, kind }),
        }
    }

    fn into_vec(self) -> Vec<u8> {
        match self.owner {
            Owner::Heap(v) => v,
            Owner::Frame(f) => f.to_vec(),
            Owner::Port(_) => self.to_vec(),
        }
    }

    /// True for storage the switch does not keep when a packet ends (a region
    /// frame, a port buffer): it goes back to its owner.
    #[inline]
    pub fn is_port_owned(&self) -> bool {
        !matches!(self.owner, Owner::Heap(_))
    }

    /// The port buffer's handle, if the storage is a port buffer of `kind`.
    #[inline]
    pub fn port_buffer_handle(&self, kind: &'static PortBufferKind) -> Option<NonNull<u8>> {
        match &self.owner {
            Owner::Port(b) => b.handle(kind),
            _ => None,
        }
    }

    /// Takes back a port buffer of `kind` without releasing it (the caller now owns
    /// the handle, e.g. to transmit it); the storage unchanged otherwise.
    pub fn into_port_buffer(self, kind: &'static PortBufferKind) -> Result<NonNull<u8>, Storage> {
        match self.owner {
            Owner::Port(b) if std::ptr::eq(b.kind, kind) => {
                // the handle goes to the caller: the PortBuffer must not release it
                Ok(ManuallyDrop::new(b).handle)
            }
            owner => Err(Storage {
                ptr: self.ptr,
                len: self.len,
                owner,
            }),
        }
    }

    /// The frame, if the storage is one.
    #[inline]
    pub fn frame(&self) -> Option<&Frame> {
        match &self.owner {
            Owner::Frame(f) => Some(f),
            Owner::Heap(_) | Owner::Port(_) => None,
        }
    }

    /// The frame, or the storage back if it is on the heap.
    pub fn into_frame(self) -> Result<Frame, Storage> {
        match self.owner {
            Owner::Frame(f) => Ok(f),
            Owner::Heap(v) => Err(Storage::heap(v)),
            owner @ Owner::Port(_) => Err(Storage {
                ptr: self.ptr,
                len: self.len,
                owner,
            }),
        }
    }
}

impl Default for Storage {
    fn default() -> Self {
        Storage::heap(Vec::new())
    }
}

impl Deref for Storage {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr/len describe the Vec's buffer or the Frame's chunk, owned by
        // `self.owner` and never reallocated while cached (only `grow` replaces
        // the owner, and it rebuilds the whole Storage).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for Storage {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as for deref; `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Clone for Storage {
    /// A frame is owned by one packet: its clone is a heap copy.
    fn clone(&self) -> Self {
        Storage::heap(self.to_vec())
    }
}

impl fmt::Debug for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.owner {
            Owner::Heap(v) => write!(f, "Heap({} bytes)", v.len()),
            Owner::Frame(fr) => write!(f, "{fr:?}"),
            Owner::Port(b) => write!(f, "{}({} bytes)", b.kind.name, self.len),
        }
    }
}

/// A packet buffer with headroom: the frame is `buf[start..end]`.
#[derive(Debug, Clone, Default)]
pub struct PacketBuf {
    /// Storage (a heap buffer recycled through a pool, or a region frame).
    pub buf: Storage,
    /// First byte of the frame.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl PacketBuf {
    /// An empty heap buffer able to hold `cap` frame bytes after the headroom.
    pub fn with_capacity(cap: usize) -> PacketBuf {
        PacketBuf {
            buf: Storage::heap(vec![0; HEADROOM + cap]),
            start: HEADROOM,
            end: HEADROOM,
        }
    }

    /// A buffer holding `frame[start..end]` of a region chunk (what AF_XDP
    /// received there). `end` is clamped to the chunk, `start` to `end`.
    pub fn in_frame(frame: Frame, start: usize, end: usize) -> PacketBuf {
        let end = end.min(frame.len());
        PacketBuf {
            buf: Storage::in_frame(frame),
            start: start.min(end),
            end,
        }
    }

    /// A buffer holding `buf[start..end]` of any storage (a port buffer as received).
    /// `end` is clamped to the storage, `start` to `end`.
    pub fn in_storage(buf: Storage, start: usize, end: usize) -> PacketBuf {
        let end = end.min(buf.len());
        PacketBuf {
            start: start.min(end),
            end,
            buf,
        }
    }

    /// The region chunk and the frame's place in it, `(chunk, start, end)`; the
    /// buffer itself back if it is on the heap. The inverse of
    /// [`PacketBuf::in_frame`].
    pub fn into_frame(self) -> Result<(Frame, usize, usize), PacketBuf> {
        let PacketBuf { buf, start, end } = self;
        match buf.into_frame() {
            Ok(f) => Ok((f, start, end)),
            Err(buf) => Err(PacketBuf { buf, start, end }),
        }
    }

    /// A port buffer of `kind` and the frame's place in it, `(handle, start, end)`,
    /// without releasing it; the buffer itself back otherwise.
    pub fn into_port_buffer(
        self,
        kind: &'static PortBufferKind,
    ) -> Result<(NonNull<u8>, usize, usize), PacketBuf> {
        let PacketBuf { buf, start, end } = self;
        match buf.into_port_buffer(kind) {
            Ok(h) => Ok((h, start, end)),
            Err(buf) => Err(PacketBuf { buf, start, end }),
        }
    }

    /// The frame.
    #[inline]
    pub fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Frame length.
    #[inline]
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// True when the frame is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// Bytes of storage (headroom and tailroom included).
    #[inline]
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Shortens the frame to at most `n` bytes.
    pub fn truncate(&mut self, n: usize) {
        self.end = self.end.min(self.start + n);
    }

    /// Replaces the frame, placing it after the headroom (the storage grows only
    /// for frames larger than it).
    #[inline]
    pub fn set(&mut self, frame: &[u8]) {
        self.buf.grow_to(HEADROOM + frame.len());
        self.start = HEADROOM;
        self.end = HEADROOM + frame.len();
        self.buf[self.start..self.end].copy_from_slice(frame);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_return_to_the_region_when_dropped() {
        let r = FrameRegion::new(2048, 4).expect("region");
        assert_eq!(r.free_count(), 4);
        let a = r.take().expect("a");
        let b = r.take().expect("b");
        assert_ne!(a.index(), b.index());
        assert_eq!(r.free_count(), 2);
        drop(a);
        assert_eq!(r.free_count(), 3);
        let raw = b.into_raw();
        assert_eq!(r.free_count(), 3, "a raw chunk is not free");
        // SAFETY: `raw` came from into_raw and nobody else uses it.
        let b = unsafe { r.frame_from_raw(raw) };
        drop(b);
        assert_eq!(r.free_count(), 4);
        let mut all: Vec<Frame> = std::iter::from_fn(|| r.take()).collect();
        assert_eq!(all.len(), 4);
        assert!(r.take().is_none(), "an exhausted region gives nothing");
        all.pop();
        assert!(r.take().is_some());
    }

    #[test]
    fn chunks_are_disjoint_and_keep_their_bytes() {
        let r = FrameRegion::new(512, 8).expect("region");
        let mut fs: Vec<Frame> = std::iter::from_fn(|| r.take()).collect();
        for f in &mut fs {
            let i = f.index() as u8;
            f.fill(i);
        }
        for f in &fs {
            assert!(f.iter().all(|b| *b == f.index() as u8));
            assert_eq!(f.len(), 512);
            assert_eq!(
                f.as_ptr() as usize - r.base() as usize,
                r.offset_of(f.index()) as usize
            );
            assert_eq!(r.chunk_of(r.offset_of(f.index()) + 100), Some(f.index()));
        }
        assert_eq!(r.chunk_of(512 * 8), None);
    }

    #[test]
    fn bad_regions_are_refused() {
        assert!(FrameRegion::new(1000, 4).is_err());
        assert!(FrameRegion::new(256, 4).is_err());
        assert!(FrameRegion::new(2048, 0).is_err());
    }

    #[test]
    fn a_frame_buffer_moves_to_the_heap_only_when_it_must_grow() {
        let r = FrameRegion::new(2048, 2).expect("region");
        let mut f = r.take().expect("frame");
        f[HEADROOM..HEADROOM + 4].copy_from_slice(&[1, 2, 3, 4]);
        let mut p = PacketBuf::in_frame(f, HEADROOM, HEADROOM + 4);
        assert_eq!(p.data(), &[1, 2, 3, 4]);
        assert_eq!(r.free_count(), 1);
        p.set(&[9; 1000]);
        assert!(p.buf.frame().is_some(), "fits: stays in the frame");
        assert_eq!(p.data(), &[9; 1000][..]);
        let c = p.clone();
        assert!(c.buf.frame().is_none(), "a clone is a heap copy");
        assert_eq!(c.data(), p.data());
        p.set(&[7; 3000]);
        assert!(p.buf.frame().is_none(), "too large: moved to the heap");
        assert_eq!(p.data(), &[7; 3000][..]);
        assert_eq!(r.free_count(), 2, "the chunk went back");
        p.truncate(10);
        assert_eq!(p.len(), 10);
        let q = PacketBuf::in_frame(r.take().expect("frame"), 5000, 9000);
        assert_eq!((q.start, q.end), (2048, 2048), "clamped to the chunk");
        let (f, s, e) = PacketBuf::in_frame(r.take().expect("frame"), 256, 300)
            .into_frame()
            .expect("a frame buffer");
        assert_eq!((f.len(), s, e), (2048, 256, 300));
        let back = p.into_frame().expect_err("a heap buffer stays one");
        assert_eq!(back.len(), 10);
    }

    #[test]
    fn frames_cross_threads() {
        let r = FrameRegion::new(2048, 64).expect("region");
        let frames: Vec<Frame> = std::iter::from_fn(|| r.take()).collect();
        let h = std::thread::spawn(move || {
            let n = frames.len();
            drop(frames);
            n
        });
        assert_eq!(h.join().expect("thread"), 64);
        assert_eq!(r.free_count(), 64);
    }

    /// A test allocator for port buffers: boxed 512-byte arrays, counted.
    static RELEASED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    /// # Safety
    /// `h` came from `Box::into_raw` in `boxed` and is released once.
    unsafe fn release_boxed(h: NonNull<u8>) {
        // SAFETY: by the contract above.
        drop(unsafe { Box::from_raw(h.as_ptr().cast::<[u8; 512]>()) });
        RELEASED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    static BOXED: PortBufferKind = PortBufferKind {
        name: "boxed",
        release: release_boxed,
    };
    static OTHER: PortBufferKind = PortBufferKind {
        name: "other",
        release: release_boxed,
    };

    fn boxed(fill: u8) -> Storage {
        let b = Box::into_raw(Box::new([fill; 512]));
        let h = NonNull::new(b.cast::<u8>()).expect("box");
        // SAFETY: the box is reached only through this storage until released by
        // `release_boxed`, which frees it; boxes may move between threads.
        unsafe { Storage::port_buffer(h, 512, h, &BOXED) }
    }

    #[test]
    fn port_buffers_are_released_once_and_only_when_dropped() {
        use std::sync::atomic::Ordering::SeqCst;
        // one test owns the counter: the steps below run in sequence
        let base = RELEASED.load(SeqCst);
        let s = boxed(7);
        assert!(s.is_port_owned());
        assert!(s.frame().is_none());
        assert_eq!(s.len(), 512);
        assert!(s.iter().all(|b| *b == 7));
        assert!(s.port_buffer_handle(&BOXED).is_some());
        assert!(
            s.port_buffer_handle(&OTHER).is_none(),
            "kinds compare by address"
        );
        let c = s.clone();
        assert!(!c.is_port_owned(), "a clone is a heap copy");
        drop(s);
        assert_eq!(RELEASED.load(SeqCst), base + 1);

        // taken back: not released; the caller releases it
        let p = PacketBuf::in_storage(boxed(1), 128, 192);
        let p = p
            .into_port_buffer(&OTHER)
            .expect_err("another kind stays a buffer");
        let (h, start, end) = p.into_port_buffer(&BOXED).expect("a boxed buffer");
        assert_eq!((start, end), (128, 192));
        assert_eq!(RELEASED.load(SeqCst), base + 1);
        // SAFETY: `h` was handed back by into_port_buffer and is released once.
        unsafe { release_boxed(h) };
        assert_eq!(RELEASED.load(SeqCst), base + 2);

        // growing past the buffer moves the bytes to the heap and releases it
        let mut p = PacketBuf {
            buf: boxed(3),
            start: 100,
            end: 110,
        };
        p.set(&[5; 200]);
        assert!(p.buf.is_port_owned(), "fits: stays");
        p.set(&[6; 1000]);
        assert!(!p.buf.is_port_owned());
        assert_eq!(p.data(), &[6; 1000][..]);
        assert_eq!(RELEASED.load(SeqCst), base + 3);
        assert!(p.into_port_buffer(&BOXED).is_err());
        // a heap buffer is never taken for a port buffer
        assert!(Storage::heap(vec![0; 4]).into_port_buffer(&BOXED).is_err());
        // a port buffer is not a frame
        assert!(boxed(0).into_frame().is_err());
        assert_eq!(
            PacketBuf::in_storage(boxed(1), 600, 700).len(),
            0,
            "clamped"
        );
        assert_eq!(RELEASED.load(SeqCst), base + 5);
    }

    proptest::proptest! {
        /// Any sequence of takes, raw takes, releases and drops keeps every chunk
        /// in exactly one place.
        #[test]
        fn every_chunk_has_one_owner(ops in proptest::collection::vec(0u8..5, 1..200)) {
            let r = FrameRegion::new(512, 16).expect("region");
            let mut frames: Vec<Frame> = vec![];
            let mut raw: Vec<u32> = vec![];
            for op in ops {
                match op {
                    0 => frames.extend(r.take()),
                    1 => raw.extend(r.take_raw()),
                    2 => { frames.pop(); }
                    3 => if let Some(i) = raw.pop() {
                        // SAFETY: `i` is owned by this test and unused.
                        unsafe { r.release_raw(i) }
                    },
                    _ => if let Some(f) = frames.pop() { raw.push(f.into_raw()) },
                }
                let mut seen: Vec<u32> = frames.iter().map(|f| f.index()).chain(raw.iter().copied()).collect();
                seen.sort_unstable();
                seen.dedup();
                proptest::prop_assert_eq!(seen.len(), frames.len() + raw.len());
                proptest::prop_assert_eq!(r.free_count() + seen.len(), 16);
            }
        }
    }
}
