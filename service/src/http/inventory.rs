//! `GET /v1/resources` and `GET /v1/changes`: the inventory store every finished scan is
//! written to (docs/inventory.md), read with the filters of `tollgate resources` and
//! `tollgate changes`, one page at a time (`limit`, at most 10,000 rows, 1,000 by
//! default; `next` is the cursor of the following page, `null` on the last).
//! `GET /v1/resources/history` is one resource's current row and every version, as
//! `tollgate history`; its key is four query parameters, since ids hold `/` and `|`.
//!
//! The store's engines are synchronous: each request opens the store and reads it on a
//! blocking thread. Comma-separated lists (`types=AWS::S3::*,AWS::KMS::Key`) as on the
//! command line; `tag=K=V` may repeat. A parameter that does not read is a 400 naming it.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use tollgate_inventory::{
    ChangeFilter, ChangeOrder, InventoryError, InventoryErrorKind, PageSize, ResourceFilter,
    ResourceKey, Since, Store, TypePattern,
};

use super::auth::require;
use super::error::ApiError;
use super::ApiState;

type Data = web::Data<ApiState>;

/// The query parameters, as pairs (a `tag` may repeat).
fn pairs(req: &HttpRequest) -> Result<Vec<(String, String)>, ApiError> {
    web::Query::<Vec<(String, String)>>::from_query(req.query_string())
        .map(|q| q.into_inner())
        .map_err(|e| ApiError::bad_field("query", e.to_string()))
}

fn list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .collect()
}

fn types(value: &str) -> Result<Vec<TypePattern>, ApiError> {
    list(value)
        .iter()
        .map(|t| TypePattern::parse(t).map_err(|e| ApiError::bad_field("types", e.to_string())))
        .collect()
}

fn limit(value: &str) -> Result<PageSize, ApiError> {
    value
        .parse::<u32>()
        .map_err(|_| format!("{value:?} is not a number of rows"))
        .and_then(|n| PageSize::new(n).map_err(|e| e.to_string()))
        .map_err(|e| ApiError::bad_field("limit", e))
}

/// A boolean parameter: `true`/`1` or `false`/`0`; anything else is a 400 naming it
/// (a misspelt `yes` must not quietly read as `false`).
fn flag(name: &str, value: &str) -> Result<bool, ApiError> {
    match value {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(ApiError::bad_field(
            name,
            format!("{value:?} is not a boolean: give true or false"),
        )),
    }
}

fn resource_filter(req: &HttpRequest) -> Result<ResourceFilter, ApiError> {
    let mut filter = ResourceFilter::default();
    for (name, value) in pairs(req)? {
        match name.as_str() {
            "types" => filter.types.extend(types(&value)?),
            "accounts" => filter.accounts.extend(list(&value)),
            "regions" => filter.regions.extend(list(&value)),
            "tag" => match value.split_once('=') {
                Some((k, v)) if !k.is_empty() => filter.tags.push((k.to_owned(), v.to_owned())),
                _ => {
                    return Err(ApiError::bad_field(
                        "tag",
                        format!("{value:?} is not KEY=VALUE"),
                    ))
                }
            },
            "include_gone" => filter.include_gone = flag("include_gone", &value)?,
            "limit" => filter.page_size = limit(&value)?,
            "cursor" => filter.cursor = Some(value),
            "token" => {}
            other => {
                return Err(unknown(
                    other,
                    "types, accounts, regions, tag, include_gone, limit, cursor",
                ))
            }
        }
    }
    Ok(filter)
}

fn change_filter(req: &HttpRequest, state: &Data) -> Result<ChangeFilter, ApiError> {
    let mut filter = ChangeFilter::default();
    for (name, value) in pairs(req)? {
        match name.as_str() {
            "since" => {
                let micros = state.admission.now().as_micros() as i64;
                let now = chrono::DateTime::from_timestamp_micros(micros).unwrap_or_default();
                filter.since = Some(
                    Since::parse(&value, now)
                        .map_err(|e| ApiError::bad_field("since", e.to_string()))?,
                );
            }
            "types" => filter.types.extend(types(&value)?),
            "accounts" => filter.accounts.extend(list(&value)),
            "order" => {
                filter.order = ChangeOrder::parse(&value)
                    .map_err(|e| ApiError::bad_field("order", e.to_string()))?
            }
            "limit" => filter.page_size = limit(&value)?,
            "cursor" => filter.cursor = Some(value),
            "token" => {}
            other => {
                return Err(unknown(
                    other,
                    "since, types, accounts, order, limit, cursor",
                ))
            }
        }
    }
    Ok(filter)
}

/// The key of `GET /v1/resources/history`: all four parameters, each once and not
/// empty, the type a name (not a pattern).
fn history_key(req: &HttpRequest) -> Result<ResourceKey, ApiError> {
    const KNOWN: &str = "account, resource_type, region, id";
    let mut parts: [Option<String>; 4] = Default::default();
    for (name, value) in pairs(req)? {
        let slot = match name.as_str() {
            "account" => 0,
            "resource_type" => 1,
            "region" => 2,
            "id" => 3,
            "token" => continue,
            other => return Err(unknown(other, KNOWN)),
        };
        if value.is_empty() {
            return Err(ApiError::bad_field(&name, "is empty"));
        }
        if parts[slot].replace(value).is_some() {
            return Err(ApiError::bad_field(&name, "is given twice; give it once"));
        }
    }
    let [account, resource_type, region, id] = parts;
    let missing = |name: &str| {
        ApiError::bad_field(
            name,
            format!("is missing; the history of a resource needs {KNOWN}"),
        )
    };
    let resource_type = resource_type.ok_or_else(|| missing("resource_type"))?;
    if resource_type.contains('*') {
        return Err(ApiError::bad_field(
            "resource_type",
            format!("{resource_type:?} is a pattern: name one type (AWS::S3::Bucket)"),
        ));
    }
    TypePattern::parse(&resource_type)
        .map_err(|e| ApiError::bad_field("resource_type", e.to_string()))?;
    Ok(ResourceKey {
        account: account.ok_or_else(|| missing("account"))?,
        resource_type,
        region: region.ok_or_else(|| missing("region"))?,
        id: id.ok_or_else(|| missing("id"))?,
    })
}

fn unknown(name: &str, known: &str) -> ApiError {
    ApiError::bad_field(name, format!("unknown parameter; the known ones: {known}"))
}

/// Open the store and run `read` on a blocking thread.
async fn with_store<T: Send + 'static>(
    state: &Data,
    read: impl FnOnce(&mut Store) -> Result<T, InventoryError> + Send + 'static,
) -> Result<T, ApiError> {
    let Some(url) = state.store.clone() else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "this service stores no inventory (service.store = \"off\"): set service.store in its configuration",
        ));
    };
    let answer = web::block(move || Store::open(&url).and_then(|mut s| read(&mut s)))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    answer.map_err(|e| {
        let status = match e.kind() {
            InventoryErrorKind::InvalidQuery => StatusCode::BAD_REQUEST,
            _ => StatusCode::SERVICE_UNAVAILABLE,
        };
        ApiError::new(status, e.to_string())
    })
}

pub(super) async fn resources(req: HttpRequest, state: Data) -> Result<HttpResponse, ApiError> {
    require(&req, &state.token)?;
    let filter = resource_filter(&req)?;
    let page = with_store(&state, move |s| s.resources(&filter)).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({"resources": page.rows, "next": page.next})))
}

pub(super) async fn changes(req: HttpRequest, state: Data) -> Result<HttpResponse, ApiError> {
    require(&req, &state.token)?;
    let filter = change_filter(&req, &state)?;
    let page = with_store(&state, move |s| s.changes(&filter)).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({"changes": page.rows, "next": page.next})))
}

pub(super) async fn history(req: HttpRequest, state: Data) -> Result<HttpResponse, ApiError> {
    require(&req, &state.token)?;
    let key = history_key(&req)?;
    let read = key.clone();
    let Some(history) = with_store(&state, move |s| s.resource_history(&read)).await? else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "the store holds no {} {:?} in account {} region {}: GET /v1/resources lists what it holds",
                key.resource_type, key.id, key.account, key.region
            ),
        ));
    };
    Ok(HttpResponse::Ok().json(history))
}

#[cfg(test)]
mod tests {
    use super::flag;

    #[test]
    fn a_boolean_parameter_reads_true_or_false_and_refuses_anything_else() {
        assert!(flag("include_gone", "true").unwrap());
        assert!(flag("include_gone", "1").unwrap());
        assert!(!flag("include_gone", "false").unwrap());
        assert!(!flag("include_gone", "0").unwrap());
        let err = flag("include_gone", "yes").unwrap_err();
        assert!(format!("{err:?}").contains("include_gone"), "{err:?}");
    }
}
