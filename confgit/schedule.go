package confgit

import (
	"encoding/json"
	"fmt"
	"time"

	"lorrycontroller.dev/lc/cron"
	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/wire"
)

// schedule is a "schedule" key: its item, and its text as compact JSON
// with sorted keys, so that the same schedule always reads the same and a
// changed one is seen as changed. The zero value is no schedule.
type schedule struct {
	text string
	item *cron.Item
}

// parseSchedule reads the value of a "schedule" key. An item without
// "timezone" is in the WEBAPP's local zone.
func parseSchedule(v any) (schedule, error) {
	item, err := cron.ParseValue(v, nil)
	if err != nil {
		return schedule{}, err
	}
	text, err := json.Marshal(v)
	if err != nil {
		return schedule{}, err
	}
	return schedule{text: string(text), item: item}, nil
}

// lookAheadYears is how far ahead a schedule must have an event: the
// span the cron package searches.
const lookAheadYears = 50

// checkFires refuses a schedule with no event in the lookAheadYears from
// now: a year long past or beyond 9999, 29 February in years that have
// none, an epoch instant gone by. Such an entry would never run, which is
// never what its author meant.
func (s schedule) checkFires(now time.Time) error {
	if s.item == nil {
		return nil
	}
	if _, ok := s.item.FirstMatch(now.Unix()); !ok {
		return fmt.Errorf("has no event in the %d years from %s: the entry would never run",
			lookAheadYears, now.UTC().Format(time.DateOnly))
	}
	return nil
}

// specSchedule is the schedule of a spec: its own "schedule" key, or else
// its section's, which was checked with its section. Its own must have an
// event in the lookAheadYears from now.
func specSchedule(spec any, section schedule, now time.Time) (schedule, error) {
	m, ok := spec.(map[string]any)
	if !ok {
		return section, nil
	}
	v, ok := m["schedule"]
	if !ok {
		return section, nil
	}
	s, err := parseSchedule(v)
	if err == nil {
		err = s.checkFires(now)
	}
	if err != nil {
		return s, &lorryspec.KeyError{Key: "schedule", Err: fmt.Errorf("key %q: %w", "schedule", err)}
	}
	return s, nil
}

// parseConfAt is parseConf for a configuration read now: the schedules of
// its sections must have an event in the lookAheadYears from now.
func parseConfAt(data []byte, now time.Time) (*parsedConf, error) {
	p, err := parseSectionsAt(data, now)
	if err != nil {
		return nil, err
	}
	return p.result()
}

// parseSectionsAt is parseSections for a configuration read now, with
// the schedules of its sections checked as parseConfAt checks them.
func parseSectionsAt(data []byte, now time.Time) (*confParser, error) {
	p, err := parseSections(data)
	if err != nil {
		return nil, err
	}
	for _, ls := range p.pc.lorries {
		if err := ls.schedule.checkFires(now); err != nil {
			typ := "lorries"
			if ls.kind == wire.KindScraper {
				typ = "scrapers"
			}
			p.errs = append(p.errs, &ConfError{Section: ls.index, Type: typ, Key: "schedule", Err: err})
		}
	}
	return p, nil
}
