//! Values and images borrowed from the text they were read from: what the
//! indexer reads a batch's images into ([`crate::record::read_batch`] into this form).
//!
//! A string (an S, an N, a name, a set member) is a slice of the payload,
//! owned only where the JSON spelled it with an escape; a B or BS value is
//! decoded from base64, so it is owned. Numbers keep their decimal text.
//! Reading a record this way allocates its images' vectors and nothing for
//! their strings, and dropping it frees only those vectors.
//!
//! These read as the owned [`super::Value`] and [`super::Image`] do,
//! through [`Attr`] and [`Attrs`]: an image is sorted by name, an M is
//! an image, and two values are equal when their owned forms are.

use std::borrow::Cow;

use super::image::{same_name, DuplicateAttribute};
use super::view::{shape_of, Attr, Attrs, Shape};

/// One attribute value, borrowed where it can be.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    S(Cow<'a, str>),
    N(Cow<'a, str>),
    B(Vec<u8>),
    Bool(bool),
    Null(bool),
    M(Image<'a>),
    L(Vec<Value<'a>>),
    Ss(Vec<Cow<'a, str>>),
    Ns(Vec<Cow<'a, str>>),
    Bs(Vec<Vec<u8>>),
}

/// An item image (or a key, or an M's map): attribute name → value,
/// sorted by name, names distinct.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Image<'a> {
    entries: Vec<(Cow<'a, str>, Value<'a>)>,
}

/// Up to this many entries, a name is looked up by a scan (as in the owned
/// image).
const LINEAR: usize = 16;

impl<'a> Image<'a> {
    /// The image of `entries` (in any order), or the first name (in the
    /// order given) that repeats an earlier one.
    pub fn from_distinct(mut entries: Vec<(Cow<'a, str>, Value<'a>)>) -> Result<Image<'a>, DuplicateAttribute> {
        super::image::sort_distinct(&mut entries)?;
        Ok(Image { entries })
    }
}

impl<'a> Attr for Value<'a> {
    type Text = Cow<'a, str>;
    type Map = Image<'a>;

    fn shape(&self) -> Shape<'_, Self> {
        shape_of!(self, Value)
    }

    fn to_value(&self) -> super::Value {
        use super::Value as Owned;
        let strings = |members: &[Cow<'_, str>]| members.iter().map(|m| m.as_ref().to_owned()).collect();
        match self {
            Value::S(s) => Owned::S(s.as_ref().to_owned()),
            Value::N(n) => Owned::N(n.as_ref().to_owned()),
            Value::B(b) => Owned::B(b.clone()),
            Value::Bool(b) => Owned::Bool(*b),
            Value::Null(b) => Owned::Null(*b),
            Value::M(m) => Owned::M(
                m.entries
                    .iter()
                    .map(|(name, value)| (name.as_ref().to_owned(), value.to_value()))
                    .collect(),
            ),
            Value::L(l) => Owned::L(l.iter().map(Attr::to_value).collect()),
            Value::Ss(m) => Owned::Ss(strings(m)),
            Value::Ns(m) => Owned::Ns(strings(m)),
            Value::Bs(m) => Owned::Bs(m.clone()),
        }
    }
}

impl<'a> Attrs for Image<'a> {
    type Value = Value<'a>;
    const BY_NAME: bool = true;

    fn get(&self, name: &str) -> Option<&Value<'a>> {
        if self.entries.len() <= LINEAR {
            return self.entries.iter().find(|(n, _)| same_name(n, name)).map(|(_, v)| v);
        }
        let at = self.entries.binary_search_by(|(n, _)| n.as_ref().cmp(name)).ok()?;
        Some(&self.entries[at].1)
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn iter(&self) -> impl Iterator<Item = (&str, &Value<'a>)> {
        self.entries.iter().map(|(name, value)| (name.as_ref(), value))
    }
}

impl<'a> From<super::Value> for Value<'a> {
    /// The owned value, moved (no string is copied).
    fn from(value: super::Value) -> Value<'a> {
        use super::Value as Owned;
        let strings = |members: Vec<String>| members.into_iter().map(Cow::Owned).collect();
        match value {
            Owned::S(s) => Value::S(Cow::Owned(s)),
            Owned::N(n) => Value::N(Cow::Owned(n)),
            Owned::B(b) => Value::B(b),
            Owned::Bool(b) => Value::Bool(b),
            Owned::Null(b) => Value::Null(b),
            Owned::M(m) => Value::M(super::Image::from(m).into()),
            Owned::L(l) => Value::L(l.into_iter().map(Value::from).collect()),
            Owned::Ss(m) => Value::Ss(strings(m)),
            Owned::Ns(m) => Value::Ns(strings(m)),
            Owned::Bs(m) => Value::Bs(m),
        }
    }
}

impl<'a> From<super::Image> for Image<'a> {
    /// The owned image, moved (no string is copied).
    fn from(image: super::Image) -> Image<'a> {
        // Already sorted and distinct.
        Image {
            entries: image
                .into_iter()
                .map(|(name, value)| (Cow::Owned(name.into_string()), Value::from(value)))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests;
