//! Why a device can no longer be used: destroyed by its owner (`DESTROYED`) or lost
//! (`DEVICE_LOST`, reported by wgpu's callback, which may run on another thread).

use std::sync::{Arc, Mutex};

use crate::error::{ErrorCode, GpuTableError, Result};

#[derive(Clone, Default)]
pub struct LostFlag(Arc<Mutex<Option<GpuTableError>>>);

impl LostFlag {
    /// A flag that `device`'s lost callback sets; `name` says which device in messages.
    pub fn watch(device: &wgpu::Device, name: &'static str) -> LostFlag {
        let flag = LostFlag::default();
        let on_lost = flag.clone();
        device.set_device_lost_callback(move |reason, message| {
            on_lost.set(GpuTableError::new(
                ErrorCode::DeviceLost,
                format!("the {name} device was lost ({reason:?}): {message}"),
            ));
        });
        flag
    }

    fn set(&self, error: GpuTableError) {
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
