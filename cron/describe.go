package cron

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Describe says when the item fires, in words for the lorry page, e.g.
// "03:00 every day, Europe/London; skipped if DST jumps over it, once (the
// earlier) if DST repeats it; fires up to 1h late".
func (it *Item) Describe() string {
	late := "; fires up to " + seconds(it.maxShift) + " late"
	if it.epoch {
		return it.describeEpoch() + late
	}
	var b strings.Builder
	b.WriteString(it.describeTime())
	if days := it.describeDays(); days != "" {
		b.WriteString(" " + days)
	}
	b.WriteString(", " + it.loc.String() + "; ")
	switch it.skip {
	case Skip:
		b.WriteString("skipped if DST jumps over it, ")
	case Unskip:
		b.WriteString("a second before the jump if DST jumps over it, ")
	}
	switch it.repeat {
	case RepeatBoth:
		b.WriteString("twice if DST repeats it")
	case RepeatEarly:
		b.WriteString("once (the earlier) if DST repeats it")
	case RepeatLate:
		b.WriteString("once (the later) if DST repeats it")
	}
	return b.String() + late
}

func (it *Item) describeEpoch() string {
	s := &it.sel[epochIndex]
	at := func(v int64) string { return time.Unix(v, 0).UTC().Format("2006-01-02 15:04:05 UTC") }
	if v, ok := s.single(); ok {
		return "once, at " + at(v)
	}
	if s.list != nil {
		return "at " + joinMapped(s.list, at)
	}
	d := "every " + seconds(s.period)
	if s.start != 0 {
		d += " from " + at(s.start)
	}
	if s.end != maxEpoch {
		d += " until " + at(s.end)
	}
	return d
}

// describeTime says at which times of the day the item fires.
func (it *Item) describeTime() string {
	mi, hr := &it.sel[minuteIndex], &it.sel[hourIndex]
	m, oneMinute := mi.single()
	if oneMinute && (hr.list != nil || hr.start == hr.end) {
		return joinMapped(values(hr), func(h int64) string { return fmt.Sprintf("%02d:%02d", h, m) })
	}
	var minutes string
	switch {
	case oneMinute:
		minutes = fmt.Sprintf("every hour at :%02d", m)
	case mi.list == nil && mi.start == 0 && mi.end == 59 && 60%mi.period == 0:
		minutes = "every minute"
		if mi.period > 1 {
			minutes = fmt.Sprintf("every %d minutes", mi.period)
		}
	default:
		minutes = "at minutes " + minuteField.format(mi)
	}
	if hr.given {
		return minutes + " in hours " + hourField.format(hr)
	}
	return minutes
}

// describeDays says on which days the item fires.
func (it *Item) describeDays() string {
	var parts []string
	switch {
	case it.sel[dowIndex].given:
		parts = append(parts, "on "+dowField.format(&it.sel[dowIndex]))
	case it.sel[domIndex].given:
		parts = append(parts, "on day "+domField.format(&it.sel[domIndex])+" of the month")
	case !it.sel[monthIndex].given && !it.sel[yearIndex].given && (it.sel[hourIndex].given || len(values(&it.sel[minuteIndex])) == 1):
		parts = append(parts, "every day")
	}
	if it.sel[monthIndex].given {
		parts = append(parts, "in "+monthField.format(&it.sel[monthIndex]))
	}
	if it.sel[yearIndex].given {
		parts = append(parts, "in "+yearField.format(&it.sel[yearIndex]))
	}
	return strings.Join(parts, " ")
}

// format writes a selector's values as a list or a range, with short
// names where the field has them.
func (f *field) format(s *selector) string {
	show := func(v int64) string {
		if f.names != nil {
			n := f.names[v-f.lo][:3]
			return strings.ToUpper(n[:1]) + n[1:]
		}
		return strconv.FormatInt(v, 10)
	}
	if s.list != nil {
		return joinMapped(s.list, show)
	}
	r := show(s.start) + "-" + show(s.end)
	if s.period > 1 {
		r += fmt.Sprintf(" every %d", s.period)
	}
	return r
}

// values lists a day-sized selector's values (at most 60 of them).
func values(s *selector) []int64 {
	if s.list != nil {
		return s.list
	}
	var vs []int64
	for v := s.start; v <= s.end; v += s.period {
		vs = append(vs, v)
	}
	return vs
}

func joinMapped(vs []int64, f func(int64) string) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = f(v)
	}
	switch len(out) {
	case 1:
		return out[0]
	case 2:
		return out[0] + " and " + out[1]
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}

// seconds writes a number of seconds as a short duration: "90s", "5m",
// "1h30m", "2d".
func seconds(n int64) string {
	if n > 0 && n%86400 == 0 {
		return strconv.FormatInt(n/86400, 10) + "d"
	}
	s := (time.Duration(n) * time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
