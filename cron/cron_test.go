package cron

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestParseErrors(t *testing.T) {
	const fixes = `"dst_fixes": ["skip", "repeat_use_both"]`
	const shift = `"max_shift_seconds_for_unskip_and_do_not_repeat": 3600`
	cases := []struct {
		name, text, want string
	}{
		{"not JSON", `{"minute": `, "not valid JSON"},
		{"trailing data", `{"minute": 0, ` + fixes + `, ` + shift + `} {}`, "more data"},
		{"not an object", `[1, 2]`, "must be an object"},
		{"no max shift", `{"minute": 0, ` + fixes + `}`, `missing "max_shift_seconds_for_unskip_and_do_not_repeat"`},
		{"max shift too small", `{"minute": 0, ` + fixes + `, "max_shift_seconds_for_unskip_and_do_not_repeat": 5}`, `"max_shift_seconds_for_unskip_and_do_not_repeat": 5 is out of range`},
		{"max shift not a number", `{"minute": 0, ` + fixes + `, "max_shift_seconds_for_unskip_and_do_not_repeat": "1h"}`, `"max_shift_seconds_for_unskip_and_do_not_repeat": want a whole number`},
		{"no dst_fixes", `{"minute": 0, ` + shift + `}`, `missing "dst_fixes"`},
		{"one dst fix", `{"minute": 0, "dst_fixes": ["skip"], ` + shift + `}`, `"dst_fixes": want a list of two`},
		{"two skip fixes", `{"minute": 0, "dst_fixes": ["skip", "unskip"], ` + shift + `}`, `"dst_fixes": more than one of "skip"`},
		{"two repeat fixes", `{"minute": 0, "dst_fixes": ["repeat_use_both", "repeat_use_only_late"], ` + shift + `}`, `"dst_fixes": more than one "repeat_use_..."`},
		{"unknown dst fix", `{"minute": 0, "dst_fixes": ["skip", "repeat"], ` + shift + `}`, `"dst_fixes": unknown value "repeat"`},
		{"no minute", `{"hour": 3, ` + fixes + `, ` + shift + `}`, `missing "minute"`},
		{"unknown key", `{"minute": 0, "minutes": 0, ` + fixes + `, ` + shift + `}`, `unknown key "minutes"`},
		{"day of week and of month", `{"minute": 0, "day_of_week": 1, "day_of_month": 1, ` + fixes + `, ` + shift + `}`, `"day_of_week" and "day_of_month" cannot be combined`},
		{"minute out of range", `{"minute": 60, ` + fixes + `, ` + shift + `}`, `"minute": 60 is out of range 0-59`},
		{"hour out of range", `{"minute": 0, "hour": [1, 24], ` + fixes + `, ` + shift + `}`, `"hour": 24 is out of range 0-23`},
		{"day of week zero", `{"minute": 0, "day_of_week": 0, ` + fixes + `, ` + shift + `}`, `"day_of_week": 0 is out of range 1-7`},
		{"day of month 32", `{"minute": 0, "day_of_month": 32, ` + fixes + `, ` + shift + `}`, `"day_of_month": 32 is out of range 1-31`},
		{"month 13", `{"minute": 0, "month": {"start": 1, "end": 13}, ` + fixes + `, ` + shift + `}`, `"month": 13 is out of range 1-12`},
		{"year 10000", `{"minute": 0, "year": 10000, ` + fixes + `, ` + shift + `}`, `"year": 10000 is out of range 1970-9999`},
		{"short day name", `{"minute": 0, "day_of_week": "Tu", ` + fixes + `, ` + shift + `}`, `"day_of_week": unknown name "Tu"`},
		{"unknown month name", `{"minute": 0, "month": "Smarch", ` + fixes + `, ` + shift + `}`, `"month": unknown name "Smarch"`},
		{"name for hour", `{"minute": 0, "hour": "noon", ` + fixes + `, ` + shift + `}`, `"hour": "noon" is not a number`},
		{"fraction", `{"minute": 1.5, ` + fixes + `, ` + shift + `}`, `"minute": 1.5 is not a whole number`},
		{"empty list", `{"minute": [], ` + fixes + `, ` + shift + `}`, `"minute": empty list`},
		{"zero period", `{"minute": {"period": 0}, ` + fixes + `, ` + shift + `}`, `"minute": "period": 0 is not a positive period`},
		{"backwards range", `{"minute": {"start": 30, "end": 10}, ` + fixes + `, ` + shift + `}`, `"minute": start 30 is after end 10`},
		{"unknown range key", `{"minute": {"every": 5}, ` + fixes + `, ` + shift + `}`, `"minute": unknown key "every"`},
		{"boolean", `{"minute": true, ` + fixes + `, ` + shift + `}`, `"minute": want a whole number, not a boolean`},
		{"unknown zone", `{"minute": 0, "timezone": "Mars/Olympus_Mons", ` + fixes + `, ` + shift + `}`, `"timezone": unknown zone "Mars/Olympus_Mons"`},
		{"30 February", `{"minute": 0, "hour": 0, "day_of_month": 30, "month": "feb", ` + fixes + `, ` + shift + `}`, "matches no time in 50 years"},
		{"29 February of a common year", `{"minute": 0, "year": 2030, "month": 2, "day_of_month": 29, ` + fixes + `, ` + shift + `}`, "matches no time in 50 years"},
		{"31 April or June", `{"minute": 0, "day_of_month": 31, "month": [4, 6], ` + fixes + `, ` + shift + `}`, "matches no time in 50 years"},
		{"epoch with another key", `{"epoch": 300, "minute": 0, ` + shift + `}`, `unknown key "minute" in an "epoch" schedule`},
		{"epoch with dst_fixes", `{"epoch": 300, ` + fixes + `, ` + shift + `}`, `unknown key "dst_fixes" in an "epoch" schedule`},
		{"negative epoch", `{"epoch": -1, ` + shift + `}`, `"epoch": -1 is out of range`},
		{"epoch without max shift", `{"epoch": {"period": 300}}`, `missing "max_shift_seconds_for_unskip_and_do_not_repeat"`},
		{"cron with a selector", `{"cron": "0 3 * * *", "hour": 3, ` + fixes + `, ` + shift + `}`, `unknown key "hour" in a "cron" schedule`},
		{"cron not a string", `{"cron": 5, ` + fixes + `, ` + shift + `}`, `"cron": want a string`},
		{"cron without dst_fixes", `{"cron": "0 3 * * *", ` + shift + `}`, `missing "dst_fixes"`},
		{"cron with four fields", `{"cron": "0 3 * *", ` + fixes + `, ` + shift + `}`, `"cron": want five fields`},
		{"cron with both days", `{"cron": "0 3 1 * mon", ` + fixes + `, ` + shift + `}`, `"cron": day-of-month "1" and day-of-week "mon" cannot both be set`},
		{"cron minute out of range", `{"cron": "60 3 * * *", ` + fixes + `, ` + shift + `}`, `"cron": minute field "60": 60 is out of range 0-59`},
		{"cron day of week 8", `{"cron": "0 3 * * 8", ` + fixes + `, ` + shift + `}`, `"cron": day-of-week field "8": 8 is out of range 0-7`},
		{"cron zero step", `{"cron": "*/0 * * * *", ` + fixes + `, ` + shift + `}`, `"cron": minute field "*/0": step 0 is not positive`},
		{"cron step without range", `{"cron": "5/10 * * * *", ` + fixes + `, ` + shift + `}`, `"cron": minute field "5/10": a step needs`},
		{"cron backwards range", `{"cron": "0 17-9 * * *", ` + fixes + `, ` + shift + `}`, `"cron": hour field "17-9": range 17-9 runs backwards`},
		{"cron empty term", `{"cron": "1,,2 * * * *", ` + fixes + `, ` + shift + `}`, `"cron": minute field "1,,2": "" is not a number`},
		{"cron macro", `{"cron": "@daily", ` + fixes + `, ` + shift + `}`, `"cron": want five fields`},
		{"cron 30 February", `{"cron": "0 0 30 2 *", ` + fixes + `, ` + shift + `}`, "matches no time in 50 years"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			it, err := Parse([]byte(c.text), time.UTC)
			if err == nil {
				t.Fatalf("Parse(%s): got %s, want an error", c.text, it.Describe())
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse(%s): got error %q, want it to contain %q", c.text, err, c.want)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	const fixes = `"dst_fixes": ["repeat_use_only_late", "unskip"]`
	const shift = `"max_shift_seconds_for_unskip_and_do_not_repeat": 3600`
	for _, text := range []string{
		`{"minute": {"period": 1}, ` + fixes + `, ` + shift + `}`,
		`{"minute": 0, "hour": 3.0, ` + fixes + `, ` + shift + `}`,
		`{"minute": 0, "day_of_month": 29, "month": 2, ` + fixes + `, ` + shift + `}`,
		`{"minute": 0, "year": 2032, "month": 2, "day_of_month": 29, ` + fixes + `, ` + shift + `}`,
		`{"epoch": [2700, 5400], ` + shift + `}`,
		`{"cron": "  */5   *  * * *  ", ` + fixes + `, "timezone": "Europe/London", ` + shift + `}`,
	} {
		if _, err := Parse([]byte(text), nil); err != nil {
			t.Errorf("Parse(%s): %v", text, err)
		}
	}
}

// TestParseValueYAML reads the same item from YAML, as a .lorry file may
// hold it, and from JSON: one decode path, the same events.
func TestParseValueYAML(t *testing.T) {
	const text = `{"minute": [0, 30], "hour": {"start": 9, "end": 17}, "day_of_week": ["mon", "fri"],
		"dst_fixes": ["skip", "repeat_use_only_early"], "timezone": "Europe/London",
		"max_shift_seconds_for_unskip_and_do_not_repeat": 900}`
	fromJSON := mustParse(t, text)
	var v any
	if err := yaml.Unmarshal([]byte(`
minute: [0, 30]
hour: {start: 9, end: 17}
day_of_week: [mon, fri]
dst_fixes: [skip, repeat_use_only_early]
timezone: Europe/London
max_shift_seconds_for_unskip_and_do_not_repeat: 900
`), &v); err != nil {
		t.Fatal(err)
	}
	fromYAML, err := ParseValue(v, time.UTC)
	if err != nil {
		t.Fatalf("ParseValue(YAML): %v", err)
	}
	var plain any
	if err := json.Unmarshal([]byte(text), &plain); err != nil {
		t.Fatal(err)
	}
	fromFloats, err := ParseValue(plain, time.UTC)
	if err != nil {
		t.Fatalf("ParseValue(float64 JSON): %v", err)
	}
	from := time.Date(2024, 3, 25, 0, 0, 0, 0, time.UTC).Unix()
	want := events(fromJSON, from, 50)
	for name, it := range map[string]*Item{"YAML": fromYAML, "float64 JSON": fromFloats} {
		if got := events(it, from, 50); len(got) != len(want) || got[0] != want[0] || got[49] != want[49] {
			t.Errorf("%s: events differ from JSON's: got %v, want %v", name, got, want)
		}
	}
}

func TestDefaultZone(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	it, err := Parse([]byte(`{"minute": 0, "hour": 3, "dst_fixes": ["skip", "repeat_use_both"], "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`), tokyo)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2024, 1, 2, 3, 0, 0, 0, tokyo).Unix()
	if got, _ := it.FirstMatch(time.Date(2024, 1, 1, 12, 0, 0, 0, tokyo).Unix()); got != want {
		t.Errorf("03:00 in the caller's zone: got %d, want %d", got, want)
	}
	if it.Location() != tokyo {
		t.Errorf("Location: got %v, want Asia/Tokyo", it.Location())
	}
}

func TestDescribe(t *testing.T) {
	const shift = `"max_shift_seconds_for_unskip_and_do_not_repeat": 3600`
	cases := []struct {
		name, text, want string
	}{
		{"daily", `{"minute": 0, "hour": 3, "dst_fixes": ["skip", "repeat_use_only_early"], "timezone": "Europe/London", ` + shift + `}`,
			"03:00 every day, Europe/London; skipped if DST jumps over it, once (the earlier) if DST repeats it; fires up to 1h late"},
		{"weekdays", `{"cron": "30 9 * * mon-fri", "dst_fixes": ["unskip", "repeat_use_only_late"], "timezone": "Europe/London", ` + shift + `}`,
			"09:30 on Mon, Tue, Wed, Thu and Fri, Europe/London; a second before the jump if DST jumps over it, once (the later) if DST repeats it; fires up to 1h late"},
		{"twice on Tuesdays", `{"minute": 0, "hour": [10, 20], "day_of_week": "Tue", "dst_fixes": ["skip", "repeat_use_both"], "timezone": "UTC", ` + shift + `}`,
			"10:00 and 20:00 on Tue, UTC; skipped if DST jumps over it, twice if DST repeats it; fires up to 1h late"},
		{"every 5 minutes", `{"cron": "*/5 * * * *", "dst_fixes": ["skip", "repeat_use_both"], "timezone": "UTC", "max_shift_seconds_for_unskip_and_do_not_repeat": 150}`,
			"every 5 minutes, UTC; skipped if DST jumps over it, twice if DST repeats it; fires up to 2m30s late"},
		{"monthly", `{"minute": 15, "hour": 4, "day_of_month": 1, "month": {"start": 1, "end": 12, "period": 3}, "dst_fixes": ["skip", "repeat_use_both"], "timezone": "UTC", ` + shift + `}`,
			"04:15 on day 1 of the month in Jan-Dec every 3, UTC; skipped if DST jumps over it, twice if DST repeats it; fires up to 1h late"},
		{"epoch period", `{"epoch": {"period": 300}, "max_shift_seconds_for_unskip_and_do_not_repeat": 600}`,
			"every 5m; fires up to 10m late"},
		{"epoch list", `{"epoch": [2700, 5400], "max_shift_seconds_for_unskip_and_do_not_repeat": 86400}`,
			"at 1970-01-01 00:45:00 UTC and 1970-01-01 01:30:00 UTC; fires up to 1d late"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mustParse(t, c.text).Describe(); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}
