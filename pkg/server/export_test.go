package server

import (
	"encoding/json"
	"strconv"
	"strings"
)

// openAPIDoc is the part of the OpenAPI document the tests compare.
type openAPIDoc struct {
	Paths map[string]map[string]json.RawMessage `json:"paths"`
}

type openAPIOperation struct {
	Responses map[string]json.RawMessage `json:"responses"`
}

// DocumentedCodes returns, per "METHOD pattern", the status codes the
// OpenAPI document lists.
func DocumentedCodes() (map[string][]int, error) {
	var doc openAPIDoc
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		return nil, err
	}
	out := map[string][]int{}
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op openAPIOperation
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, err
			}
			key := strings.ToUpper(method) + " " + path
			out[key] = []int{}
			for code := range op.Responses {
				c, err := strconv.Atoi(code)
				if err != nil {
					return nil, err
				}
				out[key] = append(out[key], c)
			}
		}
	}
	return out, nil
}

// Operations lists the server's routes as "METHOD pattern".
func Operations() []string {
	var out []string
	for _, r := range (&Server{}).routes() {
		out = append(out, r.method+" "+r.pattern)
	}
	return out
}
