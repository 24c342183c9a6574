package confgit

import (
	"encoding/json"
	"fmt"

	"lorrycontroller/cron"
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

// specSchedule is the schedule of a spec: its own "schedule" key, or else
// its section's.
func specSchedule(spec any, section schedule) (schedule, error) {
	m, ok := spec.(map[string]any)
	if !ok {
		return section, nil
	}
	v, ok := m["schedule"]
	if !ok {
		return section, nil
	}
	s, err := parseSchedule(v)
	if err != nil {
		return s, fmt.Errorf("key %q: %w", "schedule", err)
	}
	return s, nil
}
