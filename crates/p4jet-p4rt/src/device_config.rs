//! The device config of a ForwardingPipelineConfig: the bmv2 JSON.
//!
//! p4runtime-shell, finsy and PTF send the JSON bytes as they are; ONOS and the
//! p4lang tutorials' `p4runtime_lib` wrap them in a `p4.tmp.P4DeviceConfig`
//! (`device_data`). A JSON document starts with `{` (after white space), which
//! cannot start a P4DeviceConfig (field 15, wire type 3), so the two are told
//! apart by their first byte.

use prost::Message;

use crate::proto::p4::tmp::P4DeviceConfig;

/// How the JSON was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrapping {
    /// The JSON bytes as they are.
    Raw,
    /// Inside a `p4.tmp.P4DeviceConfig`.
    P4DeviceConfig,
}

/// The bmv2 JSON text of a device config.
pub fn bmv2_json(device_config: &[u8]) -> Result<(String, Wrapping), String> {
    let first = device_config.iter().find(|b| !b.is_ascii_whitespace());
    let (bytes, wrapping) = match first {
        None => return Err("empty p4_device_config: expected the bmv2 JSON".into()),
        Some(b'{') => (device_config.to_vec(), Wrapping::Raw),
        Some(_) => {
            let dc = P4DeviceConfig::decode(device_config).map_err(|e| {
                format!("p4_device_config is neither bmv2 JSON nor a p4.tmp.P4DeviceConfig: {e}")
            })?;
            if dc.device_data.is_empty() {
                return Err("p4.tmp.P4DeviceConfig has no device_data (the bmv2 JSON)".into());
            }
            (dc.device_data, Wrapping::P4DeviceConfig)
        }
    };
    let text = String::from_utf8(bytes)
        .map_err(|e| format!("the bmv2 JSON in p4_device_config is not UTF-8: {e}"))?;
    Ok((text, wrapping))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn raw_and_wrapped() {
        assert_eq!(
            bmv2_json(b" {\"a\":1}").unwrap(),
            (" {\"a\":1}".into(), Wrapping::Raw)
        );
        let w = P4DeviceConfig {
            reassign: true,
            extras: None,
            device_data: b"{}".to_vec(),
        }
        .encode_to_vec();
        assert_eq!(
            bmv2_json(&w).unwrap(),
            ("{}".into(), Wrapping::P4DeviceConfig)
        );
        assert!(bmv2_json(b"").is_err());
        assert!(bmv2_json(&[0xff, 0xff, 0xff]).is_err());
        let empty = P4DeviceConfig::default().encode_to_vec();
        assert!(bmv2_json(&empty).is_err());
    }
}
