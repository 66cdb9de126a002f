//! Run-time checks of tensors against contracts, with symbolic dimensions
//! unified in a symbol table.

use crate::tensor::{DType, Described};
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

    /// Binds `symbol` to `extent` (known not to be bound yet).
    pub(crate) fn bind(&mut self, symbol: &'a str, extent: usize) {
        self.bound.push((symbol, extent));
    }

    fn is_dynamic(&self, symbol: &str) -> bool {
        self.dynamic.iter().any(|d| d == symbol)
    }
}

/// The request axis and its rows per request, for a request-expanded
/// layout (where a symbol counts requests, not rows).
fn expansion(contract: &TensorContract) -> Option<(usize, usize)> {
    match &contract.batch_layout {
        Some(BatchLayout::RequestExpanded(l)) => Some((l.axis as usize, l.factor.max(1) as usize)),
        _ => None,
    }
}

/// Checks `tensor` against `contract`, binding symbols as it goes. `skip_axis`
/// exempts one axis (the growth axis of an append). Returns the reason when
/// the tensor does not fit.
pub fn check<'a>(
    tensor: &impl Described,
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
    if tensor.shape().len() as u64 != contract.rank {
        return Err(format!(
            "has rank {} (shape {:?}) but the contract says rank {}",
            tensor.shape().len(),
            tensor.shape(),
            contract.rank
        ));
    }
    let Some(shape) = &contract.shape else {
        return Ok(());
    };
    let expanded = expansion(contract);
    for (axis, (dim, &extent)) in shape.iter().zip(tensor.shape()).enumerate() {
        if Some(axis) == skip_axis {
            continue;
        }
        match dim {
            Dim::Fixed(n) if *n as usize != extent => {
                return Err(format!(
                    "has extent {extent} on axis {axis} but the contract fixes {n} (shape {:?})",
                    tensor.shape()
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

/// Extents bound during one call, by symbol number (see [`Compiled`]);
/// [`UNBOUND`] where a symbol is not bound yet.
pub(crate) type Bound = [usize];

/// The extent of a symbol not bound yet.
pub(crate) const UNBOUND: usize = usize::MAX;

/// One axis of a [`Compiled`] contract.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Axis {
    Fixed(usize),
    /// A growing or bounded state axis: never bound.
    Free,
    /// A symbol, by its number, and the expansion factor of the axis (1
    /// unless it is the axis of a request-expanded layout).
    Symbol(usize, usize),
}

/// A contract made ready for the checks of every call of an invoke: the
/// dtype read once, symbols numbered instead of compared by name. It
/// accepts exactly the tensors [`check`] accepts with a table that starts
/// fresh each call and leaves no axis out; when it refuses one, [`check`]
/// is asked why, so every message comes from one place.
#[derive(Clone, Debug)]
pub(crate) struct Compiled {
    dtype: Option<DType>,
    rank: u64,
    axes: Option<SmallVec<[Axis; 6]>>,
}

impl Compiled {
    /// Prepares `contract`; symbols in `dynamic` are never bound, the others
    /// are numbered by their place in `numbering` (extended as needed).
    pub(crate) fn new(
        contract: &TensorContract,
        dynamic: &[String],
        numbering: &mut Vec<String>,
    ) -> Self {
        let mut number = |s: &String| {
            numbering.iter().position(|n| n == s).unwrap_or_else(|| {
                numbering.push(s.clone());
                numbering.len() - 1
            })
        };
        let expanded = expansion(contract);
        let axes = contract.shape.as_ref().map(|shape| {
            shape
                .iter()
                .enumerate()
                .map(|(axis, dim)| match dim {
                    Dim::Fixed(n) => Axis::Fixed(*n as usize),
                    Dim::Symbol(s) if dynamic.contains(s) => Axis::Free,
                    Dim::Symbol(s) => {
                        let factor = expanded.filter(|(a, _)| *a == axis).map_or(1, |(_, f)| f);
                        Axis::Symbol(number(s), factor)
                    }
                })
                .collect()
        });
        Self {
            dtype: DType::from_contract(&contract.dtype),
            rank: contract.rank,
            axes,
        }
    }

    /// The numbers of the symbols the contract binds.
    pub(crate) fn symbols(&self) -> impl Iterator<Item = usize> + '_ {
        self.axes.iter().flatten().filter_map(|axis| match axis {
            Axis::Symbol(n, _) => Some(*n),
            _ => None,
        })
    }

    /// Leaves `axis` unchecked (the growth axis of an append).
    pub(crate) fn free_axis(&mut self, axis: usize) {
        if let Some(dim) = self.axes.as_mut().and_then(|axes| axes.get_mut(axis)) {
            *dim = Axis::Free;
        }
    }

    /// Whether `tensor` fits, binding symbols in `bound` (room for every
    /// number the contract uses) as it goes.
    pub(crate) fn fits(&self, tensor: &impl Described, bound: &mut Bound) -> bool {
        if self.dtype != Some(tensor.dtype()) || tensor.shape().len() as u64 != self.rank {
            return false;
        }
        let Some(axes) = &self.axes else {
            return true;
        };
        for (dim, &extent) in axes.iter().zip(tensor.shape()) {
            match *dim {
                Axis::Fixed(n) if n != extent => return false,
                Axis::Fixed(_) | Axis::Free => {}
                Axis::Symbol(s, factor) => {
                    let extent = match factor {
                        1 => extent,
                        _ if extent % factor != 0 => return false,
                        _ => extent / factor,
                    };
                    let Some(slot) = bound.get_mut(s) else {
                        return false;
                    };
                    if *slot == UNBOUND {
                        *slot = extent;
                    } else if *slot != extent {
                        return false;
                    }
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::{Compiled, Symbols, UNBOUND, check};
    use crate::tensor::{DType, Data, Tensor};
    use wfstudio_schema::types::contract::{BatchLayout, Dim, RequestExpanded, TensorContract};

    fn contract(dtype: &str, shape: Vec<Dim>, layout: Option<BatchLayout>) -> TensorContract {
        TensorContract {
            dtype: dtype.into(),
            rank: shape.len() as u64,
            shape: Some(shape),
            optional: None,
            batch_layout: layout,
        }
    }

    fn tensor(dtype: DType, shape: Vec<usize>) -> Tensor {
        let n = shape.iter().product();
        Tensor::new(shape, Data::zeros(dtype, n)).expect("shape")
    }

    /// The compiled check agrees with `check` on a sequence of ports that
    /// share one table, accepted and refused alike.
    #[test]
    fn compiled_check_agrees_with_check() {
        use Dim::{Fixed, Symbol};
        let s = |n: &str| Symbol(n.into());
        let expanded = Some(BatchLayout::RequestExpanded(RequestExpanded {
            axis: 0,
            factor: 2,
        }));
        let contracts = [
            contract("float32", vec![s("batch"), Fixed(3), s("seq")], None),
            contract("int64", vec![s("batch"), s("past")], None),
            contract("float32", vec![s("batch"), s("seq")], expanded),
            contract("fp32", vec![], None),
            contract("bool", vec![Fixed(1)], None),
        ];
        let dynamic = vec!["past".to_string()];
        let tensors = [
            tensor(DType::F32, vec![2, 3, 5]),
            tensor(DType::F32, vec![2, 4, 5]),
            tensor(DType::F32, vec![4, 5]),
            tensor(DType::F32, vec![3, 5]),
            tensor(DType::F32, vec![2, 6]),
            tensor(DType::I64, vec![2, 9]),
            tensor(DType::I64, vec![3, 1]),
            tensor(DType::I64, vec![2]),
            tensor(DType::F32, vec![]),
            tensor(DType::Bool, vec![1]),
            tensor(DType::Bool, vec![2]),
        ];
        let mut numbering = Vec::new();
        let compiled: Vec<Compiled> = contracts
            .iter()
            .map(|c| Compiled::new(c, &dynamic, &mut numbering))
            .collect();
        let mut compared = 0;
        // Every pair of (contract, tensor) checks in a row against one table.
        for (a, first) in tensors.iter().enumerate() {
            for (b, second) in tensors.iter().enumerate() {
                for (i, j) in [(0, 1), (0, 2), (1, 2), (2, 0), (3, 4), (2, 2)] {
                    let mut slow = Symbols::new(&dynamic);
                    let mut bound = vec![UNBOUND; numbering.len()];
                    for (k, t) in [(i, first), (j, second)] {
                        let want = check(t, &contracts[k], &mut slow, None).is_ok();
                        assert_eq!(
                            compiled[k].fits(t, &mut bound),
                            want,
                            "contract {k} on tensor {a}/{b}"
                        );
                        compared += 1;
                        if !want {
                            break;
                        }
                    }
                }
            }
        }
        assert!(compared > 700, "{compared} comparisons");
    }
}
