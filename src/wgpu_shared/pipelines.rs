//! Compiled pipelines of one device, cached by a key made of their source: kernel source
//! depends only on a graph's structure and types, so equal sources share one pipeline.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use super::scopes::ErrorScopes;
use crate::engine::DeviceCore;
use crate::error::Result;

pub struct PipelineCache<P> {
    pipelines: RefCell<HashMap<String, Rc<P>>>,
}

impl<P> Default for PipelineCache<P> {
    fn default() -> Self {
        PipelineCache {
            pipelines: RefCell::new(HashMap::new()),
        }
    }
}

impl<P> PipelineCache<P> {
    /// The pipeline cached under `key`, else the one `build` makes (counted in `stats`).
    /// An error wgpu raises while building it is the device's (`lost` explains it) or
    /// `INTERNAL` naming the `kind` of kernel and its `source`.
    pub async fn get_or_build(
        &self,
        key: &str,
        device: &wgpu::Device,
        core: &DeviceCore,
        kind: &str,
        source: &str,
        build: impl FnOnce() -> P,
    ) -> Result<Rc<P>> {
        if let Some(pipeline) = self.pipelines.borrow().get(key) {
            return Ok(pipeline.clone());
        }
        let scopes = ErrorScopes::push(device);
        let pipeline = build();
        if let Some(error) = scopes.pop(&format!("{kind} rejected\n{source}\n")).await {
            return Err(core.lost.explain(error));
        }
        core.counters.add_pipeline();
        let pipeline = Rc::new(pipeline);
        self.pipelines
            .borrow_mut()
            .insert(key.to_string(), pipeline.clone());
        Ok(pipeline)
    }

    pub fn len(&self) -> usize {
        self.pipelines.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn clear(&self) {
        self.pipelines.borrow_mut().clear();
    }
}
