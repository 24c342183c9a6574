package cron

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// A selector is a set of allowed values for one field of an event's time:
// a sorted list, or a range with a stride. A selector the item leaves out
// is the whole range, with given false, so that Describe can leave it out
// too. Ranges are never expanded into lists, so that a small input never
// turns into a large set.
type selector struct {
	given              bool
	list               []int64 // sorted, no duplicates; nil for a range
	start, end, period int64
}

// fullRange is the selector of a field that the item does not restrict.
func fullRange(lo, hi int64) selector {
	return selector{start: lo, end: hi, period: 1}
}

// capPeriod makes a range's period no longer than the range: a longer
// one allows the start alone, as the capped one does, and keeps next's
// arithmetic within int64 (a period of 2^63-1 would wrap it round to a
// value before its input).
func (s *selector) capPeriod() {
	if s.list == nil && s.period > s.end-s.start {
		s.period = s.end - s.start + 1
	}
}

// matches reports whether v is in the set.
func (s *selector) matches(v int64) bool {
	if s.list != nil {
		_, ok := slices.BinarySearch(s.list, v)
		return ok
	}
	return v >= s.start && v <= s.end && (v-s.start)%s.period == 0
}

// next returns the smallest value of the set at or after v.
func (s *selector) next(v int64) (int64, bool) {
	if s.list != nil {
		i, _ := slices.BinarySearch(s.list, v)
		if i == len(s.list) {
			return 0, false
		}
		return s.list[i], true
	}
	if v > s.end {
		return 0, false
	}
	if v <= s.start {
		return s.start, true
	}
	// v-start and the result stay within [start, end+period), so nothing
	// overflows even for epoch values.
	k := (v - s.start + s.period - 1) / s.period
	x := s.start + k*s.period
	if x > s.end {
		return 0, false
	}
	return x, true
}

// prev returns the largest value of the set at or before v.
func (s *selector) prev(v int64) (int64, bool) {
	if s.list != nil {
		i, found := slices.BinarySearch(s.list, v)
		if found {
			return v, true
		}
		if i == 0 {
			return 0, false
		}
		return s.list[i-1], true
	}
	if v < s.start {
		return 0, false
	}
	if v > s.end {
		v = s.end
	}
	return s.start + (v-s.start)/s.period*s.period, true
}

// single reports the one value of a selector that has only one.
func (s *selector) single() (int64, bool) {
	if len(s.list) == 1 {
		return s.list[0], true
	}
	if s.list == nil && s.start == s.end {
		return s.start, true
	}
	return 0, false
}

// field describes the values a selector key accepts.
type field struct {
	key    string
	lo, hi int64
	names  []string // names[i] stands for lo+i; a name may be shortened to 3 letters or more
}

var (
	minuteField = field{key: "minute", lo: 0, hi: 59}
	hourField   = field{key: "hour", lo: 0, hi: 23}
	dowField    = field{key: "day_of_week", lo: 1, hi: 7, names: dayNames}
	domField    = field{key: "day_of_month", lo: 1, hi: 31}
	monthField  = field{key: "month", lo: 1, hi: 12, names: monthNames}
	// Years stop at 9999 so that every label is a valid time.Time and
	// every instant fits the arithmetic; they start at the Unix epoch.
	yearField = field{key: "year", lo: 1970, hi: 9999}
	// maxEpoch is 9999-12-31T23:59:59Z, the end of the last year.
	epochField = field{key: "epoch", lo: 0, hi: maxEpoch}
)

const maxEpoch = 253402300799

var dayNames = []string{"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"}

var monthNames = []string{"january", "february", "march", "april", "may", "june", "july",
	"august", "september", "october", "november", "december"}

// name finds the value of an English name, or of its first three letters
// or more, in any case.
func (f *field) name(s string) (int64, bool) {
	s = strings.ToLower(s)
	if len(s) < 3 {
		return 0, false
	}
	for i, n := range f.names {
		if strings.HasPrefix(n, s) {
			return f.lo + int64(i), true
		}
	}
	return 0, false
}

// parse reads a selector as the item's JSON (or YAML) gives it: one value,
// a list of values, or {"start", "end", "period"}, each of them optional.
func (f *field) parse(v any) (selector, error) {
	switch x := v.(type) {
	case []any:
		if len(x) == 0 {
			return selector{}, fmt.Errorf("%q: empty list", f.key)
		}
		list := make([]int64, 0, len(x))
		for _, e := range x {
			n, err := f.value(e)
			if err != nil {
				return selector{}, err
			}
			list = append(list, n)
		}
		slices.Sort(list)
		return selector{given: true, list: slices.Compact(list)}, nil
	case map[string]any:
		s := selector{given: true, start: f.lo, end: f.hi, period: 1}
		for _, k := range sortedKeys(x) {
			var err error
			switch k {
			case "start":
				s.start, err = f.value(x[k])
			case "end":
				s.end, err = f.value(x[k])
			case "period":
				s.period, err = integer(x[k])
				if err == nil && s.period < 1 {
					err = fmt.Errorf("%d is not a positive period", s.period)
				}
				if err != nil {
					err = fmt.Errorf("%q: \"period\": %w", f.key, err)
				}
			default:
				err = fmt.Errorf("%q: unknown key %q (want \"start\", \"end\" or \"period\")", f.key, k)
			}
			if err != nil {
				return selector{}, err
			}
		}
		if s.start > s.end {
			return selector{}, fmt.Errorf("%q: start %d is after end %d", f.key, s.start, s.end)
		}
		s.capPeriod()
		return s, nil
	default:
		n, err := f.value(v)
		if err != nil {
			return selector{}, err
		}
		return selector{given: true, list: []int64{n}}, nil
	}
}

// value reads one value of the field: an integer in range, or a name.
func (f *field) value(v any) (int64, error) {
	if s, ok := v.(string); ok {
		if f.names == nil {
			return 0, fmt.Errorf("%q: %q is not a number", f.key, s)
		}
		n, ok := f.name(s)
		if !ok {
			return 0, fmt.Errorf("%q: unknown name %q", f.key, s)
		}
		return n, nil
	}
	n, err := integer(v)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", f.key, err)
	}
	if n < f.lo || n > f.hi {
		return 0, fmt.Errorf("%q: %d is out of range %d-%d", f.key, n, f.lo, f.hi)
	}
	return n, nil
}

// integer reads a whole number as encoding/json (with or without
// UseNumber) or a YAML decoder hands it over.
func integer(v any) (int64, error) {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, nil
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return 0, fmt.Errorf("%s is not a number", x)
		}
		return wholeNumber(f)
	case float64:
		return wholeNumber(x)
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case int32:
		return int64(x), nil
	case uint64:
		if x > math.MaxInt64 {
			return 0, fmt.Errorf("%d is too large", x)
		}
		return int64(x), nil
	case uint:
		if uint64(x) > math.MaxInt64 {
			return 0, fmt.Errorf("%d is too large", x)
		}
		return int64(x), nil
	default:
		return 0, fmt.Errorf("want a whole number, not %s", kindOf(v))
	}
}

func wholeNumber(f float64) (int64, error) {
	// 2^63 is the first float64 out of int64's range.
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, fmt.Errorf("%v is not a whole number", f)
	}
	return int64(f), nil
}

// kindOf names the JSON kind of a decoded value, for errors.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	case json.Number, float64, int, int64, int32, uint64, uint:
		return "a number"
	default:
		return fmt.Sprintf("%T", v)
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
