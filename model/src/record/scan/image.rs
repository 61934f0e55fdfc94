//! An image scanned: glanced at (checked, its top-level S and N values
//! kept) or read whole, as serde_json reads it into
//! [`ImageGlance`] or [`ImageField`].

use std::borrow::Cow;

use super::token::Scan;
use crate::record::attr::{is_number, ImageField};
use crate::record::glance::{distinct_sorted, sure_number, ImageGlance, Scalar, GLANCE_CAPACITY};
use crate::value::{Image, Name, Value};

/// Up to this many names, a nested map's names are checked for repeats
/// without sorting them.
const FEW: usize = 16;

/// What an image scans into.
pub(in crate::record) trait Scanned<'a>: Sized {
    /// Reads the image object at the scan, values nested at most `depth`
    /// deep; `None` when the scan gives up.
    fn scan(scan: &mut Scan<'a>, depth: u8) -> Option<Self>;
}

impl<'a> Scanned<'a> for ImageGlance<'a> {
    fn scan(scan: &mut Scan<'a>, depth: u8) -> Option<Self> {
        let mut entries = Vec::with_capacity(GLANCE_CAPACITY);
        scan.object(|scan, name| {
            let value = sure_value(scan, depth)?;
            entries.push((Cow::Borrowed(name), value));
            Some(())
        })?;
        ImageGlance::sure(entries)
    }
}

impl Scanned<'_> for ImageField {
    fn scan(scan: &mut Scan<'_>, depth: u8) -> Option<Self> {
        Some(ImageField(Ok(whole_image(scan, depth)?)))
    }
}

/// An image or an M's object read whole; `None` (give up) when a name repeats.
fn whole_image(scan: &mut Scan<'_>, depth: u8) -> Option<Image> {
    let mut entries = Vec::with_capacity(GLANCE_CAPACITY);
    scan.object(|scan, name| {
        let value = whole_value(scan, depth)?;
        entries.push((Name::from(name), value));
        Some(())
    })?;
    // The exact size, as serde_json's reading leaves it.
    entries.shrink_to_fit();
    Image::from_distinct(entries).ok()
}

/// An attribute value read whole: any value the whole reading reads
/// without a problem but B and BS (whether it is poison is checked later,
/// as for any record).
fn whole_value(scan: &mut Scan<'_>, depth: u8) -> Option<Value> {
    let depth = depth.checked_sub(1)?;
    scan.eat(b'{')?;
    let tag = scan.string()?;
    scan.eat(b':')?;
    let value = match tag {
        "S" => Value::S(scan.string()?.to_owned()),
        "N" => {
            let number = scan.string()?;
            is_number(number).then(|| Value::N(number.to_owned()))?
        }
        "BOOL" => Value::Bool(scan.boolean()?),
        "NULL" => Value::Null(scan.boolean()?),
        "SS" => Value::Ss(strings(scan)?),
        "NS" => {
            let numbers = strings(scan)?;
            numbers.iter().all(|n| is_number(n)).then_some(Value::Ns(numbers))?
        }
        "L" => {
            let mut list = Vec::new();
            scan.array(|scan| {
                list.push(whole_value(scan, depth)?);
                Some(())
            })?;
            Value::L(list)
        }
        "M" => Value::M(whole_image(scan, depth)?.into_map()),
        _ => return None,
    };
    scan.eat(b'}')?;
    Some(value)
}

/// An array of strings, owned.
fn strings(scan: &mut Scan<'_>) -> Option<Vec<String>> {
    let mut strings = Vec::new();
    scan.array(|scan| {
        strings.push(scan.string()?.to_owned());
        Some(())
    })?;
    Some(strings)
}

/// An attribute value the glance is sure of: `Some(scalar)` for an S or
/// an N, `None` for the others.
fn sure_value<'a>(scan: &mut Scan<'a>, depth: u8) -> Option<Option<Scalar<'a>>> {
    let depth = depth.checked_sub(1)?;
    scan.eat(b'{')?;
    let tag = scan.string()?;
    scan.eat(b':')?;
    let scalar = match tag {
        "S" => Some(Scalar::S(Cow::Borrowed(scan.string()?))),
        "N" => {
            let number = scan.string()?;
            sure_number(number).then_some(())?;
            Some(Scalar::N(Cow::Borrowed(number)))
        }
        "BOOL" => scan.boolean().map(|_| None)?,
        "NULL" => scan.boolean()?.then_some(None)?,
        "SS" => {
            let mut members = Vec::new();
            scan.array(|scan| {
                members.push(scan.string()?);
                Some(())
            })?;
            (!members.is_empty() && distinct_sorted(&mut members)).then_some(None)?
        }
        "L" => scan.array(|scan| sure_value(scan, depth).map(drop)).map(|()| None)?,
        "M" => sure_map(scan, depth).map(|()| None)?,
        _ => return None,
    };
    scan.eat(b'}')?;
    Some(scalar)
}

/// An M's object the glance is sure of: every value sure, the names distinct.
fn sure_map(scan: &mut Scan<'_>, depth: u8) -> Option<()> {
    let mut few: [&str; FEW] = [""; FEW];
    let mut many: Vec<&str> = Vec::new();
    let mut count = 0;
    scan.object(|scan, name| {
        sure_value(scan, depth)?;
        if count < FEW {
            // Compared inline: most names are short.
            if few[..count]
                .iter()
                .any(|seen| seen.as_bytes().iter().eq(name.as_bytes()))
            {
                return None;
            }
            few[count] = name;
        } else {
            if count == FEW {
                many.extend_from_slice(&few);
            }
            many.push(name);
        }
        count += 1;
        Some(())
    })?;
    (count <= FEW || distinct_sorted(&mut many)).then_some(())
}
