//! Lenient readings of JSON values: any JSON value reads, and one of
//! another shape than wanted becomes `None` (its contents drained), so
//! that a malformed value never aborts the record's reading.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A JSON string, or `None` for any other JSON value.
pub(super) struct MaybeString(pub(super) Option<String>);

/// A JSON string borrowed from the text when it has no escapes, or `None`
/// for any other JSON value (the glance's [`MaybeString`]).
pub(in crate::record) struct MaybeText<'a>(pub Option<Cow<'a, str>>);

/// A JSON bool, or `None` for any other JSON value.
pub(in crate::record) struct MaybeBool(pub Option<bool>);

/// A JSON array of strings, or `None` for any other JSON value.
pub(super) struct MaybeStrings(pub(super) Option<Vec<String>>);

/// Drains a map or sequence whose contents are not wanted.
pub(in crate::record) fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

pub(in crate::record) fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Implements the visitor methods for every JSON scalar, returning `$fallback`.
macro_rules! lenient_scalars {
    ($value:ty, $fallback:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<$value, E> {
            Ok($fallback)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<$value, E> {
            Ok($fallback)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<$value, E> {
            Ok($fallback)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<$value, E> {
            Ok($fallback)
        }
        fn visit_unit<E: de::Error>(self) -> Result<$value, E> {
            Ok($fallback)
        }
    };
}

/// `lenient_scalars!` plus strings, arrays and objects.
macro_rules! lenient_all_but {
    (str, $value:ty, $fallback:expr) => {
        lenient_scalars!($value, $fallback);
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<$value, A::Error> {
            drain_seq(seq)?;
            Ok($fallback)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<$value, A::Error> {
            drain_map(map)?;
            Ok($fallback)
        }
    };
    (seq, $value:ty, $fallback:expr) => {
        lenient_scalars!($value, $fallback);
        fn visit_str<E: de::Error>(self, _: &str) -> Result<$value, E> {
            Ok($fallback)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<$value, A::Error> {
            drain_map(map)?;
            Ok($fallback)
        }
    };
    (map, $value:ty, $fallback:expr) => {
        lenient_scalars!($value, $fallback);
        fn visit_str<E: de::Error>(self, _: &str) -> Result<$value, E> {
            Ok($fallback)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<$value, A::Error> {
            drain_seq(seq)?;
            Ok($fallback)
        }
    };
}

// The glance's visitors are lenient the same way.
pub(in crate::record) use {lenient_all_but, lenient_scalars};

impl<'de> Deserialize<'de> for MaybeString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaybeString;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<MaybeString, E> {
                Ok(MaybeString(Some(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<MaybeString, E> {
                Ok(MaybeString(Some(v)))
            }
            lenient_all_but!(str, MaybeString, MaybeString(None));
        }
        deserializer.deserialize_any(V)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for MaybeText<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaybeText<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<MaybeText<'de>, E> {
                Ok(MaybeText(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<MaybeText<'de>, E> {
                Ok(MaybeText(Some(Cow::Owned(v.to_owned()))))
            }
            lenient_all_but!(str, MaybeText<'de>, MaybeText(None));
        }
        deserializer.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for MaybeBool {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaybeBool;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<MaybeBool, E> {
                Ok(MaybeBool(Some(v)))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<MaybeBool, E> {
                Ok(MaybeBool(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<MaybeBool, E> {
                Ok(MaybeBool(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<MaybeBool, E> {
                Ok(MaybeBool(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<MaybeBool, E> {
                Ok(MaybeBool(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<MaybeBool, E> {
                Ok(MaybeBool(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<MaybeBool, A::Error> {
                drain_seq(seq)?;
                Ok(MaybeBool(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<MaybeBool, A::Error> {
                drain_map(map)?;
                Ok(MaybeBool(None))
            }
        }
        deserializer.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for MaybeStrings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaybeStrings;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MaybeStrings, A::Error> {
                let mut out = Some(Vec::with_capacity(seq.size_hint().unwrap_or(4).min(64)));
                while let Some(MaybeString(item)) = seq.next_element::<MaybeString>()? {
                    match (&mut out, item) {
                        (Some(strings), Some(item)) => strings.push(item),
                        _ => out = None,
                    }
                }
                Ok(MaybeStrings(out))
            }
            lenient_all_but!(seq, MaybeStrings, MaybeStrings(None));
        }
        deserializer.deserialize_any(V)
    }
}
