//! Values shared by a table's entries ([`crate::Table::share_values`]).
//!
//! Many entries of a large table carry the same value: 100K routes point at a few
//! dozen next hops, a million MAC addresses at a few ports. A batched lookup of such a
//! table on traffic without locality finds a different entry for every packet, and
//! reading the entry's slot (48 bytes, one of 100K) is a cache miss the prefetch stages
//! hide only in part. With shared values each distinct value is kept once, and a
//! lookup reads the value's number (2 bytes per entry, an array that stays in the
//! caches) and the value itself (one of a few, all cached) instead of the slot.
//!
//! Values are found by the key function's 64-bit summary and compared with the
//! equality given to `share_values`. At most [`SHARED_MAX`] distinct values are
//! shared; the entries of the others, of values the key function declines and of a
//! value whose summary a different shared value has, are read from their slots as
//! before.

use std::collections::HashMap;

/// An entry whose value is not shared.
pub(crate) const NOT_SHARED: u16 = u16::MAX;

/// Most distinct values shared by one table: enough for next hops and ports, few
/// enough for the values to stay in the caches (and for a table of distinct values,
/// which never reads them, to keep few).
pub const SHARED_MAX: usize = 1024;

#[derive(Clone)]
pub(crate) struct Shared<V> {
    /// A value's summary, or None: the value is not shared.
    key: fn(&V) -> Option<u64>,
    eq: fn(&V, &V) -> bool,
    /// Per entry slot: the number of its shared value, or [`NOT_SHARED`].
    pub(crate) of: Vec<u16>,
    /// The shared values and how many entries use each (0: a free number).
    values: Vec<(V, u32)>,
    /// Summary -> the shared value with it.
    by_key: HashMap<u64, u16>,
    free: Vec<u16>,
}

impl<V: Clone> Shared<V> {
    pub(crate) fn new(key: fn(&V) -> Option<u64>, eq: fn(&V, &V) -> bool) -> Self {
        Shared {
            key,
            eq,
            of: Vec::new(),
            values: Vec::new(),
            by_key: HashMap::new(),
            free: Vec::new(),
        }
    }

    /// Entry `idx` now holds `v` (it held no shared value).
    pub(crate) fn add(&mut self, idx: u32, v: &V) {
        let i = idx as usize;
        if self.of.len() <= i {
            self.of.resize(i + 1, NOT_SHARED);
        }
        debug_assert_eq!(self.of[i], NOT_SHARED);
        let Some(k) = (self.key)(v) else {
            return;
        };
        if let Some(&c) = self.by_key.get(&k) {
            let (w, n) = &mut self.values[usize::from(c)];
            if (self.eq)(w, v) {
                *n += 1;
                self.of[i] = c;
            }
            // (else another value has this summary: this one stays in its slot)
            return;
        }
        let c = match self.free.pop() {
            Some(c) => {
                self.values[usize::from(c)] = (v.clone(), 1);
                c
            }
            None if self.values.len() < SHARED_MAX => {
                self.values.push((v.clone(), 1));
                (self.values.len() - 1) as u16
            }
            // as many distinct values as shared ones: this one stays in its slot
            None => return,
        };
        self.by_key.insert(k, c);
        self.of[i] = c;
    }

    /// Entry `idx` no longer holds its value.
    pub(crate) fn remove(&mut self, idx: u32) {
        let Some(c) = self.of.get_mut(idx as usize) else {
            return;
        };
        let c = std::mem::replace(c, NOT_SHARED);
        if c == NOT_SHARED {
            return;
        }
        let (v, n) = &mut self.values[usize::from(c)];
        *n -= 1;
        if *n > 0 {
            return;
        }
        if let Some(k) = (self.key)(v) {
            self.by_key.remove(&k);
        }
        self.free.push(c);
    }

    /// The shared value of entry `idx`, if it has one.
    #[inline(always)]
    pub(crate) fn get(&self, idx: u32) -> Option<&V> {
        let c = *self.of.get(idx as usize)?;
        if c == NOT_SHARED {
            return None;
        }
        self.values.get(usize::from(c)).map(|(v, _)| v)
    }

    pub(crate) fn clear(&mut self) {
        *self = Shared::new(self.key, self.eq);
    }

    /// Distinct values shared now.
    #[inline]
    pub(crate) fn distinct(&self) -> usize {
        self.values.len() - self.free.len()
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.of.capacity() * 2
            + self.values.capacity() * std::mem::size_of::<(V, u32)>()
            + self.by_key.capacity() * 16
            + self.free.capacity() * 2
    }
}
