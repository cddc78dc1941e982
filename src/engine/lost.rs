//! Why a device can no longer be used: destroyed by its owner (`DESTROYED`) or lost
//! (`DEVICE_LOST`, reported by wgpu's callback, which may run on another thread).

use std::sync::{Arc, Mutex};

use crate::error::{ErrorCode, GpuTableError, Result};

#[derive(Clone, Default)]
pub struct LostFlag(Arc<Mutex<Option<GpuTableError>>>);

impl LostFlag {
    /// Records why the device went (the first reason stays).
    pub fn set(&self, error: GpuTableError) {
        let mut lost = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        lost.get_or_insert(error);
    }

    /// `DESTROYED` or `DEVICE_LOST` with the reason, once the device is gone.
    pub fn check(&self) -> Result<()> {
        let lost = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match lost.as_ref() {
            Some(error) => Err(error.clone()),
            None => Ok(()),
        }
    }

    pub fn is_set(&self) -> bool {
        self.check().is_err()
    }

    pub fn set_destroyed(&self, name: &str) {
        self.set(GpuTableError::new(
            ErrorCode::Destroyed,
            format!("the {name} device was destroyed"),
        ));
    }

    /// `error`, or why the device is gone when it went while the work was under way (work
    /// cut short by `destroy()` is `DESTROYED`, not whatever wgpu said about it).
    pub fn explain(&self, error: GpuTableError) -> GpuTableError {
        self.check().err().unwrap_or(error)
    }
}
