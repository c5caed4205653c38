//! Value literals and match keys as simple_switch_CLI parses them.

use std::fmt::Write as _;
use std::net::Ipv6Addr;

use super::CliErrorKind;
use crate::py::{self, PyInt};
use p4jet_runtime::schema::{Action, MatchKind, Table};
use p4jet_thrift::types::BmMatchParam;

/// Encodes `v` big-endian in `num` bytes like runtime_CLI's `int_to_bytes`:
/// negative values encode as zeros (its loop only runs while the value is
/// positive), and a value needing more than `num` bytes is "too large".
pub(crate) fn int_to_bytes(v: &PyInt, num: usize) -> Result<Vec<u8>, String> {
    if v.neg || v.is_zero() {
        return Ok(vec![0; num]);
    }
    if v.mag.len() > num {
        return Err("Parameter is too large".to_string());
    }
    let mut out = vec![0; num - v.mag.len()];
    out.extend_from_slice(&v.mag);
    Ok(out)
}

fn ipv4_to_bytes(s: &str) -> Result<Vec<u8>, String> {
    let bad = || "Invalid IPv4 address".to_string();
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return Err(bad());
    }
    parts
        .iter()
        .map(|p| {
            py::parse_int(p, 10)
                .and_then(|v| v.to_i64())
                .and_then(|v| u8::try_from(v).ok())
                .ok_or_else(bad)
        })
        .collect()
}

fn mac_to_bytes(s: &str) -> Result<Vec<u8>, String> {
    let bad = || "Invalid MAC address".to_string();
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        return Err(bad());
    }
    parts
        .iter()
        .map(|p| {
            py::parse_int(p, 16)
                .and_then(|v| v.to_i64())
                .and_then(|v| u8::try_from(v).ok())
                .ok_or_else(bad)
        })
        .collect()
}

fn ipv6_to_bytes(s: &str) -> Result<Vec<u8>, String> {
    // Python's ipaddress accepts (and ignores for packing) a "%scope" suffix.
    let addr = match s.split_once('%') {
        Some((a, scope)) if !scope.is_empty() => a,
        Some(_) => return Err("Invalid IPv6 address".to_string()),
        None => s,
    };
    addr.parse::<Ipv6Addr>()
        .map(|a| a.octets().to_vec())
        .map_err(|_| "Invalid IPv6 address".to_string())
}

/// Encodes one value of a field or parameter of `bitwidth` bits, as
/// simple_switch_CLI does: dotted IPv4 for width 32, MAC for 48, IPv6 for
/// 128 (each only when the text contains `.` or `:`), otherwise Python
/// `int(x, 0)` (decimal, `0x`, `0o`, `0b`, `_` separators; a negative value
/// encodes as zeros), big-endian in `ceil(bitwidth / 8)` bytes. The error is
/// the message simple_switch_CLI prints after "Error while parsing X - ".
pub fn parse_value(input: &str, bitwidth: u32) -> Result<Vec<u8>, String> {
    match parse_value_fast(input, bitwidth) {
        Some(v) => Ok(v),
        None => parse_value_general(input, bitwidth),
    }
}

/// [`parse_value`] for every input.
fn parse_value_general(input: &str, bitwidth: u32) -> Result<Vec<u8>, String> {
    match bitwidth {
        32 if input.contains('.') => return ipv4_to_bytes(input),
        48 if input.contains(':') => return mac_to_bytes(input),
        128 if input.contains(':') => return ipv6_to_bytes(input),
        _ => {}
    }
    let Some(v) = py::parse_int0(input) else {
        return Err(
            "Invalid input, could not cast to integer, try in hex with 0x prefix".to_string(),
        );
    };
    int_to_bytes(&v, bitwidth.div_ceil(8) as usize)
}

/// The common spellings of [`parse_value`] without its general machinery
/// (bulk loads are mostly MAC addresses and small decimal numbers): a MAC
/// address of six 1-2 digit hex groups for width 48, a decimal number
/// without sign, separator or leading zero that fits the width's bytes
/// otherwise. `None` for anything else, which [`parse_value`] handles the
/// general way (the results are the same).
fn parse_value_fast(input: &str, bitwidth: u32) -> Option<Vec<u8>> {
    let b = input.as_bytes();
    if bitwidth == 48 && b.contains(&b':') {
        let mut out = Vec::with_capacity(6);
        for part in input.split(':') {
            let p = part.as_bytes();
            if p.is_empty() || p.len() > 2 || out.len() == 6 {
                return None;
            }
            let mut v = 0u8;
            for &c in p {
                v = (v << 4) | (char::from(c).to_digit(16)? as u8);
            }
            out.push(v);
        }
        return (out.len() == 6).then_some(out);
    }
    let nbytes = bitwidth.div_ceil(8) as usize;
    if b.is_empty() || b.len() > 19 || b[0] == b'0' || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = b.iter().fold(0u64, |v, &c| v * 10 + u64::from(c - b'0'));
    let be = v.to_be_bytes();
    let sig = 8 - (v.leading_zeros() / 8) as usize;
    if sig > nbytes {
        return None;
    }
    let mut out = vec![0u8; nbytes];
    out[nbytes - sig..].copy_from_slice(&be[8 - sig..]);
    Some(out)
}

/// Encodes the action parameters (the caller has checked their number).
pub(crate) fn parse_runtime_data(
    action: &Action,
    params: &[&str],
) -> Result<Vec<Vec<u8>>, CliErrorKind> {
    params
        .iter()
        .zip(&action.params)
        .map(|(p, param)| {
            parse_value(p, param.width)
                .map_err(|e| CliErrorKind::RuntimeData(format!("Error while parsing {p} - {e}")))
        })
        .collect()
}

/// Parses the match key fields of `table` (the caller has checked their number).
pub(crate) fn parse_match_key(
    table: &Table,
    fields: &[&str],
) -> Result<Vec<BmMatchParam>, CliErrorKind> {
    let value = |field: &str, bw: u32| {
        parse_value(field, bw)
            .map_err(|e| CliErrorKind::MatchKey(format!("Error while parsing {field} - {e}")))
    };
    let mut params = Vec::with_capacity(fields.len());
    for (field, key) in fields.iter().zip(&table.keys) {
        let bw = key.width;
        let param = match key.kind {
            MatchKind::Exact => BmMatchParam::Exact {
                key: value(field, bw)?,
            },
            MatchKind::Lpm => {
                let parts: Vec<&str> = field.split('/').collect();
                let [prefix, length] = parts[..] else {
                    return Err(CliErrorKind::MatchKey(format!(
                        "Invalid LPM value {field}, use '/' to separate prefix and length"
                    )));
                };
                let key = value(prefix, bw)?;
                let Some(prefix_length) = py::int10_i32(length) else {
                    return Err(CliErrorKind::MatchKey(format!(
                        "Error while parsing {field} - Invalid prefix length {length}"
                    )));
                };
                BmMatchParam::Lpm { key, prefix_length }
            }
            MatchKind::Ternary | MatchKind::Optional => {
                let parts: Vec<&str> = field.split("&&&").collect();
                let [k, m] = parts[..] else {
                    return Err(CliErrorKind::MatchKey(format!(
                        "Invalid ternary value {field}, use '&&&' to separate key and mask"
                    )));
                };
                let key = value(k, bw)?;
                let mask = value(m, bw)?;
                if key.len() != mask.len() {
                    return Err(CliErrorKind::MatchKey(format!(
                        "Key and mask have different lengths in expression {field}"
                    )));
                }
                BmMatchParam::Ternary { key, mask }
            }
            MatchKind::Valid => {
                let Some(v) = py::parse_int(field, 10) else {
                    return Err(CliErrorKind::MatchKey(format!(
                        "Error while parsing {field} - Invalid valid key, use 0 or 1"
                    )));
                };
                BmMatchParam::Valid { key: !v.is_zero() }
            }
            MatchKind::Range => {
                let parts: Vec<&str> = field.split("->").collect();
                let [s, e] = parts[..] else {
                    return Err(CliErrorKind::MatchKey(format!(
                        "Invalid range value {field}, use '->' to separate range start and range end"
                    )));
                };
                let start = value(s, bw)?;
                let end = value(e, bw)?;
                if start.len() != end.len() {
                    return Err(CliErrorKind::MatchKey(format!(
                        "start and end have different lengths in expression {field}"
                    )));
                }
                if start > end {
                    // (sic) the message simple_switch_CLI prints.
                    return Err(CliErrorKind::MatchKey(format!(
                        "start is less than end in expression {field}"
                    )));
                }
                BmMatchParam::Range { start, end }
            }
        };
        params.push(param);
    }
    Ok(params)
}

/// Appends runtime_CLI's `BmMatchParam.to_str` of `p` to `out` (used when
/// echoing `table_add`).
pub(crate) fn push_match_param(out: &mut String, p: &BmMatchParam) {
    out.push_str(p.param_type().name());
    out.push('-');
    match p {
        BmMatchParam::Exact { key } => py::push_printable_bytes(out, key),
        BmMatchParam::Lpm { key, prefix_length } => {
            py::push_printable_bytes(out, key);
            let _ = write!(out, "/{prefix_length}");
        }
        BmMatchParam::Ternary { key, mask } => {
            py::push_printable_bytes(out, key);
            out.push_str(" &&& ");
            py::push_printable_bytes(out, mask);
        }
        BmMatchParam::Valid { .. } => {}
        BmMatchParam::Range { start, end } => {
            py::push_printable_bytes(out, start);
            out.push_str(" -> ");
            py::push_printable_bytes(out, end);
        }
    }
}

/// The value part of a key field in `table_dump` output.
pub(crate) fn match_param_dump(p: &BmMatchParam) -> String {
    match p {
        BmMatchParam::Exact { key } => py::hexstr(key),
        BmMatchParam::Lpm { key, prefix_length } => {
            format!("{}/{}", py::hexstr(key), prefix_length)
        }
        BmMatchParam::Ternary { key, mask } => {
            format!("{} &&& {}", py::hexstr(key), py::hexstr(mask))
        }
        BmMatchParam::Valid { key } => if *key { "01" } else { "00" }.to_string(),
        BmMatchParam::Range { start, end } => {
            format!("{} -> {}", py::hexstr(start), py::hexstr(end))
        }
    }
}

/// Python `int(x, 0)` for a parser value set value of `bitwidth` bits
/// (runtime_CLI's `parse_pvs_value`; the value is sent in `ceil(bitwidth/8)`
/// bytes, fixing the extra byte Python 3 sends).
pub(crate) fn parse_pvs_value(input: &str, bitwidth: u32) -> Result<Vec<u8>, String> {
    let Some(v) = py::parse_int0(input) else {
        return Err(
            "Invalid input, could not cast to integer, try in hex with 0x prefix".to_string(),
        );
    };
    if !v.neg && v.bit_len() > bitwidth as usize {
        return Err(format!(
            "Input is too large, it should fit within {bitwidth} bits"
        ));
    }
    int_to_bytes(&v, bitwidth.div_ceil(8) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_path_agrees_with_the_general_parser() {
        let inputs = [
            "0",
            "00",
            "1",
            "3",
            "7",
            "255",
            "256",
            "511",
            "512",
            "65535",
            "65536",
            "010",
            "1_0",
            "+1",
            "-1",
            " 1",
            "0x1f",
            "18446744073709551615",
            "18446744073709551616",
            "9999999999999999999",
            "99999999999999999999",
            "4294967295",
            "4294967296",
            "281474976710655",
            "281474976710656",
            "18:64:d3:30:18:61",
            "C8:DA:B0:F4:D1:25",
            "1:2:3:4:5:6",
            "01:02:03:04:05:06",
            "1:2:3:4:5",
            "1:2:3:4:5:6:7",
            "1::3:4:5:6",
            "100:2:3:4:5:6",
            "g:2:3:4:5:6",
            "0x1:2:3:4:5:6",
            "1:2:3:4:5:-6",
            "10.0.0.1",
            "::1",
            "",
            "a",
            "1a",
        ];
        for w in [1, 7, 8, 9, 16, 24, 32, 48, 64, 128] {
            for i in inputs {
                let general = parse_value_general(i, w);
                if let Some(fast) = parse_value_fast(i, w) {
                    assert_eq!(Ok(fast), general, "{i:?} width {w}");
                }
                assert_eq!(parse_value(i, w), general, "{i:?} width {w}");
            }
        }
        assert!(parse_value_fast("18:64:d3:30:18:61", 48).is_some());
        assert!(parse_value_fast("300", 9).is_some());
    }

    #[test]
    fn values_by_width() {
        assert_eq!(parse_value("10.0.0.1", 32).unwrap(), vec![10, 0, 0, 1]);
        assert_eq!(
            parse_value("10.0.0", 32).unwrap_err(),
            "Invalid IPv4 address"
        );
        assert_eq!(
            parse_value("10.0.0.256", 32).unwrap_err(),
            "Invalid IPv4 address"
        );
        assert_eq!(parse_value("0x0a000001", 32).unwrap(), vec![10, 0, 0, 1]);
        assert_eq!(
            parse_value("10.0.0.1", 16).unwrap_err(),
            "Invalid input, could not cast to integer, try in hex with 0x prefix"
        );
        assert_eq!(
            parse_value("00:11:22:33:44:55", 48).unwrap(),
            vec![0, 0x11, 0x22, 0x33, 0x44, 0x55]
        );
        assert_eq!(
            parse_value("0:1:2:3:4:ff", 48).unwrap(),
            vec![0, 1, 2, 3, 4, 255]
        );
        assert_eq!(
            parse_value("00:11:22:33:44", 48).unwrap_err(),
            "Invalid MAC address"
        );
        assert_eq!(
            parse_value("00:11:22:33:44:1ff", 48).unwrap_err(),
            "Invalid MAC address"
        );
        assert_eq!(parse_value("::1", 128).unwrap()[15], 1);
        assert_eq!(
            parse_value("2001:db8::", 128).unwrap(),
            vec![0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(
            parse_value("::ffff:1.2.3.4", 128).unwrap()[10..],
            [0xff, 0xff, 1, 2, 3, 4]
        );
        assert_eq!(parse_value("fe80::1%eth0", 128).unwrap()[0], 0xfe);
        assert_eq!(
            parse_value("1:::2", 128).unwrap_err(),
            "Invalid IPv6 address"
        );
        assert_eq!(parse_value("0x1ff", 9).unwrap(), vec![1, 0xff]);
        assert_eq!(
            parse_value("0x10000", 9).unwrap_err(),
            "Parameter is too large"
        );
        assert_eq!(parse_value("511", 9).unwrap(), vec![1, 0xff]);
        assert_eq!(parse_value("0b101", 3).unwrap(), vec![5]);
        assert_eq!(parse_value("0o17", 8).unwrap(), vec![15]);
        assert_eq!(
            parse_value("010", 8).unwrap_err(),
            "Invalid input, could not cast to integer, try in hex with 0x prefix"
        );
        assert_eq!(parse_value("-1", 16).unwrap(), vec![0, 0]);
        assert!(parse_value("", 16).is_err());
        assert_eq!(parse_value("0", 72).unwrap(), vec![0; 9]);
    }

    #[test]
    fn pvs_values() {
        assert_eq!(parse_pvs_value("0x88B6", 16).unwrap(), vec![0x88, 0xb6]);
        assert_eq!(
            parse_pvs_value("0x1ff", 8).unwrap_err(),
            "Input is too large, it should fit within 8 bits"
        );
        assert_eq!(parse_pvs_value("0x1ff", 9).unwrap(), vec![1, 0xff]);
    }
}
