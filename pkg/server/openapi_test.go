package server_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/server"
)

// TestOpenAPIMatchesRoutes keeps the hand-written OpenAPI document and the
// handlers in step: the same operations, each with responses. That every
// status code the server really answers with is documented is checked by
// the integration test, from the server's request metrics.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	doc, err := server.DocumentedCodes()
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	ops := server.Operations()
	slices.Sort(ops)
	documented := slices.Sorted(maps.Keys(doc))
	if diff := cmp.Diff(ops, documented); diff != "" {
		t.Errorf("operations (-routes +openapi.json):\n%s", diff)
	}
	for op, codes := range doc {
		if len(codes) == 0 {
			t.Errorf("%s documents no response", op)
		}
	}
}
