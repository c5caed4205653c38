//! P4Runtime bytestrings: big-endian unsigned values of a known bit width.
//!
//! The specification ("Bytestrings") lets a client send a value in any length
//! that holds it, with or without leading zero bytes, as long as no bit beyond the
//! width is set; an empty string is invalid. A server answers in the canonical
//! form: no leading zero bytes, and the value 0 as one zero byte.

/// Bytes of a value of `bitwidth` bits.
pub fn width_bytes(bitwidth: u32) -> usize {
    (bitwidth as usize).div_ceil(8)
}

/// Checks that `value` fits `bitwidth` bits and returns it padded to exactly
/// `ceil(bitwidth / 8)` bytes.
pub fn to_width(value: &[u8], bitwidth: u32) -> Result<Vec<u8>, String> {
    if value.is_empty() {
        return Err("empty bytestring (0 is encoded as one zero byte)".into());
    }
    let first = value.iter().position(|b| *b != 0).unwrap_or(value.len());
    let sig = &value[first..];
    let n = width_bytes(bitwidth);
    let top_bits = bitwidth % 8;
    let fits =
        sig.len() < n || (sig.len() == n && (top_bits == 0 || u32::from(sig[0]) >> top_bits == 0));
    if !fits {
        return Err(format!(
            "bytestring 0x{} does not fit in {bitwidth} bits",
            hex(value)
        ));
    }
    let mut out = vec![0u8; n - sig.len()];
    out.extend_from_slice(sig);
    Ok(out)
}

/// The canonical form of a value: leading zero bytes removed, 0 as `[0]`.
pub fn canonical(value: &[u8]) -> Vec<u8> {
    let first = value.iter().position(|b| *b != 0);
    match first {
        Some(i) => value[i..].to_vec(),
        None => vec![0],
    }
}

/// The value as an unsigned integer, if it fits 128 bits.
pub fn to_u128(value: &[u8]) -> Option<u128> {
    let c = canonical(value);
    if c.len() > 16 {
        return None;
    }
    Some(c.iter().fold(0u128, |a, b| (a << 8) | u128::from(*b)))
}

/// `v` as a canonical bytestring.
pub fn from_u128(v: u128) -> Vec<u8> {
    canonical(&v.to_be_bytes())
}

/// Lower-case hex of bytes.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn widths_and_canonical_forms() {
        assert_eq!(to_width(&[1], 9).unwrap(), vec![0, 1]);
        assert_eq!(to_width(&[0, 0, 1, 0xff], 9).unwrap(), vec![1, 0xff]);
        assert!(to_width(&[2, 0], 9).is_err());
        assert!(to_width(&[], 9).is_err());
        assert_eq!(to_width(&[0xff; 6], 48).unwrap(), vec![0xff; 6]);
        assert!(to_width(&[1, 0, 0, 0, 0, 0, 0], 48).is_err());
        assert_eq!(to_width(&[0], 1).unwrap(), vec![0]);
        assert!(to_width(&[2], 1).is_err());
        assert_eq!(canonical(&[0, 0, 5]), vec![5]);
        assert_eq!(canonical(&[0, 0]), vec![0]);
        assert_eq!(to_u128(&[1, 0]), Some(256));
        assert_eq!(from_u128(0), vec![0]);
        assert_eq!(from_u128(511), vec![1, 0xff]);
    }
}
