//! `ApiError`: every refusal as `{"error": "..."}` with its status code.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

use crate::manager::guard::Refusal;
use crate::manager::ManagerError;

/// An API error: a status and a message for the user, and for a guard-rail refusal
/// (429) its `reason`, `retry_after_seconds` and `latest_scan` beside `error`.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    status: StatusCode,
    message: String,
    refusal: Option<Refusal>,
}

impl ApiError {
    /// An error with `status`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            refusal: None,
        }
    }

    /// 400, naming the field.
    pub fn bad_field(field: &str, message: impl std::fmt::Display) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, format!("{field}: {message}"))
    }

    /// 401.
    pub fn unauthorized(message: &str) -> Self {
        ApiError::new(StatusCode::UNAUTHORIZED, message)
    }

    /// 404 for a path that is not part of the API.
    pub fn no_route() -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "no such endpoint; see docs/service.md for the API",
        )
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status);
        match &self.refusal {
            None => response.json(serde_json::json!({ "error": self.message })),
            Some(refusal) => response
                .insert_header(("Retry-After", refusal.retry_after_seconds.to_string()))
                .json(serde_json::json!({
                    "error": self.message,
                    "reason": refusal.reason,
                    "retry_after_seconds": refusal.retry_after_seconds,
                    "latest_scan": refusal.latest_scan,
                })),
        }
    }
}

impl From<ManagerError> for ApiError {
    fn from(e: ManagerError) -> Self {
        let status = match &e {
            ManagerError::UnknownScan(_) | ManagerError::NoReport(_) => StatusCode::NOT_FOUND,
            ManagerError::NotFinished(..) | ManagerError::AlreadyFinished(..) => {
                StatusCode::CONFLICT
            }
            ManagerError::Stopping => StatusCode::SERVICE_UNAVAILABLE,
            ManagerError::Refused(refusal) => {
                return ApiError {
                    status: StatusCode::TOO_MANY_REQUESTS,
                    message: e.to_string(),
                    refusal: Some(refusal.clone()),
                }
            }
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(status, e.to_string())
    }
}
