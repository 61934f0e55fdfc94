//! Reading a value or an image whatever owns it: [`Attr`] and [`Attrs`].
//!
//! The planner, the poison check and the key code read images that come in
//! two forms: owned ([`Value`], [`Image`], what the store and every other
//! part of the pipeline hold) and borrowed from a batch's payload
//! ([`super::borrowed`], what the indexer reads a Lambda event into). Both
//! forms give the same answers to these two traits, so that the functions
//! written against them work on either, unchanged, and a test can ask both
//! forms of one record the same question.

use std::collections::HashMap;

use super::{Image, Value};

/// A value's type and contents, one level deep.
pub enum Shape<'v, V: Attr> {
    S(&'v str),
    N(&'v str),
    B(&'v [u8]),
    Bool(bool),
    Null(bool),
    M(&'v V::Map),
    L(&'v [V]),
    Ss(&'v [V::Text]),
    Ns(&'v [V::Text]),
    Bs(&'v [Vec<u8>]),
}

/// The [`Shape`] of `value`, a `&$enum` whose variants are named as
/// DynamoDB's type tags (the owned and the borrowed `Value`).
macro_rules! shape_of {
    ($value:expr, $enum:ident) => {
        match $value {
            $enum::S(s) => Shape::S(s),
            $enum::N(n) => Shape::N(n),
            $enum::B(b) => Shape::B(b),
            $enum::Bool(b) => Shape::Bool(*b),
            $enum::Null(b) => Shape::Null(*b),
            $enum::M(m) => Shape::M(m),
            $enum::L(l) => Shape::L(l),
            $enum::Ss(m) => Shape::Ss(m),
            $enum::Ns(m) => Shape::Ns(m),
            $enum::Bs(m) => Shape::Bs(m),
        }
    };
}
pub(super) use shape_of;

/// A value as the key code reads it: a scalar, or the type of another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar<'v> {
    S(&'v str),
    N(&'v str),
    B(&'v [u8]),
    Bool(bool),
    Null(bool),
    /// An M, L or set: its type tag.
    Other(&'static str),
}

impl Scalar<'_> {
    /// The DynamoDB type tag, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Scalar::S(_) => "S",
            Scalar::N(_) => "N",
            Scalar::B(_) => "B",
            Scalar::Bool(_) => "BOOL",
            Scalar::Null(_) => "NULL",
            Scalar::Other(tag) => tag,
        }
    }
}

/// An attribute value, owned or borrowed.
pub trait Attr: PartialEq + Sized {
    /// A string member of an SS or NS.
    type Text: AsRef<str> + Ord + std::hash::Hash;
    /// An M's map.
    type Map: Attrs<Value = Self>;

    fn shape(&self) -> Shape<'_, Self>;

    /// The value, owned (what a projection or an event keeps).
    fn to_value(&self) -> Value;

    /// The value as a scalar, or the type of another.
    fn scalar(&self) -> Scalar<'_> {
        match self.shape() {
            Shape::S(s) => Scalar::S(s),
            Shape::N(n) => Scalar::N(n),
            Shape::B(b) => Scalar::B(b),
            Shape::Bool(b) => Scalar::Bool(b),
            Shape::Null(b) => Scalar::Null(b),
            Shape::M(_) => Scalar::Other("M"),
            Shape::L(_) => Scalar::Other("L"),
            Shape::Ss(_) => Scalar::Other("SS"),
            Shape::Ns(_) => Scalar::Other("NS"),
            Shape::Bs(_) => Scalar::Other("BS"),
        }
    }

    /// The DynamoDB type tag, for error messages.
    fn type_name(&self) -> &'static str {
        self.scalar().type_name()
    }
}

/// An image or an M's map: attribute name → value, owned or borrowed.
/// Either can be shown, and shared between threads (replay reads records
/// on one thread and handles them on another).
pub trait Attrs: std::fmt::Debug + Sync {
    type Value: Attr;

    /// The value of attribute `name`.
    fn get(&self, name: &str) -> Option<&Self::Value>;

    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Whether [`Attrs::iter`] goes by name (an image does; an owned M,
    /// a hash map, does not).
    const BY_NAME: bool;

    /// The attributes, by name when [`Attrs::BY_NAME`], else in any order.
    fn iter(&self) -> impl Iterator<Item = (&str, &Self::Value)>;

    /// The attributes by name, whatever [`Attrs::iter`]'s order.
    fn by_name(&self) -> Vec<(&str, &Self::Value)> {
        let mut entries: Vec<(&str, &Self::Value)> = self.iter().collect();
        if !Self::BY_NAME {
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        }
        entries
    }

    /// The attributes, owned.
    fn to_image(&self) -> Image {
        self.iter().map(|(name, value)| (name, value.to_value())).collect()
    }
}

impl Attr for Value {
    type Text = String;
    type Map = HashMap<String, Value>;

    fn shape(&self) -> Shape<'_, Self> {
        shape_of!(self, Value)
    }

    fn to_value(&self) -> Value {
        self.clone()
    }
}

impl Attrs for Image {
    type Value = Value;
    const BY_NAME: bool = true;

    fn get(&self, name: &str) -> Option<&Value> {
        Image::get(self, name)
    }

    fn len(&self) -> usize {
        Image::len(self)
    }

    fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        Image::iter(self)
    }

    fn to_image(&self) -> Image {
        self.clone()
    }
}

impl Attrs for HashMap<String, Value> {
    type Value = Value;
    const BY_NAME: bool = false;

    fn get(&self, name: &str) -> Option<&Value> {
        HashMap::get(self, name)
    }

    fn len(&self) -> usize {
        HashMap::len(self)
    }

    fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        HashMap::iter(self).map(|(name, value)| (name.as_str(), value))
    }
}
