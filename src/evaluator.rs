//! The evaluator operations of `api.md` over IR nodes and devices, shared by the wasm layer
//! and tests.

use std::collections::HashSet;

use crate::column::ColumnData;
use crate::cpu::CpuDevice;
use crate::engine::{self, Backend};
use crate::error::{GpuTableError, Result};
use crate::ir::{all_nodes, NodeRef};
use crate::value::Output;

/// The node's output where it lives, evaluating it on the shared CPU device first if it
/// was never evaluated (as `readValue()` does; a source is then evaluated there too).
pub async fn output(node: &NodeRef) -> Result<Output> {
    node.check_alive()?;
    if !node.has_output() || node.materialized_on().is_none() {
        evaluate_on(&CpuDevice::shared(), std::slice::from_ref(node)).await?;
    }
    node.home().ok_or_else(|| {
        GpuTableError::new(
            crate::ErrorCode::Destroyed,
            format!("evaluator #{} was destroyed", node.id),
        )
    })
}

/// The rows of `node`'s result in `output`: all of them, or those its device count gave (a
/// counted result's rows are packed at the start of its output).
pub fn rows_of(node: &NodeRef, output: &Output) -> u32 {
    node.known_length().unwrap_or(output.rows() as u32)
}

/// `readValue(startRow, endRow)`'s row range: truncated, clamped to `rows`, `end` at least
/// `start`; NaN is `INVALID_ARGUMENT`.
pub fn row_range(rows: u32, start: Option<f64>, end: Option<f64>) -> Result<(u32, u32)> {
    crate::ir::clamp_rows(
        rows,
        start.unwrap_or(0.0),
        end.unwrap_or(rows as f64),
        ("readValue startRow", "readValue endRow"),
    )
}

/// Rows `start..end` of the node's output as packed values.
pub async fn read_value_async(
    node: &NodeRef,
    start: Option<f64>,
    end: Option<f64>,
) -> Result<ColumnData> {
    let output = output(node).await?;
    let (start, end) = row_range(rows_of(node, &output), start, end)?;
    engine::read_rows(&output, start, end).await
}

/// `output`, blocking (native only).
#[cfg(not(target_arch = "wasm32"))]
pub fn evaluate(node: &NodeRef) -> Result<Output> {
    pollster::block_on(output(node))
}

/// `read_value_async`, blocking (native only).
#[cfg(not(target_arch = "wasm32"))]
pub fn read_value(node: &NodeRef, start: Option<f64>, end: Option<f64>) -> Result<ColumnData> {
    pollster::block_on(read_value_async(node, start, end))
}

/// `evaluate(device)` of api.md: every root evaluated in one plan on `device` and its output
/// (and null flags) put there (a root evaluated elsewhere is copied once), so `device` holds
/// each.
pub async fn evaluate_on(device: &dyn Backend, roots: &[NodeRef]) -> Result<()> {
    let roots = &crate::ir::with_companions(roots);
    engine::evaluate(device, roots).await?;
    for root in roots {
        engine::put_on(device, root, false).await?;
    }
    Ok(())
}

/// Evaluates every root in one plan on `device`, then releases the outputs of every other
/// node of the graph (intermediates evaluated before included; inputs keep their data but
/// not the copies made of it).
pub async fn clean_evaluate(device: &dyn Backend, roots: &[NodeRef]) -> Result<()> {
    let roots = &crate::ir::with_companions(roots);
    evaluate_on(device, roots).await?;
    let root_ids: HashSet<u64> = roots.iter().map(|r| r.id).collect();
    for node in all_nodes(roots) {
        if !root_ids.contains(&node.id) {
            node.release_output();
        }
    }
    Ok(())
}

/// The passes the CPU backend runs for `node` (or ran, if it is evaluated).
pub fn explain(node: &NodeRef) -> Result<String> {
    engine::explain(&CpuDevice::shared(), node)
}
