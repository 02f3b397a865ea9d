package simulator

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// palette has one colour per policy, distinguishable in print.
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

type series struct {
	name string
	xs   []float64
	ys   []float64
	step bool // draw as a step function
}

// chart writes a line chart as SVG.
func chart(w io.Writer, title, xlabel, ylabel string, logX bool, ss []series) error {
	const width, height, left, right, top, bottom = 760.0, 440.0, 70.0, 180.0, 40.0, 50.0
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), 0.0, math.Inf(-1)
	for _, s := range ss {
		for i := range s.xs {
			x := s.xs[i]
			if logX {
				x = math.Log10(max(x, 1))
			}
			xmin, xmax = min(xmin, x), max(xmax, x)
			ymax = max(ymax, s.ys[i])
		}
	}
	if math.IsInf(xmin, 1) {
		xmin, xmax, ymax = 0, 1, 1
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	if ymax <= ymin {
		ymax = ymin + 1
	}
	px := func(x float64) float64 {
		if logX {
			x = math.Log10(max(x, 1))
		}
		return left + (x-xmin)/(xmax-xmin)*(width-left-right)
	}
	py := func(y float64) float64 { return height - bottom - (y-ymin)/(ymax-ymin)*(height-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="15">%s</text>`+"\n", left, escape(title))
	// Axes and ticks.
	fmt.Fprintf(&b, `<path d="M%.1f %.1f V%.1f H%.1f" stroke="black" fill="none"/>`+"\n", left, top, height-bottom, width-right)
	for i := 0; i <= 5; i++ {
		fy := ymin + (ymax-ymin)*float64(i)/5
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, py(fy)+4, tick(fy))
		fx := xmin + (xmax-xmin)*float64(i)/5
		label := fx
		if logX {
			label = math.Pow(10, fx)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", left+(fx-xmin)/(xmax-xmin)*(width-left-right), height-bottom+18, tick(label))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", (left+width-right)/2, height-12, escape(xlabel))
	fmt.Fprintf(&b, `<text x="16" y="%.1f" transform="rotate(-90 16 %.1f)" text-anchor="middle">%s</text>`+"\n", (top+height-bottom)/2, (top+height-bottom)/2, escape(ylabel))
	for i, s := range ss {
		colour := palette[i%len(palette)]
		var d strings.Builder
		for k := range s.xs {
			x, y := px(s.xs[k]), py(s.ys[k])
			switch {
			case k == 0:
				fmt.Fprintf(&d, "M%.1f %.1f", x, y)
			case s.step:
				fmt.Fprintf(&d, " H%.1f V%.1f", x, y)
			default:
				fmt.Fprintf(&d, " L%.1f %.1f", x, y)
			}
		}
		fmt.Fprintf(&b, `<path d="%s" stroke="%s" stroke-width="1.5" fill="none"/>`+"\n", d.String(), colour)
		ly := top + 14 + float64(i)*18
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="14" height="3" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`+"\n",
			width-right+12, ly-4, colour, width-right+32, ly, escape(s.name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func tick(v float64) string {
	switch {
	case math.Abs(v) >= 10000:
		return fmt.Sprintf("%.0fk", v/1000)
	case math.Abs(v) >= 100 || v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// PlotJCTCDF writes the distribution of job completion times, one curve per
// run (use runs of the same workload).
func PlotJCTCDF(w io.Writer, title string, results []Result) error {
	var ss []series
	for _, r := range results {
		jcts := make([]float64, len(r.Jobs))
		for i, j := range r.Jobs {
			jcts[i] = j.JCT
		}
		slices.Sort(jcts)
		s := series{name: r.Policy}
		for i, v := range jcts {
			s.xs = append(s.xs, v)
			s.ys = append(s.ys, float64(i+1)/float64(len(jcts)))
		}
		ss = append(ss, s)
	}
	return chart(w, title, "job completion time (s, log scale)", "fraction of jobs", true, ss)
}

// PlotGPUs writes the GPUs allocated over time, one curve per run.
func PlotGPUs(w io.Writer, title string, results []Result) error {
	var ss []series
	for _, r := range results {
		s := series{name: r.Policy, step: true}
		for _, p := range r.Timeline {
			s.xs = append(s.xs, p.T/3600)
			s.ys = append(s.ys, float64(p.GPUs))
		}
		ss = append(ss, s)
	}
	return chart(w, title, "time (h)", "GPUs allocated", false, ss)
}
