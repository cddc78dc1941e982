//! The part of arrow-select that arrow-ipc uses: `concat::concat`.

pub mod concat {
    use arrow_array::{make_array, Array, ArrayRef};
    use arrow_data::transform::MutableArrayData;
    use arrow_schema::ArrowError;

    /// The arrays one after another, as one array of their common type.
    pub fn concat(arrays: &[&dyn Array]) -> Result<ArrayRef, ArrowError> {
        let Some(first) = arrays.first() else {
            return Err(ArrowError::ComputeError(
                "concat requires input of at least one array".to_string(),
            ));
        };
        let data_type = first.data_type();
        if let Some(other) = arrays.iter().find(|a| a.data_type() != data_type) {
            return Err(ArrowError::InvalidArgumentError(format!(
                "It is not possible to concatenate arrays of different data types ({data_type}, {})",
                other.data_type()
            )));
        }
        let data: Vec<_> = arrays.iter().map(|a| a.to_data()).collect();
        let capacity = arrays.iter().map(|a| a.len()).sum();
        // Fallible: joining dictionaries of dictionaries may overflow their key type.
        let mut joined = MutableArrayData::try_new(data.iter().collect(), false, capacity)?;
        for (i, array) in arrays.iter().enumerate() {
            joined.try_extend(i, 0, array.len())?;
        }
        Ok(make_array(joined.freeze()))
    }
}
