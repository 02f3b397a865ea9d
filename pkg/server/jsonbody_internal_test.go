package server

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestUniqueKeys(t *testing.T) {
	for body, want := range map[string]string{
		`{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]}`: "",
		`[1,"a",{"x":null},[]]`:                     "",
		`{"a":1,"a":1}`:                             `"a" is given twice`,
		`{"a":{"b":1,"b":2}}`:                       `"b" is given twice`,
		`{"a":[{"b":1},{"c":1,"c":2}]}`:             `"c" is given twice`,
		`{"a":1`:                                    "EOF",
	} {
		err := uniqueKeys(json.NewDecoder(strings.NewReader(body)))
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}
