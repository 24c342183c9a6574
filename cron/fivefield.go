package cron

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// classicField is one field of a five-field crontab string. Its values are
// as classic cron writes them, which for the day of the week is 0 (or 7)
// for Sunday; parseFiveField turns them into the item's selectors.
type classicField struct {
	name   string
	index  fieldIndex
	lo, hi int64
	names  []string // names[i] stands for i+from
	from   int64
}

var classicFields = [5]classicField{
	{name: "minute", index: minuteIndex, lo: 0, hi: 59},
	{name: "hour", index: hourIndex, lo: 0, hi: 23},
	{name: "day-of-month", index: domIndex, lo: 1, hi: 31},
	{name: "month", index: monthIndex, lo: 1, hi: 12, names: monthNames, from: 1},
	{name: "day-of-week", index: dowIndex, lo: 0, hi: 7, names: dayNames, from: 0},
}

// parseFiveField reads "minute hour day-of-month month day-of-week", each
// field "*" or a comma-separated list of values, ranges "a-b" and steps
// "*/n" and "a-b/n", with English names for months and days. A field left
// as "*" is a selector not given. Every field's values fit in 64 bits, so
// no input makes a large set.
func parseFiveField(s string) ([numFields]selector, error) {
	var sels [numFields]selector
	parts := strings.Fields(s)
	if len(parts) != 5 {
		return sels, fmt.Errorf("want five fields (minute hour day-of-month month day-of-week), got %d in %q", len(parts), s)
	}
	for i, f := range classicFields {
		sel, err := f.parse(parts[i])
		if err != nil {
			return sels, fmt.Errorf("%s field %q: %w", f.name, parts[i], err)
		}
		sels[f.index] = sel
	}
	if sels[domIndex].given && sels[dowIndex].given {
		// Classic cron fires when either matches; ours are all ANDed, so
		// the combination is refused as it is in the JSON form.
		return sels, fmt.Errorf("day-of-month %q and day-of-week %q cannot both be set: write two schedules", parts[2], parts[4])
	}
	return sels, nil
}

func (f *classicField) parse(s string) (selector, error) {
	if s == "*" {
		return selector{}, nil
	}
	var set uint64
	terms := strings.Split(s, ",")
	var only selector // the selector of a lone range term, kept as a range
	for _, term := range terms {
		lo, hi, step, err := f.term(term)
		if err != nil {
			return selector{}, err
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << v
		}
		if len(terms) == 1 && f.index != dowIndex {
			only = selector{given: true, start: lo, end: hi, period: step}
			only.capPeriod()
		}
	}
	if only.given && bits.OnesCount64(set) > 1 {
		return only, nil
	}
	if f.index == dowIndex {
		// Sunday is 0 or 7 here and 1 in the item; the rest follow it.
		if set&(1<<7) != 0 {
			set = set&^(1<<7) | 1
		}
		set <<= 1
	}
	list := make([]int64, 0, bits.OnesCount64(set))
	for v := int64(0); v < 64; v++ {
		if set&(1<<v) != 0 {
			list = append(list, v)
		}
	}
	return selector{given: true, list: list}, nil
}

// term reads "*", "*/n", "a", "a-b" or "a-b/n" as an inclusive range with a
// step.
func (f *classicField) term(s string) (lo, hi, step int64, err error) {
	rng, stepText, hasStep := strings.Cut(s, "/")
	step = 1
	if hasStep {
		step, err = f.number(stepText)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("step: %w", err)
		}
		if step < 1 {
			return 0, 0, 0, fmt.Errorf("step %d is not positive", step)
		}
	}
	if rng == "*" {
		return f.lo, f.hi, step, nil
	}
	a, b, isRange := strings.Cut(rng, "-")
	if hasStep && !isRange {
		return 0, 0, 0, fmt.Errorf("a step needs \"*\" or a range before it, as in \"*/%s\" or \"a-b/%s\"", stepText, stepText)
	}
	lo, err = f.value(a)
	if err != nil {
		return 0, 0, 0, err
	}
	hi = lo
	if isRange {
		hi, err = f.value(b)
		if err != nil {
			return 0, 0, 0, err
		}
		if lo > hi {
			return 0, 0, 0, fmt.Errorf("range %s-%s runs backwards", a, b)
		}
	}
	return lo, hi, step, nil
}

func (f *classicField) value(s string) (int64, error) {
	if f.names != nil && s != "" && (s[0] < '0' || s[0] > '9') {
		s := strings.ToLower(s)
		if len(s) >= 3 {
			for i, n := range f.names {
				if strings.HasPrefix(n, s) {
					return int64(i) + f.from, nil
				}
			}
		}
		return 0, fmt.Errorf("unknown name %q", s)
	}
	n, err := f.number(s)
	if err != nil {
		return 0, err
	}
	if n < f.lo || n > f.hi {
		return 0, fmt.Errorf("%d is out of range %d-%d", n, f.lo, f.hi)
	}
	return n, nil
}

func (f *classicField) number(s string) (int64, error) {
	if s == "" || len(s) > 4 || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return n, nil
}
