//! `ActionData`: action parameter blobs held in place up to `ActionData::INLINE` bytes.

use p4jet_ir::{ActionCall, ActionData};

fn bytes(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + 1) as u8).collect()
}

#[test]
fn every_length_round_trips_through_every_constructor() {
    for n in [
        0,
        1,
        2,
        6,
        21,
        ActionData::INLINE,
        ActionData::INLINE + 1,
        64,
        300,
    ] {
        let b = bytes(n);
        let all = [
            ActionData::from(b.as_slice()),
            ActionData::from(b.clone()),
            ActionData::from(b.clone().into_boxed_slice()),
        ];
        for d in &all {
            assert_eq!(d.as_slice(), b.as_slice(), "{n} bytes");
            assert_eq!(d.len(), n);
            assert_eq!(
                matches!(d, ActionData::Inline { .. }),
                n <= ActionData::INLINE,
                "{n} bytes held in place only when they fit"
            );
            assert_eq!(d, &all[0]);
            assert_eq!(format!("{d:?}"), format!("{b:?}"));
        }
        let z = ActionData::zeroed(n);
        assert_eq!(z.as_slice(), vec![0; n].as_slice());
        assert_eq!(
            matches!(z, ActionData::Inline { .. }),
            n <= ActionData::INLINE
        );
    }
}

#[test]
fn equal_bytes_are_equal_however_they_are_held() {
    let b = bytes(5);
    let heap = ActionData::Heap(b.clone().into_boxed_slice());
    let inline = ActionData::from(b.as_slice());
    assert_eq!(heap, inline);
    assert_ne!(inline, ActionData::from(bytes(4)));
    // a shorter blob whose bytes are a prefix differs (the zero padding is not data)
    let mut padded = b.clone();
    padded.push(0);
    assert_ne!(inline, ActionData::from(padded));
}

#[test]
fn changed_in_place_and_cloned() {
    for n in [3, 40] {
        let mut d = ActionData::zeroed(n);
        d[n - 1] = 0xab;
        d.as_mut_slice()[0] = 1;
        let c = d.clone();
        d[0] = 2;
        assert_eq!(c[0], 1);
        assert_eq!(c[n - 1], 0xab);
        assert_eq!(d[0], 2);
    }
}

#[test]
fn an_action_call_is_no_larger_than_with_a_boxed_blob_and_a_tag() {
    // the boxed slice it replaces is 16 bytes; the tag and alignment make 24
    assert_eq!(std::mem::size_of::<ActionData>(), 24);
    assert_eq!(std::mem::size_of::<ActionCall>(), 32);
}
