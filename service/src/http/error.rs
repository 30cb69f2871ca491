//! `ApiError`: every refusal as `{"error": "..."}` with its status code.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

use crate::manager::ManagerError;

/// An API error: a status and a message for the user.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    /// An error with `status`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
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
        HttpResponse::build(self.status).json(serde_json::json!({ "error": self.message }))
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
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(status, e.to_string())
    }
}
