package model

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Column layouts of the profile files (shared/traces/pollux-adaptdl/README.md,
// "Columns").
var (
	placementsHeader  = []string{"placement", "local_bsz", "step_time", "sync_time"}
	scalabilityHeader = []string{"num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"}
	validationHeader  = []string{"progress", "iteration", "metric", "grad_sqr", "grad_var"}
)

// timing is one measured step: step_time and sync_time, in seconds, for one
// micro-batch of local samples per GPU.
type timing struct {
	local      int
	step, sync float64
}

// placementRow is one row of placements.csv, its placement keyed by
// smallest rotation.
type placementRow struct {
	key         int64
	nodes, gpus int
	timing      timing
}

// scalabilityRow is one row of scalability.csv.
type scalabilityRow struct {
	nodes, gpus int
	timing      timing
}

// epochRow is one row (one epoch) of validation-<B>.csv.
type epochRow struct {
	progress, iteration float64
	gradSqr, gradVar    float64
}

// readTable reads a CSV file that must start with header and hold at least
// one row, and calls row for each record with its line number. Errors name
// the file and line.
func readTable(r io.Reader, name string, header []string, row func(line int, rec []string) error) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // checked below, with a clearer message
	cr.ReuseRecord = true
	want := strings.Join(header, ",")
	for n := 0; ; n++ {
		rec, err := cr.Read()
		if err == io.EOF {
			switch n {
			case 0:
				return fmt.Errorf("%s: empty file, want header %q", name, want)
			case 1:
				return fmt.Errorf("%s: no rows after the header", name)
			}
			return nil
		}
		if err != nil {
			var perr *csv.ParseError
			if errors.As(err, &perr) {
				return fmt.Errorf("%s:%d: %w", name, perr.Line, perr.Err)
			}
			return fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		for i := range rec {
			rec[i] = strings.TrimSpace(rec[i])
		}
		if n == 0 {
			rec[0] = strings.TrimPrefix(rec[0], "\ufeff")
			if got := strings.Join(rec, ","); got != want {
				return fmt.Errorf("%s:%d: header %q, want %q", name, line, got, want)
			}
			continue
		}
		if len(rec) != len(header) {
			return fmt.Errorf("%s:%d: %d columns, want %d (%s)", name, line, len(rec), len(header), want)
		}
		if err := row(line, rec); err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
	}
}

// number parses a finite float.
func number(col, s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q: not a number", col, s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s %q: not a finite number", col, s)
	}
	return v, nil
}

// nonNegative parses a finite float that is at least zero.
func nonNegative(col, s string) (float64, error) {
	v, err := number(col, s)
	if err == nil && v < 0 {
		err = fmt.Errorf("%s %q: negative", col, s)
	}
	return v, err
}

// count parses a positive integer no larger than limit.
func count(col, s string, limit int) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		return 0, fmt.Errorf("%s %q: not a positive integer", col, s)
	}
	if v > limit {
		return 0, fmt.Errorf("%s %q: larger than %d", col, s, limit)
	}
	return v, nil
}

// Limits that keep products of parsed values far from integer overflow.
const (
	maxLocalBsz = 1 << 30
	maxReplicas = 1 << 20
)

// parseTiming reads local_bsz, step_time and sync_time.
func parseTiming(local, step, sync string) (timing, error) {
	var t timing
	var err error
	if t.local, err = count("local_bsz", local, maxLocalBsz); err != nil {
		return t, err
	}
	if t.step, err = number("step_time", step); err != nil {
		return t, err
	}
	if t.step <= 0 {
		return t, fmt.Errorf("step_time %q: not positive", step)
	}
	if t.sync, err = nonNegative("sync_time", sync); err != nil {
		return t, err
	}
	if t.sync > t.step {
		// Accumulation costs step_time - sync_time per extra micro-batch,
		// which must not be negative.
		return t, fmt.Errorf("sync_time %s exceeds step_time %s", sync, step)
	}
	return t, nil
}

// parsePlacements reads placements.csv. A placement may be written under
// any rotation; it is stored under its smallest one. A placement measured
// twice at the same local batch, under any rotation, is an error.
func parsePlacements(r io.Reader, name string) ([]placementRow, error) {
	var rows []placementRow
	seen := map[[2]int64]int{}
	err := readTable(r, name, placementsHeader, func(line int, rec []string) error {
		key, nodes, gpus, ok := parseKey(rec[0])
		if !ok {
			return fmt.Errorf("placement %q: want 1 to %d digits from 1 to 9 (GPUs per node)", rec[0], maxKeyNodes)
		}
		t, err := parseTiming(rec[1], rec[2], rec[3])
		if err != nil {
			return err
		}
		id := [2]int64{key, int64(t.local)}
		if prev, dup := seen[id]; dup {
			return fmt.Errorf("placement %s at local_bsz %d already measured on line %d", rec[0], t.local, prev)
		}
		seen[id] = line
		rows = append(rows, placementRow{key: key, nodes: nodes, gpus: gpus, timing: t})
		return nil
	})
	return rows, err
}

// parseScalability reads scalability.csv.
func parseScalability(r io.Reader, name string) ([]scalabilityRow, error) {
	var rows []scalabilityRow
	seen := map[[3]int]int{}
	err := readTable(r, name, scalabilityHeader, func(line int, rec []string) error {
		nodes, err := count("num_nodes", rec[0], maxReplicas)
		if err != nil {
			return err
		}
		gpus, err := count("num_replicas", rec[1], maxReplicas)
		if err != nil {
			return err
		}
		if gpus < nodes {
			return fmt.Errorf("num_replicas %d is less than num_nodes %d", gpus, nodes)
		}
		t, err := parseTiming(rec[2], rec[3], rec[4])
		if err != nil {
			return err
		}
		id := [3]int{nodes, gpus, t.local}
		if prev, dup := seen[id]; dup {
			return fmt.Errorf("%d nodes, %d replicas at local_bsz %d already measured on line %d", nodes, gpus, t.local, prev)
		}
		seen[id] = line
		rows = append(rows, scalabilityRow{nodes: nodes, gpus: gpus, timing: t})
		return nil
	})
	return rows, err
}

// parseValidation reads validation-<B>.csv: one row per epoch, progress and
// iteration cumulative (so never decreasing).
func parseValidation(r io.Reader, name string) ([]epochRow, error) {
	var rows []epochRow
	err := readTable(r, name, validationHeader, func(line int, rec []string) error {
		var e epochRow
		var err error
		if e.progress, err = nonNegative("progress", rec[0]); err != nil {
			return err
		}
		if e.iteration, err = nonNegative("iteration", rec[1]); err != nil {
			return err
		}
		if _, err = number("metric", rec[2]); err != nil {
			return err
		}
		if e.gradSqr, err = nonNegative("grad_sqr", rec[3]); err != nil {
			return err
		}
		if e.gradVar, err = nonNegative("grad_var", rec[4]); err != nil {
			return err
		}
		if n := len(rows); n > 0 {
			if e.progress < rows[n-1].progress {
				return fmt.Errorf("progress %s is below the previous epoch's %g (it is cumulative)", rec[0], rows[n-1].progress)
			}
			if e.iteration < rows[n-1].iteration {
				return fmt.Errorf("iteration %s is below the previous epoch's %g (it is cumulative)", rec[1], rows[n-1].iteration)
			}
		}
		rows = append(rows, e)
		return nil
	})
	return rows, err
}
