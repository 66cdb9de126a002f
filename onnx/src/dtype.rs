//! The mapping between the document's dtype names and ONNX element types.

use crate::proto::onnx::tensor_proto::DataType;

/// The ONNX element type of a document dtype name (aliases included).
pub fn elem_type(dtype: &str) -> Option<DataType> {
    Some(match dtype {
        "float32" | "fp32" => DataType::FLOAT,
        "float16" | "fp16" => DataType::FLOAT16,
        "bfloat16" | "bf16" => DataType::BFLOAT16,
        "float64" => DataType::DOUBLE,
        "float8_e4m3fn" | "fp8_e4m3fn" => DataType::FLOAT8E4M3FN,
        "float8_e5m2" | "fp8_e5m2" => DataType::FLOAT8E5M2,
        "int8" => DataType::INT8,
        "int16" => DataType::INT16,
        "int32" => DataType::INT32,
        "int64" => DataType::INT64,
        "uint8" => DataType::UINT8,
        "uint16" => DataType::UINT16,
        "uint32" => DataType::UINT32,
        "uint64" => DataType::UINT64,
        "bool" => DataType::BOOL,
        "string" => DataType::STRING,
        _ => return None,
    })
}

/// The document's name for an ONNX element type number, or `elem:N` for
/// one the document has no name for.
pub fn dtype_name(elem: i32) -> String {
    let name = match <DataType as protobuf::Enum>::from_i32(elem) {
        Some(DataType::FLOAT) => "float32",
        Some(DataType::FLOAT16) => "float16",
        Some(DataType::BFLOAT16) => "bfloat16",
        Some(DataType::DOUBLE) => "float64",
        Some(DataType::FLOAT8E4M3FN) => "float8_e4m3fn",
        Some(DataType::FLOAT8E5M2) => "float8_e5m2",
        Some(DataType::INT8) => "int8",
        Some(DataType::INT16) => "int16",
        Some(DataType::INT32) => "int32",
        Some(DataType::INT64) => "int64",
        Some(DataType::UINT8) => "uint8",
        Some(DataType::UINT16) => "uint16",
        Some(DataType::UINT32) => "uint32",
        Some(DataType::UINT64) => "uint64",
        Some(DataType::BOOL) => "bool",
        Some(DataType::STRING) => "string",
        _ => return format!("elem:{elem}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_element_types_agree() {
        for name in [
            "float32", "float16", "bfloat16", "int64", "int32", "uint8", "bool",
        ] {
            let elem = elem_type(name).expect("known dtype") as i32;
            assert_eq!(dtype_name(elem), name);
        }
        assert_eq!(elem_type("fp16"), Some(DataType::FLOAT16));
        assert_eq!(elem_type("complex64"), None);
        assert_eq!(dtype_name(999), "elem:999");
    }
}
