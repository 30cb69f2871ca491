//! The one error of reading a fleet item (a quota key's or a breaker's): which item,
//! which attribute, and what the layout expected there.
//!
//! Items are read through `serde_dynamo` (the attribute map as a serde value) under
//! `serde_path_to_error`, so a type mismatch deep in a map (`hosts.h-1`) names its path.

use std::collections::HashMap;
use std::fmt;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::de::DeserializeOwned;
use tollgate_quota::fleet::MalformedDeclaration;

/// An item's attributes, as the SDK gives and takes them.
pub(crate) type Attrs = HashMap<String, AttributeValue>;

/// What is wrong with one attribute, or with the item as a whole.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ItemProblem {
    /// The attribute is missing, of another DynamoDB type than the layout's, or does not
    /// parse as the layout's number (the codec's words, such as `Expected num`).
    #[error("{0}")]
    Layout(serde_dynamo::Error),
    /// A calendar declaration that is not a valid override entry.
    #[error("{0}")]
    Declaration(#[from] MalformedDeclaration),
    /// A host's calendar digest names no declaration on the item.
    #[error("host {host}'s calendar {digest} is not on the item")]
    UnknownCalendar { host: String, digest: String },
    /// Attributes that must come together (`probe_host` and `probe_until_us`, the four
    /// allowance counter attributes) came partly.
    #[error("{0} must come together")]
    Incomplete(&'static str),
    /// A number beyond what its field holds.
    #[error("out of range")]
    OutOfRange,
}

/// A fleet item that cannot be read: its key (when readable), the attribute (when one
/// is at fault) and the problem. The caller adds what to do next (delete the item).
#[derive(Debug, thiserror::Error)]
pub struct ItemDecodeError {
    key: Option<String>,
    attribute: Option<String>,
    #[source]
    problem: ItemProblem,
}

impl ItemDecodeError {
    /// An error of `attribute` (`None`: the item) of the item `key`.
    pub fn new(key: Option<&str>, attribute: Option<&str>, problem: ItemProblem) -> Self {
        ItemDecodeError {
            key: key.map(str::to_string),
            attribute: attribute.map(str::to_string),
            problem,
        }
    }

    /// The item's key, when it could be read.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// The attribute at fault (a path such as `hosts.h-1` inside a map), if one is.
    pub fn attribute(&self) -> Option<&str> {
        self.attribute.as_deref()
    }

    /// What is wrong.
    pub fn problem(&self) -> &ItemProblem {
        &self.problem
    }
}

impl fmt::Display for ItemDecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(key) = &self.key {
            write!(f, "{key}: ")?;
        }
        match &self.attribute {
            Some(attribute) => write!(f, "attribute `{attribute}`: {}", self.problem),
            None => write!(f, "{}", self.problem),
        }
    }
}

/// The attributes of `attrs` as a `T` (other attributes ignored), or which one does not
/// fit.
pub(crate) fn from_attrs<T: DeserializeOwned>(
    key: Option<&str>,
    attrs: &Attrs,
) -> Result<T, ItemDecodeError> {
    let value = serde_dynamo::AttributeValue::from(AttributeValue::M(attrs.clone()));
    serde_path_to_error::deserialize(serde_dynamo::Deserializer::from_attribute_value(value))
        .map_err(|e| {
            let path = e.path().to_string();
            // A missing attribute is reported at the item (`.`), and serde's message
            // (`missing field `tat_us``) names it.
            let attribute = (path != ".").then_some(path);
            ItemDecodeError::new(
                key,
                attribute.as_deref(),
                ItemProblem::Layout(e.into_inner()),
            )
        })
}

/// `value` as attributes (always possible for the layouts' plain fields).
pub(crate) fn to_attrs<T: serde::Serialize>(value: &T) -> Attrs {
    serde_dynamo::to_item(value).expect("a fleet layout of numbers, strings and maps encodes")
}
