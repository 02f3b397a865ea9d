package model

import (
	"bytes"
	"testing"
)

// The parsers read files a user points LoadProfiles at: whatever the bytes,
// they must return rows or an error, never panic, and never return rows
// that break the invariants the speed and work models rely on.

func FuzzParsePlacements(f *testing.F) {
	f.Add([]byte("placement,local_bsz,step_time,sync_time\n1,32,0.04,0.0005\n21,64,0.1,0.05\n"))
	f.Add([]byte("placement,local_bsz,step_time,sync_time\n0,1,1,1\n"))
	f.Add([]byte("placement,local_bsz,step_time,sync_time\n12,4,1,0.5\n21,4,1,0.5\n"))
	f.Add([]byte("\ufeffplacement,local_bsz,step_time,sync_time\r\n1111111111111111111,1,NaN,\"1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := parsePlacements(bytes.NewReader(data), "fuzz.csv")
		if err != nil {
			return
		}
		for _, r := range rows {
			nodes, gpus, _ := keyCounts(r.key)
			if r.key <= 0 || nodes != r.nodes || gpus != r.gpus || !validTiming(r.timing) {
				t.Errorf("row %+v breaks the invariants", r)
			}
		}
		if len(rows) > 0 {
			s := newMeasuredSpeed(rows, nil)
			for _, shape := range [][]int{{1}, {4, 4}, {9, 9, 9, 9, 9}, {100}} {
				st, sy := s.times(reduce(shape), 7)
				if !(st > 0 && sy >= 0 && sy <= st) {
					t.Errorf("times(%v) = %v, %v", shape, st, sy)
				}
			}
		}
	})
}

func FuzzParseScalability(f *testing.F) {
	f.Add([]byte("num_nodes,num_replicas,local_bsz,step_time,sync_time\n6,24,32,0.2,0.1\n"))
	f.Add([]byte("num_nodes,num_replicas,local_bsz,step_time,sync_time\n6,5,32,0.2,0.1\n"))
	f.Add([]byte("num_nodes,num_replicas,local_bsz,step_time,sync_time\n6,24,32,0.2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := parseScalability(bytes.NewReader(data), "fuzz.csv")
		if err != nil {
			return
		}
		for _, r := range rows {
			if r.nodes < 1 || r.gpus < r.nodes || !validTiming(r.timing) {
				t.Errorf("row %+v breaks the invariants", r)
			}
		}
	})
}

func FuzzParseValidation(f *testing.F) {
	f.Add([]byte("progress,iteration,metric,grad_sqr,grad_var\n391.0,390,0.4455,8.9,5.0\n782,700,0.5,0.6,1.8\n"))
	f.Add([]byte("progress,iteration,metric,grad_sqr,grad_var\n1,1,1,0,0\n0,2,1,1,1\n"))
	f.Add([]byte("progress,iteration,metric,grad_sqr,grad_var\n1e308,1,-Inf,1,1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := parseValidation(bytes.NewReader(data), "fuzz.csv")
		if err != nil {
			return
		}
		for i, r := range rows {
			if r.progress < 0 || r.iteration < 0 || r.gradSqr < 0 || r.gradVar < 0 ||
				(i > 0 && (r.progress < rows[i-1].progress || r.iteration < rows[i-1].iteration)) {
				t.Errorf("row %d %+v breaks the invariants", i, r)
			}
		}
		w, err := newExactWork(map[int][]epochRow{8: rows, 16: rows}, len(rows))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range []float64{1, 8, 12, 16, 1e6} {
			if s := w.steps(b); s < 0 {
				t.Errorf("steps(%v) = %v, want at least 0", b, s)
			}
		}
	})
}

func validTiming(t timing) bool {
	return t.local >= 1 && t.step > 0 && t.sync >= 0 && t.sync <= t.step
}
