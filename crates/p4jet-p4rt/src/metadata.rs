//! The controller's own data on entities: `TableEntry.metadata` (and the deprecated
//! `controller_metadata`) and `MulticastGroupEntry.metadata`. The switch never looks
//! at them; P4Runtime keeps them so that a controller reads back what it wrote
//! (ONOS and SONiC keep cookies there). They live here, beside the runtime model,
//! because no other front end has them.
//!
//! Entry data is kept by table and entry handle, with the entry's key as the model
//! reports it: an entry is shown its data only while handle and key still match, so
//! an entry that later takes the same handle (bmv2 handles are reused, with a
//! version) is never shown another's data.

use std::collections::HashMap;

use p4jet_runtime::{EntryHandle, MatchKey, TableEntry, TableId};

/// A table entry's controller data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryMeta {
    /// `TableEntry.metadata`.
    pub metadata: Vec<u8>,
    /// `TableEntry.controller_metadata` (deprecated since P4Runtime 1.2).
    pub controller_metadata: u64,
}

impl EntryMeta {
    /// Whether there is nothing to keep.
    pub fn is_empty(&self) -> bool {
        self.metadata.is_empty() && self.controller_metadata == 0
    }
}

/// Controller data of the entries and multicast groups of one device.
#[derive(Debug, Default)]
pub struct ControllerData {
    entries: HashMap<TableId, HashMap<EntryHandle, (MatchKey, EntryMeta)>>,
    groups: HashMap<u32, Vec<u8>>,
}

impl ControllerData {
    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.groups.is_empty()
    }

    /// Whether any entry of table `t` has data (else updates of the table need no
    /// bookkeeping).
    pub fn has_table(&self, t: TableId) -> bool {
        self.entries.get(&t).is_some_and(|m| !m.is_empty())
    }

    /// Sets (or, with empty `meta`, forgets) the data of the entry `e` of table `t`.
    pub fn set_entry(&mut self, t: TableId, e: &TableEntry, meta: EntryMeta) {
        if meta.is_empty() {
            self.remove_entry(t, e.handle);
        } else {
            self.entries
                .entry(t)
                .or_default()
                .insert(e.handle, (e.key.clone(), meta));
        }
    }

    /// Forgets the data of entry `h` of table `t`.
    pub fn remove_entry(&mut self, t: TableId, h: EntryHandle) {
        if let Some(m) = self.entries.get_mut(&t) {
            m.remove(&h);
            if m.is_empty() {
                self.entries.remove(&t);
            }
        }
    }

    /// The data of entry `e` of table `t`, if it is the entry that was given it.
    pub fn entry(&self, t: TableId, e: &TableEntry) -> Option<&EntryMeta> {
        self.entries
            .get(&t)?
            .get(&e.handle)
            .filter(|(k, _)| *k == e.key)
            .map(|(_, m)| m)
    }

    /// Takes the data of every entry (a new program replaces the entries).
    pub fn take_entries(
        &mut self,
    ) -> HashMap<TableId, HashMap<EntryHandle, (MatchKey, EntryMeta)>> {
        std::mem::take(&mut self.entries)
    }

    /// Sets (or, with empty `meta`, forgets) the data of multicast group `id`.
    pub fn set_group(&mut self, id: u32, meta: Vec<u8>) {
        if meta.is_empty() {
            self.groups.remove(&id);
        } else {
            self.groups.insert(id, meta);
        }
    }

    /// The data of multicast group `id`.
    pub fn group(&self, id: u32) -> Option<&[u8]> {
        self.groups.get(&id).map(Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use p4jet_runtime::{EntryAction, FieldMatch};

    fn entry(h: u32, k: u8) -> TableEntry {
        TableEntry {
            handle: EntryHandle(h),
            key: MatchKey::new(vec![FieldMatch::Exact(vec![k])]),
            action: EntryAction::Member(p4jet_runtime::MemberId(1)),
            ttl: None,
            is_const: false,
        }
    }

    #[test]
    fn entries_keep_their_data_by_handle_and_key() {
        let mut d = ControllerData::default();
        let t = TableId(1);
        let m = EntryMeta {
            metadata: b"cookie".to_vec(),
            controller_metadata: 0,
        };
        d.set_entry(t, &entry(5, 1), m.clone());
        assert!(d.has_table(t));
        assert_eq!(d.entry(t, &entry(5, 1)), Some(&m));
        // the same handle under another key: not this entry
        assert_eq!(d.entry(t, &entry(5, 2)), None);
        // empty data forgets
        d.set_entry(t, &entry(5, 1), EntryMeta::default());
        assert!(!d.has_table(t));
        d.set_group(3, b"g".to_vec());
        assert_eq!(d.group(3), Some(&b"g"[..]));
        d.set_group(3, vec![]);
        assert_eq!(d.group(3), None);
    }
}
