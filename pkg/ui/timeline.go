package ui

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
	"time"
)

// Mark kinds: what happened to a job at a moment of its timeline.
const (
	MarkSubmit  = "submit"
	MarkStart   = "start"
	MarkScale   = "scale"
	MarkPreempt = "preempt"
	MarkMigrate = "migrate"
	MarkRestart = "restart"
	MarkEnd     = "end"
	MarkFail    = "fail"
)

// Step is a value that holds from At until the next step.
type Step struct {
	At    time.Time
	Value int
}

// Mark is an event on a timeline.
type Mark struct {
	At    time.Time
	Kind  string
	Title string
}

// Row is one line of a timeline: a step curve (workers or GPUs over time)
// and marks.
type Row struct {
	Label string
	// Href, if set, links the label.
	Href  string
	Steps []Step
	Marks []Mark
}

// Timeline is rows over a common time span, drawn by SVG.
type Timeline struct {
	Start, End time.Time
	Rows       []Row
	// Max is the value drawn at full row height; 0 means the largest step.
	Max int
	// RowHeight is each row's height in pixels; 0 means 16.
	RowHeight int
	// Unit names the values in tooltips ("workers", "GPUs").
	Unit string
	// Clock labels the axis with times of day (UTC) instead of the time
	// since Start.
	Clock bool
}

// Layout of the drawings, in pixels.
const (
	svgWidth    = 880
	labelWidth  = 150
	axisHeight  = 22
	markRadius  = 4
	defaultRowH = 16
)

// SVG draws the timeline as an inline SVG element: each row's curve as a
// filled step area scaled to Max, its marks as symbols with tooltips, and
// a time axis. The output depends only on t, so it can be compared with
// golden files.
func (t Timeline) SVG() template.HTML {
	rowH := t.RowHeight
	if rowH <= 0 {
		rowH = defaultRowH
	}
	top := t.Max
	for _, r := range t.Rows {
		for _, s := range r.Steps {
			top = max(top, s.Value)
		}
	}
	top = max(top, 1)
	span := t.End.Sub(t.Start).Seconds()
	if span <= 0 {
		span = 1
	}
	plotW := float64(svgWidth - labelWidth - 10)
	x := func(at time.Time) float64 {
		f := at.Sub(t.Start).Seconds() / span
		return float64(labelWidth) + math.Min(math.Max(f, 0), 1)*plotW
	}
	height := len(t.Rows)*rowH + axisHeight
	unit := t.Unit
	if unit == "" {
		unit = "workers"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="timeline">`, svgWidth, height, svgWidth, height)
	for i, r := range t.Rows {
		y0 := float64(i * rowH)
		base := y0 + float64(rowH) - 1
		fmt.Fprintf(&b, `<g class="row" data-row="%s">`, html.EscapeString(r.Label))
		if i%2 == 1 {
			fmt.Fprintf(&b, `<rect class="band" x="0" y="%.1f" width="%d" height="%d"/>`, y0, svgWidth, rowH)
		}
		label := html.EscapeString(r.Label)
		if r.Href != "" {
			label = fmt.Sprintf(`<a href="%s">%s</a>`, html.EscapeString(r.Href), label)
		}
		fmt.Fprintf(&b, `<text class="label" x="4" y="%.1f">%s</text>`, y0+float64(rowH)*0.72, label)
		if len(r.Steps) > 0 {
			var p strings.Builder
			fmt.Fprintf(&p, "M%.1f %.1f", x(r.Steps[0].At), base)
			for k, s := range r.Steps {
				end := t.End
				if k+1 < len(r.Steps) {
					end = r.Steps[k+1].At
				}
				h := float64(s.Value) / float64(top) * float64(rowH-3)
				fmt.Fprintf(&p, "V%.1fH%.1f", base-h, x(end))
			}
			fmt.Fprintf(&p, "V%.1fZ", base)
			fmt.Fprintf(&b, `<path class="area" d="%s"/>`, p.String())
			for k, s := range r.Steps {
				if s.Value == 0 {
					continue
				}
				end := t.End
				if k+1 < len(r.Steps) {
					end = r.Steps[k+1].At
				}
				// An invisible box per step carries its tooltip.
				fmt.Fprintf(&b, `<rect class="hit" x="%.1f" y="%.1f" width="%.1f" height="%d"><title>%d %s from %s</title></rect>`,
					x(s.At), y0, math.Max(x(end)-x(s.At), 0.5), rowH, s.Value, unit, html.EscapeString(t.format(s.At)))
			}
		}
		for _, m := range r.Marks {
			cx, cy := x(m.At), y0+float64(rowH)/2
			fmt.Fprintf(&b, `<g class="mark %s" data-kind="%s">%s<title>%s %s</title></g>`,
				m.Kind, m.Kind, markShape(m.Kind, cx, cy), html.EscapeString(t.format(m.At)), html.EscapeString(m.Title))
		}
		b.WriteString(`</g>`)
	}
	axisY := len(t.Rows) * rowH
	fmt.Fprintf(&b, `<g class="axis"><line x1="%d" y1="%d" x2="%d" y2="%d"/>`, labelWidth, axisY, svgWidth-10, axisY)
	for _, tick := range ticks(span) {
		at := t.Start.Add(time.Duration(tick * float64(time.Second)))
		tx := x(at)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d"/><text x="%.1f" y="%d">%s</text>`,
			tx, axisY, tx, axisY+4, tx, axisY+16, html.EscapeString(t.tickLabel(at, tick)))
	}
	b.WriteString(`</g></svg>`)
	return template.HTML(b.String()) //nolint:gosec // built above from escaped text
}

// markShape is the symbol of a mark kind.
func markShape(kind string, cx, cy float64) string {
	r := float64(markRadius)
	switch kind {
	case MarkPreempt, MarkFail:
		return fmt.Sprintf(`<path d="M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f"/>`, cx-r, cy-r, cx+r, cy+r, cx-r, cy+r, cx+r, cy-r)
	case MarkScale:
		return fmt.Sprintf(`<path d="M%.1f %.1fL%.1f %.1fL%.1f %.1fZ"/>`, cx, cy-r, cx+r, cy+r, cx-r, cy+r)
	case MarkMigrate, MarkRestart:
		return fmt.Sprintf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, cx-r, cy-r, 2*r, 2*r)
	}
	return fmt.Sprintf(`<circle cx="%.1f" cy="%.1f" r="%.1f"/>`, cx, cy, r)
}

// format is a moment as a tooltip gives it.
func (t Timeline) format(at time.Time) string {
	if t.Clock {
		return at.UTC().Format("2006-01-02 15:04:05")
	}
	return "t=" + Duration(at.Sub(t.Start))
}

func (t Timeline) tickLabel(at time.Time, sec float64) string {
	if t.Clock {
		return at.UTC().Format("15:04:05")
	}
	return Duration(time.Duration(sec * float64(time.Second)))
}

// ticks are up to about eight round offsets, in seconds, within span.
func ticks(span float64) []float64 {
	steps := []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400, 7 * 86400}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if span/s <= 8 {
			step = s
			break
		}
	}
	for span/step > 8 {
		step *= 2
	}
	var out []float64
	for v := 0.0; v <= span+1e-9; v += step {
		out = append(out, v)
	}
	return out
}

// Duration formats a duration for people: 45s, 12m30s, 3h05m, 2d04h.
func Duration(d time.Duration) string {
	if d < 0 {
		return "-" + Duration(-d)
	}
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		if s%60 == 0 {
			return fmt.Sprintf("%dm", s/60)
		}
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
}

// Series is a step curve with the level it is measured against, for the
// utilisation view.
type Series struct {
	Steps    []Step
	Capacity int
}

// AreaSVG draws s as one tall row whose full height is the capacity: GPUs
// in use over time.
func (s Series) AreaSVG(start, end time.Time, unit string) template.HTML {
	t := Timeline{Start: start, End: end, Max: s.Capacity, RowHeight: 120, Unit: unit,
		Rows: []Row{{Label: fmt.Sprintf("%d %s", s.Capacity, unit), Steps: s.Steps}}}
	return t.SVG()
}
