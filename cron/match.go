package cron

import (
	"time"
)

// searchYears is how far FirstMatch and LastMatch look before they say
// there is no event, and how far ahead an item must match something to be
// accepted at all (30 February never comes).
const searchYears = 50

// searchSpan is searchYears in seconds, a little generously.
const searchSpan = searchYears * 366 * 86400

// Labels are local times ("03:00 on 10 March 2013") written as the Unix
// seconds of that same wall-clock reading in UTC, so that they can be
// compared and stepped with plain arithmetic. An instant u in a stretch of
// time with UTC offset o has label u+o.

// minInstant is where searches start at the earliest: a little before the
// first label of 1970 in any zone.
const minInstant = -2 * 86400

// FirstMatch returns the first event at or after t (Unix seconds), and
// false if there is none within 50 years.
func (it *Item) FirstMatch(t int64) (int64, bool) {
	var steps int
	return it.firstMatch(t, &steps)
}

// LastMatch returns the last event at or before t (Unix seconds), and false
// if there is none within the 50 years before.
func (it *Item) LastMatch(t int64) (int64, bool) {
	var steps int
	return it.lastMatch(t, &steps)
}

// FirstMatchBefore returns the first event at or after t and before end,
// and false if there is none. Its work grows with the span from t to end,
// not with how far the first event is: a caller that knows there is none
// up to end looks only at what it does not know.
func (it *Item) FirstMatchBefore(t, end int64) (int64, bool) {
	var steps int
	return it.firstMatchBefore(t, end, &steps)
}

func (it *Item) firstMatchBefore(t, end int64, steps *int) (int64, bool) {
	if end <= t {
		return 0, false
	}
	e, ok := it.firstMatchUntil(t, min(end-t, searchSpan), steps)
	if !ok || e >= end {
		return 0, false
	}
	return e, true
}

// firstMatch is FirstMatch counting its work in *steps, so that Advance
// can show it stays small.
func (it *Item) firstMatch(t int64, steps *int) (int64, bool) {
	return it.firstMatchUntil(t, searchSpan, steps)
}

// firstMatchUntil is firstMatch looking about span seconds past t, no
// further (it may find an event a little beyond).
func (it *Item) firstMatchUntil(t, span int64, steps *int) (int64, bool) {
	*steps++
	if it.epoch {
		return it.sel[epochIndex].next(max(t, 0))
	}
	if t > maxEpoch {
		return 0, false
	}
	t = max(t, minInstant)
	limit := t + span
	// Walk the stretches of constant UTC offset from the one holding t.
	// Within a stretch, labels and instants move together, so the first
	// matching label is the first event; the DST fixes only decide which
	// labels at the stretch's two ends count, and whether a jump forward at
	// its end brings an unskipped event. A zone has about two stretches a
	// year, and the label search jumps from match to match, so this never
	// walks minute by minute.
	for cur := t; cur < limit; {
		*steps++
		at := time.Unix(cur, 0).In(it.loc)
		_, off := at.Zone()
		o := int64(off)
		startT, endT := at.ZoneBounds()
		end := int64(maxEpoch + 2*86400)
		hasNext := !endT.IsZero()
		var nextOff int64
		if hasNext {
			end = it.stretchEnd(cur, o, endT.Unix(), steps)
			nextOff = offsetAt(it.loc, end)
		}
		lo := cur + o
		if !startT.IsZero() && startT.Unix() <= cur && it.repeat == RepeatEarly {
			start := startT.Unix()
			_, p := time.Unix(start-1, 0).In(it.loc).Zone()
			if prevOff := int64(p); prevOff > o {
				// The clock was set back at start: labels up to
				// start+prevOff were seen before it, and fired then.
				lo = max(lo, start+prevOff)
			}
		}
		hi := end + o
		if hasNext && nextOff < o && it.repeat == RepeatLate {
			// The clock will be set back at end: labels from end+nextOff
			// come again after it, and fire then.
			hi = end + nextOff
		}
		best, found := int64(0), false
		if l, ok := it.nextLabel(lo, min(hi, limit+o), steps); ok {
			best, found = l-o, true
		}
		if !found && hasNext && nextOff > o && it.skip == Unskip {
			// The clock jumps forward at end over labels [end+o,
			// end+nextOff): any event among them fires a second before.
			if _, ok := it.nextLabel(end+o, end+nextOff, steps); ok {
				best, found = end-1, true
			}
		}
		if found {
			return best, true
		}
		if !hasNext {
			return 0, false
		}
		cur = max(end, cur+1)
	}
	return 0, false
}

// stretchEnd checks the end of the stretch of offset o holding cur that
// ZoneBounds gave. Beyond the zone file's last transition, where the zone's
// rule takes over, the time package cuts stretches at the new year, and on
// the last day of a leap year it puts that cut a day early, before cur. A
// wrong end is replaced by the first instant within a day of cur whose
// offset differs from o, or by the day's end, which the next stretch
// starts from.
func (it *Item) stretchEnd(cur, o, end int64, steps *int) int64 {
	if end <= cur {
		end = cur + 86400
	}
	if offsetAt(it.loc, end-1) == o {
		return end
	}
	lo, hi := cur, end // offset o at lo, not at hi-1
	for hi-lo > 1 {
		*steps++
		mid := lo + (hi-lo)/2
		if offsetAt(it.loc, mid) == o {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

func offsetAt(loc *time.Location, u int64) int64 {
	_, o := time.Unix(u, 0).In(loc).Zone()
	return int64(o)
}

// lastMatch finds the last event at or before t from firstMatch alone, so
// that the DST rules live in one place: it widens a window back from t
// until it holds an event, then bisects for the last one. Both take about
// log2 of the distance searched, whatever the schedule.
func (it *Item) lastMatch(t int64, steps *int) (int64, bool) {
	if it.epoch {
		*steps++
		if t < 0 {
			return 0, false
		}
		return it.sel[epochIndex].prev(t)
	}
	if t < minInstant {
		return 0, false
	}
	t = min(t, maxEpoch)
	atOrBefore := func(x int64) (int64, bool) {
		e, ok := it.firstMatch(x, steps)
		return e, ok && e <= t
	}
	// The window stops at searchSpan, so that firstMatch from anywhere in
	// it still looks as far as t.
	var lo int64 // an instant whose first event is at or before t
	found := false
	for w := int64(60); !found; w *= 2 {
		w = min(w, searchSpan)
		lo = t - w
		_, found = atOrBefore(lo)
		if w == searchSpan {
			break
		}
	}
	if !found {
		return 0, false
	}
	// Invariant: an event in [lo, t], and none in [hi, t].
	hi := t + 1
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if e, ok := atOrBefore(mid); ok {
			lo = max(mid, e)
		} else {
			hi = mid
		}
	}
	return it.firstMatch(lo, steps)
}

// nextLabel returns the first label in [lo, hi) that the selectors match.
// It moves field by field, largest first, jumping straight to the next
// allowed value of each, so that the work depends on how many fields must
// change rather than on how far away the match is.
func (it *Item) nextLabel(lo, hi int64, steps *int) (int64, bool) {
	if r := lo % 60; r != 0 {
		lo += 60 - r
		if r < 0 {
			lo -= 60
		}
	}
	if lo >= hi {
		return 0, false
	}
	lt := time.Unix(lo, 0).UTC()
	y64, mo64, d64 := lt.Date()
	y, mo, d := int64(y64), int64(mo64), int64(d64)
	h, mi := int64(lt.Hour()), int64(lt.Minute())
	hiYear := int64(time.Unix(hi, 0).UTC().Year())
	nextDay := func() {
		d, h, mi = d+1, 0, 0
		if d > daysIn(y, mo) {
			mo, d = mo+1, 1
			if mo > 12 {
				y, mo = y+1, 1
			}
		}
	}
	for {
		*steps++
		if y > hiYear {
			return 0, false
		}
		ny, ok := it.sel[yearIndex].next(y)
		if !ok {
			return 0, false
		}
		if ny != y {
			y, mo, d, h, mi = ny, 1, 1, 0, 0
			continue
		}
		nm, ok := it.sel[monthIndex].next(mo)
		if !ok {
			y, mo, d, h, mi = y+1, 1, 1, 0, 0
			continue
		}
		if nm != mo {
			mo, d, h, mi = nm, 1, 0, 0
			continue
		}
		nd, ok := it.nextDayOfMonth(y, mo, d)
		if !ok {
			d = daysIn(y, mo)
			nextDay()
			continue
		}
		if nd != d {
			d, h, mi = nd, 0, 0
			continue
		}
		nh, ok := it.sel[hourIndex].next(h)
		if !ok {
			nextDay()
			continue
		}
		if nh != h {
			h, mi = nh, 0
			continue
		}
		nmi, ok := it.sel[minuteIndex].next(mi)
		if !ok {
			h, mi = h+1, 0
			if h > 23 {
				nextDay()
			}
			continue
		}
		l := time.Date(int(y), time.Month(mo), int(d), int(h), int(nmi), 0, 0, time.UTC).Unix()
		if l >= hi {
			return 0, false
		}
		return l, true
	}
}

// nextDayOfMonth returns the first day of the month, from d on, that the
// day selectors allow.
func (it *Item) nextDayOfMonth(y, mo, d int64) (int64, bool) {
	last := daysIn(y, mo)
	if d > last {
		return 0, false
	}
	if it.sel[domIndex].given {
		nd, ok := it.sel[domIndex].next(d)
		return nd, ok && nd <= last
	}
	if it.sel[dowIndex].given {
		wd := weekday(y, mo, d)
		for k := int64(0); k < 7 && d+k <= last; k++ {
			if it.sel[dowIndex].matches((wd-1+k)%7 + 1) {
				return d + k, true
			}
		}
		return 0, false
	}
	return d, true
}

// weekday is 1 for Sunday to 7 for Saturday, as "day_of_week" counts.
func weekday(y, mo, d int64) int64 {
	return int64(time.Date(int(y), time.Month(mo), int(d), 0, 0, 0, 0, time.UTC).Weekday()) + 1
}

func daysIn(y, mo int64) int64 {
	return int64(time.Date(int(y), time.Month(mo)+1, 0, 0, 0, 0, 0, time.UTC).Day())
}

// matchesSomeDay reports whether the selectors match a label within 50
// years of the first year they allow. The calendar repeats itself within
// that, so a pattern that fails has a day no month has, or a weekday that
// day never falls on within the years it names.
func (it *Item) matchesSomeDay() bool {
	y, _ := it.sel[yearIndex].next(yearField.lo)
	from := time.Date(int(y), 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	var steps int
	_, ok := it.nextLabel(from, from+searchSpan, &steps)
	return ok
}

// Latest returns the index of the item that fired last at or before t, for
// values that change on a schedule (a queue's threads by time of day):
// the value of the entry whose schedule fired most recently applies. Of
// items that last fired at the same instant, the later in the list wins.
// It is false when none of them fired in the 50 years before t.
func Latest(items []*Item, t int64) (int, bool) {
	idx, when := -1, int64(0)
	for i, it := range items {
		e, ok := it.LastMatch(t)
		if ok && (idx < 0 || e >= when) {
			idx, when = i, e
		}
	}
	return idx, idx >= 0
}
