package model_test

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/model"
)

func mustModel(t testing.TB, c *model.Catalog, name string) *model.Model {
	t.Helper()
	m, err := c.Model(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// closeTo reports whether got is within a relative 1e-12 of want.
func closeTo(got, want float64) bool {
	return got == want || math.Abs(got-want) <= 1e-12*math.Abs(want)
}

func TestLoadProfilesLoadsEveryModelWithItsConstants(t *testing.T) {
	c := model.LoadTestProfiles(t)
	type facts struct {
		MinLocal, MaxLocal, Epochs int
		Batches                    []int
	}
	got := map[string]facts{}
	for _, name := range c.Names() {
		m := mustModel(t, c, name)
		got[name] = facts{m.MinLocalBatch, m.MaxLocalBatch, m.Epochs, m.Batches}
	}
	want := map[string]facts{
		"bert":        {4, 12, 2, []int{12, 24, 48, 96, 192, 384}},
		"cifar10":     {32, 1024, 100, []int{128, 256, 512, 1024, 2048, 4096}},
		"deepspeech2": {10, 80, 80, []int{20, 40, 80, 160, 320, 640}},
		"imagenet":    {20, 200, 90, []int{200, 400, 800, 1600, 3200, 6400, 12800}},
		"ncf":         {32, 32768, 10, []int{256, 512, 1024, 2048, 4096, 8192, 16384, 32768}},
		"yolov3":      {4, 8, 50, []int{8, 16, 32, 64, 128, 256, 512}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("models (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(model.KnownModels(), c.Names()); diff != "" {
		t.Errorf("Names (-want,+got):\n%s", diff)
	}
}

func TestStepSecondsOnMeasuredProfiles(t *testing.T) {
	c := model.LoadTestProfiles(t)
	// Rows read by hand from profiles/<model>/placements.csv and
	// scalability.csv: step_time, sync_time.
	const (
		cifar1at32, cifar1at45       = 0.0427886962890625, 0.05048525333404541
		cifar1at91, cifar1sync91     = 0.07591350078582763, 0.0005244320034980774
		cifar1at129, cifar1sync129   = 0.10385050773620605, 0.0005253599941730499
		cifar112at64                 = 0.12597379684448243
		cifar123at64, cifar132at64   = 0.1406691074371338, 0.13874359130859376
		cifar44at64                  = 0.17055258750915528
		cifar4444at32                = 0.15208077430725098
		cifar4at32                   = 0.05821514129638672
		cifar6x24at32                = 0.17739529609680177
		yolo2at8, yolo2sync8         = 0.3566535413265228, 0.03225891834497452
		ncf1at11606, ncf1at16413     = 0.013640518188476563, 0.014976799488067627
		ncf1sync11606, ncf1sync16413 = 0.0003407334405183791, 0.0003391219192743301
		bert16x64at4, bert16x64sync4 = 1.8735220730304718, 1.4277545623779295
		interp38                     = cifar1at32 + (38.0-32)/(45-32)*(cifar1at45-cifar1at32)
		cifar1accum256step           = cifar1at91 + (128.0-91)/(129-91)*(cifar1at129-cifar1at91)
		cifar1accum256sync           = cifar1sync91 + (128.0-91)/(129-91)*(cifar1sync129-cifar1sync91)
		ncfT                         = (16384.0 - 11606) / (16413 - 11606)
		ncfStep, ncfSync             = ncf1at11606 + ncfT*(ncf1at16413-ncf1at11606), ncf1sync11606 + ncfT*(ncf1sync16413-ncf1sync11606)
	)
	cases := map[string]struct {
		model string
		shape []int
		batch int
		want  float64
	}{
		"one GPU at the smallest measured local batch reads placement 1": {
			model: "cifar10", shape: []int{1}, batch: 32, want: cifar1at32,
		},
		"a local batch between two measured ones is interpolated linearly": {
			model: "cifar10", shape: []int{1}, batch: 38, want: interp38,
		},
		"a local batch below the measured ones is clamped to the smallest": {
			model: "cifar10", shape: []int{1}, batch: 10, want: cifar1at32,
		},
		"one GPU above the smallest traced batch accumulates once (README rule)": {
			model: "cifar10", shape: []int{1}, batch: 256,
			want: cifar1accum256step + (cifar1accum256step - cifar1accum256sync),
		},
		"ncf at its workload batch on one GPU accumulates once at local 16384": {
			model: "ncf", shape: []int{1}, batch: 32768, want: ncfStep + (ncfStep - ncfSync),
		},
		"a local batch above the maximum accumulates: yolov3 64 on 2 GPUs is 4 micro-batches of 8": {
			model: "yolov3", shape: []int{2}, batch: 64, want: yolo2at8 + 3*(yolo2at8-yolo2sync8),
		},
		"zeros are ignored": {
			model: "cifar10", shape: []int{0, 4, 0, 4, 0}, batch: 512, want: cifar44at64,
		},
		"a rotation resolves to the stored placement 112 (first)": {
			model: "cifar10", shape: []int{1, 1, 2}, batch: 256, want: cifar112at64,
		},
		"a rotation resolves to the stored placement 112 (second)": {
			model: "cifar10", shape: []int{2, 1, 1}, batch: 256, want: cifar112at64,
		},
		"a rotation resolves to the stored placement 112 (third)": {
			model: "cifar10", shape: []int{1, 2, 1}, batch: 256, want: cifar112at64,
		},
		"rotations of 123 read placement 123": {
			model: "cifar10", shape: []int{3, 1, 2}, batch: 384, want: cifar123at64,
		},
		"a non-rotated order reads its own measured placement 132": {
			model: "cifar10", shape: []int{2, 1, 3}, batch: 384, want: cifar132at64,
		},
		"more than four nodes read scalability.csv by nodes and replicas": {
			model: "cifar10", shape: []int{4, 4, 4, 4, 4, 4}, batch: 24 * 32, want: cifar6x24at32,
		},
		"scalability rows hold up to 16 full nodes": {
			model: "bert", shape: []int{4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}, batch: 64 * 4, want: bert16x64at4,
		},
		"an unmeasured node count blends the nearest measured node counts at the same GPUs per node": {
			model: "cifar10", shape: []int{4, 4, 4, 4, 4}, batch: 20 * 32, want: (cifar4444at32 + cifar6x24at32) / 2,
		},
		"a node larger than the testbed's reads the biggest measured GPUs per node": {
			model: "cifar10", shape: []int{8}, batch: 8 * 32, want: cifar4at32,
		},
		"no GPUs never finishes a step": {
			model: "cifar10", shape: []int{0, 0}, batch: 128, want: math.Inf(1),
		},
		"a batch below one never finishes a step": {
			model: "cifar10", shape: []int{4}, batch: 0, want: math.Inf(1),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := mustModel(t, c, tc.model).StepSeconds(tc.shape, tc.batch)
			if !closeTo(got, tc.want) {
				t.Errorf("StepSeconds(%v, %d) = %v, want %v", tc.shape, tc.batch, got, tc.want)
			}
		})
	}
}

func TestStepSecondsDependsOnNodeOrderOnlyUpToRotation(t *testing.T) {
	for catalogName, c := range model.CatalogsForTest(t) {
		for _, name := range c.Names() {
			m := mustModel(t, c, name)
			for _, shape := range [][]int{{2, 1, 1}, {1, 2, 3}, {4, 1, 3, 2}, {1, 1, 4, 4}, {3, 3, 3, 3, 3, 3}, {1, 2, 3, 4, 4, 4, 4}} {
				want := m.StepSeconds(shape, 64*len(shape))
				rotated := append([]int(nil), shape...)
				for range shape {
					rotated = append(rotated[1:], rotated[0])
					if got := m.StepSeconds(rotated, 64*len(shape)); got != want {
						t.Errorf("%s %s: StepSeconds(%v) = %v, want %v as for %v", catalogName, name, rotated, got, want, shape)
					}
				}
			}
		}
	}
}

func TestPlacementKey(t *testing.T) {
	cases := map[string]struct {
		shape []int
		want  string
	}{
		"one node":                        {[]int{4}, "4"},
		"rotations share a key (a)":       {[]int{2, 1, 1}, "112"},
		"rotations share a key (b)":       {[]int{1, 2, 1}, "112"},
		"rotations share a key (c)":       {[]int{1, 1, 2}, "112"},
		"a reflection is another key":     {[]int{1, 3, 2}, "132"},
		"zeros and negatives are dropped": {[]int{0, 3, -1, 1, 0}, "13"},
		"no GPUs has no key":              {[]int{0, 0}, ""},
		"a node of more than 9 GPUs":      {[]int{10, 1}, ""},
		"up to 18 nodes":                  {[]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2}, "111111111111111112"},
		"more than 18 nodes has no key":   {make19(), ""},
		"the smallest rotation is chosen": {[]int{4, 4, 1, 4}, "1444"},
		"ties are broken by later digits": {[]int{2, 1, 3, 1, 2}, "12213"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := model.PlacementKey(tc.shape); got != tc.want {
				t.Errorf("PlacementKey(%v) = %q, want %q", tc.shape, got, tc.want)
			}
		})
	}
}

func make19() []int {
	s := make([]int, 19)
	for i := range s {
		s[i] = 1
	}
	return s
}

// lastEpoch reads the last epoch row of a validation file: progress and
// iteration.
func lastEpoch(t *testing.T, name string, batch, epochs int) (progress, iteration float64) {
	t.Helper()
	f, err := os.Open(filepath.Join(model.ProfilesDir, name, fmt.Sprintf("validation-%d.csv", batch)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	row := recs[epochs] // recs[0] is the header
	progress, err1 := strconv.ParseFloat(row[0], 64)
	iteration, err2 := strconv.ParseFloat(row[1], 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("%s validation-%d.csv: %v %v", name, batch, err1, err2)
	}
	return progress, iteration
}

func TestStepsAtTheSmallestBatchIsTheLastEpochTarget(t *testing.T) {
	c := model.LoadTestProfiles(t)
	for _, name := range c.Names() {
		m := mustModel(t, c, name)
		// The gain at M0 is 1, so the steps are the final target: the
		// smallest last-epoch progress over the traced batches.
		want := math.Inf(1)
		for _, b := range m.Batches {
			p, _ := lastEpoch(t, name, b, m.Epochs)
			want = min(want, p)
		}
		if got := m.Steps(m.InitBatch()); !closeTo(got, want) {
			t.Errorf("%s: Steps(%d) = %v, want %v", name, m.InitBatch(), got, want)
		}
	}
}

func TestStepsMatchesTheIterationShortcut(t *testing.T) {
	c := model.LoadTestProfiles(t)
	// The README: the exact rule and the last epoch's iteration agree
	// within ~5% except yolov3 with B >= 64, where the exact rule needs
	// 1.10x (B=64) up to 1.58x (B=512) more steps. Measured here, the
	// largest gap elsewhere is cifar10 at B=4096, 6.6%.
	yolo := map[int]float64{64: 1.10, 512: 1.58}
	for _, name := range c.Names() {
		m := mustModel(t, c, name)
		for _, b := range m.Batches {
			_, it := lastEpoch(t, name, b, m.Epochs)
			ratio := m.Steps(b) / it
			switch want, ok := yolo[b]; {
			case name == "yolov3" && ok:
				if math.Abs(ratio-want) > 0.01 {
					t.Errorf("%s B=%d: Steps/iteration = %.3f, want %.2f (README)", name, b, ratio, want)
				}
			case name == "yolov3" && b >= 64:
				if ratio < 1.10 || ratio > 1.58 {
					t.Errorf("%s B=%d: Steps/iteration = %.3f, want within [1.10, 1.58] (README)", name, b, ratio)
				}
			default:
				if math.Abs(ratio-1) > 0.07 {
					t.Errorf("%s B=%d: Steps/iteration = %.3f, want within 7%% of 1", name, b, ratio)
				}
			}
		}
	}
}

func TestStepsFallsAsTheBatchGrows(t *testing.T) {
	for catalogName, c := range model.CatalogsForTest(t) {
		for _, name := range c.Names() {
			m := mustModel(t, c, name)
			prev := math.Inf(1)
			for b := 1; b <= 4*m.Batches[len(m.Batches)-1]; b = b*9/8 + 1 {
				got := m.Steps(b)
				if !(got > 0 && got <= prev) {
					t.Fatalf("%s %s: Steps(%d) = %v after %v at a smaller batch", catalogName, name, b, got, prev)
				}
				prev = got
			}
			if got := m.Steps(0); !math.IsInf(got, 1) {
				t.Errorf("%s %s: Steps(0) = %v, want +Inf", catalogName, name, got)
			}
		}
	}
}

func TestMaxWorkers(t *testing.T) {
	c := model.Builtin()
	cases := map[string]struct {
		model string
		batch int
		want  int
	}{
		"cifar10 at 128 keeps 32 per GPU on 4 GPUs":  {"cifar10", 128, 4},
		"a batch that is not a multiple rounds down": {"cifar10", 127, 3},
		"a batch below the minimum still gets one":   {"cifar10", 16, 1},
		"capped at 64 GPUs":                          {"cifar10", 4096, 64},
		"bert at 384 with at least 4 per GPU":        {"bert", 384, 64},
		"bert at 96":                                 {"bert", 96, 24},
		"imagenet at 3200 with at least 20 per GPU":  {"imagenet", 3200, 64},
		"deepspeech2 at 320":                         {"deepspeech2", 320, 32},
		"yolov3 at 64":                               {"yolov3", 64, 16},
		"ncf is pinned to one GPU":                   {"ncf", 32768, 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := mustModel(t, c, tc.model).MaxWorkers(tc.batch); got != tc.want {
				t.Errorf("MaxWorkers(%d) = %d, want %d", tc.batch, got, tc.want)
			}
		})
	}
}

func TestCatalogModelNamesTheKnownOnesForAnUnknownName(t *testing.T) {
	_, err := model.Builtin().Model("resnet")
	want := `unknown model "resnet" (known: bert, cifar10, deepspeech2, imagenet, ncf, yolov3)`
	if err == nil || err.Error() != want {
		t.Errorf("Model(resnet) error = %v, want %q", err, want)
	}
}
