//! One JS device class over the three backends: evaluation, explain, counters, memory and
//! the caching allocator are the engine's, whatever the device.

use wasm_bindgen::prelude::*;

use super::table::{BatchModel, TableModel};
use super::{invalid, number_arg, set, to_js, Evaluator, EvaluatorList, JsResult};
use crate::cpu::CpuDevice;
use crate::engine;
use crate::error::Shown;
use crate::evaluator;
#[cfg(gl_backend)]
use crate::gl::GlDevice;
use crate::gpu::GpuDevice;
use crate::ir::NodeRef;
use crate::memory::Home;
use crate::table;

#[derive(Clone)]
pub(super) enum AnyDevice {
    Cpu(CpuDevice),
    WebGpu(GpuDevice),
    #[cfg(gl_backend)]
    WebGl(GlDevice),
}

impl AnyDevice {
    /// The backend device, as the executor and everything above it take it.
    pub(super) fn backend(&self) -> &dyn engine::Backend {
        match self {
            AnyDevice::Cpu(d) => d,
            AnyDevice::WebGpu(d) => d,
            #[cfg(gl_backend)]
            AnyDevice::WebGl(d) => d,
        }
    }
}

#[wasm_bindgen]
pub struct Device {
    inner: AnyDevice,
}

impl Device {
    /// The backend device, for calls generic over it.
    pub(super) fn any(&self) -> AnyDevice {
        self.inner.clone()
    }
}

fn home_of(cache: Option<String>) -> Home {
    match cache {
        Some(name) => Home::Cache(name.into()),
        None => Home::Uncached,
    }
}

#[wasm_bindgen]
impl Device {
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> u32 {
        self.inner.backend().core().id
    }

    #[wasm_bindgen(getter, js_name = "type")]
    pub fn kind(&self) -> String {
        match self.inner {
            AnyDevice::Cpu(_) => "cpu",
            AnyDevice::WebGpu(_) => "webgpu",
            #[cfg(gl_backend)]
            AnyDevice::WebGl(_) => "webgl",
        }
        .to_string()
    }

    #[wasm_bindgen(getter, js_name = adapterName)]
    pub fn adapter_name(&self) -> String {
        match &self.inner {
            AnyDevice::Cpu(_) => String::new(),
            AnyDevice::WebGpu(d) => d.adapter_name.clone(),
            #[cfg(gl_backend)]
            AnyDevice::WebGl(d) => d.adapter_name.clone(),
        }
    }

    /// The limits that decide what fits, as a plain object.
    #[wasm_bindgen(getter)]
    pub fn limits(&self) -> JsValue {
        let limits = js_sys::Object::new();
        set(&limits, "maxRows", u32::MAX);
        match &self.inner {
            AnyDevice::Cpu(_) => set(&limits, "maxBufferSize", (isize::MAX as u64 + 1) as f64),
            AnyDevice::WebGpu(d) => {
                let l = d.limits;
                set(&limits, "maxBufferSize", l.max_buffer_size as f64);
                set(
                    &limits,
                    "maxStorageBufferBindingSize",
                    l.max_storage_buffer_binding_size as f64,
                );
                set(
                    &limits,
                    "maxComputeWorkgroupsPerDimension",
                    l.max_compute_workgroups_per_dimension,
                );
                set(
                    &limits,
                    "maxStorageBuffersPerShaderStage",
                    l.max_storage_buffers_per_shader_stage,
                );
            }
            #[cfg(gl_backend)]
            AnyDevice::WebGl(d) => {
                let l = d.limits;
                set(&limits, "maxTextureDimension2D", l.max_texture_dimension_2d);
                set(&limits, "maxColorAttachments", l.max_color_attachments);
                set(
                    &limits,
                    "maxSampledTexturesPerShaderStage",
                    l.max_sampled_textures_per_shader_stage,
                );
                set(&limits, "tileRows", d.layout.tile_rows());
            }
        }
        limits.into()
    }

    /// `allowedMem`: the device bytes one evaluation may hold at once (`undefined`: no bound).
    #[wasm_bindgen(getter, js_name = allowedMem)]
    pub fn allowed_mem(&self) -> Option<f64> {
        self.inner
            .backend()
            .core()
            .allowed_mem
            .get()
            .map(|b| b as f64)
    }
    #[wasm_bindgen(setter, js_name = allowedMem)]
    pub fn set_allowed_mem(&self, bytes: JsValue) -> JsResult<()> {
        let bytes = allowed_mem_of(&bytes)?;
        self.inner.backend().core().allowed_mem.set(bytes);
        Ok(())
    }

    /// Evaluates the roots in one plan; resolves once their outputs are on the device.
    pub fn evaluate(&self, roots: &EvaluatorList) -> js_sys::Promise {
        let (device, roots) = (self.inner.clone(), roots.nodes.clone());
        wasm_bindgen_futures::future_to_promise(async move {
            evaluator::evaluate_on(device.backend(), &roots)
                .await
                .map_err(to_js)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// `evaluate` without waiting: CPU work only.
    #[wasm_bindgen(js_name = evaluateSync)]
    pub fn evaluate_sync(&self, roots: &EvaluatorList) -> JsResult<()> {
        let AnyDevice::Cpu(device) = &self.inner else {
            return Err(invalid(format!(
                "evaluateSync() is for the CPU device; use await evaluate(device) on {}",
                self.kind()
            )));
        };
        engine::now(evaluator::evaluate_on(device, &roots.nodes))
            .and_then(|r| r)
            .map_err(to_js)
    }

    /// Evaluates the roots in one plan and releases every other output of their graph.
    #[wasm_bindgen(js_name = cleanEvaluate)]
    pub fn clean_evaluate(&self, roots: &EvaluatorList) -> js_sys::Promise {
        let (device, roots) = (self.inner.clone(), roots.nodes.clone());
        wasm_bindgen_futures::future_to_promise(async move {
            evaluator::clean_evaluate(device.backend(), &roots)
                .await
                .map_err(to_js)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// The passes and kernels the evaluator's graph runs on this device.
    pub fn explain(&self, evaluator: &Evaluator) -> JsResult<String> {
        engine::explain(self.inner.backend(), &evaluator.node).map_err(to_js)
    }

    /// Puts the evaluator's output on this device (copied once), and with `only` drops every
    /// other copy (a table's storage, at load).
    #[wasm_bindgen(js_name = putHere)]
    pub fn put_here(&self, evaluator: &Evaluator, only: bool) -> js_sys::Promise {
        let (device, node) = (self.inner.clone(), evaluator.node.clone());
        wasm_bindgen_futures::future_to_promise(async move {
            engine::put_on(device.backend(), &node, only)
                .await
                .map_err(to_js)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Puts every stored value of `batch` on this device, keeping no other copy (a table's
    /// batch, at load).
    #[wasm_bindgen(js_name = putBatchHere)]
    pub fn put_batch_here(&self, batch: &BatchModel) -> js_sys::Promise {
        let (device, nodes) = (self.inner.clone(), batch.stored_nodes());
        wasm_bindgen_futures::future_to_promise(async move {
            for node in nodes.map_err(to_js)? {
                engine::put_on(device.backend(), &node, true)
                    .await
                    .map_err(to_js)?;
            }
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Joins `table`'s batches into batches of at least `minRows` rows on this device (a
    /// batch alone in its group stays) and destroys the superseded ones it owned.
    #[wasm_bindgen(js_name = packBatches)]
    pub fn pack_batches(&self, table: &TableModel, min_rows: JsValue) -> js_sys::Promise {
        let (device, table) = (self.inner.clone(), table.shared());
        wasm_bindgen_futures::future_to_promise(async move {
            let min_rows = number_arg(&min_rows, "minBatchSize", Some(f64::INFINITY))?;
            table::pack_batches(device.backend(), &table, min_rows)
                .await
                .map_err(to_js)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// The table a table verb resolves to: `columns` (evaluators named `names`, chunked
    /// alike) computed on this device, one batch per chunk; a column named as one of
    /// `also_like`'s fields, else `like`'s, keeps its field's metadata, and the table is on
    /// `like`'s device. Each column has its dictionary in `dictionaries` (an array of its
    /// values, or null). `rows`: `likeRows` (a derive: every column has `like`'s rows, one
    /// row repeated to them), `onHost` (counted columns' rows stay on the host: a part of a
    /// join too large for the budget), or empty.
    #[wasm_bindgen(js_name = tableOfColumns)]
    pub fn table_of_columns(
        &self,
        names: Vec<String>,
        columns: &EvaluatorList,
        like: &TableModel,
        dictionaries: Vec<JsValue>,
        also_like: JsValue,
        rows: &str,
    ) -> js_sys::Promise {
        let (like_rows, on_host) = match rows {
            "likeRows" => (true, false),
            "onHost" => (false, true),
            "" => (false, false),
            other => {
                let message = format!("tableOfColumns rows '{other}'");
                return js_sys::Promise::reject(&to_js(engine::internal(message)));
            }
        };
        if names.len() != columns.nodes.len() || dictionaries.len() != names.len() {
            let message = format!("{} names for {} columns", names.len(), columns.nodes.len());
            return js_sys::Promise::reject(&invalid(message));
        }
        let dictionaries = match (dictionaries.iter())
            .map(super::dictionary::dictionary_from_js)
            .collect::<JsResult<Vec<_>>>()
        {
            Ok(dictionaries) => dictionaries,
            Err(error) => return js_sys::Promise::reject(&error),
        };
        let device = self.inner.clone();
        let columns: Vec<(String, NodeRef, _)> = (names.into_iter())
            .zip(columns.nodes.clone())
            .zip(dictionaries)
            .map(|((name, node), dictionary)| (name, node, dictionary))
            .collect();
        // Fields of other tables' columns (a join's right side, renamed), as a schema's.
        let also_like = match also_like.is_undefined() {
            true => Vec::new(),
            false => match super::table::fields_from_js(also_like) {
                Ok(fields) => fields,
                Err(error) => return js_sys::Promise::reject(&error),
            },
        };
        let like = like.shared();
        wasm_bindgen_futures::future_to_promise(async move {
            let mut fields = also_like;
            let (table_device, rows, metadata) = {
                let like = like.borrow();
                let rows = like.num_rows().map_err(to_js)?;
                fields.extend(like.fields.iter().cloned());
                (
                    like.device,
                    like_rows.then_some(rows),
                    like.metadata.clone(),
                )
            };
            let d = device.backend();
            let mut table =
                table::table_of_columns(d, &columns, &fields, table_device, rows, on_host)
                    .await
                    .map_err(to_js)?;
            // The verb's table keeps its source's schema metadata, as its fields do theirs.
            table.metadata = metadata;
            Ok(TableModel::of(table).into())
        })
    }

    /// `packBatches` on the CPU device, now.
    #[wasm_bindgen(js_name = packBatchesSync)]
    pub fn pack_batches_sync(&self, table: &TableModel, min_rows: JsValue) -> JsResult<()> {
        let min_rows = number_arg(&min_rows, "minBatchSize", Some(f64::INFINITY))?;
        let AnyDevice::Cpu(device) = &self.inner else {
            return Err(invalid(format!(
                "packBatchesSync() is for the CPU device; use await packBatches() on {}",
                self.kind()
            )));
        };
        engine::now(table::pack_batches(device, &table.shared(), min_rows))
            .and_then(|r| r)
            .map_err(to_js)
    }

    /// `{uploadBytes, readbackBytes, kernels, pipelines, allocations}`, cumulative.
    #[wasm_bindgen(getter)]
    pub fn stats(&self) -> JsValue {
        let s = self.inner.backend().core().counters.stats();
        let stats = js_sys::Object::new();
        set(&stats, "uploadBytes", s.upload_bytes as f64);
        set(&stats, "readbackBytes", s.readback_bytes as f64);
        set(&stats, "kernels", s.kernels as f64);
        set(&stats, "pipelines", s.pipelines as f64);
        set(&stats, "allocations", s.allocations as f64);
        stats.into()
    }

    /// `{liveBytes, pooledBytes, peakBytes}`.
    #[wasm_bindgen(getter)]
    pub fn memory(&self) -> JsValue {
        let m = self.inner.backend().core().counters.memory();
        let memory = js_sys::Object::new();
        set(&memory, "liveBytes", m.live_bytes as f64);
        set(&memory, "pooledBytes", m.pooled_bytes as f64);
        set(&memory, "peakBytes", m.peak_bytes as f64);
        memory.into()
    }

    /// Frees the pool and every cache, or the cache `name`.
    pub fn trim(&self, name: Option<String>) {
        self.inner.backend().trim(name.as_deref());
    }

    #[wasm_bindgen(js_name = resetPeak)]
    pub fn reset_peak(&self) {
        self.inner.backend().core().counters.reset_peak();
    }

    /// The most bytes the shared pool keeps.
    #[wasm_bindgen(js_name = setPoolCap)]
    pub fn set_pool_cap(&self, bytes: f64) {
        self.inner.backend().set_pool_cap(bytes.max(0.0) as u64);
    }

    /// New storage goes to the cache `name` (or nowhere, with no name) until `leaveCache`.
    #[wasm_bindgen(js_name = enterCache)]
    pub fn enter_cache(&self, name: Option<String>) {
        self.inner.backend().core().homes.enter(home_of(name));
    }

    #[wasm_bindgen(js_name = leaveCache)]
    pub fn leave_cache(&self, name: Option<String>) {
        self.inner.backend().core().homes.leave(&home_of(name));
    }

    /// Frees everything the device holds; later use is `DESTROYED`.
    pub fn destroy(&self) {
        self.inner.backend().destroy();
    }

    #[wasm_bindgen(getter)]
    pub fn destroyed(&self) -> bool {
        self.inner.backend().core().lost.is_set()
    }

    /// The browser's `GPUDevice` under a WebGPU device, for renderers that bind its buffers.
    #[wasm_bindgen(getter, js_name = gpuDevice)]
    pub fn gpu_device(&self) -> JsValue {
        match &self.inner {
            AnyDevice::WebGpu(d) => d
                .device
                .as_webgpu()
                .map_or(JsValue::UNDEFINED, |d| d.clone().into()),
            _ => JsValue::UNDEFINED,
        }
    }
}

/// A new CPU device.
#[wasm_bindgen(js_name = createCpuDevice)]
pub fn create_cpu_device() -> Device {
    Device {
        inner: AnyDevice::Cpu(CpuDevice::default()),
    }
}

/// The CPU device that `readValue()` of an evaluator never evaluated uses.
#[wasm_bindgen(js_name = sharedCpuDevice)]
pub fn shared_cpu_device() -> Device {
    Device {
        inner: AnyDevice::Cpu(CpuDevice::shared()),
    }
}

/// Resolves to a WebGPU device, or rejects with `BACKEND_UNAVAILABLE`.
#[wasm_bindgen(js_name = createWebGpuDevice)]
pub fn create_webgpu_device() -> js_sys::Promise {
    wasm_bindgen_futures::future_to_promise(async move {
        let device = GpuDevice::new().await.map_err(to_js)?;
        Ok(Device {
            inner: AnyDevice::WebGpu(device),
        }
        .into())
    })
}

/// Resolves to a WebGL2 device, or rejects with `BACKEND_UNAVAILABLE` naming what is missing.
#[cfg(gl_backend)]
#[wasm_bindgen(js_name = createWebGlDevice)]
pub fn create_webgl_device() -> js_sys::Promise {
    wasm_bindgen_futures::future_to_promise(async move {
        let device = GlDevice::new().await.map_err(to_js)?;
        Ok(Device {
            inner: AnyDevice::WebGl(device),
        }
        .into())
    })
}

/// `allowedMem`: a whole number of bytes of at least 1, or none (`undefined`, `null`).
fn allowed_mem_of(bytes: &JsValue) -> JsResult<Option<u64>> {
    if bytes.is_undefined() || bytes.is_null() {
        return Ok(None);
    }
    match number_arg(bytes, "allowedMem", None)? {
        b if b.is_finite() && b >= 1.0 && b.fract() == 0.0 => Ok(Some(b as u64)),
        b => Err(invalid(format!(
            "allowedMem must be a whole number of bytes of at least 1, got {}",
            Shown(b)
        ))),
    }
}

/// Checks `createDevice`'s `allowedMem` before a device is made for it.
#[wasm_bindgen(js_name = checkAllowedMem)]
pub fn check_allowed_mem(bytes: JsValue) -> JsResult<()> {
    allowed_mem_of(&bytes).map(|_| ())
}
