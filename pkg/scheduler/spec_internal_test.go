package scheduler

import (
	"reflect"
	"testing"

	"github.com/vodascheduler/voda/pkg/api"
)

// TestJobSpecKeepsEveryField sets every field of an api.JobSpec and checks
// that the engine's record gives each back: a field added to the spec and
// forgotten in jobSpec fails here, rather than being dropped silently.
func TestJobSpecKeepsEveryField(t *testing.T) {
	var in api.JobSpec
	v := reflect.ValueOf(&in).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("s" + v.Type().Field(i).Name)
		case reflect.Int:
			f.SetInt(int64(i + 1))
		case reflect.Float64:
			f.SetFloat(float64(i) + 0.5)
		default:
			t.Fatalf("api.JobSpec.%s is a %s: teach jobSpec and this test about it", v.Type().Field(i).Name, f.Kind())
		}
	}
	if got := specOf(in).withType(in.GPUType); got != in {
		t.Errorf("the record gives back %+v, want %+v", got, in)
	}
	if got, want := specOf(in).K(), in.K(); got != want {
		t.Errorf("K = %d, want %d", got, want)
	}
	in.RequestedWorkers = 0
	if got, want := specOf(in).Requested(), in.Requested(); got != want {
		t.Errorf("Requested = %d, want %d", got, want)
	}
}
