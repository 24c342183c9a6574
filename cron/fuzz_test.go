package cron

import (
	"encoding/json"
	"testing"
	"time"
)

// probe runs an item's searches from a few instants; none may panic, and
// what they find must be consistent.
func probe(t *testing.T, it *Item, from int64) {
	e, ok := it.FirstMatch(from)
	if !ok {
		return
	}
	if e < from {
		t.Fatalf("FirstMatch(%d) = %d, before it", from, e)
	}
	if again, ok := it.FirstMatch(e); !ok || again != e {
		t.Fatalf("FirstMatch(%d) = %d %v, want the event itself", e, again, ok)
	}
	if last, ok := it.LastMatch(e); !ok || last != e {
		t.Fatalf("LastMatch(%d) = %d %v, want the event itself", e, last, ok)
	}
	if last, ok := it.LastMatch(e - 1); ok && last >= from {
		t.Fatalf("LastMatch(%d) = %d: an event between %d and FirstMatch's %d", e-1, last, from, e)
	}
	_ = it.Describe()
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		dailyAt3, every5Min,
		`{"epoch": [2700, 5400], "max_shift_seconds_for_unskip_and_do_not_repeat": 60}`,
		`{"minute": 30, "hour": 1, "dst_fixes": ["unskip", "repeat_use_only_late"], "timezone": "US/Pacific", "max_shift_seconds_for_unskip_and_do_not_repeat": 7200}`,
		`{"minute": 0, "day_of_week": ["mon", "Fri"], "month": {"start": "mar", "period": 2}, "dst_fixes": ["skip", "repeat_use_both"], "timezone": "Australia/Lord_Howe", "max_shift_seconds_for_unskip_and_do_not_repeat": 60}`,
		`{"cron": "*/7 2-3 * * sun", "dst_fixes": ["unskip", "repeat_use_both"], "timezone": "Europe/London", "max_shift_seconds_for_unskip_and_do_not_repeat": 600}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		it, err := Parse(data, time.UTC)
		if err != nil {
			return
		}
		for _, from := range []int64{0, 1362909000, 1383469000, 4102444800} {
			probe(t, it, from)
		}
	})
}

func FuzzParseFiveField(f *testing.F) {
	for _, s := range []string{"0 3 * * *", "*/5 * * * *", "0,20-40/10 1-3 * * mon-fri", "0 0 29 feb *", "59 23 31 dec 7", "* * * * *"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		text, err := json.Marshal(map[string]any{
			"cron":      s,
			"dst_fixes": []string{"unskip", "repeat_use_only_early"},
			"timezone":  "US/Pacific",
			MaxShiftKey: 3600,
		})
		if err != nil {
			return
		}
		it, err := Parse(text, nil)
		if err != nil {
			return
		}
		probe(t, it, 1383460000)
	})
}

// FuzzFirstMatch searches from any instant, on items around DST in zones
// with odd transitions.
func FuzzFirstMatch(f *testing.F) {
	items := []string{
		`{"minute": {"period": 1}, "dst_fixes": ["unskip", "repeat_use_only_late"], "timezone": "US/Pacific", "max_shift_seconds_for_unskip_and_do_not_repeat": 60}`,
		`{"minute": [0, 30], "hour": [0, 1, 2], "dst_fixes": ["unskip", "repeat_use_only_early"], "timezone": "Australia/Lord_Howe", "max_shift_seconds_for_unskip_and_do_not_repeat": 60}`,
		`{"minute": 0, "hour": 0, "dst_fixes": ["unskip", "repeat_use_both"], "timezone": "America/Sao_Paulo", "max_shift_seconds_for_unskip_and_do_not_repeat": 60}`,
		`{"minute": 0, "day_of_month": 30, "dst_fixes": ["skip", "repeat_use_only_late"], "timezone": "Pacific/Apia", "max_shift_seconds_for_unskip_and_do_not_repeat": 60}`,
		`{"epoch": {"start": 100, "period": 7}, "max_shift_seconds_for_unskip_and_do_not_repeat": 60}`,
	}
	parsed := make([]*Item, len(items))
	for i, s := range items {
		parsed[i] = mustParse(f, s)
	}
	for _, u := range []int64{0, -1, springJump - 1, fallBack, 1325239200, 1 << 40, -1 << 40} {
		f.Add(uint8(0), u)
	}
	f.Fuzz(func(t *testing.T, which uint8, u int64) {
		probe(t, parsed[int(which)%len(parsed)], u)
	})
}
