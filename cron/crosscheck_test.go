package cron

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// The cross-check compares FirstMatch and LastMatch with a slow reference
// that works label by label, minute by minute, and finds each label's
// instants by trying every UTC offset seen nearby: none (a label DST
// jumps over), one, or two (a label DST repeats). It shares nothing with
// the stretch walk but the selectors' matches.

// crossZones have DST of an hour, of half an hour (Lord Howe), of two
// hours (Troll), at midnight (Sao Paulo), negative (Dublin), a day skipped
// (Apia, 2011), odd offsets (Kathmandu, St John's), and none (UTC).
var crossZones = []string{
	"US/Pacific", "Europe/London", "Australia/Lord_Howe", "Antarctica/Troll",
	"America/Sao_Paulo", "Europe/Dublin", "Pacific/Apia", "Asia/Kathmandu",
	"America/St_Johns", "UTC",
}

func labelMatches(it *Item, l int64) bool {
	tm := time.Unix(l, 0).UTC()
	y, mo, d := tm.Date()
	return l%60 == 0 &&
		it.sel[yearIndex].matches(int64(y)) &&
		it.sel[monthIndex].matches(int64(mo)) &&
		it.sel[domIndex].matches(int64(d)) &&
		it.sel[dowIndex].matches(int64(tm.Weekday())+1) &&
		it.sel[hourIndex].matches(int64(tm.Hour())) &&
		it.sel[minuteIndex].matches(int64(tm.Minute()))
}

// referenceEvents lists the item's events in [from, to], slowly.
func referenceEvents(it *Item, from, to int64) []int64 {
	loc := it.loc
	offs := map[int64]bool{}
	for u := from - 3*86400; u <= to+3*86400; u += 600 {
		offs[offsetAt(loc, u)] = true
	}
	minOff, maxOff := int64(1<<40), int64(-1<<40)
	for o := range offs {
		minOff, maxOff = min(minOff, o), max(maxOff, o)
	}
	label := func(u int64) int64 { return u + offsetAt(loc, u) }
	var evs []int64
	first := (from + minOff - 86400) / 60 * 60
	for l := first; l <= to+maxOff+86400; l += 60 {
		if !labelMatches(it, l) {
			continue
		}
		var us []int64
		for o := range offs {
			if u := l - o; offsetAt(loc, u) == o {
				us = append(us, u)
			}
		}
		slices.Sort(us)
		us = slices.Compact(us)
		switch {
		case len(us) == 0 && it.skip == Unskip:
			// The first instant whose label is past l is the jump.
			lo, hi := l-maxOff, l-minOff // label(lo) < l < label(hi)
			for hi-lo > 1 {
				mid := lo + (hi-lo)/2
				if label(mid) > l {
					hi = mid
				} else {
					lo = mid
				}
			}
			evs = append(evs, hi-1)
		case len(us) == 1 || len(us) > 1 && it.repeat == RepeatBoth:
			evs = append(evs, us...)
		case len(us) > 1 && it.repeat == RepeatEarly:
			evs = append(evs, us[0])
		case len(us) > 1 && it.repeat == RepeatLate:
			evs = append(evs, us[len(us)-1])
		}
	}
	slices.Sort(evs)
	evs = slices.Compact(evs)
	return slices.DeleteFunc(evs, func(e int64) bool { return e < from || e > to })
}

// randomSelector writes a selector for a field of values lo..hi.
func randomSelector(r *rand.Rand, lo, hi int) string {
	switch r.IntN(4) {
	case 0:
		return fmt.Sprint(lo + r.IntN(hi-lo+1))
	case 1:
		var vs []string
		for range 1 + r.IntN(4) {
			vs = append(vs, fmt.Sprint(lo+r.IntN(hi-lo+1)))
		}
		return "[" + strings.Join(vs, ", ") + "]"
	case 2:
		a, b := lo+r.IntN(hi-lo+1), lo+r.IntN(hi-lo+1)
		return fmt.Sprintf(`{"start": %d, "end": %d, "period": %d}`, min(a, b), max(a, b), 1+r.IntN(5))
	default:
		return fmt.Sprintf(`{"period": %d}`, []int{1, 2, 5, 15, 30}[r.IntN(5)])
	}
}

func randomItem(r *rand.Rand, zone string) string {
	// Transitions fall on the hour or half hour: match those often.
	minute := `{"period": 30}`
	if r.IntN(2) == 0 {
		minute = randomSelector(r, 0, 59)
	}
	parts := []string{`"minute": ` + minute}
	if r.IntN(2) == 0 {
		parts = append(parts, `"hour": `+randomSelector(r, 0, 23))
	}
	switch r.IntN(5) {
	case 0:
		parts = append(parts, `"day_of_week": `+randomSelector(r, 1, 7))
	case 1:
		parts = append(parts, `"day_of_month": `+randomSelector(r, 1, 31))
	}
	skip := []string{"skip", "unskip"}[r.IntN(2)]
	repeat := []string{"repeat_use_both", "repeat_use_only_early", "repeat_use_only_late"}[r.IntN(3)]
	parts = append(parts, fmt.Sprintf(`"dst_fixes": [%q, %q], "timezone": %q, %s`, skip, repeat, zone, maxShiftJSON))
	return "{" + strings.Join(parts, ", ") + "}"
}

func TestFirstMatchAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(2013, 1103))
	trials := 150
	if testing.Short() {
		trials = 30
	}
	for trial := range trials {
		zone := crossZones[trial%len(crossZones)]
		text := randomItem(r, zone)
		it, err := Parse([]byte(text), nil)
		if err != nil {
			// Random day selectors may name a day no month has.
			continue
		}
		// A window of three days around a zone transition, in a
		// random year (Apia's day-long jump in 2011 for some).
		year := 1990 + r.IntN(48)
		if zone == "Pacific/Apia" && r.IntN(2) == 0 {
			year = 2011
		}
		at := time.Date(year, time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, it.loc)
		center := at.Unix()
		if _, end := at.ZoneBounds(); !end.IsZero() && end.Unix()-center < 366*86400 {
			center = end.Unix()
		}
		from, to := center-36*3600, center+36*3600
		ref := referenceEvents(it, from, to)
		name := fmt.Sprintf("%d %s around %s", trial, text, time.Unix(center, 0).In(it.loc))
		instants := []int64{from, to, center - 1, center, center + 1}
		for range 40 {
			instants = append(instants, from+r.Int64N(to-from+1))
		}
		for _, e := range ref {
			instants = append(instants, e-1, e, e+1)
		}
		for _, u := range instants {
			if u < from || u > to {
				continue
			}
			i, _ := slices.BinarySearch(ref, u)
			got, ok := it.FirstMatch(u)
			if i < len(ref) {
				if !ok || got != ref[i] {
					t.Fatalf("%s: FirstMatch(%d) = %d %v, reference %d", name, u, got, ok, ref[i])
				}
			} else if ok && got <= to {
				t.Fatalf("%s: FirstMatch(%d) = %d, reference has none up to %d", name, u, got, to)
			}
			j, found := slices.BinarySearch(ref, u)
			if found {
				j++
			}
			got, ok = it.LastMatch(u)
			if j > 0 {
				if !ok || got != ref[j-1] {
					t.Fatalf("%s: LastMatch(%d) = %d %v, reference %d", name, u, got, ok, ref[j-1])
				}
			} else if ok && got >= from {
				t.Fatalf("%s: LastMatch(%d) = %d, reference has none from %d", name, u, got, from)
			}
		}
	}
}
