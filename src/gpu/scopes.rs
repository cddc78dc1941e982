//! Error scopes for every kind of wgpu error: an error no scope catches goes to wgpu's
//! default handler, which panics, and a panic would end the wasm instance.

use crate::error::{ErrorCode, GpuTableError};

pub struct ErrorScopes(Vec<wgpu::ErrorScopeGuard>);

impl ErrorScopes {
    pub fn push(device: &wgpu::Device) -> ErrorScopes {
        ErrorScopes(
            [
                wgpu::ErrorFilter::OutOfMemory,
                wgpu::ErrorFilter::Internal,
                wgpu::ErrorFilter::Validation,
            ]
            .into_iter()
            .map(|filter| device.push_error_scope(filter))
            .collect(),
        )
    }

    /// The first error caught, as `OUT_OF_MEMORY` or `INTERNAL` with `what` failing.
    pub async fn pop(self, what: &str) -> Option<GpuTableError> {
        let mut first = None;
        for scope in self.0.into_iter().rev() {
            if let Some(error) = scope.pop().await {
                let code = match error {
                    wgpu::Error::OutOfMemory { .. } => ErrorCode::OutOfMemory,
                    _ => ErrorCode::Internal,
                };
                first.get_or_insert_with(|| GpuTableError::new(code, format!("{what}: {error}")));
            }
        }
        first
    }
}
