//! Python behaviours that simple_switch_CLI's output and input depend on:
//! `int(s)` / `int(s, 0)` / `int(s, 16)` parsing, `float(s)`, `repr(float)`,
//! `hex(int)` and `str.format` alignment.

/// An arbitrary-precision integer as Python's `int()` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PyInt {
    /// Sign (never set for zero).
    pub neg: bool,
    /// Magnitude, big-endian, without leading zero bytes (empty for zero).
    pub mag: Vec<u8>,
}

impl PyInt {
    /// The value as an `i128`, if it fits.
    pub fn to_i128(&self) -> Option<i128> {
        if self.mag.len() > 16 {
            return None;
        }
        let mut v: u128 = 0;
        for &b in &self.mag {
            v = (v << 8) | u128::from(b);
        }
        if self.neg {
            if v <= i128::MAX as u128 + 1 {
                Some((v as i128).wrapping_neg())
            } else {
                None
            }
        } else {
            i128::try_from(v).ok()
        }
    }

    /// The value as an `i64`, if it fits.
    pub fn to_i64(&self) -> Option<i64> {
        self.to_i128().and_then(|v| i64::try_from(v).ok())
    }

    /// The value as an `i32`, if it fits.
    pub fn to_i32(&self) -> Option<i32> {
        self.to_i128().and_then(|v| i32::try_from(v).ok())
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.mag.is_empty()
    }

    /// Number of significant bits of the magnitude.
    pub fn bit_len(&self) -> usize {
        match self.mag.first() {
            None => 0,
            Some(&b) => (self.mag.len() - 1) * 8 + (8 - b.leading_zeros() as usize),
        }
    }
}

/// Parses like Python's `int(s, base)`; `base` 0 means "from the prefix"
/// (and then a decimal number may not have leading zeros). Supports bases
/// 0, 2, 8, 10 and 16, signs, `0x`/`0o`/`0b` prefixes and `_` separators.
pub(crate) fn parse_int(s: &str, base: u32) -> Option<PyInt> {
    let s = s.trim();
    let (neg, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = s.to_ascii_lowercase();
    let prefix_base = if lower.starts_with("0x") {
        Some(16)
    } else if lower.starts_with("0o") {
        Some(8)
    } else if lower.starts_with("0b") {
        Some(2)
    } else {
        None
    };
    let (base, digits, had_prefix) = match (base, prefix_base) {
        (0, Some(b)) => (b, &s[2..], true),
        (0, None) => (10, s, false),
        (b, Some(pb)) if b == pb => (b, &s[2..], true),
        (b, _) => (b, s, false),
    };
    if !matches!(base, 2 | 8 | 10 | 16) {
        return None;
    }
    // Underscores: only between digits, or right after a base prefix.
    let bytes = digits.as_bytes();
    let mut clean = Vec::with_capacity(bytes.len());
    for (i, &c) in bytes.iter().enumerate() {
        if c == b'_' {
            let prev_ok = if i == 0 {
                had_prefix
            } else {
                bytes[i - 1] != b'_'
            };
            let next_ok = i + 1 < bytes.len() && bytes[i + 1] != b'_';
            if !prev_ok || !next_ok {
                return None;
            }
            continue;
        }
        let d = (c as char).to_digit(base)?;
        clean.push(d as u8);
    }
    if clean.is_empty() {
        return None;
    }
    // Accumulate into a little-endian byte vector.
    let mut le: Vec<u8> = Vec::new();
    for d in clean {
        let mut carry = u32::from(d);
        for b in le.iter_mut() {
            let v = u32::from(*b) * base + carry;
            *b = (v & 0xff) as u8;
            carry = v >> 8;
        }
        while carry > 0 {
            le.push((carry & 0xff) as u8);
            carry >>= 8;
        }
    }
    while le.last() == Some(&0) {
        le.pop();
    }
    le.reverse();
    let neg = neg && !le.is_empty();
    Some(PyInt { neg, mag: le })
}

/// Python's `int(s, 0)`: like [`parse_int`] with base 0, which also rejects
/// decimal numbers with leading zeros (`"010"`, but not `"00"`).
pub(crate) fn parse_int0(s: &str) -> Option<PyInt> {
    let t = s.trim();
    let body = t.strip_prefix(['+', '-']).unwrap_or(t);
    let lower = body.to_ascii_lowercase();
    let prefixed = lower.starts_with("0x") || lower.starts_with("0o") || lower.starts_with("0b");
    let v = parse_int(s, 0)?;
    if !prefixed && body.starts_with('0') && !v.is_zero() {
        return None;
    }
    Some(v)
}

/// Python's `int(s)` as an `i64` (None if not an integer or out of range).
pub(crate) fn int10_i64(s: &str) -> Option<i64> {
    parse_int(s, 10).and_then(|v| v.to_i64())
}

/// Python's `int(s)` as an `i32` (None if not an integer or out of range:
/// Thrift could not send it).
pub(crate) fn int10_i32(s: &str) -> Option<i32> {
    parse_int(s, 10).and_then(|v| v.to_i32())
}

/// Python's `float(s)`.
pub(crate) fn parse_float(s: &str) -> Option<f64> {
    let s = s.trim();
    let b = s.as_bytes();
    let mut clean = String::with_capacity(s.len());
    for (i, &c) in b.iter().enumerate() {
        if c == b'_' {
            let prev = i.checked_sub(1).map(|j| b[j]);
            let next = b.get(i + 1).copied();
            if !prev.is_some_and(|p| p.is_ascii_digit())
                || !next.is_some_and(|n| n.is_ascii_digit())
            {
                return None;
            }
            continue;
        }
        clean.push(c as char);
    }
    let lower = clean.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if body.len() + 1 < lower.len() {
        return None; // more than one sign
    }
    if matches!(body, "inf" | "infinity" | "nan") {
        return clean.parse::<f64>().ok().or_else(|| {
            let neg = lower.starts_with('-');
            let v = if body == "nan" {
                f64::NAN
            } else {
                f64::INFINITY
            };
            Some(if neg { -v } else { v })
        });
    }
    if !body
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'+' | b'-'))
    {
        return None;
    }
    clean.parse::<f64>().ok()
}

/// Python's `repr(float)` (the shortest round-trip digits; exponent form
/// when the decimal exponent is < -4 or >= 16).
pub(crate) fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "d.ddde[-]x".
    let e = format!("{:e}", x.abs());
    let (mant, exp) = match e.split_once('e') {
        Some((m, ex)) => (m, ex.parse::<i32>().unwrap_or(0)),
        None => (e.as_str(), 0),
    };
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let sign = if x < 0.0 { "-" } else { "" };
    // Python: decpt = exp + 1; fixed notation iff -4 < decpt <= 16.
    let decpt = exp + 1;
    if decpt > -4 && decpt <= 16 {
        let n = digits.len() as i32;
        let s = if decpt <= 0 {
            format!("0.{}{}", "0".repeat((-decpt) as usize), digits)
        } else if decpt >= n {
            format!("{}{}.0", digits, "0".repeat((decpt - n) as usize))
        } else {
            format!(
                "{}.{}",
                &digits[..decpt as usize],
                &digits[decpt as usize..]
            )
        };
        format!("{sign}{s}")
    } else {
        let m = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits.clone()
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{esign}{:02}", exp.abs())
    }
}

/// Python's `hex(i)`.
pub(crate) fn hex(i: i64) -> String {
    if i < 0 {
        format!("-0x{:x}", i.unsigned_abs())
    } else {
        format!("0x{i:x}")
    }
}

/// `"{:<w}".format(s)`.
pub(crate) fn ljust(s: &str, w: usize) -> String {
    format!("{s:<w$}")
}

/// `"{:^w}".format(s)`: extra padding goes to the right.
pub(crate) fn center(s: &str, w: usize) -> String {
    let len = s.chars().count();
    if len >= w {
        return s.to_string();
    }
    let left = (w - len) / 2;
    let right = w - len - left;
    format!("{}{}{}", " ".repeat(left), s, " ".repeat(right))
}

/// `":".join("{:02x}")` over bytes (runtime_CLI's `printable_byte_str`).
pub(crate) fn printable_bytes(b: &[u8]) -> String {
    let mut s = String::with_capacity(3 * b.len());
    push_printable_bytes(&mut s, b);
    s
}

/// Appends [`printable_bytes`] of `b` to `out`.
pub(crate) fn push_printable_bytes(out: &mut String, b: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (i, x) in b.iter().enumerate() {
        if i > 0 {
            out.push(':');
        }
        out.push(char::from(HEX[usize::from(x >> 4)]));
        out.push(char::from(HEX[usize::from(x & 15)]));
    }
}

/// `"".join("{:02x}")` over bytes (runtime_CLI's `hexstr`).
pub(crate) fn hexstr(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Python's `cmd.Cmd.columnize`: lays out words in as few rows as fit in
/// `width` columns, filling column by column.
pub(crate) fn columnize(list: &[&str], width: usize) -> String {
    let mut out = String::new();
    if list.is_empty() {
        out.push_str("<empty>\n");
        return out;
    }
    let size = list.len();
    if size == 1 {
        out.push_str(list[0]);
        out.push('\n');
        return out;
    }
    let mut layout = None;
    for nrows in 1..size {
        let ncols = size.div_ceil(nrows);
        let mut colwidths = Vec::new();
        let mut totwidth: isize = -2;
        for col in 0..ncols {
            let mut colwidth = 0;
            for row in 0..nrows {
                let i = row + nrows * col;
                if i >= size {
                    break;
                }
                colwidth = colwidth.max(list[i].chars().count());
            }
            colwidths.push(colwidth);
            totwidth += colwidth as isize + 2;
            if totwidth > width as isize {
                break;
            }
        }
        if totwidth <= width as isize {
            layout = Some((nrows, ncols, colwidths));
            break;
        }
    }
    let (nrows, ncols, colwidths) = layout.unwrap_or((size, 1, vec![0]));
    for row in 0..nrows {
        let mut texts: Vec<&str> = (0..ncols)
            .map(|col| list.get(row + nrows * col).copied().unwrap_or(""))
            .collect();
        while texts.last().is_some_and(|t| t.is_empty()) {
            texts.pop();
        }
        let cells: Vec<String> = texts
            .iter()
            .enumerate()
            .map(|(c, t)| ljust(t, colwidths.get(c).copied().unwrap_or(0)))
            .collect();
        out.push_str(&cells.join("  "));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i(s: &str, base: u32) -> Option<i128> {
        parse_int(s, base).and_then(|v| v.to_i128())
    }

    #[test]
    fn python_int() {
        assert_eq!(i("10", 10), Some(10));
        assert_eq!(i("010", 10), Some(10));
        assert_eq!(i("-5", 10), Some(-5));
        assert_eq!(i("+5", 10), Some(5));
        assert_eq!(i("1_000", 10), Some(1000));
        assert_eq!(i("1__0", 10), None);
        assert_eq!(i("_1", 10), None);
        assert_eq!(i("1_", 10), None);
        assert_eq!(i("0x10", 10), None);
        assert_eq!(i("", 10), None);
        assert_eq!(i("-", 10), None);
        assert_eq!(i("0x1F", 0), Some(31));
        assert_eq!(i("0X_1f", 0), Some(31));
        assert_eq!(i("0b101", 0), Some(5));
        assert_eq!(i("0o17", 0), Some(15));
        assert_eq!(i("-0x10", 0), Some(-16));
        assert_eq!(i("1f", 16), Some(31));
        assert_eq!(i("0x1f", 16), Some(31));
        assert_eq!(i("g", 16), None);
        assert_eq!(parse_int0("010"), None);
        assert_eq!(parse_int0("00").map(|v| v.is_zero()), Some(true));
        assert_eq!(parse_int0("0").map(|v| v.is_zero()), Some(true));
        assert_eq!(
            parse_int0("-0"),
            Some(PyInt {
                neg: false,
                mag: vec![]
            })
        );
        assert_eq!(parse_int0("12").and_then(|v| v.to_i64()), Some(12));
        let big = parse_int0("0x0102030405060708090a0b0c0d0e0f1011").unwrap();
        assert_eq!(big.mag, (1..=17).collect::<Vec<u8>>());
        assert_eq!(big.bit_len(), 129);
        assert_eq!(
            parse_int0("340282366920938463463374607431768211456")
                .unwrap()
                .bit_len(),
            129
        );
    }

    #[test]
    fn python_float() {
        assert_eq!(parse_float("0.5"), Some(0.5));
        assert_eq!(parse_float("1e-9"), Some(1e-9));
        assert_eq!(parse_float(".5"), Some(0.5));
        assert_eq!(parse_float("5."), Some(5.0));
        assert_eq!(parse_float("1_0.5"), Some(10.5));
        assert_eq!(parse_float("-inf"), Some(f64::NEG_INFINITY));
        assert!(parse_float("nan").is_some_and(f64::is_nan));
        assert_eq!(parse_float("abc"), None);
        assert_eq!(parse_float(""), None);
        assert_eq!(parse_float("1e"), None);
        assert_eq!(parse_float("0x10"), None);
    }

    #[test]
    fn python_float_repr() {
        assert_eq!(float_repr(1e-9), "1e-09");
        assert_eq!(float_repr(0.0001), "0.0001");
        assert_eq!(float_repr(0.00001), "1e-05");
        assert_eq!(float_repr(0.000002), "2e-06");
        assert_eq!(float_repr(100.0), "100.0");
        assert_eq!(float_repr(0.5), "0.5");
        assert_eq!(float_repr(1.5e-9), "1.5e-09");
        assert_eq!(float_repr(1e16), "1e+16");
        assert_eq!(float_repr(1e15), "1000000000000000.0");
        assert_eq!(float_repr(123.456), "123.456");
        assert_eq!(float_repr(-2.0), "-2.0");
        assert_eq!(float_repr(0.0), "0.0");
        assert_eq!(float_repr(1e22), "1e+22");
        assert_eq!(float_repr(0.1 + 0.2), "0.30000000000000004");
    }

    #[test]
    fn formatting() {
        assert_eq!(hex(0), "0x0");
        assert_eq!(hex(255), "0xff");
        assert_eq!(hex(-1), "-0x1");
        assert_eq!(center("ab", 5), " ab  ");
        assert_eq!(center("port #", 10), "  port #  ");
        assert_eq!(printable_bytes(&[0, 0x1f]), "00:1f");
        assert_eq!(hexstr(&[0, 0x1f]), "001f");
    }

    #[test]
    fn columnize_like_cmd() {
        assert_eq!(columnize(&["a"], 79), "a\n");
        assert_eq!(columnize(&["aa", "b", "c"], 79), "aa  b  c\n");
        assert_eq!(
            columnize(&["aaaa", "bbbb", "cccc"], 10),
            "aaaa  cccc\nbbbb\n"
        );
    }
}
