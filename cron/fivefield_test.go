package cron

import (
	"slices"
	"testing"
	"time"
)

// TestFiveFieldEquivalence checks each shorthand against the JSON item it
// stands for, event by event over months that include both of London's
// transitions.
func TestFiveFieldEquivalence(t *testing.T) {
	const tail = `"dst_fixes": ["unskip", "repeat_use_only_early"], "timezone": "Europe/London", "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`
	cases := []struct {
		name, cron, json string
	}{
		{"daily", "0 3 * * *", `{"minute": 0, "hour": 3, `},
		{"every 5 minutes", "*/5 * * * *", `{"minute": {"period": 5}, `},
		{"every minute", "* * * * *", `{"minute": {"period": 1}, `},
		{"weekdays", "30 9 * * mon-fri", `{"minute": 30, "hour": 9, "day_of_week": [2, 3, 4, 5, 6], `},
		{"Sunday as 0", "0 12 * * 0", `{"minute": 0, "hour": 12, "day_of_week": "sun", `},
		{"Sunday as 7", "0 12 * * 7", `{"minute": 0, "hour": 12, "day_of_week": 1, `},
		{"weekend across Sunday", "0 8 * * 6-7", `{"minute": 0, "hour": 8, "day_of_week": ["sat", "sun"], `},
		{"every other day of the week", "0 8 * * */2", `{"minute": 0, "hour": 8, "day_of_week": [1, 3, 5, 7], `},
		{"lists and ranges", "0,20-40/10 1-3 * * *", `{"minute": [0, 20, 30, 40], "hour": {"start": 1, "end": 3}, `},
		{"the small hours at DST", "15,45 0-3 * * *", `{"minute": [15, 45], "hour": [0, 1, 2, 3], `},
		{"month names", "0 0 1 jan,APR-jun/2 *", `{"minute": 0, "hour": 0, "day_of_month": 1, "month": [1, 4, 6], `},
		{"day of month step", "0 6 1-31/10 * *", `{"minute": 0, "hour": 6, "day_of_month": [1, 11, 21, 31], `},
		{"full names", "0 6 * * Tuesday", `{"minute": 0, "hour": 6, "day_of_week": 3, `},
	}
	from := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC).Unix()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			short := mustParse(t, `{"cron": "`+c.cron+`", `+tail)
			long := mustParse(t, c.json+tail)
			n := 400
			got, want := events(short, from, n), events(long, from, n)
			if !slices.Equal(got, want) {
				t.Errorf("%q: events differ from %s:\ngot  %v\nwant %v", c.cron, c.json, got, want)
			}
			for _, u := range []int64{from, from + 7777777, from + 15555555} {
				a, _ := short.LastMatch(u)
				b, _ := long.LastMatch(u)
				if a != b {
					t.Errorf("LastMatch(%d): got %d, want %d", u, a, b)
				}
			}
		})
	}
}
