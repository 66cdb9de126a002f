//! Float32 arrays from a NumPy `.npz` file (a zip of `.npy` files), in the
//! archive's order, bounded in size.

use super::MakeError;
use std::io::Read;
use std::path::Path;

/// The most bytes read, all arrays together.
pub const MAX_ARRAY_BYTES: u64 = 1 << 30;

/// One array: its name (the member name without `.npy`), shape and values.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    /// The name NumPy saved it under.
    pub name: String,
    /// Its extents, C order.
    pub shape: Vec<u64>,
    /// Its values, C order.
    pub values: Vec<f32>,
}

/// Every array of the `.npz` at `path`; each must be float32 in C order.
pub fn read_f32_arrays(path: &Path) -> Result<Vec<Array>, MakeError> {
    let fail = |reason: String| MakeError::Invalid(format!("{}: {reason}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| fail(format!("not a zip: {e}")))?;
    let mut arrays = Vec::with_capacity(archive.len());
    let mut left = MAX_ARRAY_BYTES;
    for index in 0..archive.len() {
        let member = archive
            .by_index(index)
            .map_err(|e| fail(format!("member {index}: {e}")))?;
        let member_name = member
            .name()
            .map_err(|e| fail(format!("member {index}: {e}")))?
            .to_string();
        let name = member_name
            .strip_suffix(".npy")
            .ok_or_else(|| fail(format!("{member_name} is not a .npy member")))?
            .to_string();
        let stored = member.size();
        let npy = npyz::NpyFile::new(member.take(left + 4096))
            .map_err(|e| fail(format!("{member_name}: {e}")))?;
        let shape = npy.shape().to_vec();
        if npy.order() != npyz::Order::C {
            return Err(fail(format!("{member_name} is in Fortran order")));
        }
        let bytes = shape
            .iter()
            .try_fold(4u64, |acc, &d| acc.checked_mul(d))
            .filter(|&b| b <= left && b <= stored)
            .ok_or_else(|| {
                fail(format!(
                    "{member_name} of shape {shape:?} is larger than its {stored} bytes or what is left of the {MAX_ARRAY_BYTES}-byte limit"
                ))
            })?;
        left -= bytes;
        let values: Vec<f32> = npy
            .into_vec()
            .map_err(|e| fail(format!("{member_name}: not float32 ({e})")))?;
        debug_assert_eq!(values.len() as u64 * 4, bytes);
        arrays.push(Array {
            name,
            shape,
            values,
        });
    }
    Ok(arrays)
}
