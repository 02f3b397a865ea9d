//go:build !linux

package main

import "errors"

// becomeSubreaper: only Linux re-parents orphans to a subreaper.
func becomeSubreaper() error { return errors.ErrUnsupported }
