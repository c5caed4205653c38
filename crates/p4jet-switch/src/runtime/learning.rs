//! Digests (bmv2 learn lists): configuration, lists sent to the controller, acks.
//!
//! Packets put samples in the switch's digest queue, each sample once until it is
//! acknowledged (bmv2's learning filter). A digest's waiting samples go out as one
//! list ([`DigestList`], bmv2's learning buffer) once there are `max_list_size` of them
//! or once the first has waited `max_timeout_ns` (timeout 0: only full lists); a list
//! is remembered until acknowledged, or, with an `ack_timeout_ns`, until that long
//! after it was sent, when its samples may be learnt again. Time is the switch clock.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use p4jet_runtime::bmv2::{Bmv2Code, LearnOperationErrorCode as LC};
use p4jet_runtime::{DigestConfig, DigestId, DigestList, DigestLog, RuntimeError, Update};

use super::externs::Later;
use super::{
    BatchCtx, DEFAULT_LEARN_MAX_SAMPLES, DEFAULT_LEARN_TIMEOUT_MS, Done, LEARN_LOG_CAPACITY,
    Prepared,
};
use crate::Switch;

/// One learn list's state.
#[derive(Debug, Clone)]
pub(crate) struct LearnListState {
    /// Flush timeout (ms) as bmv2 sets it.
    pub timeout_ms: u32,
    /// The same in ns, as P4Runtime sets it.
    pub timeout_ns: u64,
    /// Most samples per list.
    pub max_samples: usize,
    /// Ack timeout (ns; 0 = none).
    pub ack_timeout_ns: u64,
    /// Next list id.
    pub next_buffer: u64,
    /// Lists sent and not acknowledged, by list id.
    pub unacked: BTreeMap<u64, Unacked>,
    /// When a poll first saw samples of this list waiting (µs; None while none wait).
    pub waiting_since: Option<u64>,
}

/// A list sent and not acknowledged: when it was sent (µs) and its samples (None
/// once acknowledged).
pub(crate) type Unacked = (u64, Vec<Option<Vec<u8>>>);

impl Default for LearnListState {
    fn default() -> Self {
        LearnListState {
            timeout_ms: DEFAULT_LEARN_TIMEOUT_MS,
            timeout_ns: u64::from(DEFAULT_LEARN_TIMEOUT_MS) * 1_000_000,
            max_samples: DEFAULT_LEARN_MAX_SAMPLES,
            ack_timeout_ns: 0,
            next_buffer: 0,
            unacked: BTreeMap::new(),
            waiting_since: None,
        }
    }
}

impl Switch {
    /// The JSON list id of a digest.
    fn digest_list_id(&self, d: DigestId) -> Result<u32, RuntimeError> {
        self.engine
            .prog
            .learn_lists
            .get(d.index())
            .map(|l| l.id)
            .ok_or_else(|| Bmv2Code::Learn(LC::INVALID_LIST_ID).error(format!("no digest {}", d.0)))
    }

    /// The digest id of a JSON list id.
    fn digest_of_list(&self, list_id: u32) -> DigestId {
        DigestId(
            self.engine
                .prog
                .learn_lists
                .iter()
                .position(|l| l.id == list_id)
                .unwrap_or(0) as u32,
        )
    }

    pub(crate) fn prepare_digest(
        &mut self,
        _ctx: &mut BatchCtx,
        u: Update,
    ) -> Result<Prepared, RuntimeError> {
        match u {
            Update::ConfigureDigest { digest, config } => {
                let list_id = self.digest_list_id(digest)?;
                Ok(Prepared::none(Done::Later(Later::DigestConfig {
                    list_id,
                    config,
                })))
            }
            Update::AckDigest {
                digest,
                list_id,
                samples,
            } => {
                let id = self.digest_list_id(digest)?;
                Ok(Prepared::none(Done::Later(Later::DigestAck {
                    list_id: id,
                    buffer: list_id,
                    samples,
                })))
            }
            _ => Err(RuntimeError::internal("not a digest update")),
        }
    }

    pub(crate) fn configure_digest(&mut self, list_id: u32, c: DigestConfig) {
        let st = self.rt.learn.entry(list_id).or_default();
        st.timeout_ns = c.max_timeout_ns;
        st.timeout_ms = u32::try_from(c.max_timeout_ns / 1_000_000).unwrap_or(u32::MAX);
        st.max_samples = c.max_list_size as usize;
        st.ack_timeout_ns = c.ack_timeout_ns;
    }

    pub(crate) fn read_digest_config(&self, d: DigestId) -> Result<DigestConfig, RuntimeError> {
        self.need_schema()?;
        let id = self.digest_list_id(d)?;
        Ok(match self.rt.learn.get(&id) {
            Some(st) => DigestConfig {
                max_timeout_ns: st.timeout_ns,
                max_list_size: u32::try_from(st.max_samples).unwrap_or(u32::MAX),
                ack_timeout_ns: st.ack_timeout_ns,
            },
            None => DigestConfig::default(),
        })
    }

    /// Acknowledges samples of a list (all when None); an unknown list is taken as
    /// acknowledged already, as bmv2 does.
    pub(crate) fn ack_digest(&mut self, list_id: u32, buffer: u64, samples: Option<&[u32]>) {
        let st = self.rt.learn.entry(list_id).or_default();
        let mut acked = vec![];
        match samples {
            None => {
                if let Some((_, b)) = st.unacked.remove(&buffer) {
                    acked.extend(b.into_iter().flatten());
                }
            }
            Some(ids) => {
                if let Some((_, buf)) = st.unacked.get_mut(&buffer) {
                    for s in ids {
                        if let Some(slot) = buf.get_mut(*s as usize)
                            && let Some(sample) = slot.take()
                        {
                            acked.push(sample);
                        }
                    }
                    if buf.iter().all(Option::is_none) {
                        st.unacked.remove(&buffer);
                    }
                }
            }
        }
        self.unfilter(list_id, &acked);
    }

    /// Removes samples from the learning filter.
    fn unfilter(&self, list_id: u32, samples: &[Vec<u8>]) {
        if let Ok(mut d) = self.digests.lock() {
            for s in samples {
                d.filter.remove(&(list_id, s.clone()));
            }
        }
    }

    /// Every sample waiting, grouped into lists as [`Switch::poll_digests`] would,
    /// whatever the timeouts (the end of a run, tests).
    pub fn take_digests(&mut self) -> Vec<DigestList> {
        self.digest_lists(true)
    }

    /// The digest lists due now (switch clock), as bmv2's learning buffers send them.
    /// `p4jet run` calls this a few times a second and logs each list; they are also
    /// kept for `digest_dump`.
    pub fn poll_digests_now(&mut self) -> Vec<DigestList> {
        self.digest_lists(false)
    }

    /// One line describing a list (see [`p4jet_runtime::schema::Digest::describe_list`]).
    pub fn describe_digest_list(&self, l: &DigestList) -> String {
        match self.schema.as_ref().and_then(|s| s.digest(l.digest)) {
            Some(d) => d.describe_list(l),
            None => format!("digest {} buffer {}", l.digest.0, l.list_id),
        }
    }

    fn digest_lists(&mut self, all: bool) -> Vec<DigestList> {
        let now = self.clock.now_us();
        // lists not acknowledged in time: their samples may be learnt again
        let mut expired: Vec<(u32, Vec<Vec<u8>>)> = vec![];
        for (id, st) in &mut self.rt.learn {
            if st.ack_timeout_ns == 0 {
                continue;
            }
            let limit = st.ack_timeout_ns / 1000;
            let old: Vec<u64> = st
                .unacked
                .iter()
                .filter(|(_, (sent, _))| now.saturating_sub(*sent) >= limit)
                .map(|(b, _)| *b)
                .collect();
            for b in old {
                if let Some((_, samples)) = st.unacked.remove(&b) {
                    expired.push((*id, samples.into_iter().flatten().collect()));
                }
            }
        }
        for (id, samples) in expired {
            self.unfilter(id, &samples);
        }
        let taken: VecDeque<crate::Digest> = {
            let Ok(mut d) = self.digests.lock() else {
                return vec![];
            };
            let mut waiting: BTreeMap<u32, usize> = BTreeMap::new();
            for x in &d.pending {
                *waiting.entry(x.list_id).or_default() += 1;
            }
            let due: BTreeSet<u32> = waiting
                .into_iter()
                .filter(|&(id, n)| {
                    if all {
                        return true;
                    }
                    let st = self.rt.learn.entry(id).or_default();
                    let since = *st.waiting_since.get_or_insert(now);
                    n >= st.max_samples.max(1)
                        || (st.timeout_ns > 0
                            && now.saturating_sub(since).saturating_mul(1000) >= st.timeout_ns)
                })
                .map(|(id, _)| id)
                .collect();
            if due.is_empty() {
                return vec![];
            }
            let (taken, kept) = std::mem::take(&mut d.pending)
                .into_iter()
                .partition(|x| due.contains(&x.list_id));
            d.pending = kept;
            taken
        };
        let mut by_list: BTreeMap<u32, Vec<Vec<u8>>> = BTreeMap::new();
        for d in taken {
            by_list.entry(d.list_id).or_default().push(d.sample);
        }
        let mut out = vec![];
        for (list_id, samples) in by_list {
            let digest = self.digest_of_list(list_id);
            let st = self.rt.learn.entry(list_id).or_default();
            st.waiting_since = None;
            for chunk in samples.chunks(st.max_samples.max(1)) {
                let buffer = st.next_buffer;
                st.next_buffer += 1;
                st.unacked
                    .insert(buffer, (now, chunk.iter().cloned().map(Some).collect()));
                out.push(DigestList {
                    digest,
                    list_id: buffer,
                    samples: chunk.to_vec(),
                    timestamp_ns: now.saturating_mul(1000),
                });
            }
        }
        let log = &mut self.rt.learn_log;
        for m in &out {
            if log.len() == LEARN_LOG_CAPACITY {
                log.pop_front();
            }
            log.push_back(m.clone());
        }
        out
    }

    pub(crate) fn read_digest_log(
        &self,
        digest: Option<DigestId>,
        count: usize,
    ) -> Result<DigestLog, RuntimeError> {
        self.need_schema()?;
        let list = digest.map(|d| self.digest_list_id(d)).transpose()?;
        let sent: Vec<DigestList> = self
            .rt
            .learn_log
            .iter()
            .filter(|m| digest.is_none_or(|d| d == m.digest))
            .cloned()
            .collect();
        let skip = if count > 0 {
            sent.len().saturating_sub(count)
        } else {
            0
        };
        let waiting = match self.digests.lock() {
            Ok(d) => d
                .pending
                .iter()
                .filter(|x| list.is_none_or(|l| l == x.list_id))
                .map(|x| (self.digest_of_list(x.list_id), x.sample.clone()))
                .collect(),
            Err(_) => vec![],
        };
        Ok(DigestLog {
            sent: sent[skip..].to_vec(),
            waiting,
        })
    }
}
