//! bmv2-compatible match tables with fast lookup structures.
//!
//! A [`Table`] stores entries keyed by a [`MatchKey`] and answers lookups on
//! packed keys exactly as bmv2's `simple_switch` does (match-kind rules,
//! priorities, entry handles, key normalisation, error cases), using:
//!
//! * exact tables: a bucketed open-addressing hash with 16-bit signatures;
//! * LPM on one field of at most 32 bits: DIR-16-8-8;
//! * other LPM tables (wide fields, extra exact fields): per-length hash
//!   tables with binary search on lengths (Waldvogel);
//! * ternary / range tables: tuple-space search (TupleMerge placement,
//!   per-field length bounds that skip tuples before hashing, a Bloom filter
//!   shared by all tuples, priority pruning, staged batches with
//!   prefetching; bit vectors per key lane, or a linear scan, for tables of
//!   at most 8 entries) behind an
//!   exact lookup-result cache that every write invalidates.
//!
//! See `docs/tables.md` for the design, complexity and measurements.
//!
//! # Packed keys
//! Each field occupies `ceil(bit_width / 8)` bytes, big-endian, fields
//! concatenated in key order (valid fields: one byte, 0 or 1). The engine must
//! give lookup keys whose bits above each field's width are zero, and with
//! the static key masks (see [`Table::with_field_masks`]) already applied.
#![deny(unsafe_code)]

mod cache;
mod dir;
mod exact;
mod hash;
mod prefetch;
mod prune;
mod shared;
mod small;
mod tss;
mod wlpm;
mod words;

use std::borrow::Cow;
use std::collections::BTreeSet;

use std::sync::atomic::{AtomicUsize, Ordering};

pub use cache::CacheStats;
use cache::LookupCache;
use dir::DirLpm;
use exact::ExactIndex;
pub use shared::SHARED_MAX;
use shared::Shared;
use tss::{Tss, TssKey};
use wlpm::WaldvogelLpm;
use words::{ByteWords, Words};

/// Largest table size bmv2 supports (handles keep the low 24 bits for the index).
pub const MAX_TABLE_SIZE: usize = 0x00ff_ffff;

const HANDLE_INDEX_MASK: u32 = 0x00ff_ffff;

/// Wide-LPM tables with at least this many entries answer `lookup_batch`
/// in lock step with prefetching (see docs/tables.md).
const WALD_BATCH_MIN: usize = 16_384;

/// Default number of keys per batched-lookup stage.
pub const DEFAULT_PREFETCH_DISTANCE: usize = 32;

thread_local! {
    /// The calling thread's prefetch distance for every table (0: each table's own).
    static THREAD_PREFETCH: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

/// Sets the prefetch distance (keys per stage of [`Table::lookup_batch`], clamped to
/// 1..=64) of every table's batched lookups made by the calling thread, over each
/// table's own [`Table::prefetch_distance`]; `None` goes back to the tables' own. A
/// forwarding thread tunes its distance this way while running, without touching the
/// tables other threads share.
pub fn set_thread_prefetch_distance(d: Option<usize>) {
    let v = d.map_or(0, |d| d.clamp(1, exact::MAX_BATCH) as u8);
    THREAD_PREFETCH.with(|c| c.set(v));
}

/// Sets of the lookup cache of a ternary/range table in [`CacheMode::Auto`].
pub const DEFAULT_CACHE_SETS: usize = 4096;

/// [`CacheMode::Auto`] turns the cache on while the table has at least this
/// many tuples (below that a lookup costs about as much as a cache probe).
pub const CACHE_MIN_TUPLES: usize = 6;

/// Lookup-result cache of ternary and range tables: 2-way set-associative,
/// keyed by the whole packed key, invalidated by every insert, delete and
/// clear, so results are exactly the uncached ones. Other tables ignore it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheMode {
    /// [`DEFAULT_CACHE_SETS`] sets, used while the table has at least
    /// [`CACHE_MIN_TUPLES`] tuples and keys of at most 64 bytes (default).
    Auto,
    Off,
    /// Always used, with this many sets (rounded up to a power of two).
    On(usize),
}

/// [`CacheMode`] of tables created from now on, encoded: 0 `Auto`, 1
/// `Off`, `2 + sets` `On(sets)`.
static DEFAULT_CACHE_MODE: AtomicUsize = AtomicUsize::new(0);

/// Set the [`CacheMode`] that tables created from now on start with, in this
/// process (for benchmarks and tests: `p4jet bench --table-cache off`).
/// Existing tables keep theirs.
pub fn set_default_cache_mode(m: CacheMode) {
    let v = match m {
        CacheMode::Auto => 0,
        CacheMode::Off => 1,
        CacheMode::On(s) => 2usize.saturating_add(s),
    };
    DEFAULT_CACHE_MODE.store(v, Ordering::Relaxed);
}

/// The mode [`set_default_cache_mode`] set (`Auto` unless changed).
pub fn default_cache_mode() -> CacheMode {
    match DEFAULT_CACHE_MODE.load(Ordering::Relaxed) {
        0 => CacheMode::Auto,
        1 => CacheMode::Off,
        v => CacheMode::On(v - 2),
    }
}

/// Match kind of one key field (p4c emits `optional` as `Ternary`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatchKind {
    Exact,
    Lpm,
    Ternary,
    Range,
    /// Legacy P4_14 `valid` match: a 1-byte 0/1 key.
    Valid,
}

/// Kind of a table, derived from its fields as bmv2/p4c do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TableKind {
    Exact,
    Lpm,
    Ternary,
    Range,
}

/// One field of a table key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyFieldSpec {
    pub kind: MatchKind,
    /// Width in bits (`Valid` fields: ignored, always one byte).
    pub bit_width: u32,
}

/// The match of one key field in an entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FieldMatch {
    /// Field bytes.
    Exact(Vec<u8>),
    Lpm {
        value: Vec<u8>,
        prefix_len: u32,
    },
    Ternary {
        value: Vec<u8>,
        mask: Vec<u8>,
    },
    /// Inclusive bounds.
    Range {
        low: Vec<u8>,
        high: Vec<u8>,
    },
    Valid(bool),
}

/// The match key of an entry. `priority` is only meaningful for ternary and
/// range tables (smallest number wins, as in bmv2); other tables store -1.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MatchKey {
    pub fields: Vec<FieldMatch>,
    pub priority: i32,
}

/// Exact keys up to this many bytes are packed on the stack when inserted.
const SMALL_KEY: usize = 64;

/// bmv2 entry handle: `(version << 24) | index`, where `index` is the lowest
/// free slot and `version` (8 bits) is bumped each time the slot is freed.
pub type EntryHandle = u32;

/// Errors, mirroring bmv2's `MatchErrorCode`s.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum TableError {
    #[error("table is full")]
    TableFull,
    #[error("duplicate entry")]
    DuplicateEntry,
    #[error("invalid entry handle")]
    InvalidHandle,
    /// The handle's slot is in use but with another version (bmv2 EXPIRED_HANDLE).
    #[error("expired entry handle")]
    ExpiredHandle,
    #[error("bad match key: {0}")]
    BadMatchKey(String),
    /// The key specification itself is unusable (e.g. two LPM fields in an LPM table).
    #[error("invalid table key specification: {0}")]
    InvalidSpec(String),
}

#[derive(Clone, Debug)]
struct Field {
    kind: MatchKind,
    width: u32,
    off: usize,
    nbytes: usize,
    byte0: u8,
    static_mask: Option<Vec<u8>>,
}

impl Field {
    /// Mask of the bits that exist in the field's bytes.
    fn width_mask(&self) -> Vec<u8> {
        let mut m = vec![0xffu8; self.nbytes];
        if let Some(b) = m.first_mut() {
            *b = self.byte0;
        }
        m
    }

    /// bmv2's normalisation of a value: high bits of the first byte cleared,
    /// static key mask applied.
    fn norm_in_place(&self, v: &mut [u8]) {
        if let Some(b) = v.first_mut() {
            *b &= self.byte0;
        }
        if let Some(m) = &self.static_mask {
            for (a, b) in v.iter_mut().zip(m) {
                *a &= b;
            }
        }
    }
}

/// Fill `m` with a mask of `len` leading one bits (counted from the most
/// significant bit of the first byte, as bmv2 does for byte-padded fields).
pub(crate) fn fill_prefix_mask(m: &mut [u8], len: u32) {
    let full = (len / 8) as usize;
    for (i, b) in m.iter_mut().enumerate() {
        *b = if i < full {
            0xff
        } else if i == full && !len.is_multiple_of(8) {
            0xffu8 << (8 - len % 8)
        } else {
            0
        };
    }
}

// one per table: its size does not matter, and boxing the large variant would
// add a pointer load to every lookup
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
enum Index {
    Exact(ExactIndex),
    Dir(DirLpm),
    Wald(WaldvogelLpm),
    Tss(Tss),
}

/// The per-entry data a lookup touches (kept apart from the cold match keys).
#[derive(Clone)]
struct Slot<V> {
    version: u8,
    value: Option<V>,
}

/// A match table (see the crate docs).
#[derive(Clone)]
pub struct Table<V> {
    fields: Vec<Field>,
    specs: Vec<KeyFieldSpec>,
    key_bytes: usize,
    kind: TableKind,
    max_size: usize,
    slots: Vec<Slot<V>>,
    /// normalised match keys, parallel to `slots`; empty for exact tables, whose
    /// keys are rebuilt from the packed keys of their index
    keys: Vec<Option<MatchKey>>,
    free: BTreeSet<u32>,
    len: usize,
    index: Index,
    lpm_field: Option<usize>,
    prefetch_distance: usize,
    cache_mode: CacheMode,
    /// allocated the first time the mode asks for it
    cache: Option<LookupCache>,
    /// whether lookups use `cache` now
    cache_on: bool,
    /// bumped by every insert/delete/clear; never 0 (the cache's empty value)
    generation: u32,
    /// the entries' distinct values, kept once ([`Table::share_values`])
    shared: Option<Shared<V>>,
}

/// Tables of fewer entries answer [`Table::lookup_batch_values`] from the entries'
/// slots even when they share values ([`Table::looks_up_shared`]): the slots of
/// fewer (1.5 MB of the engine's) stay in the L2 cache (bng's 16K NAT bindings, a few
/// hundred values: 8 % slower through the shared values).
const SHARED_LOOKUP_MIN: usize = 32_768;

impl<V: Clone + PartialEq> Table<V> {
    /// Keeps each distinct value of the entries once, for
    /// [`Table::lookup_batch_values`]: `key` summarises a value in 64 bits (equal
    /// values, equal summaries), or declines to share it (None). Exact and LPM tables
    /// only (the others are left as they are); up to [`SHARED_MAX`] distinct values,
    /// entries with others keep theirs in their slots. Existing entries are shared now,
    /// later ones as they are written.
    pub fn share_values(&mut self, key: fn(&V) -> Option<u64>) {
        if !matches!(self.index, Index::Exact(_) | Index::Dir(_)) {
            return;
        }
        let mut sh = Shared::new(key, <V as PartialEq>::eq);
        for (i, s) in self.slots.iter().enumerate() {
            if let Some(v) = &s.value {
                sh.add(i as u32, v);
            }
        }
        self.shared = Some(sh);
    }
}

fn bad(s: impl Into<String>) -> TableError {
    TableError::BadMatchKey(s.into())
}

impl<V: Clone> Table<V> {
    /// Create a table. `max_size` is clamped to [`MAX_TABLE_SIZE`].
    pub fn new(fields: Vec<KeyFieldSpec>, max_size: usize) -> Result<Self, TableError> {
        let n = fields.len();
        Self::with_field_masks(fields, vec![None; n], max_size)
    }

    /// Like [`Table::new`], with bmv2's static key masks (the JSON key `mask`,
    /// emitted by p4c for `f & CONST` and slices): each entry value is ANDed
    /// with its field's mask on insert, as bmv2 does. Lookup keys must already
    /// be masked by the caller.
    pub fn with_field_masks(
        fields: Vec<KeyFieldSpec>,
        masks: Vec<Option<Vec<u8>>>,
        max_size: usize,
    ) -> Result<Self, TableError> {
        if masks.len() != fields.len() {
            return Err(TableError::InvalidSpec(format!(
                "{} masks for {} fields",
                masks.len(),
                fields.len()
            )));
        }
        let mut fs = Vec::with_capacity(fields.len());
        let mut off = 0;
        for (i, (f, m)) in fields.iter().zip(masks).enumerate() {
            let width = if f.kind == MatchKind::Valid {
                8
            } else {
                f.bit_width
            };
            let nbytes = width.div_ceil(8) as usize;
            if let Some(m) = &m
                && m.len() != nbytes
            {
                {
                    return Err(TableError::InvalidSpec(format!(
                        "field {i}: mask has {} bytes, field has {nbytes}",
                        m.len()
                    )));
                }
            }
            let byte0 = if width % 8 == 0 {
                0xff
            } else {
                (1u8 << (width % 8)) - 1
            };
            fs.push(Field {
                kind: f.kind,
                width,
                off,
                nbytes,
                byte0,
                static_mask: m,
            });
            off += nbytes;
        }
        let has = |k: MatchKind| fields.iter().any(|f| f.kind == k);
        let kind = if has(MatchKind::Range) {
            TableKind::Range
        } else if has(MatchKind::Ternary) {
            TableKind::Ternary
        } else if has(MatchKind::Lpm) {
            TableKind::Lpm
        } else {
            TableKind::Exact
        };
        let lpms: Vec<usize> = (0..fs.len())
            .filter(|i| fs[*i].kind == MatchKind::Lpm)
            .collect();
        let mut lpm_field = None;
        let index = match kind {
            TableKind::Exact => Index::Exact(ExactIndex::new(off)),
            TableKind::Lpm => {
                if lpms.len() != 1 {
                    return Err(TableError::InvalidSpec(
                        "an LPM table has exactly one LPM field".into(),
                    ));
                }
                let l = lpms[0];
                lpm_field = Some(l);
                if fs.len() == 1 && fs[l].nbytes <= 4 {
                    Index::Dir(DirLpm::new(fs[l].nbytes))
                } else {
                    Index::Wald(WaldvogelLpm::new(off, fs[l].off, fs[l].nbytes))
                }
            }
            TableKind::Ternary | TableKind::Range => {
                let rf = fs
                    .iter()
                    .filter(|f| f.kind == MatchKind::Range)
                    .map(|f| (f.off, f.nbytes))
                    .collect();
                let all = fs.iter().map(|f| (f.off, f.nbytes, f.width)).collect();
                Index::Tss(Tss::new(off, all, rf))
            }
        };
        Ok(Table {
            fields: fs,
            specs: fields,
            key_bytes: off,
            kind,
            max_size: max_size.min(MAX_TABLE_SIZE),
            slots: Vec::new(),
            keys: Vec::new(),
            free: BTreeSet::new(),
            len: 0,
            index,
            lpm_field,
            prefetch_distance: DEFAULT_PREFETCH_DISTANCE,
            cache_mode: default_cache_mode(),
            cache: None,
            cache_on: false,
            generation: 1,
            shared: None,
        })
    }

    /// Length of a packed lookup key.
    pub fn key_bytes(&self) -> usize {
        self.key_bytes
    }

    pub fn kind(&self) -> TableKind {
        self.kind
    }

    pub fn fields(&self) -> &[KeyFieldSpec] {
        &self.specs
    }

    /// Name of the lookup structure in use (for logs and reports).
    pub fn structure(&self) -> &'static str {
        match &self.index {
            Index::Exact(_) => "exact-hash",
            Index::Dir(_) => "dir-16-8-8",
            Index::Wald(_) => "lpm-hash-binary-search",
            Index::Tss(_) => "tuple-space-search",
        }
    }

    /// Number of tuples (distinct masks) of a ternary/range table; 0 otherwise.
    pub fn num_tuples(&self) -> usize {
        match &self.index {
            Index::Tss(t) => t.num_tuples(),
            _ => 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn max_size(&self) -> usize {
        self.max_size
    }

    /// Keys per stage of [`Table::lookup_batch`] (1..=64).
    pub fn prefetch_distance(&self) -> usize {
        self.prefetch_distance
    }

    pub fn set_prefetch_distance(&mut self, d: usize) {
        self.prefetch_distance = d.clamp(1, exact::MAX_BATCH);
    }

    /// The distance the calling thread's batched lookups use: the thread's
    /// ([`set_thread_prefetch_distance`]) or the table's own.
    #[inline(always)]
    fn stage_keys(&self) -> usize {
        match THREAD_PREFETCH.with(|c| c.get()) {
            0 => self.prefetch_distance,
            d => d as usize,
        }
    }

    pub fn cache_mode(&self) -> CacheMode {
        self.cache_mode
    }

    /// Choose how the lookup cache is used (ternary/range tables only).
    pub fn set_cache_mode(&mut self, m: CacheMode) {
        self.cache_mode = m;
        if let (CacheMode::On(s), Some(c)) = (m, &self.cache)
            && c.sets() != s.max(1).next_power_of_two()
        {
            self.cache = None;
        }
        self.refresh_cache();
    }

    /// Whether lookups currently go through the lookup cache.
    pub fn cache_active(&self) -> bool {
        self.cache_on
    }

    /// Counts of the lookup cache since the table got one (batched lookups;
    /// `None` when it never had one).
    pub fn cache_stats(&self) -> Option<CacheStats> {
        self.cache.as_ref().map(LookupCache::stats)
    }

    /// Apply the cache mode to the table as it is now.
    fn refresh_cache(&mut self) {
        let Index::Tss(t) = &self.index else {
            self.cache_on = false;
            return;
        };
        let w = words::nwords(self.key_bytes);
        let sets = match self.cache_mode {
            CacheMode::Off => None,
            CacheMode::Auto => {
                (t.num_tuples() >= CACHE_MIN_TUPLES && w <= 8).then_some(DEFAULT_CACHE_SETS)
            }
            CacheMode::On(s) => Some(s),
        };
        self.cache_on = sets.is_some();
        if let Some(s) = sets
            && self.cache.is_none()
        {
            self.cache = Some(LookupCache::new(s, w));
        }
    }

    /// Invalidate cached lookups (every write that can change a result).
    fn bump_generation(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.generation = 1;
            if let Some(c) = &mut self.cache {
                c.reset();
            }
        }
        self.refresh_cache();
    }

    /// Check and normalise a key as bmv2 does (see docs/tables.md).
    fn normalize(&self, key: &MatchKey) -> Result<MatchKey, TableError> {
        self.normalize_owned(key.clone())
    }

    /// [`Table::normalize`] in place, keeping the key's buffers.
    fn normalize_owned(&self, mut key: MatchKey) -> Result<MatchKey, TableError> {
        if key.fields.len() != self.fields.len() {
            return Err(bad(format!(
                "expected {} fields, got {}",
                self.fields.len(),
                key.fields.len()
            )));
        }
        let masked_table = matches!(self.kind, TableKind::Ternary | TableKind::Range);
        for (i, (f, m)) in self.fields.iter().zip(key.fields.iter_mut()).enumerate() {
            let len_ok = |v: &[u8], what: &str| {
                if v.len() == f.nbytes {
                    Ok(())
                } else {
                    Err(bad(format!(
                        "field {i}: {what} has {} bytes, expected {}",
                        v.len(),
                        f.nbytes
                    )))
                }
            };
            match (f.kind, m) {
                (MatchKind::Exact, FieldMatch::Exact(v)) => {
                    len_ok(v, "value")?;
                    f.norm_in_place(v);
                }
                (MatchKind::Valid, FieldMatch::Valid(_)) => {}
                (MatchKind::Lpm, FieldMatch::Lpm { value, prefix_len }) => {
                    len_ok(value, "value")?;
                    if *prefix_len > f.width {
                        return Err(bad(format!(
                            "field {i}: prefix length {prefix_len} > width {}",
                            f.width
                        )));
                    }
                    f.norm_in_place(value);
                    if masked_table {
                        let mut pm = vec![0u8; f.nbytes];
                        fill_prefix_mask(&mut pm, *prefix_len);
                        for (a, b) in value.iter_mut().zip(&pm) {
                            *a &= b;
                        }
                    }
                }
                (MatchKind::Ternary, FieldMatch::Ternary { value, mask }) => {
                    len_ok(value, "value")?;
                    len_ok(mask, "mask")?;
                    f.norm_in_place(value);
                    for (a, b) in value.iter_mut().zip(mask.iter()) {
                        *a &= b;
                    }
                }
                (MatchKind::Range, FieldMatch::Range { low, high }) => {
                    len_ok(low, "low")?;
                    len_ok(high, "high")?;
                    if low > high {
                        return Err(bad(format!("field {i}: range low > high")));
                    }
                    f.norm_in_place(low);
                }
                (k, _) => return Err(bad(format!("field {i}: expected a {k:?} match"))),
            }
        }
        if !masked_table {
            key.priority = -1;
        }
        Ok(key)
    }

    /// Packed key of a normalised exact-table key.
    fn pack_exact(&self, k: &MatchKey) -> Vec<u8> {
        let mut p = Vec::with_capacity(self.key_bytes);
        for m in &k.fields {
            match m {
                FieldMatch::Exact(v) => p.extend_from_slice(v),
                FieldMatch::Valid(b) => p.push(u8::from(*b)),
                _ => {}
            }
        }
        p
    }

    /// The packed normalised key of an exact table, checked as
    /// [`Table::normalize`] checks it (same errors), written into `small` when it
    /// fits (no allocation), else into `big`.
    fn pack_exact_checked<'b>(
        &self,
        key: &MatchKey,
        small: &'b mut [u8; SMALL_KEY],
        big: &'b mut Vec<u8>,
    ) -> Result<&'b [u8], TableError> {
        if key.fields.len() != self.fields.len() {
            return Err(bad(format!(
                "expected {} fields, got {}",
                self.fields.len(),
                key.fields.len()
            )));
        }
        let out: &mut [u8] = if self.key_bytes <= SMALL_KEY {
            &mut small[..self.key_bytes]
        } else {
            big.resize(self.key_bytes, 0);
            big
        };
        for (i, (f, m)) in self.fields.iter().zip(&key.fields).enumerate() {
            let dst = out
                .get_mut(f.off..f.off + f.nbytes)
                .ok_or_else(|| bad(format!("field {i}: out of the key")))?;
            match (f.kind, m) {
                (MatchKind::Exact, FieldMatch::Exact(v)) => {
                    if v.len() != f.nbytes {
                        return Err(bad(format!(
                            "field {i}: value has {} bytes, expected {}",
                            v.len(),
                            f.nbytes
                        )));
                    }
                    dst.copy_from_slice(v);
                    f.norm_in_place(dst);
                }
                (MatchKind::Valid, FieldMatch::Valid(b)) => dst.fill(u8::from(*b)),
                (k, _) => return Err(bad(format!("field {i}: expected a {k:?} match"))),
            }
        }
        Ok(out)
    }

    /// Packed key (LPM value unmasked) and prefix length of a normalised LPM-table key.
    fn pack_lpm(&self, k: &MatchKey) -> (Vec<u8>, u32) {
        let mut p = Vec::with_capacity(self.key_bytes);
        let mut len = 0;
        for m in &k.fields {
            match m {
                FieldMatch::Exact(v) => p.extend_from_slice(v),
                FieldMatch::Valid(b) => p.push(u8::from(*b)),
                FieldMatch::Lpm { value, prefix_len } => {
                    p.extend_from_slice(value);
                    len = *prefix_len;
                }
                _ => {}
            }
        }
        (p, len)
    }

    /// Tuple-space representation of a normalised ternary/range-table key.
    fn tss_key(&self, k: &MatchKey) -> TssKey {
        let mut value = Vec::with_capacity(self.key_bytes);
        let mut mask = Vec::with_capacity(self.key_bytes);
        let mut ranges = Vec::new();
        let mut check = false;
        for (f, m) in self.fields.iter().zip(&k.fields) {
            let wm = f.width_mask();
            let fm: Vec<u8> = match m {
                FieldMatch::Exact(_) => wm.clone(),
                FieldMatch::Valid(_) => vec![0xff],
                FieldMatch::Lpm { prefix_len, .. } => {
                    let mut pm = vec![0u8; f.nbytes];
                    fill_prefix_mask(&mut pm, *prefix_len);
                    pm.iter().zip(&wm).map(|(a, b)| a & b).collect()
                }
                FieldMatch::Ternary { mask, .. } => {
                    mask.iter().zip(&wm).map(|(a, b)| a & b).collect()
                }
                FieldMatch::Range { low, high } => {
                    ranges.extend_from_slice(low);
                    ranges.extend_from_slice(high);
                    match range_block_mask(low, high, &wm) {
                        Some(bm) => bm,
                        None => {
                            check = true;
                            range_common_prefix_mask(low, high, &wm)
                        }
                    }
                }
            };
            let fv: Vec<u8> = match m {
                FieldMatch::Exact(v) | FieldMatch::Lpm { value: v, .. } => v.clone(),
                FieldMatch::Ternary { value, .. } => value.clone(),
                FieldMatch::Range { low, .. } => low.clone(),
                FieldMatch::Valid(b) => vec![u8::from(*b)],
            };
            value.extend(fv.iter().zip(&fm).map(|(a, b)| a & b));
            mask.extend_from_slice(&fm);
        }
        TssKey {
            value,
            mask,
            check,
            ranges,
        }
    }

    /// Entry index of an entry whose normalised key equals `nk` (the
    /// duplicate rule of the table's kind).
    fn find_normalized(&self, nk: &MatchKey) -> Option<u32> {
        match &self.index {
            Index::Exact(x) => x.find(&self.pack_exact(nk)),
            Index::Dir(d) => {
                let (p, len) = self.pack_lpm(nk);
                d.find(d.key32(&p), len)
            }
            Index::Wald(w) => {
                let (p, len) = self.pack_lpm(nk);
                w.find(&p, len)
            }
            Index::Tss(t) => {
                let tk = self.tss_key(nk);
                t.find(&tk, |e| {
                    self.keys[e as usize].as_ref().is_some_and(|k| k == nk)
                })
            }
        }
    }

    #[inline(always)]
    fn handle_of(&self, idx: u32) -> EntryHandle {
        (u32::from(self.slots[idx as usize].version) << 24) | idx
    }

    /// Makes room for `additional` more entries (up to the table's size), so
    /// that adding them does not grow the structures step by step. Only a
    /// hint: nothing else changes.
    pub fn reserve(&mut self, additional: usize) {
        let n = additional.min(self.max_size.saturating_sub(self.len));
        let new_slots = n.saturating_sub(self.free.len());
        self.slots.reserve_exact(new_slots);
        match &mut self.index {
            Index::Exact(x) => x.reserve(self.slots.len() + new_slots, self.len + n),
            _ => self.keys.reserve_exact(new_slots),
        }
    }

    /// Add an entry. Errors, in bmv2's order: `BadMatchKey`, `DuplicateEntry`,
    /// `TableFull`.
    pub fn insert(&mut self, key: MatchKey, value: V) -> Result<EntryHandle, TableError> {
        self.insert_cow(Cow::Owned(key), value)
    }

    /// [`Table::insert`] of a key the caller keeps: exact tables, which only keep
    /// the packed key, copy nothing else.
    pub fn insert_ref(&mut self, key: &MatchKey, value: V) -> Result<EntryHandle, TableError> {
        self.insert_cow(Cow::Borrowed(key), value)
    }

    /// Puts back, under its old handle, an entry that [`Table::delete`] just removed
    /// (the control plane's rollback of a failed batch): the slot must be free and
    /// its version the one `delete` left (`handle`'s plus one). Checks as
    /// [`Table::insert`]; on success the table holds the entry under `handle` again.
    pub fn reinsert(
        &mut self,
        handle: EntryHandle,
        key: MatchKey,
        value: V,
    ) -> Result<(), TableError> {
        let idx = handle & HANDLE_INDEX_MASK;
        let version = (handle >> 24) as u8;
        match self.slots.get(idx as usize) {
            Some(s) if s.value.is_none() && s.version == version.wrapping_add(1) => {}
            _ => return Err(TableError::InvalidHandle),
        }
        if !self.free.contains(&idx) {
            return Err(TableError::InvalidHandle);
        }
        self.insert_at(Cow::Owned(key), value, Some((idx, version)))
            .map(|_| ())
    }

    fn insert_cow(&mut self, key: Cow<'_, MatchKey>, value: V) -> Result<EntryHandle, TableError> {
        self.insert_at(key, value, None)
    }

    /// Inserts in the lowest free slot, or in `at` (slot, version) for
    /// [`Table::reinsert`].
    fn insert_at(
        &mut self,
        key: Cow<'_, MatchKey>,
        value: V,
        at: Option<(u32, u8)>,
    ) -> Result<EntryHandle, TableError> {
        // exact tables: the packed key, for the duplicate check and the index;
        // the others: the normalised key they keep
        let (mut small, mut big) = ([0u8; SMALL_KEY], Vec::new());
        let (packed, nk) = match &self.index {
            Index::Exact(_) => (
                Some(self.pack_exact_checked(&key, &mut small, &mut big)?),
                None,
            ),
            _ => (None, Some(self.normalize_owned(key.into_owned())?)),
        };
        let duplicate = match (&self.index, packed, &nk) {
            (Index::Exact(x), Some(p), _) => x.find(p).is_some(),
            (_, _, Some(nk)) => self.find_normalized(nk).is_some(),
            _ => false,
        };
        if duplicate {
            return Err(TableError::DuplicateEntry);
        }
        if self.len >= self.max_size {
            return Err(TableError::TableFull);
        }
        let idx = match at {
            Some((i, version)) => {
                self.free.remove(&i);
                self.slots[i as usize].version = version;
                i
            }
            None => match self.free.pop_first() {
                Some(i) => i,
                None => {
                    self.slots.push(Slot {
                        version: 0,
                        value: None,
                    });
                    if !matches!(self.index, Index::Exact(_)) {
                        self.keys.push(None);
                    }
                    (self.slots.len() - 1) as u32
                }
            },
        };
        match &mut self.index {
            Index::Exact(x) => {
                if let Some(p) = packed {
                    x.insert(idx, p);
                }
            }
            Index::Dir(_) | Index::Wald(_) => {
                let Some(nk) = &nk else {
                    return Err(bad("no normalised key"));
                };
                let (p, len) = self.pack_lpm(nk);
                match &mut self.index {
                    Index::Dir(d) => {
                        let v = d.key32(&p);
                        d.insert(v, len, idx);
                    }
                    Index::Wald(w) => w.insert(&p, len, idx),
                    _ => {}
                }
            }
            Index::Tss(_) => {
                let Some(nk) = &nk else {
                    return Err(bad("no normalised key"));
                };
                let tk = self.tss_key(nk);
                let prio = nk.priority;
                if let Index::Tss(t) = &mut self.index {
                    t.insert(idx, tk, prio);
                }
            }
        }
        self.slots[idx as usize].value = Some(value);
        if let (Some(sh), Some(v)) = (&mut self.shared, &self.slots[idx as usize].value) {
            sh.add(idx, v);
        }
        if let Some(k) = self.keys.get_mut(idx as usize) {
            *k = nk;
        }
        self.len += 1;
        self.bump_generation();
        Ok(self.handle_of(idx))
    }

    fn check_handle(&self, h: EntryHandle) -> Result<u32, TableError> {
        let idx = h & HANDLE_INDEX_MASK;
        match self.slots.get(idx as usize) {
            Some(s) if s.value.is_some() => {
                if u32::from(s.version) == h >> 24 {
                    Ok(idx)
                } else {
                    Err(TableError::ExpiredHandle)
                }
            }
            _ => Err(TableError::InvalidHandle),
        }
    }

    /// Replace the value of an entry.
    pub fn modify(&mut self, h: EntryHandle, value: V) -> Result<(), TableError> {
        let idx = self.check_handle(h)?;
        self.slots[idx as usize].value = Some(value);
        if let (Some(sh), Some(v)) = (&mut self.shared, &self.slots[idx as usize].value) {
            sh.remove(idx);
            sh.add(idx, v);
        }
        Ok(())
    }

    /// Delete an entry; its slot's version is bumped (mod 256), so the next
    /// entry reusing the slot gets a different handle, as in bmv2.
    pub fn delete(&mut self, h: EntryHandle) -> Result<(), TableError> {
        let idx = self.check_handle(h)?;
        let slot = &mut self.slots[idx as usize];
        slot.value = None;
        slot.version = slot.version.wrapping_add(1);
        if let Some(sh) = &mut self.shared {
            sh.remove(idx);
        }
        if let Index::Exact(x) = &mut self.index {
            x.remove(idx);
            self.free.insert(idx);
            self.len -= 1;
            self.bump_generation();
            return Ok(());
        }
        let Some(nk) = self.keys.get_mut(idx as usize).and_then(Option::take) else {
            return Err(TableError::InvalidHandle);
        };
        match &mut self.index {
            Index::Exact(_) => {}
            Index::Dir(d) => {
                let (p, len) = pack_lpm_free(&nk);
                let v = d.key32(&p);
                d.delete(v, len, idx);
            }
            Index::Wald(w) => w.delete(idx),
            Index::Tss(t) => t.remove(idx),
        }
        self.free.insert(idx);
        self.len -= 1;
        self.bump_generation();
        Ok(())
    }

    /// Undoes the insertion that returned `h` (a rolled-back batch): the entry goes and
    /// its slot gets back the version it had, so handle numbering continues as if the
    /// insertion never happened (and [`Table::reinsert`] of an entry deleted earlier
    /// from that slot works).
    pub fn uninsert(&mut self, h: EntryHandle) -> Result<(), TableError> {
        self.delete(h)?;
        let idx = h & HANDLE_INDEX_MASK;
        let slot = &mut self.slots[idx as usize];
        slot.version = slot.version.wrapping_sub(1);
        Ok(())
    }

    /// Remove every entry and reset handle numbering and versions (bmv2's
    /// `table_clear` / `reset_state`).
    pub fn clear(&mut self) {
        self.slots = Vec::new();
        self.keys = Vec::new();
        self.free.clear();
        self.len = 0;
        if let Some(sh) = &mut self.shared {
            sh.clear();
        }
        match &mut self.index {
            Index::Exact(x) => x.clear(),
            Index::Dir(d) => d.clear(),
            Index::Wald(w) => w.clear(),
            Index::Tss(t) => t.clear(),
        }
        self.bump_generation();
    }

    /// The entry (normalised key as bmv2 reports it, and value). Exact tables
    /// do not keep the keys they were given: theirs are rebuilt.
    pub fn get(&self, h: EntryHandle) -> Option<(Cow<'_, MatchKey>, &V)> {
        let idx = self.check_handle(h).ok()?;
        let k = self.key_at(idx)?;
        let v = self.slots[idx as usize].value.as_ref()?;
        Some((k, v))
    }

    /// The normalised key of the live entry at `idx`.
    fn key_at(&self, idx: u32) -> Option<Cow<'_, MatchKey>> {
        match &self.index {
            Index::Exact(x) => {
                let packed = x.key(idx)?;
                let fields = self
                    .fields
                    .iter()
                    .map(|f| {
                        let b = packed.get(f.off..f.off + f.nbytes).unwrap_or_default();
                        match f.kind {
                            MatchKind::Valid => {
                                FieldMatch::Valid(b.first().is_some_and(|x| *x != 0))
                            }
                            _ => FieldMatch::Exact(b.to_vec()),
                        }
                    })
                    .collect();
                Some(Cow::Owned(MatchKey {
                    fields,
                    priority: -1,
                }))
            }
            _ => self.keys.get(idx as usize)?.as_ref().map(Cow::Borrowed),
        }
    }

    /// Handle of the entry with the same match key (after normalisation; and
    /// the same priority for ternary/range tables). `None` for a malformed key.
    pub fn find(&self, key: &MatchKey) -> Option<EntryHandle> {
        let nk = self.normalize(key).ok()?;
        self.find_normalized(&nk).map(|i| self.handle_of(i))
    }

    /// The handle of the live entry in slot `idx` (a handle's low 24 bits), if any.
    pub fn handle_at(&self, idx: u32) -> Option<EntryHandle> {
        self.slots.get(idx as usize)?.value.as_ref()?;
        Some(self.handle_of(idx))
    }

    /// All entries in ascending handle-index order.
    pub fn iter(&self) -> impl Iterator<Item = (EntryHandle, Cow<'_, MatchKey>, &V)> {
        self.iter_from(0)
    }

    /// The entries whose handle index (slot) is `start` or more, in ascending order:
    /// a reader pages through a big table without visiting the slots before `start`.
    pub fn iter_from(
        &self,
        start: u32,
    ) -> impl Iterator<Item = (EntryHandle, Cow<'_, MatchKey>, &V)> {
        let start = (start as usize).min(self.slots.len());
        self.slots[start..]
            .iter()
            .enumerate()
            .filter_map(move |(i, s)| {
                let i = i + start;
                let v = s.value.as_ref()?;
                let k = self.key_at(i as u32)?;
                Some(((u32::from(s.version) << 24) | i as u32, k, v))
            })
    }

    #[inline(always)]
    fn resolve(&self, idx: Option<u32>) -> Option<(EntryHandle, &V)> {
        let idx = idx?;
        let s = &self.slots[idx as usize];
        let v = s.value.as_ref()?;
        Some(((u32::from(s.version) << 24) | idx, v))
    }

    /// Look up a packed key (`key.len()` must be `key_bytes()`; a key of
    /// another length never matches).
    #[inline]
    pub fn lookup(&self, key: &[u8]) -> Option<(EntryHandle, &V)> {
        if key.len() != self.key_bytes {
            return None;
        }
        let idx = match &self.index {
            Index::Exact(x) => x.find(key),
            Index::Dir(d) => d.lookup(d.key32(key)),
            Index::Wald(w) => w.lookup(key),
            Index::Tss(t) => match (&self.cache, self.cache_on) {
                (Some(c), true) => match words::nwords(key.len()) {
                    1 => self.cached(c, t, &words::fixed::<1>(key), key),
                    2 => self.cached(c, t, &words::fixed::<2>(key), key),
                    3 => self.cached(c, t, &words::fixed::<3>(key), key),
                    4 => self.cached(c, t, &words::fixed::<4>(key), key),
                    n => self.cached(c, t, &ByteWords { bytes: key, n }, key),
                },
                _ => t.lookup(key),
            },
        };
        self.resolve(idx)
    }

    /// Tuple-space lookup through the cache (`k` = `key` as words).
    #[inline(always)]
    fn cached<K: Words + ?Sized>(
        &self,
        c: &LookupCache,
        t: &Tss,
        k: &K,
        key: &[u8],
    ) -> Option<u32> {
        let h = c.hash(k);
        if let Some(r) = c.get(k, h, self.generation) {
            return r;
        }
        let r = t.lookup(key);
        c.put(k, h, self.generation, r);
        r
    }

    /// Batched cached tuple-space lookup of keys of `W` words: hash every key
    /// of a stage and prefetch its cache set, then answer each key. Skips the
    /// cache while it keeps missing (see `LookupCache::bypass`).
    #[inline(always)]
    fn cached_batch<'a, const W: usize>(
        &'a self,
        c: &LookupCache,
        t: &Tss,
        keys: &[u8],
        n: usize,
        mut emit: impl FnMut(usize, Option<(EntryHandle, &'a V)>),
    ) {
        let kb = self.key_bytes;
        let d = self.stage_keys();
        if c.bypass() {
            c.record_skip(n);
            t.lookup_each(keys, n, d, |i, r| emit(i, self.resolve(r)));
            return;
        }
        let mut hs = [0u64; exact::MAX_BATCH];
        let mut ks = [[0u64; W]; exact::MAX_BATCH];
        let mut hits = 0;
        let mut i = 0;
        while i < n {
            let m = (n - i).min(d);
            for (j, (h, k)) in hs.iter_mut().zip(ks.iter_mut()).enumerate().take(m) {
                *k = words::fixed_in::<W>(keys, (i + j) * kb, kb);
                *h = c.hash(k);
                c.prefetch(*h);
            }
            for (j, (h, k)) in hs.iter().zip(ks.iter()).enumerate().take(m) {
                let r = match c.get(k, *h, self.generation) {
                    Some(r) => {
                        hits += 1;
                        r
                    }
                    None => {
                        let r = t.lookup(&keys[(i + j) * kb..(i + j + 1) * kb]);
                        c.put(k, *h, self.generation, r);
                        r
                    }
                };
                emit(i + j, self.resolve(r));
            }
            i += m;
        }
        c.record(hits, n);
    }

    /// Batched lookup of `n = min(keys.len() / key_bytes(), out.len())` keys
    /// packed back to back (for a key-less table, `n = out.len()`). Results
    /// go to `out[..n]`, identical to calling [`Table::lookup`] on each key.
    /// Exact and DIR tables work in stages of `prefetch_distance()` keys:
    /// hash/index all keys, prefetch buckets, prefetch the candidate entries,
    /// then resolve; ternary/range tables prefetch the lookup-cache sets of a
    /// stage; large wide-LPM tables run a stage's binary searches in lock
    /// step with prefetching. No allocation.
    pub fn lookup_batch<'a>(&'a self, keys: &[u8], out: &mut [Option<(EntryHandle, &'a V)>]) {
        let n = out.len();
        self.lookup_batch_each(keys, n, |i, r| out[i] = r);
    }

    /// [`Table::lookup_batch`] with each result handed to `emit(i, result)` (once per
    /// key `i` of `n = min(keys.len() / key_bytes(), max)`, in no promised order)
    /// instead of written to a slice: for a caller that turns results into its own
    /// form without a buffer of them in between.
    #[inline]
    pub fn lookup_batch_each<'a>(
        &'a self,
        keys: &[u8],
        max: usize,
        mut emit: impl FnMut(usize, Option<(EntryHandle, &'a V)>),
    ) {
        let kb = self.key_bytes;
        let n = keys.len().checked_div(kb).map_or(max, |n| n.min(max));
        let stage = self.stage_keys();
        match &self.index {
            Index::Exact(x) => x.lookup_batch(
                keys,
                n,
                stage,
                |c| prefetch::prefetch_index(&self.slots, c as usize),
                |i, r| emit(i, self.resolve(r)),
            ),
            Index::Dir(d) => d.lookup_batch(
                keys,
                kb,
                n,
                stage,
                |r| prefetch::prefetch_index(&self.slots, r as usize),
                |i, r| emit(i, self.resolve(r)),
            ),
            // lock-step pays once the levels outgrow the caches; below, its
            // bookkeeping costs more than it saves (measured: 10K routes
            // 153 -> 191 ns, 30K 229 -> 189, 100K 1045 -> 259)
            Index::Wald(w) if self.len >= WALD_BATCH_MIN => {
                w.lookup_batch(keys, n, stage, |i, r| emit(i, self.resolve(r)))
            }
            Index::Wald(w) => {
                for i in 0..n {
                    emit(i, self.resolve(w.lookup(&keys[i * kb..(i + 1) * kb])));
                }
            }
            Index::Tss(t) => match (&self.cache, self.cache_on) {
                (Some(c), true) if kb > 0 => match words::nwords(kb) {
                    1 => self.cached_batch::<1>(c, t, keys, n, emit),
                    2 => self.cached_batch::<2>(c, t, keys, n, emit),
                    3 => self.cached_batch::<3>(c, t, keys, n, emit),
                    4 => self.cached_batch::<4>(c, t, keys, n, emit),
                    nw => {
                        for i in 0..n {
                            let key = &keys[i * kb..(i + 1) * kb];
                            emit(
                                i,
                                self.resolve(self.cached(
                                    c,
                                    t,
                                    &ByteWords { bytes: key, n: nw },
                                    key,
                                )),
                            );
                        }
                    }
                },
                _ => t.lookup_each(keys, n, stage, |i, r| emit(i, self.resolve(r))),
            },
        }
    }

    /// Whether [`Table::lookup_batch_values`] reads shared values: the table shares its
    /// values ([`Table::share_values`]), is exact or LPM, holds at least 32,768
    /// entries (the slots of fewer stay in the caches: reading them is cheaper than
    /// the shared lookup's test and load per key) and at least 8 per distinct value
    /// (else the values are hardly fewer lines than the slots). Else it answers from
    /// the entries' slots.
    #[inline]
    pub fn looks_up_shared(&self) -> bool {
        self.shared
            .as_ref()
            .is_some_and(|sh| sh.distinct() * 8 <= self.len)
            && matches!(self.index, Index::Exact(_) | Index::Dir(_))
            && self.len >= SHARED_LOOKUP_MIN
    }

    /// [`Table::lookup_batch_each`] for a caller that needs each found entry's value,
    /// not its handle: `emit(i, Some((entry index, value)))`. Where
    /// [`Table::looks_up_shared`], an entry's value is its shared copy, read without
    /// the entry's slot.
    #[inline]
    pub fn lookup_batch_values<'a>(
        &'a self,
        keys: &[u8],
        max: usize,
        mut emit: impl FnMut(usize, Option<(u32, &'a V)>),
    ) {
        let sh = match &self.shared {
            Some(sh) if self.looks_up_shared() => sh,
            _ => {
                return self.lookup_batch_each(keys, max, |i, r| {
                    emit(i, r.map(|(h, v)| (h & HANDLE_INDEX_MASK, v)))
                });
            }
        };
        let kb = self.key_bytes;
        let n = keys.len().checked_div(kb).map_or(max, |n| n.min(max));
        let stage = self.stage_keys();
        // an entry's shared value, else its slot's (prefetched instead)
        let value = |idx: u32| match sh.get(idx) {
            Some(v) => Some((idx, v)),
            None => self.resolve(Some(idx)).map(|(_, v)| (idx, v)),
        };
        let pre = |idx: u32| match sh.of.get(idx as usize) {
            Some(&c) if c != shared::NOT_SHARED => {}
            _ => prefetch::prefetch_whole(&self.slots, idx as usize),
        };
        match &self.index {
            Index::Exact(x) => {
                x.lookup_batch(keys, n, stage, pre, |i, r| emit(i, r.and_then(value)))
            }
            Index::Dir(d) => {
                d.lookup_batch(keys, kb, n, stage, pre, |i, r| emit(i, r.and_then(value)))
            }
            // (`looks_up_shared` holds only for the two above)
            _ => self.lookup_batch_each(keys, max, |i, r| {
                emit(i, r.map(|(h, v)| (h & HANDLE_INDEX_MASK, v)))
            }),
        }
    }

    /// Distinct values the table's entries share now ([`Table::share_values`]).
    pub fn shared_values(&self) -> usize {
        self.shared.as_ref().map_or(0, Shared::distinct)
    }

    /// Approximate heap + inline memory used by the table, in bytes.
    pub fn memory_bytes(&self) -> usize {
        let key_heap: usize = self
            .keys
            .iter()
            .flatten()
            .map(|k| {
                k.fields.capacity() * std::mem::size_of::<FieldMatch>()
                    + k.fields
                        .iter()
                        .map(|f| match f {
                            FieldMatch::Exact(v) | FieldMatch::Lpm { value: v, .. } => v.capacity(),
                            FieldMatch::Ternary { value, mask } => {
                                value.capacity() + mask.capacity()
                            }
                            FieldMatch::Range { low, high } => low.capacity() + high.capacity(),
                            FieldMatch::Valid(_) => 0,
                        })
                        .sum::<usize>()
            })
            .sum();
        let index = match &self.index {
            Index::Exact(x) => x.memory_bytes(),
            Index::Dir(d) => d.memory_bytes(),
            Index::Wald(w) => w.memory_bytes(),
            Index::Tss(t) => t.memory_bytes(),
        } + self.cache.as_ref().map_or(0, LookupCache::memory_bytes);
        std::mem::size_of::<Self>()
            + self.slots.capacity() * std::mem::size_of::<Slot<V>>()
            + self.keys.capacity() * std::mem::size_of::<Option<MatchKey>>()
            + self.free.len() * 8
            + key_heap
            + index
            + self.shared.as_ref().map_or(0, Shared::memory_bytes)
    }

    /// Diagnostics of a ternary/range lookup of `key`: (tuples, tuples left
    /// after the per-field length bounds, of those the ones that pass the
    /// filter); `None` for other tables.
    #[doc(hidden)]
    pub fn probe_counts(&self, key: &[u8]) -> Option<(usize, usize, usize)> {
        match &self.index {
            Index::Tss(t) if key.len() == self.key_bytes => Some(t.probe_counts(key)),
            _ => None,
        }
    }

    /// Index of the LPM field of an LPM table.
    pub fn lpm_field(&self) -> Option<usize> {
        self.lpm_field
    }
}

/// `pack_lpm` without `&self` (the layout only depends on the key).
fn pack_lpm_free(k: &MatchKey) -> (Vec<u8>, u32) {
    let mut p = Vec::new();
    let mut len = 0;
    for m in &k.fields {
        match m {
            FieldMatch::Exact(v) => p.extend_from_slice(v),
            FieldMatch::Valid(b) => p.push(u8::from(*b)),
            FieldMatch::Lpm { value, prefix_len } => {
                p.extend_from_slice(value);
                len = *prefix_len;
            }
            _ => {}
        }
    }
    (p, len)
}

/// Mask of the leading bits shared by every value of `[low, min(high, wm)]`
/// (their common prefix): hashed, so that checked range entries are spread
/// over chains by that prefix instead of all sharing one chain.
fn range_common_prefix_mask(low: &[u8], high: &[u8], wm: &[u8]) -> Vec<u8> {
    let mut m = vec![0u8; low.len()];
    let above = high > wm;
    for i in 0..low.len() {
        let h = if above { wm[i] } else { high[i] };
        let diff = low[i] ^ h;
        if diff == 0 {
            m[i] = wm[i];
            continue;
        }
        m[i] = !(0xffu8 >> diff.leading_zeros()) & wm[i];
        break;
    }
    m
}

/// If the range `[low, high]` (container bytes; keys never exceed the
/// field's width mask `wm`) is exactly one aligned power-of-two block, the
/// mask selecting it; else `None`. Fields wider than 128 bits always `None`.
fn range_block_mask(low: &[u8], high: &[u8], wm: &[u8]) -> Option<Vec<u8>> {
    let n = low.len();
    if n > 16 {
        return None;
    }
    let to = |b: &[u8]| b.iter().fold(0u128, |a, x| (a << 8) | u128::from(*x));
    let lo = to(low);
    let wmax = to(wm);
    let hi = to(high).min(wmax);
    if lo > hi {
        return None;
    }
    let span = hi - lo; // size - 1
    // size must be a power of two: span + 1 = 2^k, i.e. span is all ones
    if span.checked_add(1).is_some_and(|s| !s.is_power_of_two()) {
        return None;
    }
    if lo & span != 0 {
        return None;
    }
    let m = !span & wmax;
    let bytes = m.to_be_bytes();
    Some(bytes[16 - n..].to_vec())
}
