//! Arrow IPC in and out: every supported type round-trips through arrow-rs, batches keep
//! their boundaries, unsupported types are TYPE_MISMATCH naming the column, and malformed
//! input is INVALID_IPC, never a panic.

mod common;
use common::Rng;

use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, FixedSizeListArray, Float32Array, Float64Array,
    Int16Array, Int32Array, Int64Array, Int8Array, RecordBatch, StringArray, UInt16Array,
    UInt32Array, UInt64Array, UInt8Array,
};
use arrow_schema::{Field, Schema};
use gputable::column::ColumnData;
use gputable::ipc::{
    read_ipc, write_ipc, Dictionary, Float64As, Int64As, ReadOptions, SourceKind, StreamReader,
    WriteColumn,
};
use gputable::ErrorCode;

fn list<T: Array + 'static>(values: T, n: i32, nulls: Option<Vec<bool>>) -> ArrayRef {
    let item = Arc::new(Field::new_list_field(values.data_type().clone(), false));
    Arc::new(FixedSizeListArray::try_new(item, n, Arc::new(values), nulls.map(Into::into)).unwrap())
}

/// A batch with every supported type; `k` shifts the values so batches differ.
fn batch(k: i32) -> RecordBatch {
    let f = k as f32;
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "i8",
            Arc::new(Int8Array::from(vec![-128 + k as i8, 0, 127])),
        ),
        (
            "i16",
            Arc::new(Int16Array::from(vec![-32768, k as i16, 32767])),
        ),
        (
            "i32",
            Arc::new(Int32Array::from(vec![i32::MIN, k, i32::MAX])),
        ),
        ("u8", Arc::new(UInt8Array::from(vec![0, k as u8, 255]))),
        ("u16", Arc::new(UInt16Array::from(vec![0, k as u16, 65535]))),
        (
            "u32",
            Arc::new(UInt32Array::from(vec![0, k as u32, u32::MAX])),
        ),
        ("f32", Arc::new(Float32Array::from(vec![f, f32::NAN, -0.5]))),
        (
            "f32_nulls",
            Arc::new(Float32Array::from(vec![Some(f), None, Some(3.0)])),
        ),
        (
            "positions",
            list(
                Float32Array::from((0..9).map(|i| i as f32 + f).collect::<Vec<_>>()),
                3,
                None,
            ),
        ),
        (
            "pairs",
            list(
                Int16Array::from(vec![1, 2, 3, 4, 5, 6]),
                2,
                Some(vec![true, false, true]),
            ),
        ),
        (
            "f64",
            Arc::new(Float64Array::from(vec![
                std::f64::consts::PI,
                1e300,
                -(k as f64),
            ])),
        ),
        (
            "flag",
            Arc::new(BooleanArray::from(vec![true, false, k % 2 == 0])),
        ),
    ];
    let schema = Schema::new(
        columns
            .iter()
            .map(|(name, a)| {
                Field::new(
                    *name,
                    a.data_type().clone(),
                    a.null_count() > 0 || *name == "f32_nulls",
                )
            })
            .collect::<Vec<_>>(),
    );
    RecordBatch::try_new(
        Arc::new(schema),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
    .unwrap()
}

fn stream_of(batches: &[RecordBatch]) -> Vec<u8> {
    let mut writer =
        arrow_ipc::writer::StreamWriter::try_new(Vec::new(), &batches[0].schema()).unwrap();
    for b in batches {
        writer.write(b).unwrap();
    }
    writer.finish().unwrap();
    writer.into_inner().unwrap()
}

fn file_of(batches: &[RecordBatch]) -> Vec<u8> {
    let mut writer =
        arrow_ipc::writer::FileWriter::try_new(Vec::new(), &batches[0].schema()).unwrap();
    for b in batches {
        writer.write(b).unwrap();
    }
    writer.finish().unwrap();
    writer.into_inner().unwrap()
}

fn read_back(bytes: &[u8]) -> Vec<RecordBatch> {
    arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(bytes), None)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Reads `bytes`, writes every column back, and returns arrow-rs's reading of that.
fn round_trip(bytes: &[u8]) -> Vec<RecordBatch> {
    // Word pairs keep Float64 exact (the default converts it to float32).
    let words = ReadOptions {
        float64: Float64As::Words,
        ..ReadOptions::default()
    };
    read_back(&write_table(&read_ipc(bytes, &words).unwrap()))
}

/// A read table's columns written back as an IPC stream.
fn write_table(table: &gputable::ipc::IpcTable) -> Vec<u8> {
    let columns: Vec<WriteColumn> = table
        .fields
        .iter()
        .enumerate()
        .map(|(i, field)| WriteColumn {
            name: &field.name,
            kind: field.kind,
            batches: table
                .batches
                .iter()
                .map(|b| (&b[i].data, b[i].validity.as_ref()))
                .collect(),
            dictionary: field.dictionary.as_deref(),
            shape: Some((field.dtype, field.size)),
            loaded_as: Some(&field.arrow_type),
            metadata: &field.metadata,
            nullable: field.nullable,
        })
        .collect();
    write_ipc(&columns, &table.metadata).unwrap()
}

fn same_values(a: &dyn Array, b: &dyn Array) -> bool {
    // Equal as data, except that NaN equals NaN and null slots may hold anything.
    if a.data_type() != b.data_type()
        || a.len() != b.len()
        || a.logical_nulls() != b.logical_nulls()
    {
        return false;
    }
    let (a, b) = (format!("{a:?}"), format!("{b:?}"));
    a == b
}

#[test]
fn every_supported_type_round_trips_with_batches_kept() {
    let batches = vec![batch(1), batch(2), batch(3)];
    for bytes in [stream_of(&batches), file_of(&batches)] {
        let table = read_ipc(&bytes, &ReadOptions::default()).unwrap();
        assert_eq!(table.batches.len(), 3, "one batch per source batch");
        let names: Vec<&str> = table.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names[..3], ["i8", "i16", "i32"]);
        let positions = &table.fields[8];
        assert_eq!((positions.dtype.name(), positions.size), ("float32", 3));
        let f64 = &table.fields[10];
        assert_eq!(
            (f64.dtype.name(), f64.size, f64.kind),
            ("float32", 1, SourceKind::Plain),
            "Float64 loads as float32 by default"
        );
        let words = ReadOptions {
            float64: Float64As::Words,
            ..ReadOptions::default()
        };
        let f64 = &read_ipc(&bytes, &words).unwrap().fields[10];
        assert_eq!(
            (f64.dtype.name(), f64.size, f64.kind),
            ("uint32", 2, SourceKind::Float64Words)
        );
        assert_eq!(table.fields[11].kind, SourceKind::Bool);
        // Validity: a separate vector, and null slots read 0.
        let nulls = &table.batches[0][7];
        assert_eq!(
            nulls.validity.as_ref().unwrap().data,
            ColumnData::U8(vec![1, 0, 1])
        );
        assert_eq!(nulls.data.data, ColumnData::F32(vec![1.0, 0.0, 3.0]));
        let pairs = &table.batches[0][9];
        assert_eq!(pairs.data.data, ColumnData::I16(vec![1, 2, 0, 0, 5, 6]));
        let back = round_trip(&bytes);
        assert_eq!(back.len(), 3);
        for (original, back) in batches.iter().zip(&back) {
            for (i, field) in original.schema().fields().iter().enumerate() {
                let (o, b) = (original.column(i), back.column(i));
                if field.name() == "pairs" || field.name() == "f32_nulls" {
                    // Null slots come back as zeros; compare the valid rows.
                    assert_eq!(o.logical_nulls(), b.logical_nulls(), "{}", field.name());
                    continue;
                }
                assert!(
                    same_values(o.as_ref(), b.as_ref()),
                    "{}: {o:?} vs {b:?}",
                    field.name()
                );
            }
        }
    }
}

#[test]
fn column_selection_and_conversions() {
    let bytes = stream_of(&[batch(5)]);
    let options = ReadOptions {
        columns: Some(vec!["f64".into(), "u8".into()]),
        float64: Float64As::Float32,
        ..Default::default()
    };
    let table = read_ipc(&bytes, &options).unwrap();
    assert_eq!(table.fields.len(), 2);
    assert_eq!(
        table.batches[0][0].data.data,
        ColumnData::F32(vec![std::f32::consts::PI, f32::INFINITY, -5.0])
    );
    assert_eq!(
        table.batches[0][1].data.data,
        ColumnData::U8(vec![0, 5, 255])
    );
    let missing = ReadOptions {
        columns: Some(vec!["nope".into()]),
        ..Default::default()
    };
    assert_eq!(
        read_ipc(&bytes, &missing).unwrap_err().code,
        ErrorCode::InvalidArgument
    );
}

fn single(name: &str, array: ArrayRef) -> Vec<u8> {
    let schema = Schema::new(vec![Field::new(name, array.data_type().clone(), true)]);
    stream_of(&[RecordBatch::try_new(Arc::new(schema), vec![array]).unwrap()])
}

/// A stream of one column `name` in a batch per array, its dictionaries sent as `handling`
/// says (a delta, or resent whole).
fn dictionary_batches(
    name: &str,
    arrays: &[&ArrayRef],
    handling: arrow_ipc::writer::DictionaryHandling,
) -> Vec<u8> {
    use arrow_ipc::writer::{IpcWriteOptions, StreamWriter};
    let field = Field::new(name, arrays[0].data_type().clone(), true);
    let schema = Arc::new(Schema::new(vec![field]));
    let options = IpcWriteOptions::default().with_dictionary_handling(handling);
    let mut writer = StreamWriter::try_new_with_options(Vec::new(), &schema, options).unwrap();
    for &array in arrays {
        let batch = RecordBatch::try_new(schema.clone(), vec![array.clone()]).unwrap();
        writer.write(&batch).unwrap();
    }
    writer.finish().unwrap();
    writer.into_inner().unwrap()
}

/// Each batch's first column.
fn first_columns(table: &gputable::ipc::IpcTable) -> Vec<ColumnData> {
    (table.batches.iter())
        .map(|b| b[0].data.data.clone())
        .collect()
}

#[test]
fn int64_needs_an_explicit_conversion_and_dictionaries_give_indices() {
    let bytes = single("big", Arc::new(Int64Array::from(vec![1, -2, 3])));
    let error = read_ipc(&bytes, &ReadOptions::default()).unwrap_err();
    assert_eq!(error.code, ErrorCode::TypeMismatch);
    assert!(
        error.message.contains("'big'") && error.message.contains("Int64"),
        "{}",
        error.message
    );
    let as_i32 = ReadOptions {
        int64: Int64As::Int32,
        ..Default::default()
    };
    let table = read_ipc(&bytes, &as_i32).unwrap();
    assert_eq!(
        table.batches[0][0].data.data,
        ColumnData::I32(vec![1, -2, 3])
    );
    let huge = single("u", Arc::new(UInt64Array::from(vec![u64::MAX])));
    assert_eq!(
        read_ipc(&huge, &as_i32).unwrap_err().code,
        ErrorCode::TypeMismatch
    );
    let as_f32 = ReadOptions {
        int64: Int64As::Float32,
        ..Default::default()
    };
    assert_eq!(
        read_ipc(&huge, &as_f32).unwrap().batches[0][0].data.data,
        ColumnData::F32(vec![u64::MAX as f32])
    );

    let dictionary: DictionaryArray<Int32Type> = vec!["a", "b", "a", "c"].into_iter().collect();
    let table = read_ipc(
        &single("cat", Arc::new(dictionary)),
        &ReadOptions::default(),
    )
    .unwrap();
    assert_eq!(table.fields[0].kind, SourceKind::DictionaryIndices);
    assert_eq!(
        table.batches[0][0].data.data,
        ColumnData::U32(vec![0, 1, 0, 2])
    );

    let bytes = single(
        "name",
        Arc::new(arrow_array::BinaryArray::from(vec![&b"x"[..]])),
    );
    let error = read_ipc(&bytes, &ReadOptions::default()).unwrap_err();
    assert_eq!(error.code, ErrorCode::TypeMismatch);
    assert!(
        error.message.contains("'name'") && error.message.contains("Binary"),
        "{}",
        error.message
    );
    let wide = single("v", list(Float32Array::from(vec![0.0; 5]), 5, None));
    assert_eq!(
        read_ipc(&wide, &ReadOptions::default()).unwrap_err().code,
        ErrorCode::TypeMismatch
    );
}

/// A stream whose second batch sends only the new dictionary values (a delta): indices into
/// the joined dictionary are in range.
#[test]
fn delta_dictionaries_extend_the_dictionary_before_them() {
    use arrow_ipc::writer::DictionaryHandling;
    let dictionary = |values: Vec<&str>, keys: Vec<i32>| -> ArrayRef {
        let values: ArrayRef = Arc::new(StringArray::from(values));
        Arc::new(DictionaryArray::<Int32Type>::try_new(Int32Array::from(keys), values).unwrap())
    };
    // Long values, so a resent dictionary is longer than a delta even after padding.
    let (a, b) = ("a".repeat(64), "b".repeat(64));
    let first = dictionary(vec![&a, &b], vec![0, 1, 0]);
    let second = dictionary(vec![&a, &b, "c"], vec![2, 0, 1]);
    let stream = |handling| dictionary_batches("cat", &[&first, &second], handling);
    let delta = stream(DictionaryHandling::Delta);
    assert!(
        delta.len() < stream(DictionaryHandling::Resend).len(),
        "the writer sent a delta"
    );

    let read =
        arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(&delta), None).unwrap();
    let batches: Vec<RecordBatch> = read.map(Result::unwrap).collect();
    assert_eq!(batches[1].column(0).as_ref(), second.as_ref());

    let table = read_ipc(&delta, &ReadOptions::default()).unwrap();
    assert_eq!(
        first_columns(&table),
        [
            ColumnData::U32(vec![0, 1, 0]),
            ColumnData::U32(vec![2, 0, 1])
        ]
    );
}

/// A dictionary of 64-bit integers, booleans or temporal values keeps them as the integers
/// Arrow stores (its column uint32 codes, no `int64` option needed); null values and null
/// indices are null; a delta extends the values; it is written back as the same value type
/// with the same values per row. Values of an unsupported type are TYPE_MISMATCH naming the
/// column.
#[test]
fn dictionaries_of_other_values_keep_their_values_and_type() {
    use arrow_array::types::Int8Type;
    use arrow_array::{
        cast::AsArray, Date32Array, Date64Array, DurationMicrosecondArray, Time32SecondArray,
        Time64NanosecondArray, TimestampMillisecondArray, TimestampNanosecondArray,
    };
    use arrow_ipc::writer::DictionaryHandling;
    use gputable::ipc::ArrowType;
    let keyed = |keys: Vec<Option<i8>>, values: ArrayRef| -> ArrayRef {
        Arc::new(DictionaryArray::<Int8Type>::try_new(keys.into(), values).unwrap())
    };
    let keys = vec![Some(2), Some(0), None, Some(1), Some(2)];
    let int64: ArrayRef = Arc::new(Int64Array::from(vec![Some(-7), None, Some(1 << 40)]));
    let table = read_ipc(
        &single("big", keyed(keys.clone(), int64.clone())),
        &ReadOptions::default(),
    )
    .unwrap();
    assert_eq!(table.fields[0].kind, SourceKind::DictionaryIndices);
    let int64_type = ArrowType::Int {
        bits: 64,
        signed: true,
    };
    assert_eq!(
        table.fields[0].dictionary.as_deref(),
        Some(&Dictionary::Integers(vec![-7, 1 << 40], int64_type))
    );
    let column = &table.batches[0][0];
    assert_eq!(column.data.data, ColumnData::U32(vec![1, 0, 0, 0, 1]));
    let flags = column.validity.as_ref().map(|v| v.data.clone());
    assert_eq!(flags, Some(ColumnData::U8(vec![1, 1, 0, 0, 1])));

    // Each row's value as text, null where the row is.
    let rows = |array: &dyn Array| -> Vec<Option<String>> {
        let dictionary = array.as_any_dictionary_opt().unwrap();
        let nulls = array.logical_nulls();
        (dictionary.normalized_keys().iter().enumerate())
            .map(|(i, &k)| {
                let valid = nulls.as_ref().is_none_or(|n| n.is_valid(i));
                valid.then(|| format!("{:?}", dictionary.values().slice(k, 1)))
            })
            .collect()
    };
    let zoned = TimestampNanosecondArray::from(vec![1_700_000_000_123_456_789, -1, 5])
        .with_timezone("+05:30");
    let cases: Vec<ArrayRef> = vec![
        int64,
        Arc::new(UInt64Array::from(vec![u64::MAX, 0, 1 << 63])),
        Arc::new(BooleanArray::from(vec![Some(true), Some(false), None])),
        Arc::new(Date32Array::from(vec![19_000, -3, 7])),
        Arc::new(Date64Array::from(vec![1_641_600_000_000, -86_400_000, 0])),
        Arc::new(Time32SecondArray::from(vec![59, 3_600, 0])),
        Arc::new(Time64NanosecondArray::from(vec![1, 86_399_999_999_999, 0])),
        Arc::new(zoned),
        Arc::new(DurationMicrosecondArray::from(vec![i64::MIN, i64::MAX, 0])),
    ];
    for values in cases {
        let source = keyed(keys.clone(), values);
        let back = round_trip(&single("x", source.clone()));
        let column = back[0].column(0);
        let value_type = |array: &dyn Array| match array.data_type() {
            arrow_schema::DataType::Dictionary(_, value) => (**value).clone(),
            other => panic!("{other:?} is not a dictionary"),
        };
        assert_eq!(value_type(column.as_ref()), value_type(source.as_ref()));
        assert_eq!(
            rows(column.as_ref()),
            rows(source.as_ref()),
            "{:?}",
            source.data_type()
        );
    }

    let binary: ArrayRef = Arc::new(arrow_array::BinaryArray::from(vec![&b"x"[..], b"y", b"z"]));
    let error = read_ipc(&single("raw", keyed(keys, binary)), &ReadOptions::default());
    let error = error.unwrap_err();
    assert_eq!(error.code, ErrorCode::TypeMismatch);
    assert!(error.message.contains("'raw'"), "{}", error.message);

    // Timestamps in two batches, the second's dictionary a delta.
    let stamps = |values: Vec<i64>, keys: Vec<i32>| -> ArrayRef {
        let values: ArrayRef = Arc::new(TimestampMillisecondArray::from(values));
        Arc::new(DictionaryArray::<Int32Type>::try_new(Int32Array::from(keys), values).unwrap())
    };
    let first = stamps(vec![1_000, 2_000], vec![1, 0]);
    let second = stamps(vec![1_000, 2_000, 3_000], vec![2, 1, 0]);
    let bytes = dictionary_batches("at", &[&first, &second], DictionaryHandling::Delta);
    let table = read_ipc(&bytes, &ReadOptions::default()).unwrap();
    assert_eq!(
        first_columns(&table),
        [ColumnData::U32(vec![1, 0]), ColumnData::U32(vec![2, 1, 0])]
    );
    let Some(Dictionary::Integers(values, _)) = table.fields[0].dictionary.as_deref() else {
        panic!("{:?}", table.fields[0].dictionary);
    };
    assert_eq!(values, &[1_000, 2_000, 3_000]);
}

/// A dictionary batch claiming far more values than its buffers hold is INVALID_IPC for
/// its short buffer, found before room for the claimed values is reserved (a claim of 2^28
/// Int64 values reserved 2 GB first).
#[test]
fn a_dictionary_claiming_more_values_than_its_buffer_is_refused_before_reserving() {
    let int64: ArrayRef = Arc::new(Int64Array::from((0..77).collect::<Vec<i64>>()));
    let text: ArrayRef = Arc::new(StringArray::from(
        (0..77).map(|i| format!("v{i}")).collect::<Vec<_>>(),
    ));
    for values in [int64, text] {
        let keys = Int32Array::from(vec![0, 5, 76]);
        let column = DictionaryArray::<Int32Type>::try_new(keys, values).unwrap();
        let mut bytes = single("d", Arc::new(column));
        // The dictionary batch's field node: 77 values, no nulls.
        let node: Vec<u8> = [77i64.to_le_bytes(), 0i64.to_le_bytes()].concat();
        let at = (bytes.windows(16).position(|w| w == node)).expect("the values' field node");
        bytes[at..at + 8].copy_from_slice(&(1i64 << 28).to_le_bytes());
        let options = ReadOptions {
            int64: Int64As::Float32,
            ..Default::default()
        };
        let error = read_ipc(&bytes, &options).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidIpc, "{}", error.message);
        assert!(error.message.contains("shorter"), "{}", error.message);
    }
}

/// Int64 values were narrowed before null slots were zeroed: garbage in a null slot was
/// TYPE_MISMATCH. Null slots are not converted now, and read 0.
#[test]
fn null_slots_of_int64_columns_are_not_range_checked() {
    use arrow_buffer::{NullBuffer, ScalarBuffer};
    let values = Int64Array::new(
        ScalarBuffer::from(vec![1, i64::MAX, -3, i64::MIN]),
        Some(NullBuffer::from(vec![true, false, true, false])),
    );
    let bytes = single("n", Arc::new(values));
    let as_i32 = ReadOptions {
        int64: Int64As::Int32,
        ..Default::default()
    };
    let table = read_ipc(&bytes, &as_i32).unwrap();
    let column = &table.batches[0][0];
    assert_eq!(column.data.data, ColumnData::I32(vec![1, 0, -3, 0]));
    assert_eq!(
        column.validity.as_ref().unwrap().data,
        ColumnData::U8(vec![1, 0, 1, 0])
    );
    // A value out of range where it is not null is still refused.
    let bad = single("n", Arc::new(Int64Array::from(vec![Some(i64::MAX), None])));
    assert_eq!(
        read_ipc(&bad, &as_i32).unwrap_err().code,
        ErrorCode::TypeMismatch
    );
}

/// Nulls inside the items of a fixed-size list were dropped (garbage read as values).
#[test]
fn nulls_inside_list_items_are_kept_and_written_back() {
    let items = Float32Array::from(vec![
        Some(1.0),
        None,
        Some(3.0),
        Some(4.0),
        Some(5.0),
        Some(6.0),
        None,
        None,
        None,
    ]);
    let item = Arc::new(Field::new_list_field(items.data_type().clone(), true));
    let array: ArrayRef = Arc::new(
        FixedSizeListArray::try_new(
            item,
            3,
            Arc::new(items),
            Some(vec![true, true, false].into()),
        )
        .unwrap(),
    );
    let bytes = single("xyz", array.clone());
    let table = read_ipc(&bytes, &ReadOptions::default()).unwrap();
    let column = &table.batches[0][0];
    assert_eq!(
        column.data.data,
        ColumnData::F32(vec![1.0, 0.0, 3.0, 4.0, 5.0, 6.0, 0.0, 0.0, 0.0])
    );
    let validity = column.validity.as_ref().unwrap();
    assert_eq!(validity.size, 3, "one flag per item");
    assert_eq!(
        validity.data,
        ColumnData::U8(vec![1, 0, 1, 1, 1, 1, 0, 0, 0])
    );
    let back = round_trip(&bytes);
    let list = back[0].column(0);
    assert_eq!(list.logical_nulls(), array.logical_nulls(), "row nulls");
    let written = list.as_any().downcast_ref::<FixedSizeListArray>().unwrap();
    let source = array.as_any().downcast_ref::<FixedSizeListArray>().unwrap();
    assert_eq!(
        written.values().logical_nulls(),
        source.values().logical_nulls(),
        "item nulls"
    );
}

/// The reader's error on `bytes`, if any; the stream reader, fed them in pieces of 7 bytes,
/// must not panic either.
fn never_panics(bytes: &[u8]) -> Option<ErrorCode> {
    let pieces = std::panic::catch_unwind(|| streamed(bytes, 7, ReadOptions::default()));
    assert!(
        pieces.is_ok(),
        "the stream reader panicked on {} bytes: {:02x?}",
        bytes.len(),
        &bytes[..bytes.len().min(64)]
    );
    match std::panic::catch_unwind(|| read_ipc(bytes, &ReadOptions::default())) {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(e.code),
        Err(_) => panic!(
            "the reader panicked on {} bytes: {:02x?}",
            bytes.len(),
            &bytes[..bytes.len().min(64)]
        ),
    }
}

#[test]
fn malformed_ipc_is_invalid_ipc_never_a_panic() {
    let batches = vec![batch(1), batch(2)];
    for bytes in [stream_of(&batches), file_of(&batches)] {
        // Every truncation.
        for end in 0..bytes.len() {
            if let Some(code) = never_panics(&bytes[..end]) {
                assert!(
                    matches!(code, ErrorCode::InvalidIpc | ErrorCode::TypeMismatch),
                    "{code:?} at {end}"
                );
            }
        }
        // Random corruption: flipped bytes and overwritten words.
        let mut rng = Rng(0xbad_1bc);
        for _ in 0..3000 {
            let mut broken = bytes.clone();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(broken.len() as u64) as usize;
                broken[at] = match rng.below(3) {
                    0 => broken[at] ^ (1 << rng.below(8)),
                    1 => 0xff,
                    _ => rng.next() as u8,
                };
            }
            never_panics(&broken);
        }
    }
    assert_eq!(
        never_panics(b"not arrow at all"),
        Some(ErrorCode::InvalidIpc)
    );
    assert_eq!(never_panics(b""), Some(ErrorCode::InvalidIpc));
    assert_eq!(
        never_panics(b"ARROW1\0\0garbageARROW1"),
        Some(ErrorCode::InvalidIpc)
    );
    // A message declaring a huge body.
    let mut huge = stream_of(&[batch(1)]);
    let meta = u32::from_le_bytes(huge[4..8].try_into().unwrap()) as usize;
    let second = 8 + meta; // the schema message has no body; the batch message follows
    huge[second + 4..second + 8].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    assert_eq!(never_panics(&huge), Some(ErrorCode::InvalidIpc));
}

/// Feeds `bytes` to a stream reader in pieces of `piece` bytes: its batches and fields.
fn streamed(
    bytes: &[u8],
    piece: usize,
    options: ReadOptions,
) -> gputable::Result<(Vec<Vec<gputable::ipc::IpcColumn>>, Vec<String>)> {
    let mut reader = StreamReader::new(options);
    let mut batches = Vec::new();
    for part in bytes.chunks(piece.max(1)) {
        batches.extend(reader.push(part)?);
    }
    let read = reader.finish()?;
    batches.extend(read.batches);
    Ok((batches, read.fields.into_iter().map(|f| f.name).collect()))
}

#[test]
fn a_stream_or_file_read_in_pieces_gives_the_batches_of_a_whole_read() {
    let batches = vec![batch(1), batch(2), batch(3)];
    let dictionary: DictionaryArray<Int32Type> = vec!["a", "b", "a"].into_iter().collect();
    for bytes in [
        stream_of(&batches),
        file_of(&batches),
        single("cat", Arc::new(dictionary)),
    ] {
        let whole = read_ipc(&bytes, &ReadOptions::default()).unwrap();
        let names: Vec<String> = whole.fields.iter().map(|f| f.name.clone()).collect();
        for piece in [1, 7, 64, 1000, bytes.len()] {
            let (parts, fields) = streamed(&bytes, piece, ReadOptions::default())
                .unwrap_or_else(|e| panic!("pieces of {piece} of {} bytes: {e}", bytes.len()));
            assert_eq!(fields, names, "pieces of {piece}");
            assert_eq!(parts.len(), whole.batches.len(), "pieces of {piece}");
            for (a, b) in parts.iter().zip(&whole.batches) {
                for (x, y) in a.iter().zip(b) {
                    // Debug text: NaN equals NaN there.
                    assert_eq!(format!("{:?}", x.data), format!("{:?}", y.data));
                    assert_eq!(format!("{:?}", x.validity), format!("{:?}", y.validity));
                }
            }
        }
    }
    // An arrow-rs file has its schema after the magic: its batches arrive before the end.
    let mut reader = StreamReader::new(ReadOptions::default());
    let bytes = file_of(&batches);
    let early: usize = bytes
        .chunks(64)
        .map(|part| reader.push(part).unwrap().len())
        .sum();
    assert_eq!(early, batches.len());
    assert!(reader.finish().unwrap().batches.is_empty());
    // A schema and no batches: the fields, no batch.
    let empty = {
        let schema = batch(1).schema();
        let mut writer = arrow_ipc::writer::StreamWriter::try_new(Vec::new(), &schema).unwrap();
        writer.finish().unwrap();
        writer.into_inner().unwrap()
    };
    let (parts, fields) = streamed(&empty, 5, ReadOptions::default()).unwrap();
    assert!(parts.is_empty());
    assert!(!fields.is_empty());
    // A file with its schema only in its footer and no batches (the schema message after
    // the magic cut out; the footer lists no blocks): the fields, as a whole read gives them.
    let footer_only = {
        let schema = batch(1).schema();
        let mut writer = arrow_ipc::writer::FileWriter::try_new(Vec::new(), &schema).unwrap();
        writer.finish().unwrap();
        let mut bytes = writer.into_inner().unwrap();
        // The schema message starts with the first continuation marker (after padding).
        let start = (bytes.windows(4).position(|w| w == [0xff; 4])).unwrap();
        let metadata = u32::from_le_bytes(bytes[start + 4..start + 8].try_into().unwrap());
        bytes.drain(start..start + 8 + metadata as usize);
        bytes
    };
    let whole = read_ipc(&footer_only, &ReadOptions::default()).unwrap();
    assert!(whole.batches.is_empty() && !whole.fields.is_empty());
    for piece in [1, 8, footer_only.len()] {
        let (parts, fields) = streamed(&footer_only, piece, ReadOptions::default()).unwrap();
        assert!(parts.is_empty());
        assert_eq!(
            fields,
            whole
                .fields
                .iter()
                .map(|f| f.name.clone())
                .collect::<Vec<_>>()
        );
    }
    // Cut short anywhere: as a whole read of the same bytes (an end between messages is a
    // shorter stream; inside one, INVALID_IPC), never a panic.
    let bytes = stream_of(&batches);
    for end in (0..bytes.len()).step_by(13) {
        let whole = read_ipc(&bytes[..end], &ReadOptions::default());
        match (streamed(&bytes[..end], 11, ReadOptions::default()), whole) {
            (Ok((parts, _)), Ok(table)) => assert_eq!(parts.len(), table.batches.len()),
            (Err(error), Err(_)) => assert_eq!(error.code, ErrorCode::InvalidIpc, "cut at {end}"),
            (streamed, whole) => panic!(
                "cut at {end}: streamed {:?}, whole {:?}",
                streamed.map(|p| p.0.len()),
                whole.map(|t| t.batches.len())
            ),
        }
    }
    // Corrupted, in pieces: an error or batches, never a panic.
    let mut rng = Rng(0x0571_7ea3);
    for _ in 0..1000 {
        let mut broken = bytes.clone();
        let at = rng.below(broken.len() as u64) as usize;
        broken[at] ^= 1 << rng.below(8);
        let piece = 1 + rng.below(300) as usize;
        let outcome = std::panic::catch_unwind(|| streamed(&broken, piece, ReadOptions::default()));
        assert!(outcome.is_ok(), "a panic with byte {at} flipped");
    }
    let error = streamed(b"not arrow at all", 4, ReadOptions::default()).unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidIpc);
}

/// A file's footer must agree with its messages, whichever reader reads it: a file whose
/// schema message holds no fields but whose footer holds three (as arrow-testing's fuzz file
/// 5654157323403264, there of union fields) was INVALID_IPC read whole and an empty table
/// read in pieces. Now both refuse it, and a file whose footer holds another type, lists
/// other batches, or is missing (cut short anywhere) too; a good file reads the same both
/// ways.
#[test]
fn a_file_and_its_pieces_agree_with_its_footer() {
    let three = || {
        let fields =
            ["a", "b", "c"].map(|name| Field::new(name, arrow_schema::DataType::Int32, true));
        Schema::new(fields.to_vec())
    };
    let file_with = |schema: &Schema, batches: &[RecordBatch]| {
        let mut writer = arrow_ipc::writer::FileWriter::try_new(Vec::new(), schema).unwrap();
        for b in batches {
            writer.write(b).unwrap();
        }
        writer.finish().unwrap();
        writer.into_inner().unwrap()
    };
    // The schema message after the magic replaced by `other`'s (the footer lists no blocks,
    // so nothing else moves).
    let with_header = |file: Vec<u8>, other: &Schema| {
        let header = {
            let mut writer = arrow_ipc::writer::StreamWriter::try_new(Vec::new(), other).unwrap();
            writer.finish().unwrap();
            let stream = writer.into_inner().unwrap();
            let (range, _) = messages_of(&stream)[0].clone();
            stream[range].to_vec()
        };
        let start = (file.windows(4).position(|w| w == [0xff; 4])).unwrap();
        let metadata = u32::from_le_bytes(file[start + 4..start + 8].try_into().unwrap());
        let mut bytes = file[..start].to_vec();
        bytes.extend(header);
        bytes.extend(&file[start + 8 + metadata as usize..]);
        bytes
    };
    let both = |bytes: &[u8]| {
        let whole = read_ipc(bytes, &ReadOptions::default());
        let pieces =
            [1, 7, bytes.len()].map(|piece| streamed(bytes, piece, ReadOptions::default()));
        (whole, pieces)
    };
    let refused = |bytes: &[u8], why: &str| {
        let (whole, pieces) = both(bytes);
        let error = whole.expect_err(why);
        assert_eq!(error.code, ErrorCode::InvalidIpc, "{why}: {error}");
        for piece in pieces {
            let error = piece.expect_err(why);
            assert_eq!(
                error.code,
                ErrorCode::InvalidIpc,
                "{why}, in pieces: {error}"
            );
        }
    };
    let empty_schema = Schema::empty();
    refused(
        &with_header(file_with(&three(), &[]), &empty_schema),
        "no fields, three in the footer",
    );
    let floats = Schema::new(
        ["a", "b", "c"]
            .map(|n| Field::new(n, arrow_schema::DataType::Float32, true))
            .to_vec(),
    );
    refused(
        &with_header(file_with(&three(), &[]), &floats),
        "another type in the footer",
    );
    // The footer lists the first of two batches only.
    let batches = vec![batch(1), batch(2)];
    let good = file_of(&batches);
    let one = file_of(&batches[..1]);
    let footer_of = |bytes: &[u8]| {
        let n = bytes.len();
        let len = u32::from_le_bytes(bytes[n - 10..n - 6].try_into().unwrap()) as usize;
        bytes[n - 10 - len..].to_vec()
    };
    let mut fewer = good[..good.len() - footer_of(&good).len()].to_vec();
    let footer = footer_of(&one);
    fewer.extend(footer);
    refused(&fewer, "a footer listing one of two batches");
    // Cut short anywhere: no footer, refused both ways.
    for end in (0..good.len() - 1).step_by(17) {
        refused(&good[..end], &format!("a file cut at {end}"));
    }
    // The good file: the same batches both ways.
    let (whole, pieces) = both(&good);
    let whole = whole.unwrap();
    for piece in pieces {
        assert_eq!(piece.unwrap().0.len(), whole.batches.len());
    }
}

/// The stream reader keeps what it read between pieces (its dictionaries, its schema)
/// instead of reading the schema and every dictionary again for each batch (quadratic in
/// the number of messages before): a stream of many batches, each sending a dictionary
/// delta that holds a null value, read in pieces of every size, gives the whole read's
/// batches, and its fields are known once the schema has arrived.
#[test]
fn a_stream_reader_keeps_its_dictionaries_between_pieces() {
    use arrow_ipc::writer::{DictionaryHandling, IpcWriteOptions, StreamWriter};
    let batches = 60;
    // Batch k's dictionary: the values of batch k - 1 and two more, one of them null.
    let values: Vec<Option<String>> = (0..2 * batches)
        .map(|i| (i % 2 == 0).then(|| format!("value {i}")))
        .collect();
    let column = |k: usize| -> ArrayRef {
        let dictionary: ArrayRef = Arc::new(StringArray::from(values[..2 * k + 2].to_vec()));
        let keys: Vec<i32> = (0..5)
            .map(|j| ((k * 7 + j * 3) % (2 * k + 2)) as i32)
            .collect();
        Arc::new(DictionaryArray::<Int32Type>::try_new(keys.into(), dictionary).unwrap())
    };
    let schema = Arc::new(Schema::new(vec![Field::new(
        "cat",
        column(0).data_type().clone(),
        true,
    )]));
    let options = IpcWriteOptions::default().with_dictionary_handling(DictionaryHandling::Delta);
    let mut writer = StreamWriter::try_new_with_options(Vec::new(), &schema, options).unwrap();
    for k in 0..batches {
        let batch = RecordBatch::try_new(schema.clone(), vec![column(k)]).unwrap();
        writer.write(&batch).unwrap();
    }
    writer.finish().unwrap();
    let bytes = writer.into_inner().unwrap();
    let messages = messages_of(&bytes);
    let deltas = (messages.iter())
        .filter(|(_, header)| *header == arrow_ipc::MessageHeader::DictionaryBatch)
        .count();
    assert_eq!(deltas, batches, "one dictionary message per batch");
    let is_delta = |range: &std::ops::Range<usize>| {
        let length =
            u32::from_le_bytes(bytes[range.start + 4..range.start + 8].try_into().unwrap());
        let metadata = &bytes[range.start + 8..range.start + 8 + length as usize];
        let message = arrow_ipc::root_as_message(metadata).unwrap();
        message
            .header_as_dictionary_batch()
            .is_some_and(|d| d.isDelta())
    };
    let sent_as_deltas = messages.iter().filter(|(range, _)| is_delta(range)).count();
    assert_eq!(sent_as_deltas, batches - 1, "the writer sent deltas");

    let whole = read_ipc(&bytes, &ReadOptions::default()).unwrap();
    assert_eq!(whole.batches.len(), batches);
    let nulls: usize = (whole.batches.iter())
        .filter_map(|b| b[0].validity.as_ref())
        .map(|v| match &v.data {
            ColumnData::U8(flags) => flags.iter().filter(|&&f| f == 0).count(),
            other => panic!("validity of {other:?}"),
        })
        .sum();
    assert!(nulls > 0, "rows pointing at null values are null");
    for piece in [1, 5, 64, 999, bytes.len()] {
        let (parts, fields) = streamed(&bytes, piece, ReadOptions::default()).unwrap();
        assert_eq!(fields, ["cat"]);
        assert_eq!(parts.len(), batches, "pieces of {piece}");
        for (a, b) in parts.iter().zip(&whole.batches) {
            assert_eq!(format!("{:?}", a[0].data), format!("{:?}", b[0].data));
            assert_eq!(
                format!("{:?}", a[0].validity),
                format!("{:?}", b[0].validity)
            );
        }
    }

    let mut reader = StreamReader::new(ReadOptions::default());
    let schema_end = messages[0].0.end;
    assert!(reader.push(&bytes[..schema_end]).unwrap().is_empty());
    let fields = reader.fields().expect("the fields, once the schema is in");
    assert_eq!(fields[0].name, "cat");
}

/// The writer (src/ipc/write.rs) refuses columns that disagree instead of writing a stream
/// no reader accepts, and writes an empty table as a schema alone.
#[test]
fn the_writer_refuses_mismatched_columns() {
    use gputable::column::Column;
    let three = Column::new(ColumnData::F32(vec![1.0, 2.0, 3.0]), 1).unwrap();
    let two = Column::new(ColumnData::I32(vec![1, 2]), 1).unwrap();
    let column = |name, values, validity| WriteColumn {
        name,
        kind: SourceKind::Plain,
        batches: vec![(values, validity)],
        dictionary: None,
        shape: None,
        loaded_as: None,
        metadata: &[],
        nullable: false,
    };
    let rows = write_ipc(&[column("a", &three, None), column("b", &two, None)], &[]).unwrap_err();
    assert_eq!(rows.code, ErrorCode::InvalidIpc, "{}", rows.message);
    let flags = Column::new(ColumnData::U8(vec![1, 0]), 1).unwrap();
    let validity = write_ipc(&[column("a", &three, Some(&flags))], &[]).unwrap_err();
    assert_eq!(
        validity.code,
        ErrorCode::InvalidArgument,
        "{}",
        validity.message
    );

    let with_nulls = Column::new(ColumnData::U8(vec![1, 0, 1]), 1).unwrap();
    let back = read_back(&write_ipc(&[column("a", &three, Some(&with_nulls))], &[]).unwrap());
    assert_eq!(back[0].column(0).logical_nulls().unwrap().null_count(), 1);
    assert!(read_back(&write_ipc(&[], &[]).unwrap()).is_empty());
}

/// Found in review: a "float64" column of odd size had no word pairs to write, and a
/// validity of two flags per row then split its items in chunks of none (a panic). Odd
/// sizes are written as the uint32 words they hold.
#[test]
fn the_writer_writes_odd_float64_words_as_words() {
    use gputable::column::Column;
    let words = Column::empty(gputable::DType::U32, 1).unwrap();
    let flags = Column::empty(gputable::DType::U8, 2).unwrap();
    let column = WriteColumn {
        name: "w",
        kind: SourceKind::Float64Words,
        batches: vec![(&words, Some(&flags))],
        dictionary: None,
        shape: None,
        loaded_as: None,
        metadata: &[],
        nullable: false,
    };
    let outcome = std::panic::catch_unwind(|| write_ipc(&[column], &[]));
    let written = outcome.expect("no panic").unwrap();
    assert_eq!(read_back(&written)[0].num_rows(), 0);
    let one_word = Column::new(ColumnData::U32(vec![7]), 1).unwrap();
    let column = WriteColumn {
        name: "w",
        kind: SourceKind::Float64Words,
        batches: vec![(&one_word, None)],
        dictionary: None,
        shape: None,
        loaded_as: None,
        metadata: &[],
        nullable: false,
    };
    let back = read_back(&write_ipc(&[column], &[]).unwrap());
    assert_eq!(
        back[0].column(0).data_type(),
        &arrow_schema::DataType::UInt32
    );
}

/// Our reader walks past columns it does not read (every layout arrow-rs writes: offsets,
/// views with variadic buffers, children, unions, run ends, dictionaries) to the ones it
/// reads, and takes a dictionary column's nulls from its indices and its values.
#[test]
fn columns_of_every_layout_are_walked_past_and_dictionary_values_give_nulls() {
    use arrow_array::builder::{ListBuilder, StringBuilder};
    use arrow_array::types::Int8Type;
    use arrow_array::{
        BinaryViewArray, Decimal128Array, FixedSizeBinaryArray, LargeStringArray, NullArray,
        RunArray, StringViewArray, StructArray, TimestampMillisecondArray, UnionArray,
    };
    use arrow_buffer::ScalarBuffer;
    use arrow_schema::{DataType, UnionFields};

    let mut lists = ListBuilder::new(StringBuilder::new());
    for row in [vec!["a"], vec![], vec!["b", "c"]] {
        lists.append_value(row.into_iter().map(Some));
    }
    let union = |dense: bool| -> ArrayRef {
        let fields = UnionFields::try_new(
            vec![0, 1],
            vec![
                Field::new("i", DataType::Int32, true),
                Field::new("s", DataType::Utf8, true),
            ],
        )
        .unwrap();
        let types = ScalarBuffer::from(vec![0i8, 1, 0]);
        let (offsets, children): (_, Vec<ArrayRef>) = match dense {
            true => (
                Some(ScalarBuffer::from(vec![0i32, 0, 1])),
                vec![
                    Arc::new(Int32Array::from(vec![1, 2])),
                    Arc::new(StringArray::from(vec!["x"])),
                ],
            ),
            false => (
                None,
                vec![
                    Arc::new(Int32Array::from(vec![1, 0, 2])),
                    Arc::new(StringArray::from(vec!["", "x", ""])),
                ],
            ),
        };
        Arc::new(UnionArray::try_new(fields, types, offsets, children).unwrap())
    };
    let structs: ArrayRef = Arc::new(StructArray::from(vec![
        (
            Arc::new(Field::new("a", DataType::Int32, false)),
            Arc::new(Int32Array::from(vec![1, 2, 3])) as ArrayRef,
        ),
        (
            Arc::new(Field::new("b", DataType::Utf8, false)),
            Arc::new(StringArray::from(vec!["p", "q", "r"])) as ArrayRef,
        ),
    ]));
    let run_ends: ArrayRef = Arc::new(
        RunArray::try_new(&Int32Array::from(vec![2, 3]), &Int32Array::from(vec![7, 8])).unwrap(),
    );
    // Values with a null: rows indexing it are null, as are rows whose index is null.
    let values: ArrayRef = Arc::new(StringArray::from(vec![Some("red"), None, Some("blue")]));
    let colours: ArrayRef = Arc::new(
        DictionaryArray::<Int8Type>::try_new(Int8Array::from(vec![Some(0), Some(1), None]), values)
            .unwrap(),
    );
    let skipped: DictionaryArray<Int32Type> = vec!["u", "v", "u"].into_iter().collect();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("utf8", Arc::new(StringArray::from(vec!["a", "bb", "ccc"]))),
        ("first", Arc::new(Int16Array::from(vec![1, 2, 3]))),
        (
            "large",
            Arc::new(LargeStringArray::from(vec!["x", "y", "z"])),
        ),
        (
            "view",
            Arc::new(StringViewArray::from(vec![
                "short",
                "a string past twelve bytes",
                "z",
            ])),
        ),
        (
            "bytes",
            Arc::new(BinaryViewArray::from(vec![
                &b"0123456789abcdef"[..],
                b"",
                b"q",
            ])),
        ),
        ("lists", Arc::new(lists.finish())),
        ("structs", structs),
        ("sparse", union(false)),
        ("dense", union(true)),
        ("runs", run_ends),
        ("skipped", Arc::new(skipped)),
        ("nulls", Arc::new(NullArray::new(3))),
        ("decimal", Arc::new(Decimal128Array::from(vec![1, 2, 3]))),
        (
            "time",
            Arc::new(TimestampMillisecondArray::from(vec![1, 2, 3])),
        ),
        (
            "fixed",
            Arc::new(
                FixedSizeBinaryArray::try_from_iter([b"ab", b"cd", b"ef"].into_iter()).unwrap(),
            ),
        ),
        ("colours", colours),
        (
            "last",
            Arc::new(Float32Array::from(vec![Some(0.5), None, Some(2.5)])),
        ),
    ];
    let schema = Arc::new(Schema::new(
        (columns.iter())
            .map(|(name, a)| Field::new(*name, a.data_type().clone(), true))
            .collect::<Vec<_>>(),
    ));
    let batch =
        RecordBatch::try_new(schema, columns.into_iter().map(|(_, a)| a).collect()).unwrap();
    let wanted = ReadOptions {
        columns: Some(vec!["last".into(), "colours".into(), "first".into()]),
        ..Default::default()
    };
    for bytes in [
        stream_of(&[batch.clone(), batch.clone()]),
        file_of(std::slice::from_ref(&batch)),
    ] {
        let table = read_ipc(&bytes, &wanted).unwrap();
        let names: Vec<_> = table.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["last", "colours", "first"]);
        assert_eq!(table.fields[1].arrow_type, "Dictionary(Int8, Utf8)");
        // The null value is no value of the kept dictionary: rows pointing at it are null.
        assert_eq!(
            table.fields[1].dictionary.as_deref(),
            Some(&Dictionary::Text(vec!["red".into(), "blue".into()]))
        );
        for columns in &table.batches {
            assert_eq!(columns[0].data.data, ColumnData::F32(vec![0.5, 0.0, 2.5]));
            let flags = |c: &gputable::ipc::IpcColumn| c.validity.as_ref().map(|v| v.data.clone());
            assert_eq!(flags(&columns[0]), Some(ColumnData::U8(vec![1, 0, 1])));
            assert_eq!(columns[1].data.data, ColumnData::U32(vec![0, 0, 0]));
            assert_eq!(flags(&columns[1]), Some(ColumnData::U8(vec![1, 0, 0])));
            assert_eq!(columns[2].data.data, ColumnData::I16(vec![1, 2, 3]));
            assert_eq!(flags(&columns[2]), None);
        }
        let only = |name: &str| ReadOptions {
            columns: Some(vec![name.into()]),
            ..Default::default()
        };
        let error = read_ipc(&bytes, &only("time")).unwrap_err();
        assert!(
            error.message.contains("Timestamp(Millisecond)"),
            "{}",
            error.message
        );
        let error = read_ipc(&bytes, &only("lists")).unwrap_err();
        assert!(error.message.contains("List(Utf8)"), "{}", error.message);
        // Reading every column names the first unsupported one.
        let error = read_ipc(&bytes, &ReadOptions::default()).unwrap_err();
        assert_eq!(error.code, ErrorCode::TypeMismatch);
        assert!(error.message.contains("'view'"), "{}", error.message);
        // Utf8 and LargeUtf8 as codes into their distinct strings, the same in each batch.
        let text = read_ipc(&bytes, &only("utf8")).unwrap();
        let large = read_ipc(&bytes, &only("large")).unwrap();
        let strings = |s: &[&str]| Some(Dictionary::Text(s.iter().map(|&v| v.into()).collect()));
        assert_eq!(
            text.fields[0].dictionary.as_deref().cloned(),
            strings(&["a", "bb", "ccc"])
        );
        assert_eq!(
            large.fields[0].dictionary.as_deref().cloned(),
            strings(&["x", "y", "z"])
        );
        for read in [&text, &large] {
            assert_eq!(read.fields[0].dtype, gputable::DType::U32);
            for columns in &read.batches {
                assert_eq!(columns[0].data.data, ColumnData::U32(vec![0, 1, 2]));
            }
        }
    }

    // An index outside its dictionary (arrow-rs writes it unchecked) is INVALID_IPC.
    let outside: ArrayRef = Arc::new(unsafe {
        DictionaryArray::<Int32Type>::new_unchecked(
            Int32Array::from(vec![0, 5]),
            Arc::new(StringArray::from(vec!["only"])),
        )
    });
    let error = read_ipc(&single("bad", outside), &ReadOptions::default()).unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidIpc, "{}", error.message);
}

/// The messages of an IPC stream, as byte ranges, and their header types.
fn messages_of(stream: &[u8]) -> Vec<(std::ops::Range<usize>, arrow_ipc::MessageHeader)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 8 <= stream.len() {
        let length = u32::from_le_bytes(stream[at + 4..at + 8].try_into().unwrap()) as usize;
        if length == 0 {
            break;
        }
        let message = arrow_ipc::root_as_message(&stream[at + 8..at + 8 + length]).unwrap();
        let end = at + 8 + length + message.bodyLength() as usize;
        out.push((at..end, message.header_type()));
        at = end;
    }
    out
}

/// A dictionary of Null values (a body of no bytes for three values) makes every row null;
/// a dictionary column whose dictionary never came reads while its indices are all null, as
/// arrow-rs reads it, and any other index is INVALID_IPC.
#[test]
fn null_dictionaries_and_missing_dictionaries() {
    use arrow_array::types::Int8Type;
    use arrow_array::NullArray;
    let nulls: ArrayRef = Arc::new(
        DictionaryArray::<Int8Type>::try_new(
            Int8Array::from(vec![Some(0), None, Some(2), Some(1)]),
            Arc::new(NullArray::new(3)),
        )
        .unwrap(),
    );
    let table = read_ipc(&single("n", nulls), &ReadOptions::default()).unwrap();
    let column = &table.batches[0][0];
    assert_eq!(column.data.data, ColumnData::I8(vec![0, 0, 0, 0]));
    assert_eq!(
        column.validity.as_ref().unwrap().data,
        ColumnData::U8(vec![0, 0, 0, 0])
    );
    assert_eq!(table.fields[0].arrow_type, "Dictionary(Int8, Null)");

    let without_dictionary = |keys: Vec<Option<i32>>| {
        let column: DictionaryArray<Int32Type> = DictionaryArray::try_new(
            Int32Array::from(keys),
            Arc::new(StringArray::from(vec!["a"])),
        )
        .unwrap();
        let stream = single("c", Arc::new(column));
        let mut kept = Vec::new();
        for (range, header) in messages_of(&stream) {
            if header != arrow_ipc::MessageHeader::DictionaryBatch {
                kept.extend_from_slice(&stream[range]);
            }
        }
        assert!(
            kept.len() < stream.len(),
            "the dictionary batch was taken out"
        );
        read_ipc(&kept, &ReadOptions::default())
    };
    let table = without_dictionary(vec![None, None]).unwrap();
    assert_eq!(
        table.batches[0][0].validity.as_ref().unwrap().data,
        ColumnData::U8(vec![0, 0])
    );
    let error = without_dictionary(vec![None, Some(0)]).unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidIpc, "{}", error.message);
}

/// Date32 and Time32 load as sint32 (their days, seconds or milliseconds); Timestamp, Date64,
/// Time64 and Duration follow the `int64` option like Int64 (refused without one).
#[test]
fn temporal_columns_load_as_the_integers_they_store() {
    use arrow_array::{
        Date32Array, Date64Array, DurationSecondArray, Time32MillisecondArray, Time32SecondArray,
        Time64MicrosecondArray, TimestampMillisecondArray,
    };
    let narrow: Vec<(&str, ArrayRef)> = vec![
        (
            "day",
            Arc::new(Date32Array::from(vec![Some(19000), None, Some(-3)])),
        ),
        (
            "second",
            Arc::new(Time32SecondArray::from(vec![0, 86399, 60])),
        ),
        (
            "milli",
            Arc::new(Time32MillisecondArray::from(vec![5, 6, 7])),
        ),
    ];
    let wide: Vec<(&str, ArrayRef)> = vec![
        (
            "date64",
            Arc::new(Date64Array::from(vec![86_400_000, 0, -86_400_000])),
        ),
        (
            "time64",
            Arc::new(Time64MicrosecondArray::from(vec![1, 2, 3])),
        ),
        (
            "at",
            Arc::new(
                TimestampMillisecondArray::from(vec![Some(1_000), None, Some(-5)])
                    .with_timezone("+01:00"),
            ),
        ),
        (
            "took",
            Arc::new(DurationSecondArray::from(vec![30, 60, 90])),
        ),
        (
            "big",
            Arc::new(Int64Array::from(vec![i32::MIN.into(), 7, i32::MAX.into()])),
        ),
        (
            "count",
            Arc::new(UInt64Array::from(vec![0, 1, u32::MAX.into()])),
        ),
    ];
    let batch_of = |columns: &[(&str, ArrayRef)]| {
        let schema = Arc::new(Schema::new(
            (columns.iter())
                .map(|(name, a)| Field::new(*name, a.data_type().clone(), true))
                .collect::<Vec<_>>(),
        ));
        RecordBatch::try_new(schema, columns.iter().map(|(_, a)| a.clone()).collect()).unwrap()
    };
    let table = read_ipc(&stream_of(&[batch_of(&narrow)]), &ReadOptions::default()).unwrap();
    let columns = &table.batches[0];
    assert_eq!(columns[0].data.data, ColumnData::I32(vec![19000, 0, -3]));
    assert_eq!(
        columns[0].validity.as_ref().map(|v| v.data.clone()),
        Some(ColumnData::U8(vec![1, 0, 1]))
    );
    assert_eq!(columns[1].data.data, ColumnData::I32(vec![0, 86399, 60]));
    assert_eq!(columns[2].data.data, ColumnData::I32(vec![5, 6, 7]));
    assert_eq!(table.fields[0].arrow_type, "Date32");
    // Written back as the types they were loaded from, values and nulls the same.
    let narrow_batch = batch_of(&narrow);
    let back = round_trip(&stream_of(std::slice::from_ref(&narrow_batch)));
    for (written, loaded) in back[0].columns().iter().zip(narrow_batch.columns()) {
        assert_eq!(written.data_type(), loaded.data_type());
        assert_eq!(written.to_data(), loaded.to_data());
    }

    let bytes = stream_of(&[batch_of(&wide)]);
    let error = read_ipc(&bytes, &ReadOptions::default()).unwrap_err();
    assert_eq!(error.code, ErrorCode::TypeMismatch);
    assert!(error.message.contains("Date64"), "{}", error.message);
    let as_int32 = ReadOptions {
        int64: Int64As::Int32,
        ..Default::default()
    };
    let columns = &read_ipc(&bytes, &as_int32).unwrap().batches[0];
    assert_eq!(
        columns[0].data.data,
        ColumnData::I32(vec![86_400_000, 0, -86_400_000])
    );
    assert_eq!(columns[1].data.data, ColumnData::I32(vec![1, 2, 3]));
    assert_eq!(columns[2].data.data, ColumnData::I32(vec![1_000, 0, -5]));
    assert_eq!(columns[3].data.data, ColumnData::I32(vec![30, 60, 90]));
    let as_float32 = ReadOptions {
        int64: Int64As::Float32,
        ..Default::default()
    };
    let columns = &read_ipc(&bytes, &as_float32).unwrap().batches[0];
    assert_eq!(
        columns[2].data.data,
        ColumnData::F32(vec![1_000.0, 0.0, -5.0])
    );

    // Written back as the types they were loaded from: exactly from int32; temporal values
    // rounded from float32, whose Int64 and UInt64 stay Float32 (as Float64 does).
    let wide_batch = batch_of(&wide);
    for options in [&as_int32, &as_float32] {
        let back = read_back(&write_table(&read_ipc(&bytes, options).unwrap()));
        for (written, loaded) in back[0].columns().iter().zip(wide_batch.columns()) {
            if options.int64 == Int64As::Float32 && loaded.data_type().is_integer() {
                assert_eq!(written.data_type(), &arrow_schema::DataType::Float32);
                continue;
            }
            assert_eq!(written.data_type(), loaded.data_type());
            assert!(same_values(written, loaded), "{written:?} {loaded:?}");
        }
    }
    // A float32 value no int64 holds is written null.
    let seconds = gputable::column::Column::new(
        ColumnData::F32(vec![1.5, f32::NAN, f32::INFINITY, -2.5, 1e30]),
        1,
    )
    .unwrap();
    let column = WriteColumn {
        name: "at",
        kind: SourceKind::Plain,
        batches: vec![(&seconds, None)],
        dictionary: None,
        shape: None,
        loaded_as: Some("Timestamp(Second)"),
        metadata: &[],
        nullable: false,
    };
    let back = read_back(&write_ipc(&[column], &[]).unwrap());
    let expected =
        arrow_array::TimestampSecondArray::from(vec![Some(2), None, None, Some(-3), None]);
    assert!(back[0].schema().field(0).is_nullable());
    assert!(same_values(back[0].column(0), &expected));
}

/// Each row of a string or dictionary-of-strings column as arrow-rs reads it.
fn strings_of(array: &dyn Array) -> Vec<Option<String>> {
    use arrow_array::cast::AsArray;
    use arrow_schema::DataType;
    match array.data_type() {
        DataType::Utf8 => (array.as_string::<i32>().iter())
            .map(|v| v.map(String::from))
            .collect(),
        DataType::LargeUtf8 => (array.as_string::<i64>().iter())
            .map(|v| v.map(String::from))
            .collect(),
        DataType::Dictionary(..) => {
            let dictionary = array.as_any_dictionary();
            let values = strings_of(dictionary.values().as_ref());
            let keys = dictionary.normalized_keys();
            (0..array.len())
                .map(|i| match array.is_valid(i) {
                    true => values[keys[i]].clone(),
                    false => None,
                })
                .collect()
        }
        other => panic!("not strings: {other}"),
    }
}

/// Text columns (api.md "Tables"): Utf8 and LargeUtf8 load as uint32 codes into their
/// distinct strings in order of first appearance across batches (empty strings are values,
/// nulls are null rows), and dictionary columns keep their values deduplicated across
/// replaced and extended dictionaries; written back, arrow-rs reads the same strings per row
/// from a dictionary column.
#[test]
fn text_and_dictionary_columns_keep_their_values_through_a_round_trip() {
    use arrow_array::LargeStringArray;
    let rows = |k: usize| -> Vec<Option<&str>> {
        match k {
            0 => vec![Some("b"), None, Some(""), Some("b"), Some("é")],
            _ => vec![Some("a"), Some(""), None, Some("b")],
        }
    };
    let text = |k| -> ArrayRef { Arc::new(StringArray::from(rows(k))) };
    let large = |k| -> ArrayRef { Arc::new(LargeStringArray::from(rows(k))) };
    // A dictionary with a repeated value, replaced by another in the second batch.
    let coded = |k: usize| -> ArrayRef {
        let (values, keys) = match k {
            0 => (
                vec!["x", "y", "x"],
                vec![Some(2), Some(1), None, Some(0), Some(1)],
            ),
            _ => (vec!["z", "x"], vec![Some(0), Some(1), Some(1), None]),
        };
        let values: ArrayRef = Arc::new(StringArray::from(values));
        Arc::new(DictionaryArray::<Int32Type>::try_new(Int32Array::from(keys), values).unwrap())
    };
    let numbers = |k: usize| -> ArrayRef {
        let values: ArrayRef = Arc::new(Int16Array::from(vec![-7, 300]));
        let keys = Int8Array::from(vec![(k % 2) as i8; 4 + (k == 0) as usize]);
        Arc::new(DictionaryArray::<arrow_array::types::Int8Type>::try_new(keys, values).unwrap())
    };
    let batch = |k| {
        let columns = vec![
            ("text", text(k)),
            ("large", large(k)),
            ("coded", coded(k)),
            ("numbers", numbers(k)),
        ];
        RecordBatch::try_from_iter(columns).unwrap()
    };
    let batches = [batch(0), batch(1)];
    let schema = batches[0].schema();
    let options = arrow_ipc::writer::IpcWriteOptions::default();
    let mut writer =
        arrow_ipc::writer::StreamWriter::try_new_with_options(Vec::new(), &schema, options)
            .unwrap();
    for b in &batches {
        writer.write(b).unwrap();
    }
    writer.finish().unwrap();
    let bytes = writer.into_inner().unwrap();

    let table = read_ipc(&bytes, &ReadOptions::default()).unwrap();
    let strings = |s: &[&str]| Some(Dictionary::Text(s.iter().map(|&v| v.into()).collect()));
    let dictionary = |i: usize| table.fields[i].dictionary.as_deref().cloned();
    assert_eq!(
        dictionary(0),
        strings(&["b", "", "é", "a"]),
        "first appearance"
    );
    assert_eq!(dictionary(1), dictionary(0));
    assert_eq!(
        dictionary(2),
        strings(&["x", "y", "z"]),
        "deduplicated, then extended"
    );
    assert_eq!(
        dictionary(3),
        Some(Dictionary::Numbers(
            vec![-7.0, 300.0],
            gputable::ipc::Scalar::I16
        ))
    );
    assert_eq!(table.fields[0].kind, SourceKind::DictionaryIndices);
    assert_eq!(
        table.fields[2].dtype,
        gputable::DType::U32,
        "kept values take uint32 codes"
    );
    let codes = |b: usize, c: usize| table.batches[b][c].data.data.clone();
    assert_eq!(codes(0, 0), ColumnData::U32(vec![0, 0, 1, 0, 2]));
    assert_eq!(codes(1, 0), ColumnData::U32(vec![3, 1, 0, 0]));
    assert_eq!(codes(0, 2), ColumnData::U32(vec![0, 1, 0, 0, 1]));
    assert_eq!(codes(1, 2), ColumnData::U32(vec![2, 0, 0, 0]));

    let back = round_trip(&bytes);
    for (b, batch) in back.iter().enumerate() {
        for c in 0..3 {
            let wanted = strings_of(batches[b].column(c).as_ref());
            assert_eq!(
                strings_of(batch.column(c).as_ref()),
                wanted,
                "batch {b} column {c}"
            );
        }
        // Written back with the Int8 indices it was loaded with (its codes fit them).
        let numbers = batch.column(3);
        assert_eq!(
            numbers.data_type(),
            &arrow_schema::DataType::Dictionary(
                Box::new(arrow_schema::DataType::Int8),
                Box::new(arrow_schema::DataType::Int16)
            )
        );
        let original = batches[b].column(3);
        use arrow_array::cast::AsArray;
        let values = |a: &ArrayRef| {
            let d = a.as_any_dictionary();
            let v = d
                .values()
                .as_primitive::<arrow_array::types::Int16Type>()
                .clone();
            d.normalized_keys()
                .into_iter()
                .map(|k| v.value(k))
                .collect::<Vec<_>>()
        };
        assert_eq!(values(numbers), values(original));
    }

    // A code outside its dictionary is refused on the way out.
    let codes = gputable::column::Column::new(ColumnData::U32(vec![0, 2]), 1).unwrap();
    let two = Dictionary::Text(vec!["p".into(), "q".into()]);
    let column = WriteColumn {
        name: "t",
        kind: SourceKind::DictionaryIndices,
        batches: vec![(&codes, None)],
        dictionary: Some(&two),
        shape: None,
        loaded_as: None,
        metadata: &[],
        nullable: false,
    };
    let error = write_ipc(&[column], &[]).unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidArgument, "{}", error.message);
    assert!(error.message.contains("'t'"), "{}", error.message);
}

/// Custom metadata of the schema and of each field is read (a field's beside our
/// `arrowType` and `kind`) and written back; it was dropped both ways. A nullable field with
/// no nulls stays nullable.
#[test]
fn schema_and_field_metadata_survive_a_round_trip() {
    use std::collections::HashMap;
    let pairs = |list: &[(&str, &str)]| -> HashMap<String, String> {
        (list.iter())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let fields = vec![
        Field::new("a", arrow_schema::DataType::Int32, true)
            .with_metadata(pairs(&[("unit", "km"), ("empty", "")])),
        Field::new("b", arrow_schema::DataType::Float32, false),
        Field::new("c", arrow_schema::DataType::Int32, true),
    ];
    let schema = Schema::new(fields).with_metadata(pairs(&[("source", "trips"), ("v", "2")]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(vec![Some(1), None, Some(3)])),
        Arc::new(Float32Array::from(vec![0.5, 1.5, 2.5])),
        Arc::new(Int32Array::from(vec![7, 8, 9])),
    ];
    let batch = RecordBatch::try_new(Arc::new(schema.clone()), columns).unwrap();
    let table = read_ipc(&stream_of(&[batch]), &ReadOptions::default()).unwrap();
    let mut read: Vec<_> = table.metadata.clone();
    read.sort();
    let expected = [("source", "trips"), ("v", "2")].map(|(k, v)| (k.to_string(), v.to_string()));
    assert_eq!(read, expected);
    let mut first = table.fields[0].metadata.clone();
    first.sort();
    let expected = [("empty", ""), ("unit", "km")].map(|(k, v)| (k.to_string(), v.to_string()));
    assert_eq!(first, expected);
    assert!(table.fields[1].metadata.is_empty());
    let back = read_back(&write_table(&table));
    let written = back[0].schema();
    assert_eq!(written.metadata(), schema.metadata());
    assert_eq!(written.field(0).metadata(), schema.field(0).metadata());
    assert!(written.field(1).metadata().is_empty());
    let nullable: Vec<bool> = written.fields().iter().map(|f| f.is_nullable()).collect();
    assert_eq!(nullable, [true, false, true]);
}
