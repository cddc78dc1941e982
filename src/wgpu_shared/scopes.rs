//! Error scopes for every kind of wgpu error: an error no scope catches goes to wgpu's
//! default handler, which panics, and a panic would end the wasm instance. Scopes are popped
//! all at once, innermost first, before anything is awaited: wgpu panics on pops out of
//! order, and another task may push scopes of its own while this one waits.

use crate::engine::LostFlag;
use crate::error::{ErrorCode, GpuTableError, Result};

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
    pub async fn pop(mut self, what: &str) -> Option<GpuTableError> {
        let mut pending = Vec::new();
        while let Some(scope) = self.0.pop() {
            pending.push(scope.pop());
        }
        let mut first = None;
        for future in pending {
            if let Some(error) = future.await {
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

/// The end of an evaluation's scopes (if still pushed): the first error caught, explained
/// by `lost` when the device went meanwhile.
pub async fn finish_evaluation(scopes: Option<ErrorScopes>, lost: &LostFlag) -> Result<()> {
    let error = match scopes {
        Some(scopes) => scopes.pop("evaluation failed").await,
        None => None,
    };
    match error {
        Some(error) => Err(lost.explain(error)),
        None => Ok(()),
    }
}

/// Scopes dropped unpopped (an evaluation that failed early) are popped innermost first.
impl Drop for ErrorScopes {
    fn drop(&mut self) {
        while let Some(scope) = self.0.pop() {
            drop(scope);
        }
    }
}
