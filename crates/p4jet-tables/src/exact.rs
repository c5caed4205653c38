//! Exact-match index: bucketed open addressing on the packed key, keys stored
//! inline in one packed arena indexed by entry index.

use crate::hash::{HashIndex, hash_at, hash_bytes, short_eq};
use crate::prefetch::prefetch_index;

/// Largest sub-batch handled in one go by `lookup_batch`.
pub(crate) const MAX_BATCH: usize = 64;

#[derive(Clone)]
pub(crate) struct ExactIndex {
    kb: usize,
    /// Packed keys, `kb` bytes per entry index (stale bytes for free indexes).
    keys: Vec<u8>,
    map: HashIndex,
}

impl ExactIndex {
    pub(crate) fn new(kb: usize) -> Self {
        ExactIndex {
            kb,
            keys: Vec::new(),
            map: HashIndex::default(),
        }
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.keys.capacity() + self.map.memory_bytes()
    }

    pub(crate) fn clear(&mut self) {
        self.keys = Vec::new();
        self.map.clear();
    }

    /// The packed key stored for `id`.
    pub(crate) fn key(&self, id: u32) -> Option<&[u8]> {
        let s = id as usize * self.kb;
        self.keys.get(s..s + self.kb)
    }

    #[inline(always)]
    fn key_of(keys: &[u8], kb: usize, id: u32) -> &[u8] {
        let s = id as usize * kb;
        &keys[s..s + kb]
    }

    #[inline]
    pub(crate) fn find(&self, key: &[u8]) -> Option<u32> {
        self.find_hashed(hash_bytes(key), key)
    }

    #[inline(always)]
    fn find_hashed(&self, h: u64, key: &[u8]) -> Option<u32> {
        let (keys, kb) = (&self.keys, self.kb);
        self.map
            .find(h, |id| short_eq(Self::key_of(keys, kb, id), key))
    }

    /// Room for ids below `ids` and for `len` keys in the map.
    pub(crate) fn reserve(&mut self, ids: usize, len: usize) {
        let kb = self.kb;
        self.keys
            .reserve_exact((ids * kb).saturating_sub(self.keys.len()));
        let keys = &self.keys;
        self.map
            .reserve(len, |x| hash_bytes(Self::key_of(keys, kb, x)));
    }

    pub(crate) fn insert(&mut self, id: u32, key: &[u8]) {
        let kb = self.kb;
        let end = (id as usize + 1) * kb;
        if self.keys.len() < end {
            self.keys.resize(end, 0);
        }
        self.keys[end - kb..end].copy_from_slice(key);
        let keys = &self.keys;
        self.map.insert(hash_bytes(key), id, |x| {
            hash_bytes(Self::key_of(keys, kb, x))
        });
    }

    pub(crate) fn remove(&mut self, id: u32) {
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
        if self.map.is_small() {
            // a few KiB of buckets and keys: no prefetch stages
            for i in 0..n {
                let h = hash_at(keys, i * kb, kb);
                emit(i, self.find_hashed(h, &keys[i * kb..(i + 1) * kb]));
            }
            return;
        }
        let dist = dist.clamp(1, MAX_BATCH);
        let mut hashes = [0u64; MAX_BATCH];
        let mut start = 0;
        while start < n {
            let m = dist.min(n - start);
            for (i, h) in hashes.iter_mut().enumerate().take(m) {
                *h = hash_at(keys, (start + i) * kb, kb);
                self.map.prefetch(*h);
            }
            for h in hashes.iter().take(m) {
                if let Some(c) = self.map.first_candidate(*h) {
                    prefetch_index(&self.keys, c as usize * kb);
                    prefetch_entry(c);
                }
            }
            for (i, h) in hashes.iter().enumerate().take(m) {
                let k = &keys[(start + i) * kb..(start + i + 1) * kb];
                emit(start + i, self.find_hashed(*h, k));
            }
            start += m;
        }
    }
}
