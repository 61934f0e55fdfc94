//! The scan's tokens: a position in a record's text, and the JSON it reads
//! there (see [`super`]).

/// Where the string that `bytes` starts inside ends: the first `"`, `\\`
/// or control character. Sixteen bytes at a time with SSE2 (part of every
/// x86-64 processor) where the target has it, eight at a time in a word
/// otherwise and for the last few bytes.
pub(super) fn string_end(bytes: &[u8]) -> Option<usize> {
    #[allow(unused_mut)]
    let mut at = 0;
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    while let Some(chunk) = bytes.get(at..at + 16) {
        let found = sse2::specials(chunk)?;
        if found != 0 {
            return Some(at + found.trailing_zeros() as usize);
        }
        at += 16;
    }
    Some(at + string_end_by_words(bytes.get(at..)?)?)
}

/// [`string_end`], eight bytes at a time in a word.
pub(super) fn string_end_by_words(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // The high bit of each byte of `word` that is zero (exact for the
    // lowest such byte, which is all that is used).
    let zero = |word: u64| word.wrapping_sub(ONES) & !word & HIGHS;
    let mut chunks = bytes.chunks_exact(8);
    for (index, chunk) in chunks.by_ref().enumerate() {
        let Ok(chunk) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let word = u64::from_le_bytes(chunk);
        let found = zero(word ^ (ONES * u64::from(b'"')))
            | zero(word ^ (ONES * u64::from(b'\\')))
            | (word.wrapping_sub(ONES * 0x20) & !word & HIGHS);
        if found != 0 {
            return Some(index * 8 + found.trailing_zeros() as usize / 8);
        }
    }
    let tail = chunks.remainder();
    let at = tail.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    Some(bytes.len() - tail.len() + at)
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8, _mm_set_epi64x,
    };

    /// A bit for each byte of the sixteen in `chunk` that is a `"`, a `\\`
    /// or a control character (bit `i` for byte `i`); `None` when `chunk`
    /// is not sixteen bytes.
    pub(super) fn specials(chunk: &[u8]) -> Option<u32> {
        let (low, high) = chunk.split_at_checked(8)?;
        let low = i64::from_le_bytes(low.try_into().ok()?);
        let high = i64::from_le_bytes(high.try_into().ok()?);
        // SAFETY: the module is compiled only where the target has SSE2
        // (every x86-64 target does); the intrinsics take values, not
        // pointers, so they read nothing but their arguments.
        let marks = unsafe { marks(_mm_set_epi64x(high, low)) };
        // Sixteen bits at most: never negative.
        u32::try_from(marks).ok()
    }

    #[target_feature(enable = "sse2")]
    fn marks(bytes: __m128i) -> i32 {
        let quote = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(bytes, _mm_set1_epi8(b'\\' as i8));
        // Below 0x20: unchanged by the unsigned minimum with 0x1f.
        let control = _mm_cmpeq_epi8(_mm_min_epu8(bytes, _mm_set1_epi8(0x1f)), bytes);
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control))
    }
}

/// A position in a record's text. Every method reads one JSON token or
/// value at the position (after whitespace) and moves past it, or answers
/// `None` (give up), after which the scan is not used again.
pub(in crate::record) struct Scan<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scan<'a> {
    /// A scan of `text` from its start.
    pub(super) fn new(text: &'a str) -> Scan<'a> {
        Scan { text, at: 0 }
    }

    /// The text read so far.
    pub(super) fn read(&self) -> Option<&'a str> {
        self.text.get(..self.at)
    }

    /// The text of what `read` reads, from its first byte that is not
    /// whitespace.
    pub(super) fn raw(&mut self, read: impl FnOnce(&mut Self) -> Option<()>) -> Option<&'a str> {
        self.peek()?;
        let start = self.at;
        read(self)?;
        self.text.get(start..self.at)
    }

    /// The next byte that is not whitespace, left unread.
    pub(super) fn peek(&mut self) -> Option<u8> {
        let bytes = self.text.as_bytes();
        while let Some(&byte) = bytes.get(self.at) {
            if !matches!(byte, b' ' | b'\n' | b'\r' | b'\t') {
                return Some(byte);
            }
            self.at += 1;
        }
        None
    }

    /// Reads `byte` (after whitespace), or gives up. Compact JSON has the
    /// byte right there: looked at first, before any whitespace is skipped.
    pub(super) fn eat(&mut self, byte: u8) -> Option<()> {
        if self.text.as_bytes().get(self.at) == Some(&byte) {
            self.at += 1;
            return Some(());
        }
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// A string without escapes or control characters, borrowed.
    pub(super) fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let rest = self.text.as_bytes().get(start..)?;
        let length = string_end(rest)?;
        if rest.get(length) != Some(&b'"') {
            return None;
        }
        self.at = start + length + 1;
        self.text.get(start..start + length)
    }

    /// The opening of an attribute value, `{"TAG":`, and its tag (`S`,
    /// `N`, `BOOL`...): read at once when it is written without whitespace
    /// (as AWS writes it) and the tag is one to four capital letters, as
    /// every DynamoDB tag is; token by token otherwise, to the same answer.
    /// Every attribute value starts so: read token by token, its three
    /// tokens cost more than the value itself.
    pub(super) fn tag(&mut self) -> Option<&'a str> {
        let rest = self.text.as_bytes().get(self.at..)?;
        if let [b'{', b'"', letters @ ..] = rest {
            let length = letters.iter().take(5).position(|b| !b.is_ascii_uppercase());
            if let Some(length @ 1..=4) = length {
                if letters.get(length..length + 2) == Some(b"\":") {
                    let start = self.at + 2;
                    self.at = start + length + 2;
                    return self.text.get(start..start + length);
                }
            }
        }
        self.eat(b'{')?;
        let tag = self.string()?;
        self.eat(b':')?;
        Some(tag)
    }

    /// `true` or `false`.
    pub(super) fn boolean(&mut self) -> Option<bool> {
        match self.peek()? {
            b't' => self.literal("true").map(|()| true),
            b'f' => self.literal("false").map(|()| false),
            _ => None,
        }
    }

    pub(super) fn literal(&mut self, word: &str) -> Option<()> {
        self.text
            .get(self.at..)?
            .starts_with(word)
            .then(|| self.at += word.len())
    }

    /// A JSON number, as its text: `-`, an integer part without leading
    /// zeros, then an optional fraction and exponent.
    pub(super) fn number(&mut self) -> Option<&'a str> {
        self.peek()?;
        let bytes = self.text.as_bytes();
        let start = self.at;
        let digits = |at: &mut usize| {
            let from = *at;
            while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            *at > from
        };
        let mut at = start;
        if bytes.get(at) == Some(&b'-') {
            at += 1;
        }
        match bytes.get(at)? {
            b'0' => at += 1,
            b'1'..=b'9' => {
                digits(&mut at);
            }
            _ => return None,
        }
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            digits(&mut at).then_some(())?;
        }
        if matches!(bytes.get(at), Some(b'e' | b'E')) {
            at += 1;
            if matches!(bytes.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            digits(&mut at).then_some(())?;
        }
        self.at = at;
        self.text.get(start..at)
    }

    /// An object: `member` reads each member's value, given its name.
    pub(super) fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.items(b'{', b'}', |scan| {
            let name = scan.string()?;
            scan.eat(b':')?;
            member(scan, name)
        })
    }

    /// An array: `element` reads each element.
    pub(super) fn array(&mut self, element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.items(b'[', b']', element)
    }

    /// `open`, then items separated by commas, each read by `item`, then
    /// `close`.
    fn items(&mut self, open: u8, close: u8, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(open)?;
        if self.peek()? == close {
            self.at += 1;
            return Some(());
        }
        loop {
            item(self)?;
            match self.peek()? {
                b',' => self.at += 1,
                byte if byte == close => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Any JSON value, nested at most `depth` deep, read and dropped.
    pub(super) fn skip(&mut self, depth: u8) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(|scan, _| scan.skip(depth.checked_sub(1)?)),
            b'[' => self.array(|scan| scan.skip(depth.checked_sub(1)?)),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => self.number().map(drop),
        }
    }
}
