//! Packet I/O through the CPU port: the `@controller_header` headers.
//!
//! The P4Info's `controller_packet_metadata` named `packet_out` describes the header
//! a PacketOut's metadata becomes: its fields in order, `bitwidth` bits each, packed
//! big-endian from the first bit, the header padded to whole bytes. The switch
//! receives `header ++ payload` on the CPU port. A frame the pipeline sends to the
//! CPU port starts with the `packet_in` header: its fields become the PacketIn's
//! metadata (canonical bytestrings) and the rest is the payload. A program without
//! such a header sends and receives the frames as they are.

use crate::bytestring;
use crate::proto::p4::config::v1::{ControllerPacketMetadata, P4Info};
use crate::proto::p4::v1::{PacketIn, PacketMetadata, PacketOut};

/// One controller header: (metadata id, name, bit width) per field, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ControllerHeader {
    /// The header's P4Info name (`packet_in`, `packet_out`).
    pub name: String,
    /// (id, name, bitwidth) per field.
    pub fields: Vec<(u32, String, u32)>,
}

/// The largest controller header accepted, in bits: every PacketOut and PacketIn
/// carries one, so a P4Info giving its fields absurd widths (`bitwidth: 2147483647`)
/// would make each packet cost hundreds of megabytes.
pub const MAX_HEADER_BITS: u64 = 8 * 4096;

impl ControllerHeader {
    fn from_p4info(c: &ControllerPacketMetadata) -> Result<ControllerHeader, String> {
        let name = c
            .preamble
            .as_ref()
            .map(|p| p.name.clone())
            .unwrap_or_default();
        let mut total = 0u64;
        let mut fields = Vec::with_capacity(c.metadata.len());
        for m in &c.metadata {
            if m.bitwidth <= 0 {
                return Err(format!(
                    "controller header {name}: metadata {} ({}) has bitwidth {}",
                    m.id, m.name, m.bitwidth
                ));
            }
            total += m.bitwidth as u64;
            if total > MAX_HEADER_BITS {
                return Err(format!(
                    "controller header {name}: wider than {MAX_HEADER_BITS} bits (metadata {} \
                     ({}) has bitwidth {})",
                    m.id, m.name, m.bitwidth
                ));
            }
            fields.push((m.id, m.name.clone(), m.bitwidth as u32));
        }
        Ok(ControllerHeader { name, fields })
    }

    /// Total bits of the fields.
    pub fn bits(&self) -> u32 {
        self.fields.iter().map(|f| f.2).sum()
    }

    /// Bytes the header takes in a frame.
    pub fn bytes(&self) -> usize {
        bytestring::width_bytes(self.bits())
    }
}

/// The program's packet_in and packet_out headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PacketIo {
    /// `@controller_header("packet_in")`.
    pub packet_in: Option<ControllerHeader>,
    /// `@controller_header("packet_out")`.
    pub packet_out: Option<ControllerHeader>,
}

fn header_kind(c: &ControllerPacketMetadata) -> Option<&'static str> {
    let p = c.preamble.as_ref()?;
    for a in &p.annotations {
        let a: String = a.chars().filter(|c| !c.is_whitespace()).collect();
        if a.starts_with("@controller_header(\"packet_in\")") {
            return Some("packet_in");
        }
        if a.starts_with("@controller_header(\"packet_out\")") {
            return Some("packet_out");
        }
    }
    match p.name.as_str() {
        "packet_in" => Some("packet_in"),
        "packet_out" => Some("packet_out"),
        _ => None,
    }
}

impl PacketIo {
    /// The controller headers of a P4Info.
    ///
    /// Fails on a field of width 0 (or less) and on a header wider than
    /// [`MAX_HEADER_BITS`].
    pub fn from_p4info(p4info: &P4Info) -> Result<PacketIo, String> {
        let mut io = PacketIo::default();
        for c in &p4info.controller_packet_metadata {
            match header_kind(c) {
                Some("packet_in") => io.packet_in = Some(ControllerHeader::from_p4info(c)?),
                Some("packet_out") => io.packet_out = Some(ControllerHeader::from_p4info(c)?),
                _ => {}
            }
        }
        Ok(io)
    }

    /// The frame a PacketOut becomes: the packet_out header built from its metadata
    /// (fields not given are 0), then the payload.
    pub fn packet_out_frame(&self, p: &PacketOut) -> Result<Vec<u8>, String> {
        let Some(h) = &self.packet_out else {
            if let Some(m) = p.metadata.first() {
                return Err(format!(
                    "metadata id {} given, but the program has no packet_out controller header",
                    m.metadata_id
                ));
            }
            return Ok(p.payload.clone());
        };
        let mut values: Vec<Option<&[u8]>> = vec![None; h.fields.len()];
        for m in &p.metadata {
            let Some(i) = h.fields.iter().position(|f| f.0 == m.metadata_id) else {
                return Err(format!(
                    "unknown packet_out metadata id {} (the header has {})",
                    m.metadata_id,
                    h.fields
                        .iter()
                        .map(|f| format!("{} {}", f.0, f.1))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            };
            if values[i].is_some() {
                return Err(format!(
                    "packet_out metadata id {} given twice",
                    m.metadata_id
                ));
            }
            values[i] = Some(&m.value);
        }
        let mut bits = BitWriter::with_capacity(h.bytes() + p.payload.len());
        for (f, v) in h.fields.iter().zip(values) {
            let w = match v {
                Some(v) => bytestring::to_width(v, f.2)
                    .map_err(|e| format!("packet_out metadata {} ({}): {e}", f.0, f.1))?,
                None => vec![0; bytestring::width_bytes(f.2)],
            };
            bits.push(&w, f.2);
        }
        let mut out = bits.finish();
        out.extend_from_slice(&p.payload);
        Ok(out)
    }

    /// The PacketIn of a frame the pipeline sent to the CPU port; None when the
    /// frame is shorter than the packet_in header.
    pub fn packet_in(&self, frame: &[u8]) -> Option<PacketIn> {
        let Some(h) = &self.packet_in else {
            return Some(PacketIn {
                payload: frame.to_vec(),
                metadata: vec![],
            });
        };
        let n = h.bytes();
        if frame.len() < n {
            return None;
        }
        let mut off = 0u32;
        let metadata = h
            .fields
            .iter()
            .map(|f| {
                let v = read_bits(&frame[..n], off, f.2);
                off += f.2;
                PacketMetadata {
                    metadata_id: f.0,
                    value: bytestring::canonical(&v),
                }
            })
            .collect();
        Some(PacketIn {
            payload: frame[n..].to_vec(),
            metadata,
        })
    }
}

/// Packs bit fields big-endian, MSB first.
struct BitWriter {
    out: Vec<u8>,
    bit: usize,
}

impl BitWriter {
    fn with_capacity(n: usize) -> BitWriter {
        BitWriter {
            out: Vec::with_capacity(n),
            bit: 0,
        }
    }

    /// Appends the low `width` bits of the big-endian `value` (padded to whole bytes).
    fn push(&mut self, value: &[u8], width: u32) {
        let total = value.len() * 8;
        for i in 0..width as usize {
            let src = total - width as usize + i;
            let b = (value[src / 8] >> (7 - src % 8)) & 1;
            if self.bit.is_multiple_of(8) {
                self.out.push(0);
            }
            if b == 1 {
                let last = self.out.len() - 1;
                self.out[last] |= 1 << (7 - self.bit % 8);
            }
            self.bit += 1;
        }
    }

    fn finish(self) -> Vec<u8> {
        self.out
    }
}

/// `width` bits of `data` starting at bit `off` (MSB first), as big-endian bytes.
fn read_bits(data: &[u8], off: u32, width: u32) -> Vec<u8> {
    let n = bytestring::width_bytes(width);
    let mut out = vec![0u8; n];
    let pad = n * 8 - width as usize;
    for i in 0..width as usize {
        let src = off as usize + i;
        let b = (data[src / 8] >> (7 - src % 8)) & 1;
        let dst = pad + i;
        out[dst / 8] |= b << (7 - dst % 8);
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn io() -> PacketIo {
        let h = |name: &str, f0: &str| ControllerHeader {
            name: name.into(),
            fields: vec![(1, f0.into(), 9), (2, "_pad".into(), 7)],
        };
        PacketIo {
            packet_in: Some(h("packet_in", "ingress_port")),
            packet_out: Some(h("packet_out", "egress_port")),
        }
    }

    #[test]
    fn packet_out_header_is_packed_msb_first() {
        let p = PacketOut {
            payload: vec![0xaa, 0xbb],
            metadata: vec![PacketMetadata {
                metadata_id: 1,
                value: vec![1, 0xff],
            }],
        };
        // 511 in 9 bits, then 7 zero bits: 1111_1111 1000_0000
        assert_eq!(
            io().packet_out_frame(&p).unwrap(),
            vec![0xff, 0x80, 0xaa, 0xbb]
        );
        let p3 = PacketOut {
            payload: vec![],
            metadata: vec![PacketMetadata {
                metadata_id: 1,
                value: vec![3],
            }],
        };
        assert_eq!(io().packet_out_frame(&p3).unwrap(), vec![0x01, 0x80]);
        let bad = PacketOut {
            payload: vec![],
            metadata: vec![PacketMetadata {
                metadata_id: 1,
                value: vec![2, 0],
            }],
        };
        assert!(io().packet_out_frame(&bad).is_err());
        let unknown = PacketOut {
            payload: vec![],
            metadata: vec![PacketMetadata {
                metadata_id: 9,
                value: vec![0],
            }],
        };
        assert!(io().packet_out_frame(&unknown).is_err());
    }

    #[test]
    fn packet_in_header_is_stripped() {
        let pi = io().packet_in(&[0x01, 0x80, 1, 2, 3]).unwrap();
        assert_eq!(pi.payload, vec![1, 2, 3]);
        assert_eq!(pi.metadata[0].value, vec![3]);
        assert_eq!(pi.metadata[1].value, vec![0]);
        assert!(io().packet_in(&[0x01]).is_none());
    }

    /// Found by p4jet-fuzz p4rt: a pipeline whose P4Info gave a packet_out field
    /// `bitwidth: 2147483647` was accepted, and every PacketOut then built a 256 MiB
    /// header bit by bit.
    #[test]
    fn absurd_controller_header_widths_are_refused() {
        use crate::proto::p4::config::v1::{Preamble, controller_packet_metadata::Metadata};
        let info = |w: i32| P4Info {
            controller_packet_metadata: vec![ControllerPacketMetadata {
                preamble: Some(Preamble {
                    id: 1,
                    name: "packet_out".into(),
                    ..Default::default()
                }),
                metadata: vec![
                    Metadata {
                        id: 1,
                        name: "egress_port".into(),
                        bitwidth: w,
                        ..Default::default()
                    },
                    Metadata {
                        id: 2,
                        name: "_pad".into(),
                        bitwidth: 7,
                        ..Default::default()
                    },
                ],
            }],
            ..Default::default()
        };
        assert_eq!(
            PacketIo::from_p4info(&info(9))
                .unwrap()
                .packet_out
                .unwrap()
                .bytes(),
            2
        );
        for w in [i32::MAX, 0, -1, 32768] {
            let e = PacketIo::from_p4info(&info(w)).unwrap_err();
            assert!(e.contains("packet_out"), "{w}: {e}");
        }
    }
}
