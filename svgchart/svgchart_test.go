package svgchart

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

var legend = Legend{Order: []string{"ok", "bad"}, Styles: map[string]Style{
	"ok":  {Label: "good", Fill: "#4caf7d"},
	"bad": {Label: "bad <one>", Fill: "#a1141a", Pattern: "hatch"},
}}

// elem is an element of the drawn markup.
type elem struct {
	name  string
	attrs map[string]string
	text  string // of its <title> child, if any
}

// parse reads the chart as XML, which it must be, and lists its elements.
func parse(t *testing.T, html string) []elem {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(html))
	var out []elem
	var stack []int
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("the chart is not well formed: %v\n%s", err, html)
			}
			return out
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := elem{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			out = append(out, e)
			stack = append(stack, len(out)-1)
		case xml.CharData:
			if n := len(stack); n >= 2 && out[stack[n-1]].name == "title" {
				out[stack[n-2]].text += string(tok)
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
}

func bars(es []elem) []elem {
	var out []elem
	for _, e := range es {
		if e.name == "rect" && strings.HasPrefix(e.attrs["class"], "bar ") {
			out = append(out, e)
		}
	}
	return out
}

func float(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return v
}

func TestStrip(t *testing.T) {
	s := Strip{ID: "runs", Title: "Last runs", Slots: 10, Legend: legend, Summary: "3 runs",
		Bars:   []Bar{{Value: 40, Key: "ok", Title: "run 1"}, {Value: 100, Key: "bad", Title: "run 2 <failed>"}, {Value: 0, Key: "ok", Title: "run 3"}},
		Marks:  []Mark{{Before: 1, Key: "backoff", Label: "backoff", Title: "backoff began"}},
		Format: func(v float64) string { return fmt.Sprintf("%gs", v) }}
	html := string(s.HTML())
	es := parse(t, html)
	bs := bars(es)
	if len(bs) != 3 {
		t.Fatalf("strip has %d bars; want 3", len(bs))
	}
	h0, h1, h2 := float(t, bs[0].attrs["height"]), float(t, bs[1].attrs["height"]), float(t, bs[2].attrs["height"])
	if h1 != 120 || h0 != 48 {
		t.Errorf("bars of 40 and 100 are %g and %g high; want 48 and 120, in proportion", h0, h1)
	}
	if h2 <= 0 || h2 > 4 {
		t.Errorf("a bar of no time is %g high; want a sliver that shows", h2)
	}
	for i, want := range []struct{ class, fill, title string }{
		{"bar k-ok", "#4caf7d", "run 1"}, {"bar k-bad", "url(#runs-bad)", "run 2 <failed>"}, {"bar k-ok", "#4caf7d", "run 3"},
	} {
		if got := bs[i].attrs; got["class"] != want.class || got["fill"] != want.fill || bs[i].text != want.title {
			t.Errorf("bar %d: class %q fill %q title %q; want %q %q %q", i, got["class"], got["fill"], bs[i].text, want.class, want.fill, want.title)
		}
	}
	// Bars stand on the same base line, left to right in order.
	if y0, y1 := float(t, bs[0].attrs["y"])+h0, float(t, bs[1].attrs["y"])+h1; y0 != y1 {
		t.Errorf("bars end at %g and %g; want one base line", y0, y1)
	}
	if x0, x1 := float(t, bs[0].attrs["x"]), float(t, bs[1].attrs["x"]); x0 >= x1 {
		t.Errorf("bar 0 at x %g, bar 1 at %g; want left to right", x0, x1)
	}
	var pattern, mark, svg bool
	for _, e := range es {
		switch {
		case e.name == "pattern" && e.attrs["id"] == "runs-bad":
			pattern = true
		case e.name == "g" && e.attrs["class"] == "mark mark-backoff":
			mark = e.text == "backoff began"
		case e.name == "line" && e.attrs["stroke-dasharray"] == "4 3":
			// The mark's line stands between bars 0 and 1.
			x := float(t, e.attrs["x1"])
			if x <= float(t, bs[0].attrs["x"]) || x >= float(t, bs[1].attrs["x"]) {
				t.Errorf("backoff mark at x %g; want between bars 0 and 1", x)
			}
		case e.name == "svg" && e.attrs["role"] == "img":
			svg = e.attrs["width"] == "100%" && strings.HasPrefix(e.attrs["viewBox"], "0 0 600 ")
		}
	}
	if !pattern || !mark || !svg {
		t.Errorf("pattern of bad %v, backoff mark %v, scaled svg %v; want all", pattern, mark, svg)
	}
	for _, want := range []string{`<figcaption>3 runs</figcaption>`, `bad &lt;one&gt;</li>`, `>100s</text>`} {
		if !strings.Contains(html, want) {
			t.Errorf("strip lacks %s:\n%s", want, html)
		}
	}
}

func TestStacked(t *testing.T) {
	s := Stacked{ID: "hours", Title: "Jobs per hour", Legend: legend, Columns: []Column{
		{Label: "00:00", Title: "00:00: 3 jobs", Segments: []Bar{{Value: 2, Key: "ok"}, {Value: 1, Key: "bad"}}},
		{Title: "01:00: none", Segments: []Bar{{Value: 0, Key: "ok"}, {Value: 0, Key: "bad"}}},
		{Title: "02:00: 6 jobs", Segments: []Bar{{Value: 6, Key: "ok"}}},
	}}
	html := string(s.HTML())
	es := parse(t, html)
	bs := bars(es)
	if len(bs) != 3 {
		t.Fatalf("stacked chart has %d bars; want 3 (empty parts drawn not at all)", len(bs))
	}
	// The tallest column, 6, fills the height; the parts of the first
	// stack on each other.
	ok0, bad0, ok2 := bs[0], bs[1], bs[2]
	if h := float(t, ok2.attrs["height"]); h != 140 {
		t.Errorf("column of 6 is %g high; want 140", h)
	}
	if h0, h1 := float(t, ok0.attrs["height"]), float(t, bad0.attrs["height"]); fmt.Sprintf("%.2f %.2f", h0, h1) != "46.67 23.33" {
		t.Errorf("parts of 2 and 1 are %g and %g high; want 46.67 and 23.33", h0, h1)
	}
	if top, bottom := float(t, ok0.attrs["y"]), float(t, bad0.attrs["y"])+float(t, bad0.attrs["height"]); fmt.Sprintf("%.2f", top) != fmt.Sprintf("%.2f", bottom) {
		t.Errorf("the bad part ends at %g, the ok part starts at %g; want stacked", bottom, top)
	}
	if bad0.attrs["fill"] != "url(#hours-bad)" || ok0.attrs["fill"] != "#4caf7d" {
		t.Errorf("fills %q and %q; want the styles'", ok0.attrs["fill"], bad0.attrs["fill"])
	}
	var titles []string
	for _, e := range es {
		if e.name == "g" && e.attrs["class"] == "column" {
			titles = append(titles, e.text)
		}
	}
	if strings.Join(titles, "|") != "00:00: 3 jobs|01:00: none|02:00: 6 jobs" {
		t.Errorf("column titles %q", titles)
	}
	if !strings.Contains(html, `>00:00</text>`) {
		t.Errorf("the first column's label is missing:\n%s", html)
	}
}

func TestLines(t *testing.T) {
	s := Lines{ID: "waits", Title: "Waits", XMin: 0, XMax: 100, Ticks: []Tick{{X: 0, Label: "start"}},
		Lines: []Line{
			{Name: "default", Title: "default: at most 50", Pieces: [][]Point{{{0, 10}, {10, 50}}, {{80, 0}}}},
			{Name: "slow", Title: "slow", Pieces: [][]Point{{{0, 25}, {100, 25}}}},
		}}
	es := parse(t, string(s.HTML()))
	var lines []elem
	for _, e := range es {
		if e.name == "polyline" {
			lines = append(lines, e)
		}
	}
	if len(lines) != 3 {
		t.Fatalf("%d polylines; want 3: two pieces of default and one of slow", len(lines))
	}
	// The top is 50 high at y 22: the wait of 25 is half way.
	if got := lines[2].attrs["points"]; got != "4,92 596,92" {
		t.Errorf("slow's points %q; want 4,92 596,92", got)
	}
	if lines[0].attrs["stroke"] != lines[1].attrs["stroke"] || lines[0].attrs["stroke"] == lines[2].attrs["stroke"] ||
		lines[0].attrs["stroke-dasharray"] == lines[2].attrs["stroke-dasharray"] {
		t.Errorf("strokes %v, %v, %v; want one queue one colour, and two queues apart in colour and dashes", lines[0].attrs, lines[1].attrs, lines[2].attrs)
	}
}

// TestTicksStayOnTheChart puts time labels at every place along the axis
// of both charts that have them: one near an edge starts or ends there,
// pointing inwards, so that however large its text is drawn none of it
// lies off the chart; the others are centred on their place.
func TestTicksStayOnTheChart(t *testing.T) {
	var lines Lines
	lines.XMin, lines.XMax = 0, 24
	var stacked Stacked
	for h := 0; h <= 24; h++ {
		lines.Ticks = append(lines.Ticks, Tick{X: float64(h), Label: fmt.Sprintf("%dh ago", 24-h)})
		if h < 24 {
			stacked.Columns = append(stacked.Columns, Column{Label: fmt.Sprint(h)})
		}
	}
	for name, html := range map[string]string{"lines": string(lines.HTML()), "stacked": string(stacked.HTML())} {
		n := 0
		for _, e := range parse(t, html) {
			if e.name != "text" || e.attrs["class"] != "tick" {
				continue
			}
			n++
			x, anchor := float(t, e.attrs["x"]), e.attrs["text-anchor"]
			switch {
			case x < width/8 && !(anchor == "start" && x >= padSide):
				t.Errorf("%s: a label at %g near the left edge is anchored %s", name, x, anchor)
			case x > width-width/8 && !(anchor == "end" && x <= width-padSide):
				t.Errorf("%s: a label at %g near the right edge is anchored %s", name, x, anchor)
			case x >= width/8 && x <= width-width/8 && anchor != "middle":
				t.Errorf("%s: a label at %g is anchored %s; want middle", name, x, anchor)
			}
		}
		if n < 24 {
			t.Errorf("%s: %d labels; want one for each place", name, n)
		}
	}
}
