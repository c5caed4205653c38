//! The little of the pcap format the FIFO ports need: a global header and records
//! written by hand (they are streamed into pipes a batch at a time), and a reader
//! that tolerates a file still being written.

use std::path::Path;

/// The pcap global header: microsecond timestamps, Ethernet, little-endian.
pub fn file_header() -> Vec<u8> {
    let mut h = Vec::with_capacity(24);
    h.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    h.extend_from_slice(&2u16.to_le_bytes());
    h.extend_from_slice(&4u16.to_le_bytes());
    h.extend_from_slice(&0i32.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes());
    h.extend_from_slice(&65535u32.to_le_bytes());
    h.extend_from_slice(&1u32.to_le_bytes());
    h
}

/// One record with timestamp `ts_us` microseconds.
pub fn record(ts_us: u64, frame: &[u8]) -> Vec<u8> {
    let mut r = Vec::with_capacity(16 + frame.len());
    r.extend_from_slice(&((ts_us / 1_000_000) as u32).to_le_bytes());
    r.extend_from_slice(&((ts_us % 1_000_000) as u32).to_le_bytes());
    r.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    r.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    r.extend_from_slice(frame);
    r
}

/// The complete records of a pcap file (either byte order; a partial last record is
/// left out; a missing file has none).
pub fn read_records(path: &Path) -> Vec<Vec<u8>> {
    let Ok(b) = std::fs::read(path) else {
        return vec![];
    };
    parse_records(&b)
}

/// The complete records of pcap bytes.
pub fn parse_records(b: &[u8]) -> Vec<Vec<u8>> {
    if b.len() < 24 {
        return vec![];
    }
    let le = matches!(b[0..4], [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1]);
    let u32at = |i: usize| {
        let a = [b[i], b[i + 1], b[i + 2], b[i + 3]];
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    let mut out = vec![];
    let mut i = 24;
    while i + 16 <= b.len() {
        let n = u32at(i + 8) as usize;
        if i + 16 + n > b.len() {
            break;
        }
        out.push(b[i + 16..i + 16 + n].to_vec());
        i += 16 + n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let mut f = file_header();
        f.extend(record(1, &[1, 2, 3]));
        f.extend(record(2_000_001, &[]));
        f.extend(record(3, &[9; 70]));
        f.extend_from_slice(&[0, 0, 0]); // partial record
        let r = parse_records(&f);
        assert_eq!(r, vec![vec![1, 2, 3], vec![], vec![9; 70]]);
    }
}
