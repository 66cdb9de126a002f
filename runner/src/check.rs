//! Run-time checks of tensors against contracts, with symbolic dimensions
//! unified in a symbol table.

use crate::tensor::{DType, Tensor};
use smallvec::SmallVec;
use wfstudio_schema::types::contract::{BatchLayout, Dim, TensorContract};

/// Symbol -> extent, and the symbols that are never bound (they name
/// growing or bounded state axes). Names are borrowed from the contracts
/// (`'a`), and a table holds few symbols, so binding one allocates nothing
/// and a lookup is a short scan: an invoke makes a fresh table per call.
#[derive(Clone, Debug, Default)]
pub struct Symbols<'a> {
    /// Bound extents.
    bound: SmallVec<[(&'a str, usize); 8]>,
    /// Symbols left free (shared by every invocation's table).
    dynamic: &'a [String],
}

impl<'a> Symbols<'a> {
    /// An empty table whose `dynamic` symbols are never bound.
    pub fn new(dynamic: &'a [String]) -> Self {
        Self {
            bound: SmallVec::new(),
            dynamic,
        }
    }

    /// A fresh table with the same free symbols and nothing bound.
    pub fn fresh(&self) -> Self {
        Self::new(self.dynamic)
    }

    /// The extent bound to `symbol`.
    pub fn get(&self, symbol: &str) -> Option<usize> {
        self.bound
            .iter()
            .find(|(name, _)| *name == symbol)
            .map(|(_, extent)| *extent)
    }

    /// The extent of `dim`, when fixed or bound.
    pub fn resolve(&self, dim: &Dim) -> Option<usize> {
        match dim {
            Dim::Fixed(n) => Some(*n as usize),
            Dim::Symbol(s) => self.get(s),
        }
    }

    fn is_dynamic(&self, symbol: &str) -> bool {
        self.dynamic.iter().any(|d| d == symbol)
    }
}

/// Checks `tensor` against `contract`, binding symbols as it goes. `skip_axis`
/// exempts one axis (the growth axis of an append). Returns the reason when
/// the tensor does not fit.
pub fn check<'a>(
    tensor: &Tensor,
    contract: &'a TensorContract,
    symbols: &mut Symbols<'a>,
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
    let expanded = match &contract.batch_layout {
        Some(BatchLayout::RequestExpanded(l)) => Some((l.axis as usize, l.factor.max(1) as usize)),
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
            Dim::Symbol(s) if symbols.is_dynamic(s) => {}
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
                match symbols.get(s) {
                    Some(b) if b != extent => {
                        return Err(format!(
                            "binds symbol '{s}' to {extent} on axis {axis}, but it is already {b}"
                        ));
                    }
                    Some(_) => {}
                    None => symbols.bound.push((s.as_str(), extent)),
                }
            }
        }
    }
    Ok(())
}
