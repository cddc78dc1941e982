//! What the two wgpu backends share, beside them rather than inside either: opening a
//! device, error scopes, waiting for work and buffer mapping, the one-shot channel mapping
//! reports through, device words, and the pipeline cache. `gpu` (WebGPU) and `gl` (WebGL2)
//! import this module, never each other.

pub mod oneshot;
mod pipelines;
pub mod scopes;
mod words;

pub use pipelines::PipelineCache;
pub use words::{decode, device_words};

use crate::engine::{DeviceCore, LostFlag};
use crate::error::{ErrorCode, GpuTableError, Result};

/// A device opened on an adapter, with its counters and lost flag.
pub struct Opened {
    pub core: DeviceCore,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub limits: wgpu::Limits,
    pub adapter_name: String,
    /// The adapter's smallest subgroup, where the device has subgroup operations.
    pub subgroup_min_size: Option<u32>,
}

/// A device on the adapter `options` pick from `instance`, asking for every limit the
/// adapter offers (bigger bindings mean fewer `LIMIT_EXCEEDED`), once `check` accepts the
/// adapter, and `subgroups` where the adapter has them. `api` names the backend in
/// messages; failures are `BACKEND_UNAVAILABLE`.
pub async fn open(
    instance: &wgpu::Instance,
    options: &wgpu::RequestAdapterOptions<'_, '_>,
    api: &'static str,
    subgroups: bool,
    check: impl FnOnce(&wgpu::Adapter) -> Result<()>,
) -> Result<Opened> {
    let adapter = instance
        .request_adapter(options)
        .await
        .map_err(|e| unavailable(format!("no {api} adapter: {e}")))?;
    check(&adapter)?;
    let wanted = match subgroups {
        true => wgpu::Features::SUBGROUP,
        false => wgpu::Features::empty(),
    };
    let (device, queue) = adapter
        .request_device(&wgpu::DeviceDescriptor {
            required_limits: adapter.limits(),
            required_features: adapter.features() & wanted,
            ..Default::default()
        })
        .await
        .map_err(|e| unavailable(format!("the {api} adapter refused a device: {e}")))?;
    let core = DeviceCore::new(watch_lost(&device, api));
    let info = adapter.get_info();
    Ok(Opened {
        core,
        limits: device.limits(),
        subgroup_min_size: (subgroups && has_subgroups(&device)).then_some(info.subgroup_min_size),
        adapter_name: info.name,
        device,
        queue,
    })
}

/// Whether `device` runs subgroup operations. wgpu's WebGPU backend neither requests nor
/// reports the browser's `subgroups` feature (js/devices.js requests it), so in a browser
/// the device itself is asked.
fn has_subgroups(device: &wgpu::Device) -> bool {
    #[cfg(target_arch = "wasm32")]
    if let Some(device) = device.as_webgpu() {
        use wasm_bindgen::JsCast;
        let has = |features: wasm_bindgen::JsValue| {
            let has = js_sys::Reflect::get(&features, &"has".into()).ok()?;
            let has: js_sys::Function = has.dyn_into().ok()?;
            has.call1(&features, &"subgroups".into()).ok()?.as_bool()
        };
        return js_sys::Reflect::get(device.as_ref(), &"features".into())
            .ok()
            .and_then(has)
            .unwrap_or(false);
    }
    device.features().contains(wgpu::Features::SUBGROUP)
}

pub fn unavailable(message: impl Into<String>) -> GpuTableError {
    GpuTableError::new(ErrorCode::BackendUnavailable, message)
}

/// A flag that `device`'s lost callback sets; `api` says which device in messages.
fn watch_lost(device: &wgpu::Device, api: &'static str) -> LostFlag {
    let flag = LostFlag::default();
    let on_lost = flag.clone();
    device.set_device_lost_callback(move |reason, message| {
        on_lost.set(GpuTableError::new(
            ErrorCode::DeviceLost,
            format!("the {api} device was lost ({reason:?}): {message}"),
        ));
    });
    flag
}

/// Waits for all work submitted to `device` (native only: a browser runs it on its own).
#[cfg(not(target_arch = "wasm32"))]
pub fn wait_idle(device: &wgpu::Device) -> Result<()> {
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map(|_| ())
        .map_err(poll_failed)
}

/// A failed poll: the device is gone.
#[cfg(any(not(target_arch = "wasm32"), gl_backend))]
fn poll_failed(e: wgpu::PollError) -> GpuTableError {
    GpuTableError::new(
        ErrorCode::DeviceLost,
        format!("waiting for the device failed: {e}"),
    )
}

/// How a browser completes a buffer mapping on this backend.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// The event loop runs the callback (WebGPU).
    Callback,
    /// Only while the device is polled, between turns of the event loop (WebGL2).
    #[cfg(gl_backend)]
    Polled,
}

/// Maps `slice` for reading once the work submitted before it is done. Natively the callback
/// runs inside a wait for the device, in a browser as `completion` says.
#[cfg_attr(all(target_arch = "wasm32", not(gl_backend)), allow(unused_variables))]
pub async fn map_read(
    device: &wgpu::Device,
    slice: &wgpu::BufferSlice<'_>,
    lost: &LostFlag,
    completion: Completion,
) -> Result<()> {
    let (sender, mapped) = oneshot::channel();
    slice.map_async(wgpu::MapMode::Read, move |result| sender.send(result));
    let result = match completion {
        Completion::Callback => {
            #[cfg(not(target_arch = "wasm32"))]
            wait_idle(device)?;
            mapped.await
        }
        #[cfg(gl_backend)]
        Completion::Polled => polled(device, &mapped, lost).await?,
    };
    result.map_err(|e| GpuTableError::new(ErrorCode::DeviceLost, format!("readback failed: {e}")))
}

/// The value `receiver` gets once the device has done its work, polling it: natively by
/// waiting; in a browser WebGL2 completes work only while polled, so poll and yield to the
/// event loop.
#[cfg(gl_backend)]
async fn polled<T>(
    device: &wgpu::Device,
    receiver: &oneshot::Receiver<T>,
    lost: &LostFlag,
) -> Result<T> {
    loop {
        #[cfg(not(target_arch = "wasm32"))]
        wait_idle(device)?;
        #[cfg(target_arch = "wasm32")]
        (device.poll(wgpu::PollType::Poll)).map_err(poll_failed)?;
        if let Some(value) = receiver.try_take() {
            return Ok(value);
        }
        lost.check()?;
        #[cfg(target_arch = "wasm32")]
        yield_to_event_loop().await;
    }
}

/// Resolves on the next macrotask (setTimeout 0), in pages and workers alike.
#[cfg(all(target_arch = "wasm32", gl_backend))]
async fn yield_to_event_loop() {
    use wasm_bindgen::JsCast;
    let promise = js_sys::Promise::new(&mut |resolve, _reject| {
        let global = js_sys::global();
        let set_timeout = js_sys::Reflect::get(&global, &"setTimeout".into())
            .ok()
            .and_then(|f| f.dyn_into::<js_sys::Function>().ok());
        match set_timeout {
            Some(set_timeout) => {
                let _ = set_timeout.call2(&global, &resolve, &0.into());
            }
            None => {
                let _ = resolve.call0(&wasm_bindgen::JsValue::UNDEFINED);
            }
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}
