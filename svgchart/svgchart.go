// Package svgchart draws the small charts of the web pages as inline SVG.
// They are made on the server, so they read with scripts off and need no
// asset of their own; their viewBox scales them to any width. Colours
// differ in lightness and in pattern as well as in hue, every mark carries
// a <title> for hover text, and each chart comes with a text summary for
// those who do not see it.
package svgchart

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
)

// The drawing area, in user units. The pages scale it to their width.
const (
	width   = 600
	padTop  = 22 // room for the value axis label and the marks' labels
	padSide = 4
	padAxis = 22 // room for the time labels under the bars
)

// Style is how the bars of one kind (an outcome, say) are drawn.
type Style struct {
	Label string // the legend's word for it
	Fill  string // a colour, as SVG takes it
	// Pattern is drawn in white over Fill: "" (none), "hatch",
	// "cross", "dots" or "stripes". Two kinds whose colours a reader
	// cannot tell apart still differ in it.
	Pattern string
}

// Bar is one bar, or one part of a stacked bar.
type Bar struct {
	Value float64
	Key   string // the Style it is drawn in
	Title string // hover text
}

// Mark is a labelled line drawn just before the bar at index Before.
type Mark struct {
	Before int
	Key    string // "mark-KEY" is its class
	Label  string
	Title  string
}

// Legend is the kinds of bar a chart uses, in the order it lists them.
type Legend struct {
	Order  []string
	Styles map[string]Style
}

// fill is the fill of a bar of kind key in chart id.
func (l Legend) fill(id, key string) string {
	st := l.Styles[key]
	if st.Pattern == "" {
		return st.Fill
	}
	return "url(#" + id + "-" + key + ")"
}

// defs are the patterns of the kinds that have one.
func (l Legend) defs(b *strings.Builder, id string) {
	b.WriteString("<defs>")
	for _, key := range l.Order {
		st := l.Styles[key]
		if st.Pattern == "" {
			continue
		}
		fmt.Fprintf(b, `<pattern id="%s-%s" width="8" height="8" patternUnits="userSpaceOnUse"><rect width="8" height="8" fill="%s"/>`,
			id, key, esc(st.Fill))
		switch st.Pattern {
		case "hatch":
			b.WriteString(`<path d="M-2,2 l4,-4 M0,8 l8,-8 M6,10 l4,-4" stroke="#fff" stroke-width="1.6"/>`)
		case "cross":
			b.WriteString(`<path d="M-2,2 l4,-4 M0,8 l8,-8 M6,10 l4,-4 M-2,6 l4,4 M0,0 l8,8 M6,-2 l4,4" stroke="#fff" stroke-width="1.2"/>`)
		case "dots":
			b.WriteString(`<circle cx="4" cy="4" r="1.8" fill="#fff"/>`)
		case "stripes":
			b.WriteString(`<path d="M0,4 h8" stroke="#fff" stroke-width="2"/>`)
		}
		b.WriteString("</pattern>")
	}
	b.WriteString("</defs>")
}

// html is the legend as a list, each entry with a swatch drawn with the
// chart's own patterns; only the kinds in used are listed.
func (l Legend) html(b *strings.Builder, id string, used map[string]bool) {
	b.WriteString(`<ul class="legend">`)
	for _, key := range l.Order {
		if !used[key] {
			continue
		}
		fmt.Fprintf(b, `<li><svg class="swatch" viewBox="0 0 16 16" width="16" height="16" aria-hidden="true"><rect width="16" height="16" fill="%s" stroke="#444" stroke-width="1"/></svg>%s</li>`,
			esc(l.fill(id, key)), esc(l.Styles[key].Label))
	}
	b.WriteString("</ul>")
}

// Strip is a row of bars of equal width, one per slot from the left: the
// last runs of a lorry, say.
type Strip struct {
	ID    string // unique on the page; names its patterns
	Title string // what the chart shows, for readers that do not see it
	Slots int    // places for bars; fewer bars leave the right empty
	Bars  []Bar
	Marks []Mark
	Legend
	// Format writes a value for the axis label.
	Format  func(float64) string
	Summary string
	Height  int // of the bars' area; 0 is 120
}

// HTML draws the strip.
func (s Strip) HTML() template.HTML {
	h := s.Height
	if h == 0 {
		h = 120
	}
	slots := max(s.Slots, len(s.Bars), 1)
	top := 0.0
	for _, bar := range s.Bars {
		top = max(top, bar.Value)
	}
	var b strings.Builder
	open(&b, s.ID, s.Title, h+padTop+6)
	s.Legend.defs(&b, s.ID)
	axis(&b, top, s.Format, h)
	slot := float64(width-2*padSide) / float64(slots)
	used := map[string]bool{}
	b.WriteString(`<g class="bars">`)
	for i, bar := range s.Bars {
		used[bar.Key] = true
		// Every run shows, even one that took no time.
		bh := max(height(bar.Value, top, h), 3)
		fmt.Fprintf(&b, `<rect class="bar k-%s" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`,
			esc(bar.Key), num(padSide+float64(i)*slot+slot*0.1), num(float64(padTop+h)-bh), num(slot*0.8), num(bh),
			esc(s.Legend.fill(s.ID, bar.Key)), esc(bar.Title))
	}
	b.WriteString(`</g>`)
	for _, m := range s.Marks {
		x := padSide + float64(m.Before)*slot
		anchor := "start"
		if m.Before > slots/2 {
			anchor = "end"
		}
		fmt.Fprintf(&b, `<g class="mark mark-%s"><title>%s</title><line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#1c2430" stroke-width="1.5" stroke-dasharray="4 3"/><text x="%s" y="%d" text-anchor="%s">%s</text></g>`,
			esc(m.Key), esc(m.Title), num(x), padTop-4, num(x), padTop+h, num(x), padTop-8, anchor, esc(m.Label))
	}
	closeSVG(&b, h+padTop)
	s.Legend.html(&b, s.ID, used)
	caption(&b, s.Summary)
	return template.HTML(b.String())
}

// Column is one stacked bar: an hour's jobs, say.
type Column struct {
	Label    string // shown under it; "" for none
	Title    string // hover text of the whole column
	Segments []Bar  // from the bottom up
}

// Stacked is a row of stacked bars.
type Stacked struct {
	ID, Title string
	Columns   []Column
	Legend
	Format  func(float64) string
	Summary string
	Height  int // 0 is 140
}

// HTML draws the stacked bars.
func (s Stacked) HTML() template.HTML {
	h := s.Height
	if h == 0 {
		h = 140
	}
	top := 0.0
	for _, c := range s.Columns {
		sum := 0.0
		for _, seg := range c.Segments {
			sum += seg.Value
		}
		top = max(top, sum)
	}
	var b strings.Builder
	open(&b, s.ID, s.Title, h+padTop+padAxis)
	s.Legend.defs(&b, s.ID)
	axis(&b, top, s.Format, h)
	slot := float64(width-2*padSide) / float64(max(len(s.Columns), 1))
	used := map[string]bool{}
	b.WriteString(`<g class="bars">`)
	for i, c := range s.Columns {
		x := padSide + float64(i)*slot
		fmt.Fprintf(&b, `<g class="column"><title>%s</title>`, esc(c.Title))
		y := float64(padTop + h)
		for _, seg := range c.Segments {
			if seg.Value <= 0 {
				continue
			}
			used[seg.Key] = true
			bh := height(seg.Value, top, h)
			y -= bh
			fmt.Fprintf(&b, `<rect class="bar k-%s" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`,
				esc(seg.Key), num(x+slot*0.1), num(y), num(slot*0.8), num(bh), esc(s.Legend.fill(s.ID, seg.Key)), esc(seg.Title))
		}
		b.WriteString(`</g>`)
		if c.Label != "" {
			tick(&b, x+slot/2, padTop+h+17, c.Label)
		}
	}
	b.WriteString(`</g>`)
	closeSVG(&b, h+padTop)
	s.Legend.html(&b, s.ID, used)
	caption(&b, s.Summary)
	return template.HTML(b.String())
}

// Point is a point of a line.
type Point struct{ X, Y float64 }

// Line is one series of a line chart, in pieces where it has gaps.
type Line struct {
	Name   string
	Title  string // hover text
	Pieces [][]Point
}

// Tick is a label on the time axis.
type Tick struct {
	X     float64
	Label string
}

// Lines draws series over a shared X range, each in its own colour and
// dash pattern.
type Lines struct {
	ID, Title  string
	XMin, XMax float64
	Ticks      []Tick
	Lines      []Line
	Format     func(float64) string
	Summary    string
	Height     int // 0 is 140
}

// lineStyles tell the lines apart by colour, lightness and dashes.
var lineStyles = []struct{ colour, dash string }{
	{"#0a4d8c", ""}, {"#c45a00", "8 4"}, {"#2a8a4a", "2 3"}, {"#7b3294", "10 3 2 3"},
	{"#1c2430", "4 4"}, {"#a1141a", "1 2"},
}

// HTML draws the lines.
func (s Lines) HTML() template.HTML {
	h := s.Height
	if h == 0 {
		h = 140
	}
	top := 0.0
	for _, l := range s.Lines {
		for _, piece := range l.Pieces {
			for _, p := range piece {
				top = max(top, p.Y)
			}
		}
	}
	var b strings.Builder
	open(&b, s.ID, s.Title, h+padTop+padAxis)
	axis(&b, top, s.Format, h)
	span := s.XMax - s.XMin
	if span <= 0 {
		span = 1
	}
	x := func(v float64) float64 { return padSide + (v-s.XMin)/span*float64(width-2*padSide) }
	y := func(v float64) float64 { return float64(padTop+h) - height(v, top, h) }
	for _, t := range s.Ticks {
		tick(&b, x(t.X), padTop+h+17, t.Label)
	}
	var legend strings.Builder
	legend.WriteString(`<ul class="legend">`)
	for i, l := range s.Lines {
		st := lineStyles[i%len(lineStyles)]
		dash := ""
		if st.dash != "" {
			dash = ` stroke-dasharray="` + st.dash + `"`
		}
		fmt.Fprintf(&b, `<g class="line"><title>%s</title>`, esc(l.Title))
		for _, piece := range l.Pieces {
			var pts []string
			for _, p := range piece {
				pts = append(pts, num(x(p.X))+","+num(y(p.Y)))
			}
			if len(pts) == 1 {
				// A lone sample still shows, as a short flat line.
				pts = append(pts, num(x(piece[0].X)+2)+","+num(y(piece[0].Y)))
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2.5"%s/>`, strings.Join(pts, " "), st.colour, dash)
		}
		b.WriteString(`</g>`)
		fmt.Fprintf(&legend, `<li><svg class="swatch" viewBox="0 0 28 16" width="28" height="16" aria-hidden="true"><line x1="0" y1="8" x2="28" y2="8" stroke="%s" stroke-width="3"%s/></svg>%s</li>`,
			st.colour, dash, esc(l.Name))
	}
	legend.WriteString(`</ul>`)
	closeSVG(&b, h+padTop)
	if len(s.Lines) > 0 {
		b.WriteString(legend.String())
	}
	caption(&b, s.Summary)
	return template.HTML(b.String())
}

// --- pieces every chart shares ---

// open starts the figure and its SVG, h user units high.
func open(b *strings.Builder, id, title string, h int) {
	fmt.Fprintf(b, `<figure class="chart" id="%s"><svg viewBox="0 0 %d %d" width="100%%" role="img" aria-labelledby="%s-title" preserveAspectRatio="xMinYMin meet"><title id="%s-title">%s</title>`,
		esc(id), width, h, esc(id), esc(id), esc(title))
}

// closeSVG draws the base line at y and ends the SVG.
func closeSVG(b *strings.Builder, y int) {
	fmt.Fprintf(b, `<line class="base" x1="0" y1="%d" x2="%d" y2="%d" stroke="#5a6474" stroke-width="1"/></svg>`, y, width, y)
}

// tick draws a label of the time axis at x. One near an edge starts or
// ends there rather than being centred on x, which at a phone's width,
// where the text is drawn large, would put half of it off the chart.
func tick(b *strings.Builder, x float64, y int, label string) {
	anchor := "middle"
	switch {
	case x < width/8:
		anchor, x = "start", padSide
	case x > width-width/8:
		anchor, x = "end", width-padSide
	}
	fmt.Fprintf(b, `<text class="tick" x="%s" y="%d" text-anchor="%s">%s</text>`, num(x), y, anchor, esc(label))
}

// axis draws the line of the top value and its label.
func axis(b *strings.Builder, top float64, format func(float64) string, h int) {
	if top <= 0 {
		return
	}
	label := num(top)
	if format != nil {
		label = format(top)
	}
	fmt.Fprintf(b, `<line class="grid" x1="0" y1="%d" x2="%d" y2="%d" stroke="#d8dde5" stroke-width="1"/><text class="axis" x="%d" y="%d" text-anchor="end">%s</text>`,
		padTop, width, padTop, width-padSide, padTop-6, esc(label))
}

func caption(b *strings.Builder, summary string) {
	if summary != "" {
		fmt.Fprintf(b, `<figcaption>%s</figcaption>`, esc(summary))
	}
	b.WriteString(`</figure>`)
}

// height is the height of a bar of value v where top is h high. A bar
// of a value above zero is never thinner than a line, so that it shows.
func height(v, top float64, h int) float64 {
	if top <= 0 || v <= 0 {
		return 0
	}
	return max(v/top*float64(h), 1.5)
}

// num writes a coordinate with at most two decimals.
func num(v float64) string {
	return strconv.FormatFloat(float64(int64(v*100+0.5))/100, 'f', -1, 64)
}

func esc(s string) string { return template.HTMLEscapeString(s) }
