//! Unit tests of bmv2's observable rules: handle numbering, duplicates,
//! TableFull, BadMatchKey, LPM deletion fallback, priorities.
#![allow(clippy::unwrap_used)]

use p4jet_tables::{FieldMatch, KeyFieldSpec, MatchKey, MatchKind, Table, TableError, TableKind};

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
        let k = t.get(h).unwrap().0.clone();
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
        t.get(h).unwrap().0,
        &pkey(vec![tern(&[0x12, 0x00], &[0xff, 0x00])], 5)
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
    let mut t = Table::new(vec![spec(MatchKind::Exact, 32)], 100_000).unwrap();
    for i in 0..50_000u32 {
        assert_eq!(t.insert(key(vec![ex(&i.to_be_bytes())]), i).unwrap(), i);
    }
    for i in (0..50_000u32).step_by(3) {
        t.delete(i).unwrap();
    }
    let keys: Vec<u8> = (0..60_000u32).flat_map(|i| i.to_be_bytes()).collect();
    let mut out = vec![None; 60_000];
    t.set_prefetch_distance(8);
    t.lookup_batch(&keys, &mut out);
    for (i, o) in out.iter().enumerate() {
        let want = (i < 50_000 && i % 3 != 0).then_some(i as u32);
        assert_eq!(o.map(|(_, v)| *v), want);
        assert_eq!(t.lookup(&keys[i * 4..i * 4 + 4]).map(|(_, v)| *v), want);
    }
    assert!(t.memory_bytes() > 0);
}

#[test]
fn many_lpm_routes_dir_and_hash_agree() {
    // the two LPM structures must agree on the same route set
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
    for _ in 0..5000 {
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
    for _ in 0..20000 {
        let k = ((next() >> 8) as u32 & 0x0fff_ffff).to_be_bytes();
        let kw = [k.as_slice(), &[1]].concat();
        assert_eq!(d.lookup(&k), w.lookup(&kw));
    }
}
