package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// decodeJSONBody reads a request body that must be exactly one JSON object
// of v's fields, each named once: Go's decoder would take the last of a
// key given twice, applying a value the sender may not have meant. shape
// describes the object in the error, e.g. `{"algorithm": NAME, ...}`.
func decodeJSONBody(r *http.Request, v any, shape string) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	bad := func(err error) error {
		return errorf(http.StatusBadRequest, "the body is not %s: %v", shape, err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bad(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errorf(http.StatusBadRequest, "the body holds more than one JSON value")
	}
	if err := uniqueKeys(json.NewDecoder(bytes.NewReader(body))); err != nil {
		return bad(err)
	}
	return nil
}

// uniqueKeys reports the first key given twice in one object of a JSON
// value.
func uniqueKeys(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key := k.(string)
			if seen[key] {
				return fmt.Errorf("%q is given twice: give it once", key)
			}
			seen[key] = true
			if err := uniqueKeys(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		for dec.More() {
			if err := uniqueKeys(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	return err
}

// readBody reads a request body, which the server limits in size: a body
// over the limit is answered 413.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, errorf(http.StatusRequestEntityTooLarge, "the body is larger than %d bytes", mbe.Limit)
	case err != nil:
		return nil, errorf(http.StatusBadRequest, "read the body: %v", err)
	}
	return body, nil
}
