//! Exact-match index: bucketed open addressing on the packed key, keys stored
//! inline in one packed arena indexed by entry index.

use std::borrow::Cow;

use crate::hash::{HashIndex, hash_at, hash_bytes, hash_word, short_eq};
use crate::prefetch::prefetch_index;
use crate::words::word_in;

/// Largest sub-batch handled in one go by `lookup_batch`.
pub(crate) const MAX_BATCH: usize = 64;

/// Batches of at most this many keys are looked up key by key, without the prefetch
/// stages (too few keys for their misses to overlap).
pub(crate) const SMALL_BATCH_MAX: usize = 2;

/// Keys of at most this many bytes are looked up in a direct array (one slot per key
/// value) instead of the hash.
pub(crate) const DIRECT_MAX_KEY_BYTES: usize = 2;

/// Keys of more than [`DIRECT_MAX_KEY_BYTES`] and at most this many bytes are held as
/// one word each: hashed with one multiplication, compared as one integer.
pub(crate) const WORD_MAX_KEY_BYTES: usize = 8;

/// An empty slot of the direct array.
const NO_ID: u32 = u32::MAX;

#[derive(Clone)]
pub(crate) struct ExactIndex {
    kb: usize,
    /// Packed keys, `kb` bytes per entry index (stale bytes for free indexes), for
    /// keys that are not word keys.
    keys: Vec<u8>,
    /// Word keys (3 to [`WORD_MAX_KEY_BYTES`] bytes: a MAC address, an IPv4 address):
    /// the key's bytes read little-endian, one word per entry index.
    words: Vec<u64>,
    /// Hash for keys of more than [`DIRECT_MAX_KEY_BYTES`] bytes.
    map: HashIndex,
    /// For narrower keys (a port, an EtherType, a VLAN id), the entry id per key
    /// value read as a big-endian number, [`NO_ID`] when none: one load per lookup,
    /// 256 KiB at most; allocated with the first entry.
    direct: Vec<u32>,
}

/// The direct-array slot of a key of at most [`DIRECT_MAX_KEY_BYTES`] bytes.
#[inline(always)]
fn direct_slot(key: &[u8]) -> usize {
    match *key {
        [a] => a as usize,
        [a, b] => (a as usize) << 8 | b as usize,
        _ => 0,
    }
}

impl ExactIndex {
    pub(crate) fn new(kb: usize) -> Self {
        ExactIndex {
            kb,
            keys: Vec::new(),
            words: Vec::new(),
            map: HashIndex::default(),
            direct: Vec::new(),
        }
    }

    /// Whether keys go to the direct array.
    #[inline(always)]
    fn is_direct(&self) -> bool {
        self.kb <= DIRECT_MAX_KEY_BYTES
    }

    /// Whether keys are word keys.
    #[inline(always)]
    fn is_word(&self) -> bool {
        self.kb > DIRECT_MAX_KEY_BYTES && self.kb <= WORD_MAX_KEY_BYTES
    }

    /// A key of `self.kb` bytes as a word key.
    #[inline(always)]
    fn word_of(&self, key: &[u8]) -> u64 {
        word_in(key, 0, self.kb)
    }

    /// The word key of entry `id` (0 past the end).
    #[inline(always)]
    fn word_at(words: &[u64], id: u32) -> u64 {
        words.get(id as usize).copied().unwrap_or(0)
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.keys.capacity()
            + 8 * self.words.capacity()
            + self.map.memory_bytes()
            + 4 * self.direct.capacity()
    }

    pub(crate) fn clear(&mut self) {
        self.keys = Vec::new();
        self.words = Vec::new();
        self.map.clear();
        self.direct = Vec::new();
    }

    /// The packed key stored for `id`.
    pub(crate) fn key(&self, id: u32) -> Option<Cow<'_, [u8]>> {
        if self.is_word() {
            let w = self.words.get(id as usize)?;
            return Some(Cow::Owned(w.to_le_bytes()[..self.kb].to_vec()));
        }
        let s = id as usize * self.kb;
        self.keys.get(s..s + self.kb).map(Cow::Borrowed)
    }

    #[inline(always)]
    fn key_of(keys: &[u8], kb: usize, id: u32) -> &[u8] {
        let s = id as usize * kb;
        &keys[s..s + kb]
    }

    #[inline]
    pub(crate) fn find(&self, key: &[u8]) -> Option<u32> {
        if self.is_direct() {
            return self.find_direct(key);
        }
        if self.is_word() {
            let w = self.word_of(key);
            return self.find_word(hash_word(w), w);
        }
        self.find_hashed(hash_bytes(key), key)
    }

    /// The id stored for word key `w` with hash `h`.
    #[inline(always)]
    fn find_word(&self, h: u64, w: u64) -> Option<u32> {
        let words = &self.words;
        self.map.find(h, |id| Self::word_at(words, id) == w)
    }

    /// The id stored for a key of at most [`DIRECT_MAX_KEY_BYTES`] bytes.
    #[inline(always)]
    fn find_direct(&self, key: &[u8]) -> Option<u32> {
        match self.direct.get(direct_slot(key)) {
            Some(&id) if id != NO_ID => Some(id),
            _ => None,
        }
    }

    /// The id stored for a key of more than [`DIRECT_MAX_KEY_BYTES`] bytes with hash `h`.
    #[inline(always)]
    fn find_hashed(&self, h: u64, key: &[u8]) -> Option<u32> {
        let (keys, kb) = (&self.keys, self.kb);
        self.map
            .find(h, |id| short_eq(Self::key_of(keys, kb, id), key))
    }

    /// Room for ids below `ids` and for `len` keys in the map.
    pub(crate) fn reserve(&mut self, ids: usize, len: usize) {
        let kb = self.kb;
        if self.is_word() {
            self.words
                .reserve_exact(ids.saturating_sub(self.words.len()));
            let words = &self.words;
            self.map
                .reserve(len, |x| hash_word(Self::word_at(words, x)));
            return;
        }
        self.keys
            .reserve_exact((ids * kb).saturating_sub(self.keys.len()));
        if self.is_direct() {
            return;
        }
        let keys = &self.keys;
        self.map
            .reserve(len, |x| hash_bytes(Self::key_of(keys, kb, x)));
    }

    pub(crate) fn insert(&mut self, id: u32, key: &[u8]) {
        let kb = self.kb;
        if self.is_word() {
            let w = self.word_of(key);
            if self.words.len() <= id as usize {
                self.words.resize(id as usize + 1, 0);
            }
            self.words[id as usize] = w;
            let words = &self.words;
            self.map
                .insert(hash_word(w), id, |x| hash_word(Self::word_at(words, x)));
            return;
        }
        let end = (id as usize + 1) * kb;
        if self.keys.len() < end {
            self.keys.resize(end, 0);
        }
        self.keys[end - kb..end].copy_from_slice(key);
        if self.is_direct() {
            if self.direct.is_empty() {
                self.direct = vec![NO_ID; 1 << (8 * kb)];
            }
            self.direct[direct_slot(key)] = id;
            return;
        }
        let keys = &self.keys;
        self.map.insert(hash_bytes(key), id, |x| {
            hash_bytes(Self::key_of(keys, kb, x))
        });
    }

    pub(crate) fn remove(&mut self, id: u32) {
        if self.is_word() {
            let removed = self
                .map
                .remove(hash_word(Self::word_at(&self.words, id)), id);
            debug_assert!(removed);
            return;
        }
        if self.is_direct() {
            let slot = direct_slot(Self::key_of(&self.keys, self.kb, id));
            debug_assert_eq!(self.direct.get(slot), Some(&id));
            if let Some(d) = self.direct.get_mut(slot) {
                *d = NO_ID;
            }
            return;
        }
        let h = hash_bytes(Self::key_of(&self.keys, self.kb, id));
        let removed = self.map.remove(h, id);
        debug_assert!(removed);
    }

    /// Batched lookup of `n` keys packed in `keys`. For each sub-batch of at
    /// most `dist` keys: hash every key and prefetch its bucket; then read each
    /// bucket's first signature candidate and prefetch that key (and, through
    /// `prefetch_entry`, the caller's entry); then resolve. `emit(i, id)`
    /// receives the result of key `i`.
    pub(crate) fn lookup_batch(
        &self,
        keys: &[u8],
        n: usize,
        dist: usize,
        prefetch_entry: impl Fn(u32),
        mut emit: impl FnMut(usize, Option<u32>),
    ) {
        let kb = self.kb;
        if self.is_direct() {
            let direct = &self.direct;
            let at = |slot: usize| match direct.get(slot) {
                Some(&id) if id != NO_ID => Some(id),
                _ => None,
            };
            match kb {
                2 => {
                    for (i, k) in keys.as_chunks::<2>().0.iter().take(n).enumerate() {
                        emit(i, at(usize::from(u16::from_be_bytes(*k))));
                    }
                }
                1 => {
                    for (i, &k) in keys.iter().take(n).enumerate() {
                        emit(i, at(usize::from(k)));
                    }
                }
                _ => {
                    for i in 0..n {
                        emit(i, self.find_direct(&keys[i * kb..(i + 1) * kb]));
                    }
                }
            }
            return;
        }
        if self.is_word() {
            return self.lookup_words(keys, n, dist, prefetch_entry, emit);
        }
        self.staged(
            n,
            dist,
            |i| (hash_at(keys, i * kb, kb), ()),
            |c| prefetch_index(&self.keys, c as usize * kb),
            prefetch_entry,
            |i, h, ()| self.find_hashed(h, &keys[i * kb..(i + 1) * kb]),
            emit,
        );
    }

    /// [`ExactIndex::lookup_batch`] for word keys: each key read once as a word,
    /// hashed by one multiplication and compared as one integer.
    fn lookup_words(
        &self,
        keys: &[u8],
        n: usize,
        dist: usize,
        prefetch_entry: impl Fn(u32),
        emit: impl FnMut(usize, Option<u32>),
    ) {
        let kb = self.kb;
        self.staged(
            n,
            dist,
            |i| {
                let w = word_in(keys, i * kb, kb);
                (hash_word(w), w)
            },
            |c| prefetch_index(&self.words, c as usize),
            prefetch_entry,
            |_, h, w| self.find_word(h, w),
            emit,
        );
    }

    /// The lookup stages of both key forms. `prep(i)` gives key `i`'s hash and what
    /// `find(i, hash, it)` resolves it with. A small index (a few KiB of buckets and
    /// keys) is probed key by key; a larger one per sub-batch of at most `dist` keys:
    /// every key hashed and its bucket prefetched, then each bucket's first signature
    /// candidate's key (`prefetch_key`) and the caller's entry (`prefetch_entry`)
    /// prefetched, then every key resolved.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn staged<K: Copy + Default>(
        &self,
        n: usize,
        dist: usize,
        prep: impl Fn(usize) -> (u64, K),
        prefetch_key: impl Fn(u32),
        prefetch_entry: impl Fn(u32),
        find: impl Fn(usize, u64, K) -> Option<u32>,
        mut emit: impl FnMut(usize, Option<u32>),
    ) {
        if self.map.is_small() || n <= SMALL_BATCH_MAX {
            for i in 0..n {
                let (h, k) = prep(i);
                emit(i, find(i, h, k));
            }
            return;
        }
        let dist = dist.clamp(1, MAX_BATCH);
        let mut stage = [(0u64, K::default()); MAX_BATCH];
        let mut start = 0;
        while start < n {
            let m = dist.min(n - start);
            for (i, s) in stage.iter_mut().enumerate().take(m) {
                *s = prep(start + i);
                self.map.prefetch(s.0);
            }
            for &(h, _) in stage.iter().take(m) {
                if let Some(c) = self.map.first_candidate(h) {
                    prefetch_key(c);
                    prefetch_entry(c);
                }
            }
            for (i, &(h, k)) in stage.iter().enumerate().take(m) {
                emit(start + i, find(start + i, h, k));
            }
            start += m;
        }
    }
}
