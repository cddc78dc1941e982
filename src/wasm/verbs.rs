//! Grouping and join verbs (api.md "Grouping and histograms", "Joins").

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

/// `histogram(x, {bins, range} | {edges}, {where})`: `edges` numbers, or one evaluator in
/// `device_edges`; `mask` holds the `where` mask if any.
#[wasm_bindgen]
pub fn histogram(
    x: &Evaluator,
    bins: JsValue,
    range: JsValue,
    edges: JsValue,
    device_edges: &EvaluatorList,
    mask: &EvaluatorList,
) -> JsResult<Evaluator> {
    let bins = match (
        bins.is_undefined(),
        edges.is_undefined(),
        device_edges.nodes.first(),
    ) {
        (false, true, None) => ir::Bins::Equal {
            bins: super::number_arg(&bins, "histogram's bins", None)?,
            range: range_of(&range)?,
        },
        (true, false, None) => ir::Bins::Edges(numbers(&edges, "histogram's edges")?),
        (true, true, Some(edges)) => ir::Bins::EdgesOf(edges.clone()),
        _ => return Err(invalid("histogram takes {bins, range} or {edges}")),
    };
    wrap(ir::histogram(&x.node, &bins, mask.nodes.first()))
}

/// `range`: 'auto' (or left out) for x's extent, or `[lo, hi]`.
fn range_of(range: &JsValue) -> JsResult<Option<(f64, f64)>> {
    if range.is_undefined() || range.as_string().as_deref() == Some("auto") {
        return Ok(None);
    }
    match numbers(range, "histogram's range")?[..] {
        [lo, hi] => Ok(Some((lo, hi))),
        _ => Err(invalid("histogram's range is 'auto' or [lo, hi]")),
    }
}

/// An array (or typed array) of numbers.
fn numbers(value: &JsValue, what: &str) -> JsResult<Vec<f64>> {
    match value.is_instance_of::<js_sys::Array>() || js_sys::ArrayBuffer::is_view(value) {
        true => super::numbers_of(&js_sys::Array::from(value), what),
        false => Err(invalid(format!("{what} must be an array of numbers"))),
    }
}

/// `join(leftKeys, rightKeys, {how, capacity})`: `[left, right, pairs, fits, capacity]`
/// (`ir::join`; `fits`: every pair the keys could make fits the capacity). `guessed`: the
/// pairs as `ir::join_guessed` packs them (no capacity given).
#[wasm_bindgen]
pub fn join(
    left: &Evaluator,
    right: &Evaluator,
    how: &str,
    capacity: Option<f64>,
    null_unmatched: bool,
    guessed: bool,
) -> JsResult<js_sys::Array> {
    let how = ir::JoinHow::parse(how).map_err(to_js)?;
    let (left, right) = (&left.node, &right.node);
    let joined = match (guessed, capacity) {
        (true, None) => ir::join_guessed(left, right, how, null_unmatched),
        _ => ir::join(left, right, how, capacity, null_unmatched),
    }
    .map_err(to_js)?;
    let out = evaluators([joined.left, joined.right, joined.pairs]);
    out.push(&JsValue::from_bool(joined.fits));
    out.push(&JsValue::from_f64(joined.capacity.into()));
    Ok(out)
}

/// `lookup(keys, tableKeys)`.
#[wasm_bindgen]
pub fn lookup(keys: &Evaluator, table_keys: &Evaluator) -> JsResult<Evaluator> {
    wrap(ir::lookup(&keys.node, &table_keys.node))
}
