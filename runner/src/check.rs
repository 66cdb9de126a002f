//! Run-time checks of tensors against contracts, with symbolic dimensions
//! unified in a symbol table.

use crate::tensor::{DType, Tensor};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use wfstudio_schema::types::contract::{BatchLayout, Dim, TensorContract};

/// Symbol -> extent, and the symbols that are never bound (they name
/// growing or bounded state axes).
#[derive(Clone, Debug, Default)]
pub struct Symbols {
    /// Bound extents.
    pub bound: HashMap<String, usize>,
    /// Symbols left free (shared by every invocation's table).
    pub dynamic: Arc<HashSet<String>>,
}

impl Symbols {
    /// The extent of `dim`, when fixed or bound.
    pub fn resolve(&self, dim: &Dim) -> Option<usize> {
        match dim {
            Dim::Fixed(n) => Some(*n as usize),
            Dim::Symbol(s) => self.bound.get(s).copied(),
        }
    }
}

/// Checks `tensor` against `contract`, binding symbols as it goes. `skip_axis`
/// exempts one axis (the growth axis of an append). Returns the reason when
/// the tensor does not fit.
pub fn check(
    tensor: &Tensor,
    contract: &TensorContract,
    symbols: &mut Symbols,
    skip_axis: Option<usize>,
) -> Result<(), String> {
    let want = DType::from_contract(&contract.dtype);
    if want != Some(tensor.dtype()) {
        return Err(format!(
            "has dtype {} but the contract says {}",
            tensor.dtype(),
            contract.dtype
        ));
    }
    if tensor.shape.len() as u64 != contract.rank {
        return Err(format!(
            "has rank {} (shape {:?}) but the contract says rank {}",
            tensor.shape.len(),
            tensor.shape,
            contract.rank
        ));
    }
    let Some(shape) = &contract.shape else {
        return Ok(());
    };
    let expanded = match contract.layout() {
        BatchLayout::RequestExpanded(l) => Some((l.axis as usize, l.factor.max(1) as usize)),
        _ => None,
    };
    for (axis, (dim, &extent)) in shape.iter().zip(&tensor.shape).enumerate() {
        if Some(axis) == skip_axis {
            continue;
        }
        match dim {
            Dim::Fixed(n) if *n as usize != extent => {
                return Err(format!(
                    "has extent {extent} on axis {axis} but the contract fixes {n} (shape {:?})",
                    tensor.shape
                ));
            }
            Dim::Fixed(_) => {}
            Dim::Symbol(s) if symbols.dynamic.contains(s) => {}
            Dim::Symbol(s) => {
                let extent = match expanded {
                    Some((a, factor)) if a == axis => {
                        if extent % factor != 0 {
                            return Err(format!(
                                "has extent {extent} on axis {axis}, not a multiple of the expansion factor {factor}"
                            ));
                        }
                        extent / factor
                    }
                    _ => extent,
                };
                match symbols.bound.get(s) {
                    Some(&b) if b != extent => {
                        return Err(format!(
                            "binds symbol '{s}' to {extent} on axis {axis}, but it is already {b}"
                        ));
                    }
                    Some(_) => {}
                    None => {
                        symbols.bound.insert(s.clone(), extent);
                    }
                }
            }
        }
    }
    Ok(())
}
