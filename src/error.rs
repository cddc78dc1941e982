//! The one error type of the crate. Every public entry returns it; the wasm layer turns it
//! into a JavaScript `Error` named `GpuTableError` carrying `code`.

use std::fmt;

/// Stable error codes; their strings are part of the public contract (`api.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidArgument,
    TypeMismatch,
    EmptyInput,
    BackendUnavailable,
    Destroyed,
    OutOfMemory,
    LimitExceeded,
    InvalidIpc,
    DeviceLost,
    Internal,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::TypeMismatch => "TYPE_MISMATCH",
            ErrorCode::EmptyInput => "EMPTY_INPUT",
            ErrorCode::BackendUnavailable => "BACKEND_UNAVAILABLE",
            ErrorCode::Destroyed => "DESTROYED",
            ErrorCode::OutOfMemory => "OUT_OF_MEMORY",
            ErrorCode::LimitExceeded => "LIMIT_EXCEEDED",
            ErrorCode::InvalidIpc => "INVALID_IPC",
            ErrorCode::DeviceLost => "DEVICE_LOST",
            ErrorCode::Internal => "INTERNAL",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuTableError {
    pub code: ErrorCode,
    pub message: String,
}

impl GpuTableError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        GpuTableError {
            code,
            message: message.into(),
        }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArgument, message)
    }
    pub fn type_mismatch(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::TypeMismatch, message)
    }
}

impl fmt::Display for GpuTableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for GpuTableError {}

pub type Result<T> = std::result::Result<T, GpuTableError>;

/// A number from JavaScript in a message, infinities as JavaScript writes them
/// (`Infinity`, not Rust's `inf`).
pub struct Shown(pub f64);

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            v if v == f64::INFINITY => f.write_str("Infinity"),
            v if v == f64::NEG_INFINITY => f.write_str("-Infinity"),
            v => write!(f, "{v}"),
        }
    }
}
