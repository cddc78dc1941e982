//! Why a device can no longer be used: lost (reported by wgpu's callback, which may run on
//! another thread) or destroyed. Shared by the WebGPU and WebGL2 devices.

use std::sync::{Arc, Mutex};

use crate::error::{ErrorCode, GpuTableError, Result};

#[derive(Clone, Default)]
pub struct LostFlag(Arc<Mutex<Option<String>>>);

impl LostFlag {
    /// A flag that `device`'s lost callback sets; `name` says which device in messages.
    pub fn watch(device: &wgpu::Device, name: &'static str) -> LostFlag {
        let flag = LostFlag::default();
        let on_lost = flag.clone();
        device.set_device_lost_callback(move |reason, message| {
            on_lost.set(format!(
                "the {name} device was lost ({reason:?}): {message}"
            ));
        });
        flag
    }

    fn set(&self, reason: String) {
        let mut lost = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        lost.get_or_insert(reason);
    }

    /// `DEVICE_LOST` with the reason, once lost or destroyed.
    pub fn check(&self) -> Result<()> {
        let lost = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match lost.as_ref() {
            Some(reason) => Err(GpuTableError::new(ErrorCode::DeviceLost, reason.clone())),
            None => Ok(()),
        }
    }

    pub fn set_destroyed(&self, name: &str) {
        self.set(format!("the {name} device was destroyed"));
    }
}
