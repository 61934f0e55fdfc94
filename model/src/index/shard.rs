//! Sharded partitions: an index with `shards = N` (N > 1) spreads the rows of
//! one rendered partition value over N partitions, so a value that many items
//! share (a bulk import of issues with one field) gets N partitions' write
//! capacity instead of one.
//!
//! A row's partition key is then `{rendered}#{shard}`: the rendered template,
//! [`SEPARATOR`], and the shard as a decimal number `0..N` without padding
//! (`prio#0` … `prio#15`). The shard is [`shard_of`] the source item's key:
//! FNV-1a (64-bit) over the UTF-8 bytes of the CSS1 encoding of the source
//! item's primary key (exactly the suffix every sort key of the item ends
//! with), scaled to N: `⌊hash × N / 2⁶⁴⌋`. Both are fixed here, independent of platform and
//! version, so a row's shard never moves unless N changes; changing N is a
//! `rebuild`. With N = 1 the partition key is the rendered value, as if the
//! index were not sharded.
//!
//! The suffix keeps partitions of different rendered values apart: the text
//! after the last `#` is the shard, so `a#1` + `#0` and `a` + `#1` cannot meet.

use std::fmt::Write;

/// Between the rendered partition value and the shard number.
pub const SEPARATOR: char = '#';

/// FNV-1a's 64-bit offset basis.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a's 64-bit prime.
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a, 64-bit, over `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(FNV_OFFSET, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(FNV_PRIME))
}

/// The shard (`0..shards`) of the item whose primary key encodes to
/// `source_key` (CSS1, the suffix of its rows' sort keys): the hash scaled
/// to the shard count, `⌊fnv1a64(source_key) × shards / 2⁶⁴⌋`. (Its high
/// bits, not a remainder: FNV-1a's lowest bit is the parity of the input's
/// bytes, so `hash % 2` would put keys that repeat a number, such as
/// `issue-7`/`issue-7`, all in one shard.) `shards` 0 is taken as 1.
pub fn shard_of(source_key: &str, shards: u32) -> u32 {
    let scaled = u128::from(fnv1a64(source_key.as_bytes())) * u128::from(shards.max(1));
    // Below `shards`, so it fits.
    u32::try_from(scaled >> 64).unwrap_or(0)
}

/// Appends the suffix of `shard` to a rendered partition value (nothing when
/// the index has one shard).
pub fn push_suffix(partition: &mut String, shard: u32, shards: u32) {
    if shards > 1 {
        partition.push(SEPARATOR);
        let _ = write!(partition, "{shard}");
    }
}

/// Every partition key that holds rows of the rendered value `partition`, in
/// shard order: the value itself for one shard, else one per shard.
pub fn partitions(partition: &str, shards: u32) -> Vec<String> {
    (0..shards.max(1))
        .map(|shard| {
            let mut p = partition.to_owned();
            push_suffix(&mut p, shard, shards);
            p
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Published FNV-1a 64 test vectors (Fowler, Noll, Vo: "FNV test suite").
    #[test]
    fn fnv1a64_matches_the_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn shards_are_in_range_and_spread() {
        for shards in [1u32, 2, 3, 16, 256] {
            // 100 keys per shard on average; keys like a source key whose
            // partition and sort key repeat one number.
            let keys = 100 * shards;
            let mut seen = vec![0u32; shards as usize];
            for i in 0..keys {
                let key = format!("Sissue-{i}\u{1}Sissue-{i}\u{1}");
                let s = shard_of(&key, shards);
                assert!(s < shards, "{s} of {shards}");
                seen[s as usize] += 1;
            }
            // Every shard gets a fair share, within a half.
            assert!(seen.iter().all(|&n| n > 50 && n < 150), "{shards}: {seen:?}");
        }
        assert_eq!(shard_of("anything", 0), 0);
        assert_eq!(shard_of("anything", 1), 0);
    }

    /// The shard of a key is part of the row's key: it must never change.
    /// These were computed with a separate script (Python, from FNV-1a's
    /// published constants), not with this code.
    #[test]
    fn shards_are_stable() {
        let cases: [(&str, u64, [u32; 4]); 3] = [
            ("Sissue-1\u{1}Sissue-1\u{1}", 0x096f_835e_513d_6a9f, [0, 0, 0, 9]),
            ("Sissue-2\u{1}Sissue-2\u{1}", 0xc56a_1a46_77ea_8f0d, [1, 3, 12, 197]),
            ("Sissue-42\u{1}>1301!", 0x2e88_6c70_b841_dd6d, [0, 0, 2, 46]),
        ];
        for (key, hash, expected) in cases {
            assert_eq!(fnv1a64(key.as_bytes()), hash, "{key:?}");
            let shards = [2, 4, 16, 256].map(|n| shard_of(key, n));
            assert_eq!(shards, expected, "{key:?}");
        }
    }

    #[test]
    fn partitions_name_every_shard() {
        assert_eq!(partitions("prio", 1), ["prio"]);
        assert_eq!(partitions("prio", 3), ["prio#0", "prio#1", "prio#2"]);
        let mut p = "a#1".to_owned();
        push_suffix(&mut p, 0, 4);
        assert_eq!(p, "a#1#0");
        let mut q = "x".to_owned();
        push_suffix(&mut q, 5, 1);
        assert_eq!(q, "x");
    }
}
