//! Where an encoded element's characters go, ascending or descending.

/// Where an element's ASCII characters go: appended as they are (ASC) or
/// mapped `c → U+009F − c` (DESC).
pub(crate) struct Sink<'a> {
    pub(super) out: &'a mut String,
    desc: bool,
}

impl<'a> Sink<'a> {
    pub fn new(out: &'a mut String, desc: bool) -> Self {
        Sink { out, desc }
    }

    /// Appends one character of the ascending form (printable ASCII `!`..`~`).
    #[inline]
    pub fn byte(&mut self, c: u8) {
        debug_assert!((0x21..=0x7E).contains(&c), "not printable ASCII: {c:#x}");
        let c = if self.desc { 0x9F - c } else { c };
        self.out.push(char::from(c));
    }

    /// Appends printable ASCII text of the ascending form.
    #[inline]
    pub fn ascii(&mut self, s: &str) {
        if self.desc {
            for c in s.bytes() {
                self.byte(c);
            }
        } else {
            self.out.push_str(s);
        }
    }

    /// Appends `value` as exactly `width` decimal digits (zero-padded; `value < 10^width`).
    pub fn digits(&mut self, value: u32, width: u32) {
        let mut div = 10u32.pow(width.saturating_sub(1));
        while div > 0 {
            self.byte(b'0' + ((value / div) % 10) as u8);
            div /= 10;
        }
    }

    /// Appends the nines' complement (`d → 9 − d`) of ASCII digits.
    #[inline]
    pub fn complement(&mut self, digits: &str) {
        for d in digits.bytes() {
            self.byte(b'9' - d + b'0');
        }
    }
}
