//! The CSS1 decoder: the first byte chooses up to four columns (type,
//! direction, null placement), the rest is the key. Decoding never panics,
//! and is strict: whatever it accepts re-encodes to exactly the same key.
#![no_main]

use libfuzzer_sys::fuzz_target;
use model::sortkey::{decode, encode_sort_values, Column, ColumnType, Direction, Nulls};

fn columns(spec: &[u8]) -> Vec<Column> {
    spec.iter()
        .map(|b| {
            let direction = if b & 0x10 == 0 { Direction::Asc } else { Direction::Desc };
            let nulls = if b & 0x20 == 0 { Nulls::First } else { Nulls::Last };
            Column::new(ColumnType::ALL[usize::from(b & 0x0f) % ColumnType::ALL.len()], direction).with_nulls(nulls)
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let Some((&count, rest)) = data.split_first() else { return };
    let count = usize::from(count % 4) + 1;
    if rest.len() < count {
        return;
    }
    let (spec, key) = rest.split_at(count);
    let Ok(key) = std::str::from_utf8(key) else { return };
    let columns = columns(spec);
    if let Ok(values) = decode(&columns, key) {
        match encode_sort_values(&columns, &values) {
            Ok(again) => assert_eq!(again, key, "decode accepted a key that is not canonical: {values:?}"),
            Err(e) => panic!("decode accepted {key:?} as {values:?}, which does not encode: {e}"),
        }
    }
});
