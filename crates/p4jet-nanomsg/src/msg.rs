//! bmv2's notification messages, as simple_switch publishes them and controllers
//! (p4-utils, the learning-switch examples, `nnpy` scripts) unpack them: a 32-byte
//! packed header in the host's byte order (little-endian on the machines bmv2 runs on)
//! whose first four bytes name the kind, then the payload.
//!
//! | kind | header after the 4-byte topic | payload |
//! |---|---|---|
//! | `LEA|` learning | switch id u64, context id u32, learn list id i32, buffer id u64, sample count u32 | the samples back to back, each the learn list's fields in order, each big-endian and padded to whole bytes |
//! | `AGE|` ageing | switch id u64, context id u32, buffer id u64, table id i32, entry count u32 | the idle entries' handles, u32 each |
//! | `PRT|` port status | switch id u64, status count u32, 16 zero bytes | per port: port i32, status i32 (1 up, 0 down) |
//!
//! A controller acknowledges a learning message with `bm_learning_ack_buffer(cxt,
//! list, buffer)` over Thrift, which lets the same samples be sent again later.

/// Size of every header.
pub const HEADER: usize = 32;

/// A learning notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Learn {
    /// Device id (`--device-id`).
    pub switch_id: u64,
    /// Context id (0 for simple_switch).
    pub cxt_id: u32,
    /// Learn list id.
    pub list_id: i32,
    /// Buffer id, for the acknowledgement.
    pub buffer_id: u64,
    /// The samples, each the learn list's fields back to back.
    pub samples: Vec<Vec<u8>>,
}

/// An ageing notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ageing {
    /// Device id.
    pub switch_id: u64,
    /// Context id.
    pub cxt_id: u32,
    /// Buffer id.
    pub buffer_id: u64,
    /// Table id (the JSON's).
    pub table_id: i32,
    /// Handles of the entries idle longer than their timeout.
    pub handles: Vec<u32>,
}

/// A port status notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortStatus {
    /// Device id.
    pub switch_id: u64,
    /// (port, up) pairs.
    pub statuses: Vec<(i32, bool)>,
}

/// A decoded notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notification {
    /// `LEA|`
    Learn(Learn),
    /// `AGE|`
    Ageing(Ageing),
    /// `PRT|`
    Port(PortStatus),
}

impl Learn {
    /// The message bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut m = Vec::with_capacity(HEADER + self.samples.iter().map(Vec::len).sum::<usize>());
        m.extend_from_slice(b"LEA|");
        m.extend_from_slice(&self.switch_id.to_le_bytes());
        m.extend_from_slice(&self.cxt_id.to_le_bytes());
        m.extend_from_slice(&self.list_id.to_le_bytes());
        m.extend_from_slice(&self.buffer_id.to_le_bytes());
        m.extend_from_slice(&(self.samples.len() as u32).to_le_bytes());
        for s in &self.samples {
            m.extend_from_slice(s);
        }
        m
    }
}

impl Ageing {
    /// The message bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut m = Vec::with_capacity(HEADER + 4 * self.handles.len());
        m.extend_from_slice(b"AGE|");
        m.extend_from_slice(&self.switch_id.to_le_bytes());
        m.extend_from_slice(&self.cxt_id.to_le_bytes());
        m.extend_from_slice(&self.buffer_id.to_le_bytes());
        m.extend_from_slice(&self.table_id.to_le_bytes());
        m.extend_from_slice(&(self.handles.len() as u32).to_le_bytes());
        for h in &self.handles {
            m.extend_from_slice(&h.to_le_bytes());
        }
        m
    }
}

impl PortStatus {
    /// The message bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut m = Vec::with_capacity(HEADER + 8 * self.statuses.len());
        m.extend_from_slice(b"PRT|");
        m.extend_from_slice(&self.switch_id.to_le_bytes());
        m.extend_from_slice(&(self.statuses.len() as u32).to_le_bytes());
        m.extend_from_slice(&[0u8; 16]);
        for (p, up) in &self.statuses {
            m.extend_from_slice(&p.to_le_bytes());
            m.extend_from_slice(&i32::from(*up).to_le_bytes());
        }
        m
    }
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(a)
}

impl Notification {
    /// Decodes a message; learning samples are cut `sample_len` bytes each (the learn
    /// list's size, which the message does not carry).
    pub fn decode(m: &[u8], sample_len: impl Fn(i32) -> usize) -> Result<Notification, String> {
        if m.len() < HEADER {
            return Err(format!("{} bytes: shorter than a header", m.len()));
        }
        let payload = &m[HEADER..];
        match &m[..4] {
            b"LEA|" => {
                let list_id = u32_at(m, 16) as i32;
                let n = u32_at(m, 28) as usize;
                let len = sample_len(list_id);
                if len == 0 || payload.len() != n * len {
                    return Err(format!(
                        "learning message with {n} samples of {len} bytes and {} bytes of payload",
                        payload.len()
                    ));
                }
                Ok(Notification::Learn(Learn {
                    switch_id: u64_at(m, 4),
                    cxt_id: u32_at(m, 12),
                    list_id,
                    buffer_id: u64_at(m, 20),
                    samples: payload.chunks(len).map(<[u8]>::to_vec).collect(),
                }))
            }
            b"AGE|" => {
                let n = u32_at(m, 28) as usize;
                if payload.len() != 4 * n {
                    return Err(format!(
                        "ageing message with {n} handles and {} bytes",
                        payload.len()
                    ));
                }
                Ok(Notification::Ageing(Ageing {
                    switch_id: u64_at(m, 4),
                    cxt_id: u32_at(m, 12),
                    buffer_id: u64_at(m, 16),
                    table_id: u32_at(m, 24) as i32,
                    handles: (0..n).map(|i| u32_at(payload, 4 * i)).collect(),
                }))
            }
            b"PRT|" => {
                let n = u32_at(m, 12) as usize;
                if payload.len() != 8 * n {
                    return Err(format!(
                        "port message with {n} statuses and {} bytes",
                        payload.len()
                    ));
                }
                Ok(Notification::Port(PortStatus {
                    switch_id: u64_at(m, 4),
                    statuses: (0..n)
                        .map(|i| {
                            (
                                u32_at(payload, 8 * i) as i32,
                                u32_at(payload, 8 * i + 4) != 0,
                            )
                        })
                        .collect(),
                }))
            }
            t => Err(format!(
                "unknown notification topic {:?}",
                String::from_utf8_lossy(t)
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learning_message_as_bmv2_sends_it() {
        // captured from bmv2 simple_switch 1.15.5 (device 7, l2_learning, two samples)
        let bmv2 = "4c45417c070000000000000000000000010000000000000000000000020000000000000000aa00000000000000bb0000";
        let m = Learn {
            switch_id: 7,
            cxt_id: 0,
            list_id: 1,
            buffer_id: 0,
            samples: vec![
                vec![0, 0, 0, 0, 0, 0xaa, 0, 0],
                vec![0, 0, 0, 0, 0, 0xbb, 0, 0],
            ],
        };
        let hex: String = m.encode().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, bmv2);
        assert_eq!(
            Notification::decode(&m.encode(), |_| 8).unwrap(),
            Notification::Learn(m)
        );
    }

    #[test]
    fn ageing_and_port_messages_round_trip() {
        let a = Ageing {
            switch_id: 1,
            cxt_id: 0,
            buffer_id: 3,
            table_id: 2,
            handles: vec![0, 5],
        };
        assert_eq!(a.encode().len(), 40);
        assert_eq!(
            Notification::decode(&a.encode(), |_| 0).unwrap(),
            Notification::Ageing(a)
        );
        let p = PortStatus {
            switch_id: 9,
            statuses: vec![(0, true), (3, false)],
        };
        assert_eq!(p.encode().len(), 48);
        assert_eq!(
            Notification::decode(&p.encode(), |_| 0).unwrap(),
            Notification::Port(p)
        );
        assert!(Notification::decode(b"XYZ|", |_| 0).is_err());
    }
}
