package cron

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// The seed's examples, in US/Pacific: 01:30 happened twice on 3 November
// 2013, and 02:30 never happened on 10 March 2013.
const (
	earlyRepeat  = 1383467400 // 01:30 PDT, 3 November 2013
	fallBack     = 1383469200 // 02:00 PDT becomes 01:00 PST
	lateRepeat   = 1383471000 // 01:30 PST
	springJump   = 1362909600 // 02:00 PST becomes 03:00 PDT, 10 March 2013
	maxShiftJSON = `"max_shift_seconds_for_unskip_and_do_not_repeat": 3600`
)

func mustParse(t testing.TB, text string) *Item {
	t.Helper()
	it, err := Parse([]byte(text), time.UTC)
	if err != nil {
		t.Fatalf("Parse(%s): %v", text, err)
	}
	return it
}

// events lists the first n events at or after from.
func events(it *Item, from int64, n int) []int64 {
	var out []int64
	for len(out) < n {
		e, ok := it.FirstMatch(from)
		if !ok {
			break
		}
		out = append(out, e)
		from = e + 1
	}
	return out
}

func pacific(t testing.TB, y int, mo time.Month, d, h, mi int) int64 {
	t.Helper()
	loc, err := time.LoadLocation("US/Pacific")
	if err != nil {
		t.Fatal(err)
	}
	return time.Date(y, mo, d, h, mi, 0, 0, loc).Unix()
}

func showTimes(ts []int64) string {
	loc, _ := time.LoadLocation("US/Pacific")
	var s []string
	for _, u := range ts {
		s = append(s, fmt.Sprintf("%d (%s)", u, time.Unix(u, 0).In(loc).Format("Jan 2 15:04:05 MST")))
	}
	return fmt.Sprint(s)
}

func TestDSTFixes(t *testing.T) {
	// Labels between 02:00 and 03:00 on 10 March do not exist; Go reads
	// them with the offset before the jump, which lands after it.
	mar9 := pacific(t, 2013, time.March, 9, 2, 30)
	mar11 := pacific(t, 2013, time.March, 11, 2, 30)
	nov2 := pacific(t, 2013, time.November, 2, 1, 30)
	nov4 := pacific(t, 2013, time.November, 4, 1, 30)
	type want struct {
		skipped, repeated []int64
	}
	cases := []struct {
		skip, repeat string
		want         want
	}{
		{"skip", "repeat_use_both", want{[]int64{mar9, mar11}, []int64{nov2, earlyRepeat, lateRepeat, nov4}}},
		{"skip", "repeat_use_only_early", want{[]int64{mar9, mar11}, []int64{nov2, earlyRepeat, nov4}}},
		{"skip", "repeat_use_only_late", want{[]int64{mar9, mar11}, []int64{nov2, lateRepeat, nov4}}},
		{"unskip", "repeat_use_both", want{[]int64{mar9, springJump - 1, mar11}, []int64{nov2, earlyRepeat, lateRepeat, nov4}}},
		{"unskip", "repeat_use_only_early", want{[]int64{mar9, springJump - 1, mar11}, []int64{nov2, earlyRepeat, nov4}}},
		{"unskip", "repeat_use_only_late", want{[]int64{mar9, springJump - 1, mar11}, []int64{nov2, lateRepeat, nov4}}},
	}
	for _, c := range cases {
		fixes := fmt.Sprintf(`"dst_fixes": [%q, %q], "timezone": "US/Pacific", %s`, c.skip, c.repeat, maxShiftJSON)
		t.Run(c.skip+"/"+c.repeat+"/spring", func(t *testing.T) {
			it := mustParse(t, `{"minute": 30, "hour": 2, `+fixes+`}`)
			got := events(it, mar9-3600, len(c.want.skipped))
			if !slices.Equal(got, c.want.skipped) {
				t.Errorf("02:30 daily: got %s, want %s", showTimes(got), showTimes(c.want.skipped))
			}
		})
		t.Run(c.skip+"/"+c.repeat+"/autumn", func(t *testing.T) {
			it := mustParse(t, `{"minute": 30, "hour": 1, `+fixes+`}`)
			got := events(it, nov2-3600, len(c.want.repeated))
			if !slices.Equal(got, c.want.repeated) {
				t.Errorf("01:30 daily: got %s, want %s", showTimes(got), showTimes(c.want.repeated))
			}
			// From inside the repeated hour, after the early 01:30:
			// only a late 01:30 may still come that day.
			wantNext := nov4
			if c.repeat != "repeat_use_only_early" {
				wantNext = lateRepeat
			}
			for _, from := range []int64{earlyRepeat + 1, fallBack - 1, fallBack, fallBack + 60} {
				if got, _ := it.FirstMatch(from); got != wantNext {
					t.Errorf("FirstMatch(%d): got %s, want %s", from, showTimes([]int64{got}), showTimes([]int64{wantNext}))
				}
			}
			// LastMatch mirrors FirstMatch.
			wantLast := c.want.repeated[len(c.want.repeated)-2]
			if got, _ := it.LastMatch(nov4 - 1); got != wantLast {
				t.Errorf("LastMatch before 4 November: got %s, want %s", showTimes([]int64{got}), showTimes([]int64{wantLast}))
			}
		})
	}
}

// TestDSTFixesEveryFewMinutes looks at the transitions minute by minute:
// which of the repeated labels fire, and that every skipped label fires
// as the one unskipped event.
func TestDSTFixesEveryFewMinutes(t *testing.T) {
	cases := []struct {
		name  string
		fixes string
		from  int64
		want  []int64
	}{
		{"spring skip", `["skip", "repeat_use_both"]`, springJump - 120,
			[]int64{springJump - 120, springJump - 60, springJump, springJump + 60}},
		{"spring unskip", `["unskip", "repeat_use_both"]`, springJump - 120,
			[]int64{springJump - 120, springJump - 60, springJump - 1, springJump, springJump + 60}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			it := mustParse(t, `{"minute": {"period": 1}, "dst_fixes": `+c.fixes+`, "timezone": "US/Pacific", `+maxShiftJSON+`}`)
			if got := events(it, c.from, len(c.want)); !slices.Equal(got, c.want) {
				t.Errorf("got %s, want %s", showTimes(got), showTimes(c.want))
			}
		})
	}
	half := []struct {
		name  string
		fixes string
		want  []int64
	}{
		{"autumn both", `["skip", "repeat_use_both"]`,
			[]int64{fallBack - 5400, fallBack - 3600, fallBack - 1800, fallBack, fallBack + 1800, fallBack + 3600}},
		{"autumn early", `["skip", "repeat_use_only_early"]`,
			[]int64{fallBack - 5400, fallBack - 3600, fallBack - 1800, fallBack + 3600, fallBack + 5400}},
		{"autumn late", `["skip", "repeat_use_only_late"]`,
			[]int64{fallBack - 5400, fallBack, fallBack + 1800, fallBack + 3600, fallBack + 5400}},
	}
	for _, c := range half {
		t.Run(c.name, func(t *testing.T) {
			it := mustParse(t, `{"minute": [0, 30], "dst_fixes": `+c.fixes+`, "timezone": "US/Pacific", `+maxShiftJSON+`}`)
			if got := events(it, fallBack-5400, len(c.want)); !slices.Equal(got, c.want) {
				t.Errorf("got %s, want %s", showTimes(got), showTimes(c.want))
			}
		})
	}
}

func TestEpoch(t *testing.T) {
	cases := []struct {
		name string
		sel  string
		from int64
		want []int64
	}{
		{"period", `{"period": 300, "end": 1800}`, 1000, []int64{1200, 1500, 1800}},
		{"period at an event", `{"period": 300, "end": 1800}`, 1500, []int64{1500, 1800}},
		{"start", `{"period": 300, "start": 1300003260, "end": 1300003600}`, 0, []int64{1300003260, 1300003560}},
		{"end", `{"period": 300, "end": 1300003260}`, 1300002901, []int64{1300003200}},
		{"once", `2700`, 0, []int64{2700}},
		{"list", `[5400, 2700]`, 0, []int64{2700, 5400}},
		{"list from between", `[2700, 5400]`, 2701, []int64{5400}},
		{"negative instant", `{"period": 60, "end": 60}`, -500, []int64{0, 60}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			it := mustParse(t, `{"epoch": `+c.sel+`, "max_shift_seconds_for_unskip_and_do_not_repeat": 600}`)
			// One more than wanted, to see that no more come.
			if got := events(it, c.from, len(c.want)+1); !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
			last := c.want[len(c.want)-1]
			if got, ok := it.LastMatch(last + 1); !ok || got != last {
				t.Errorf("LastMatch(%d): got %d %v, want %d", last+1, got, ok, last)
			}
		})
	}
}

func TestNamesAndSelectors(t *testing.T) {
	// 2024-01-01 is a Monday.
	jan1 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	at := func(mo time.Month, d, h, mi int) int64 { return time.Date(2024, mo, d, h, mi, 0, 0, time.UTC).Unix() }
	fixes := `"dst_fixes": ["skip", "repeat_use_both"], ` + maxShiftJSON
	cases := []struct {
		name string
		sel  string
		want []int64
	}{
		{"day names", `"minute": 0, "hour": 10, "day_of_week": ["Tues", "thu", "SUNDAY"]`,
			[]int64{at(1, 2, 10, 0), at(1, 4, 10, 0), at(1, 7, 10, 0), at(1, 9, 10, 0)}},
		{"day numbers", `"minute": 0, "hour": 10, "day_of_week": {"start": 2, "end": 6}`,
			[]int64{at(1, 1, 10, 0), at(1, 2, 10, 0), at(1, 3, 10, 0), at(1, 4, 10, 0), at(1, 5, 10, 0), at(1, 8, 10, 0)}},
		{"month names", `"minute": 0, "hour": 0, "day_of_month": 1, "month": ["sEpTe", "JAN", "March"]`,
			[]int64{at(1, 1, 0, 0), at(3, 1, 0, 0), at(9, 1, 0, 0), time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Unix()}},
		{"month range with names", `"minute": 0, "hour": 0, "day_of_month": 1, "month": {"start": "oct", "end": "dec", "period": 2}`,
			[]int64{at(10, 1, 0, 0), at(12, 1, 0, 0), time.Date(2025, 10, 1, 0, 0, 0, 0, time.UTC).Unix()}},
		{"31st skips short months", `"minute": 0, "hour": 0, "day_of_month": 31`,
			[]int64{at(1, 31, 0, 0), at(3, 31, 0, 0), at(5, 31, 0, 0), at(7, 31, 0, 0)}},
		{"29 February", `"minute": 0, "hour": 0, "day_of_month": 29, "month": 2`,
			[]int64{at(2, 29, 0, 0), time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC).Unix()}},
		{"minute range", `"minute": {"start": 10, "end": 30, "period": 10}, "hour": [1, 2]`,
			[]int64{at(1, 1, 1, 10), at(1, 1, 1, 20), at(1, 1, 1, 30), at(1, 1, 2, 10)}},
		{"years", `"minute": 0, "hour": 0, "day_of_month": 1, "month": 1, "year": [2026, 2031]`,
			[]int64{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC).Unix()}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			it := mustParse(t, `{`+c.sel+`, `+fixes+`}`)
			if got := events(it, jan1, len(c.want)); !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestNoMoreEvents(t *testing.T) {
	it := mustParse(t, `{"minute": 0, "year": 2020, "dst_fixes": ["skip", "repeat_use_both"], `+maxShiftJSON+`}`)
	if e, ok := it.FirstMatch(time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC).Unix()); ok {
		t.Errorf("FirstMatch after the only year: got %d, want none", e)
	}
	if e, ok := it.LastMatch(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Unix() - 1); ok {
		t.Errorf("LastMatch before the only year: got %d, want none", e)
	}
	want := time.Date(2020, 12, 31, 23, 0, 0, 0, time.UTC).Unix()
	if e, ok := it.LastMatch(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Unix()); !ok || e != want {
		t.Errorf("LastMatch after the only year: got %d %v, want %d", e, ok, want)
	}
	// Events more than 50 years ahead are not looked for.
	far := mustParse(t, `{"minute": 0, "year": 2090, "dst_fixes": ["skip", "repeat_use_both"], `+maxShiftJSON+`}`)
	if e, ok := far.FirstMatch(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).Unix()); ok {
		t.Errorf("FirstMatch 60 years ahead: got %d, want none", e)
	}
	if _, ok := far.FirstMatch(time.Date(2041, 1, 1, 0, 0, 0, 0, time.UTC).Unix()); !ok {
		t.Errorf("FirstMatch 49 years ahead: got none")
	}
	if _, ok := far.FirstMatch(maxEpoch + 1); ok {
		t.Errorf("FirstMatch after year 9999: got an event")
	}
}

func TestLatest(t *testing.T) {
	loc, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Fatal(err)
	}
	parse := func(text string) *Item {
		it, err := Parse([]byte(text), loc)
		if err != nil {
			t.Fatal(err)
		}
		return it
	}
	// threads-schedule: 8 threads from 22:00, 1 from 06:00.
	items := []*Item{
		parse(`{"cron": "0 22 * * *", "dst_fixes": ["unskip", "repeat_use_only_early"], ` + maxShiftJSON + `}`),
		parse(`{"cron": "0 6 * * *", "dst_fixes": ["unskip", "repeat_use_only_early"], ` + maxShiftJSON + `}`),
	}
	day := func(h, m int) int64 { return time.Date(2024, 7, 10, h, m, 0, 0, loc).Unix() }
	cases := []struct {
		name string
		t    int64
		want int
	}{
		{"just before midnight", day(23, 59), 0},
		{"small hours", day(3, 0), 0},
		{"at 06:00", day(6, 0), 1},
		{"afternoon", day(15, 0), 1},
		{"a second before 22:00", day(22, 0) - 1, 1},
		{"at 22:00", day(22, 0), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, ok := Latest(items, c.t); !ok || got != c.want {
				t.Errorf("got %d %v, want %d", got, ok, c.want)
			}
		})
	}
	if _, ok := Latest(nil, day(0, 0)); ok {
		t.Errorf("Latest of no items: got one")
	}
}

// TestLeapYearEndBeyondZoneFile: past the zone file's last transition the
// time package cuts stretches at each new year, and on 31 December of a
// leap year it ends the stretch a day early, before the instant asked
// about. The walk must neither step through that day second by second
// nor lose an event in it.
func TestLeapYearEndBeyondZoneFile(t *testing.T) {
	london, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, cron string
		from, want time.Time
	}{
		{"new year", "0 0 1 1 *", time.Date(2040, 6, 1, 0, 0, 0, 0, london), time.Date(2041, 1, 1, 0, 0, 0, 0, london)},
		{"on the day", "0 12 31 12 *", time.Date(2040, 12, 31, 0, 30, 0, 0, london), time.Date(2040, 12, 31, 12, 0, 0, 0, london)},
		{"hourly through it", "0 * * * *", time.Date(2040, 12, 31, 5, 1, 0, 0, london), time.Date(2040, 12, 31, 6, 0, 0, 0, london)},
	} {
		t.Run(c.name, func(t *testing.T) {
			it, err := Parse([]byte(`{"cron": "`+c.cron+`", "dst_fixes": ["skip", "repeat_use_both"], "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`), london)
			if err != nil {
				t.Fatal(err)
			}
			var steps int
			got, ok := it.firstMatch(c.from.Unix(), &steps)
			if !ok || got != c.want.Unix() {
				t.Errorf("got %v %v, want %v", time.Unix(got, 0).In(london), ok, c.want)
			}
			if steps > 100 {
				t.Errorf("took %d steps, want a few dozen at most", steps)
			}
		})
	}
}

// A period longer than its field's range allows the start alone: a
// 19-digit one must not wrap round and give an event before the instant
// asked about.
func TestHugePeriod(t *testing.T) {
	from := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC).Unix()
	cases := []struct {
		name string
		text string
		want []int64 // events at or after from
	}{
		{"epoch from 0", `{"epoch": {"period": 9223372036854775807}, ` + maxShiftJSON + `}`, nil},
		{"epoch from a start", `{"epoch": {"period": 9223372036854775807, "start": 1800000000}, ` + maxShiftJSON + `}`,
			[]int64{1800000000}},
		{"minute", `{"minute": {"period": 9223372036854775807, "start": 7}, "hour": 1, "timezone": "UTC",
			"dst_fixes": ["skip", "repeat_use_both"], ` + maxShiftJSON + `}`,
			[]int64{from + 3600 + 7*60, from + 86400 + 3600 + 7*60}},
		{"year", `{"minute": 0, "hour": 0, "day_of_month": 1, "month": 1, "year": {"period": 9223372036854775807, "start": 2030},
			"timezone": "UTC", "dst_fixes": ["skip", "repeat_use_both"], ` + maxShiftJSON + `}`,
			[]int64{time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).Unix()}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			it := mustParse(t, c.text)
			got := events(it, from, 2)
			if len(c.want) < 2 && len(got) > len(c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
			for i, w := range c.want {
				if i >= len(got) || got[i] != w {
					t.Errorf("got %v, want %v", got, c.want)
					break
				}
			}
			for _, e := range got {
				if e < from {
					t.Errorf("event %d is before %d, the instant asked about", e, from)
				}
			}
		})
	}
}

// TestFirstMatchBefore checks that the bounded search agrees with
// FirstMatch within its span, DST fixes and all, and that its work grows
// with the span, not with how far away the first event is.
func TestFirstMatchBefore(t *testing.T) {
	items := []string{
		`{"minute": 30, "hour": 1, "dst_fixes": ["skip", "repeat_use_only_early"], "timezone": "US/Pacific", ` + maxShiftJSON + `}`,
		`{"minute": 30, "hour": 2, "dst_fixes": ["unskip", "repeat_use_only_late"], "timezone": "US/Pacific", ` + maxShiftJSON + `}`,
		`{"minute": {"period": 7}, "dst_fixes": ["unskip", "repeat_use_both"], "timezone": "Europe/London", ` + maxShiftJSON + `}`,
		`{"minute": 0, "hour": 0, "day_of_month": 1, "month": 11, "year": 2063, "dst_fixes": ["skip", "repeat_use_both"], "timezone": "US/Pacific", ` + maxShiftJSON + `}`,
		`{"epoch": {"period": 3000, "start": 1383000000}, ` + maxShiftJSON + `}`,
	}
	starts := []int64{springJump - 7200, springJump - 1, fallBack - 3600, earlyRepeat, lateRepeat - 1, 1383000000}
	spans := []int64{1, 60, 1800, 3601, 86400, 40 * 86400}
	for _, text := range items {
		it := mustParse(t, text)
		for _, from := range starts {
			want, wantOK := it.FirstMatch(from)
			for _, span := range spans {
				ok := wantOK && want < from+span
				got, gotOK := it.FirstMatchBefore(from, from+span)
				if gotOK != ok || (ok && got != want) {
					t.Errorf("%s: FirstMatchBefore(%d, +%d) = %d %v; want %d %v", text, from, span, got, gotOK, want, ok)
				}
			}
		}
	}
	// The event 40 years away is not looked for in a day's span.
	far := mustParse(t, items[3])
	var near, whole int
	far.firstMatchBefore(springJump, springJump+86400, &near)
	far.firstMatch(springJump, &whole)
	if near > 4 || whole < 40 {
		t.Errorf("steps: a day's span %d, want at most 4; the whole search %d, want 40 or more", near, whole)
	}
}
