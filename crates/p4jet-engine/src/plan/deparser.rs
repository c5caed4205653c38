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
    /// (PHV offset, bytes) when every header has a fixed length and each starts where
    /// the one before it in deparser order ends (Ethernet then IPv4): when the valid
    /// headers' lengths add up to it (all of them valid), the deparser emits that run.
    pub contiguous: Option<(u32, u32)>,
    /// (header id, length) per header when every header has a fixed length: the
    /// emitted length is a sum without branches.
    pub fixed: Option<Box<[(u32, u32)]>>,
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
        let mut contiguous = headers.first().map(|&(_, off, _)| (off, 0u32));
        for &(_, off, fixed) in &headers {
            contiguous = match (contiguous, fixed) {
                (Some((start, len)), Some(n)) if start + len == off => Some((start, len + n)),
                _ => None,
            };
        }
        let fixed = headers
            .iter()
            .map(|&(h, _, n)| n.map(|n| (h, n)))
            .collect::<Option<Box<[(u32, u32)]>>>();
        Deparser {
            fixed,
            headers,
            has_update: general || p.checksums.iter().any(|c| c.update),
            contiguous: contiguous.filter(|&(_, len)| len > 0),
        }
    }
}
