//! A record read without building its images: the router's reading.
//!
//! The router needs a record's images only when one of the config's routes
//! takes it (for the event's detail), and most records are taken by none.
//! What it needs of every record is whether the record is poison, which
//! depends on every value of its images. A glance checks an image as it
//! goes by, without building it: every value must be one that
//! [`ImageField`](super::attr::ImageField) reads without a problem and that
//! [`crate::validate::check`] passes (an S, an N DynamoDB can hold, a BOOL,
//! a NULL that is true, a non-empty SS of distinct members, an L or M of
//! such values, names distinct), and the record's text must be under
//! DynamoDB's item size limit (an item's size is less than its JSON's).
//!
//! A glance is conservative: anything else (B, BS and NS values, a
//! malformed value, a record over the size limit) makes it unsure, and
//! the record is then read whole, as before, which says what is wrong, if
//! anything. So does an image whose key attributes are not the record's
//! `Keys` (a missing one, another value or type). A sure glance keeps of
//! each image only its top-level S and N values while the record is read,
//! to check them against the keys, and the record is then built and
//! checked as a whole reading builds and checks it (the event kind's
//! images present, the keys, the event name...), but without its images.
//! The router reads such a record whole, from its text, only when a route
//! takes it ([`crate::event::classify_received`]).

pub(super) mod image;

use serde::de::Deserialize;

use super::attr::{BorrowedField, ImageField, KeysField};
use super::one::{from_glanced, leading, whole};
use super::scan::ScannedKeys;
use super::{BorrowedReceived, Raw, Received, RecordId};
use crate::value::{borrowed, Attrs, Image};
use image::{small_enough, ImageGlance};

/// Reads the record object that `text` starts with, as
/// [`read_leading`](super::one::read_leading) does, but glancing at its
/// images: a record whose glance is sure comes without its images
/// ([`Received::has_whole_images`] is false);
/// any other is read whole. `None` when it does not read as a record
/// object (the caller reads it the strict way).
pub(super) fn glance_leading(text: &str, position: RecordId) -> Option<(&str, Received<'_>)> {
    glance::<ImageField, Image>(text, position, whole)
}

/// [`glance_leading`], the record's keys borrowed from `text` (and, for a
/// record read whole, its images: see [`super::read_batch`]).
pub(super) fn glance_leading_borrowed(text: &str, position: RecordId) -> Option<(&str, BorrowedReceived<'_>)> {
    glance::<BorrowedField<'_>, borrowed::Image<'_>>(text, position, |text, position| {
        whole(text, position).into_borrowed()
    })
}

/// A glance at the record `text` starts with, its keys read as `K` into
/// `J`; a record the glance is unsure of is read by `whole`.
fn glance<'a, K, J>(
    text: &'a str,
    position: RecordId,
    whole: impl FnOnce(&'a str, RecordId) -> Received<'a, J>,
) -> Option<(&'a str, Received<'a, J>)>
where
    K: Deserialize<'a> + ScannedKeys<'a> + KeysField<J>,
    J: Attrs + Default,
{
    let (own, raw) = leading::<ImageGlance<'_>, K>(text)?;
    let sure = small_enough(own.len())
        && raw.dynamodb.as_ref().is_none_or(|d| {
            let keys = d.keys.as_ref().map(KeysField::keys);
            [&d.new_image, &d.old_image]
                .into_iter()
                .flatten()
                .all(|image| image.agrees_with(keys))
        });
    if !sure {
        return Some((own, whole(own, position)));
    }
    let (sequence_number, record) = from_glanced(raw, position);
    let mut received = Received::read(Raw::Json(own), sequence_number, record);
    received.whole_images = false;
    Some((own, received))
}

#[cfg(test)]
mod tests;
