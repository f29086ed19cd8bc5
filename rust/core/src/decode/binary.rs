//! The values of a binary Arrow array, whatever its offset width: the one
//! check of "this column holds bytes" for every array-taking entry point.

use arrow_array::cast::AsArray;
use arrow_array::Array;
use arrow_schema::DataType;

use crate::error::{EntryError, Result};

/// Every value of a `binary`, `large_binary` or `binary_view` array (`None`
/// for a null), or an input-schema error naming `what`.
pub fn binary_values<'a>(array: &'a dyn Array, what: &str) -> Result<Vec<Option<&'a [u8]>>> {
    Ok(match array.data_type() {
        DataType::Binary => array.as_binary::<i32>().iter().collect(),
        DataType::LargeBinary => array.as_binary::<i64>().iter().collect(),
        DataType::BinaryView => array.as_binary_view().iter().collect(),
        other => {
            return Err(EntryError::Schema(format!(
                "{what} must be binary or large_binary, not {other}"
            )))
        }
    })
}

/// The one value of a one-element binary array (an object's bytes).
pub fn single_value<'a>(array: &'a dyn Array, what: &str) -> Result<&'a [u8]> {
    match binary_values(array, what)?.as_slice() {
        [Some(v)] => Ok(v),
        _ => Err(EntryError::Schema(format!(
            "{what} must be one non-null binary value, got {} values",
            array.len()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use arrow_array::{BinaryArray, BinaryViewArray, Int32Array, LargeBinaryArray};

    #[test]
    fn every_binary_width_and_the_rest_rejected() {
        let data = vec![Some(&b"a"[..]), None, Some(b"")];
        let want = data.clone();
        assert_eq!(
            binary_values(&BinaryArray::from(data.clone()), "d").unwrap(),
            want
        );
        assert_eq!(
            binary_values(&LargeBinaryArray::from(data.clone()), "d").unwrap(),
            want
        );
        assert_eq!(
            binary_values(&BinaryViewArray::from(data), "d").unwrap(),
            want
        );
        let e = binary_values(&Int32Array::from(vec![1]), "entry data").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InputSchema);
        assert_eq!(
            e.to_string(),
            "input schema: entry data must be binary or large_binary, not Int32"
        );
    }

    #[test]
    fn single_value_needs_exactly_one_non_null() {
        assert_eq!(
            single_value(&BinaryArray::from(vec![&b"xy"[..]]), "data").unwrap(),
            b"xy"
        );
        for bad in [
            BinaryArray::from(Vec::<Option<&[u8]>>::new()),
            BinaryArray::from(vec![None]),
            BinaryArray::from(vec![Some(&b"a"[..]), Some(b"b")]),
        ] {
            let e = single_value(&bad, "index").unwrap_err();
            assert!(e.to_string().contains("index must be one non-null"), "{e}");
        }
    }
}
