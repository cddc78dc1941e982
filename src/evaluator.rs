//! The evaluator operations of `api.md` over IR nodes, shared by the wasm layer and tests.

use std::rc::Rc;

use crate::column::{Column, ColumnData};
use crate::cpu;
use crate::error::{GpuTableError, Result};
use crate::ir::{all_nodes, NodeRef};
use crate::plan::{plan_with, Fusion};

/// Evaluates `node` on the CPU (once; later calls reuse the output).
pub fn evaluate(node: &NodeRef) -> Result<Rc<Column>> {
    node.check_alive()?;
    if let Some(column) = node.output() {
        return Ok(column);
    }
    cpu::evaluate(std::slice::from_ref(node), Fusion::On)?;
    node.output().ok_or_else(|| {
        GpuTableError::new(crate::ErrorCode::Internal, "evaluation produced no output")
    })
}

/// Rows `start..end` (clamped to the node's rows, `end` defaulting to all) as packed values.
pub fn read_value(node: &NodeRef, start: Option<f64>, end: Option<f64>) -> Result<ColumnData> {
    let column = evaluate(node)?;
    let rows = column.rows as f64;
    let clamp = |v: f64, name: &str| {
        if v.is_nan() {
            Err(GpuTableError::invalid(format!(
                "readValue {name} must be a number, got NaN"
            )))
        } else {
            Ok(v.trunc().clamp(0.0, rows) as u32)
        }
    };
    let start = clamp(start.unwrap_or(0.0), "startRow")?;
    let end = clamp(end.unwrap_or(rows), "endRow")?.max(start);
    Ok(column.slice_rows(start, end))
}

/// Evaluates every root in one plan, then releases the outputs of every intermediate node.
pub fn clean_evaluate(roots: &[NodeRef]) -> Result<()> {
    roots.iter().try_for_each(|r| r.check_alive())?;
    cpu::evaluate(roots, Fusion::On)?;
    let root_ids: std::collections::HashSet<u64> = roots.iter().map(|r| r.id).collect();
    for node in all_nodes(roots) {
        if !root_ids.contains(&node.id) {
            node.release_output();
        }
    }
    Ok(())
}

/// The passes the CPU backend runs for `node` (or ran, if it is evaluated).
pub fn explain(node: &NodeRef) -> Result<String> {
    node.check_alive()?;
    Ok(plan_with(std::slice::from_ref(node), Fusion::On, true)?.describe("cpu"))
}
