package algorithm

import (
	"fmt"
	"strings"
)

// Policy decides how many GPUs every job gets.
type Policy interface {
	// Name is the policy's canonical name, e.g. "ElasticFIFO".
	Name() string
	// Allocate decides from a snapshot. It never panics on bad input: an
	// invalid snapshot is an error.
	Allocate(s Snapshot) (Result, error)
	// decide fills d, sized for s and zero, from a valid snapshot (see
	// Decide).
	decide(s *Snapshot, d *Decision) error
}

// Config carries the tunable parameters of the policies that have any.
type Config struct {
	Tiresias TiresiasConfig
	HeSRPT   HeSRPTConfig
}

// DefaultConfig returns the parameters of the original Voda scheduler.
func DefaultConfig() Config {
	return Config{Tiresias: DefaultTiresias(), HeSRPT: DefaultHeSRPT()}
}

// Canonical policy names, in the order the documentation lists them.
const (
	NameFIFO            = "FIFO"
	NameElasticFIFO     = "ElasticFIFO"
	NameSRJF            = "SRJF"
	NameElasticSRJF     = "ElasticSRJF"
	NameTiresias        = "Tiresias"
	NameElasticTiresias = "ElasticTiresias"
	NameFfDLOptimizer   = "FfDLOptimizer"
	NameAFSL            = "AFS-L"
	NameHeSRPT          = "HeSRPT"
)

var constructors = map[string]func(Config) Policy{
	NameFIFO:            func(Config) Policy { return FIFO{} },
	NameElasticFIFO:     func(Config) Policy { return ElasticFIFO{} },
	NameSRJF:            func(Config) Policy { return SRJF{} },
	NameElasticSRJF:     func(Config) Policy { return ElasticSRJF{} },
	NameTiresias:        func(c Config) Policy { return Tiresias{Config: c.Tiresias} },
	NameElasticTiresias: func(c Config) Policy { return ElasticTiresias{Config: c.Tiresias} },
	NameFfDLOptimizer:   func(Config) Policy { return FfDLOptimizer{} },
	NameAFSL:            func(Config) Policy { return AFSL{} },
	NameHeSRPT:          func(c Config) Policy { return HeSRPT{Config: c.HeSRPT} },
}

// names lists the canonical names in documentation order.
var names = []string{
	NameFIFO, NameElasticFIFO, NameSRJF, NameElasticSRJF,
	NameTiresias, NameElasticTiresias, NameFfDLOptimizer, NameAFSL, NameHeSRPT,
}

// aliases maps normalised spellings (lower case, no '-', '_' or spaces) to
// canonical names. Every canonical name is its own alias; the rest are the
// spellings of the original scheduler and of the papers.
var aliases = func() map[string]string {
	m := map[string]string{
		"efifo":     NameElasticFIFO,
		"esrjf":     NameElasticSRJF,
		"srtf":      NameSRJF,
		"etiresias": NameElasticTiresias,
		"tiresiasl": NameTiresias,
		"ffdl":      NameFfDLOptimizer,
		"afs":       NameAFSL,
		"voda":      NameHeSRPT,
	}
	for _, n := range names {
		m[normalise(n)] = n
	}
	return m
}()

func normalise(name string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', ' ':
			return -1
		}
		return r
	}, strings.ToLower(strings.TrimSpace(name)))
}

// Names returns the canonical policy names.
func Names() []string {
	return append([]string(nil), names...)
}

// Canonical resolves a user-supplied policy name (any case; the original's
// spellings and a few common aliases accepted) to its canonical form.
func Canonical(name string) (string, error) {
	if c, ok := aliases[normalise(name)]; ok {
		return c, nil
	}
	return "", fmt.Errorf("unknown policy %q: valid policies are %s", name, strings.Join(names, ", "))
}

// New returns the named policy configured with cfg; a section of cfg left
// at its zero value means the defaults. The Tiresias settings are
// validated here so a bad configuration fails before it schedules anything.
func New(name string, cfg Config) (Policy, error) {
	c, err := Canonical(name)
	if err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if c == NameTiresias || c == NameElasticTiresias {
		if err := cfg.Tiresias.Validate(); err != nil {
			return nil, fmt.Errorf("policy %s: %w", c, err)
		}
	}
	return constructors[c](cfg), nil
}

// Rigid reports whether a policy (by canonical name) runs jobs only at
// their requested size: its jobs want no more than that.
func Rigid(name string) bool {
	switch name {
	case NameFIFO, NameSRJF, NameTiresias:
		return true
	}
	return false
}
