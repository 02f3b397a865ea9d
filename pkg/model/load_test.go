package model_test

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/pkg/model"
)

// A small valid profile of bert (2 epochs), to be broken one file at a time.
var validBert = map[string]string{
	"bert/placements.csv": "placement,local_bsz,step_time,sync_time\n" +
		"1,4,0.4,0.01\n" +
		"1,12,0.9,0.01\n" +
		"12,4,1.0,0.5\n",
	"bert/scalability.csv": "num_nodes,num_replicas,local_bsz,step_time,sync_time\n" +
		"6,24,4,1.5,1.0\n",
	"bert/validation-12.csv": "progress,iteration,metric,grad_sqr,grad_var\n" +
		"100,100,80.5,1,1\n" +
		"200,200,85.0,1,1\n",
	"bert/validation-24.csv": "progress,iteration,metric,grad_sqr,grad_var\n" +
		"110,60,80.1,1,1\n" +
		"190,110,84.0,1,3\n",
}

// writeTree writes files under a new temporary directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadProfilesOnASmallValidProfile(t *testing.T) {
	c, err := model.LoadProfiles(writeTree(t, validBert))
	if err != nil {
		t.Fatal(err)
	}
	m := mustModel(t, c, "bert")
	checks := map[string]struct{ got, want float64 }{
		"one GPU at local 8 is halfway between 4 and 12": {m.StepSeconds([]int{1}, 8), 0.65},
		"placement 21 is stored as 12":                   {m.StepSeconds([]int{2, 1}, 12), 1.0},
		"24 GPUs on 6 nodes come from scalability.csv":   {m.StepSeconds([]int{4, 4, 4, 4, 4, 4}, 96), 1.5},
		// Targets: min(100, 110) = 100, then min(200, 190) = 190. At M0
		// the gain is 1: 190 steps.
		"steps at M0 are the last target": {m.Steps(12), 190},
		// At 24 (scale 2): epoch 1 gain (1+1)/(1/2+1) = 4/3, epoch 2
		// gain (3+1)/(3/2+1) = 8/5: 100*3/4 + 90*5/8.
		"steps at 24 divide each epoch's target by its gain": {m.Steps(24), 75 + 56.25},
	}
	for name, ck := range checks {
		if !closeTo(ck.got, ck.want) {
			t.Errorf("%s: got %v, want %v", name, ck.got, ck.want)
		}
	}
}

func TestLoadProfilesErrors(t *testing.T) {
	cases := map[string]struct {
		change map[string]string // file -> new body; "" deletes the file
		want   string            // substring of the error
	}{
		"a step time that is not a number names file and line": {
			change: map[string]string{"bert/placements.csv": "placement,local_bsz,step_time,sync_time\n1,4,0.4,0.01\n1,12,x,0.01\n"},
			want:   `bert/placements.csv:3: step_time "x": not a number`,
		},
		"a row with too few columns": {
			change: map[string]string{"bert/placements.csv": "placement,local_bsz,step_time,sync_time\n1,4,0.4\n"},
			want:   `bert/placements.csv:2: 3 columns, want 4 (placement,local_bsz,step_time,sync_time)`,
		},
		"a missing header": {
			change: map[string]string{"bert/scalability.csv": "6,24,4,1.5,1.0\n"},
			want:   `bert/scalability.csv:1: header "6,24,4,1.5,1.0", want "num_nodes,num_replicas,local_bsz,step_time,sync_time"`,
		},
		"an empty file": {
			change: map[string]string{"bert/scalability.csv": " "},
			want:   `bert/scalability.csv:1: header "", want`,
		},
		"a truly empty file": {
			change: map[string]string{"bert/scalability.csv": "\n"},
			want:   `bert/scalability.csv: empty file, want header`,
		},
		"a header and no rows": {
			change: map[string]string{"bert/validation-24.csv": "progress,iteration,metric,grad_sqr,grad_var\n"},
			want:   `bert/validation-24.csv: no rows after the header`,
		},
		"a malformed quote": {
			change: map[string]string{"bert/placements.csv": "placement,local_bsz,step_time,sync_time\n1,4,0.4,0.01\n1,\"12,0.9,0.01\n"},
			want:   `bert/placements.csv:3:`,
		},
		"a placement with a zero digit": {
			change: map[string]string{"bert/placements.csv": "placement,local_bsz,step_time,sync_time\n10,4,0.4,0.01\n"},
			want:   `bert/placements.csv:2: placement "10": want 1 to 18 digits from 1 to 9`,
		},
		"the same placement twice under two rotations": {
			change: map[string]string{"bert/placements.csv": "placement,local_bsz,step_time,sync_time\n12,4,1.0,0.5\n21,4,1.1,0.5\n"},
			want:   `bert/placements.csv:3: placement 21 at local_bsz 4 already measured on line 2`,
		},
		"a sync time longer than the step": {
			change: map[string]string{"bert/placements.csv": "placement,local_bsz,step_time,sync_time\n1,4,0.4,0.5\n"},
			want:   `bert/placements.csv:2: sync_time 0.5 exceeds step_time 0.4`,
		},
		"a local batch that is not a positive integer": {
			change: map[string]string{"bert/placements.csv": "placement,local_bsz,step_time,sync_time\n1,4.5,0.4,0.1\n"},
			want:   `bert/placements.csv:2: local_bsz "4.5": not a positive integer`,
		},
		"an infinite step time": {
			change: map[string]string{"bert/placements.csv": "placement,local_bsz,step_time,sync_time\n1,4,Inf,0.1\n"},
			want:   `bert/placements.csv:2: step_time "Inf": not a finite number`,
		},
		"fewer replicas than nodes": {
			change: map[string]string{"bert/scalability.csv": "num_nodes,num_replicas,local_bsz,step_time,sync_time\n6,5,4,1.5,1.0\n"},
			want:   `bert/scalability.csv:2: num_replicas 5 is less than num_nodes 6`,
		},
		"progress that goes down": {
			change: map[string]string{"bert/validation-12.csv": "progress,iteration,metric,grad_sqr,grad_var\n100,100,1,1,1\n90,200,1,1,1\n"},
			want:   `bert/validation-12.csv:3: progress 90 is below the previous epoch's 100 (it is cumulative)`,
		},
		"a negative gradient statistic": {
			change: map[string]string{"bert/validation-12.csv": "progress,iteration,metric,grad_sqr,grad_var\n100,100,1,1,-1\n200,200,1,1,1\n"},
			want:   `bert/validation-12.csv:2: grad_var "-1": negative`,
		},
		"fewer epochs than the model trains for": {
			change: map[string]string{"bert/validation-12.csv": "progress,iteration,metric,grad_sqr,grad_var\n100,100,1,1,1\n"},
			want:   `bert/validation-12.csv: 1 epochs, want at least 2 (bert trains for 2)`,
		},
		"a validation file without a batch size in its name": {
			change: map[string]string{"bert/validation-big.csv": validBert["bert/validation-12.csv"]},
			want:   `bert/validation-big.csv: want validation-<global batch>.csv with a positive integer batch`,
		},
		"a missing placements file": {
			change: map[string]string{"bert/placements.csv": ""},
			want:   `bert/placements.csv: no such file or directory`,
		},
		"a missing scalability file": {
			change: map[string]string{"bert/scalability.csv": ""},
			want:   `bert/scalability.csv: no such file or directory`,
		},
		"no validation files": {
			change: map[string]string{"bert/validation-12.csv": "", "bert/validation-24.csv": ""},
			want:   `bert: no validation-*.csv files`,
		},
		"an unknown model directory": {
			change: map[string]string{"resnet/placements.csv": "x"},
			want:   `resnet: unknown model "resnet": no constants known (known: bert, cifar10, deepspeech2, imagenet, ncf, yolov3)`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			files := maps.Clone(validBert)
			for f, body := range tc.change {
				if body == "" {
					delete(files, f)
				} else {
					files[f] = body
				}
			}
			_, err := model.LoadProfiles(writeTree(t, files))
			if err == nil || !strings.Contains(filepath.ToSlash(err.Error()), tc.want) {
				t.Errorf("LoadProfiles error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLoadProfilesDirectoryErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nowhere")
	if _, err := model.LoadProfiles(missing); err == nil || !strings.Contains(err.Error(), "nowhere: no such file or directory") {
		t.Errorf("missing directory: error = %v, want it to name the directory", err)
	}
	empty := writeTree(t, map[string]string{"README.md": "not a model"})
	if _, err := model.LoadProfiles(empty); err == nil || !strings.Contains(err.Error(), "no model directories (want some of bert, cifar10") {
		t.Errorf("no model directories: error = %v, want it to say so", err)
	}
}
