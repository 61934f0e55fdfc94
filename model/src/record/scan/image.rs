//! An image scanned: glanced at (checked, its top-level S and N values
//! kept) or read whole, as serde_json reads it into
//! [`ImageGlance`] or [`ImageField`].

use std::borrow::Cow;

use super::token::Scan;
use crate::record::attr::{is_number, BorrowedField, ImageField};
use crate::record::glance::image::{distinct_sorted, sure_number, ImageGlance, Scalar, GLANCE_CAPACITY};
use crate::value::{borrowed, Image, Name, Value};

/// Up to this many names, a nested map's names are checked for repeats
/// without sorting them.
const FEW: usize = 16;

/// What an image scans into.
pub(in crate::record) trait Scanned<'a>: Sized {
    /// Reads the image object at the scan, values nested at most `depth`
    /// deep; `None` when the scan gives up.
    fn scan(scan: &mut Scan<'a>, depth: u8) -> Option<Self>;
}

/// What a record's `Keys` scan into: S and N values only.
pub(in crate::record) trait ScannedKeys<'a>: Sized {
    /// Reads the `Keys` object at the scan; `None` when the scan gives up.
    fn scan_keys(scan: &mut Scan<'a>) -> Option<Self>;
}

impl ScannedKeys<'_> for ImageField {
    fn scan_keys(scan: &mut Scan<'_>) -> Option<Self> {
        Some(ImageField(Ok(keys::<Value>(scan)?)))
    }
}

impl<'a> ScannedKeys<'a> for BorrowedField<'a> {
    fn scan_keys(scan: &mut Scan<'a>) -> Option<Self> {
        Some(BorrowedField(Ok(keys::<borrowed::Value<'a>>(scan)?)))
    }
}

/// `Keys`: S and N values only; `None` (give up) for another type or a
/// repeated name.
fn keys<'a, V: Whole<'a>>(scan: &mut Scan<'a>) -> Option<V::Image> {
    let mut entries = Vec::with_capacity(2);
    scan.object(|scan, name| {
        let tag = scan.tag()?;
        let text = scan.string()?;
        let value = match tag {
            "S" => V::s(V::text(text)),
            "N" if is_number(text) => V::n(V::text(text)),
            _ => return None,
        };
        scan.eat(b'}')?;
        entries.push((V::name(name), value));
        Some(())
    })?;
    V::image(entries)
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
        Some(ImageField(Ok(whole_image::<Value>(scan, depth)?)))
    }
}

impl<'a> Scanned<'a> for BorrowedField<'a> {
    fn scan(scan: &mut Scan<'a>, depth: u8) -> Option<Self> {
        Some(BorrowedField(Ok(whole_image::<borrowed::Value<'a>>(scan, depth)?)))
    }
}

/// What a value read whole is built as: owned ([`Value`]), or borrowed
/// from the text ([`borrowed::Value`]; the scan reads no string with an
/// escape, so every string is a slice of the text).
trait Whole<'a>: Sized {
    type Text: AsRef<str>;
    type Name;
    type Image;
    fn text(text: &'a str) -> Self::Text;
    fn name(name: &'a str) -> Self::Name;
    /// The image of `entries`; `None` when a name repeats.
    fn image(entries: Vec<(Self::Name, Self)>) -> Option<Self::Image>;
    fn s(text: Self::Text) -> Self;
    fn n(text: Self::Text) -> Self;
    fn boolean(value: bool) -> Self;
    fn null(value: bool) -> Self;
    fn ss(members: Vec<Self::Text>) -> Self;
    fn ns(members: Vec<Self::Text>) -> Self;
    fn l(list: Vec<Self>) -> Self;
    fn m(map: Self::Image) -> Self;
}

impl<'a> Whole<'a> for Value {
    type Text = String;
    type Name = Name;
    type Image = Image;
    fn text(text: &'a str) -> String {
        text.to_owned()
    }
    fn name(name: &'a str) -> Name {
        Name::from(name)
    }
    fn image(mut entries: Vec<(Name, Value)>) -> Option<Image> {
        // The exact size, as serde_json's reading leaves it.
        entries.shrink_to_fit();
        Image::from_distinct(entries).ok()
    }
    fn s(text: String) -> Value {
        Value::S(text)
    }
    fn n(text: String) -> Value {
        Value::N(text)
    }
    fn boolean(value: bool) -> Value {
        Value::Bool(value)
    }
    fn null(value: bool) -> Value {
        Value::Null(value)
    }
    fn ss(members: Vec<String>) -> Value {
        Value::Ss(members)
    }
    fn ns(members: Vec<String>) -> Value {
        Value::Ns(members)
    }
    fn l(list: Vec<Value>) -> Value {
        Value::L(list)
    }
    fn m(map: Image) -> Value {
        Value::M(map.into_map())
    }
}

impl<'a> Whole<'a> for borrowed::Value<'a> {
    type Text = Cow<'a, str>;
    type Name = Cow<'a, str>;
    type Image = borrowed::Image<'a>;
    fn text(text: &'a str) -> Cow<'a, str> {
        Cow::Borrowed(text)
    }
    fn name(name: &'a str) -> Cow<'a, str> {
        Cow::Borrowed(name)
    }
    fn image(entries: Vec<(Cow<'a, str>, Self)>) -> Option<borrowed::Image<'a>> {
        borrowed::Image::from_distinct(entries).ok()
    }
    fn s(text: Cow<'a, str>) -> Self {
        borrowed::Value::S(text)
    }
    fn n(text: Cow<'a, str>) -> Self {
        borrowed::Value::N(text)
    }
    fn boolean(value: bool) -> Self {
        borrowed::Value::Bool(value)
    }
    fn null(value: bool) -> Self {
        borrowed::Value::Null(value)
    }
    fn ss(members: Vec<Cow<'a, str>>) -> Self {
        borrowed::Value::Ss(members)
    }
    fn ns(members: Vec<Cow<'a, str>>) -> Self {
        borrowed::Value::Ns(members)
    }
    fn l(list: Vec<Self>) -> Self {
        borrowed::Value::L(list)
    }
    fn m(map: borrowed::Image<'a>) -> Self {
        borrowed::Value::M(map)
    }
}

/// An image or an M's object read whole; `None` (give up) when a name repeats.
fn whole_image<'a, V: Whole<'a>>(scan: &mut Scan<'a>, depth: u8) -> Option<V::Image> {
    let mut entries = Vec::with_capacity(GLANCE_CAPACITY);
    scan.object(|scan, name| {
        let value = whole_value::<V>(scan, depth)?;
        entries.push((V::name(name), value));
        Some(())
    })?;
    V::image(entries)
}

/// An attribute value read whole: any value the whole reading reads
/// without a problem but B and BS (whether it is poison is checked later,
/// as for any record).
fn whole_value<'a, V: Whole<'a>>(scan: &mut Scan<'a>, depth: u8) -> Option<V> {
    let depth = depth.checked_sub(1)?;
    let tag = scan.tag()?;
    let value = match tag {
        "S" => V::s(V::text(scan.string()?)),
        "N" => {
            let number = scan.string()?;
            is_number(number).then(|| V::n(V::text(number)))?
        }
        "BOOL" => V::boolean(scan.boolean()?),
        "NULL" => V::null(scan.boolean()?),
        "SS" => V::ss(strings::<V>(scan)?),
        "NS" => {
            let numbers = strings::<V>(scan)?;
            numbers.iter().all(|n| is_number(n.as_ref())).then(|| V::ns(numbers))?
        }
        "L" => {
            let mut list = Vec::new();
            scan.array(|scan| {
                list.push(whole_value::<V>(scan, depth)?);
                Some(())
            })?;
            V::l(list)
        }
        "M" => V::m(whole_image::<V>(scan, depth)?),
        _ => return None,
    };
    scan.eat(b'}')?;
    Some(value)
}

/// An array of strings.
fn strings<'a, V: Whole<'a>>(scan: &mut Scan<'a>) -> Option<Vec<V::Text>> {
    let mut strings = Vec::new();
    scan.array(|scan| {
        strings.push(V::text(scan.string()?));
        Some(())
    })?;
    Some(strings)
}

/// An attribute value the glance is sure of: `Some(scalar)` for an S or
/// an N, `None` for the others.
fn sure_value<'a>(scan: &mut Scan<'a>, depth: u8) -> Option<Option<Scalar<'a>>> {
    let depth = depth.checked_sub(1)?;
    let tag = scan.tag()?;
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
