//! One Cloud Control listing to its last page: `ListResources` of a type in a region
//! (with a child type's `ResourceModel`: one parent item's properties), pages of 25
//! followed by `NextToken` (AWS ignores `MaxResults`), every page admitted on
//! `cloudcontrol:ListResources` and one token of each operation of the type's
//! `handlers.list.permissions` at one instant (unless [`Charges::OwnKeyOnly`]).

use tollgate_engine::aws::CallError;

use super::model::{item, properties_of};
use super::schemas::CcType;
use super::{Charges, LIST_RESOURCES};
use crate::output::Item;
use crate::{CollectorRun, ReportBuilder};

/// List `ty` in `region` (with `model` as the `ResourceModel`, for a child type) into
/// `out`, its items in `item_region`, to the last page or the first failed one (whose
/// error is returned; the pages before stay in `out`).
pub(super) async fn list(
    run: &CollectorRun,
    ty: &CcType,
    region: &str,
    item_region: &str,
    model: Option<&str>,
    out: &mut ReportBuilder,
) -> Result<(), CallError> {
    let client = run.client::<aws_sdk_cloudcontrol::Client>(region);
    let underlying: &[(String, String)] = match run.cloudcontrol {
        Charges::Underlying => &ty.list,
        Charges::OwnKeyOnly => &[],
    };
    let mut token: Option<String> = None;
    loop {
        let page = run
            .gate
            .call_with_underlying(
                &run.ctx,
                (LIST_RESOURCES.service(), LIST_RESOURCES.name()),
                Some(region),
                underlying,
                |_| {
                    client
                        .list_resources()
                        .type_name(&ty.type_name)
                        .set_resource_model(model.map(str::to_string))
                        .set_next_token(token.clone())
                        .send()
                },
            )
            .await;
        run.progress.done(1);
        let page = page?;
        let found = page.resource_descriptions();
        run.progress.listed_more(found.len());
        for description in found {
            let Some(id) = description.identifier() else {
                continue;
            };
            let properties = properties_of(description.properties());
            out.push(Item::Resource(item(run, ty, item_region, id, properties)));
        }
        run.progress.items_more(found.len());
        token = page
            .next_token()
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        if token.is_none() || run.is_cancelled() {
            return Ok(());
        }
    }
}
