//! Hourly prices of transit gateway attachments from AWS's public price list
//! (`--pricing`, off by default; issue 36, seed 000), and of each transit gateway (the
//! sum of its attachments': AWS charges per attachment-hour, the gateway itself nothing).
//!
//! The price list is public: one unauthenticated `GET
//! <url>/offers/v1.0/aws/AmazonVPC/current/<region>/index.json` per region (`<url>`:
//! `--pricing-url`, default [`DEFAULT_URL`]), no account's quota, so no admission; a
//! 5-second timeout over the whole exchange, the body included ([`fetch`]); the scan's
//! cancellation drops the read and stops the scan. A timeout, an HTTP error or an answer
//! that is not an offer file leaves `HourlyPrice` `null` with a reason in the dataset's
//! `reasons` (operation `pricing:GetPublicPriceList`, field `HourlyPrice`); the dataset
//! stays `complete`, since pricing is optional (seed 000: "keeps pricing optional").
//!
//! # Layout
//! - [`offer`]: an offer file read down to its attachment-hour prices.
//! - [`fetch`]: one GET, bounded by the timeout, error bodies unread.
//! - [`book`]: the reads kept per URL and region, shared by a process's scans.
//! - [`apply`]: prices onto a region's attachment items, and the gateways' sums onto
//!   the report's gateways.

pub mod apply;
pub mod book;
pub mod fetch;
pub mod offer;

use std::sync::Arc;

pub use book::{PriceBook, PriceError};
pub use offer::RegionPrices;

/// The public price list's host (the bulk API's, in us-east-1 for every region).
pub const DEFAULT_URL: &str = "https://pricing.us-east-1.amazonaws.com";

/// The property an item's hourly price (USD) is written to.
pub const FIELD: &str = "HourlyPrice";

/// The operation a price list read is named by in reasons (`service:Operation`).
pub const REASON_OPERATION: &str = "pricing:GetPublicPriceList";

/// A scan's pricing: where the price list is and the process's kept reads.
#[derive(Debug, Clone)]
pub struct Pricing {
    /// The price list's base URL (no trailing `/`).
    pub url: String,
    /// The reads kept, shared with the process's other scans.
    pub book: Arc<PriceBook>,
}

impl Pricing {
    /// Pricing from `url` (its trailing `/` dropped), reads kept in `book`.
    pub fn new(url: &str, book: Arc<PriceBook>) -> Self {
        Pricing {
            url: url.trim_end_matches('/').to_string(),
            book,
        }
    }

    /// The offer file's URL for `region`.
    pub fn offer_url(&self, region: &str) -> String {
        format!(
            "{}/offers/v1.0/aws/AmazonVPC/current/{region}/index.json",
            self.url
        )
    }
}

/// Whether `url` can be a price list's base URL: `http://` or `https://`, a host, a valid
/// port if any, a path prefix if any, and neither a query nor a fragment (the offer's
/// path is appended to it).
pub fn valid_url(url: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("--pricing-url {url:?} {why}"));
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return bad("must start with http:// or https://");
    }
    let uri = match url.parse::<hyper::Uri>() {
        Ok(uri) => uri,
        Err(e) => return bad(&format!("is not a URL: {e}")),
    };
    let Some(authority) = uri.authority() else {
        return bad("names no host");
    };
    if uri.host().is_none_or(str::is_empty) {
        return bad("names no host");
    }
    let has_port = authority
        .as_str()
        .rsplit_once(':')
        .is_some_and(|(_, p)| !p.ends_with(']'));
    if has_port && authority.port_u16().is_none() {
        return bad("has a port that is not a number from 1 to 65535");
    }
    if uri.query().is_some() || url.contains('#') {
        return bad(
            "must have no query (?...) or fragment (#...): the offer's path is appended to it",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offer_url_is_the_bulk_apis_regional_vpc_offer() {
        let pricing = Pricing::new("http://127.0.0.1:9/", Arc::default());
        assert_eq!(
            pricing.offer_url("eu-west-1"),
            "http://127.0.0.1:9/offers/v1.0/aws/AmazonVPC/current/eu-west-1/index.json"
        );
        assert!(valid_url(DEFAULT_URL).is_ok());
        for bad in [
            "ftp://x",
            "pricing.example",
            "http://",
            "https:///x",
            "http://a b",
        ] {
            assert!(valid_url(bad).is_err(), "{bad}");
        }
    }
}
