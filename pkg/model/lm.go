package model

import "math"

// leastSquares minimises the sum of squared residuals r(x) by the
// Levenberg-Marquardt method with a forward-difference Jacobian. It is
// deterministic and needs no randomness; iters bounds the outer iterations.
func leastSquares(r func(x, out []float64), m int, x0 []float64, iters int) []float64 {
	n := len(x0)
	x := append([]float64(nil), x0...)
	res := make([]float64, m)
	r(x, res)
	cost := sumSq(res)
	jac := make([][]float64, m)
	for i := range jac {
		jac[i] = make([]float64, n)
	}
	tmp := make([]float64, m)
	trial := make([]float64, n)
	trialRes := make([]float64, m)
	a := make([][]float64, n)
	for i := range a {
		a[i] = make([]float64, n)
	}
	g := make([]float64, n)
	lambda := 1e-3
	for range iters {
		for k := range n {
			h := 1e-6 * math.Max(1, math.Abs(x[k]))
			xk := x[k]
			x[k] = xk + h
			r(x, tmp)
			x[k] = xk
			for i := range m {
				jac[i][k] = (tmp[i] - res[i]) / h
			}
		}
		for p := range n {
			g[p] = 0
			for q := range n {
				a[p][q] = 0
			}
		}
		for i := range m {
			for p := range n {
				g[p] += jac[i][p] * res[i]
				for q := range n {
					a[p][q] += jac[i][p] * jac[i][q]
				}
			}
		}
		improved := false
		for range 30 {
			step := solveDamped(a, g, lambda)
			if step == nil {
				lambda *= 10
				continue
			}
			for k := range n {
				trial[k] = x[k] - step[k]
			}
			r(trial, trialRes)
			if c := sumSq(trialRes); c < cost {
				rel := (cost - c) / math.Max(cost, 1e-300)
				copy(x, trial)
				copy(res, trialRes)
				cost = c
				lambda = math.Max(lambda/10, 1e-12)
				improved = rel > 1e-12
				break
			}
			lambda *= 10
		}
		if !improved {
			break
		}
	}
	return x
}

// solveDamped solves (A + lambda*diag(A)) s = g by Gaussian elimination with
// partial pivoting; nil when singular.
func solveDamped(a [][]float64, g []float64, lambda float64) []float64 {
	n := len(g)
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, n+1)
		copy(m[i], a[i])
		m[i][i] += lambda * math.Max(a[i][i], 1e-12)
		m[i][n] = g[i]
	}
	for c := range n {
		p := c
		for i := c + 1; i < n; i++ {
			if math.Abs(m[i][c]) > math.Abs(m[p][c]) {
				p = i
			}
		}
		if m[p][c] == 0 || math.IsNaN(m[p][c]) {
			return nil
		}
		m[c], m[p] = m[p], m[c]
		for i := c + 1; i < n; i++ {
			f := m[i][c] / m[c][c]
			for k := c; k <= n; k++ {
				m[i][k] -= f * m[c][k]
			}
		}
	}
	s := make([]float64, n)
	for i := n - 1; i >= 0; i-- {
		v := m[i][n]
		for k := i + 1; k < n; k++ {
			v -= m[i][k] * s[k]
		}
		s[i] = v / m[i][i]
	}
	return s
}

func sumSq(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	if math.IsNaN(s) {
		return math.Inf(1)
	}
	return s
}
