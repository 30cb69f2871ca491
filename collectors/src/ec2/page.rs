//! One EC2 listing per region: every page of a Describe action, through the gate, until
//! the answer's `NextToken` is absent or empty.
//!
//! Every listing of the EC2 collectors is this loop; each type says only how to send
//! one page (its builder, with `MaxResults`) and how to read one resource
//! ([`listing`]), or takes the pages and fans out ([`pages`], AMIs). A failed page ends
//! the listing as failed (pages before it stay); cancellation ends it as cancelled.

use std::future::Future;

use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;

use crate::output::Item;
use crate::{CollectorRun, Operation, ReportBuilder, Resource};

/// A Describe answer: its resources' count and the next page's token.
pub trait Page {
    /// Resources on this page.
    fn count(&self) -> usize;
    /// The next page's token (`None`: the last page, or an action without pages).
    fn next(&self) -> Option<&str>;
}

/// `impl Page` for an answer type whose resources are `$items()`; with `paginated`, its
/// `next_token()` is the next page's.
macro_rules! page {
    ($output:ty, $items:ident, paginated) => {
        impl $crate::ec2::page::Page for $output {
            fn count(&self) -> usize {
                self.$items().len()
            }
            fn next(&self) -> Option<&str> {
                self.next_token()
            }
        }
    };
    ($output:ty, $items:ident) => {
        impl $crate::ec2::page::Page for $output {
            fn count(&self) -> usize {
                self.$items().len()
            }
            fn next(&self) -> Option<&str> {
                None
            }
        }
    };
}
pub(crate) use page;

/// Every page of `operation` in `region`: `send(token)` sends one (the first with
/// no token) with a client built from the scan's SDK configuration (gated per attempt). A failed page is recorded in `out`
/// and ends the listing.
pub async fn pages<T, E, F, Fut>(
    run: &CollectorRun,
    operation: Operation,
    region: &str,
    out: &mut ReportBuilder,
    mut send: F,
) -> Vec<T>
where
    T: Page,
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<T, SdkError<E, HttpResponse>>>,
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let mut pages = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = run.call(operation, region, || send(token.clone())).await;
        let page = match page {
            Ok(page) => page,
            Err(e) => {
                out.listing_failed(operation, &e);
                break;
            }
        };
        run.progress.listed_more(page.count());
        let next = page.next().filter(|t| !t.is_empty()).map(str::to_string);
        pages.push(page);
        // A token the service repeats would page forever: the listing ends there.
        if next.is_none() || next == token {
            break;
        }
        token = next;
    }
    pages
}

/// A whole listing of one type in `region`: every page of `operation` ([`pages`]), each
/// resource of each (`resources`) made an item by `item` (`None`: not a resource to
/// report, such as one without an id).
pub async fn listing<T, E, F, Fut, R>(
    run: &CollectorRun,
    operation: Operation,
    region: &str,
    send: F,
    resources: impl Fn(&T) -> &[R],
    item: impl Fn(&CollectorRun, &str, &R) -> Option<Resource>,
) -> ReportBuilder
where
    T: Page,
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<T, SdkError<E, HttpResponse>>>,
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let mut out = ReportBuilder::new();
    let pages = pages(run, operation, region, &mut out, send).await;
    for resource in pages.iter().flat_map(resources) {
        if let Some(resource) = item(run, region, resource) {
            out.push(Item::Resource(resource));
        }
    }
    run.progress.items_more(out.len());
    out
}
