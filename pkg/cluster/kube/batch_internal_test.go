package kube

import (
	"reflect"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/pkg/estimator"
)

// The table the workers get reads back as written; malformed text is an
// error, not a table.
func TestBatchSizesText(t *testing.T) {
	table := []estimator.Batch{{}, {Global: 256, Local: 128, Accumulation: 2}, {}, {Global: 768, Local: 256, Accumulation: 1}}
	text := formatBatchSizes(table)
	if text != "1:256:128:2 3:768:256:1" {
		t.Fatalf("formatted %q", text)
	}
	back, err := parseBatchSizes(text)
	if err != nil || !reflect.DeepEqual(back, table) {
		t.Errorf("read back %+v, %v; want %+v", back, err, table)
	}
	for _, bad := range []string{"1:256:128", "x:1:1:1", "1:0:1:1", "2000000:1:1:1", "1:-4:1:1"} {
		if _, err := parseBatchSizes(bad); err == nil || !strings.Contains(err.Error(), "batch sizes entry") {
			t.Errorf("%q: %v, want an error naming the entry", bad, err)
		}
	}
}
