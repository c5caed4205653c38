//! The `p4jet` service: p4jet's own extensions (not in bmv2; stock clients never
//! call it).

use std::fmt::Write as _;

use p4jet_runtime::bmv2::{Bmv2Code, LearnOperationErrorCode as LC};

use super::{Bmv2, Reply, Rpc, ret};
use crate::codec::{Fields, MethodSpec};
use crate::protocol::Value;

#[allow(missing_docs)]
impl Bmv2<'_> {
    /// The latest learning notifications the switch sent (at most `count`; all it
    /// keeps when `count` <= 0) of the learn list `list_name` (all lists when empty),
    /// one line each, then the samples still waiting to be sent. bmv2 publishes
    /// notifications on a nanomsg socket only; p4jet logs them and keeps the latest
    /// for this call (`digest_dump` in the CLI).
    pub fn p4jet_learning_dump(&mut self, list_name: &str, count: i32) -> Rpc<String> {
        let s = self.schema()?;
        let digest = if list_name.is_empty() {
            None
        } else {
            Some(s.digest_by_name(list_name).ok_or_else(|| {
                Bmv2Code::Learn(LC::INVALID_LIST_ID).error(format!("no learn list `{list_name}`"))
            })?)
        };
        let log = self
            .rt
            .digest_log(digest, usize::try_from(count).unwrap_or(0))?;
        Ok(render_digest_log(&s, &log))
    }

    /// The packet books as JSON: received + copies = sent + dropped (by reason, per
    /// port) + queued, per forwarding thread and summed (`packet_books` in the CLI).
    pub fn p4jet_packet_books(&mut self) -> Rpc<String> {
        self.rt.packet_books()
    }

    /// The forwarding workers as JSON ([`workers_json`]; `workers` in the CLI).
    pub fn p4jet_workers(&mut self) -> Rpc<String> {
        Ok(workers_json(&self.rt.workers()?))
    }

    /// Asks for `count` forwarding workers (`set_workers` in the CLI).
    pub fn p4jet_set_workers(&mut self, count: i32) -> Rpc<()> {
        let n = u32::try_from(count).map_err(|_| {
            Bmv2Code::DevMgr(p4jet_runtime::bmv2::DevMgrErrorCode::ERROR)
                .error(format!("{count} workers"))
        })?;
        self.rt.set_workers(n)
    }

    /// The same as JSON, for p4jet's own client ([`digest_log_json`]).
    pub fn p4jet_digest_log(&mut self, list_name: &str, count: i32) -> Rpc<String> {
        let s = self.schema()?;
        let digest = if list_name.is_empty() {
            None
        } else {
            Some(s.digest_by_name(list_name).ok_or_else(|| {
                Bmv2Code::Learn(LC::INVALID_LIST_ID).error(format!("no learn list `{list_name}`"))
            })?)
        };
        let log = self
            .rt
            .digest_log(digest, usize::try_from(count).unwrap_or(0))?;
        Ok(digest_log_json(&s, &log))
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().fold(String::new(), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A digest log as JSON: `{"sent": [{"list": <json id>, "buffer": n, "timestamp_ns":
/// t, "samples": ["<hex>", ...]}], "waiting": [{"list": <json id>, "sample":
/// "<hex>"}]}`.
pub fn digest_log_json(s: &p4jet_runtime::Schema, log: &p4jet_runtime::DigestLog) -> String {
    let list_id = |d: p4jet_runtime::DigestId| s.digest(d).map_or(-1, |x| x.json_id);
    let sent: Vec<serde_json::Value> = log
        .sent
        .iter()
        .map(|l| {
            serde_json::json!({
                "list": list_id(l.digest),
                "buffer": l.list_id,
                "timestamp_ns": l.timestamp_ns,
                "samples": l.samples.iter().map(|x| hex(x)).collect::<Vec<_>>(),
            })
        })
        .collect();
    let waiting: Vec<serde_json::Value> = log
        .waiting
        .iter()
        .map(|(d, x)| serde_json::json!({"list": list_id(*d), "sample": hex(x)}))
        .collect();
    serde_json::json!({"sent": sent, "waiting": waiting}).to_string()
}

/// The digest log of [`digest_log_json`]'s text (None when it is not).
pub fn digest_log_from_json(
    s: &p4jet_runtime::Schema,
    text: &str,
) -> Option<p4jet_runtime::DigestLog> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let digest = |x: &serde_json::Value| s.digest_by_json_id(x.get("list")?.as_i64()?);
    let mut log = p4jet_runtime::DigestLog::default();
    for l in v.get("sent")?.as_array()? {
        log.sent.push(p4jet_runtime::DigestList {
            digest: digest(l)?,
            list_id: l.get("buffer")?.as_u64()?,
            timestamp_ns: l.get("timestamp_ns")?.as_u64()?,
            samples: l
                .get("samples")?
                .as_array()?
                .iter()
                .map(|x| unhex(x.as_str()?))
                .collect::<Option<_>>()?,
        });
    }
    for w in v.get("waiting")?.as_array()? {
        log.waiting
            .push((digest(w)?, unhex(w.get("sample")?.as_str()?)?));
    }
    Some(log)
}

/// The workers as JSON: `{"active": n, "requested": n, "max": n, "auto": [min, max]
/// or null, "owners": [worker per shard], "changes": n}`.
pub fn workers_json(w: &p4jet_runtime::Workers) -> String {
    serde_json::json!({
        "active": w.active,
        "requested": w.requested,
        "max": w.max,
        "auto": w.auto.map(|(a, b)| vec![a, b]),
        "owners": w.owners,
        "changes": w.changes,
    })
    .to_string()
}

/// The workers of [`workers_json`]'s text (None when it is not).
pub fn workers_from_json(text: &str) -> Option<p4jet_runtime::Workers> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let u = |k: &str| -> Option<u32> { u32::try_from(v.get(k)?.as_u64()?).ok() };
    let auto = match v.get("auto")? {
        serde_json::Value::Null => None,
        a => {
            let a = a.as_array()?;
            let x = |i: usize| u32::try_from(a.get(i)?.as_u64()?).ok();
            Some((x(0)?, x(1)?))
        }
    };
    Some(p4jet_runtime::Workers {
        active: u("active")?,
        requested: u("requested")?,
        max: u("max")?,
        auto,
        owners: v
            .get("owners")?
            .as_array()?
            .iter()
            .map(|x| u32::try_from(x.as_u64()?).ok())
            .collect::<Option<_>>()?,
        changes: v.get("changes")?.as_u64()?,
    })
}

/// `digest_dump`'s text: one line per list sent, then one per sample waiting.
pub fn render_digest_log(s: &p4jet_runtime::Schema, log: &p4jet_runtime::DigestLog) -> String {
    let mut out = String::new();
    for l in &log.sent {
        match s.digest(l.digest) {
            Some(d) => out.push_str(&d.describe_list(l)),
            None => {
                let _ = write!(out, "digest {} buffer {}", l.digest.0, l.list_id);
            }
        }
        out.push('\n');
    }
    for (d, sample) in &log.waiting {
        if let Some(d) = s.digest(*d) {
            let _ = writeln!(
                out,
                "waiting {} (list {}): {}",
                d.name,
                d.json_id,
                d.describe_sample(sample)
            );
        }
    }
    if out.is_empty() {
        out.push_str("no learning notifications\n");
    }
    out
}

/// The `p4jet` service on the wire.
pub(crate) fn dispatch(b: &mut Bmv2<'_>, spec: &MethodSpec, a: Fields<'_>) -> Reply {
    match spec.name {
        "p4jet_learning_dump" => {
            super::standard::cxt!(a, LC::INVALID_LIST_ID);
            ret(spec, b.p4jet_learning_dump(&a.string(2), a.i32(3)), |s| {
                Value::string(&s)
            })
        }
        "p4jet_digest_log" => {
            super::standard::cxt!(a, LC::INVALID_LIST_ID);
            ret(spec, b.p4jet_digest_log(&a.string(2), a.i32(3)), |s| {
                Value::string(&s)
            })
        }
        "p4jet_packet_books" => ret(spec, b.p4jet_packet_books(), |s| Value::string(&s)),
        "p4jet_workers" => ret(spec, b.p4jet_workers(), |s| Value::string(&s)),
        "p4jet_set_workers" => super::ret_void(spec, b.p4jet_set_workers(a.i32(1))),
        m => super::unknown(m),
    }
}
