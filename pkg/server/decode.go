package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/compat"
)

// httpError is an error with the status code it is answered with.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func errorf(status int, format string, args ...any) error {
	return &httpError{status: status, msg: fmt.Sprintf(format, args...)}
}

// StatusOf is the HTTP status code an error of this package is answered
// with: its own, else 500.
func StatusOf(err error) int {
	var he *httpError
	if errors.As(err, &he) {
		return he.status
	}
	return http.StatusInternalServerError
}

// The media types a job may be sent as. An empty Content-Type is read as
// YAML, which also covers JSON.
var jobMediaTypes = map[string]bool{
	"":                   true,
	"application/json":   true,
	"application/yaml":   true,
	"application/x-yaml": true,
	"text/yaml":          true,
	"text/x-yaml":        true,
}

// DecodeJob reads the body of POST /api/v1/jobs: a TrainingJob, a job in
// the original Voda's MPIJob format (converted with pkg/compat, named with
// the time now), or a Kubeflow PyTorchJob with an elastic policy (converted
// with pkg/compat, keeping its name). The job is validated; every error says what to change.
func DecodeJob(body []byte, contentType string, now time.Time) (*v1alpha1.TrainingJob, error) {
	mt := ""
	if contentType != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(contentType); err != nil {
			return nil, errorf(http.StatusUnsupportedMediaType, "Content-Type %q: %v", contentType, err)
		}
	}
	if !jobMediaTypes[mt] {
		return nil, errorf(http.StatusUnsupportedMediaType, "Content-Type %q is not accepted: send application/yaml or application/json", contentType)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errorf(http.StatusBadRequest, "the body is empty: send a TrainingJob or an MPIJob")
	}
	docs, err := splitDocuments(body)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "the body is not valid YAML or JSON: %v", err)
	}
	if len(docs) == 0 {
		return nil, errorf(http.StatusBadRequest, "the body is empty: send a TrainingJob or an MPIJob")
	}
	if len(docs) != 1 {
		return nil, errorf(http.StatusBadRequest, "the body holds %d documents: send one job per request", len(docs))
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	var doc any
	if err := yaml.Unmarshal(docs[0], &doc); err != nil {
		return nil, errorf(http.StatusBadRequest, "the body is not valid YAML or JSON: %v", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, errorf(http.StatusBadRequest, "the body is not a YAML or JSON object: send a TrainingJob or an MPIJob")
	}
	if err := yaml.Unmarshal(docs[0], &head); err != nil {
		return nil, errorf(http.StatusBadRequest, "apiVersion and kind must be strings: %v", err)
	}
	if err := serverSetMetadata(doc.(map[string]any)); err != nil {
		return nil, err
	}
	var tj *v1alpha1.TrainingJob
	switch {
	case head.Kind == "MPIJob":
		if tj, err = compat.FromMPIJob(docs[0], now); err != nil {
			return nil, errorf(http.StatusBadRequest, "%v", err)
		}
	case head.Kind == "PyTorchJob":
		if tj, err = compat.FromPyTorchJob(docs[0]); err != nil {
			return nil, errorf(http.StatusBadRequest, "%v", err)
		}
	case head.Kind == "TrainingJob":
		tj = &v1alpha1.TrainingJob{}
		if err := yaml.UnmarshalStrict(docs[0], tj); err != nil {
			return nil, errorf(http.StatusBadRequest, "not a valid TrainingJob: %v", err)
		}
		if !reflect.ValueOf(tj.Status).IsZero() {
			return nil, errorf(http.StatusBadRequest, "status is set: Voda writes a job's status, remove it")
		}
	case head.Kind == "":
		return nil, errorf(http.StatusBadRequest, "kind is missing: send a TrainingJob (%s), an MPIJob in the original Voda format or an elastic PyTorchJob (kubeflow.org)", v1alpha1.GroupVersion)
	default:
		return nil, errorf(http.StatusBadRequest, "kind %q is not accepted: send a TrainingJob (%s), an MPIJob in the original Voda format or an elastic PyTorchJob (kubeflow.org)", head.Kind, v1alpha1.GroupVersion)
	}
	if err := tj.Validate(); err != nil {
		return nil, errorf(http.StatusBadRequest, "%s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return tj, nil
}

// splitDocuments splits a YAML stream into its non-empty documents. JSON is
// one document.
func splitDocuments(body []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(body)))
	var docs [][]byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
}

// stripComments drops YAML comment lines, so that a document of comments
// only counts as empty.
func stripComments(d []byte) []byte {
	var out []byte
	for line := range bytes.Lines(d) {
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == '#' || bytes.Equal(t, []byte("---")) {
			continue
		}
		out = append(out, line...)
	}
	return out
}

// serverMetadata are the metadata fields the API server sets or that tie
// an object's life to others; a job submitted here is a new object of its
// own.
var serverMetadata = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
	"deletionGracePeriodSeconds", "selfLink", "managedFields", "ownerReferences", "finalizers"}

// serverSetMetadata refuses a body whose metadata carries fields a new job
// cannot have (a manifest saved with kubectl get -o yaml carries some);
// null values, as generated manifests hold, are left alone.
func serverSetMetadata(doc map[string]any) error {
	meta, _ := doc["metadata"].(map[string]any)
	var set []string
	for _, f := range serverMetadata {
		if v, ok := meta[f]; ok && v != nil {
			set = append(set, "metadata."+f)
		}
	}
	if len(set) == 0 {
		return nil
	}
	return errorf(http.StatusBadRequest, "%s: set by the API server for the objects it holds, or tying a job to other objects' lives; a new job cannot have them, remove them (a manifest saved with kubectl get -o yaml carries some)",
		strings.Join(set, ", "))
}
