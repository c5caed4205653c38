//! Unit tests of bmv2's observable rules: handle numbering, duplicates,
//! TableFull, BadMatchKey, LPM deletion fallback, priorities.
#![allow(clippy::unwrap_used)]

use p4jet_tables::{
    CacheMode, FieldMatch, KeyFieldSpec, MatchKey, MatchKind, Table, TableError, TableKind,
};

fn spec(kind: MatchKind, bit_width: u32) -> KeyFieldSpec {
    KeyFieldSpec { kind, bit_width }
}

fn ex(v: &[u8]) -> FieldMatch {
    FieldMatch::Exact(v.to_vec())
}

fn lpm(v: &[u8], l: u32) -> FieldMatch {
    FieldMatch::Lpm {
        value: v.to_vec(),
        prefix_len: l,
    }
}

fn tern(v: &[u8], m: &[u8]) -> FieldMatch {
    FieldMatch::Ternary {
        value: v.to_vec(),
        mask: m.to_vec(),
    }
}

fn range(lo: &[u8], hi: &[u8]) -> FieldMatch {
    FieldMatch::Range {
        low: lo.to_vec(),
        high: hi.to_vec(),
    }
}

fn key(fields: Vec<FieldMatch>) -> MatchKey {
    MatchKey {
        fields,
        priority: 0,
    }
}

fn pkey(fields: Vec<FieldMatch>, priority: i32) -> MatchKey {
    MatchKey { fields, priority }
}

#[test]
fn table_kind_derivation() {
    let k = |f: Vec<KeyFieldSpec>| Table::<u8>::new(f, 8).unwrap().kind();
    assert_eq!(k(vec![]), TableKind::Exact);
    assert_eq!(
        k(vec![spec(MatchKind::Exact, 8), spec(MatchKind::Valid, 1)]),
        TableKind::Exact
    );
    assert_eq!(
        k(vec![spec(MatchKind::Exact, 8), spec(MatchKind::Lpm, 32)]),
        TableKind::Lpm
    );
    assert_eq!(
        k(vec![spec(MatchKind::Lpm, 32), spec(MatchKind::Ternary, 8)]),
        TableKind::Ternary
    );
    assert_eq!(
        k(vec![
            spec(MatchKind::Ternary, 8),
            spec(MatchKind::Range, 8),
            spec(MatchKind::Lpm, 8)
        ]),
        TableKind::Range
    );
    // two LPM fields only work inside a ternary/range table
    assert!(matches!(
        Table::<u8>::new(vec![spec(MatchKind::Lpm, 8), spec(MatchKind::Lpm, 8)], 8),
        Err(TableError::InvalidSpec(_))
    ));
    assert!(
        Table::<u8>::new(
            vec![
                spec(MatchKind::Lpm, 8),
                spec(MatchKind::Lpm, 8),
                spec(MatchKind::Ternary, 8)
            ],
            8
        )
        .is_ok()
    );
    assert_eq!(
        Table::<u8>::new(
            vec![spec(MatchKind::Exact, 12), spec(MatchKind::Valid, 1)],
            8
        )
        .unwrap()
        .key_bytes(),
        3
    );
}

#[test]
fn structures_chosen() {
    let s = |f: Vec<KeyFieldSpec>| Table::<u8>::new(f, 8).unwrap().structure();
    assert_eq!(s(vec![spec(MatchKind::Exact, 48)]), "exact-hash");
    assert_eq!(s(vec![spec(MatchKind::Lpm, 32)]), "dir-16-8-8");
    assert_eq!(s(vec![spec(MatchKind::Lpm, 128)]), "lpm-hash-binary-search");
    assert_eq!(
        s(vec![spec(MatchKind::Exact, 8), spec(MatchKind::Lpm, 32)]),
        "lpm-hash-binary-search"
    );
    assert_eq!(s(vec![spec(MatchKind::Ternary, 8)]), "tuple-space-search");
}

#[test]
fn handle_numbering_like_bmv2() {
    let mut t = Table::new(vec![spec(MatchKind::Exact, 8)], 16).unwrap();
    let h0 = t.insert(key(vec![ex(&[0])]), "a").unwrap();
    let h1 = t.insert(key(vec![ex(&[1])]), "b").unwrap();
    let h2 = t.insert(key(vec![ex(&[2])]), "c").unwrap();
    assert_eq!((h0, h1, h2), (0, 1, 2));
    // the lowest free index is reused, with the slot's version bumped into bits 24..32
    t.delete(h1).unwrap();
    let h = t.insert(key(vec![ex(&[3])]), "d").unwrap();
    assert_eq!(h, (1 << 24) | 1);
    assert_eq!(t.insert(key(vec![ex(&[4])]), "e").unwrap(), 3);
    // the old handle is expired, an unused index is invalid
    assert_eq!(t.delete(1), Err(TableError::ExpiredHandle));
    assert_eq!(t.modify(1, "x"), Err(TableError::ExpiredHandle));
    assert_eq!(t.delete(7), Err(TableError::InvalidHandle));
    assert_eq!(t.get(1), None);
    assert_eq!(t.get(h).map(|(_, v)| *v), Some("d"));
    assert_eq!(t.lookup(&[3]), Some((h, &"d")));
    t.delete(h0).unwrap();
    t.delete(h2).unwrap();
    // two frees: lowest first
    assert_eq!(t.insert(key(vec![ex(&[5])]), "f").unwrap(), 1 << 24);
    assert_eq!(t.insert(key(vec![ex(&[6])]), "g").unwrap(), (1 << 24) | 2);
    // iteration in index order
    let hs: Vec<u32> = t.iter().map(|(h, _, _)| h).collect();
    assert_eq!(hs, vec![1 << 24, (1 << 24) | 1, (1 << 24) | 2, 3]);
    // version wraps at 256
    for _ in 0..255 {
        let h = t.iter().next().unwrap().0;
        let k = t.get(h).unwrap().0.into_owned();
        t.delete(h).unwrap();
        t.insert(k, "z").unwrap();
    }
    assert_eq!(t.iter().next().unwrap().0, 0);
    // clear resets numbering and versions
    t.clear();
    assert!(t.is_empty());
    assert_eq!(t.insert(key(vec![ex(&[9])]), "h").unwrap(), 0);
    assert_eq!(t.insert(key(vec![ex(&[8])]), "i").unwrap(), 1);
}

#[test]
fn table_full_and_error_order() {
    let mut t = Table::new(vec![spec(MatchKind::Exact, 16)], 2).unwrap();
    t.insert(key(vec![ex(&[0, 1])]), 1).unwrap();
    t.insert(key(vec![ex(&[0, 2])]), 2).unwrap();
    assert_eq!(
        t.insert(key(vec![ex(&[0, 3])]), 3),
        Err(TableError::TableFull)
    );
    // duplicate is reported before full, bad key before both
    assert_eq!(
        t.insert(key(vec![ex(&[0, 1])]), 3),
        Err(TableError::DuplicateEntry)
    );
    assert!(matches!(
        t.insert(key(vec![ex(&[1])]), 3),
        Err(TableError::BadMatchKey(_))
    ));
    t.delete(0).unwrap();
    assert_eq!(t.insert(key(vec![ex(&[0, 3])]), 3).unwrap(), 1 << 24);
    assert_eq!(t.max_size(), 2);
    assert_eq!(
        Table::<u8>::new(vec![], usize::MAX).unwrap().max_size(),
        p4jet_tables::MAX_TABLE_SIZE
    );
}

#[test]
fn bad_match_keys() {
    let mut t = Table::new(
        vec![
            spec(MatchKind::Exact, 12),
            spec(MatchKind::Lpm, 20),
            spec(MatchKind::Ternary, 8),
            spec(MatchKind::Range, 16),
        ],
        8,
    )
    .unwrap();
    let good = || {
        vec![
            ex(&[0, 1]),
            lpm(&[1, 2, 3], 20),
            tern(&[1], &[0xff]),
            range(&[0, 1], &[0, 9]),
        ]
    };
    assert!(t.insert(pkey(good(), 1), 0).is_ok());
    let cases: Vec<Vec<FieldMatch>> = vec![
        good()[..3].to_vec(),              // too few fields
        [good(), vec![ex(&[0])]].concat(), // too many
        vec![
            ex(&[1]),
            lpm(&[1, 2, 3], 20),
            tern(&[1], &[0xff]),
            range(&[0, 1], &[0, 9]),
        ], // short exact
        vec![
            ex(&[0, 1]),
            lpm(&[1, 2, 3], 21),
            tern(&[1], &[0xff]),
            range(&[0, 1], &[0, 9]),
        ], // prefix > width
        vec![
            ex(&[0, 1]),
            lpm(&[1, 2, 3], 20),
            tern(&[1], &[0xff, 0]),
            range(&[0, 1], &[0, 9]),
        ], // mask len
        vec![
            ex(&[0, 1]),
            lpm(&[1, 2, 3], 20),
            tern(&[1], &[0xff]),
            range(&[0, 9], &[0, 1]),
        ], // low > high
        vec![
            ex(&[0, 1]),
            ex(&[1, 2, 3]),
            tern(&[1], &[0xff]),
            range(&[0, 1], &[0, 9]),
        ], // wrong kind
        vec![
            FieldMatch::Valid(true),
            lpm(&[1, 2, 3], 20),
            tern(&[1], &[0xff]),
            range(&[0, 1], &[0, 9]),
        ],
    ];
    for c in cases {
        assert!(
            matches!(
                t.insert(pkey(c.clone(), 1), 0),
                Err(TableError::BadMatchKey(_))
            ),
            "{c:?}"
        );
        assert_eq!(t.find(&pkey(c, 1)), None);
    }
    assert_eq!(t.len(), 1);
    // a lookup key of the wrong size never matches
    assert_eq!(t.lookup(&[0; 3]), None);
}

#[test]
fn values_are_normalised_like_bmv2() {
    // exact: high bits of the first byte beyond the width are dropped
    let mut t = Table::new(vec![spec(MatchKind::Exact, 12)], 8).unwrap();
    let h = t.insert(key(vec![ex(&[0xf1, 0x23])]), 1).unwrap();
    assert_eq!(t.get(h).unwrap().0.fields, vec![ex(&[0x01, 0x23])]);
    assert_eq!(t.lookup(&[0x01, 0x23]).map(|(h, _)| h), Some(h));
    assert_eq!(
        t.insert(key(vec![ex(&[0x01, 0x23])]), 2),
        Err(TableError::DuplicateEntry)
    );
    assert_eq!(t.find(&key(vec![ex(&[0x31, 0x23])])), Some(h));

    // ternary: value ANDed with the mask; same value&mask+priority is a duplicate
    let mut t = Table::new(vec![spec(MatchKind::Ternary, 16)], 8).unwrap();
    let h = t
        .insert(pkey(vec![tern(&[0x12, 0x34], &[0xff, 0x00])], 5), 1)
        .unwrap();
    assert_eq!(
        *t.get(h).unwrap().0,
        pkey(vec![tern(&[0x12, 0x00], &[0xff, 0x00])], 5)
    );
    assert_eq!(
        t.insert(pkey(vec![tern(&[0x12, 0x99], &[0xff, 0x00])], 5), 2),
        Err(TableError::DuplicateEntry)
    );
    // same key and mask with another priority is a different entry
    let h2 = t
        .insert(pkey(vec![tern(&[0x12, 0x99], &[0xff, 0x00])], 3), 2)
        .unwrap();
    assert_eq!(t.lookup(&[0x12, 0x77]).map(|(h, _)| h), Some(h2));
    assert_eq!(
        t.find(&pkey(vec![tern(&[0x12, 0x00], &[0xff, 0x00])], 5)),
        Some(h)
    );
    assert_eq!(
        t.find(&pkey(vec![tern(&[0x12, 0x00], &[0xff, 0x00])], 4)),
        None
    );

    // LPM table: the stored value is not masked to the prefix (bmv2 shows it
    // as given), but duplicates compare only the prefix bits
    let mut t = Table::new(vec![spec(MatchKind::Lpm, 32)], 8).unwrap();
    let h = t.insert(key(vec![lpm(&[10, 1, 2, 3], 8)]), 1).unwrap();
    assert_eq!(t.get(h).unwrap().0.fields, vec![lpm(&[10, 1, 2, 3], 8)]);
    assert_eq!(t.get(h).unwrap().0.priority, -1);
    assert_eq!(
        t.insert(key(vec![lpm(&[10, 9, 9, 9], 8)]), 2),
        Err(TableError::DuplicateEntry)
    );
    assert_eq!(t.find(&key(vec![lpm(&[10, 0, 0, 0], 8)])), Some(h));

    // LPM inside a ternary table acts as a mask and is stored masked
    let mut t = Table::new(
        vec![spec(MatchKind::Lpm, 16), spec(MatchKind::Ternary, 8)],
        8,
    )
    .unwrap();
    let h = t
        .insert(pkey(vec![lpm(&[0xab, 0xcd], 4), tern(&[1], &[1])], 0), 1)
        .unwrap();
    assert_eq!(t.get(h).unwrap().0.fields[0], lpm(&[0xa0, 0x00], 4));

    // range: low is width-masked, high is kept as given (bmv2 compares the
    // padded bytes, so a high above the width simply covers everything)
    let mut t = Table::new(vec![spec(MatchKind::Range, 12)], 8).unwrap();
    let h = t
        .insert(pkey(vec![range(&[0xf0, 0x05], &[0xf0, 0x10])], 0), 1)
        .unwrap();
    assert_eq!(
        t.get(h).unwrap().0.fields,
        vec![range(&[0x00, 0x05], &[0xf0, 0x10])]
    );
    assert_eq!(t.lookup(&[0x0f, 0xff]).map(|(h, _)| h), Some(h));
    assert_eq!(t.lookup(&[0x00, 0x04]), None);
}

#[test]
fn lpm_prefix_counts_from_padded_msb() {
    // bmv2 counts an LPM prefix from the MSB of the byte-padded field: on a
    // 12-bit field, /4 covers the 4 always-zero padding bits
    for f in [
        vec![spec(MatchKind::Lpm, 12)],
        vec![spec(MatchKind::Lpm, 12), spec(MatchKind::Valid, 1)],
    ] {
        let n = f.len();
        let mut t = Table::new(f, 8).unwrap();
        let mut k = vec![lpm(&[0x0a, 0xbc], 4)];
        let mut probe = vec![0x0f, 0xff];
        if n == 2 {
            k.push(FieldMatch::Valid(true));
            probe.push(1);
        }
        let h = t.insert(key(k), 1).unwrap();
        assert_eq!(t.lookup(&probe).map(|(h, _)| h), Some(h));
    }
}

fn lpm_fallback(t: &mut Table<&'static str>, suffix: &[u8]) {
    let ip = |a: u8, b: u8, c: u8, d: u8| [[a, b, c, d].as_slice(), suffix].concat();
    let mk = |v: [u8; 4], l: u32| {
        let mut f = vec![lpm(&v, l)];
        if !suffix.is_empty() {
            f.push(ex(suffix));
        }
        key(f)
    };
    let h8 = t.insert(mk([10, 0, 0, 0], 8), "/8").unwrap();
    let h16 = t.insert(mk([10, 1, 0, 0], 16), "/16").unwrap();
    let h24 = t.insert(mk([10, 1, 2, 0], 24), "/24").unwrap();
    let h32 = t.insert(mk([10, 1, 2, 3], 32), "/32").unwrap();
    let h20 = t.insert(mk([10, 1, 0x70, 0], 20), "/20").unwrap();
    let h0 = t.insert(mk([0, 0, 0, 0], 0), "/0").unwrap();
    let look = |t: &Table<&'static str>, k: Vec<u8>| t.lookup(&k).map(|(_, v)| *v);
    assert_eq!(look(t, ip(10, 1, 2, 3)), Some("/32"));
    assert_eq!(look(t, ip(10, 1, 2, 4)), Some("/24"));
    assert_eq!(look(t, ip(10, 1, 0x7f, 4)), Some("/20"));
    assert_eq!(look(t, ip(10, 1, 3, 4)), Some("/16"));
    assert_eq!(look(t, ip(10, 2, 3, 4)), Some("/8"));
    assert_eq!(look(t, ip(11, 2, 3, 4)), Some("/0"));
    t.delete(h24).unwrap();
    assert_eq!(look(t, ip(10, 1, 2, 3)), Some("/32"));
    assert_eq!(look(t, ip(10, 1, 2, 4)), Some("/16"));
    t.delete(h16).unwrap();
    assert_eq!(look(t, ip(10, 1, 2, 4)), Some("/8"));
    assert_eq!(look(t, ip(10, 1, 0x7f, 4)), Some("/20"));
    t.delete(h32).unwrap();
    assert_eq!(look(t, ip(10, 1, 2, 3)), Some("/8"));
    t.delete(h8).unwrap();
    assert_eq!(look(t, ip(10, 1, 2, 3)), Some("/0"));
    assert_eq!(look(t, ip(10, 1, 0x7f, 4)), Some("/20"));
    t.delete(h0).unwrap();
    assert_eq!(look(t, ip(10, 1, 2, 3)), None);
    t.delete(h20).unwrap();
    assert_eq!(look(t, ip(10, 1, 0x7f, 4)), None);
    assert!(t.is_empty());
    // re-adding after everything was deleted works
    let h = t.insert(mk([10, 1, 2, 0], 24), "again").unwrap();
    assert_eq!(
        t.lookup(&ip(10, 1, 2, 9)).map(|(h, v)| (h, *v)),
        Some((h, "again"))
    );
}

#[test]
fn lpm_delete_falls_back_dir() {
    let mut t = Table::new(vec![spec(MatchKind::Lpm, 32)], 64).unwrap();
    assert_eq!(t.structure(), "dir-16-8-8");
    lpm_fallback(&mut t, &[]);
}

#[test]
fn lpm_delete_falls_back_hash() {
    let mut t = Table::new(
        vec![spec(MatchKind::Lpm, 32), spec(MatchKind::Exact, 8)],
        64,
    )
    .unwrap();
    assert_eq!(t.structure(), "lpm-hash-binary-search");
    lpm_fallback(&mut t, &[7]);
    // exact fields must match
    assert_eq!(t.lookup(&[10, 1, 2, 9, 8]), None);
}

#[test]
fn ternary_priorities_and_ties() {
    let f = vec![spec(MatchKind::Ternary, 8), spec(MatchKind::Range, 8)];
    let mut t = Table::new(f, 16).unwrap();
    // smallest priority number wins
    let a = t
        .insert(pkey(vec![tern(&[0], &[0]), range(&[0], &[255])], 10), "a")
        .unwrap();
    let b = t
        .insert(pkey(vec![tern(&[5], &[0xff]), range(&[0], &[255])], 2), "b")
        .unwrap();
    assert_eq!(t.lookup(&[5, 0]).map(|(h, _)| h), Some(b));
    assert_eq!(t.lookup(&[6, 0]).map(|(h, _)| h), Some(a));
    // tie on priority: the lowest handle wins
    let c = t
        .insert(pkey(vec![tern(&[6], &[0xff]), range(&[3], &[9])], 10), "c")
        .unwrap();
    assert!(c > a);
    assert_eq!(t.lookup(&[6, 4]).map(|(h, _)| h), Some(a));
    t.delete(a).unwrap();
    assert_eq!(t.lookup(&[6, 4]).map(|(h, _)| h), Some(c));
    assert_eq!(t.lookup(&[6, 10]), None);
    // the slot of `a` is reused with a bumped version; it now has the lowest index
    let d = t
        .insert(pkey(vec![tern(&[6], &[0xfe]), range(&[4], &[4])], 10), "d")
        .unwrap();
    assert_eq!(d, 1 << 24);
    assert_eq!(t.lookup(&[7, 4]).map(|(h, _)| h), Some(d));
    assert_eq!(t.lookup(&[6, 4]).map(|(h, _)| h), Some(d));
    assert_eq!(t.lookup(&[6, 5]).map(|(h, _)| h), Some(c));
    // negative priorities are allowed and win
    let e = t
        .insert(pkey(vec![tern(&[0], &[0]), range(&[0], &[255])], -1), "e")
        .unwrap();
    assert_eq!(t.lookup(&[6, 5]).map(|(h, _)| h), Some(e));
}

#[test]
fn valid_fields_and_keyless_tables() {
    let mut t = Table::new(
        vec![spec(MatchKind::Valid, 1), spec(MatchKind::Exact, 8)],
        4,
    )
    .unwrap();
    let h = t
        .insert(key(vec![FieldMatch::Valid(true), ex(&[3])]), 1)
        .unwrap();
    assert_eq!(t.lookup(&[1, 3]).map(|(h, _)| h), Some(h));
    assert_eq!(t.lookup(&[0, 3]), None);
    // a key-less table (bmv2 allows adding an entry with an empty key)
    let mut t = Table::new(vec![], 4).unwrap();
    assert_eq!(t.key_bytes(), 0);
    let h = t.insert(key(vec![]), 7).unwrap();
    assert_eq!(t.lookup(&[]), Some((h, &7)));
    let mut out = [None; 3];
    t.lookup_batch(&[], &mut out);
    assert_eq!(out, [Some((h, &7)); 3]);
}

#[test]
fn static_key_masks() {
    // p4c's `key = { h.f & 0x0f0f : exact; }`: entry values are ANDed with the mask
    let mut t = Table::with_field_masks(
        vec![spec(MatchKind::Exact, 16)],
        vec![Some(vec![0x0f, 0x0f])],
        8,
    )
    .unwrap();
    let h = t.insert(key(vec![ex(&[0xff, 0xff])]), 1).unwrap();
    assert_eq!(t.get(h).unwrap().0.fields, vec![ex(&[0x0f, 0x0f])]);
    assert_eq!(t.lookup(&[0x0f, 0x0f]).map(|(h, _)| h), Some(h));
    assert_eq!(
        t.insert(key(vec![ex(&[0x1f, 0x0f])]), 2),
        Err(TableError::DuplicateEntry)
    );
    assert!(matches!(
        Table::<u8>::with_field_masks(vec![spec(MatchKind::Exact, 16)], vec![Some(vec![0])], 8),
        Err(TableError::InvalidSpec(_))
    ));
}

#[test]
fn clones_are_independent_and_deterministic() {
    let mut a = Table::new(vec![spec(MatchKind::Ternary, 16)], 64).unwrap();
    let mut b = a.clone();
    for t in [&mut a, &mut b] {
        for p in 0..20u8 {
            t.insert(pkey(vec![tern(&[p, 0], &[0xff, p])], i32::from(p % 3)), p)
                .unwrap();
        }
        t.delete(3).unwrap();
        t.delete(7).unwrap();
        t.insert(pkey(vec![tern(&[0, 0], &[0, 0])], 1), 99).unwrap();
    }
    let c = a.clone();
    for k in 0..=255u8 {
        for k2 in [0u8, 1, 7, 255] {
            assert_eq!(a.lookup(&[k, k2]), b.lookup(&[k, k2]));
            assert_eq!(a.lookup(&[k, k2]), c.lookup(&[k, k2]));
        }
    }
    a.clear();
    assert!(a.is_empty() && !b.is_empty() && !c.is_empty());
}

#[test]
fn many_exact_entries_and_batch() {
    // word keys of 3, 4, 6 and 8 bytes (the last byte varies most: the bytes read
    // little-endian land high in the word) and a 12-byte packed key
    for kb in [3usize, 4, 6, 8, 12] {
        let mut t = Table::new(vec![spec(MatchKind::Exact, 8 * kb as u32)], 100_000).unwrap();
        let k = |i: u32| -> Vec<u8> {
            let mut v = vec![0xa5u8; kb];
            v[kb - 3..].copy_from_slice(&i.to_be_bytes()[1..]);
            v
        };
        for i in 0..50_000u32 {
            assert_eq!(t.insert(key(vec![ex(&k(i))]), i).unwrap(), i);
        }
        for i in (0..50_000u32).step_by(3) {
            t.delete(i).unwrap();
        }
        let keys: Vec<u8> = (0..60_000u32).flat_map(k).collect();
        let mut out = vec![None; 60_000];
        t.set_prefetch_distance(8);
        t.lookup_batch(&keys, &mut out);
        for (i, o) in out.iter().enumerate() {
            let want = (i < 50_000 && i % 3 != 0).then_some(i as u32);
            assert_eq!(o.map(|(_, v)| *v), want, "{kb}-byte key {i}");
            let ki = &keys[i * kb..(i + 1) * kb];
            assert_eq!(t.lookup(ki).map(|(_, v)| *v), want);
            if let Some((h, _)) = o {
                let (got, _) = t.get(*h).unwrap();
                assert_eq!(got.fields, vec![ex(ki)], "{kb}-byte key {i} read back");
            }
        }
        assert!(t.memory_bytes() > 0);
    }
}

#[test]
fn a_threads_prefetch_distance_changes_stages_not_answers() {
    let mut t = Table::new(vec![spec(MatchKind::Exact, 32)], 10_000).unwrap();
    for i in 0..5_000u32 {
        t.insert(key(vec![ex(&i.to_be_bytes())]), i).unwrap();
    }
    let keys: Vec<u8> = (0..6_000u32).flat_map(|i| i.to_be_bytes()).collect();
    let answers = |t: &Table<u32>| {
        let mut out = vec![None; 6_000];
        for c in keys.chunks(64 * 4) {
            let n = c.len() / 4;
            let mut o = vec![None; n];
            t.lookup_batch(c, &mut o);
            out.extend(o.iter().map(|x| x.map(|(_, v)| *v)));
        }
        out.split_off(6_000)
    };
    let want: Vec<Option<u32>> = (0..6_000u32).map(|i| (i < 5_000).then_some(i)).collect();
    assert_eq!(answers(&t), want);
    // odd distances cut the 64-key calls into uneven stages; 0 and 1000 are clamped
    for d in [1, 3, 7, 64, 0, 1000] {
        p4jet_tables::set_thread_prefetch_distance(Some(d));
        assert_eq!(answers(&t), want, "thread distance {d}");
    }
    p4jet_tables::set_thread_prefetch_distance(None);
    assert_eq!(answers(&t), want);
}

#[test]
fn many_lpm_routes_dir_and_hash_agree() {
    // the two LPM structures must agree on the same route set, and the DIR table's
    // batched lookup (its staged form above 4096 routes) with its single lookups
    let mut d = Table::new(vec![spec(MatchKind::Lpm, 32)], 100_000).unwrap();
    let mut w = Table::new(
        vec![spec(MatchKind::Lpm, 32), spec(MatchKind::Valid, 1)],
        100_000,
    )
    .unwrap();
    let mut x: u64 = 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut handles = vec![];
    for _ in 0..8000 {
        let r = next();
        let v = ((r >> 8) as u32 & 0x0fff_ffff).to_be_bytes();
        let l = [8, 12, 16, 20, 22, 24, 24, 24, 26, 28, 30, 32][(r % 12) as usize];
        let a = d.insert(key(vec![lpm(&v, l)]), l);
        let b = w.insert(key(vec![lpm(&v, l), FieldMatch::Valid(true)]), l);
        assert_eq!(a, b);
        if let Ok(h) = a {
            handles.push(h);
        }
    }
    for h in handles.iter().step_by(4) {
        d.delete(*h).unwrap();
        w.delete(*h).unwrap();
    }
    assert!(
        d.len() > 4096,
        "{} routes: the staged batch is not used",
        d.len()
    );
    let mut keys = vec![];
    for _ in 0..20000 {
        let k = ((next() >> 8) as u32 & 0x0fff_ffff).to_be_bytes();
        let kw = [k.as_slice(), &[1]].concat();
        assert_eq!(d.lookup(&k), w.lookup(&kw));
        keys.extend_from_slice(&k);
    }
    for dist in [1, 8, 64] {
        d.set_prefetch_distance(dist);
        let mut out = vec![None; 20000];
        d.lookup_batch(&keys, &mut out);
        for (i, o) in out.iter().enumerate() {
            assert_eq!(
                *o,
                d.lookup(&keys[4 * i..4 * i + 4]),
                "key {i}, distance {dist}"
            );
        }
    }
}

/// A 6-field ACL like `p4jet gen acl` (prefixes, protocol, port, class,
/// flag; random unique priorities), the packed keys of `n` packets aimed at
/// its rules, and the rules.
fn acl_like(rules: usize, n: usize, seed: u64) -> (Table<u32>, Vec<u8>) {
    let mut s = seed;
    let mut next = move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let f = [32, 32, 8, 16, 8, 8]
        .map(|w| spec(MatchKind::Ternary, w))
        .to_vec();
    let mut t = Table::new(f, rules + 10).unwrap();
    let pm = |l: u32| if l == 0 { 0u32 } else { u32::MAX << (32 - l) };
    let mut prios: Vec<i32> = (1..=rules as i32).collect();
    for i in (1..prios.len()).rev() {
        prios.swap(i, (next() % (i as u64 + 1)) as usize);
    }
    let mut vals = vec![];
    while t.len() < rules {
        let ls = [0, 8, 16, 24, 32, 15, 20, 28][(next() % 8) as usize];
        let ld = [0, 16, 24, 32][(next() % 4) as usize];
        let (sv, dv) = (next() as u32 & pm(ls), next() as u32 & pm(ld));
        let pr: (u8, u8) = [(6, 0xff), (17, 0xff), (0, 0)][(next() % 3) as usize];
        let dp: (u16, u16) = if next() % 2 == 0 {
            ([22, 53, 80, 443][(next() % 4) as usize], 0xffff)
        } else {
            (0, 0)
        };
        let cl: (u8, u8) = if next() % 4 == 0 {
            ((next() % 4) as u8 + 1, 0xff)
        } else {
            (0, 0)
        };
        let fl: (u8, u8) = if next() % 5 == 0 {
            (0x10, 0x10)
        } else {
            (0, 0)
        };
        if ls == 0 && ld == 0 && dp.1 == 0 {
            continue; // as in p4jet gen: no rule matches (nearly) everything
        }
        let k = pkey(
            vec![
                tern(&sv.to_be_bytes(), &pm(ls).to_be_bytes()),
                tern(&dv.to_be_bytes(), &pm(ld).to_be_bytes()),
                tern(&[pr.0], &[pr.1]),
                tern(&dp.0.to_be_bytes(), &dp.1.to_be_bytes()),
                tern(&[cl.0], &[cl.1]),
                tern(&[fl.0], &[fl.1]),
            ],
            prios[t.len()],
        );
        if t.insert(k, t.len() as u32).is_ok() {
            vals.push((sv, ls, dv, ld, pr.0, dp.0));
        }
    }
    let mut keys = vec![];
    for _ in 0..n {
        let (sv, ls, dv, ld, pr, dp) = vals[(next() % vals.len() as u64) as usize];
        let x = next();
        keys.extend_from_slice(&(sv | (x as u32 & !pm(ls))).to_be_bytes());
        keys.extend_from_slice(&(dv | ((x >> 32) as u32 & !pm(ld))).to_be_bytes());
        keys.push(if pr == 0 { 6 } else { pr });
        keys.extend_from_slice(&(if dp == 0 { 8080 } else { dp }).to_be_bytes());
        keys.extend_from_slice(&[(x >> 8) as u8 % 5, (x >> 16) as u8 & 0x18]);
    }
    (t, keys)
}

/// Linear scan in bmv2's order (smallest priority, then lowest handle).
fn scan(t: &Table<u32>, key: &[u8]) -> Option<u32> {
    let mut best: Option<(i32, u32)> = None;
    for (h, k, _) in t.iter() {
        let mut off = 0;
        let ok = k.fields.iter().all(|f| {
            let FieldMatch::Ternary { value, mask } = f else {
                return false;
            };
            let n = value.len();
            let r = (0..n).all(|i| key[off + i] & mask[i] == value[i]);
            off += n;
            r
        });
        if ok && best.is_none_or(|b| (k.priority, h) < b) {
            best = Some((k.priority, h));
        }
    }
    best.map(|b| b.1)
}

#[test]
fn acl_like_table_matches_a_linear_scan() {
    let (mut t, keys) = acl_like(3000, 3000, 7);
    assert!(t.num_tuples() < 60, "{} tuples", t.num_tuples());
    assert!(t.cache_active());
    let kb = t.key_bytes();
    let want: Vec<Option<u32>> = keys.chunks_exact(kb).map(|k| scan(&t, k)).collect();
    assert!(want.iter().filter(|w| w.is_some()).count() > 2500);
    for mode in [CacheMode::Auto, CacheMode::Off, CacheMode::On(16)] {
        t.set_cache_mode(mode);
        for _ in 0..2 {
            for (k, w) in keys.chunks_exact(kb).zip(&want) {
                assert_eq!(t.lookup(k).map(|x| x.0), *w, "{mode:?}");
            }
            let mut out = vec![None; 3000];
            t.lookup_batch(&keys, &mut out);
            let got: Vec<Option<u32>> = out.iter().map(|o| o.map(|x| x.0)).collect();
            assert_eq!(got, want, "{mode:?} batch");
        }
    }
}

#[test]
fn cached_results_follow_every_write() {
    let (mut t, keys) = acl_like(500, 200, 11);
    assert!(t.cache_active());
    let kb = t.key_bytes();
    let k0 = &keys[..kb];
    let first = t.lookup(k0).map(|x| x.0);
    assert_eq!(first, scan(&t, k0));
    // a better (smaller priority) catch-all entry wins at once
    let any = pkey(
        (0..6)
            .map(|i| {
                tern(
                    &vec![0; [4, 4, 1, 2, 1, 1][i]],
                    &vec![0; [4, 4, 1, 2, 1, 1][i]],
                )
            })
            .collect(),
        -5,
    );
    let h = t.insert(any.clone(), 999).unwrap();
    assert_eq!(t.lookup(k0).map(|(h, v)| (h, *v)), Some((h, 999)));
    // modify: same entry, new value
    t.modify(h, 1000).unwrap();
    assert_eq!(t.lookup(k0).map(|(h, v)| (h, *v)), Some((h, 1000)));
    // delete: back to the previous answer
    t.delete(h).unwrap();
    assert_eq!(t.lookup(k0).map(|x| x.0), first);
    // a miss is cached and then a new entry must still be found
    let miss = (0u32..1000)
        .map(|i| {
            let a = i.wrapping_mul(0x9E37_79B9).to_be_bytes();
            [&a[..], &a[..], &[17, 0x27, 0x0f, 2, 0][..]].concat()
        })
        .find(|k| scan(&t, k).is_none())
        .unwrap();
    assert_eq!(t.lookup(&miss), None);
    assert_eq!(t.lookup(&miss), None);
    let h2 = t.insert(any, 7).unwrap();
    assert_eq!(t.lookup(&miss).map(|x| x.0), Some(h2));
    t.clear();
    assert_eq!(t.lookup(&miss), None);
    assert_eq!(t.lookup(k0), None);
}

#[test]
fn cache_is_shared_safely_by_threads() {
    let (mut t, keys) = acl_like(2000, 4000, 3);
    let kb = t.key_bytes();
    let want: Vec<Option<u32>> = keys.chunks_exact(kb).map(|k| scan(&t, k)).collect();
    // a tiny cache: the threads keep filling the same ways
    t.set_cache_mode(CacheMode::On(4));
    let t = &t;
    std::thread::scope(|s| {
        for th in 0..3usize {
            let (keys, want) = (&keys, &want);
            s.spawn(move || {
                for round in 0..20 {
                    for (i, (k, w)) in keys.chunks_exact(kb).zip(want).enumerate() {
                        if (i + th + round) % 3 == 0 {
                            assert_eq!(t.lookup(k).map(|x| x.0), *w);
                        }
                    }
                    let mut out = vec![None; 64];
                    for (c, w) in keys.chunks_exact(64 * kb).zip(want.chunks_exact(64)) {
                        t.lookup_batch(c, &mut out);
                        for (o, w) in out.iter().zip(w) {
                            assert_eq!(o.map(|x| x.0), *w);
                        }
                    }
                }
            });
        }
    });
}

#[test]
fn wide_lpm_batch_in_lock_step_matches_lookup() {
    // enough routes for lookup_batch to take the lock-step path
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut t: Table<u32> = Table::new(vec![spec(MatchKind::Lpm, 128)], 40_000).unwrap();
    let mut routes = vec![];
    let mut handles = vec![];
    while t.len() < 20_000 {
        let v = (u128::from(0x2000 | (next() % 0x100)) << 112) | (u128::from(next()) << 40);
        let l = [16, 24, 32, 40, 44, 48, 48, 56, 64, 128][(next() % 10) as usize];
        let m = u128::MAX << (128 - l);
        if let Ok(h) = t.insert(key(vec![lpm(&(v & m).to_be_bytes(), l)]), l) {
            routes.push((v & m, m));
            handles.push(h);
        }
    }
    let check = |t: &Table<u32>, min_hits: usize| {
        let mut keys = vec![];
        for i in 0..4096u64 {
            let (v, m) = routes[(i * 7919 % routes.len() as u64) as usize];
            let host = ((u128::from(i) << 64) | u128::from(i.wrapping_mul(31))) & !m;
            keys.extend_from_slice(&(v | host).to_be_bytes());
        }
        keys.extend_from_slice(&[0x77; 16 * 64]); // misses
        let n = keys.len() / 16;
        let mut out = vec![None; n];
        t.lookup_batch(&keys, &mut out);
        for (i, o) in out.iter().enumerate() {
            assert_eq!(*o, t.lookup(&keys[i * 16..(i + 1) * 16]), "key {i}");
        }
        assert!(out.iter().filter(|o| o.is_some()).count() >= min_hits);
    };
    check(&t, 4096);
    // delete every third route: batch and single lookups still agree
    for h in handles.iter().step_by(3) {
        t.delete(*h).unwrap();
    }
    check(&t, 2000);
}

/// A deleted entry put back with `reinsert` has its old handle, is found again,
/// and the slot cannot be reinserted twice; `iter_from` skips the slots before it.
#[test]
fn reinsert_restores_the_old_handle_and_iter_from_pages() {
    for kind in [MatchKind::Exact, MatchKind::Ternary] {
        let mut t: Table<u32> = Table::new(vec![spec(kind, 16)], 16).unwrap();
        let k = |v: u8| match kind {
            MatchKind::Exact => key(vec![ex(&[0, v])]),
            _ => MatchKey {
                fields: vec![tern(&[0, v], &[0xff, 0xff])],
                priority: 1,
            },
        };
        let h0 = t.insert(k(1), 10).unwrap();
        let h1 = t.insert(k(2), 20).unwrap();
        let h2 = t.insert(k(3), 30).unwrap();
        let (key1, _) = t.get(h1).map(|(k, v)| (k.into_owned(), *v)).unwrap();
        t.delete(h1).unwrap();
        t.delete(h0).unwrap();
        // slot 0 is free and lower: a plain insert would take it, reinsert does not
        t.reinsert(h1, key1.clone(), 21).unwrap();
        assert_eq!(t.get(h1).map(|(_, v)| *v), Some(21));
        assert_eq!(t.find(&key1), Some(h1));
        assert_eq!(t.len(), 2);
        assert_eq!(t.reinsert(h1, key1, 22), Err(TableError::InvalidHandle));
        // a handle whose slot was never deleted at that version
        assert_eq!(t.reinsert(h2 + 5, k(9), 0), Err(TableError::InvalidHandle));
        let from1: Vec<u32> = t.iter_from(1).map(|(h, _, _)| h).collect();
        assert_eq!(from1, vec![h1, h2]);
        assert_eq!(t.iter_from(3).count(), 0);
        assert_eq!(t.iter_from(99).count(), 0);
        // the next insert takes slot 0 with its bumped version
        let h = t.insert(k(4), 40).unwrap();
        assert_eq!(h & 0xff_ffff, 0);
        assert_ne!(h, h0);
    }
}

/// `uninsert` takes back an insertion: the slot gets its version back, so the next
/// insert gets the same handle, and an entry deleted from that slot before can be
/// reinserted with its handle (a rolled-back batch: delete, insert, undo both).
#[test]
fn uninsert_gives_the_slot_its_version_back() {
    for kind in [MatchKind::Exact, MatchKind::Ternary] {
        let mut t: Table<u32> = Table::new(vec![spec(kind, 16)], 16).unwrap();
        let k = |v: u8| match kind {
            MatchKind::Exact => key(vec![ex(&[0, v])]),
            _ => MatchKey {
                fields: vec![tern(&[0, v], &[0xff, 0xff])],
                priority: 1,
            },
        };
        let h0 = t.insert(k(1), 10).unwrap();
        let (key0, _) = t.get(h0).map(|(k, v)| (k.into_owned(), *v)).unwrap();
        t.delete(h0).unwrap();
        let h = t.insert(k(2), 20).unwrap();
        assert_eq!(h & 0xff_ffff, 0);
        t.uninsert(h).unwrap();
        assert_eq!(t.find(&k(2)), None);
        assert_eq!(t.len(), 0);
        t.reinsert(h0, key0.clone(), 10).unwrap();
        assert_eq!(t.find(&key0), Some(h0));
        // a fresh slot: the next insert gets the handle the taken-back one had
        let h1 = t.insert(k(3), 30).unwrap();
        t.uninsert(h1).unwrap();
        assert_eq!(t.insert(k(4), 40).unwrap(), h1);
        assert_eq!(t.uninsert(h1 + 7), Err(TableError::InvalidHandle));
    }
}

#[test]
fn ipv4_lpm_batches_of_any_size_match_lookup_above_and_below_the_staged_size() {
    // a few prefixes (looked up key by key) and more than 4,096 (in prefetch stages),
    // in batches of 1, 2 and 3 keys (key by key at any size) and of 64
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for routes in [100usize, 6_000] {
        let mut t: Table<u32> = Table::new(vec![spec(MatchKind::Lpm, 32)], 10_000).unwrap();
        let mut prefixes = vec![];
        while t.len() < routes {
            let v = (next() as u32) & 0x0fff_ffff | 0x0a00_0000;
            let l = [8, 16, 20, 24, 24, 28, 32][(next() % 7) as usize];
            let m = u32::MAX << (32 - l);
            if t.insert(key(vec![lpm(&(v & m).to_be_bytes(), l)]), l)
                .is_ok()
            {
                prefixes.push((v & m, m));
            }
        }
        let mut keys = vec![];
        for i in 0..1_000u32 {
            let (v, m) = prefixes[(next() % prefixes.len() as u64) as usize];
            let host = if i % 5 == 0 {
                next() as u32
            } else {
                (next() as u32) & !m | v
            };
            keys.extend_from_slice(&host.to_be_bytes());
        }
        let mut hits = 0;
        for batch in [1usize, 2, 3, 64] {
            for (c, chunk) in keys.chunks(4 * batch).enumerate() {
                let mut out = vec![None; chunk.len() / 4];
                t.lookup_batch(chunk, &mut out);
                for (i, o) in out.iter().enumerate() {
                    let single = t.lookup(&chunk[4 * i..4 * i + 4]);
                    assert_eq!(
                        *o, single,
                        "{routes} routes, batch {batch}, chunk {c} key {i}"
                    );
                    hits += usize::from(o.is_some());
                }
            }
        }
        assert!(hits > 4 * 700, "{routes} routes: {hits} hits");
    }
}
