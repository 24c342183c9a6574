package cron

import (
	"testing"
)

// The WEBAPP runs Advance for every schedule on every tick, and the lorry
// page NextDue for each lorry shown: these say what that costs.

func BenchmarkFirstMatch(b *testing.B) {
	for _, c := range []struct{ name, text string }{
		{"daily London", `{"cron": "0 3 * * *", "dst_fixes": ["unskip", "repeat_use_only_early"], "timezone": "Europe/London", "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`},
		{"every 5 minutes", every5Min},
		{"weekdays Pacific", `{"minute": 30, "hour": 9, "day_of_week": {"start": "mon", "end": "fri"}, "dst_fixes": ["skip", "repeat_use_both"], "timezone": "US/Pacific", "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`},
		{"29 February", `{"minute": 0, "hour": 0, "day_of_month": 29, "month": 2, "dst_fixes": ["skip", "repeat_use_both"], "timezone": "Europe/London", "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`},
		{"epoch", `{"epoch": {"period": 300}, "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`},
	} {
		it := mustParse(b, c.text)
		b.Run(c.name, func(b *testing.B) {
			u := day0
			for b.Loop() {
				e, _ := it.FirstMatch(u)
				// Walk on, a little past each event, through the year.
				u = e + 1
				if u > day0+366*86400 {
					u = day0
				}
			}
		})
	}
}

func BenchmarkAdvance(b *testing.B) {
	it := mustParse(b, `{"cron": "*/5 * * * *", "dst_fixes": ["skip", "repeat_use_both"], "timezone": "Europe/London", "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`)
	b.Run("ticks a minute apart", func(b *testing.B) {
		st := State{Wall: day0, Mono: 1, Boot: "b", Handled: day0}
		for b.Loop() {
			_, st, _ = it.Advance(st, Reading{Wall: st.Wall + 60, Mono: st.Mono + 60e9, Boot: "b"})
		}
	})
	b.Run("a year's jump", func(b *testing.B) {
		st := State{Wall: day0, Mono: 1, Boot: "b", Handled: day0}
		for b.Loop() {
			it.Advance(st, Reading{Wall: day0 + 365*86400, Mono: 2, Boot: "b"})
		}
	})
}
