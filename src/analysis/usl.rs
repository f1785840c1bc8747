//! Least-squares fit of the Universal Scalability Law (Gunther) to (concurrency, IOPS) points,
//! written by hand: a linearised weighted fit for the start, Nelder–Mead for the refinement. Pure
//! arithmetic.
//! Imports only: analysis/.
//!
//! X(N) = λN / (1 + σ(N−1) + κN(N−1)), with λ > 0, 0 ≤ σ ≤ 1, κ ≥ 0.
//!
//! Why relative residuals: IOPS span decades across a sweep (7 k at N=1, 130 k at N=256 in
//! seed 000) and measurement noise is roughly proportional to the throughput, so plain
//! residuals would let the top levels decide everything and leave λ (the single-request
//! throughput) to chance. We minimise Σ((X̂−X)/X)²; R² is reported the usual way, on X.

use super::UslFit;

/// Fitted curve's throughput at concurrency `n`.
pub fn predict(lambda: f64, sigma: f64, kappa: f64, n: f64) -> f64 {
    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

impl UslFit {
    /// The fitted throughput at concurrency `n`.
    pub fn predict(&self, n: f64) -> f64 {
        predict(self.lambda, self.sigma, self.kappa, n)
    }
}

/// Concurrency at which the fitted curve's Kleinrock power X/R = X²/N peaks.
///
/// With D(N) = 1 + σ(N−1) + κN(N−1), power ∝ N/D², whose maximum solves
/// 3κN² + (σ−κ)N − (1−σ) = 0. With κ = 0 it is (1−σ)/σ; with σ = κ = 0 the curve scales
/// linearly for ever and has no optimum (None).
pub fn power_peak(sigma: f64, kappa: f64) -> Option<f64> {
    if sigma >= 1.0 {
        return Some(1.0);
    }
    if kappa > 1e-15 {
        let b = sigma - kappa;
        let disc = b * b + 12.0 * kappa * (1.0 - sigma);
        let n = (-b + disc.sqrt()) / (6.0 * kappa);
        (n.is_finite() && n > 0.0).then_some(n.max(1.0))
    } else if sigma > 1e-12 {
        Some(((1.0 - sigma) / sigma).max(1.0))
    } else {
        None
    }
}

/// Sum of squared relative residuals of the curve at the points.
fn cost(points: &[(f64, f64)], lambda: f64, sigma: f64, kappa: f64) -> f64 {
    points
        .iter()
        .map(|&(n, x)| {
            let r = (predict(lambda, sigma, kappa, n) - x) / x;
            r * r
        })
        .sum()
}

/// Solve the 3×3 system `a·x = b` by Gaussian elimination with partial pivoting.
fn solve3(mut a: [[f64; 3]; 3], mut b: [f64; 3]) -> Option<[f64; 3]> {
    for col in 0..3 {
        let piv = (col..3).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[piv][col].abs() < 1e-300 {
            return None;
        }
        a.swap(col, piv);
        b.swap(col, piv);
        for row in col + 1..3 {
            let f = a[row][col] / a[col][col];
            let pivot_row = a[col];
            for (v, p) in a[row].iter_mut().zip(pivot_row).skip(col) {
                *v -= f * p;
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = [0.0; 3];
    for row in (0..3).rev() {
        let s: f64 = (row + 1..3).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - s) / a[row][row];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// The linearised fit: N/X = a + bN + cN² with a = (1−σ)/λ, b = (σ−κ)/λ, c = κ/λ, solved by
/// weighted linear least squares (weights 1/y², i.e. relative residuals again), concurrency
/// scaled by its maximum for conditioning. Returns (λ, σ, κ) clamped into the valid region.
fn linearised(points: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let n_max = points.iter().map(|p| p.0).fold(1.0, f64::max);
    let mut ata = [[0.0; 3]; 3];
    let mut atb = [0.0; 3];
    for &(n, x) in points {
        let t = n / n_max;
        let y = n / x;
        let w = 1.0 / (y * y);
        let row = [1.0, t, t * t];
        for i in 0..3 {
            for j in 0..3 {
                ata[i][j] += w * row[i] * row[j];
            }
            atb[i] += w * row[i] * y;
        }
    }
    let [a, bt, ct] = solve3(ata, atb)?;
    // Undo the scaling: y = a + (bt/n_max)·N + (ct/n_max²)·N².
    let (b, c) = (bt / n_max, ct / (n_max * n_max));
    let lambda = 1.0 / (a + b + c);
    if !(lambda.is_finite() && lambda > 0.0) {
        return None;
    }
    let sigma = (1.0 - a * lambda).clamp(0.0, 1.0);
    let kappa = (c * lambda).max(0.0);
    Some((lambda, sigma, kappa))
}

/// Nelder–Mead minimisation of `f` from `start` with initial steps `step`.
fn nelder_mead<const D: usize>(
    f: &dyn Fn(&[f64; D]) -> f64,
    start: [f64; D],
    step: [f64; D],
    max_iter: usize,
) -> ([f64; D], f64) {
    let mut simplex: Vec<([f64; D], f64)> = Vec::with_capacity(D + 1);
    simplex.push((start, f(&start)));
    for i in 0..D {
        let mut p = start;
        p[i] += step[i];
        simplex.push((p, f(&p)));
    }
    let centroid = |s: &[([f64; D], f64)]| {
        let mut c = [0.0; D];
        for (p, _) in &s[..D] {
            for i in 0..D {
                c[i] += p[i] / D as f64;
            }
        }
        c
    };
    let along = |c: &[f64; D], p: &[f64; D], t: f64| {
        let mut q = [0.0; D];
        for i in 0..D {
            q[i] = c[i] + t * (p[i] - c[i]);
        }
        q
    };
    for _ in 0..max_iter {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        let (best, worst) = (simplex[0].1, simplex[D].1);
        if (worst - best).abs() <= 1e-16 * (1.0 + best.abs()) {
            break;
        }
        let c = centroid(&simplex);
        let xr = along(&c, &simplex[D].0, -1.0);
        let fr = f(&xr);
        if fr < best {
            let xe = along(&c, &simplex[D].0, -2.0);
            let fe = f(&xe);
            simplex[D] = if fe < fr { (xe, fe) } else { (xr, fr) };
        } else if fr < simplex[D - 1].1 {
            simplex[D] = (xr, fr);
        } else {
            let (xc, fc) = if fr < worst {
                let xc = along(&c, &xr, 0.5);
                (xc, f(&xc))
            } else {
                let xc = along(&c, &simplex[D].0, 0.5);
                (xc, f(&xc))
            };
            if fc < worst.min(fr) {
                simplex[D] = (xc, fc);
            } else {
                let b = simplex[0].0;
                for s in simplex.iter_mut().skip(1) {
                    s.0 = along(&b, &s.0, 0.5);
                    s.1 = f(&s.0);
                }
            }
        }
    }
    simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
    simplex[0]
}

/// Fit the USL to `(concurrency, iops)` points. Needs at least three distinct concurrencies
/// with positive throughput (three parameters); returns None otherwise.
pub fn fit(points: &[(f64, f64)]) -> Option<UslFit> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|&(n, x)| n >= 1.0 && x > 0.0 && n.is_finite() && x.is_finite())
        .collect();
    let mut distinct: Vec<f64> = pts.iter().map(|p| p.0).collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    if distinct.len() < 3 {
        return None;
    }
    let n_max = distinct[distinct.len() - 1];

    let (l0, s0, k0) = linearised(&pts).unwrap_or_else(|| {
        let &(n, x) = pts
            .iter()
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .expect("non-empty");
        (x / n, 0.05, 1e-4)
    });

    // Refine in scaled coordinates: ln λ, σ·N_max, κ·N_max² (all of order 0.1–100 for real
    // curves, so one simplex step size suits them); the constraint σ ∈ [0,1], κ ≥ 0 is kept by
    // clamping inside the objective and once more at the end.
    let unscale = |q: &[f64; 3]| {
        (
            q[0].exp(),
            (q[1] / n_max).clamp(0.0, 1.0),
            (q[2] / (n_max * n_max)).max(0.0),
        )
    };
    let objective = |q: &[f64; 3]| {
        let (l, s, k) = unscale(q);
        cost(&pts, l, s, k)
    };
    let mut q = [l0.ln(), s0 * n_max, k0 * n_max * n_max];
    let mut fq = objective(&q);
    // Restarts with a fresh simplex escape the premature collapse Nelder–Mead is known for.
    for _ in 0..4 {
        let step = [
            0.1,
            (q[1].abs() * 0.2).max(0.05),
            (q[2].abs() * 0.2).max(0.05),
        ];
        let (qn, fqn) = nelder_mead(&objective, q, step, 4000);
        let improved = fqn < fq * (1.0 - 1e-12);
        if fqn <= fq {
            q = qn;
            fq = fqn;
        }
        if !improved {
            break;
        }
    }
    let (lambda, sigma, kappa) = unscale(&q);

    let mean_x = pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64;
    let ss_tot: f64 = pts.iter().map(|p| (p.1 - mean_x).powi(2)).sum();
    let ss_res: f64 = pts
        .iter()
        .map(|&(n, x)| (predict(lambda, sigma, kappa, n) - x).powi(2))
        .sum();
    let r_squared = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        1.0
    };
    // The throughput peak exists only with crosstalk (κ > 0) and σ < 1.
    let peak_concurrency =
        (kappa > 1e-12 && sigma < 1.0).then(|| ((1.0 - sigma) / kappa).sqrt().max(1.0));
    let peak_iops = peak_concurrency.map(|n| predict(lambda, sigma, kappa, n));
    Some(UslFit {
        lambda,
        sigma,
        kappa,
        r_squared,
        peak_concurrency,
        peak_iops,
        power_peak_concurrency: power_peak(sigma, kappa),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(l: f64, s: f64, k: f64, ns: &[f64]) -> Vec<(f64, f64)> {
        ns.iter().map(|&n| (n, predict(l, s, k, n))).collect()
    }

    const LEVELS: [f64; 9] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

    #[test]
    fn recovers_known_parameters() {
        for &(l, s, k) in &[
            (1000.0, 0.05, 0.0005),
            (7100.0, 0.02, 0.00002),
            (250.0, 0.3, 0.0),
            (120.0, 0.0, 0.001),
        ] {
            let f = fit(&curve(l, s, k, &LEVELS)).unwrap();
            assert!((f.lambda / l - 1.0).abs() < 1e-4, "λ {} vs {l}", f.lambda);
            assert!((f.sigma - s).abs() < 1e-5, "σ {} vs {s}", f.sigma);
            assert!((f.kappa - k).abs() < 1e-7, "κ {} vs {k}", f.kappa);
            assert!(f.r_squared > 0.9999, "R² {}", f.r_squared);
        }
    }

    #[test]
    fn recovers_parameters_through_noise() {
        // ±3 % alternating noise: the fit must stay close, not exact.
        let (l, s, k) = (2000.0, 0.04, 0.0003);
        let pts: Vec<(f64, f64)> = curve(l, s, k, &LEVELS)
            .into_iter()
            .enumerate()
            .map(|(i, (n, x))| (n, x * if i % 2 == 0 { 1.03 } else { 0.97 }))
            .collect();
        let f = fit(&pts).unwrap();
        assert!((f.lambda / l - 1.0).abs() < 0.06, "λ {}", f.lambda);
        assert!((f.sigma - s).abs() < 0.02, "σ {}", f.sigma);
        assert!((f.kappa / k - 1.0).abs() < 0.3, "κ {}", f.kappa);
        let peak = f.peak_concurrency.unwrap();
        let true_peak = ((1.0 - s) / k).sqrt();
        assert!(
            (peak / true_peak - 1.0).abs() < 0.2,
            "{peak} vs {true_peak}"
        );
    }

    #[test]
    fn peak_is_where_the_curve_turns() {
        let (l, s, k) = (1000.0, 0.05, 0.0005);
        let f = fit(&curve(l, s, k, &LEVELS)).unwrap();
        let n = f.peak_concurrency.unwrap();
        assert!((n - (0.95f64 / 0.0005).sqrt()).abs() < 0.5, "{n}");
        // The fitted peak is higher than its neighbours on the curve.
        let x = f.peak_iops.unwrap();
        assert!(x > f.predict(n * 0.8) && x > f.predict(n * 1.25));
    }

    #[test]
    fn power_peak_matches_numeric_maximum() {
        for &(s, k) in &[(0.05, 0.0005), (0.2, 0.0), (0.0, 0.001), (0.01, 0.00002)] {
            let np = power_peak(s, k).unwrap();
            let power = |n: f64| predict(1.0, s, k, n).powi(2) / n;
            assert!(power(np) >= power(np * 0.95) && power(np) >= power(np * 1.05));
        }
        assert_eq!(power_peak(0.0, 0.0), None);
    }

    #[test]
    fn linear_scaling_has_no_peak() {
        let f = fit(&curve(100.0, 0.0, 0.0, &LEVELS)).unwrap();
        assert!((f.lambda - 100.0).abs() < 1e-6, "{f:?}");
        assert!(f.sigma < 1e-9 && f.kappa < 1e-12, "{f:?}");
        assert_eq!(f.peak_concurrency, None);
        assert_eq!(f.power_peak_concurrency, None);
    }

    #[test]
    fn retrograde_curve_peaks_inside_the_levels() {
        // Strong crosstalk: throughput falls after about 14.
        let f = fit(&curve(1000.0, 0.02, 0.005, &LEVELS)).unwrap();
        let n = f.peak_concurrency.unwrap();
        assert!((n - (0.98f64 / 0.005).sqrt()).abs() < 0.1, "{n}");
        assert!(f.predict(256.0) < f.predict(n) / 4.0);
    }

    #[test]
    fn too_few_points_is_none() {
        assert!(fit(&[(1.0, 100.0), (2.0, 190.0)]).is_none());
        assert!(fit(&[(1.0, 100.0), (1.0, 101.0), (2.0, 190.0)]).is_none());
    }

    #[test]
    fn solver_handles_pivoting() {
        let x = solve3(
            [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]],
            [3.0, 5.0, 8.0],
        )
        .unwrap();
        assert_eq!(x, [5.0, 3.0, 4.0]);
    }
}
