//! Summary statistics of a tensor, for the value inspector: how many
//! elements are finite, NaN or infinite, the range, mean and standard
//! deviation of the finite ones, a histogram over that range, and the first
//! elements as text.

use crate::tensor::{Data, Tensor};

/// What the value inspector shows about one tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorStats {
    /// Number of elements.
    pub count: usize,
    /// NaN elements.
    pub nan: usize,
    /// +Inf and -Inf elements.
    pub infinite: usize,
    /// Smallest finite element.
    pub min: Option<f64>,
    /// Largest finite element.
    pub max: Option<f64>,
    /// Mean of the finite elements.
    pub mean: Option<f64>,
    /// Population standard deviation of the finite elements.
    pub std: Option<f64>,
    /// Finite elements per equal-width bin from `min` to `max` (the last bin
    /// includes `max`; one bin when every element is equal).
    pub histogram: Vec<usize>,
    /// The first elements, formatted (integers exactly, floats to 6
    /// significant digits, bools as true/false).
    pub first: Vec<String>,
}

impl TensorStats {
    /// Summarises `tensor` with `bins` histogram bins and its first `first`
    /// elements.
    pub fn of(tensor: &Tensor, bins: usize, first: usize) -> TensorStats {
        let data = &tensor.data;
        let count = data.len();
        let (mut nan, mut infinite, mut finite) = (0, 0, 0usize);
        let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
        let (mut sum, mut sum_sq) = (0.0f64, 0.0f64);
        for i in 0..count {
            let x = data.get_f64(i);
            if x.is_nan() {
                nan += 1;
            } else if x.is_infinite() {
                infinite += 1;
            } else {
                finite += 1;
                min = min.min(x);
                max = max.max(x);
                sum += x;
                sum_sq += x * x;
            }
        }
        let (min, max, mean, std) = if finite == 0 {
            (None, None, None, None)
        } else {
            let mean = sum / finite as f64;
            let variance = (sum_sq / finite as f64 - mean * mean).max(0.0);
            (Some(min), Some(max), Some(mean), Some(variance.sqrt()))
        };
        let histogram = match (min, max) {
            (Some(lo), Some(hi)) if bins > 0 => {
                let bins = if hi > lo { bins } else { 1 };
                let mut counts = vec![0usize; bins];
                let width = (hi - lo) / bins as f64;
                for i in 0..count {
                    let x = data.get_f64(i);
                    if x.is_finite() {
                        let bin = if width > 0.0 {
                            (((x - lo) / width) as usize).min(bins - 1)
                        } else {
                            0
                        };
                        counts[bin] += 1;
                    }
                }
                counts
            }
            _ => Vec::new(),
        };
        let first = (0..count.min(first)).map(|i| element(data, i)).collect();
        TensorStats {
            count,
            nan,
            infinite,
            min,
            max,
            mean,
            std,
            histogram,
            first,
        }
    }
}

fn element(data: &Data, i: usize) -> String {
    match data {
        Data::Bool(v) => v[i].to_string(),
        _ => match data.get_i64(i) {
            Some(n) => n.to_string(),
            None => float_text(data.get_f64(i)),
        },
    }
}

/// A float in at most 6 significant digits, scientific when tiny or huge.
fn float_text(x: f64) -> String {
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if x == 0.0 || !x.is_finite() {
        return x.to_string();
    }
    if x.abs() < 1e-4 || x.abs() >= 1e6 {
        let text = format!("{x:.5e}");
        match text.split_once('e') {
            Some((mantissa, exponent)) => format!("{}e{exponent}", trim(mantissa.to_string())),
            None => text,
        }
    } else {
        trim(format!("{x:.6}"))
    }
}

#[cfg(test)]
mod tests {
    use super::TensorStats;
    use crate::tensor::{Data, Tensor};

    #[test]
    fn counts_range_moments_and_bins() {
        let t = Tensor::new(
            vec![2, 3],
            Data::F32(vec![0.0, 1.0, 2.0, 3.0, f32::NAN, f32::INFINITY]),
        )
        .expect("tensor");
        let s = TensorStats::of(&t, 3, 4);
        assert_eq!((s.count, s.nan, s.infinite), (6, 1, 1));
        assert_eq!((s.min, s.max), (Some(0.0), Some(3.0)));
        assert_eq!(s.mean, Some(1.5));
        assert_eq!(s.std, Some(1.25f64.sqrt()));
        assert_eq!(s.histogram, vec![1, 1, 2], "bins [0,1) [1,2) [2,3]");
        assert_eq!(s.first, ["0", "1", "2", "3"]);
    }

    #[test]
    fn integers_bools_constants_and_empty() {
        let ints = Tensor::new(vec![3], Data::I64(vec![7, 7, 7])).expect("tensor");
        let s = TensorStats::of(&ints, 8, 10);
        assert_eq!(s.histogram, vec![3], "equal elements fill one bin");
        assert_eq!((s.std, s.first.clone()), (Some(0.0), vec!["7".into(); 3]));
        let bools = Tensor::new(vec![2], Data::Bool(vec![true, false])).expect("tensor");
        assert_eq!(TensorStats::of(&bools, 2, 2).first, ["true", "false"]);
        let floats = Tensor::new(vec![4], Data::F64(vec![0.125, -2.5e-7, 3.0e9, 1.0 / 3.0]))
            .expect("tensor");
        assert_eq!(
            TensorStats::of(&floats, 2, 4).first,
            ["0.125", "-2.5e-7", "3e9", "0.333333"]
        );
        let empty = Tensor::new(vec![0], Data::F32(Vec::new())).expect("tensor");
        let s = TensorStats::of(&empty, 4, 4);
        assert_eq!((s.count, s.min, s.histogram.len()), (0, None, 0));
    }
}
