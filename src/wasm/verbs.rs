//! Grouping verbs (api.md "Grouping and histograms").

use wasm_bindgen::prelude::*;

use super::{invalid, to_js, wrap, Evaluator, EvaluatorList, JsResult};
use crate::ir;

fn evaluators(nodes: impl IntoIterator<Item = ir::NodeRef>) -> js_sys::Array {
    nodes
        .into_iter()
        .map(|node| JsValue::from(Evaluator { node }))
        .collect()
}

#[wasm_bindgen]
pub fn unique(x: &Evaluator) -> JsResult<Evaluator> {
    wrap(ir::unique(&x.node))
}

/// `valueCounts(x)`: `[values, counts]`.
#[wasm_bindgen(js_name = valueCounts)]
pub fn value_counts(x: &Evaluator) -> JsResult<js_sys::Array> {
    let (values, counts) = ir::value_counts(&x.node).map_err(to_js)?;
    Ok(evaluators([values, counts]))
}

/// `groupBy(keys, aggregates)`: aggregate `i` is `ops[i]` of the next of `values` where
/// `valued[i]` is 1 (a `count` of no value: 0). Gives the keys' values, then the aggregates.
#[wasm_bindgen(js_name = groupBy)]
pub fn group_by(
    keys: &EvaluatorList,
    ops: Vec<String>,
    values: &EvaluatorList,
    valued: Vec<u8>,
) -> JsResult<js_sys::Array> {
    if ops.len() != valued.len() || valued.iter().filter(|&&v| v != 0).count() != values.nodes.len()
    {
        return Err(invalid(
            "groupBy's aggregates and their values do not match",
        ));
    }
    let mut next_value = values.nodes.iter();
    let aggregates = ops
        .iter()
        .zip(&valued)
        .map(|(op, &valued)| {
            Ok(ir::Aggregate {
                op: ir::GroupOp::parse(op)?,
                value: if valued != 0 {
                    next_value.next().cloned()
                } else {
                    None
                },
            })
        })
        .collect::<crate::Result<Vec<_>>>()
        .map_err(to_js)?;
    let (keys, aggregates) = ir::group_by(&keys.nodes, &aggregates).map_err(to_js)?;
    Ok(evaluators(keys.into_iter().chain(aggregates)))
}
