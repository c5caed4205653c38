//! Test traffic shared by the examples: 64-byte (or larger) UDP frames from
//! 02:00:00:00:00:01 / 10.0.0.1 to 02:00:00:00:00:02 / 10.0.0.2, one flow per
//! source port.

#![allow(dead_code)] // each example uses part of this

/// An Ethernet + IPv4 + UDP frame of `size` bytes (>= 60) with UDP source port
/// `sport` (destination port 9) and a correct IPv4 header checksum.
pub fn udp_frame(sport: u16, size: usize) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00];
    let ip_len = (size - 14) as u16;
    let mut ip = vec![
        0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    let mut sum: u32 = ip
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&9u16.to_be_bytes());
    f.extend_from_slice(&(ip_len - 20).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.resize(size, 0);
    f
}

/// The frames of `flows` flows (UDP source ports 1024, 1025, ...).
pub fn flows(flows: u16, size: usize) -> Vec<Vec<u8>> {
    (0..flows).map(|i| udp_frame(1024 + i, size)).collect()
}
