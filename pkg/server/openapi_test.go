package server_test

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/progress"
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

// TestOpenAPISchemasMatchTypes keeps the document's schemas in step with
// the REST types: the same JSON fields, none missing on either side.
func TestOpenAPISchemasMatchTypes(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(server.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{
		"Error": rest.Error{}, "JobList": rest.JobList{}, "Event": rest.Event{}, "EventList": rest.EventList{},
		"Scheduler": rest.Scheduler{}, "SchedulerList": rest.SchedulerList{}, "SchedulerUpdate": rest.SchedulerUpdate{},
		"Version": rest.Version{}, "Deleted": rest.Deleted{}, "Queue": rest.Queue{}, "QueueList": rest.QueueList{},
		"ProgressReport": progress.Report{}, "TrainingProgress": v1alpha1.TrainingProgress{},
	} {
		var fields []string
		ty := reflect.TypeOf(v)
		for i := range ty.NumField() {
			tag, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
			if tag != "" && tag != "-" {
				fields = append(fields, tag)
			}
		}
		slices.Sort(fields)
		schema, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("openapi.json has no schema %s", name)
			continue
		}
		if diff := cmp.Diff(fields, slices.Sorted(maps.Keys(schema.Properties))); diff != "" {
			t.Errorf("schema %s (-rest type +openapi.json):\n%s", name, diff)
		}
	}
}
