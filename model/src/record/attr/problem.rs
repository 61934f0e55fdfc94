//! What can be wrong with an attribute value ([`AttrProblem`]) or a whole
//! image ([`ImageProblem`]), said without repeating the value.

use std::fmt;

use crate::value::DuplicateAttribute;

/// What is wrong with one attribute value. Its `Display` completes the
/// sentence "attribute `name` of `NewImage` ...".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::record) enum AttrProblem {
    NotAnObject,
    NoTag,
    SeveralTags,
    /// The tag when it is short and alphanumeric (else it is not repeated).
    UnknownTag(Option<String>),
    WrongType {
        tag: &'static str,
        expected: &'static str,
    },
    BadNumber {
        tag: &'static str,
    },
    BadBase64 {
        tag: &'static str,
    },
    Duplicate,
    /// A key attribute of another type than S, N or B.
    KeyType {
        tag: &'static str,
    },
    /// The problem is somewhere inside this attribute's M or L value.
    Nested(Box<AttrProblem>),
}

impl AttrProblem {
    pub(super) fn nested(self) -> AttrProblem {
        match self {
            nested @ AttrProblem::Nested(_) => nested,
            other => AttrProblem::Nested(Box::new(other)),
        }
    }
}

impl fmt::Display for AttrProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttrProblem::NotAnObject => f.write_str("is not a DynamoDB JSON value (an object like {\"S\": ...})"),
            AttrProblem::NoTag => f.write_str("has no type tag (an empty object)"),
            AttrProblem::SeveralTags => f.write_str("has more than one type tag"),
            AttrProblem::UnknownTag(Some(tag)) => write!(
                f,
                "has an unknown type tag `{tag}` (expected S, N, B, BOOL, NULL, M, L, SS, NS or BS)"
            ),
            AttrProblem::UnknownTag(None) => {
                f.write_str("has an unknown type tag (expected S, N, B, BOOL, NULL, M, L, SS, NS or BS)")
            }
            AttrProblem::WrongType { tag, expected } => {
                write!(f, "has a `{tag}` value that is not {expected}")
            }
            AttrProblem::BadNumber { tag } => {
                write!(f, "has a `{tag}` value that is not a decimal number")
            }
            AttrProblem::BadBase64 { tag } => write!(f, "has a `{tag}` value that is not base64"),
            AttrProblem::Duplicate => f.write_str("appears more than once"),
            AttrProblem::KeyType { tag } => {
                write!(f, "is of type {tag}, but a key attribute must be S, N or B")
            }
            AttrProblem::Nested(inner) => write!(f, "holds a nested value that {inner}"),
        }
    }
}

/// What is wrong with a whole image (`Keys`, `NewImage`, `OldImage`, or an `M`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::record) enum ImageProblem {
    NotAnObject,
    Attribute { name: String, problem: AttrProblem },
}

/// The problem of an image that repeats attribute `name`.
pub(super) fn duplicate(repeated: DuplicateAttribute) -> ImageProblem {
    ImageProblem::Attribute {
        name: repeated.name,
        problem: AttrProblem::Duplicate,
    }
}
