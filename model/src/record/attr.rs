//! DynamoDB JSON attribute values, deserialized leniently: a malformed value
//! never aborts the record's deserialization. It becomes an [`AttrProblem`]
//! that names what is wrong without repeating the value, and the rest of the
//! input is consumed as usual. (serde's own type errors quote the offending
//! value, which may be item contents, and do not say which attribute.)
//!
//! A serde visitor per DynamoDB JSON type tag (`S`, `N`, `B`, `BOOL`,
//! `NULL`, `M`, `L`, `SS`, `NS`, `BS`), each as lenient as the JSON
//! readings of [`lenient`]; what can be wrong is in [`problem`].

use std::borrow::Cow;
use std::fmt;

use base64::Engine;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::value::{borrowed, Image, Name, Value};

mod lenient;
mod problem;

pub(super) use lenient::{drain_map, drain_seq, lenient_all_but, lenient_scalars, MaybeBool, MaybeText};
use lenient::{MaybeString, MaybeStrings};
use problem::duplicate;
pub(super) use problem::{AttrProblem, ImageProblem};

const BASE64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// A string that borrows from the input when it has no escapes.
#[cfg_attr(test, derive(Debug))]
pub(super) struct Text<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// An image, or why it is malformed. `Option<ImageField>` reads `null` as `None`.
#[cfg_attr(test, derive(Debug))]
pub(super) struct ImageField(pub Result<Image, ImageProblem>);

/// An image borrowed from the text where it can be, or why it is
/// malformed: what the indexer reads ([`super::read_batch`] into `borrowed::Image`).
/// serde_json reads it as an [`ImageField`], which is then moved into the
/// borrowed form; the scan ([`super::scan`]) reads it borrowed.
#[cfg_attr(test, derive(Debug))]
pub(super) struct BorrowedField<'a>(pub Result<borrowed::Image<'a>, ImageProblem>);

impl<'de> Deserialize<'de> for BorrowedField<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let ImageField(field) = ImageField::deserialize(deserializer)?;
        Ok(BorrowedField(field.map(borrowed::Image::from)))
    }
}

/// A record's `Keys` as read, owned ([`ImageField`]) or borrowed
/// ([`BorrowedField`]).
pub(super) trait KeysField<J> {
    fn keys(&self) -> &Result<J, ImageProblem>;
    fn into_keys(self) -> Result<J, ImageProblem>;
}

impl KeysField<Image> for ImageField {
    fn keys(&self) -> &Result<Image, ImageProblem> {
        &self.0
    }
    fn into_keys(self) -> Result<Image, ImageProblem> {
        self.0
    }
}

impl<'a> KeysField<borrowed::Image<'a>> for BorrowedField<'a> {
    fn keys(&self) -> &Result<borrowed::Image<'a>, ImageProblem> {
        &self.0
    }
    fn into_keys(self) -> Result<borrowed::Image<'a>, ImageProblem> {
        self.0
    }
}

std::thread_local! {
    /// The entries of the image being read (a nested `M` finds it taken
    /// and starts its own).
    static SCRATCH: std::cell::Cell<Vec<(Name, Value)>> = const { std::cell::Cell::new(Vec::new()) };
}

/// One attribute value, or why it is malformed.
struct Attr(Result<Value, AttrProblem>);

/// A JSON array of attribute values (an `L`), or the first problem.
struct AttrList(Result<Vec<Value>, AttrProblem>);

impl<'de> Deserialize<'de> for AttrList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AttrList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AttrList, A::Error> {
                let mut out = Ok(Vec::with_capacity(seq.size_hint().unwrap_or(4).min(64)));
                while let Some(Attr(item)) = seq.next_element::<Attr>()? {
                    match (&mut out, item) {
                        (Ok(values), Ok(item)) => values.push(item),
                        (Ok(_), Err(problem)) => out = Err(problem.nested()),
                        (Err(_), _) => {}
                    }
                }
                Ok(AttrList(out))
            }
            lenient_all_but!(
                seq,
                AttrList,
                AttrList(Err(AttrProblem::WrongType {
                    tag: "L",
                    expected: "an array"
                }))
            );
        }
        deserializer.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for ImageField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ImageField;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ImageField, A::Error> {
                // Gathered in a reused vector, then moved into one of the
                // exact size: serde_json gives no size hint, and a vector
                // grown step by step holds up to twice the room it needs.
                let mut entries = SCRATCH.take();
                entries.clear();
                let mut problem = None;
                while let Some(Text(name)) = map.next_key::<Text<'de>>()? {
                    let Attr(value) = map.next_value::<Attr>()?;
                    if problem.is_some() {
                        continue;
                    }
                    match value {
                        Ok(value) => entries.push((Name::from(name.as_ref()), value)),
                        Err(attr_problem) => {
                            // The first problem in the document's order: a
                            // name repeated before this one comes first.
                            problem = Some(match Image::from_distinct(std::mem::take(&mut entries)) {
                                Err(repeated) => duplicate(repeated),
                                Ok(_) => ImageProblem::Attribute {
                                    name: name.into_owned(),
                                    problem: attr_problem,
                                },
                            });
                        }
                    }
                }
                // Not `mem::take`: the scratch keeps its room, the image
                // gets a vector of the exact size.
                #[allow(clippy::drain_collect)]
                let exact: Vec<(Name, Value)> = entries.drain(..).collect();
                let field = match problem {
                    Some(problem) => Err(problem),
                    None => Image::from_distinct(exact).map_err(duplicate),
                };
                SCRATCH.set(entries);
                Ok(ImageField(field))
            }
            lenient_all_but!(map, ImageField, ImageField(Err(ImageProblem::NotAnObject)));
        }
        deserializer.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Attr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Attr;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Attr, A::Error> {
                let Some(Text(tag)) = map.next_key::<Text<'de>>()? else {
                    return Ok(Attr(Err(AttrProblem::NoTag)));
                };
                let value = read_tagged(&tag, &mut map)?;
                if map.next_key::<IgnoredAny>()?.is_some() {
                    map.next_value::<IgnoredAny>()?;
                    drain_map(map)?;
                    return Ok(Attr(Err(AttrProblem::SeveralTags)));
                }
                Ok(Attr(value))
            }
            lenient_all_but!(map, Attr, Attr(Err(AttrProblem::NotAnObject)));
        }
        deserializer.deserialize_any(V)
    }
}

/// Reads the value of a one-key DynamoDB JSON object whose key is `tag`.
fn read_tagged<'de, A: MapAccess<'de>>(tag: &str, map: &mut A) -> Result<Result<Value, AttrProblem>, A::Error> {
    const STRING: &str = "a string";
    const STRINGS: &str = "an array of strings";
    Ok(match tag {
        "S" => match map.next_value::<MaybeString>()?.0 {
            Some(s) => Ok(Value::S(s)),
            None => Err(AttrProblem::WrongType {
                tag: "S",
                expected: STRING,
            }),
        },
        "N" => match map.next_value::<MaybeString>()?.0 {
            Some(n) if is_number(&n) => Ok(Value::N(n)),
            Some(_) => Err(AttrProblem::BadNumber { tag: "N" }),
            None => Err(AttrProblem::WrongType {
                tag: "N",
                expected: STRING,
            }),
        },
        "B" => match map.next_value::<MaybeString>()?.0 {
            Some(b) => BASE64
                .decode(b)
                .map(Value::B)
                .map_err(|_| AttrProblem::BadBase64 { tag: "B" }),
            None => Err(AttrProblem::WrongType {
                tag: "B",
                expected: "a base64 string",
            }),
        },
        "BOOL" => match map.next_value::<MaybeBool>()?.0 {
            Some(b) => Ok(Value::Bool(b)),
            None => Err(AttrProblem::WrongType {
                tag: "BOOL",
                expected: "true or false",
            }),
        },
        "NULL" => match map.next_value::<MaybeBool>()?.0 {
            Some(b) => Ok(Value::Null(b)),
            None => Err(AttrProblem::WrongType {
                tag: "NULL",
                expected: "true or false",
            }),
        },
        "M" => match map.next_value::<ImageField>()?.0 {
            Ok(m) => Ok(Value::M(m.into_map())),
            Err(ImageProblem::NotAnObject) => Err(AttrProblem::WrongType {
                tag: "M",
                expected: "an object",
            }),
            Err(ImageProblem::Attribute { problem, .. }) => Err(problem.nested()),
        },
        "L" => map.next_value::<AttrList>()?.0.map(Value::L),
        "SS" => match map.next_value::<MaybeStrings>()?.0 {
            Some(ss) => Ok(Value::Ss(ss)),
            None => Err(AttrProblem::WrongType {
                tag: "SS",
                expected: STRINGS,
            }),
        },
        "NS" => match map.next_value::<MaybeStrings>()?.0 {
            Some(ns) if ns.iter().all(|n| is_number(n)) => Ok(Value::Ns(ns)),
            Some(_) => Err(AttrProblem::BadNumber { tag: "NS" }),
            None => Err(AttrProblem::WrongType {
                tag: "NS",
                expected: STRINGS,
            }),
        },
        "BS" => match map.next_value::<MaybeStrings>()?.0 {
            Some(bs) => bs
                .into_iter()
                .map(|b| BASE64.decode(b))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Bs)
                .map_err(|_| AttrProblem::BadBase64 { tag: "BS" }),
            None => Err(AttrProblem::WrongType {
                tag: "BS",
                expected: STRINGS,
            }),
        },
        other => {
            map.next_value::<IgnoredAny>()?;
            let shown = (!other.is_empty() && other.len() <= 8 && other.bytes().all(|b| b.is_ascii_alphanumeric()))
                .then(|| other.to_owned());
            Err(AttrProblem::UnknownTag(shown))
        }
    })
}

/// Whether `text` is a decimal number as DynamoDB accepts one: an optional
/// sign, digits with an optional decimal point (at least one digit), and an
/// optional exponent. No whitespace, no `NaN` or `Infinity`.
pub(super) fn is_number(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    if matches!(bytes.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let mut digits = 0;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
        digits += 1;
    }
    if i < bytes.len() && bytes[i] == b'.' {
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return false;
    }
    if i < bytes.len() && matches!(bytes[i], b'e' | b'E') {
        i += 1;
        if i < bytes.len() && matches!(bytes[i], b'+' | b'-') {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    i == bytes.len()
}

/// The type tag of a key attribute that is not S, N or B.
pub(super) fn bad_key_type<V: crate::value::Attr>(value: &V) -> Option<&'static str> {
    use crate::value::Scalar;
    match value.scalar() {
        Scalar::S(_) | Scalar::N(_) | Scalar::B(_) => None,
        other => Some(other.type_name()),
    }
}
