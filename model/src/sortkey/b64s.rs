//! b64s: base64 with an alphabet in ascending ASCII order, most significant
//! bit first, last group zero-filled, no padding. Byte order of the text
//! equals the order of the byte strings (given a terminator below `-`).

use super::sink::Sink;

const ALPHABET: &[u8; 64] = b"-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";

/// Appends the b64s text of `bytes`.
pub(crate) fn encode(bytes: &[u8], sink: &mut Sink<'_>) {
    let sym = |v: u32| ALPHABET[(v & 63) as usize];
    let mut chunks = bytes.chunks_exact(3);
    for c in &mut chunks {
        let n = u32::from(c[0]) << 16 | u32::from(c[1]) << 8 | u32::from(c[2]);
        sink.byte(sym(n >> 18));
        sink.byte(sym(n >> 12));
        sink.byte(sym(n >> 6));
        sink.byte(sym(n));
    }
    match *chunks.remainder() {
        [a] => {
            let n = u32::from(a) << 16;
            sink.byte(sym(n >> 18));
            sink.byte(sym(n >> 12));
        }
        [a, b] => {
            let n = u32::from(a) << 16 | u32::from(b) << 8;
            sink.byte(sym(n >> 18));
            sink.byte(sym(n >> 12));
            sink.byte(sym(n >> 6));
        }
        _ => {}
    }
}

/// The alphabet character of a 6-bit value (the low 6 bits of `v`).
pub(crate) fn symbol(v: u32) -> u8 {
    ALPHABET[(v & 63) as usize]
}

/// The 6-bit value of an alphabet character.
pub(crate) fn value(c: u8) -> Option<u32> {
    let v = match c {
        b'-' => 0,
        b'0'..=b'9' => c - b'0' + 1,
        b'A'..=b'Z' => c - b'A' + 11,
        b'_' => 37,
        b'a'..=b'z' => c - b'a' + 38,
        _ => return None,
    };
    Some(u32::from(v))
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn alphabet_is_ascending_and_values_invert_it() {
        assert!(ALPHABET.windows(2).all(|w| w[0] < w[1]));
        for (i, &c) in ALPHABET.iter().enumerate() {
            assert_eq!(value(c), Some(i as u32));
        }
        assert_eq!(value(b'!'), None);
        assert_eq!(value(b'='), None);
    }

    #[test]
    fn encodes() {
        let enc = |b: &[u8]| {
            let mut s = String::new();
            encode(b, &mut Sink::new(&mut s, false));
            s
        };
        assert_eq!(enc(b""), "");
        assert_eq!(enc(&[0]), "--");
        assert_eq!(enc(&[0, 1]), "--3");
        assert_eq!(enc(&[0xFF]), "zk");
        assert_eq!(enc(&[0xFF, 0xFF, 0xFF]), "zzzz");
        assert_eq!(enc(b"b"), "NV");
    }
}
