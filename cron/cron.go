// Package cron tells when a schedule fires: the crontab items of the
// WEBAPP's "schedule" keys (a lorry or scraper run at 03:00 local time
// every day) and of queues' time-of-day thread limits.
//
// An Item is parsed from its JSON text with Parse, or from a value a JSON
// or YAML decoder already produced (a .lorry file may be YAML) with
// ParseValue; both take the zone that an item without "timezone" uses,
// which is the WEBAPP's local zone. An item is one of
//
//	{"minute": 0, "hour": 3, "dst_fixes": ["unskip", "repeat_use_only_early"],
//	 "timezone": "Europe/London", "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}
//	{"cron": "0 3 * * *", "dst_fixes": [...], "timezone": ..., "max_shift_seconds_for_unskip_and_do_not_repeat": ...}
//	{"epoch": {"period": 300}, "max_shift_seconds_for_unskip_and_do_not_repeat": 600}
//
// docs/schedules.md describes the format for operators. Errors name the
// key at fault; the caller puts the section or file in front.
//
// Stateless, an Item answers FirstMatch (the first event at or after an
// instant), LastMatch (the last at or before it) and Describe. Daylight
// saving time is handled as the item's mandatory "dst_fixes" say.
//
// Stateful, the caller keeps one State per schedule (in the state database)
// and, on every tick, reads the clocks with ReadClocks and calls Advance:
//
//	fire, next, report := item.Advance(prev, cron.ReadClocks(clk))
//	// store next; queue a run if fire; log report if it has anything to say
//
// Advance fires at most once per call however many events are due, so a
// WEBAPP that was stopped, a suspended machine or a clock set forward never
// cause a flood: events younger than the item's
// max_shift_seconds_for_unskip_and_do_not_repeat fire (once), older ones
// are skipped and reported. A clock set back by no more than that does not
// repeat events. NextDue tells the lorry page when the next run is due.
//
// For a queue's thread limit by time of day, Latest picks the entry of a
// list of items that fired last at or before an instant.
//
// Items are immutable once parsed and safe for concurrent use.
package cron

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	// The zone database, for machines that lack one: a schedule names its
	// zone and must not fail to load because of where it runs.
	_ "time/tzdata"
)

// SkipFix says what happens to an event whose local time DST jumps over.
type SkipFix int

const (
	// Skip drops the event.
	Skip SkipFix = iota + 1
	// Unskip fires it one second before the clock jumps forward.
	Unskip
)

// RepeatFix says what happens to an event whose local time DST repeats.
type RepeatFix int

const (
	// RepeatBoth fires it twice, before and after the clock is set back.
	RepeatBoth RepeatFix = iota + 1
	// RepeatEarly fires it only before the clock is set back.
	RepeatEarly
	// RepeatLate fires it only after the clock is set back.
	RepeatLate
)

// MaxShiftKey is the mandatory key of every item that bounds catching up
// and not repeating (see Advance).
const MaxShiftKey = "max_shift_seconds_for_unskip_and_do_not_repeat"

// minMaxShift is the smallest MaxShiftKey accepted: the WEBAPP looks at its
// schedules every few seconds, up to a minute apart, and an event must not
// be too old to fire merely because the next look came a little later.
const minMaxShift = 60

// maxMaxShift keeps the limit far from overflowing a time.Duration.
const maxMaxShift = 100 * 366 * 86400

// Item is one parsed schedule.
type Item struct {
	epoch    bool
	sel      [numFields]selector // by fieldIndex; only epochIndex for epoch items
	loc      *time.Location
	skip     SkipFix
	repeat   RepeatFix
	maxShift int64  // seconds
	cronExpr string // the five-field string the item was written as, if it was
}

type fieldIndex int

const (
	minuteIndex fieldIndex = iota
	hourIndex
	dowIndex
	domIndex
	monthIndex
	yearIndex
	epochIndex
	numFields
)

var fields = [numFields]*field{&minuteField, &hourField, &dowField, &domField, &monthField, &yearField, &epochField}

// Parse reads an item from its JSON text. An item without "timezone" is in
// zone local (time.Local if nil).
func Parse(data []byte, local *time.Location) (*Item, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("schedule is not valid JSON: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("schedule is not valid JSON: more data after the object")
	}
	return ParseValue(v, local)
}

// ParseValue reads an item from what a JSON or YAML decoder made of it: a
// map[string]any with numbers as json.Number, float64 or int.
func ParseValue(v any, local *time.Location) (*Item, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schedule must be an object, not %s", kindOf(v))
	}
	if local == nil {
		local = time.Local
	}
	it := &Item{loc: local}
	for i, f := range fields {
		it.sel[i] = fullRange(f.lo, f.hi)
	}
	if err := it.parseMaxShift(m); err != nil {
		return nil, err
	}
	_, isEpoch := m["epoch"]
	_, isCron := m["cron"]
	switch {
	case isEpoch:
		return it, it.parseEpoch(m)
	case isCron:
		if err := it.parseCron(m); err != nil {
			return nil, err
		}
	default:
		if err := it.parseSelectors(m); err != nil {
			return nil, err
		}
	}
	if err := it.parseZoneAndFixes(m); err != nil {
		return nil, err
	}
	if !it.matchesSomeDay() {
		return nil, errors.New("schedule matches no time in 50 years (a day that no month has?)")
	}
	return it, nil
}

func (it *Item) parseMaxShift(m map[string]any) error {
	v, ok := m[MaxShiftKey]
	if !ok {
		return fmt.Errorf("missing %q: how late, in seconds, a missed event may still fire", MaxShiftKey)
	}
	n, err := integer(v)
	if err != nil {
		return fmt.Errorf("%q: %w", MaxShiftKey, err)
	}
	if n < minMaxShift || n > maxMaxShift {
		return fmt.Errorf("%q: %d is out of range %d-%d", MaxShiftKey, n, minMaxShift, maxMaxShift)
	}
	it.maxShift = n
	return nil
}

// checkKeys refuses keys other than those allowed, naming the first in
// sorted order so that the error is always the same.
func checkKeys(m map[string]any, allowed []string, what string) error {
	for _, k := range sortedKeys(m) {
		if !slices.Contains(allowed, k) {
			return fmt.Errorf("unknown key %q in %s (allowed: %s)", k, what, strings.Join(allowed, ", "))
		}
	}
	return nil
}

func (it *Item) parseEpoch(m map[string]any) error {
	if err := checkKeys(m, []string{"epoch", MaxShiftKey}, "an \"epoch\" schedule"); err != nil {
		return err
	}
	s, err := epochField.parse(m["epoch"])
	if err != nil {
		return err
	}
	it.epoch = true
	it.sel[epochIndex] = s
	return nil
}

var calendarKeys = []string{"minute", "hour", "day_of_week", "day_of_month", "month", "year", "timezone", "dst_fixes", MaxShiftKey}

func (it *Item) parseSelectors(m map[string]any) error {
	if err := checkKeys(m, calendarKeys, "a schedule"); err != nil {
		return err
	}
	if _, ok := m["minute"]; !ok {
		return errors.New(`missing "minute" (use {"period": 1} for every minute, or "epoch")`)
	}
	_, dow := m["day_of_week"]
	_, dom := m["day_of_month"]
	if dow && dom {
		return errors.New(`"day_of_week" and "day_of_month" cannot be combined: write two schedules`)
	}
	for i := minuteIndex; i <= yearIndex; i++ {
		v, ok := m[fields[i].key]
		if !ok {
			continue
		}
		s, err := fields[i].parse(v)
		if err != nil {
			return err
		}
		it.sel[i] = s
	}
	return nil
}

func (it *Item) parseCron(m map[string]any) error {
	if err := checkKeys(m, []string{"cron", "timezone", "dst_fixes", MaxShiftKey}, "a \"cron\" schedule"); err != nil {
		return err
	}
	s, ok := m["cron"].(string)
	if !ok {
		return fmt.Errorf("\"cron\": want a string such as \"0 3 * * *\", not %s", kindOf(m["cron"]))
	}
	sels, err := parseFiveField(s)
	if err != nil {
		return fmt.Errorf("\"cron\": %w", err)
	}
	for i := minuteIndex; i <= monthIndex; i++ {
		if sels[i].given {
			it.sel[i] = sels[i]
		}
	}
	it.cronExpr = strings.Join(strings.Fields(s), " ")
	return nil
}

func (it *Item) parseZoneAndFixes(m map[string]any) error {
	if v, ok := m["timezone"]; ok {
		name, ok := v.(string)
		if !ok {
			return fmt.Errorf("\"timezone\": want a zone name such as \"Europe/London\", not %s", kindOf(v))
		}
		if name == "" {
			return errors.New(`"timezone": empty zone name`)
		}
		loc, err := time.LoadLocation(name)
		if err != nil {
			return fmt.Errorf("\"timezone\": unknown zone %q", name)
		}
		it.loc = loc
	}
	v, ok := m["dst_fixes"]
	if !ok {
		return errors.New(`missing "dst_fixes": say what happens when DST skips or repeats the time, e.g. ["skip", "repeat_use_only_early"]`)
	}
	list, ok := v.([]any)
	if !ok || len(list) != 2 {
		return fmt.Errorf("\"dst_fixes\": want a list of two strings, one of \"skip\" or \"unskip\" and one of \"repeat_use_both\", \"repeat_use_only_early\" or \"repeat_use_only_late\"")
	}
	for _, e := range list {
		s, _ := e.(string)
		switch s {
		case "skip", "unskip":
			if it.skip != 0 {
				return errors.New(`"dst_fixes": more than one of "skip" and "unskip"`)
			}
			it.skip = map[string]SkipFix{"skip": Skip, "unskip": Unskip}[s]
		case "repeat_use_both", "repeat_use_only_early", "repeat_use_only_late":
			if it.repeat != 0 {
				return errors.New(`"dst_fixes": more than one "repeat_use_..." value`)
			}
			it.repeat = map[string]RepeatFix{"repeat_use_both": RepeatBoth, "repeat_use_only_early": RepeatEarly, "repeat_use_only_late": RepeatLate}[s]
		default:
			return fmt.Errorf("\"dst_fixes\": unknown value %v", jsonText(e))
		}
	}
	if it.skip == 0 || it.repeat == 0 {
		return errors.New(`"dst_fixes": need one of "skip" or "unskip" and one of "repeat_use_both", "repeat_use_only_early" or "repeat_use_only_late"`)
	}
	return nil
}

// jsonText shows a decoded value as JSON, for errors.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Epoch reports whether the item counts Unix seconds rather than local
// time.
func (it *Item) Epoch() bool { return it.epoch }

// Location is the zone of the item's local times.
func (it *Item) Location() *time.Location { return it.loc }

// DSTFixes reports the item's "dst_fixes"; epoch items have none (zeros).
func (it *Item) DSTFixes() (SkipFix, RepeatFix) { return it.skip, it.repeat }

// MaxShift is the item's max_shift_seconds_for_unskip_and_do_not_repeat.
func (it *Item) MaxShift() time.Duration { return time.Duration(it.maxShift) * time.Second }
