//! Means and 95% confidence intervals over seeds (Student's t), as every report gives them.

/// Two-sided 97.5% quantiles of Student's t for 1..=30 degrees of freedom.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// Mean of `v` (NaN when empty).
pub fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// (mean, lower, upper) of the 95% confidence interval of the mean; a single value has a
/// zero-width interval.
pub fn ci95(v: &[f64]) -> (f64, f64, f64) {
    let m = mean(v);
    let n = v.len();
    if n < 2 {
        return (m, m, m);
    }
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64;
    let t = if n - 1 <= 30 { T975[n - 2] } else { 1.96 };
    let h = t * (var / n as f64).sqrt();
    (m, m - h, m + h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_by_hand() {
        // 1, 2, 3: mean 2, s = 1, t(2) = 4.303, half-width 4.303 / sqrt(3) = 2.4843.
        let (m, lo, hi) = ci95(&[1.0, 2.0, 3.0]);
        assert_eq!(m, 2.0);
        assert!((hi - m - 2.484_3).abs() < 1e-4 && (m - lo - 2.484_3).abs() < 1e-4);
        assert_eq!(ci95(&[5.0]), (5.0, 5.0, 5.0));
        assert!(mean(&[]).is_nan());
    }
}
