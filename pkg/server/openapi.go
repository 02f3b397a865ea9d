package server

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the API's OpenAPI 3 document, served at /api/v1/openapi.json.
// It is written by hand; a test keeps it in step with the routes and the
// status codes they answer with.
//
//go:embed openapi.json
var OpenAPI []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request, _ User) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(OpenAPI)
	return err
}
