//! The deparser's plan: emitted lengths and copies decided at load time.

use p4jet_ir::Program;

/// What the deparser emits, decided at load time.
#[derive(Debug, Clone)]
pub struct Deparser {
    /// Per header in deparser order: (header id, PHV offset, fixed length or None for a
    /// varbit header).
    pub headers: Vec<(u32, u32, Option<u32>)>,
    /// Some checksum is updated.
    pub has_update: bool,
    /// Headers emitted with one copy, longest first, two at most: the first `k`
    /// headers in deparser order when they have fixed lengths and each starts in the
    /// PHV where the one before it ends (Ethernet, IPv4, TCP). A run is emitted when
    /// exactly its headers are valid: they are, and the valid headers' lengths add up
    /// to the run's.
    pub runs: Box<[Run]>,
    /// (header id, length) per header when every header has a fixed length: the
    /// emitted length is a sum without branches.
    pub fixed: Option<Box<[(u32, u32)]>>,
}

/// The first `k` headers of the deparser, `len` bytes back to back in the PHV from
/// `off` ([`Deparser::runs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Headers (the first `k` in deparser order).
    pub k: u32,
    /// PHV offset of the first.
    pub off: u32,
    /// Bytes of all.
    pub len: u32,
}

impl Run {
    /// Whether the run is every header of the deparser: then the lengths adding up to
    /// it say all are valid, with no test of their own.
    pub fn is_all(&self, d: &Deparser) -> bool {
        self.k as usize == d.headers.len()
    }
}

impl Deparser {
    /// The plan of `p`'s deparser; `general`: lengths looked up per packet and every
    /// checksum considered, as the general code does.
    pub(crate) fn new(p: &Program, general: bool) -> Deparser {
        let headers: Vec<(u32, u32, Option<u32>)> = p
            .deparser
            .order
            .iter()
            .map(|h| {
                let hi = &p.headers[*h as usize];
                let fixed = (hi.varbit_slot.is_none() && !general).then_some(hi.max_bytes);
                (*h, hi.offset, fixed)
            })
            .collect();
        // the back-to-back prefixes of two headers or more (one header is one copy
        // anyway)
        let mut runs = vec![];
        let mut at = headers.first().map(|&(_, off, _)| (off, 0u32));
        for (i, &(_, off, fixed)) in headers.iter().enumerate() {
            at = match (at, fixed) {
                (Some((start, len)), Some(n)) if start + len == off => Some((start, len + n)),
                _ => None,
            };
            match at {
                Some((off, len)) if i >= 1 && len > 0 => runs.push(Run {
                    k: i as u32 + 1,
                    off,
                    len,
                }),
                Some(_) => {}
                None => break,
            }
        }
        // longest first, and two at most: each run not taken costs a compare per
        // packet (with all headers back to back: the whole deparser, and all but its
        // last header, which a TCP packet of an Ethernet, IPv4, TCP, UDP deparser is)
        runs.reverse();
        runs.truncate(2);
        let fixed = headers
            .iter()
            .map(|&(h, _, n)| n.map(|n| (h, n)))
            .collect::<Option<Box<[(u32, u32)]>>>();
        Deparser {
            fixed,
            headers,
            has_update: general || p.checksums.iter().any(|c| c.update),
            runs: runs.into(),
        }
    }
}
