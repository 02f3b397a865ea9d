package algorithm_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/pkg/algorithm"
)

func TestParseParamsSetsWhatItNames(t *testing.T) {
	base := algorithm.DefaultConfig()
	c, err := algorithm.ParseParams(base, []string{
		"hesrpt.exponent=0.2", " HeSRPT.Aging = 4h ", "hesrpt.restart-cost=90", "hesrpt.horizon=30m", "hesrpt.hysteresis=0",
		"tiresias.thresholds=16h, 32h", "tiresias.promote-knob=0", "tiresias.service=Total", "tiresias.compaction-threshold=3",
	})
	if err != nil {
		t.Fatal(err)
	}
	wantH := algorithm.HeSRPTConfig{Exponent: 0.2, RestartCost: 90, Hysteresis: 0, Horizon: 1800, Aging: 4 * 3600}
	if c.HeSRPT != wantH {
		t.Errorf("HeSRPT %+v, want %+v", c.HeSRPT, wantH)
	}
	wantT := algorithm.TiresiasConfig{Thresholds: []float64{57600, 115200}, Service: algorithm.ServiceTotal, CompactionThreshold: 3}
	if !reflect.DeepEqual(c.Tiresias, wantT) {
		t.Errorf("Tiresias %+v, want %+v", c.Tiresias, wantT)
	}
	if !reflect.DeepEqual(base, algorithm.DefaultConfig()) {
		t.Errorf("base changed to %+v", base)
	}
	// What is not named keeps the base's value.
	c, err = algorithm.ParseParams(algorithm.Config{Tiresias: algorithm.PolluxArtifactTiresias()}, []string{"hesrpt.exponent=1"})
	if err != nil {
		t.Fatal(err)
	}
	if want := algorithm.DefaultHeSRPT(); c.HeSRPT.Aging != want.Aging || c.HeSRPT.Exponent != 1 {
		t.Errorf("HeSRPT %+v: want the defaults but an exponent of 1", c.HeSRPT)
	}
	if !reflect.DeepEqual(c.Tiresias, algorithm.PolluxArtifactTiresias()) {
		t.Errorf("Tiresias %+v, want the base's", c.Tiresias)
	}
}

// Bad settings are refused with a message naming them, all at once, and
// the base comes back unchanged.
func TestParseParamsRefusesBadSettings(t *testing.T) {
	cases := map[string][]string{
		"hesrpt.exponent":            {"hesrpt.exponent=-1"},
		"want a number":              {"hesrpt.exponent=NaN"},
		"want NAME=VALUE":            {"hesrpt.exponent"},
		`"hesrpt.exp"`:               {"hesrpt.exp=1"},
		"valid parameters are":       {"nope=1"},
		"given twice":                {"hesrpt.aging=1h", "HESRPT.AGING=2h"},
		"a positive duration":        {"hesrpt.horizon=0"},
		"hesrpt.aging=soon":          {"hesrpt.aging=soon"},
		"must increase":              {"tiresias.thresholds=2h,1h"},
		"want since-start":           {"tiresias.service=wall"},
		"needs the since-start":      {"tiresias.service=total"},
		"want a whole number":        {"tiresias.compaction-threshold=2.5"},
		"hesrpt.restart-cost=-1s":    {"hesrpt.restart-cost=-1s"},
		"tiresias.promote-knob=Inf":  {"tiresias.promote-knob=Inf"},
		"policy parameter \"=0.2\"":  {"=0.2"},
		"policy parameter \"a.b=\"":  {"a.b="},
		"hesrpt.hysteresis=x":        {"hesrpt.hysteresis=x", "hesrpt.exponent=2"},
		"tiresias.thresholds=1h,,2h": {"tiresias.thresholds=1h,,2h"},
	}
	for want, specs := range cases {
		base := algorithm.DefaultConfig()
		c, err := algorithm.ParseParams(base, specs)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", specs, err, want)
		}
		if !reflect.DeepEqual(c, base) {
			t.Errorf("%q: got %+v, want the base back", specs, c)
		}
	}
	_, err := algorithm.ParseParams(algorithm.DefaultConfig(), []string{"a=1", "hesrpt.exponent=x"})
	if err == nil || !strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), "hesrpt.exponent=x") {
		t.Errorf("two bad settings: %v, want both named", err)
	}
}

// Every parameter reads back what it was set to, and its default is the
// policies' default.
func TestParamsRoundTrip(t *testing.T) {
	d := algorithm.DefaultConfig()
	for _, p := range algorithm.Params() {
		if p.Default == "" || p.Help == "" || len(p.Policies) == 0 {
			t.Errorf("%s: default %q, help %q, policies %v", p.Name, p.Default, p.Help, p.Policies)
		}
		for _, pol := range p.Policies {
			if _, err := algorithm.Canonical(pol); err != nil {
				t.Errorf("%s: %v", p.Name, err)
			}
		}
		c, err := algorithm.ParseParams(d, []string{p.Name + "=" + p.Default})
		if err != nil {
			t.Errorf("%s=%s: %v", p.Name, p.Default, err)
		}
		if !reflect.DeepEqual(c, d) {
			t.Errorf("%s=%s changed the defaults: %+v", p.Name, p.Default, c)
		}
	}
	c, err := algorithm.ParseParams(d, []string{"hesrpt.exponent=0.25", "tiresias.thresholds=100,7200", "hesrpt.restart-cost=1.5"})
	if err != nil {
		t.Fatal(err)
	}
	got := c.Changed("")
	want := []string{"hesrpt.exponent=0.25", "hesrpt.restart-cost=1.5", "tiresias.thresholds=100,7200"}
	if !slices.Equal(got, want) {
		t.Errorf("Changed(\"\") = %v, want %v", got, want)
	}
	if got := c.Changed("tiresias"); !slices.Equal(got, want[2:]) {
		t.Errorf("Changed(tiresias) = %v, want %v", got, want[2:])
	}
	if got := c.Changed(algorithm.NameFIFO); len(got) != 0 {
		t.Errorf("Changed(FIFO) = %v, want none", got)
	}
	if got := (algorithm.Config{}).Changed(""); len(got) != 0 {
		t.Errorf("the zero Config reads as changed: %v", got)
	}
}

// A section left at its zero value means the defaults, and New builds the
// policy a Config names.
func TestConfigWithDefaults(t *testing.T) {
	if got := (algorithm.Config{}).WithDefaults(); !reflect.DeepEqual(got, algorithm.DefaultConfig()) {
		t.Errorf("zero Config: %+v", got)
	}
	c := algorithm.Config{HeSRPT: algorithm.HeSRPTConfig{Exponent: 1, Horizon: 60}}
	w := c.WithDefaults()
	if w.HeSRPT != c.HeSRPT || !reflect.DeepEqual(w.Tiresias, algorithm.DefaultTiresias()) {
		t.Errorf("WithDefaults replaced a set section or kept a zero one: %+v", w)
	}
	w.Tiresias.Thresholds[0] = 1
	if algorithm.DefaultTiresias().Thresholds[0] == 1 {
		t.Error("WithDefaults shares the default thresholds")
	}
	p, err := algorithm.New("voda", c)
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := p.(algorithm.HeSRPT); !ok || h.Config != c.HeSRPT {
		t.Errorf("New gave %#v", p)
	}
}
