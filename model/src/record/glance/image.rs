//! An image glanced at: read past without being built, each value checked
//! as it goes by (see the parent module's doc).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::record::attr::{
    drain_map, drain_seq, is_number, lenient_all_but, lenient_scalars, ImageProblem, MaybeBool, MaybeText, Text,
};
use crate::sortkey;
use crate::value::{self as view, Attr, Attrs, MAX_ITEM_BYTES};

/// An image glanced at: `None` when unsure, else its top-level S and N
/// values (the candidates for key attributes), by name.
#[cfg_attr(test, derive(Debug))]
pub(in crate::record) struct ImageGlance<'a>(Option<Vec<Entry<'a>>>);

/// One attribute of an image glanced at: its name and, for an S or an N,
/// its value.
pub(in crate::record) type Entry<'a> = (Cow<'a, str>, Option<Scalar<'a>>);

/// A top-level S or N value, borrowed from the text when it has no escapes.
#[cfg_attr(test, derive(Debug))]
pub(in crate::record) enum Scalar<'a> {
    S(Cow<'a, str>),
    N(Cow<'a, str>),
}

/// One attribute value glanced at: `None` when unsure, else the value when
/// it is an S or an N.
struct AttrGlance<'a>(Option<Option<Scalar<'a>>>);

/// An SS's members: sure when an array of distinct strings, not empty.
struct SetGlance(bool);

/// An L's elements: sure when every one is.
struct ListGlance(bool);

/// An M: sure when every value is and the names are distinct.
struct MapGlance(bool);

impl<'a> ImageGlance<'a> {
    /// Whether the glance is sure of the image.
    #[cfg(test)]
    pub(in crate::record) fn is_sure(&self) -> bool {
        self.0.is_some()
    }

    /// The glance of an image whose values are all sure, from its entries
    /// in any order: `None` when a name repeats.
    pub(in crate::record) fn sure(mut entries: Vec<Entry<'a>>) -> Option<ImageGlance<'a>> {
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        entries
            .windows(2)
            .all(|pair| pair[0].0 != pair[1].0)
            .then_some(ImageGlance(Some(entries)))
    }

    /// Whether the glance is sure and the image has every key attribute
    /// of `keys` (the record's usable `Keys`), with the same S or N value.
    /// Otherwise the whole reading says what is wrong, if anything.
    pub(in crate::record) fn agrees_with<K: Attrs>(&self, keys: Option<&Result<K, ImageProblem>>) -> bool {
        let (Some(entries), Some(Ok(keys))) = (&self.0, keys) else {
            return false;
        };
        !keys.is_empty()
            && keys.iter().all(|(name, key)| {
                let Ok(at) = entries.binary_search_by(|(n, _)| n.as_ref().cmp(name)) else {
                    return false;
                };
                match (&entries[at].1, key.scalar()) {
                    (Some(Scalar::S(s)), view::Scalar::S(k)) => s == k,
                    (Some(Scalar::N(n)), view::Scalar::N(k)) => n == k,
                    _ => false,
                }
            })
    }
}

/// Room made at once for an image's or a map's names as they are glanced
/// at (or an image's attributes as the scan reads them): most have fewer,
/// and growing one name at a time reallocated twice or three times per
/// image.
pub(in crate::record) const GLANCE_CAPACITY: usize = 16;

/// Whether the glance is sure of an N value's text: a decimal number
/// (as a whole reading checks it) that DynamoDB can hold (as
/// `validate::check` checks it).
pub(in crate::record) fn sure_number(text: &str) -> bool {
    is_number(text) && sortkey::is_number(text)
}

/// Whether a record whose text is `len` bytes long may be glanced at: its
/// images' sizes are then surely within DynamoDB's limit.
pub(in crate::record) fn small_enough(len: usize) -> bool {
    len <= MAX_ITEM_BYTES
}

/// Whether the names, sorted, are distinct.
pub(in crate::record) fn distinct_sorted<T: Ord>(names: &mut [T]) -> bool {
    names.sort_unstable();
    names.windows(2).all(|pair| pair[0] != pair[1])
}

impl<'de: 'a, 'a> Deserialize<'de> for ImageGlance<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ImageGlance<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ImageGlance<'de>, A::Error> {
                let mut entries = Some(Vec::with_capacity(GLANCE_CAPACITY));
                while let Some(Text(name)) = map.next_key::<Text<'de>>()? {
                    let AttrGlance(value) = map.next_value::<AttrGlance<'de>>()?;
                    match (&mut entries, value) {
                        (Some(entries), Some(value)) => entries.push((name, value)),
                        _ => entries = None,
                    }
                }
                Ok(entries.and_then(ImageGlance::sure).unwrap_or(ImageGlance(None)))
            }
            lenient_all_but!(map, ImageGlance<'de>, ImageGlance(None));
        }
        deserializer.deserialize_any(V)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for AttrGlance<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AttrGlance<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AttrGlance<'de>, A::Error> {
                let Some(Text(tag)) = map.next_key::<Text<'de>>()? else {
                    return Ok(AttrGlance(None));
                };
                let value = match &*tag {
                    "S" => map.next_value::<MaybeText<'de>>()?.0.map(|s| Some(Scalar::S(s))),
                    "N" => match map.next_value::<MaybeText<'de>>()?.0 {
                        Some(n) if sure_number(&n) => Some(Some(Scalar::N(n))),
                        _ => None,
                    },
                    "BOOL" => map.next_value::<MaybeBool>()?.0.map(|_| None),
                    "NULL" => (map.next_value::<MaybeBool>()?.0 == Some(true)).then_some(None),
                    "SS" => map.next_value::<SetGlance>()?.0.then_some(None),
                    "L" => map.next_value::<ListGlance>()?.0.then_some(None),
                    "M" => map.next_value::<MapGlance>()?.0.then_some(None),
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                        None
                    }
                };
                if map.next_key::<IgnoredAny>()?.is_some() {
                    map.next_value::<IgnoredAny>()?;
                    drain_map(map)?;
                    return Ok(AttrGlance(None));
                }
                Ok(AttrGlance(value))
            }
            lenient_all_but!(map, AttrGlance<'de>, AttrGlance(None));
        }
        deserializer.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for SetGlance {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SetGlance;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<SetGlance, A::Error> {
                let mut members = Some(Vec::new());
                while let Some(MaybeText(member)) = seq.next_element::<MaybeText<'de>>()? {
                    match (&mut members, member) {
                        (Some(members), Some(member)) => members.push(member),
                        _ => members = None,
                    }
                }
                Ok(SetGlance(members.is_some_and(|mut members| {
                    !members.is_empty() && distinct_sorted(&mut members)
                })))
            }
            lenient_all_but!(seq, SetGlance, SetGlance(false));
        }
        deserializer.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for ListGlance {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ListGlance;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ListGlance, A::Error> {
                let mut sure = true;
                while let Some(AttrGlance(element)) = seq.next_element::<AttrGlance<'de>>()? {
                    sure &= element.is_some();
                }
                Ok(ListGlance(sure))
            }
            lenient_all_but!(seq, ListGlance, ListGlance(false));
        }
        deserializer.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for MapGlance {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MapGlance;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MapGlance, A::Error> {
                let mut names = Some(Vec::with_capacity(GLANCE_CAPACITY));
                while let Some(Text(name)) = map.next_key::<Text<'de>>()? {
                    let AttrGlance(value) = map.next_value::<AttrGlance<'de>>()?;
                    match (&mut names, value) {
                        (Some(names), Some(_)) => names.push(name),
                        _ => names = None,
                    }
                }
                Ok(MapGlance(names.is_some_and(|mut names| distinct_sorted(&mut names))))
            }
            lenient_all_but!(map, MapGlance, MapGlance(false));
        }
        deserializer.deserialize_any(V)
    }
}
